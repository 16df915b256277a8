"""Secrets by content: a file that opens with a private key is a secret, and the tokens of known
formats (cloud and service keys, JWTs, high-entropy values given to names like *_SECRET, *_TOKEN,
password) are replaced in the text the index sees, so no lexical row, embedding input, fact,
snippet, read or outline carries them. Line numbers are kept: a token is replaced within its line."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterator

import re2

# What stands in for a redacted token: `[redacted:KIND]`; envelopes count these (`redacted: N`).
REDACTED = "[redacted:"
# A change to the rules below goes with a new config.REDACTION_VERSION: the index is rebuilt.

# A private key in the opening lines makes the whole file a secret (a key under an innocent name).
PRIVATE_KEY_HEAD_LINES = 20
_PRIVATE_KEY = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
_PRIVATE_KEY_BLOCK = re.compile(
    r"(-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----)(.*?)(-----END \2-----|\Z)", re.S
)

# (kind, literals, pattern): the pattern runs only on a text holding one of the literals (a
# substring test costs a little of a regex scan), starts with one (so the scan jumps between them),
# and a match glued to a letter or digit before it is no token. The token is group "t" when the
# pattern names one, else the whole match.
_AWS = ("AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AIPA", "ANPA", "ANVA", "AROA", "APKA", "ASCA")
TOKEN_FORMATS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("aws-access-key", _AWS, r"(?:" + "|".join(_AWS) + r")[A-Z0-9]{16}(?![A-Za-z0-9])"),
    ("github-token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), r"gh[pousr]_[A-Za-z0-9]{36,255}(?![A-Za-z0-9])"),
    ("github-fine-grained-token", ("github_pat_",), r"github_pat_[A-Za-z0-9_]{22,255}"),
    ("gitlab-token", ("glpat-", "glptt-", "gldt-", "glrt-", "glcbt-", "glimt-", "gloas-", "glsoat-", "glffct-"),
     r"gl(?:pat|ptt|dt|rt|cbt|imt|oas|soat|ffct)-[A-Za-z0-9_\-]{20,}"),
    ("slack-token", ("xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxs-", "xoxr-"), r"xox[abposr]-[A-Za-z0-9\-]{10,}"),
    ("slack-webhook", ("hooks.slack.com",), r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9/_\-]{20,}"),
    ("stripe-key", ("_live_", "_test_"), r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}(?![A-Za-z0-9])"),
    ("stripe-webhook-secret", ("whsec_",), r"whsec_[A-Za-z0-9]{24,}(?![A-Za-z0-9])"),
    ("openai-key", ("sk-",), r"sk-(?:proj-|svcacct-|admin-|ant-(?:api\d\d-)?)?[A-Za-z0-9_\-]{32,}"),
    ("google-api-key", ("AIza",), r"AIza[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])"),
    ("google-oauth-secret", ("GOCSPX-",), r"GOCSPX-[A-Za-z0-9_\-]{28}(?![A-Za-z0-9_\-])"),
    ("jwt", ("eyJ",), r"eyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}"),
    ("npm-token", ("npm_",), r"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])"),
    ("pypi-token", ("pypi-AgE",), r"pypi-AgE[A-Za-z0-9_\-]{50,}"),
    ("huggingface-token", ("hf_",), r"hf_[A-Za-z0-9]{34,}(?![A-Za-z0-9])"),
    ("sendgrid-key", ("SG.",), r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}(?![A-Za-z0-9])"),
    ("twilio-key", ("SK",), r"SK[0-9a-f]{32}(?![A-Za-z0-9])"),
    ("mailgun-key", ("key-",), r"key-[0-9a-z]{32}(?![A-Za-z0-9])"),
    ("digitalocean-token", ("doo_v1_", "dop_v1_", "dor_v1_"), r"do[opr]_v1_[a-f0-9]{64}(?![A-Za-z0-9])"),
    ("shopify-token", ("shpat_", "shpca_", "shppa_", "shpss_"), r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}(?![A-Za-z0-9])"),
    ("square-token", ("sq0atp-", "sq0csp-"), r"sq0(?:atp|csp)-[0-9A-Za-z_\-]{22,43}"),
    ("telegram-bot-token", (":AA",), r"\d{8,10}:AA[0-9A-Za-z_\-]{33}(?![A-Za-z0-9])"),
    ("azure-storage-key", ("AccountKey=",), r"AccountKey=(?P<t>[A-Za-z0-9+/]{80,}={0,2})"),
    ("databricks-token", ("dapi",), r"dapi[a-f0-9]{32}(?![A-Za-z0-9])"),
    ("age-secret-key", ("AGE-SECRET-KEY-1",), r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    ("password-in-url", ("://",), r"://[^/\s:@'\"]{1,64}:(?P<t>[^/\s:@'\"$<>{}]{6,128})@"),
)  # fmt: skip
# Each format's own test for its literals (a compiled alternation), run where the scan of them all
# (_ANY_LITERAL, below) found one of them or a literal that may hide one.
_FORMATS = [
    (kind, re.compile("|".join(map(re.escape, literals))).search, re.compile(pattern))
    for kind, literals, pattern in TOKEN_FORMATS
]


def _may_hide(a: str, b: str) -> bool:
    """Whether an occurrence of `b` can overlap one of `a`, so a scan that takes `a` skips it."""
    return b in a or a in b or any(a.endswith(b[:i]) for i in range(1, len(b)))


def _candidates() -> dict[bytes, frozenset[int]]:
    """Literal -> the formats to try when a scan finds it: its own, and those of every literal an
    occurrence of it could have hidden from the scan (matches do not overlap)."""
    owners = [(literal, i) for i, (_, literals, _) in enumerate(TOKEN_FORMATS) for literal in literals]
    return {
        literal.encode(): frozenset(j for other, j in owners if _may_hide(literal, other))
        for literal, _ in owners
    }


# A value given to a name that says it is secret, and random enough to be one: a quoted literal
# without spaces, or the rest of a line (.env, YAML, INI). Only lines holding one of the words are
# looked at.
_ASSIGN_WORDS = ("secret", "token", "passw", "pwd", "api_key", "apikey", "api-key", "access_key",
                 "accesskey", "private_key", "auth_key", "credential")  # fmt: skip
_SECRET_NAME = (
    r"[A-Za-z0-9_.\-]{0,64}(?:secret|token|passw(?:or)?d|pwd|api[_\-]?key|access[_\-]?key|private[_\-]?key|"
    r"auth[_\-]?key|credentials?)[A-Za-z0-9_]{0,64}"
)
_ASSIGNED = re.compile(
    r"(?i:" + _SECRET_NAME + r")['\"]?\s*(?::=|=>|[:=])\s*"
    r"(?:(?P<q>['\"`])(?P<t>[^\s'\"`]{12,512})(?P=q)|(?P<u>[^\s'\"`,;()\[\]{}]{12,512})\s*$)"
)
# What every match of _ASSIGNED holds from its name's word on: the word, the rest of the name, the
# sign and 12 characters of a value. Searched first (a scan that starts at the words), it rules out
# nearly every line _ASSIGNED would try at each position with its 64-character name prefix: on the
# speed corpus 19,546 lines hold a word, and _ASSIGNED over them took 5.6 CPU-s of a 7.7 s redaction.
_ASSIGNED_TAIL = re.compile(
    r"(?i:" + _SECRET_NAME.split("{0,64}", 1)[1] + r")['\"]?\s*(?::=|=>|[:=])\s*"
    r"(?:['\"`][^\s'\"`]{12}|[^\s'\"`,;()\[\]{}]{12})"
)
# RE2 finds every literal in one scan of the text (Python's re has no multi-literal search): on the
# speed corpus 0.2 CPU-s against 1.3 for a scan per format. The lines holding the words, likewise:
# 0.4 against 0.8 for a find per word.
_CANDIDATES = _candidates()
_ANY_LITERAL = re2.compile(b"|".join(map(re.escape, _CANDIDATES)))
_WORD_LINES = re2.compile(r"(?m)^.*(?i:" + "|".join(map(re.escape, _ASSIGN_WORDS)) + r").*$")

MIN_ENTROPY_BITS = 3.5  # per character: English words and identifiers stay under it, keys over
_NOT_A_VALUE = re.compile(
    r"^(?:\$|%|\{|<|os\.|process\.|env\.|self\.|this\.|settings\.|config\.|getenv|None$|null$|true$|false$|"
    r"[A-Za-z_][A-Za-z0-9_]*(?:(?:\.[A-Za-z_][A-Za-z0-9_]*)+(?:\(.*)?|\(.*)$)"
)


def entropy_bits(value: str) -> float:
    """Shannon entropy of the value's characters, in bits per character."""
    counts = Counter(value)
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _looks_random(value: str, quoted: bool) -> bool:
    if _NOT_A_VALUE.match(value) or value.count("/") > 2:
        return False  # a reference (an env lookup, an attribute, a call, a path), not the secret
    digits = any(c.isdigit() for c in value)
    cased = value.lower() != value and value.upper() != value
    # Unquoted, a CamelCase name (a class, a constant) is code: a key also holds digits.
    mixed = (digits or cased) if quoted else (digits and any(c.isalpha() for c in value))
    return mixed and len(value) >= (12 if quoted else 16) and entropy_bits(value) >= MIN_ENTROPY_BITS


