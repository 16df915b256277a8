"""Revisions and their manifests: reading them, and committing a new one whole or not at all.

A manifest is kept as rows valid over a range of a view's revisions (schema 12): a revision closes
the rows of what it changes or removes and adds rows for what it brings."""

from __future__ import annotations

import datetime as dt
import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager

from ragraf.store.base import LIVE_REV, DriftEvent, ManifestEntry, NewRevision, Revision
from ragraf.store.columns import LEDGER_COLUMNS, REVISION_COLUMNS
from ragraf.store.sqlite.bulk import restore_indexes
from ragraf.store.sqlite.sql import _current, _delete_rows, _move_rows


class RevisionsMixin:
    """Revisions and manifests of SqliteStore."""

    db: sqlite3.Connection
    view: str
    label: str
    transaction: Callable[[], AbstractContextManager[sqlite3.Connection]]
    _insert_drift: Callable[[sqlite3.Connection, list[DriftEvent]], int]

    def current_revision(self) -> Revision | None:
        row = self.db.execute(
            f"SELECT {REVISION_COLUMNS} FROM revisions WHERE view = ? ORDER BY rev_no DESC LIMIT 1",
            (self.view,),
        ).fetchone()
        return Revision(*row) if row else None

    def revisions(self) -> list[Revision]:
        rows = self.db.execute(
            f"SELECT {REVISION_COLUMNS} FROM revisions WHERE view = ? ORDER BY rev_no", (self.view,)
        ).fetchall()
        return [Revision(*row) for row in rows]

    def revision(self, name: str) -> Revision | None:
        row = self.db.execute(f"SELECT {REVISION_COLUMNS} FROM revisions WHERE rev = ?", (name,)).fetchone()
        return Revision(*row) if row else None

    def manifest(self, rev_no: int) -> dict[str, ManifestEntry]:
        rows = self.db.execute(_whole_manifest("path, sha256, content_id, size"), (rev_no,)).fetchall()
        return {row[0]: ManifestEntry(*row) for row in rows}

    def manifest_hashes(self, rev_no: int) -> list[tuple[str, str]]:
        """(path, sha256) of every file of a revision: what its corpus hash is made of."""
        return self.db.execute(_whole_manifest("path, sha256"), (rev_no,)).fetchall()

    def manifest_entry(self, rev_no: int, path: str) -> ManifestEntry | None:
        """One path's entry, without loading the whole manifest."""
        row = self.db.execute(
            "SELECT path, sha256, content_id, size FROM manifest WHERE rev_no = ? AND path = ?",
            (rev_no, path),
        ).fetchone()
        return ManifestEntry(*row) if row else None

    def commit_revision(self, new: NewRevision) -> Revision:
        """Insert the revision and its manifest in one transaction: visible whole or not at all."""
        created = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        with self.transaction() as db:
            restore_indexes(db)  # a first index's bulk load deferred them (bulk.py)
            nxt = db.execute(
                "SELECT coalesce(max(seq), 0) + 1 FROM sqlite_sequence WHERE name = 'revisions'"
            ).fetchone()[0]
            nxt = max(nxt, db.execute("SELECT coalesce(max(rev_no), 0) + 1 FROM revisions").fetchone()[0])
            prior = db.execute("SELECT max(rev_no) FROM revisions WHERE view = ?", (self.view,)).fetchone()[0]
            if new.parent is not None and new.parent != prior:  # not a change to this view's newest
                new = new.whole(self.manifest(new.parent))
            if prior is None:  # rows of a view whose revisions are all gone hold for nothing
                db.execute("DELETE FROM manifest_rows WHERE view = ?", (self.view,))
            if new.parent is None:
                changed, removed = self._delta(db, new.manifest)
            else:
                changed, removed = new.manifest, list(new.removed)
            came, gone, files = self._write_change(db, nxt, prior, changed, removed)
            if new.parent is None:
                files, n_chunks = len(new.manifest), _chunks_of(db, {e.content_id for e in new.manifest})
            else:
                chunks = db.execute("SELECT chunks FROM revisions WHERE rev_no = ?", (prior,)).fetchone()[0]
                n_chunks = chunks + _chunks_of(db, set(came)) - _chunks_of(db, set(gone))
            name = self._revision_name(db, nxt, new.base_rev)
            first = db.execute("SELECT NOT EXISTS (SELECT 1 FROM revisions)").fetchone()[0]
            db.execute(
                f"INSERT INTO revisions ({REVISION_COLUMNS}, view) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    nxt,
                    name,
                    new.corpus_hash,
                    created,
                    new.index_version,
                    new.git_head,
                    new.git_branch,
                    files,
                    n_chunks,
                    self.view,
                ),
            )
            # Lexical rows of content this revision brings in become searchable with it, not before.
            # The current revisions' content is searched on its own (BM25 statistics of what they hold,
            # whatever older revisions are retained): content new to this view comes back from
            # chunks_fts_retained (a revert), content that left every view's newest revision goes there.
            db.execute("CREATE TEMP TABLE IF NOT EXISTS commit_ids (id INTEGER PRIMARY KEY)")
            db.execute("DELETE FROM temp.commit_ids")
            db.executemany("INSERT OR IGNORE INTO temp.commit_ids (id) VALUES (?)", [(i,) for i in came])
            listed = "SELECT id FROM chunks WHERE content_id IN (SELECT id FROM temp.commit_ids)"
            db.execute(
                "INSERT INTO chunks_fts (rowid, body, symbol) SELECT chunk_id, body, symbol FROM pending_fts "
                f"WHERE chunk_id IN ({listed})"
            )
            db.execute(f"DELETE FROM pending_fts WHERE chunk_id IN ({listed})")
            if first:  # add_contents wrote its lexical rows straight in: those of contents it leaves out go
                stray = "SELECT k.id FROM chunks k WHERE k.content_id NOT IN (SELECT id FROM temp.commit_ids)"
                _delete_rows(db, "chunks_fts", [r[0] for r in db.execute(stray)])
            _move_rows(db, "chunks_fts_retained", "chunks_fts", listed, ())
            db.execute("DELETE FROM temp.commit_ids")
            left = [(i,) for i in gone if db.execute(_current("?"), (i,)).fetchone() is None]
            db.executemany("INSERT OR IGNORE INTO temp.commit_ids (id) VALUES (?)", left)
            _move_rows(db, "chunks_fts", "chunks_fts_retained", listed, ())
            # The index's own view of what changed joins the ledger; then R's open entries close with R+1.
            self._insert_drift(db, new.events)
            mine = "rev IN (SELECT rev FROM revisions WHERE view = ? AND rev_no < ?)"
            db.execute(
                "INSERT OR IGNORE INTO drift_archive (entry_id, rev, change, path, detected_by, detected_at, "
                "old_sha256, new_sha256, affected_nodes, affected_symbols, dedupe_key, closed_by, archived_at) "
                f"SELECT {LEDGER_COLUMNS}, ?, ? FROM drift_ledger WHERE {mine}",
                (name, created, self.view, nxt),
            )
            db.execute(f"DELETE FROM drift_ledger WHERE {mine}", (self.view, nxt))
        rev = self.revision(name)
        assert rev is not None
        return rev

    def _delta(
        self, db: sqlite3.Connection, entries: list[ManifestEntry]
    ) -> tuple[list[ManifestEntry], list[str]]:
        """A whole manifest as a change to this view's current rows: the entries that differ, and
        the paths that left."""
        live = {
            r[0]: r[1:]
            for r in db.execute(
                "SELECT path, sha256, content_id, size FROM manifest_rows WHERE view = ? AND until_rev = ?",
                (self.view, LIVE_REV),
            )
        }
        changed = [e for e in entries if live.get(e.path) != (e.sha256, e.content_id, e.size)]
        paths = {e.path for e in entries}
        return changed, [p for p in live if p not in paths]

    def _write_change(
        self,
        db: sqlite3.Connection,
        rev_no: int,
        prior: int | None,
        changed: list[ManifestEntry],
        removed: list[str],
    ) -> tuple[list[int], list[int], int]:
        """Close the current rows of the changed and removed paths at rev_no and add rows for the
        changed entries: the rows written follow the change, not the manifest. Returns the contents
        the revision brings to this view, those that left it, and its file count."""
        replaced = [
            row[0]
            for p in [e.path for e in changed] + removed
            if (row := db.execute(CLOSE_ROW, (rev_no, self.view, p)).fetchone())
        ]
        db.executemany(
            "INSERT INTO manifest_rows (view, path, first_rev, until_rev, sha256, content_id, size) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(self.view, e.path, rev_no, LIVE_REV, e.sha256, e.content_id, e.size) for e in changed],
        )
        at_prior = "SELECT 1 FROM manifest_rows WHERE content_id = ?1 AND view = ?2 AND until_rev > ?3 AND first_rev <= ?3"
        came = [
            i
            for i in {e.content_id for e in changed}
            if prior is None or not db.execute(at_prior, (i, self.view, prior)).fetchone()
        ]
        current = f"SELECT 1 FROM manifest_rows WHERE content_id = ? AND view = ? AND until_rev = {LIVE_REV}"
        gone = [i for i in set(replaced) if not db.execute(current, (i, self.view)).fetchone()]
        files = (
            0
            if prior is None
            else db.execute("SELECT files FROM revisions WHERE rev_no = ?", (prior,)).fetchone()[0]
        )
        return came, gone, files + len(changed) - len(replaced)

    def _revision_name(self, db: sqlite3.Connection, rev_no: int, base_rev: str | None) -> str:
        """rev-0012 for the base; rev-0012+wt-feature-x.3 for the third revision of a work tree's view."""
        if not self.view:
            return f"rev-{rev_no:04d}"
        prior = db.execute(
            "SELECT rev FROM revisions WHERE view = ? ORDER BY rev_no DESC LIMIT 1", (self.view,)
        ).fetchone()
        seq = int(prior[0].rsplit(".", 1)[1]) + 1 if prior and "." in prior[0] else 1
        return f"{base_rev + '+' if base_rev else ''}wt-{self.label or 'tree'}.{seq}"


