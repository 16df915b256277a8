"""Revisions and their manifests: reading them, and committing a new one in one transaction.

A manifest is kept as rows valid over a range of the repository's revisions (schema 7): a revision
closes the rows of what it changes or removes and adds rows for what it brings."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from typing import Any

import psycopg

from ragraf.store.base import LIVE_REV, DriftEvent, ManifestEntry, NewRevision, Revision
from ragraf.store.columns import REVISION_COLUMNS, revision_values
from ragraf.store.postgres.tokens import _clean


class RevisionsMixin:
    """Revisions and manifests of PostgresStore."""

    repo_id: int
    _rows: Callable[..., list[tuple[Any, ...]]]
    _row: Callable[..., tuple[Any, ...] | None]
    _tx: Callable[..., AbstractContextManager[psycopg.Connection]]
    _insert_drift: Callable[[psycopg.Connection, Sequence[DriftEvent]], int]
    _archive_ledger: Callable[[psycopg.Connection, str, str], None]

    def current_revision(self) -> Revision | None:
        row = self._row(
            f"SELECT {REVISION_COLUMNS} FROM revisions WHERE repo_id = %s ORDER BY rev_no DESC LIMIT 1",
            (self.repo_id,),
        )
        return Revision(*row) if row else None

    def revisions(self) -> list[Revision]:
        rows = self._rows(
            f"SELECT {REVISION_COLUMNS} FROM revisions WHERE repo_id = %s ORDER BY rev_no", (self.repo_id,)
        )
        return [Revision(*row) for row in rows]

    def revision(self, name: str) -> Revision | None:
        row = self._row(
            f"SELECT {REVISION_COLUMNS} FROM revisions WHERE repo_id = %s AND rev = %s", (self.repo_id, name)
        )
        return Revision(*row) if row else None

    def manifest(self, rev_no: int) -> dict[str, ManifestEntry]:
        rows = self._rows(
            "SELECT path, sha256, content_id, size FROM manifest WHERE repo_id = %s AND rev_no = %s",
            (self.repo_id, rev_no),
        )
        return {row[0]: ManifestEntry(*row) for row in rows}

    def manifest_entry(self, rev_no: int, path: str) -> ManifestEntry | None:
        """One path's entry, without loading the whole manifest."""
        row = self._row(
            "SELECT path, sha256, content_id, size FROM manifest WHERE repo_id = %s AND rev_no = %s AND path = %s",
            (self.repo_id, rev_no, path),
        )
        return ManifestEntry(*row) if row else None

    def manifest_hashes(self, rev_no: int) -> list[tuple[str, str]]:
        """(path, sha256) of every file of a revision: what its corpus hash is made of."""
        return self._rows(  # type: ignore[return-value]
            "SELECT path, sha256 FROM manifest WHERE repo_id = %s AND rev_no = %s", (self.repo_id, rev_no)
        )

    def commit_revision(self, new: NewRevision) -> Revision:
        """Insert the revision, its manifest and the ledger's archive in one transaction."""
        created = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        with self._tx() as conn:
            # The counter row also serialises two committers of one repository.
            nxt = conn.execute(
                "UPDATE repositories SET last_rev_no = last_rev_no + 1 WHERE id = %s RETURNING last_rev_no",
                (self.repo_id,),
            ).fetchone()[0]  # type: ignore[index]
            prior = conn.execute(
                "SELECT rev_no, files, chunks FROM revisions WHERE repo_id = %s ORDER BY rev_no DESC LIMIT 1",
                (self.repo_id,),
            ).fetchone()
            if new.parent is not None and (prior is None or new.parent != prior[0]):
                # Not a change to the newest revision: made whole, its parent read on this connection
                # (a pool of one has no other to lend).
                parent = conn.execute(
                    "SELECT path, sha256, content_id, size FROM manifest WHERE repo_id = %s AND rev_no = %s",
                    (self.repo_id, new.parent),
                ).fetchall()
                new = new.whole({r[0]: ManifestEntry(*r) for r in parent})
            rev = Revision(
                nxt, f"rev-{nxt:04d}", new.corpus_hash, created, new.index_version, new.git_head,
                new.git_branch, 0, 0,
            )  # fmt: skip
            conn.execute(
                f"INSERT INTO revisions (repo_id, {REVISION_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (self.repo_id, *revision_values(rev)),
            )
            if new.parent is None:
                self._copy_manifest(conn, nxt, new.manifest)
                files, n_chunks = conn.execute(
                    "SELECT (SELECT count(*) FROM manifest WHERE repo_id = %(r)s AND rev_no = %(n)s), "
                    "(SELECT coalesce(sum(n_chunks), 0) FROM contents WHERE repo_id = %(r)s AND id IN "
                    "(SELECT content_id FROM manifest WHERE repo_id = %(r)s AND rev_no = %(n)s))",
                    {"r": self.repo_id, "n": nxt},
                ).fetchone()  # type: ignore[misc]
                # The planner's statistics should know a new manifest's rows when readers first ask
                # about it; ANALYZE samples a bounded number of rows and its statistics commit with us.
                conn.execute("ANALYZE manifest_rows (repo_id, until_rev, first_rev)")
            else:
                assert prior is not None
                came, gone, files = self._write_change(conn, nxt, prior, new.manifest, list(new.removed))
                n_chunks = prior[2] + self._chunks_of(conn, came) - self._chunks_of(conn, gone)
            conn.execute(
                "UPDATE revisions SET files = %s, chunks = %s WHERE repo_id = %s AND rev_no = %s",
                (files, n_chunks, self.repo_id, nxt),
            )
            rev = replace(rev, files=int(files), chunks=int(n_chunks))
            # The index's own view of what changed joins the ledger; then R's open entries close with R+1.
            self._insert_drift(conn, new.events)
            self._archive_ledger(conn, rev.rev, created)
        return rev

    def _copy_manifest(self, conn: psycopg.Connection, rev_no: int, entries: Sequence[ManifestEntry]) -> None:
        """A revision's whole manifest, as the successor of the repository's newest other revision:
        only the rows of what differs from that revision's are written."""
        prior = conn.execute(
            "SELECT rev_no, files, chunks FROM revisions WHERE repo_id = %s AND rev_no < %s "
            "ORDER BY rev_no DESC LIMIT 1",
            (self.repo_id, rev_no),
        ).fetchone()
        if prior is None:  # rows of a repository whose revisions are all gone hold for nothing
            conn.execute("DELETE FROM manifest_rows WHERE repo_id = %s", (self.repo_id,))
        live = {
            r[0]: tuple(r[1:])
            for r in conn.execute(
                "SELECT path, sha256, content_id, size FROM manifest_rows WHERE repo_id = %s AND until_rev = %s",
                (self.repo_id, LIVE_REV),
            )
        }
        clean = [replace(e, path=_clean(e.path)) for e in entries]
        changed = [e for e in clean if live.get(e.path) != (e.sha256, e.content_id, e.size)]
        paths = {e.path for e in clean}
        self._write_change(conn, rev_no, prior, changed, [p for p in live if p not in paths])

    def _write_change(
        self,
        conn: psycopg.Connection,
        rev_no: int,
        prior: tuple[Any, ...] | None,
        changed: Sequence[ManifestEntry],
        removed: list[str],
    ) -> tuple[list[int], list[int], int]:
        """Close the current rows of the changed and removed paths at rev_no and add rows for the
        changed entries: the rows written follow the change, not the manifest. Returns the contents
        the revision brings, those that left, and its file count."""
        touched = [_clean(e.path) for e in changed] + [_clean(p) for p in removed]
        replaced = [
            r[0]
            for r in conn.execute(
                "UPDATE manifest_rows SET until_rev = %s WHERE repo_id = %s AND until_rev = %s "
                "AND path = ANY(%s) RETURNING content_id",
                (rev_no, self.repo_id, LIVE_REV, touched),
            )
        ]
        with conn.cursor().copy(
            "COPY manifest_rows (repo_id, path, first_rev, until_rev, sha256, content_id, size) FROM STDIN"
        ) as copy:
            for e in changed:
                copy.write_row(
                    (self.repo_id, _clean(e.path), rev_no, LIVE_REV, e.sha256, e.content_id, e.size)
                )
        ids = sorted({e.content_id for e in changed})
        came = (
            [
                r[0]
                for r in conn.execute(
                    "SELECT i FROM unnest(%s::bigint[]) AS i WHERE NOT EXISTS (SELECT 1 FROM manifest_rows m "
                    "WHERE m.content_id = i AND m.repo_id = %s AND m.until_rev > %s AND m.first_rev <= %s)",
                    (ids, self.repo_id, prior[0], prior[0]),
                )
            ]
            if prior is not None
            else ids
        )
        gone = [
            r[0]
            for r in conn.execute(
                "SELECT i FROM unnest(%s::bigint[]) AS i WHERE NOT EXISTS (SELECT 1 FROM manifest_rows m "
                "WHERE m.content_id = i AND m.repo_id = %s AND m.until_rev = %s)",
                (sorted(set(replaced)), self.repo_id, LIVE_REV),
            )
        ]
        files = int(prior[1]) if prior is not None else 0
        return came, gone, files + len(changed) - len(replaced)

    def _chunks_of(self, conn: psycopg.Connection, content_ids: list[int]) -> int:
        if not content_ids:
            return 0
        row = conn.execute(
            "SELECT coalesce(sum(n_chunks), 0) FROM contents WHERE id = ANY(%s)", (content_ids,)
        ).fetchone()
        return int(row[0]) if row else 0