def opens_with_private_key(text: str) -> bool:
    """Whether a private-key block starts in the opening lines: the file is a key, whatever its name."""
    head = "\n".join(text.split("\n", PRIVATE_KEY_HEAD_LINES)[:PRIVATE_KEY_HEAD_LINES])
    return _PRIVATE_KEY.search(head) is not None


def redact(text: str) -> tuple[str, int]:
    """The text with every token of a known format and every secret-looking assigned value
    replaced by `[redacted:KIND]` (a private key's body by as many empty lines), and how many were
    replaced. Lines keep their numbers."""
    count = 0
    if "PRIVATE KEY" in text:

        def blank_key(m: re.Match[str]) -> str:
            nonlocal count
            count += 1
            return f"{m.group(1)}{REDACTED}private-key]" + "\n" * m.group(3).count("\n") + m.group(4)

        text = _PRIVATE_KEY_BLOCK.sub(blank_key, text)
    for kind, holds_literal, pattern in _formats_in(text):
        if holds_literal(text) is None:
            continue

        def replace(m: re.Match[str], kind: str = kind) -> str:
            nonlocal count
            at = m.start()
            if at and (m.string[at - 1].isalnum() or m.string[at - 1] == "_") and kind != "password-in-url":
                return m.group(0)  # glued to a word: part of an identifier, not a token
            if kind == "password-in-url" and m.group("t").isalpha() and m.group("t").islower():
                return m.group(0)  # a word (user:password@host): the example in docs and tests
            count += 1
            return _replaced(m, "t", kind)

        text = pattern.sub(replace, text)
    lines = _lines_with_words(text)
    if lines:
        pieces, done = [], 0
        for start, end in lines:
            line = text[start:end]
            if _ASSIGNED_TAIL.search(line) is None:
                continue  # no match of _ASSIGNED can be in it

            def assigned(m: re.Match[str]) -> str:
                nonlocal count
                group = "t" if m.group("t") is not None else "u"
                value = m.group(group)
                if REDACTED in value or not _looks_random(value, group == "t"):
                    return m.group(0)
                count += 1
                return _replaced(m, group, "assigned-secret")

            pieces += [text[done:start], _ASSIGNED.sub(assigned, line)]
            done = end
        pieces.append(text[done:])
        text = "".join(pieces)
    return text, count


