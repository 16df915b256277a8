"""The retrieval metric of the shared bench (semble's): NDCG@10, file Recall@1/@5/@10, MRR@10.

- Results are chunks ``(path, start_line, end_line)`` in rank order; only the top ``k`` (10) count.
- A target is found at the rank of the first result whose path matches it and, when the target
  has a line span, whose lines overlap that span.
- NDCG@10 treats ``relevant + secondary`` (duplicates removed) as equally relevant targets:
  DCG = sum over found targets of 1/log2(rank+1); ideal = the same for min(10, targets) hits at
  ranks 1..n. A result can find several targets; a target is found once (its first rank).
- File-level metrics ignore line spans and look at the files of the ``relevant`` targets
  (``secondary`` only when there is no ``relevant``): Recall@k is the share of those files that
  appear among the top k results (a file counted once however many chunks it has); MRR@10 is
  1/rank of the first result whose file is one of them, 0 when none is in the top 10.
- Aggregates are means over queries.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Protocol

K = 10
METRICS = ("ndcg10", "recall1", "recall5", "recall10", "mrr10")


class ChunkLike(Protocol):
    """Anything with a path and a 1-based inclusive line span (e.g. ragraf's SearchResult)."""

    path: str
    start_line: int
    end_line: int


@dataclass(frozen=True)
class Chunk:
    """A ranked result reduced to what the metric needs."""

    path: str
    start_line: int
    end_line: int


@dataclass(frozen=True)
class Target:
    """A gold file, optionally narrowed to a line span."""

    path: str
    start_line: int | None = None
    end_line: int | None = None

    @property
    def has_span(self) -> bool:
        """Whether the target names lines, not just a file."""
        return self.start_line is not None and self.end_line is not None


@dataclass(frozen=True)
class QueryScore:
    """The metric values of one query."""

    ndcg10: float
    recall1: float
    recall5: float
    recall10: float
    mrr10: float
    ranks: tuple[int | None, ...]  # rank of each target (relevant + secondary), None = not found
    n_targets: int

    def values(self) -> dict[str, float]:
        """The five headline values by name."""
        return {m: getattr(self, m) for m in METRICS}

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return asdict(self)


def parse_target(raw: str | Mapping[str, object]) -> Target:
    """A target from an annotation entry: a path or {path, start_line, end_line}."""
    if isinstance(raw, str):
        return Target(normalize(raw))
    start, end = raw.get("start_line"), raw.get("end_line")
    return Target(
        normalize(str(raw["path"])),
        int(start) if start is not None else None,  # type: ignore[call-overload]
        int(end) if end is not None else None,  # type: ignore[call-overload]
    )


def normalize(path: str) -> str:
    """Posix separators, no leading './'."""
    path = path.replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path


def unique(targets: Iterable[Target]) -> tuple[Target, ...]:
    """Targets in order with duplicates removed."""
    return tuple(dict.fromkeys(targets))


def path_matches(result_path: str, target_path: str) -> bool:
    """Same path, or the result path ends with /target (semble's rule)."""
    r, t = normalize(result_path), normalize(target_path)
    return r == t or r.endswith("/" + t)


def overlaps(chunk: ChunkLike, target: Target) -> bool:
    """Whether the chunk's lines overlap the target's span (always true for a file target)."""
    if not target.has_span:
        return True
    return not (chunk.end_line < target.start_line or chunk.start_line > target.end_line)  # type: ignore[operator]


def target_rank(results: Sequence[ChunkLike], target: Target, k: int = K) -> int | None:
    """1-based rank of the first of the top k results that covers the target, or None."""
    for rank, chunk in enumerate(results[:k], 1):
        if path_matches(chunk.path, target.path) and overlaps(chunk, target):
            return rank
    return None


def dcg(ranks: Iterable[int]) -> float:
    """Discounted cumulative gain of hits at the given 1-based ranks."""
    return sum(1.0 / math.log2(r + 1) for r in ranks)


def ndcg_at_k(ranks: Iterable[int | None], n_targets: int, k: int = K) -> float:
    """NDCG@k with binary gains; ideal = min(k, n_targets) hits at ranks 1..n."""
    if n_targets <= 0:
        return 0.0
    found = [r for r in ranks if r is not None and 1 <= r <= k]
    ideal = dcg(range(1, min(k, n_targets) + 1))
    return dcg(found) / ideal


def file_rank(results: Sequence[ChunkLike], files: Iterable[str], k: int = K) -> int | None:
    """1-based rank of the first of the top k results in one of the files, or None."""
    wanted = tuple(files)
    for rank, chunk in enumerate(results[:k], 1):
        if any(path_matches(chunk.path, f) for f in wanted):
            return rank
    return None


def file_recall(results: Sequence[ChunkLike], files: Sequence[str], k: int) -> float:
    """Share of the distinct files that appear among the top k results."""
    distinct = list(dict.fromkeys(files))
    if not distinct:
        return 0.0
    top = [c.path for c in results[:k]]
    hit = sum(1 for f in distinct if any(path_matches(p, f) for p in top))
    return hit / len(distinct)


def score_query(
    results: Sequence[ChunkLike],
    relevant: Sequence[Target],
    secondary: Sequence[Target] = (),
    k: int = K,
) -> QueryScore:
    """Score one query's ranked results against its targets."""
    results = list(results)[:k]
    targets = unique([*relevant, *secondary])
    ranks = tuple(target_rank(results, t, k) for t in targets)
    files = [t.path for t in (relevant or secondary)]
    fr = file_rank(results, dict.fromkeys(files), k)
    return QueryScore(
        ndcg10=ndcg_at_k(ranks, len(targets), k),
        recall1=file_recall(results, files, 1),
        recall5=file_recall(results, files, 5),
        recall10=file_recall(results, files, 10),
        mrr10=1.0 / fr if fr else 0.0,
        ranks=ranks,
        n_targets=len(targets),
    )


def mean(scores: Sequence[QueryScore]) -> dict[str, float]:
    """Mean of each headline metric over queries (zeros and n=0 when empty)."""
    out: dict[str, float] = {m: 0.0 for m in METRICS}
    for s in scores:
        for m, v in s.values().items():
            out[m] += v
    n = len(scores)
    return {**{m: (v / n if n else 0.0) for m, v in out.items()}, "n": n}


def percentile(values: Iterable[float], q: float) -> float:
    """The q-th percentile (0..100) with linear interpolation between order statistics; 0 when empty."""
    xs = sorted(values)
    if not xs:
        return 0.0
    pos = (len(xs) - 1) * min(max(q, 0.0), 100.0) / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)
