"""Hybrid retrieval: lexical and vector candidates, fused, ranked, merged, cut to k."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from ragraf.facts.lookup import rank_definitions
from ragraf.search.paths import path_index
from ragraf.search.rank import Candidate, QueryInfo, add_file_evidence, apply_rules, enabled, merge_and_cap
from ragraf.store import ChunkHit, FactHit, Store
from ragraf.tokens import STOPWORDS, fts_match, query_terms, split_identifier

_CODE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# RRF's constant: 60 with pools of 100 (100 with pools of 40): deep ranks of a 100-long list count
# less, which the static tier's weaker vectors need (bench hybrid default / static 0.869 / 0.826 at 100).
RRF_K = 60
VECTOR_WEIGHT = 1.0
PER_FILE = 1  # distinct files serve an agent better than a second chunk of one (measured: bench NDCG)
# One candidate pool per retriever whatever k is, and one ranking RANK_DEPTH deep that each k cuts:
# so the top k is the first k of the top k+1 (pools of 4*k made -k 2 rank other files than -k 10).
# A deep pool lets a big file show its several matching chunks, which file evidence counts (a file's
# 2nd and 3rd chunks): bench hybrid NDCG@10 by pool 60 .864, 80 .867, 100 .870 (40, the old rule: .854).
POOL = 100
CANDIDATES = 40  # the files localize keeps of a ranking
RANK_DEPTH = 10
FILTER_WIDEN = 4  # a filtered search draws from pools this much wider, then drops what it excludes
PATH_FILES = 20  # files named for the query words, as a third list fused with the other two
PATH_WEIGHT = 0.5  # its weight in the fusion, against 1.0 for lexical and VECTOR_WEIGHT for vectors


@dataclass(frozen=True)
class SearchOutcome:
    hits: list[Candidate]
    notes: list[str]
    available: int = 0  # results the ranking holds in all (distinct files): offset pages up to it


def lexical_candidates(store: Store, rev_no: int, query: str, limit: int) -> list[ChunkHit]:
    """BM25 candidates over identifier-split chunk text and symbols."""
    terms = query_terms(query)
    if not terms:
        return []
    return store.lexical_search(fts_match(terms), rev_no, limit)


def rrf(lexical: list[ChunkHit], vector: list[ChunkHit]) -> list[Candidate]:
    """Reciprocal-rank fusion of the two candidate lists (each best first), keyed by chunk and path."""
    scores: dict[tuple[int, str], float] = {}
    hits: dict[tuple[int, str], ChunkHit] = {}
    for lst, weight in ((lexical, 1.0), (vector, VECTOR_WEIGHT)):
        for rank, hit in enumerate(lst):
            key = (hit.chunk_id, hit.path)
            scores[key] = scores.get(key, 0.0) + weight / (RRF_K + rank + 1)
            hits.setdefault(key, hit)
    return [Candidate(hits[key], s) for key, s in scores.items()]


def add_path_candidates(
    store: Store, rev_no: int, query: str, q: QueryInfo, candidates: list[Candidate], rrf_scale: bool
) -> list[Candidate]:
    """Fuse in the files whose paths are best named for the query words, as a third ranked list.

    A file already among the candidates adds the list's share to its best chunk; another one joins
    with the chunk of it that holds the most query terms.
    """
    files = path_index(store, rev_no).match(q.path_words, PATH_FILES)
    if not files:
        return candidates
    out = list(candidates)
    best: dict[str, int] = {}
    for i, c in enumerate(out):
        if c.hit.path not in best or c.score > out[best[c.hit.path]].score:
            best[c.hit.path] = i
    terms = [t for t in query_terms(query) if len(t) > 2]
    joining = store.chunks_of_paths(rev_no, [path for path in files if path not in best])
    for rank, path in enumerate(files):
        # RRF's share for that rank; with normalised-score fusion, a 0..1 score falling with rank.
        share = PATH_WEIGHT / (RRF_K + rank + 1) if rrf_scale else PATH_WEIGHT * (1.0 - rank / len(files))
        i = best.get(path)
        if i is not None:
            out[i] = Candidate(out[i].hit, out[i].score + share)
            continue
        chunks = joining[path]
        if chunks:
            lowered = [c.text.lower() for c in chunks]
            pick = max(range(len(chunks)), key=lambda j: (sum(t in lowered[j] for t in terms), -j))
            out.append(Candidate(chunks[pick], share))
    return out


def code_names(query: str) -> list[str]:
    """Words of a query that name code: compound identifiers, or the single word of a short query."""
    words = _CODE_NAME.findall(query[:20_000])
    content = [w for w in words if w.lower() not in STOPWORDS]
    names = [w for w in content if len(split_identifier(w)) > 1 or (w[0].isupper() and len(content) <= 3)]
    if len(content) == 1 and len(content[0]) > 2:
        names.append(content[0])
    return list(dict.fromkeys(names))[:5]


def best_definitions(store: Store, rev_no: int, name: str) -> list[FactHit]:
    """The three definitions of a name that rank first (headings aside); the name as written when it
    is defined so (`Serialize` the trait, not every `serialize` method), else in any case."""
    found = [
        d for d in store.find_facts(rev_no, "def", name=name, exact=False, limit=50) if d.kind != "heading"
    ]
    exact = [d for d in found if d.name == name]
    return rank_definitions(exact or found)[:3]


def boost_definitions(store: Store, rev_no: int, query: str, candidates: list[Candidate]) -> list[Candidate]:
    """A query naming a symbol gets its definition first; a question mentioning one gets a nudge."""
    names = code_names(query)
    if not names:
        return candidates
    content = [w for w in _CODE_NAME.findall(query[:20_000]) if w.lower() not in STOPWORDS]
    symbol_query = len(content) <= 3
    top = max((c.score for c in candidates), default=1.0) or 1.0
    by_key = {(c.hit.path, c.hit.chunk_id): i for i, c in enumerate(candidates)}
    out = list(candidates)
    boosted: set[int] = set()
    defs_of = {name: best_definitions(store, rev_no, name) for name in names}
    chunks_at = store.chunks_of_paths(
        rev_no, list(dict.fromkeys(d.path for ds in defs_of.values() for d in ds))
    )
    for defs in defs_of.values():
        for rank, d in enumerate(defs):
            chunk = next((c for c in chunks_at[d.path] if c.start_line <= d.line <= c.end_line), None)
            if chunk is None:
                continue
            # A chunk of several definitions is named for its first; asked for another, name that one.
            named = f"{d.container}.{d.name}" if d.container else d.name
            chunk = chunk if chunk.symbol == named else chunk.replaced(symbol=named)
            i = by_key.get((d.path, chunk.chunk_id))
            if symbol_query:
                # The defining chunk leads, in the order definitions rank (code before tests, shallow first).
                weight = top * (1.5 - 0.1 * rank)
                if i is None:
                    by_key[(d.path, chunk.chunk_id)] = len(out)
                    out.append(Candidate(chunk, weight))
                elif i not in boosted:
                    out[i] = Candidate(out[i].hit.replaced(symbol=chunk.symbol), weight)
            elif i is not None and i not in boosted:
                out[i] = Candidate(out[i].hit.replaced(symbol=chunk.symbol), out[i].score * 1.3)
            if i is not None:
                boosted.add(i)
    return out


def fuse_scores(
    lexical: list[ChunkHit], vector: list[ChunkHit], lexical_weight: float = 0.5
) -> list[Candidate]:
    """Normalised-score fusion: each list scaled to 0..1 by its own best, then a weighted sum."""
    out: dict[tuple[int, str], list[object]] = {}
    for hits, weight in ((lexical, lexical_weight), (vector, 1.0 - lexical_weight)):
        if not hits:
            continue
        best = max(h.score for h in hits) or 1.0
        low = min(h.score for h in hits)
        span = (best - low) or 1.0
        for h in hits:
            # Vector scores crowd near the top (cosines of 0.3-0.6), so min-max spreads them.
            norm = (h.score - low) / span if hits is vector else h.score / best
            entry = out.setdefault((h.chunk_id, h.path), [h, 0.0])
            entry[1] = float(entry[1]) + weight * norm  # type: ignore[arg-type]
    return [Candidate(h, float(score)) for h, score in out.values()]  # type: ignore[arg-type]


def run_search(
    store: Store,
    rev_no: int,
    query: str,
    k: int,
    mode: str = "hybrid",
    vector_hits: Callable[[int], list[ChunkHit]] | None = None,
    rules: dict[str, bool] | None = None,
    offset: int = 0,
    keep: Callable[[str], bool] | None = None,
) -> SearchOutcome:
    """Top-k ranked chunks for a query in one revision; vector_hits(limit) supplies the vector side.
    `offset` skips the first results of the same ranking; `keep(path)` drops candidates before
    ranking (from pools FILTER_WIDEN times wider, so a narrow filter still fills k)."""
    if k <= 0:
        return SearchOutcome([], [])
    limit = POOL * (FILTER_WIDEN if keep is not None else 1)
    notes: list[str] = []
    if mode == "vector" and vector_hits is None:
        mode = "lexical"  # no vectors to ask (the envelope says why): the lexical answer it announces
    lexical = lexical_candidates(store, rev_no, query, limit) if mode in ("hybrid", "lexical") else []
    vector = vector_hits(limit) if vector_hits is not None and mode in ("hybrid", "vector") else []
    # With one retriever there is nothing to fuse: its own normalised scores keep their spacing.
    use_rrf = bool(lexical and vector) and enabled(rules, "rrf")
    candidates = rrf(lexical, vector) if use_rrf else fuse_scores(lexical, vector)
    if mode != "vector" and not query_terms(query):
        # Stop words and punctuation leave the lexical side nothing to match: say so, not silently.
        how = "results are by meaning alone" if vector else "nothing to match"
        notes.append(f"the query has no searchable words (only stop words or punctuation): {how}")
    q = QueryInfo.of(query)
    if mode == "hybrid" and q.stems and enabled(rules, "path_candidates"):
        candidates = add_path_candidates(store, rev_no, query, q, candidates, rrf_scale=use_rrf)
    if enabled(rules, "definition_boost"):
        candidates = boost_definitions(store, rev_no, query, candidates)
    if keep is not None:
        candidates = [c for c in candidates if keep(c.hit.path)]
    ranked = add_file_evidence(apply_rules(q, candidates, rules), rules)
    depth = max(offset + k, RANK_DEPTH)
    top = merge_and_cap(ranked, depth, per_file=PER_FILE, rules=rules)[offset : offset + k]
    available = len({c.hit.path for c in ranked}) if enabled(rules, "file_cap") else len(ranked)
    return SearchOutcome(top, notes, available)
