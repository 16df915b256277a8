"""Hybrid retrieval: lexical and vector candidates, fused, ranked, merged, cut to k."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ragraf.search.rank import Candidate, apply_rules, merge_and_cap
from ragraf.store import ChunkHit, Store
from ragraf.tokens import fts_match, query_terms

RRF_K = 60


@dataclass(frozen=True)
class SearchOutcome:
    hits: list[Candidate]
    notes: list[str]


def lexical_candidates(store: Store, rev_no: int, query: str, limit: int) -> list[ChunkHit]:
    """BM25 candidates over identifier-split chunk text and symbols."""
    terms = query_terms(query)
    if not terms:
        return []
    return store.lexical_search(fts_match(terms), rev_no, limit)


def rrf(*ranked: list[ChunkHit]) -> list[Candidate]:
    """Reciprocal-rank fusion of candidate lists (each best first), keyed by chunk and path."""
    scores: dict[tuple[int, str], float] = {}
    hits: dict[tuple[int, str], ChunkHit] = {}
    for lst in ranked:
        for rank, hit in enumerate(lst):
            key = (hit.chunk_id, hit.path)
            scores[key] = scores.get(key, 0.0) + 1.0 / (RRF_K + rank + 1)
            hits.setdefault(key, hit)
    return [Candidate(hits[key], s) for key, s in scores.items()]


def run_search(
    store: Store,
    rev_no: int,
    query: str,
    k: int,
    mode: str = "hybrid",
    vector_search: Any | None = None,
    rules: dict[str, bool] | None = None,
) -> SearchOutcome:
    """Top-k ranked chunks for a query in one revision."""
    limit = min(50, 4 * k) if k > 0 else 0
    notes: list[str] = []
    lexical = lexical_candidates(store, rev_no, query, limit) if mode in ("hybrid", "lexical") else []
    vector: list[ChunkHit] = []
    if mode in ("hybrid", "vector") and vector_search is not None:
        vector = vector_search(query, limit)
    if lexical and not vector:
        top = max(h.score for h in lexical) or 1.0
        candidates = [Candidate(h, h.score / top) for h in lexical]
    else:
        candidates = rrf(lexical, vector)
    ranked = apply_rules(query, candidates, rules)
    return SearchOutcome(merge_and_cap(ranked, k, per_file=2, rules=rules), notes)
