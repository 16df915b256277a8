"""Files named for a query's words: a third retriever beside BM25 and vectors, over the revision's paths.

A file whose name says what the query asks about (`aliases.py` for "alias handling", `middleware.ts`
for "how middleware chains ...") is often the answer even when its text ranks it too low to be among
the content retrievers' candidates. Words that name many files (`src`, `utils`, a package name) count
for little: each matched stem weighs by how rare it is among the revision's paths.
"""

from __future__ import annotations

import bisect
import heapq
import math
import threading
import weakref
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

from ragraf.search.rank import path_stems, segment_stems
from ragraf.store import Store

# A long query (a pasted bug report) can hold words that name most paths; the stems are read rarest
# first and the rest skipped once this many (stem, path) pairs were scored, so matching stays cheap.
_MATCH_BUDGET = 20_000
# Beyond this many stems, JoinedPaths lists the words of the paths first (measured: listing them costs
# about 25 searches of the text, at 10,000 and at 100,000 paths alike).
_WORDS_FROM = 25
# Bytes of lower-case ASCII letters and digits kept, every other byte a space: the words of paths.
_WORD_BYTES = bytes(c if chr(c).isdigit() or "a" <= chr(c) <= "z" else 32 for c in range(128)) + b" " * 128


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
        return _weight(len(self.paths), len(self.postings.get(stem, ())))

    def match(self, stems: frozenset[str], limit: int) -> list[str]:
        """Paths best named for the stems, best first: the weight of the stems each holds, then shallow."""
        return _best(len(self.paths), {s: self.postings[s] for s in stems if s in self.postings}, limit)


@dataclass(frozen=True)
class JoinedPaths:
    """A revision's paths as one lower-case text, searched for each query stem: what a process's first
    search of a revision uses, as it costs no per-path work before the search (PathIndex does).

    A stem (`rout`, `dependency`) is a prefix of the lower-cased word it came from, but for a "y" from
    "ies"/"ied", so a path that holds it holds that prefix as text: the text is searched for it at C
    speed and only the paths found are checked, by the stems of the folder or file name found in. The
    paths are sorted, so a folder named for the stem is taken whole (a range of paths, by bisection).
    A path with a non-ASCII character (whose lower case may change its length or become ASCII: `K`,
    the Kelvin sign, is `k`) is kept out of the text and checked by its stems.
    """

    paths: tuple[str, ...]  # sorted; ASCII only
    text: str  # the paths joined by NUL, which no path holds
    lowered: str
    others: tuple[str, ...]  # the paths with a non-ASCII character
    # The paths found for each stem searched so far (None: over the budget): a revision searched
    # again while its PathIndex is being built searches the text only for stems it has not seen.
    found: dict[str, list[str] | None] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def build(cls, paths: Iterable[str]) -> JoinedPaths:
        """The joined text of a revision's (distinct) paths."""
        ordered = sorted(paths)
        text = "\0".join(ordered)
        others: tuple[str, ...] = ()
        if not text.isascii():
            others = tuple(p for p in ordered if not p.isascii())
            ordered = [p for p in ordered if p.isascii()]
            text = "\0".join(ordered)
        return cls(tuple(ordered), text, text.lower(), others)

    def all_paths(self) -> list[str]:
        """Every path of the revision."""
        return [*self.paths, *self.others]

    def match(self, stems: frozenset[str], limit: int) -> list[str]:
        """The same paths, in the same order, as PathIndex.build(paths).match(stems, limit)."""
        held: dict[str, list[str]] = {}
        # A long query (a pasted bug report) names many words no path holds: one pass over the text
        # lists its words, so each of those is dismissed without a search of the whole text.
        words = self._words() if len(stems) > _WORDS_FROM else None
        for s in stems:
            key = s[:-1] if s.endswith("y") else s
            if words is not None and key.isalnum() and key.encode("ascii") not in words:
                continue
            if s in self.found:
                paths = self.found[s]
            else:
                paths = self.found[s] = self._holding(s, key)
            if paths is not None and paths:
                held[s] = paths
        return _best(len(self.paths) + len(self.others), held, limit)

    def _words(self) -> bytes:
        return b"\0".join(set(self.lowered.encode("ascii").translate(_WORD_BYTES).split()))

    def _holding(self, s: str, key: str) -> list[str] | None:
        """The paths holding stem s (its text key), or None when more than _MATCH_BUDGET do."""
        found = [p for p in self.others if s in path_stems(p)]
        paths, text, lowered = self.paths, self.text, self.lowered
        i = lowered.find(key)
        while i >= 0:
            # A stem's key starts a word part (path_stems splits camelCase): not where a lower-case
            # letter follows a letter or a digit follows a digit, as in "form" for "orm".
            before, first = text[i - 1] if i else "\0", text[i]
            if (first.islower() and before.isalpha()) or (first.isdigit() and before.isdigit()):
                i = lowered.find(key, i + 1)
                continue
            start = text.rfind("\0", 0, i) + 1
            end = text.find("\0", i)
            if end < 0:
                end = len(text)
            path = text[start:end]
            j = i - start
            # The stems come from the path without its extension, split at / and \ (path_stems).
            dot, slash = path.rfind("."), path.rfind("/")
            base = dot if dot > slash else len(path)
            if j >= base:
                i = lowered.find(key, end)
                continue
            left = max(path.rfind("/", 0, j), path.rfind("\\", 0, j)) + 1
            right = min(
                (r for r in (path.find("/", j, base), path.find("\\", j, base)) if r >= 0), default=base
            )
            if s not in segment_stems(path[left:right]):
                i = lowered.find(key, start + right)
                continue
            if right < base and path[right] == "/":
                # A folder named for the stem: every path under it holds it, a range of the sorted paths.
                first = bisect.bisect_left(paths, path)
                after = bisect.bisect_left(paths, path[:right] + "0", first)
                block = paths[first:after]
                found.extend(block)
                end = start + sum(map(len, block)) + len(block) - 1
            else:
                found.append(path)
            if len(found) > _MATCH_BUDGET:
                return None
            i = lowered.find(key, end)
        return found if len(found) <= _MATCH_BUDGET else None


