"""The SQLite store: one WAL file; readers never wait and see the last committed revision."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

import numpy as np

try:  # SIMD int8 dot products; without it every search scores all rows in float32, as numpy does
    import simsimd
except ImportError:  # pragma: no cover - a dependency, absent only in a broken install
    simsimd = None

from ragraf.errors import IndexCorruptError, IndexMissingError, RagrafError, StoreError
from ragraf.store.base import (
    LEFTOVER_CONTENTS,
    ChunkHit,
    ContentBundle,
    ContentKey,
    DriftEntry,
    DriftEvent,
    FactHit,
    ManifestEntry,
    NewRevision,
    Revision,
    StatEntry,
    ref_hits,
)
from ragraf.store.sqlite_migrations import APPLICATION_ID, MIGRATIONS

# Rows an int8 pass keeps for exact scoring (at least ten per result): at 110,000 vectors it finds
# every one of the true 40 nearest among its best 200, and the pass costs 2.5 against 21 ms of CPU.
PRESELECT_DEPTH = 500
_LEDGER_COLUMNS = (
    "entry_id, rev, change, path, detected_by, detected_at, old_sha256, new_sha256, affected_nodes, "
    "affected_symbols, dedupe_key"
)
_REVISION_COLUMNS = "rev_no, rev, corpus_hash, created_at, index_version, git_head, git_branch, files, chunks"
_CURRENT_FTS = (
    "SELECT rowid AS id, bm25(chunks_fts, 1.0, 4.0) AS score FROM chunks_fts WHERE chunks_fts MATCH ?"
)
_RETAINED_FTS = (
    "SELECT rowid AS id, bm25(chunks_fts_retained, 1.0, 4.0) AS score FROM chunks_fts_retained "
    "WHERE chunks_fts_retained MATCH ?"
)


def _named(content: str) -> str:
    """Whether a content (a column or `?`) is named by some revision; manifests are found by revision first."""
    return f"SELECT 1 FROM manifest m WHERE m.rev_no IN (SELECT rev_no FROM revisions) AND m.content_id = {content}"


def _current(content: str) -> str:
    """Whether a content is in the newest revision of some view (what the lexical index holds)."""
    return (
        f"SELECT 1 FROM manifest m WHERE m.content_id = {content} AND m.rev_no IN "
        "(SELECT max(rev_no) FROM revisions GROUP BY view)"
    )


_CURRENT_CONTENT = _current("k.content_id")  # of chunk k


def _corrupt(path: Path, detail: str) -> IndexCorruptError:
    return IndexCorruptError(
        f"the index file {path} is unusable ({detail})",
        suggest="run `ragraf index --full` to rebuild it",
    )


def damage(exc: BaseException, path: Path) -> RagrafError | None:
    """What to tell the user when SQLite fails on the index file: a damaged file (a page
    overwritten, a torn copy, found only when a query reaches the page) is rebuilt with --full; a
    full disk or a home it may not write is no damage, and the last revision stands. None for any
    other failure."""
    if not isinstance(exc, sqlite3.DatabaseError):
        return None
    name = getattr(exc, "sqlite_errorname", "")
    if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
        return _corrupt(path, str(exc))
    if name.startswith("SQLITE_FULL") or "disk is full" in str(exc):
        return StoreError(
            f"the disk holding the index {path} is full ({exc})",
            suggest="free some space; what was committed before is intact and still answers",
        )
    if name.startswith(("SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_IOERR", "SQLITE_PERM")):
        return StoreError(
            f"the index {path} cannot be written or opened ({exc})",
            suggest="check that its folder is writable and its disk has space (RAGRAF_HOME moves it)",
        )
    return None


class SqliteStore:
    """Store protocol over one SQLite file; `view` picks whose revisions and stat cache (a git work
    tree's, named `label` in its revisions), '' the base or the only view."""

    def __init__(self, path: Path, create: bool = False, view: str = "", label: str = "") -> None:
        self.path = path
        self.view = view
        self.label = label
        self._vector_rows: VectorRows | None = None
        self._covered: set[tuple[int, str]] = set()
        if not path.exists() and not create:
            raise IndexMissingError(
                f"no index yet for this folder (looked for {path})", suggest="run `ragraf index` first"
            )
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.db = sqlite3.connect(path, timeout=60, isolation_level=None, check_same_thread=False)
            self.db.execute("PRAGMA busy_timeout = 60000")
            self._check_and_migrate(create)
        except sqlite3.DatabaseError as exc:
            raise damage(exc, path) or _corrupt(path, str(exc)) from None

    def _check_and_migrate(self, create: bool) -> None:
        app_id = self.db.execute("PRAGMA application_id").fetchone()[0]
        version = self.db.execute("PRAGMA user_version").fetchone()[0]
        tables = self.db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        if app_id != APPLICATION_ID and (tables or version):
            raise _corrupt(self.path, "not a ragraf index")
        if version > len(MIGRATIONS):
            raise IndexCorruptError(
                f"the index {self.path} was written by a newer ragraf (schema {version})",
                suggest="upgrade ragraf, or run `ragraf index --full` to rebuild with this version",
            )
        if version < len(MIGRATIONS):
            if not create and version == 0:
                raise _corrupt(self.path, "empty file")
            self.db.execute("PRAGMA journal_mode = WAL")
            with self.transaction():
                for number in range(version, len(MIGRATIONS)):
                    for statement in _statements(MIGRATIONS[number]):
                        self.db.execute(statement)
                self.db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                self.db.execute(f"PRAGMA user_version = {len(MIGRATIONS)}")
        self.db.execute("PRAGMA synchronous = NORMAL")
        self.db.execute("PRAGMA cache_size = -65536")  # 64 MiB: bulk inserts into FTS and indexes
        self.db.execute("PRAGMA temp_store = MEMORY")

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE .. COMMIT; rolled back on any exception."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            if self.db.in_transaction:  # a full disk rolls back by itself: keep its error, not ROLLBACK's
                self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    # revisions -----------------------------------------------------------------------------

    def current_revision(self) -> Revision | None:
        row = self.db.execute(
            f"SELECT {_REVISION_COLUMNS} FROM revisions WHERE view = ? ORDER BY rev_no DESC LIMIT 1",
            (self.view,),
        ).fetchone()
        return Revision(*row) if row else None

    def revisions(self) -> list[Revision]:
        rows = self.db.execute(
            f"SELECT {_REVISION_COLUMNS} FROM revisions WHERE view = ? ORDER BY rev_no", (self.view,)
        ).fetchall()
        return [Revision(*row) for row in rows]

    def revision(self, name: str) -> Revision | None:
        row = self.db.execute(f"SELECT {_REVISION_COLUMNS} FROM revisions WHERE rev = ?", (name,)).fetchone()
        return Revision(*row) if row else None

    def manifest(self, rev_no: int) -> dict[str, ManifestEntry]:
        rows = self.db.execute(
            "SELECT path, sha256, content_id, size FROM manifest WHERE rev_no = ?", (rev_no,)
        ).fetchall()
        return {row[0]: ManifestEntry(*row) for row in rows}

    def manifest_hashes(self, rev_no: int) -> list[tuple[str, str]]:
        """(path, sha256) of every file of a revision: what its corpus hash is made of."""
        return self.db.execute("SELECT path, sha256 FROM manifest WHERE rev_no = ?", (rev_no,)).fetchall()

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
            nxt = db.execute(
                "SELECT coalesce(max(seq), 0) + 1 FROM sqlite_sequence WHERE name = 'revisions'"
            ).fetchone()[0]
            nxt = max(nxt, db.execute("SELECT coalesce(max(rev_no), 0) + 1 FROM revisions").fetchone()[0])
            prior = db.execute("SELECT max(rev_no) FROM revisions WHERE view = ?", (self.view,)).fetchone()[0]
            if new.parent is not None and new.parent != prior:  # not a change to this view's newest
                new = new.whole(self.manifest(new.parent))
            if new.parent is None:
                came, gone = self._write_manifest(db, nxt, prior, new.manifest)
                files, n_chunks = len(new.manifest), _chunks_of(db, {e.content_id for e in new.manifest})
            else:
                came, gone, files, n_chunks = self._write_change(db, nxt, new)
            name = self._revision_name(db, nxt, new.base_rev)
            db.execute(
                f"INSERT INTO revisions ({_REVISION_COLUMNS}, view) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                f"SELECT {_LEDGER_COLUMNS}, ?, ? FROM drift_ledger WHERE {mine}",
                (name, created, self.view, nxt),
            )
            db.execute(f"DELETE FROM drift_ledger WHERE {mine}", (self.view, nxt))
        rev = self.revision(name)
        assert rev is not None
        return rev

    def _write_manifest(
        self, db: sqlite3.Connection, rev_no: int, prior: int | None, entries: list[ManifestEntry]
    ) -> tuple[list[int], list[int]]:
        """A whole manifest; returns the contents it brings to this view and those that left it."""
        db.executemany(
            "INSERT INTO manifest (rev_no, path, sha256, content_id, size) VALUES (?, ?, ?, ?, ?)",
            [(rev_no, e.path, e.sha256, e.content_id, e.size) for e in entries],
        )
        diff = "SELECT content_id FROM manifest WHERE rev_no = ? EXCEPT SELECT content_id FROM manifest WHERE rev_no = ?"
        came = [r[0] for r in db.execute(diff, (rev_no, prior if prior is not None else -1))]
        gone = [r[0] for r in db.execute(diff, (prior, rev_no))] if prior is not None else []
        return came, gone

    def _write_change(
        self, db: sqlite3.Connection, rev_no: int, new: NewRevision
    ) -> tuple[list[int], list[int], int, int]:
        """The parent's manifest with the change applied, copied inside SQLite; returns the contents
        it brings to this view, those that left it, and the new file and chunk counts."""
        parent = new.parent
        touched = [e.path for e in new.manifest] + list(new.removed)
        one = "SELECT content_id FROM manifest WHERE rev_no = ? AND path = ?"
        replaced = {row[0] for p in touched if (row := db.execute(one, (parent, p)).fetchone())}
        db.execute(
            "INSERT INTO manifest (rev_no, path, sha256, content_id, size) "
            "SELECT ?, path, sha256, content_id, size FROM manifest WHERE rev_no = ?",
            (rev_no, parent),
        )
        db.executemany(
            "DELETE FROM manifest WHERE rev_no = ? AND path = ?", [(rev_no, p) for p in new.removed]
        )
        db.executemany(
            "INSERT OR REPLACE INTO manifest (rev_no, path, sha256, content_id, size) VALUES (?, ?, ?, ?, ?)",
            [(rev_no, e.path, e.sha256, e.content_id, e.size) for e in new.manifest],
        )
        named = "SELECT 1 FROM manifest INDEXED BY manifest_by_revision WHERE content_id = ? AND rev_no = ?"
        came = [
            i for i in {e.content_id for e in new.manifest} if not db.execute(named, (i, parent)).fetchone()
        ]
        gone = [i for i in replaced if not db.execute(named, (i, rev_no)).fetchone()]
        chunks = db.execute("SELECT chunks FROM revisions WHERE rev_no = ?", (parent,)).fetchone()[0]
        files = db.execute("SELECT count(*) FROM manifest WHERE rev_no = ?", (rev_no,)).fetchone()[0]
        return came, gone, files, chunks + _chunks_of(db, set(came)) - _chunks_of(db, set(gone))

    def _revision_name(self, db: sqlite3.Connection, rev_no: int, base_rev: str | None) -> str:
        """rev-0012 for the base; rev-0012+wt-feature-x.3 for the third revision of a work tree's view."""
        if not self.view:
            return f"rev-{rev_no:04d}"
        prior = db.execute(
            "SELECT rev FROM revisions WHERE view = ? ORDER BY rev_no DESC LIMIT 1", (self.view,)
        ).fetchone()
        seq = int(prior[0].rsplit(".", 1)[1]) + 1 if prior and "." in prior[0] else 1
        return f"{base_rev + '+' if base_rev else ''}wt-{self.label or 'tree'}.{seq}"

    # contents and chunks -------------------------------------------------------------------

    def content_ids(self, keys: list[ContentKey]) -> dict[ContentKey, int]:
        """The stored ids of these contents, asked 500 hashes at a time."""
        wanted = set(keys)
        found: dict[ContentKey, int] = {}
        shas = sorted({key[0] for key in wanted})
        for i in range(0, len(shas), 500):
            part = shas[i : i + 500]
            for row_id, *key in self.db.execute(
                f"SELECT id, sha256, language, chunker FROM contents WHERE sha256 IN ({','.join('?' * len(part))})",
                part,
            ):
                if tuple(key) in wanted:
                    found[tuple(key)] = row_id  # type: ignore[index]
        return found

    def add_contents(self, items: list[ContentBundle]) -> dict[ContentKey, int]:
        """Store chunks and facts of new contents in one transaction (orphans until a revision names them)."""
        ids: dict[ContentKey, int] = {}
        with self.transaction() as db:
            for item in items:
                key = item.key
                row = db.execute(
                    "SELECT id FROM contents WHERE sha256 = ? AND language = ? AND chunker = ?", key
                ).fetchone()
                if row:
                    ids[key] = row[0]
                    continue
                cur = db.execute(
                    "INSERT INTO contents (sha256, language, chunker, n_chunks, facts_status) VALUES (?, ?, ?, ?, ?)",
                    (*key, len(item.chunks), item.facts_status),
                )
                content_id = int(cur.lastrowid or 0)
                ids[key] = content_id
                db.executemany(
                    "INSERT INTO chunks (content_id, ord, start_line, end_line, symbol, text) VALUES (?, ?, ?, ?, ?, ?)",
                    [(content_id, c.ord, c.start_line, c.end_line, c.symbol, c.text) for c in item.chunks],
                )
                chunk_ids = db.execute(
                    "SELECT id FROM chunks WHERE content_id = ? ORDER BY ord", (content_id,)
                ).fetchall()
                db.executemany(
                    "INSERT INTO pending_fts (chunk_id, body, symbol) VALUES (?, ?, ?)",
                    [
                        (row[0], c.index_text, c.symbol or "")
                        for row, c in zip(chunk_ids, item.chunks, strict=True)
                    ],
                )
                db.executemany(
                    "INSERT INTO facts (content_id, kind, name, name_lower, def_kind, container, line, start_line, "
                    "end_line, signature, is_call, body_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        (
                            content_id,
                            f.kind,
                            f.name,
                            f.name.lower(),
                            f.def_kind,
                            f.container,
                            f.line,
                            f.start_line,
                            f.end_line,
                            f.signature,
                            int(f.is_call),
                            f.body_hash,
                        )
                        for f in item.facts
                    ],
                )
                db.executemany(
                    "INSERT INTO ref_sites (content_id, name, sites) VALUES (?, ?, ?)",
                    [(content_id, r.name, r.sites) for r in item.refs],
                )
        return ids

    def count_chunks(self, rev_no: int) -> int:
        row = self.db.execute("SELECT chunks FROM revisions WHERE rev_no = ?", (rev_no,)).fetchone()
        return int(row[0]) if row else 0

    def chunks_of(self, rev_no: int, path: str) -> list[ChunkHit]:
        rows = self.db.execute(
            "SELECT c.id, m.path, c.start_line, c.end_line, c.symbol, c.text, m.sha256 FROM manifest m "
            "JOIN chunks c ON c.content_id = m.content_id WHERE m.rev_no = ? AND m.path = ? ORDER BY c.ord",
            (rev_no, path),
        ).fetchall()
        return [ChunkHit(r[0], r[1], r[2], r[3], r[4], r[5], 0.0, r[6]) for r in rows]

    def chunks_of_paths(self, rev_no: int, paths: list[str]) -> dict[str, list[ChunkHit]]:
        """chunks_of for several paths; a path the revision lacks maps to []."""
        return {path: self.chunks_of(rev_no, path) for path in paths}  # in-process: no round trips to save

    def lexical_search(self, match: str, rev_no: int, limit: int) -> list[ChunkHit]:
        """BM25 over chunk text and symbols, restricted to the chunks of one revision."""
        # The current revisions (one per view) share the lexical index, so over-fetch before the
        # manifest filter; an older revision also needs the rows of what it alone still names. One
        # statement, so a commit in between cannot move rows out from under the question.
        rows = self.db.execute(
            f"WITH hits AS MATERIALIZED (SELECT id, score FROM ({_CURRENT_FTS} UNION ALL {_RETAINED_FTS} "
            "  AND ? NOT IN (SELECT max(rev_no) FROM revisions GROUP BY view)) ORDER BY score LIMIT ?) "
            "SELECT c.id, m.path, c.start_line, c.end_line, c.symbol, c.text, -hits.score, m.sha256 "
            "FROM hits JOIN chunks c ON c.id = hits.id "
            "JOIN manifest m INDEXED BY manifest_by_revision ON m.content_id = c.content_id AND m.rev_no = ? "
            "ORDER BY hits.score, m.path, c.start_line LIMIT ?",
            (match, match, rev_no, limit * 3 + 20, rev_no, limit),
        ).fetchall()
        return [ChunkHit(r[0], r[1], r[2], r[3], r[4], r[5], float(r[6]), r[7]) for r in rows]

    # facts ---------------------------------------------------------------------------------

    def find_facts(
        self,
        rev_no: int,
        fact_kind: str,
        name: str | None = None,
        path: str | None = None,
        exact: bool = True,
        limit: int = 1000,
    ) -> list[FactHit]:
        """Facts of one kind in a revision, by name (exact or case-insensitive) and/or path."""
        if fact_kind == "ref":
            return self._find_refs(rev_no, name, path, exact, limit)
        where = ["m.rev_no = ?", "f.kind = ?"]
        args: list[object] = [rev_no, fact_kind]
        if name is not None:
            where.append("f.name_lower = ?")
            args.append(name.lower())
            if exact:
                where.append("f.name = ?")
                args.append(name)
        if path is not None:
            where.append("m.path = ?")
            args.append(path)
        rows = self.db.execute(
            "SELECT f.kind, f.name, f.def_kind, m.path, f.line, f.start_line, f.end_line, f.container, f.signature, "
            "f.is_call, f.body_hash FROM facts f "
            f"{_fact_join(name, path)} ON m.content_id = f.content_id "
            f"WHERE {' AND '.join(where)} ORDER BY m.path, f.line LIMIT ?",
            (*args, limit),
        ).fetchall()
        return [
            FactHit(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], bool(r[9]), r[10]) for r in rows
        ]

    def _find_refs(
        self, rev_no: int, name: str | None, path: str | None, exact: bool, limit: int
    ) -> list[FactHit]:
        where = ["m.rev_no = ?"]
        args: list[object] = [rev_no]
        if name is not None:
            where.append("r.name = ?" if exact else "r.name = ? COLLATE NOCASE")
            args.append(name)
        if path is not None:
            where.append("m.path = ?")
            args.append(path)
        rows = self.db.execute(
            f"SELECT r.name, m.path, r.sites FROM ref_sites r {_fact_join(name, path)} ON m.content_id = r.content_id "
            f"WHERE {' AND '.join(where)} ORDER BY m.path, r.rowid",
            args,
        )
        return ref_hits(rows, limit)

    def facts_status(self, rev_no: int, path: str) -> str | None:
        row = self.db.execute(
            "SELECT c.facts_status FROM manifest m JOIN contents c ON c.id = m.content_id "
            "WHERE m.rev_no = ? AND m.path = ?",
            (rev_no, path),
        ).fetchone()
        return row[0] if row else None

    # drift ledger ----------------------------------------------------------------------------

    def register_drift(self, events: list[DriftEvent]) -> int:
        """Append events to the ledger; an event registered twice adds nothing. Returns entries added."""
        if not events:
            return 0
        keys = [dedupe_key(e) for e in events]
        known = set()
        for i in range(0, len(keys), 500):
            part = keys[i : i + 500]
            known.update(
                r[0]
                for r in self.db.execute(
                    f"SELECT dedupe_key FROM drift_ledger WHERE dedupe_key IN ({','.join('?' * len(part))})",
                    part,
                )
            )
        fresh = [e for e, k in zip(events, keys, strict=True) if k not in known]
        if not fresh:
            return 0
        with self.transaction() as db:
            return self._insert_drift(db, fresh)

    def _insert_drift(self, db: sqlite3.Connection, events: list[DriftEvent]) -> int:
        now = dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")
        added = 0
        for e in events:
            nodes: list[int] = []
            symbols: list[dict[str, object]] = []
            if e.old_content_id is not None:
                nodes = [
                    r[0]
                    for r in db.execute(
                        "SELECT id FROM chunks WHERE content_id = ? ORDER BY ord", (e.old_content_id,)
                    )
                ]
                symbols = [
                    {"name": f"{r[1]}.{r[0]}" if r[1] else r[0], "kind": r[2], "line": r[3]}
                    for r in db.execute(
                        "SELECT name, container, def_kind, line FROM facts WHERE content_id = ? AND kind = 'def' "
                        "ORDER BY line",
                        (e.old_content_id,),
                    )
                ]
            cur = db.execute(
                "INSERT OR IGNORE INTO drift_ledger (rev, change, path, detected_by, detected_at, old_sha256, "
                "new_sha256, affected_nodes, affected_symbols, dedupe_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    e.rev,
                    e.change,
                    e.path,
                    e.detected_by,
                    now,
                    e.old_sha256,
                    e.new_sha256,
                    json.dumps(nodes),
                    json.dumps(symbols),
                    dedupe_key(e),
                ),
            )
            added += cur.rowcount
        return added

    def open_entries(self, rev: str | None = None) -> list[DriftEntry]:
        sql = (
            f"SELECT {_LEDGER_COLUMNS} FROM drift_ledger"
            + (" WHERE rev = ?" if rev else "")
            + " ORDER BY entry_id"
        )
        return [_entry(r) for r in self.db.execute(sql, (rev,) if rev else ())]

    def open_summary(self, rev: str, paths: list[str]) -> tuple[int, int]:
        """(open entries of rev, affected symbols of the latest entry of each given path)."""
        count = self.db.execute("SELECT count(*) FROM drift_ledger WHERE rev = ?", (rev,)).fetchone()[0]
        symbols = 0
        for path in paths:
            row = self.db.execute(
                "SELECT json_array_length(affected_symbols) FROM drift_ledger WHERE rev = ? AND path = ? "
                "ORDER BY entry_id DESC LIMIT 1",
                (rev, path),
            ).fetchone()
            symbols += row[0] if row else 0
        return count, symbols

    def archived_entries(self, closed_by: list[str]) -> list[DriftEntry]:
        if not closed_by:
            return []
        rows = self.db.execute(
            f"SELECT {_LEDGER_COLUMNS}, closed_by FROM drift_archive "
            f"WHERE closed_by IN ({','.join('?' * len(closed_by))}) ORDER BY entry_id",
            closed_by,
        ).fetchall()
        return [_entry(r) for r in rows]

    # vectors -------------------------------------------------------------------------------

    def chunks_missing_vectors(
        self, rev_no: int, model: str, limit: int, after_id: int = 0
    ) -> list[ChunkHit]:
        """Chunks of a revision without a vector for model, by id after after_id (each chunk once)."""
        fresh, args = self._unvouched_contents(rev_no, model)
        rows = self.db.execute(
            f"WITH fresh AS MATERIALIZED ({fresh}) "
            "SELECT c.id, min(m.path), c.start_line, c.end_line, c.symbol, c.text FROM fresh f "
            "JOIN chunks c ON c.content_id = f.content_id "
            "JOIN manifest m INDEXED BY manifest_by_revision ON m.rev_no = ? AND m.content_id = c.content_id "
            "WHERE c.id > ? AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.model = ? AND v.chunk_id = c.id) "
            "GROUP BY c.id ORDER BY c.id LIMIT ?",
            (*args, rev_no, after_id, model, limit),
        ).fetchall()
        return [ChunkHit(r[0], r[1], r[2], r[3], r[4], r[5], 0.0) for r in rows]

    def _unvouched_contents(self, rev_no: int, model: str) -> tuple[str, tuple[int, ...]]:
        """A query for the revision's contents that may lack vectors of model: those the newest
        earlier fully embedded revision does not hold (so a one-file revision checks one content,
        not 100,000), or all of them when no earlier revision is fully embedded."""
        covered = [
            int(key.split(":", 2)[1])
            for (key,) in self.db.execute("SELECT key FROM meta WHERE key LIKE 'covered:%'")
            if key.split(":", 2)[2:] == [model] and int(key.split(":", 2)[1]) < rev_no
        ]
        if not covered:
            return "SELECT DISTINCT content_id FROM manifest WHERE rev_no = ?", (rev_no,)
        return (
            "SELECT DISTINCT m.content_id FROM manifest m WHERE m.rev_no = ? AND NOT EXISTS "
            "(SELECT 1 FROM manifest r WHERE r.rev_no = ? AND r.content_id = m.content_id)",
            (rev_no, max(covered)),
        )

    def add_vectors(self, model: str, items: list[tuple[int, bytes]], dim: int) -> None:
        if not items:
            return
        with self.transaction() as db:
            db.executemany(
                "INSERT OR REPLACE INTO vectors (chunk_id, model, dim, vec) VALUES (?, ?, ?, ?)",
                [(chunk_id, model, dim, blob) for chunk_id, blob in items],
            )

    def vector_coverage(self, rev_no: int, model: str) -> float:
        """The share of the revision's chunks with a vector of model; a revision once fully embedded
        stays so (its content never changes), which the indexer records (mark_covered)."""
        if (rev_no, model) in self._covered:
            return 1.0
        if self.db.execute("SELECT 1 FROM meta WHERE key = ?", (_covered_key(rev_no, model),)).fetchone():
            self._covered.add((rev_no, model))
            return 1.0
        fresh, args = self._unvouched_contents(rev_no, model)
        missing = self.db.execute(
            f"SELECT count(*) FROM chunks c WHERE c.content_id IN ({fresh}) "
            "AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.chunk_id = c.id AND v.model = ?)",
            (*args, model),
        ).fetchone()[0]
        total = self.count_chunks(rev_no)
        if not missing:
            self._covered.add((rev_no, model))
        return 1.0 if not total else (total - missing) / total

    def mark_covered(self, rev_no: int, model: str) -> None:
        """Record that every chunk of the revision has a vector of model (the writer says so)."""
        with self.transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, '1')", (_covered_key(rev_no, model),)
            )

    def _vectors(self, rev_no: int, model: str, dim: int) -> VectorView:
        """The model's rows and those of the revision: vectors read once per content and kept, so a
        new revision reads only the contents it adds (a commit rewrites a few files, not every vector)."""
        pool = self._vector_rows
        if pool is None or (pool.model, pool.dim) != (model, dim):
            pool = self._vector_rows = VectorRows(model, dim)
        with pool.lock:
            if pool.rev_no != rev_no or self._partial_count(pool) != pool.partial_count:
                self._select(pool, rev_no)
            n = pool.n  # views taken under the lock: a later read may grow or compact the pool
            return VectorView(pool.ids[:n], pool.matrix[:n], pool.codes[:n], pool.scales[:n], pool.selected)

    def _partial_count(self, pool: VectorRows) -> int:
        """Vectors stored so far for the revision's contents that were not fully embedded when read."""
        count = 0
        for i in range(0, len(pool.partial), 500):
            batch = pool.partial[i : i + 500]
            # Driven from the few contents' chunks: a join may otherwise walk every vector of the model.
            count += self.db.execute(
                f"SELECT count(*) FROM chunks c WHERE c.content_id IN ({','.join('?' * len(batch))}) AND EXISTS "
                "(SELECT 1 FROM vectors v WHERE v.model = ? AND v.chunk_id = c.id AND v.dim = ?)",
                (*batch, pool.model, pool.dim),
            ).fetchone()[0]
        return count

    def _select(self, pool: VectorRows, rev_no: int) -> None:
        """Point the pool at a revision, reading the vectors of contents it has not kept yet."""
        # A content is its (id, sha256, language, chunker): an id SQLite reuses after retention
        # names another content, whose rows are read afresh.
        contents = self.db.execute(
            "SELECT DISTINCT c.id, c.sha256, c.language, c.chunker FROM manifest m "
            "JOIN contents c ON c.id = m.content_id WHERE m.rev_no = ?",
            (rev_no,),
        ).fetchall()
        known = pool.rows
        partial: list[tuple[int, bytes]] = []
        pool.partial = []
        fresh = [key for key in contents if key not in known]
        for i in range(0, len(fresh), 500):
            batch = {key[0]: key for key in fresh[i : i + 500]}
            found: dict[int, list[tuple[int, bytes | None]]] = {content_id: [] for content_id in batch}
            for content_id, chunk_id, vec in self.db.execute(
                "SELECT c.content_id, c.id, v.vec FROM chunks c LEFT JOIN vectors v "
                "ON v.model = ? AND v.chunk_id = c.id AND v.dim = ? "
                f"WHERE c.content_id IN ({','.join('?' * len(batch))})",
                (pool.model, pool.dim, *batch),
            ):
                found[content_id].append((chunk_id, vec))
            for content_id, chunks in found.items():
                have = [(chunk_id, vec) for chunk_id, vec in chunks if vec is not None]
                if len(have) == len(chunks):
                    known[batch[content_id]] = pool.append(have)
                else:  # not fully embedded yet: used, but read again once more of it is
                    partial.extend(have)
                    pool.partial.append(content_id)
        parts = [known[key] for key in contents if key in known]
        if partial:
            parts.append(pool.append(partial))
        selected = np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)
        if pool.n > 2 * len(selected) + 4096:
            selected = pool.compact([key for key in contents if key in known], selected)
        # In chunk id order, as one read of the revision lists them, so ties rank alike.
        pool.selected = selected[np.argsort(pool.ids[selected], kind="stable")]
        pool.partial_count = len(partial)
        pool.rev_no = rev_no

    def vector_search(self, rev_no: int, model: str, query: bytes, dim: int, limit: int) -> list[ChunkHit]:
        """Cosine similarity (vectors are unit length) over the chunks of one revision."""
        view = self._vectors(rev_no, model, dim)
        selected = view.selected
        if not len(selected) or limit <= 0:
            return []
        vec = np.frombuffer(query, dtype=np.float32)
        depth = max(PRESELECT_DEPTH, 10 * limit)
        if simsimd is not None and len(selected) > 2 * depth:
            # The int8 pass picks the few rows worth an exact score; only their float32 rows are
            # read. Sorted back, they keep the revision's chunk id order, so ties rank as before.
            query_codes, _ = quantize(vec[None])  # its scale is one factor for every row: no need
            approx = np.asarray(simsimd.cdist(query_codes, view.codes, metric="dot"))
            approx = approx.ravel()[selected] * view.scales[selected]
            selected = selected[np.sort(np.argpartition(-approx, depth)[:depth])]
        ids = view.ids[selected]
        scores = view.matrix[selected] @ vec
        top = np.argpartition(-scores, min(limit, len(ids) - 1))[:limit]
        top = top[np.argsort(-scores[top])]
        best = {int(ids[i]): float(scores[i]) for i in top}
        marks = ",".join("?" * len(best))
        # CROSS JOIN keeps the best chunks outside: else the whole revision's manifest is walked (~25 ms).
        rows = self.db.execute(
            "SELECT c.id, m.path, c.start_line, c.end_line, c.symbol, c.text, m.sha256 FROM chunks c "
            "CROSS JOIN manifest m INDEXED BY manifest_by_revision ON m.content_id = c.content_id AND m.rev_no = ? "
            f"WHERE c.id IN ({marks})",
            (rev_no, *best),
        ).fetchall()
        hits = [ChunkHit(r[0], r[1], r[2], r[3], r[4], r[5], best[r[0]], r[6]) for r in rows]
        hits.sort(key=lambda h: (-h.score, h.path, h.start_line))
        return hits

    # stat cache ----------------------------------------------------------------------------

    def stat_cache(self) -> dict[str, StatEntry]:
        rows = self.db.execute(
            "SELECT path, size, mtime_ns, ctime_ns, inode, sha256, checked_ns FROM stat_cache WHERE view = ?",
            (self.view,),
        ).fetchall()
        make = StatEntry._make
        return {row[0]: make(row[1:]) for row in rows}

    def update_stat_cache(self, entries: dict[str, StatEntry], removed: list[str]) -> None:
        if not entries and not removed:
            return
        with self.transaction() as db:
            db.executemany(
                "DELETE FROM stat_cache WHERE view = ? AND path = ?", [(self.view, p) for p in removed]
            )
            db.executemany(
                "INSERT OR REPLACE INTO stat_cache (view, path, size, mtime_ns, ctime_ns, inode, sha256, checked_ns) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (self.view, p, e.size, e.mtime_ns, e.ctime_ns, e.inode, e.sha256, e.checked_ns)
                    for p, e in entries.items()
                ],
            )

    def _snapshot_key(self) -> str:
        return f"guard_snapshot:{self.view}" if self.view else "guard_snapshot"

    def guard_snapshot(self) -> bytes | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (self._snapshot_key(),)).fetchone()
        return bytes(row[0]) if row else None

    def guard_snapshot_digest(self) -> bytes | None:
        """sha1 of the snapshot, written with it: a long-running guard compares 20 bytes, not the blob."""
        row = self.db.execute(
            "SELECT value FROM meta WHERE key = ?", (self._snapshot_key() + ":sha1",)
        ).fetchone()
        return bytes(row[0]) if row else None

    def set_guard_snapshot(self, blob: bytes) -> None:
        with self.transaction() as db:
            db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (self._snapshot_key(), blob))
            db.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                (self._snapshot_key() + ":sha1", hashlib.sha1(blob).digest()),
            )

    # consistency -------------------------------------------------------------------------------

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
             "SELECT count(*) FROM manifest m WHERE NOT EXISTS (SELECT 1 FROM revisions r WHERE r.rev_no = m.rev_no)",
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

    def damaged(self) -> str | None:
        """SQLite's first complaint about the file's pages (quick_check reads them all) or about the
        lexical index's own structures, which quick_check does not look into; None when sound."""
        try:
            verdict = self.db.execute("PRAGMA quick_check(1)").fetchone()[0]
            if verdict != "ok":
                return str(verdict)
            for table in ("chunks_fts", "chunks_fts_retained"):
                self.db.execute(f"INSERT INTO {table} ({table}) VALUES ('integrity-check')")
        except sqlite3.DatabaseError as exc:
            return str(exc)
        return None

    # retention -----------------------------------------------------------------------------

    def gc(self, keep: int) -> dict[str, int]:
        """Drop this view's revisions beyond the last `keep`, the views of work trees that are gone,
        and every content no kept revision names."""
        keep = max(1, keep)
        with self.transaction() as db:
            old = [
                r[0]
                for r in db.execute(
                    "SELECT rev_no FROM revisions WHERE view = ? ORDER BY rev_no DESC LIMIT -1 OFFSET ?",
                    (self.view, keep),
                ).fetchall()
            ]
            views = [r[0] for r in db.execute("SELECT DISTINCT view FROM revisions WHERE view != ''")]
            gone = [v for v in views if v != self.view and os.path.isabs(v) and not os.path.isdir(v)]
            for view in gone:  # `git worktree remove` took the folder: its view goes with it
                old += [r[0] for r in db.execute("SELECT rev_no FROM revisions WHERE view = ?", (view,))]
                db.execute("DELETE FROM stat_cache WHERE view = ?", (view,))
                db.execute("DELETE FROM meta WHERE key = ?", (f"guard_snapshot:{view}",))
            # Content can lose its last reference only with a dropped revision, or never have had one
            # (stored by a run killed before its commit, so newer than the last gc's mark): only those
            # are checked, not every content of the index.
            mark = db.execute("SELECT value FROM meta WHERE key = 'gc_content_mark'").fetchone()
            candidates: set[int] = set()
            for rev_no in old:
                successor = db.execute(
                    "SELECT min(rev_no) FROM revisions WHERE view = (SELECT view FROM revisions WHERE rev_no = ?) "
                    "AND rev_no > ?",
                    (rev_no, rev_no),
                ).fetchone()[0]
                candidates.update(
                    r[0]
                    for r in db.execute(
                        "SELECT content_id FROM manifest WHERE rev_no = ? "
                        "EXCEPT SELECT content_id FROM manifest WHERE rev_no = ?",
                        (rev_no, successor if successor is not None else -1),
                    )
                )
                db.execute("DELETE FROM manifest WHERE rev_no = ?", (rev_no,))
                db.execute("DELETE FROM revisions WHERE rev_no = ?", (rev_no,))
                db.execute("DELETE FROM meta WHERE key LIKE ?", (_covered_key(rev_no, "%"),))
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
                db.executemany("DELETE FROM chunks_fts WHERE rowid = ?", [(i,) for i in chunk_ids])
                db.executemany("DELETE FROM chunks_fts_retained WHERE rowid = ?", [(i,) for i in chunk_ids])
                db.execute("DELETE FROM chunks WHERE content_id = ?", (content_id,))
                db.execute("DELETE FROM facts WHERE content_id = ?", (content_id,))
                db.executemany("DELETE FROM vectors WHERE chunk_id = ?", [(i,) for i in chunk_ids])
                db.execute("DELETE FROM contents WHERE id = ?", (content_id,))
                removed_chunks += len(chunk_ids)
            if orphans:
                # One pass over the references instead of an index on content_id that every insert pays for.
                db.execute("DELETE FROM ref_sites WHERE content_id NOT IN (SELECT id FROM contents)")
                db.execute("DELETE FROM pending_fts WHERE chunk_id NOT IN (SELECT id FROM chunks)")
            db.execute(
                "INSERT OR REPLACE INTO meta (key, value) SELECT 'gc_content_mark', coalesce(max(id), 0) FROM contents"
            )
        return {
            "revisions_removed": len(old),
            "contents_removed": len(orphans),
            "chunks_removed": removed_chunks,
        }

    def close(self) -> None:
        self.db.close()


