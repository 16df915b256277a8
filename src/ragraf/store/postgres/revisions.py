"""Revisions and their manifests: reading them, and committing a new one in one transaction."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from typing import Any

import psycopg

from ragraf.store.base import DriftEvent, ManifestEntry, NewRevision, Revision
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
            rev = Revision(
                nxt, f"rev-{nxt:04d}", new.corpus_hash, created, new.index_version, new.git_head,
                new.git_branch, 0, 0,
            )  # fmt: skip
            conn.execute(
                f"INSERT INTO revisions (repo_id, {REVISION_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (self.repo_id, *revision_values(rev)),
            )
            if new.parent is not None:
                # A change: the parent's other rows are copied inside the server, not through the client.
                touched = [_clean(e.path) for e in new.manifest] + [_clean(p) for p in new.removed]
                conn.execute(
                    "INSERT INTO manifest (repo_id, rev_no, path, sha256, content_id, size) "
                    "SELECT repo_id, %s, path, sha256, content_id, size FROM manifest "
                    "WHERE repo_id = %s AND rev_no = %s AND NOT (path = ANY(%s))",
                    (nxt, self.repo_id, new.parent, touched),
                )
            self._copy_manifest(conn, nxt, new.manifest)
            files, n_chunks = conn.execute(
                "SELECT (SELECT count(*) FROM manifest WHERE repo_id = %(r)s AND rev_no = %(n)s), "
                "(SELECT coalesce(sum(n_chunks), 0) FROM contents WHERE repo_id = %(r)s AND id IN "
                "(SELECT content_id FROM manifest WHERE repo_id = %(r)s AND rev_no = %(n)s))",
                {"r": self.repo_id, "n": nxt},
            ).fetchone()  # type: ignore[misc]
            conn.execute(
                "UPDATE revisions SET files = %s, chunks = %s WHERE repo_id = %s AND rev_no = %s",
                (files, n_chunks, self.repo_id, nxt),
            )
            rev = replace(rev, files=int(files), chunks=int(n_chunks))
            # The index's own view of what changed joins the ledger; then R's open entries close with R+1.
            self._insert_drift(conn, new.events)
            self._archive_ledger(conn, rev.rev, created)
            # The planner's statistics should know the new revision when readers first ask about
            # it; ANALYZE samples a bounded number of rows and its statistics commit with us. Only
            # the columns a new revision changes (schema 4 keeps their sample small).
            conn.execute("ANALYZE manifest (repo_id, rev_no)")
        return rev

    def _copy_manifest(self, conn: psycopg.Connection, rev_no: int, entries: Sequence[ManifestEntry]) -> None:
        with conn.cursor().copy(
            "COPY manifest (repo_id, rev_no, path, sha256, content_id, size) FROM STDIN"
        ) as copy:
            for e in entries:
                copy.write_row((self.repo_id, rev_no, _clean(e.path), e.sha256, e.content_id, e.size))
