"""Upkeep: the consistency check and garbage collection of old revisions and their contents."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import psycopg

from ragraf.store.base import BRANCH_TIPS_KEPT, LEFTOVER_CONTENTS, LIVE_REV


class UpkeepMixin:
    """Consistency checks and retention of PostgresStore."""

    repo_id: int
    _rows: Callable[..., list[tuple[Any, ...]]]
    _row: Callable[..., tuple[Any, ...] | None]
    _tx: Callable[..., AbstractContextManager[psycopg.Connection]]

    # consistency --------------------------------------------------------------------------------

    def consistency_problems(self, rev_no: int, model: str | None) -> list[str]:
        """What is wrong with this repository's data; empty when every invariant holds."""
        checks = [
            ("manifest entries whose content is missing",
             "SELECT count(*) FROM manifest m WHERE m.repo_id = %s AND m.rev_no = %s AND NOT EXISTS "
             "(SELECT 1 FROM contents c WHERE c.id = m.content_id)", (self.repo_id, rev_no)),
            ("contents whose chunk count disagrees with their chunks",
             "SELECT count(*) FROM contents c WHERE c.repo_id = %s AND c.n_chunks != "
             "(SELECT count(*) FROM chunks k WHERE k.content_id = c.id)", (self.repo_id,)),
            (LEFTOVER_CONTENTS,
             "SELECT count(*) FROM contents c WHERE c.repo_id = %s AND NOT EXISTS "
             "(SELECT 1 FROM manifest m WHERE m.content_id = c.id)", (self.repo_id,)),
            ("chunks of another repository's contents",
             "SELECT count(*) FROM chunks k JOIN contents c ON c.id = k.content_id "
             "WHERE c.repo_id = %s AND k.repo_id != c.repo_id", (self.repo_id,)),
            ("BM25 counters that disagree with the stored chunks",
             "SELECT count(*) FROM repositories r, LATERAL (SELECT count(*) AS n, coalesce(sum(lex_len), 0) AS t "
             "FROM chunks k WHERE k.repo_id = r.id) x WHERE r.id = %s AND (r.n_chunks <> x.n OR r.n_tokens <> x.t)",
             (self.repo_id,)),
        ]  # fmt: skip
        problems = []
        for label, query, args in checks:
            row = self._row(query, args)
            if row and row[0]:
                problems.append(f"{row[0]} {label}")
        if model:
            dims = self._rows("SELECT dim FROM models WHERE name = %s ORDER BY dim", (model,))
            if len(dims) > 1:
                problems.append(f"vectors of {model} with several dimensions: {[d[0] for d in dims]}")
        return problems

    # retention ----------------------------------------------------------------------------------

    def gc(self, keep: int) -> dict[str, int]:
        """Drop revisions beyond the last `keep` (but the newest of each of the last BRANCH_TIPS_KEPT
        branches) and every content no kept revision names."""
        keep = max(1, keep)
        with self._tx() as conn:
            conn.execute("SELECT 1 FROM repositories WHERE id = %s FOR UPDATE", (self.repo_id,))
            tail = conn.execute(
                "SELECT rev_no FROM revisions WHERE repo_id = %s ORDER BY rev_no DESC LIMIT 1 OFFSET %s",
                (self.repo_id, keep - 1),
            ).fetchone()
            old = [
                r[0]
                for r in conn.execute(
                    "DELETE FROM revisions WHERE repo_id = %(repo)s AND rev_no IN (SELECT rev_no FROM revisions "
                    "WHERE repo_id = %(repo)s ORDER BY rev_no DESC OFFSET %(keep)s) AND rev_no NOT IN (SELECT "
                    "max(rev_no) AS tip FROM revisions WHERE repo_id = %(repo)s AND git_branch IS NOT NULL "
                    "GROUP BY git_branch ORDER BY tip DESC LIMIT %(tips)s) RETURNING rev_no",
                    {"repo": self.repo_id, "keep": keep, "tips": BRANCH_TIPS_KEPT},
                )
            ]
            # The oldest revisions went: the manifest rows that held only for them are those closed by
            # the oldest of the last `keep` or before that hold for none of the branch tips kept below it.
            dead = (
                [
                    r[0]
                    for r in conn.execute(
                        "DELETE FROM manifest_rows m WHERE m.repo_id = %s AND m.until_rev <= %s AND NOT EXISTS "
                        "(SELECT 1 FROM revisions r WHERE r.repo_id = m.repo_id AND r.rev_no >= m.first_rev "
                        "AND r.rev_no < m.until_rev) RETURNING m.content_id",
                        (self.repo_id, tail[0] if tail is not None else LIVE_REV),
                    )
                ]
                if old
                else []
            )
            # A content loses its last reference only with a dropped row, or never had one (stored
            # by a run killed before its commit, so newer than the last gc's mark): only those are
            # checked, not every content of the repository.
            mark = conn.execute(
                "SELECT value FROM meta WHERE repo_id = %s AND key = 'gc_content_mark'", (self.repo_id,)
            ).fetchone()
            checked = {
                "repo": self.repo_id,
                "ids": sorted(set(dead)),
                "mark": int(bytes(mark[0])) if mark else 0,
            }
            unnamed = (
                "o.repo_id = %(repo)s AND (o.id = ANY(%(ids)s) OR o.id > %(mark)s) AND NOT EXISTS "
                "(SELECT 1 FROM manifest_rows m WHERE m.content_id = o.id)"
            )
            conn.execute(
                "WITH gone AS (SELECT lexeme, count(*) AS n FROM contents o JOIN chunks c ON c.content_id = o.id, "
                f"unnest(tsvector_to_array(c.tsv)) AS lexeme WHERE {unnamed} GROUP BY lexeme) "
                "UPDATE lex_df d SET df = d.df - gone.n FROM gone WHERE d.repo_id = %(repo)s AND d.lexeme = gone.lexeme",
                checked,
            )
            # Chunks, facts, references and vectors of a deleted content go with it (ON DELETE CASCADE).
            stats = conn.execute(
                f"WITH orphans AS (DELETE FROM contents o WHERE {unnamed} RETURNING o.id) "
                "SELECT (SELECT count(*) FROM orphans), count(ch.id), coalesce(sum(ch.lex_len), 0) "
                "FROM orphans o JOIN chunks ch ON ch.content_id = o.id",
                checked,
            ).fetchone()
            conn.execute(
                "INSERT INTO meta (repo_id, key, value) SELECT %(repo)s, 'gc_content_mark', "
                "convert_to(coalesce(max(id), 0)::text, 'UTF8') FROM contents WHERE repo_id = %(repo)s "
                "ON CONFLICT (repo_id, key) DO UPDATE SET value = excluded.value",
                checked,
            )
            assert stats is not None
            contents_removed, chunks_removed, tokens_removed = (int(v) for v in stats)
            if chunks_removed:
                conn.execute(
                    "UPDATE repositories SET n_chunks = n_chunks - %s, n_tokens = n_tokens - %s WHERE id = %s",
                    (chunks_removed, tokens_removed, self.repo_id),
                )
        return {
            "revisions_removed": len(old),
            "contents_removed": contents_removed,
            "chunks_removed": chunks_removed,
        }
