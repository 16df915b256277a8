"""Files named for a query's words: a third retriever beside BM25 and vectors, over the revision's paths.

A file whose name says what the query asks about (`aliases.py` for "alias handling", `middleware.ts`
for "how middleware chains ...") is often the answer even when its text ranks it too low to be among
the content retrievers' candidates. Words that name many files (`src`, `utils`, a package name) count
for little: each matched stem weighs by how rare it is among the revision's paths.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass

from ragraf.search.rank import path_stems
from ragraf.store import Store


@dataclass(frozen=True)
class PathIndex:
    """Which paths of one revision each path stem occurs in, and how rare it is."""

    postings: dict[str, tuple[str, ...]]
    files: int

    @classmethod
    def build(cls, paths: list[str]) -> PathIndex:
        postings: dict[str, list[str]] = {}
        for path in paths:
            for s in path_stems(path):
                postings.setdefault(s, []).append(path)
        return cls({s: tuple(ps) for s, ps in postings.items()}, len(paths))

    def weight(self, stem: str) -> float:
        """Inverse document frequency over paths: a stem in every path weighs log 2, a rare one more."""
        return math.log(1.0 + self.files / max(1, len(self.postings.get(stem, ()))))

    def match(self, stems: frozenset[str], limit: int) -> list[str]:
        """Paths best named for the stems, best first: the weight of the stems each holds, then shallow."""
        scores: dict[str, float] = {}
        for s in stems:
            w = self.weight(s)
            for path in self.postings.get(s, ()):
                scores[path] = scores.get(path, 0.0) + w
        ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0].count("/"), item[0]))
        return [path for path, _ in ranked[:limit]]


# A revision's manifest never changes once committed, so its index is built on the first search
# of it and kept for the few revisions (views, branches) a store is being searched in.
_CACHE: weakref.WeakKeyDictionary[Store, dict[int, PathIndex]] = weakref.WeakKeyDictionary()
_KEEP = 4


def path_index(store: Store, rev_no: int) -> PathIndex:
    """The path index of a revision, built once."""
    per_store = _CACHE.setdefault(store, {})
    index = per_store.pop(rev_no, None)
    if index is None:
        index = PathIndex.build([path for path, _ in store.manifest_hashes(rev_no)])
    per_store[rev_no] = index  # most recently used last
    while len(per_store) > _KEEP:
        del per_store[next(iter(per_store))]
    return index
