"""Files named for a query's words: a third retriever beside BM25 and vectors, over the revision's paths.

A file whose name says what the query asks about (`aliases.py` for "alias handling", `middleware.ts`
for "how middleware chains ...") is often the answer even when its text ranks it too low to be among
the content retrievers' candidates. Words that name many files (`src`, `utils`, a package name) count
for little: each matched stem weighs by how rare it is among the revision's paths.
"""

from __future__ import annotations

import heapq
import math
import weakref
from dataclasses import dataclass

from ragraf.search.rank import path_stems
from ragraf.store import Store

# A long query (a pasted bug report) can hold words that name most paths; the stems are read rarest
# first and the rest skipped once this many (stem, path) pairs were scored, so matching stays cheap.
_MATCH_BUDGET = 20_000


@dataclass(frozen=True)
class PathIndex:
    """Which paths of one revision each path stem occurs in, and how rare it is."""

    postings: dict[str, frozenset[str]]
    paths: frozenset[str]

    @classmethod
    def build(cls, paths: list[str] | set[str]) -> PathIndex:
        postings: dict[str, set[str]] = {}
        for path in paths:
            for s in path_stems(path):
                postings.setdefault(s, set()).add(path)
        return cls({s: frozenset(ps) for s, ps in postings.items()}, frozenset(paths))

    def updated(self, paths: set[str]) -> PathIndex:
        """The index of another revision's paths, rebuilding only the stems of added or removed paths."""
        added, removed = paths - self.paths, self.paths - paths
        if not added and not removed:
            return self
        if len(added) + len(removed) > len(paths) // 4:
            return PathIndex.build(paths)
        postings = dict(self.postings)
        for s in {s for p in added | removed for s in path_stems(p)}:
            held = (postings.get(s, frozenset()) - removed) | {p for p in added if s in path_stems(p)}
            if held:
                postings[s] = frozenset(held)
            else:
                postings.pop(s, None)
        return PathIndex(postings, frozenset(paths))

    def weight(self, stem: str) -> float:
        """Inverse document frequency over paths: a stem in every path weighs log 2, a rare one more."""
        return math.log(1.0 + len(self.paths) / max(1, len(self.postings.get(stem, ()))))

    def match(self, stems: frozenset[str], limit: int) -> list[str]:
        """Paths best named for the stems, best first: the weight of the stems each holds, then shallow."""
        scores: dict[str, float] = {}
        budget = _MATCH_BUDGET
        for s in sorted((s for s in stems if s in self.postings), key=lambda s: len(self.postings[s])):
            held = self.postings[s]
            budget -= len(held)
            if budget < 0:
                break
            w = self.weight(s)
            for path in held:
                scores[path] = scores.get(path, 0.0) + w
        best = heapq.nsmallest(
            limit, scores.items(), key=lambda item: (-item[1], item[0].count("/"), item[0])
        )
        return [path for path, _ in best]


# A revision's manifest never changes once committed, so its index is made on the first search of
# it (from the last revision's, when few paths differ) and kept for the few revisions (views,
# branches) a store is being searched in.
_CACHE: weakref.WeakKeyDictionary[Store, dict[int, PathIndex]] = weakref.WeakKeyDictionary()
_KEEP = 4


def path_index(store: Store, rev_no: int) -> PathIndex:
    """The path index of a revision."""
    per_store = _CACHE.setdefault(store, {})
    index = per_store.pop(rev_no, None)
    if index is None:
        paths = {path for path, _ in store.manifest_hashes(rev_no)}
        last = next(reversed(per_store.values()), None)
        index = last.updated(paths) if last is not None else PathIndex.build(paths)
    per_store[rev_no] = index  # most recently used last
    while len(per_store) > _KEEP:
        del per_store[next(iter(per_store))]
    return index
