"""Text as the lexical index stores it: FTS5-style tokens, tsquery operands, and text PostgreSQL accepts."""

from __future__ import annotations

import re
import unicodedata

# Tokens longer than this are base64 or minified noise; PostgreSQL would refuse words over 2 KiB.
_MAX_TOKEN = 500

_TOKEN = re.compile(r"[^\W_]+")
_KEEP = "0zq0"
_QUOTED = re.compile(r'"((?:[^"]|"")*)"')
_FTS_KEYWORDS = frozenset({"OR", "AND", "NOT", "NEAR"})


def lex_tokens(text: str) -> list[str]:
    """Tokens as FTS5's unicode61 makes them: runs of letters and digits, lower case, no diacritics."""
    if not text.isascii():
        text = "".join(ch for ch in unicodedata.normalize("NFD", text) if not unicodedata.combining(ch))
        text = unicodedata.normalize("NFC", text)
    return [_unstemmed(t) for t in _TOKEN.findall(text.lower()) if len(t) <= _MAX_TOKEN]


def _unstemmed(token: str) -> str:
    """The token as the index stores it: marked unstemmable where FTS5's Porter stemmer skips it."""
    # FTS5 leaves tokens under 3 or over 64 bytes alone; PostgreSQL's stemmer would not ("os" ->
    # "o"). A suffix ending in a digit matches no Porter rule and no real token.
    size = len(token.encode())
    if (size < 3 or size > 64) and not token.isdigit():
        return token + _KEEP
    return token


def match_terms(match: str) -> list[str]:
    """tsquery operands ('a <-> b' for a phrase) of an FTS5 MATCH string from tokens.fts_match, or of plain words."""
    quoted = [m.group(1).replace('""', '"') for m in _QUOTED.finditer(match)]
    terms = quoted or [w for w in match.split() if w not in _FTS_KEYWORDS]
    # Only letters and digits survive lex_tokens, so no operand can carry tsquery syntax.
    operands = [" <-> ".join(lex_tokens(term)) for term in terms]
    return [op for op in operands if op]


def _clean(text: str | None) -> str | None:
    """PostgreSQL text cannot hold NUL; SQLite can. Replace it rather than fail a whole batch."""
    if text is None or "\x00" not in text:
        return text
    return text.replace("\x00", "\ufffd")