def _formats_in(text: str) -> Iterator[tuple[str, Callable[[str], object], re.Pattern[str]]]:
    """The formats, in order, whose literals one scan finds in the text, and those whose literals
    a found one may have hidden. Replacements add no literal, so the text is scanned once."""
    found = set(_ANY_LITERAL.findall(text.encode("utf-8", "surrogatepass")))
    if found:
        yield from (_FORMATS[i] for i in sorted(frozenset().union(*map(_CANDIDATES.__getitem__, found))))


def _replaced(m: re.Match[str], group: str, kind: str) -> str:
    whole = m.group(0)
    if group not in m.re.groupindex or m.group(group) is None:
        return f"{REDACTED}{kind}]"
    start, end = m.start(group) - m.start(), m.end(group) - m.start()
    return whole[:start] + f"{REDACTED}{kind}]" + whole[end:]


def _lines_with_words(text: str) -> list[tuple[int, int]]:
    """The (start, end) of each line holding one of the words secret values are given to."""
    return [m.span() for m in _WORD_LINES.finditer(text)]


def count_redacted(value: object) -> int:
    """How many `[redacted:…]` markers the strings inside a JSON-like value hold."""
    if isinstance(value, str):
        return value.count(REDACTED)
    if isinstance(value, dict):
        return sum(count_redacted(v) for v in value.values())
    if isinstance(value, list | tuple):
        return sum(count_redacted(v) for v in value)
    return 0
