"""The index's vector tiers as a read sees them: which models a revision holds, their coverage, the vector side."""

from __future__ import annotations

from collections.abc import Callable

from ragraf.config import Settings
from ragraf.errors import RagrafError
from ragraf.search.tiers import Tier, tiered_hits
from ragraf.store import ChunkHit, Revision, Store

STATIC_FIELD = "static="


def primary_model(rev: Revision) -> str:
    """The model the revision was built for (the first field of its index version)."""
    return rev.index_version.split("|", 1)[0]


def static_model(rev: Revision) -> str:
    """The static tier's model beside a transformer (`…|static=<id>` in the index version), or ""."""
    last = rev.index_version.rsplit("|", 1)[-1]
    return last.removeprefix(STATIC_FIELD) if last.startswith(STATIC_FIELD) else ""


def tier_name(model: str) -> str:
    """static for the static table, transformer for any other model (local, Ollama, OpenAI-compatible)."""
    return "static" if model.startswith("static:") else "transformer"


def tier_coverage(store: Store, rev: Revision) -> dict[str, float]:
    """Each tier's share of the revision's chunks with its vector: {"static": 1.0, "transformer": 0.25}."""
    model = primary_model(rev)
    tiers = {tier_name(model): round(store.vector_coverage(rev.rev_no, model), 4)}
    if static := static_model(rev):
        tiers["static"] = round(store.vector_coverage(rev.rev_no, static), 4)
    return tiers


def vector_hits(
    store: Store,
    settings: Settings,
    rev: Revision,
    query: str,
    primary: tuple[str, bytes, int],
    tiers: dict[str, float],
) -> Callable[[int], list[ChunkHit]]:
    """The vector side of a search: the primary model's vectors, and the static tier's for the chunks
    the primary has not embedded yet (primary = (model, query vector, dim))."""
    model, vector, dim = primary
    best = Tier(tier_name(model), model, vector, dim, tiers.get(tier_name(model), 0.0))
    fallback = _static_query_tier(settings, rev, query, tiers) if best.coverage < 1.0 else None
    return tiered_hits(store, rev.rev_no, best, fallback)


def static_stand_in(
    store: Store, settings: Settings, rev: Revision, query: str, tiers: dict[str, float]
) -> Callable[[int], list[ChunkHit]] | None:
    """The vector side from the static tier alone, for when the transformer cannot embed the query
    (its endpoint down, its model damaged); None when the revision has no usable static tier."""
    tier = _static_query_tier(settings, rev, query, tiers)
    return tiered_hits(store, rev.rev_no, tier, None) if tier is not None else None


def _static_query_tier(settings: Settings, rev: Revision, query: str, tiers: dict[str, float]) -> Tier | None:
    """The revision's static tier with the query's vector under it; None without one, or when its
    table is damaged (the transformer's vectors, or the lexical side, answer alone)."""
    from ragraf.embed.static import static_tier  # numpy: only when the static tier answers

    static, embedder = static_model(rev), static_tier(settings)
    if not static or embedder is None or tiers.get("static", 0.0) <= 0:
        return None
    try:
        if embedder.model_id != static:
            return None
        query_vector = embedder.embed_query(query).astype("float32")
    except RagrafError:
        return None
    return Tier("static", static, query_vector.tobytes(), embedder.dim, tiers["static"])
