"""Fact lookups over a revision: definitions by name (exact, case-insensitive, qualified), ranked."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from ragraf.languages import is_test_path
from ragraf.store import FactHit, Store

_KIND_RANK = {
    "class": 0, "interface": 0, "struct": 0, "trait": 0, "enum": 0, "type": 1, "function": 1, "method": 1,
    "module": 2, "constant": 3, "variable": 4, "heading": 5,
}  # fmt: skip
_QUALIFIER = re.compile(r"(::|\.|#|->)")


def rank_definitions(hits: list[FactHit]) -> list[FactHit]:
    """Definitions in non-test code first, then types and functions before variables, then shallow paths."""
    return sorted(
        hits,
        key=lambda h: (
            is_test_path(h.path),
            _KIND_RANK.get(h.kind or "", 6),
            h.path.count("/"),
            h.path,
            h.line,
        ),
    )


def _qualified(store: Store, rev_no: int, name: str) -> list[FactHit]:
    parts = [p for p in _QUALIFIER.split(name) if p and not _QUALIFIER.fullmatch(p)]
    if len(parts) < 2:
        return []
    last, qualifier = parts[-1], ".".join(parts[:-1]).lower()
    found = []
    for hit in store.find_facts(rev_no, "def", name=last, exact=False):
        container = (hit.container or "").lower()
        module = PurePosixPath(hit.path).with_suffix("").as_posix().replace("/", ".").lower()
        if container == qualifier or container.endswith("." + qualifier) or module.endswith(qualifier):
            found.append(hit)
    return found


def find_definitions(store: Store, rev_no: int, name: str) -> tuple[list[FactHit], str]:
    """Definitions of name and how they matched: exact, case-insensitive, qualified or none."""
    name = name.strip()
    if not name:
        return [], "none"
    hits = store.find_facts(rev_no, "def", name=name, exact=True)
    if hits:
        return rank_definitions(hits), "exact"
    hits = store.find_facts(rev_no, "def", name=name, exact=False)
    if hits:
        return rank_definitions(hits), "case-insensitive"
    hits = _qualified(store, rev_no, name)
    if hits:
        return rank_definitions(hits), "qualified"
    hits = _modules(store, rev_no, name)
    return (rank_definitions(hits), "module file") if hits else ([], "none")


def _modules(store: Store, rev_no: int, name: str) -> list[FactHit]:
    """Files named like the query: in most languages a file is a module (express's lib/response.js)."""
    wanted = name.lower()
    found = []
    for path in store.manifest(rev_no):
        stem = PurePosixPath(path).stem.lower()
        if stem == wanted and PurePosixPath(path).suffix not in (".md", ".txt", ".json", ".rst"):
            found.append(FactHit("def", PurePosixPath(path).stem, "module", path, 1, 1, 1, None, None, False, None))
    return found


def find_references(store: Store, rev_no: int, name: str, calls_only: bool) -> list[FactHit]:
    """References (or only calls) of a name, grouped by path and enclosing definition."""
    parts = [p for p in _QUALIFIER.split(name.strip()) if p and not _QUALIFIER.fullmatch(p)]
    bare = parts[-1] if parts else ""
    if not bare:
        return []
    hits = store.find_facts(rev_no, "ref", name=bare, exact=True, limit=5000)
    if calls_only:
        hits = [h for h in hits if h.is_call]
    return sorted(hits, key=lambda h: (is_test_path(h.path), h.path, h.container or "", h.line))
