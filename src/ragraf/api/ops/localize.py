"""The localize operation: a pasted issue report to the files to change, each with its evidence."""

from __future__ import annotations

from ragraf.api.envelope import Envelope
from ragraf.api.ops.search import MAX_K, SearchOps
from ragraf.api.session import names_damage
from ragraf.languages import kind_of, language_of
from ragraf.search.filters import build_filter

MAX_REPORT_CHARS = 1_000_000


class LocalizeOps(SearchOps):
    """`localize()`."""

    @names_damage
    def localize(
        self,
        text: str,
        k: int = 5,
        reindex_on_drift: str | None = None,
        path: str | list[str] | None = None,
        kind: str | list[str] | None = None,
        language: str | list[str] | None = None,
    ) -> Envelope:
        """The files a report (issue text, traceback, code) most likely asks to change, best first;
        `path` globs (`!` excludes), `kind` and `language` filter them."""
        from ragraf.search.localize import localize
        from ragraf.search.report import parse_report

        keep = build_filter(path, kind, language)
        rev, drift, env = self._begin("localize", reindex_on_drift)
        if env.state == "refused":
            return env
        k_asked = k
        k = max(0, min(int(k), MAX_K))
        if k != k_asked:
            env.notes.append(f"k={k_asked} clamped to {k} (allowed 0..{MAX_K})")
        if len(text) > MAX_REPORT_CHARS:
            env.notes.append(
                f"the report is {len(text):,} characters: the first {MAX_REPORT_CHARS:,} are read"
            )
            text = text[:MAX_REPORT_CHARS]
        report = parse_report(text)
        if report.is_empty:
            env.notes.append("empty report: nothing to localize")
            return env
        if k == 0:
            env.notes.append("k=0: no results asked for; the envelope still reports freshness")
            return env
        vector_hits = self._vector_side(rev, report.meaning_text, "hybrid", env)
        outcome = localize(
            self.store(), rev.rev_no, report, k, vector_hits=vector_hits, keep=keep.keep if keep else None
        )
        env.notes.extend(outcome.notes)
        if keep is not None:
            env.notes.append(f"filtered to {keep.describe()}")
        if outcome.missing_paths:
            env.notes.append(
                f"named in the report but not in {rev.rev}: {', '.join(outcome.missing_paths)}"
                " (deleted, renamed, or outside the index)"
            )
        if not outcome.files:
            env.notes.append("nothing in the index matches the report; try `search` with a few of its words")
        for answer in outcome.files:
            language = language_of(answer.path)
            env.results.append({
                "path": answer.path, "score": round(answer.score, 6), "kind": kind_of(answer.path, language),
                "language": language, "stale": answer.path in drift.paths, "evidence": answer.evidence,
                "chunks": [
                    {"path": c.path, "start_line": c.start_line, "end_line": c.end_line, "symbol": c.symbol}
                    for c in answer.chunks
                ],
            })  # fmt: skip
        return env
