"""The search operation: lexical and vector retrieval fused and ranked, each result with path:line (DESIGN §7)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ragraf.api.envelope import Envelope, SearchResult
from ragraf.api.guarded import Guarded
from ragraf.api.session import names_damage
from ragraf.errors import EmbedderError, RagrafError, UsageError
from ragraf.languages import kind_of, language_of
from ragraf.search.filters import build_filter

if TYPE_CHECKING:  # the retrievers and the report parser load with the first search, not with every command
    from ragraf.store import Revision

MAX_K = 10
SNIPPET_MAX_CHARS = 4000


class SearchOps(Guarded):
    """`search()`."""

    @names_damage
    def search(
        self,
        query: str,
        k: int = 5,
        mode: str = "hybrid",
        rules: dict[str, bool] | None = None,
        reindex_on_drift: str | None = None,
        offset: int = 0,
        path: str | list[str] | None = None,
        kind: str | list[str] | None = None,
        language: str | list[str] | None = None,
    ) -> Envelope:
        """Hybrid search: the top k chunks for a query, with path:line; `offset` skips the first
        results of the same ranking; `path` globs (`!` excludes), `kind` and `language` filter."""
        mode = "vector" if mode == "semantic" else mode
        if mode not in ("hybrid", "lexical", "vector"):
            raise UsageError(f"unknown search mode {mode!r}", suggest="use hybrid, lexical or vector")
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise UsageError(f"offset {offset!r} is not a count", suggest="give offset as 0 or more")
        from ragraf.search.engine import run_search
        from ragraf.search.localize import search_report
        from ragraf.search.report import looks_like_report, parse_report

        keep = build_filter(path, kind, language)
        rev, drift, env = self._begin("search", reindex_on_drift)
        if env.state == "refused":
            return env
        k_asked = k
        k = max(0, min(int(k), MAX_K))
        if k != k_asked:
            env.notes.append(f"k={k_asked} clamped to {k} (allowed 0..{MAX_K})")
        if k == 0:
            env.notes.append("k=0: no results asked for; the envelope still reports freshness")
        if not query or not query.strip():
            env.notes.append("empty query: nothing to search for")
            return env
        if mode == "hybrid" and rules is None and looks_like_report(query):
            # A pasted report ranks better as localize reads it (bench-issues, 18 tasks with the
            # default embedder: file Acc@5 88.9 against 72.2 for chunk search; docs/search.md).
            report = parse_report(query)
            vector_hits = self._vector_side(rev, report.meaning_text, mode, env)
            outcome = search_report(
                self.store(), rev.rev_no, report, k, vector_hits, offset, keep.keep if keep else None
            )
        else:
            vector_hits = self._vector_side(rev, query, mode, env)
            outcome = run_search(
                self.store(), rev.rev_no, query, k, mode=mode, vector_hits=vector_hits, rules=rules,
                offset=offset, keep=keep.keep if keep else None,
            )  # fmt: skip
        env.notes.extend(outcome.notes)
        if keep is not None:
            env.notes.append(f"filtered to {keep.describe()}")
        following = max(0, outcome.available - offset - len(outcome.hits))
        env.truncated["results"] = following
        env.page = {
            "offset": offset,
            "total": max(outcome.available, offset + len(outcome.hits)),
            "next_offset": offset + len(outcome.hits) if following else None,
        }
        if len(outcome.hits) < k:
            found = "nothing matched" if not outcome.hits else f"{len(outcome.hits)} of k={k} found"
            where = f" from offset {offset}" if offset else ""
            env.notes.append(f"{found}{where}: the index holds no more results for this query")
        for cand in outcome.hits:
            hit = cand.hit
            language = language_of(hit.path)
            snippet = hit.text if len(hit.text) <= SNIPPET_MAX_CHARS else hit.text[:SNIPPET_MAX_CHARS] + "\n…"
            env.results.append(
                SearchResult(
                    path=hit.path,
                    start_line=hit.start_line,
                    end_line=hit.end_line,
                    score=round(cand.score, 6),
                    kind=kind_of(hit.path, language),
                    language=language,
                    symbol=hit.symbol,
                    stale=hit.path in drift.paths,
                    snippet=snippet,
                )
            )
        return env

    def _vector_side(self, rev: Revision, query: str, mode: str, env: Envelope) -> Any:
        """The vector retriever for this query, or None with the reason in the envelope (degraded)."""
        if mode == "lexical":
            return None
        from ragraf.api.tiers import static_stand_in, vector_hits

        cap = env.capability
        try:
            embedder = self.query_embedder()
            if embedder is None:
                if mode == "vector":
                    cap.degraded = True
                    cap.reasons.insert(
                        0, "no embedder configured (embedder = none): vector search answered lexically"
                    )
                return None
            model = rev.index_version.split("|", 1)[0]
            if embedder.model_id != model or cap.semantic_coverage == 0:
                cap.degraded = True
                running = [
                    r.split(": ", 1)[-1] for r in cap.reasons if "embedding now" in r
                ] if embedder.model_id == model else []  # fmt: skip
                todo = (
                    f"{running[0]}; later searches use its vectors as they land"
                    if running
                    else "run `ragraf index` to finish embedding"
                )
                # This says what the coverage reason would: one reason, not two.
                cap.reasons[:] = [r for r in cap.reasons if not r.startswith("semantic coverage")]
                cap.reasons.insert(
                    0, f"no vectors yet for {embedder.model_id} in {rev.rev}: answered lexically; {todo}"
                )
                return None
            query_vector = embedder.embed_query(query).astype("float32")
            dim = _indexed_dim(rev) or embedder.dim
            if query_vector.shape[-1] != dim:
                raise EmbedderError(
                    f"the embedder answered the query with a {query_vector.shape[-1]}-dimensional vector; "
                    f"{rev.rev} holds {dim}-dimensional ones",
                    suggest="check which model the embedding endpoint serves, or run `ragraf index --full`",
                )
        except RagrafError as exc:
            # The transformer cannot embed the query: the static tier answers, if the index has one.
            stand_in = static_stand_in(self.store(), self.settings, rev, query, cap.tiers)
            cap.degraded = True
            cap.semantic = stand_in is not None
            answered = "the static tier's vectors answered" if stand_in else "search ran lexical-only"
            why = f"{exc.message}; {answered}"
            if exc.suggest and exc.suggest not in exc.message:
                why += f" ({exc.suggest})"
            cap.reasons.insert(0, why)
            return stand_in
        # The transformer's vectors where it has embedded, the static tier's for the rest (api/tiers.py).
        primary = (model, query_vector.tobytes(), dim)
        return vector_hits(self.store(), self.settings, rev, query, primary, cap.tiers)


def _indexed_dim(rev: Revision) -> int:
    """The dimension of a revision's vectors, from its index version (`model|dim=384|…`); 0 unknown."""
    field = rev.index_version.split("|")[1:2]
    return int(field[0].removeprefix("dim=")) if field and field[0].startswith("dim=") else 0
