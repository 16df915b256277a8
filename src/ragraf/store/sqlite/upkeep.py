"""Upkeep: checking a revision's invariants, and retention (gc of old revisions and orphaned contents)."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager

from ragraf.store.base import BRANCH_TIPS_KEPT, LEFTOVER_CONTENTS, LIVE_REV
from ragraf.store.sqlite.sql import _CURRENT_CONTENT, _covered_key, _delete_rows, _move_rows, _named


class UpkeepMixin:
    """Consistency checks and retention of SqliteStore."""

    db: sqlite3.Connection
    view: str
    transaction: Callable[[], AbstractContextManager[sqlite3.Connection]]
    damaged: Callable[[], str | None]

    def consistency_problems(self, rev_no: int, model: str | None) -> list[str]:
        """What is wrong with a revision's data; empty when every invariant holds."""
        checks = [
            ("manifest entries whose content is missing",
             "SELECT count(*) FROM manifest m WHERE m.rev_no = ? AND NOT EXISTS "
             "(SELECT 1 FROM contents c WHERE c.id = m.content_id)", (rev_no,)),
            ("contents whose chunk count disagrees with their chunks",
             "SELECT count(*) FROM contents c WHERE c.n_chunks != (SELECT count(*) FROM chunks k WHERE k.content_id = c.id)",
             ()),
            ("chunks of current content missing from the lexical index",
             f"SELECT count(*) FROM chunks k WHERE EXISTS ({_CURRENT_CONTENT}) "
             "AND NOT EXISTS (SELECT 1 FROM chunks_fts f WHERE f.rowid = k.id)", ()),
            ("lexical rows of content no current revision names (they skew BM25)",
             f"SELECT count(*) FROM chunks_fts f JOIN chunks k ON k.id = f.rowid WHERE NOT EXISTS ({_CURRENT_CONTENT})",
             ()),
            ("chunks of retained content missing from both lexical indexes",
             f"SELECT count(*) FROM chunks k WHERE EXISTS ({_named('k.content_id')}) "
             "AND NOT EXISTS (SELECT 1 FROM chunks_fts f WHERE f.rowid = k.id) "
             "AND NOT EXISTS (SELECT 1 FROM chunks_fts_retained r WHERE r.rowid = k.id)", ()),
            ("lexical rows of retained revisions without a chunk",
             "SELECT count(*) FROM chunks_fts_retained f WHERE NOT EXISTS (SELECT 1 FROM chunks k WHERE k.id = f.rowid)",
             ()),
            ("lexical index rows without a chunk",
             "SELECT count(*) FROM chunks_fts f WHERE NOT EXISTS (SELECT 1 FROM chunks k WHERE k.id = f.rowid)", ()),
            ("vectors without a chunk",
             "SELECT count(*) FROM vectors v WHERE NOT EXISTS (SELECT 1 FROM chunks k WHERE k.id = v.chunk_id)", ()),
            ("facts without a content",
             "SELECT count(*) FROM facts f WHERE NOT EXISTS (SELECT 1 FROM contents c WHERE c.id = f.content_id)", ()),
            (LEFTOVER_CONTENTS,
             f"SELECT count(*) FROM contents c WHERE NOT EXISTS ({_named('c.id')})",
             ()),
            ("manifest rows of revisions that no longer exist",
             "SELECT count(*) FROM manifest_rows m WHERE NOT EXISTS (SELECT 1 FROM revisions r WHERE r.view = m.view "
             "AND r.rev_no >= m.first_rev AND r.rev_no < m.until_rev)",
             ()),
        ]  # fmt: skip
        problems = []
        for label, sql, args in checks:
            n = self.db.execute(sql, args).fetchone()[0]
            if n:
                problems.append(f"{n} {label}")
        if model:
            dims = self.db.execute("SELECT DISTINCT dim FROM vectors WHERE model = ?", (model,)).fetchall()
            if len(dims) > 1:
                problems.append(f"vectors of {model} with several dimensions: {sorted(d[0] for d in dims)}")
        damaged = self.damaged()
        if damaged:
            problems.append(f"the file is damaged: {damaged}")
        return problems

    def _give_back_free_pages(self) -> None:
        """Return the file's free pages to the disk when they are a tenth of it or more (what a run's
        lexical rows held while they waited in pending_fts, dropped revisions). A file still in
        auto_vacuum = NONE (migrated while it could not be compacted) reuses them for later writes."""
        pages = self.db.execute("PRAGMA page_count").fetchone()[0]
        free = self.db.execute("PRAGMA freelist_count").fetchone()[0]
        if free and free * 10 >= pages and not self.db.in_transaction:
            self.db.executescript("PRAGMA incremental_vacuum")  # execute() would free one page

    def gc(self, keep: int) -> dict[str, int]:
        """Drop this view's revisions beyond the last `keep` (but the newest of each of the last
        BRANCH_TIPS_KEPT branches), the views of work trees that are gone, and every content no kept
        revision names."""
        keep = max(1, keep)
        with self.transaction() as db:
            tail = db.execute(
                "SELECT rev_no FROM revisions WHERE view = ? ORDER BY rev_no DESC LIMIT 1 OFFSET ?",
                (self.view, keep - 1),
            ).fetchone()
            tips = {
                r[0]
                for r in db.execute(
                    "SELECT max(rev_no) AS tip FROM revisions WHERE view = ? AND git_branch IS NOT NULL "
                    "GROUP BY git_branch ORDER BY tip DESC LIMIT ?",
                    (self.view, BRANCH_TIPS_KEPT),
                )
            }
            old = [
                r[0]
                for r in db.execute(
                    "SELECT rev_no FROM revisions WHERE view = ? ORDER BY rev_no DESC LIMIT -1 OFFSET ?",
                    (self.view, keep),
                ).fetchall()
                if r[0] not in tips
            ]
            # Per view that loses revisions, the until_rev up to which its manifest rows may now hold
            # for none: this view's oldest of the last `keep` (old holds some: tail exists), and every
            # row of a view that goes whole.
            bounds = {self.view: tail[0]} if old else {}
            views = [r[0] for r in db.execute("SELECT DISTINCT view FROM revisions WHERE view != ''")]
            gone = [v for v in views if v != self.view and os.path.isabs(v) and not os.path.isdir(v)]
            bounds.update((view, LIVE_REV) for view in gone)
            for view in gone:  # `git worktree remove` took the folder: its view goes with it
                old += [r[0] for r in db.execute("SELECT rev_no FROM revisions WHERE view = ?", (view,))]
                db.execute("DELETE FROM stat_cache WHERE view = ?", (view,))
                db.executemany(
                    "DELETE FROM meta WHERE key = ?",
                    [(f"guard_snapshot:{view}{part}",) for part in ("", ":delta", ":sha1")],
                )
            # Content can lose its last reference only with a dropped revision, or never have had one
            # (stored by a run killed before its commit, so newer than the last gc's mark): only those
            # are checked, not every content of the index.
            mark = db.execute("SELECT value FROM meta WHERE key = 'gc_content_mark'").fetchone()
            candidates: set[int] = set()
            for rev_no in old:
                db.execute("DELETE FROM revisions WHERE rev_no = ?", (rev_no,))
                db.execute("DELETE FROM meta WHERE key LIKE ?", (_covered_key(rev_no, "%"),))
            # The manifest rows that held only for dropped revisions: closed by the bound or before,
            # and holding for none of the branch tips kept below it.
            for view, bound in bounds.items():
                dead = db.execute(
                    "DELETE FROM manifest_rows WHERE view = ? AND until_rev <= ? AND NOT EXISTS (SELECT 1 "
                    "FROM revisions r WHERE r.view = manifest_rows.view AND r.rev_no >= manifest_rows.first_rev "
                    "AND r.rev_no < manifest_rows.until_rev) RETURNING content_id",
                    (view, bound),
                )
                candidates.update(r[0] for r in dead)
            if gone:  # what only they named leaves the lexical index
                stray = f"SELECT k.id FROM chunks k WHERE NOT EXISTS ({_CURRENT_CONTENT})"
                _move_rows(db, "chunks_fts", "chunks_fts_retained", stray, ())
            newer = "SELECT id FROM contents WHERE id > ?"
            candidates.update(r[0] for r in db.execute(newer, (int(mark[0]) if mark else -1,)))
            orphans = sorted(c for c in candidates if db.execute(_named("?"), (c,)).fetchone() is None)
            removed_chunks = 0
            for content_id in orphans:
                chunk_ids = [
                    r[0] for r in db.execute("SELECT id FROM chunks WHERE content_id = ?", (content_id,))
                ]
                _delete_rows(db, "chunks_fts", chunk_ids)
                _delete_rows(db, "chunks_fts_retained", chunk_ids)
                db.execute("DELETE FROM chunks WHERE content_id = ?", (content_id,))
                db.execute("DELETE FROM facts WHERE content_id = ?", (content_id,))
                db.executemany("DELETE FROM vectors WHERE chunk_id = ?", [(i,) for i in chunk_ids])
                db.execute("DELETE FROM contents WHERE id = ?", (content_id,))
                removed_chunks += len(chunk_ids)
            if orphans:
                # Found by content (schema 14), not by a pass over every reference row of the index.
                db.executemany("DELETE FROM ref_sites WHERE content_id = ?", [(c,) for c in orphans])
                db.execute("DELETE FROM pending_fts WHERE chunk_id NOT IN (SELECT id FROM chunks)")
            db.execute(
                "INSERT OR REPLACE INTO meta (key, value) SELECT 'gc_content_mark', coalesce(max(id), 0) FROM contents"
            )
        self._give_back_free_pages()
        return {
            "revisions_removed": len(old),
            "contents_removed": len(orphans),
            "chunks_removed": removed_chunks,
        }