def _weight(total: int, holding: int) -> float:
    return math.log(1.0 + total / max(1, holding))


def _best(total: int, held: dict[str, Collection[str]], limit: int) -> list[str]:
    """The paths best named for the stems, given the paths holding each stem (all of them whenever
    they are at most _MATCH_BUDGET, and any stem held by more may be left out: the budget skips it).

    Stems are read rarest first (equally rare ones by name, so the budget cuts the same ones in
    every process); each adds its weight, log(1 + paths / its paths), to the paths holding it.
    """
    scores: dict[str, float] = {}
    budget = _MATCH_BUDGET
    for s in sorted(held, key=lambda s: (len(held[s]), s)):
        paths = held[s]
        budget -= len(paths)
        if budget < 0:
            break
        w = _weight(total, len(paths))
        for path in paths:
            scores[path] = scores.get(path, 0.0) + w
    best = heapq.nsmallest(limit, scores.items(), key=lambda item: (-item[1], item[0].count("/"), item[0]))
    return [path for path, _ in best]


# A revision's manifest never changes once committed, so what its paths are searched with is kept for
# the few revisions (views, branches) a store is being searched in. A process's first search of a
# store searches the joined paths (a CLI search is a process of its own: it must not pay for an
# index); a second search of the revision shows a lasting process, which then builds the index in a
# thread beside its searches (3.5 CPU-s at 100,000 paths: no search waits for it), and derives the
# next revision's from it while few paths differ.
_CACHE: weakref.WeakKeyDictionary[Store, dict[int, PathIndex | JoinedPaths]] = weakref.WeakKeyDictionary()
_KEEP = 4
_LOCK = threading.Lock()
BUILDS: list[tuple[JoinedPaths, threading.Thread]] = []  # index builds started, for what (tests wait)


def path_index(store: Store, rev_no: int) -> PathIndex | JoinedPaths:
    """What the paths of a revision are matched with."""
    with _LOCK:
        per_store = _CACHE.setdefault(store, {})
        index = per_store.get(rev_no)
        last = next((i for i in reversed(per_store.values()) if isinstance(i, PathIndex)), None)
        building = isinstance(index, JoinedPaths) and any(j is index for j, _ in BUILDS)
    if index is None:
        paths = [path for path, _ in store.manifest_hashes(rev_no)]
        if last is not None and len(last.paths.symmetric_difference(paths)) <= len(paths) // 4:
            index = last.updated(set(paths))
        else:
            index = JoinedPaths.build(paths)
    elif isinstance(index, JoinedPaths) and not building:
        build = threading.Thread(target=_build, args=(per_store, rev_no, index), daemon=True)
        with _LOCK:
            BUILDS[:] = [(j, b) for j, b in BUILDS if b.is_alive()] + [(index, build)]
        build.start()
    with _LOCK:
        kept = per_store.pop(rev_no, None)
        per_store[rev_no] = kept if isinstance(kept, PathIndex) else index  # most recently used last
        while len(per_store) > _KEEP:
            del per_store[next(iter(per_store))]
    return index


def _build(per_store: dict[int, PathIndex | JoinedPaths], rev_no: int, joined: JoinedPaths) -> None:
    """A revision's PathIndex, put in place of its joined paths while the revision is kept."""
    index = PathIndex.build(joined.all_paths())
    with _LOCK:
        if rev_no in per_store:
            per_store[rev_no] = index
