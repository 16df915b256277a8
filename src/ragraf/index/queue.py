"""The transformer tier's queue in order of value: code first, central definitions, recent changes.

The static tier covers every chunk when the lexical revision commits; the transformer's vectors
refine it at 25 chunks per CPU-second, so the chunks searches most often land on go first:
code before tests, docs and config; within a kind, definitions many files reference and files
changed recently before the rest (docs/embeddings.md measures how quality rises with coverage).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from ragraf.languages import kind_of
from ragraf.store import Store

KIND_RANK = {"code": 0, "test": 1, "doc": 2, "config": 3}
# A recently changed file's chunk counts as much as a definition seven other files reference.
RECENT_WEIGHT = 3.0
# A checkout, an unpacked archive or a build writes its files within seconds to minutes; an edit
# comes later. Without this gap, aiohttp's sdist (its Cython-generated C files written 3 s after the
# rest, a quarter of its chunks) sent the transformer there first: bench NDCG@10 at 25% transformer
# coverage 0.846 -> 0.859 with it (docs/embeddings.md).
RECENT_GAP_NS = 10 * 60 * 10**9
# Chunks read per query while ordering, their text dropped at once: a read is a query over the
# revision (2-4 s on 77,000 chunks under load), so few and large.
_SCAN = 8192


def chunk_value(
    path: str, symbol: str | None, refs: dict[str, int], recent: frozenset[str]
) -> tuple[int, float]:
    """The sort key of a chunk (lower first): its kind's rank, then minus its centrality and recency."""
    name = symbol.rsplit(".", 1)[-1] if symbol else ""
    central = math.log2(1 + refs.get(name, 0)) if name else 0.0
    recency = RECENT_WEIGHT if path in recent else 0.0
    return KIND_RANK.get(kind_of(path), len(KIND_RANK)), -(central + recency)


def value_order(store: Store, rev_no: int, model: str, recent: Iterable[str] = ()) -> list[tuple[int, str]]:
    """(chunk id, path) of the revision's chunks without a vector of model, most valuable first
    (ties in chunk order, so the order is deterministic)."""
    refs = store.ref_counts(rev_no)
    recent_set = frozenset(recent)
    keyed: list[tuple[tuple[int, float], int, str]] = []
    after = 0
    while True:
        window = store.chunks_missing_vectors(rev_no, model, _SCAN, after_id=after)
        keyed += [(chunk_value(h.path, h.symbol, refs, recent_set), h.chunk_id, h.path) for h in window]
        if len(window) < _SCAN:
            break
        after = window[-1].chunk_id
    keyed.sort()
    return [(chunk_id, path) for _key, chunk_id, path in keyed]


def recent_paths(mtimes: dict[str, int], git_recent: list[str]) -> frozenset[str]:
    """What changed recently: the files the last commits touched, and files modified RECENT_GAP_NS
    after nine in ten of the tree (edited since the checkout; a fresh clone's close times name none)."""
    newer: set[str] = set()
    if len(mtimes) >= 10:
        cut = sorted(mtimes.values())[int(len(mtimes) * 0.9)] + RECENT_GAP_NS
        newer = {path for path, mtime in mtimes.items() if mtime > cut}
    return frozenset(git_recent) | newer
