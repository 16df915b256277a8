"""Identifier-aware tokens for the lexical index and for queries (camelCase and snake_case split)."""

from __future__ import annotations

import functools
import re

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[^\W\d_]+", re.UNICODE)
# The words that can split: whole runs of ASCII word characters holding a capital or an underscore
# (leading digits left out, as in _IDENT). Most words are lower case; matching only these is cheaper than
# listing every word and dropping those (a fifth of the words, a sixth less regex time).
_SPLITTABLE = re.compile(r"\b[0-9]*+([a-z0-9]*+[A-Z_]\w*)", re.ASCII)
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")

STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further had
    has have having he her here hers him his how i if in into is it its itself just me more most my
    no nor not now of off on once only or other our ours out over own same she should so some such
    than that the their theirs them then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your yours
    implemented implement implementation code file files function functions find where's does
    handled handle handles work works done""".split()
)


# The caches keep a codebase's common identifiers; larger ones held about 300 MB per indexing worker
# on generated headers, where nearly every identifier is new.
@functools.lru_cache(maxsize=4096)
def split_identifier(word: str) -> tuple[str, ...]:
    """getUserName -> (get, user, name); HTTPServer_v2 -> (http, server, v, 2)."""
    return tuple(p.lower() for piece in word.split("_") for p in _CAMEL.findall(piece))


@functools.lru_cache(maxsize=32_768)
def _expansion(word: str) -> str:
    parts = split_identifier(word)
    if len(parts) < 2:
        return ""
    return word.replace("_", "").lower() + " " + " ".join(parts)


# Bump with any change to what index_text returns: the SQLite store's lexical tables keep no body
# and rebuild one with index_text to remove a row, so it rebuilds them all when this changes.
INDEX_TEXT_VERSION = "1"


def index_text(text: str) -> str:
    """Text for the FTS body: the original words, plus the joined and split forms of compound identifiers."""
    # Only identifiers with an inner capital or underscore can split; each is expanded once per chunk.
    words = {w for w in _words(text) if not w.islower() or "_" in w.strip("_")}
    extra = [e for e in map(_expansion, words) if e]
    if not extra:
        return text
    return text + "\n" + " ".join(sorted(extra))


def _words(text: str) -> set[str]:
    """The identifiers of a text that hold a capital or an underscore."""
    return set(_SPLITTABLE.findall(text))


def index_texts(texts: list[str]) -> list[str]:
    """index_text of each text, each distinct word looked at once over all of them (the chunks of
    one file share most of their identifiers); the same strings index_text gives."""
    seen: set[str] = set()
    expansions: dict[str, str] = {}  # the words with an expansion, and it
    out: list[str] = []
    for text in texts:
        words = _words(text)
        new = words - seen
        if new:
            for w in new:
                if not w.islower() or "_" in w.strip("_"):
                    e = _expansion(w)
                    if e:
                        expansions[w] = e
            seen |= new
        # One per word, as index_text: two words with one expansion (FooBar, Foo_Bar) give it twice.
        extra = list(map(expansions.__getitem__, words & expansions.keys())) if expansions else None
        out.append(text + "\n" + " ".join(sorted(extra)) if extra else text)
    return out


def query_terms(query: str, limit: int = 40) -> list[str]:
    """Distinct lower-case search terms of a query, stop words dropped, compound identifiers first."""
    compound: list[str] = []
    plain: list[str] = []
    seen: set[str] = set()

    def add(bucket: list[str], term: str) -> None:
        if term and term not in seen and term not in STOPWORDS:
            seen.add(term)
            bucket.append(term)

    for word in _IDENT.findall(query):
        parts = split_identifier(word) or [word.lower()]
        if len(parts) > 1:
            add(compound, word.replace("_", "").lower())
            for part in parts:
                add(plain, part)
        else:
            add(plain, parts[0])
    # Long queries (pasted bug reports) keep identifiers and the longer, rarer-looking words.
    if len(compound) + len(plain) > limit:
        plain.sort(key=len, reverse=True)
    return (compound + plain)[:limit]


def fts_match(terms: list[str]) -> str:
    """An FTS5 MATCH expression OR-ing the terms, each quoted so no term is read as syntax."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def camel_words(text: str) -> str:
    """camelCase identifiers as their words, snake_case kept: `safeParse(raw_input)` -> `safe Parse(raw_input)`."""
    return _CAMEL_BOUNDARY.sub(" ", text)