# A path's current row closed at a revision (?1), found by its view (?2) and path (?3). `+until_rev`:
# on its own the planner walked the view's whole live rows in the revision index to find the one
# path, for each changed one (100,000 files: 8-10 ms warm, more from a cold page cache); the
# primary key holds the path.
CLOSE_ROW = (
    f"UPDATE manifest_rows SET until_rev = ?1 WHERE view = ?2 AND path = ?3 AND +until_rev = {LIVE_REV} "
    "RETURNING content_id"
)


def _whole_manifest(columns: str) -> str:
    """A revision's whole manifest (?1 its number), in one statement so a commit cannot come
    between: a view's newest revision holds its current rows, read straight from the table in
    path order (half the cost of the view's index walk); an older one is read through the view."""
    rows = ", ".join(f"m.{c.strip()}" for c in columns.split(","))
    newest = "(SELECT max(rev_no) FROM revisions WHERE view = r.view)"
    return (
        f"SELECT {rows} FROM revisions r JOIN manifest_rows m ON m.view = r.view AND +m.until_rev = {LIVE_REV} "
        f"WHERE r.rev_no = ?1 AND r.rev_no = {newest} "
        f"UNION ALL SELECT {rows} FROM revisions r JOIN manifest m ON m.rev_no = r.rev_no "
        f"WHERE r.rev_no = ?1 AND r.rev_no != {newest}"
    )


def _chunks_of(db: sqlite3.Connection, content_ids: set[int]) -> int:
    """How many chunks these contents hold, asked 500 at a time."""
    ids = sorted(content_ids)
    total = 0
    for i in range(0, len(ids), 500):
        part = ids[i : i + 500]
        total += db.execute(
            f"SELECT coalesce(sum(n_chunks), 0) FROM contents WHERE id IN ({','.join('?' * len(part))})", part
        ).fetchone()[0]
    return total