class VectorView(NamedTuple):
    """A consistent view of a model's rows: chunk ids, float32 vectors, int8 codes and scales, and
    the row numbers of one revision."""

    ids: np.ndarray
    matrix: np.ndarray
    codes: np.ndarray
    scales: np.ndarray
    selected: np.ndarray


class VectorRows:
    """The unit vectors of one (model, dim) a store has read, by content, in one growing matrix."""

    def __init__(self, model: str, dim: int) -> None:
        self.model = model
        self.dim = dim
        self.ids = np.empty(0, dtype=np.int64)
        self.matrix = np.empty((0, dim), dtype=np.float32)
        # int8 copies and their per-row scales: a first pass over a large revision reads a quarter
        # of the bytes (the scan is memory-bound), then the float32 rows of the best few decide.
        self.codes = np.empty((0, dim), dtype=np.int8)
        self.scales = np.empty(0, dtype=np.float32)
        self.n = 0
        self.rows: dict[tuple[int, str, str, str], np.ndarray] = {}  # fully embedded content -> its rows
        self.rev_no: int | None = None
        self.selected = np.empty(0, dtype=np.int64)
        self.partial: list[int] = []  # the selected revision's contents not fully embedded when read
        self.partial_count = 0  # their vectors then
        self.lock = threading.Lock()

    def append(self, items: list[tuple[int, bytes]]) -> np.ndarray:
        """Add (chunk id, vector) rows; returns their row numbers."""
        need = self.n + len(items)
        if need > len(self.ids):
            size = max(need, len(self.ids) * 3 // 2, 1024)
            ids = np.empty(size, dtype=np.int64)
            matrix = np.empty((size, self.dim), dtype=np.float32)
            codes = np.empty((size, self.dim), dtype=np.int8)
            scales = np.empty(size, dtype=np.float32)
            ids[: self.n] = self.ids[: self.n]
            matrix[: self.n] = self.matrix[: self.n]
            codes[: self.n] = self.codes[: self.n]
            scales[: self.n] = self.scales[: self.n]
            self.ids, self.matrix, self.codes, self.scales = ids, matrix, codes, scales
        rows = np.arange(self.n, need, dtype=np.int64)
        if items:
            self.ids[rows] = [chunk_id for chunk_id, _ in items]
            vectors = np.frombuffer(b"".join(v for _, v in items), dtype=np.float32).reshape(-1, self.dim)
            self.matrix[rows] = vectors
            self.codes[rows], self.scales[rows] = quantize(vectors)
        self.n = need
        return rows

    def compact(self, keep: list[tuple[int, str, str, str]], selected: np.ndarray) -> np.ndarray:
        """Keep only the rows of `keep` (and `selected`, the current revision's); returns selected renumbered."""
        order = np.unique(np.concatenate([selected, *(self.rows[key] for key in keep)]))
        renumber = np.full(self.n, -1, dtype=np.int64)
        renumber[order] = np.arange(len(order), dtype=np.int64)
        self.ids = self.ids[order]
        self.matrix = self.matrix[order]
        self.codes = self.codes[order]
        self.scales = self.scales[order]
        self.n = len(order)
        self.rows = {key: renumber[self.rows[key]] for key in keep}
        return renumber[selected]


def quantize(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 codes of float32 rows, each scaled by its own largest component, and those scales."""
    scales = np.abs(vectors).max(axis=1) / 127.0
    scales[scales == 0] = 1.0
    codes = np.rint(vectors / scales[:, None]).astype(np.int8)
    return codes, scales.astype(np.float32)


def _fact_join(name: str | None, path: str | None) -> str:
    """How facts meet the manifest: by a name, facts first (their name index, then one manifest
    probe each; CROSS JOIN fixes that order); by a path, the path's manifest row first."""
    if path is not None:
        return "JOIN manifest m"
    return f"{'CROSS ' if name is not None else ''}JOIN manifest m INDEXED BY manifest_by_revision"


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


def _covered_key(rev_no: int, model: str) -> str:
    return f"covered:{rev_no}:{model}"


def _move_rows(
    db: sqlite3.Connection, source: str, target: str, rowids: str, args: tuple[object, ...]
) -> None:
    """Move the lexical rows of the chunks the rowids query selects from one FTS table to the other
    (those the source does not hold are left alone)."""
    ids = db.execute(rowids, args).fetchall()
    db.executemany(
        f"INSERT INTO {target} (rowid, body, symbol) SELECT rowid, body, symbol FROM {source} WHERE rowid = ?",
        ids,
    )
    db.executemany(f"DELETE FROM {source} WHERE rowid = ?", ids)


def dedupe_key(e: DriftEvent) -> str:
    """One key per (revision, path, change, old content, new content): who saw it does not matter."""
    raw = f"{e.rev}\0{e.path}\0{e.change}\0{e.old_sha256 or ''}\0{e.new_sha256 or ''}"
    return hashlib.sha1(raw.encode("utf-8", errors="surrogateescape")).hexdigest()


def _entry(row: tuple) -> DriftEntry:  # type: ignore[type-arg]
    closed = row[11] if len(row) > 11 else None
    return DriftEntry(
        row[0],
        row[1],
        row[2],
        row[3],
        row[4],
        row[5],
        row[6],
        row[7],
        json.loads(row[8]),
        json.loads(row[9]),
        row[10],
        closed,
    )


def _statements(script: str) -> list[str]:
    """Split a migration script into statements (executescript would commit our transaction)."""
    return [s.strip() for s in script.split(";") if s.strip()]
