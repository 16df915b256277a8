"""The vector side over an index's two tiers: each chunk answers with the best vector it has.

A chunk the transformer has embedded answers with the transformer's vector; the others with the
static table's. The two lists are merged as samples of the revision: if the transformer covers a
quarter of the chunks, about a quarter of the true nearest should come from its list.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from ragraf.store import ChunkHit, Store


@dataclass(frozen=True)
class Tier:
    """One model's vectors in a revision, and the query's vector under that model."""

    name: str  # "transformer" or "static"
    model: str
    query: bytes
    dim: int
    coverage: float  # share of the revision's chunks with a vector of this model


def tiered_hits(
    store: Store, rev_no: int, best: Tier, fallback: Tier | None
) -> Callable[[int], list[ChunkHit]]:
    """vector_hits(limit) over the best tier, and the fallback tier for the chunks the best lacks."""
    if fallback is None or fallback.coverage <= 0 or best.coverage >= 1.0:
        return lambda limit: store.vector_search(rev_no, best.model, best.query, best.dim, limit)
    if best.coverage <= 0:
        return lambda limit: store.vector_search(rev_no, fallback.model, fallback.query, fallback.dim, limit)

    def hits(limit: int) -> list[ChunkHit]:
        top = store.vector_search(rev_no, best.model, best.query, best.dim, limit)
        rest = store.vector_search(rev_no, fallback.model, fallback.query, fallback.dim, limit)
        covered = store.chunks_with_vectors(best.model, [h.chunk_id for h in rest])
        rest = [h for h in rest if h.chunk_id not in covered]  # the better judge has ranked these
        return merge_by_share(top, rest, best.coverage, limit)

    return hits


def merge_by_share(top: list[ChunkHit], rest: list[ChunkHit], share: float, limit: int) -> list[ChunkHit]:
    """Interleave two ranked lists as samples of shares `share` and 1 - share of the chunks: the i-th
    of a list stands at (i + 0.5) / its share; the merged scores fall with the merged rank."""
    keyed = [((i + 0.5) / share, h) for i, h in enumerate(top)]
    keyed += [((i + 0.5) / (1.0 - share), h) for i, h in enumerate(rest)]
    keyed.sort(key=lambda kh: kh[0])
    return [dataclasses.replace(h, score=1.0 / (1.0 + key)) for key, h in keyed[:limit]]
