"""The vector side over an index's two tiers: each chunk answers with the best vector it has.

While the transformer tier is incomplete, the static tier ranks every chunk and the transformer
ranks those it has embedded; the two lists are fused by reciprocal rank, the transformer's counting
TRANSFORMER_WEIGHT times (a chunk both judge near rises; one the transformer has not reached still
stands on the static rank), each of its ranks read as a rank among all chunks: the r-th of a share c
of them is about the (r/c)-th. A complete transformer tier answers alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ragraf.store import ChunkHit, Store

# Bench NDCG@10 at 25% transformer coverage (value order), the static tier 0.832 alone: the
# transformer's list at weight 1 0.830, 2 0.846, 3 0.846, 5 0.846; merged as coverage samples of
# the chunks each tier alone answers for (before) 0.820 (docs/embeddings.md). Its ranks read as
# ranks among all chunks (rank / coverage), at 10/25/50% coverage: 0.806/0.859/0.862 ->
# 0.818/0.862/0.861. With the hybrid's pools of 100, weight 3 and constant 30 against 2 and 100:
# 0.832/0.862/0.859 -> 0.831/0.866/0.863 (24 settings at 25%, leave-one-repository-out 0.863).
TRANSFORMER_WEIGHT = 3.0
RRF_K = 30  # measured for this fusion; the hybrid's (search/engine.py) is 60 since its pools are 100 deep


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
        every = store.vector_search(rev_no, fallback.model, fallback.query, fallback.dim, limit)
        return fuse_tiers(top, every, limit, best.coverage)

    return hits


def fuse_tiers(
    top: list[ChunkHit], every: list[ChunkHit], limit: int, coverage: float = 1.0
) -> list[ChunkHit]:
    """Reciprocal-rank fusion of the transformer's list (the chunks it has embedded, a share
    `coverage` of all) and the static tier's (all chunks), the first TRANSFORMER_WEIGHT times, its
    ranks divided by its coverage; scores are the fused ones, best first."""
    scores: dict[int, float] = {}
    hits: dict[int, ChunkHit] = {}
    for ranked, weight, spread in ((top, TRANSFORMER_WEIGHT, 1.0 / max(coverage, 1e-3)), (every, 1.0, 1.0)):
        for rank, hit in enumerate(ranked):
            scores[hit.chunk_id] = scores.get(hit.chunk_id, 0.0) + weight / (RRF_K + rank * spread + 1)
            hits.setdefault(hit.chunk_id, hit)
    order = sorted(
        scores, key=lambda chunk_id: (-scores[chunk_id], hits[chunk_id].path, hits[chunk_id].start_line)
    )
    return [hits[c].replaced(score=scores[c]) for c in order[:limit]]
