"""Opening the SQLite index file: its checks and migrations, transactions, damage and closing."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from ragraf.errors import IndexCorruptError, IndexMissingError, RagrafError, StoreError
from ragraf.store.sqlite.bulk import restore_indexes
from ragraf.store.sqlite.integrity import keep_sealed, sealed_identity
from ragraf.store.sqlite.migrations import APPLICATION_ID, COMPACT_FROM, MIGRATIONS
from ragraf.store.sqlite.sql import pack_text, rebuild_lexical
from ragraf.tokens import INDEX_TEXT_VERSION

if TYPE_CHECKING:
    from ragraf.store.sqlite.vectors import VectorRows


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


class ConnectionBase:
    """The open file of SqliteStore: its schema checked and migrated, transactions, damage checks."""

    def __init__(self, path: Path, create: bool = False, view: str = "", label: str = "") -> None:
        self.path = path
        self.view = view
        self.label = label
        self._vector_rows: dict[tuple[str, int], VectorRows] = {}
        self._covered: set[tuple[int, str]] = set()
        self._coverage_seen: dict[tuple[int, str], tuple[tuple[int, int], float]] = {}  # vectors.py
        if not path.exists() and not create:
            raise IndexMissingError(
                f"no index yet for this folder (looked for {path})", suggest="run `ragraf index` first"
            )
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.db = sqlite3.connect(path, timeout=60, isolation_level=None, check_same_thread=False)
            self.db.execute("PRAGMA busy_timeout = 60000")
            self.db.create_function("ragraf_pack_text", 1, pack_text, deterministic=True)
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
            if version == 0:  # before the first table: free pages can then go back to the disk
                self.db.execute("PRAGMA auto_vacuum = INCREMENTAL")
            self.db.execute("PRAGMA journal_mode = WAL")
            with self.transaction():
                if version:
                    restore_indexes(self.db)  # a killed first index deferred them: as the schema says first
                for number in range(version, len(MIGRATIONS)):
                    for statement in _statements(MIGRATIONS[number]):
                        self.db.execute(statement)
                self.db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                self.db.execute(f"PRAGMA user_version = {len(MIGRATIONS)}")
            if 0 < version < COMPACT_FROM:
                self._compact()
        made = self.db.execute("SELECT value FROM meta WHERE key = 'lexical_body'").fetchone()
        if made is not None and made[0] != INDEX_TEXT_VERSION:
            with self.transaction() as db:
                rebuild_lexical(db)
        self.db.execute("PRAGMA synchronous = NORMAL")
        self.db.execute("PRAGMA cache_size = -65536")  # 64 MiB: bulk inserts into FTS and indexes
        self.db.execute("PRAGMA temp_store = MEMORY")

    def _compact(self) -> None:
        """Rewrite the file without its free pages (what schema 10 freed), in auto_vacuum =
        INCREMENTAL from then on; skipped when it cannot run now (another process is writing, or
        the disk lacks room for the copy): the free pages are then reused by later writes."""
        try:
            self.db.execute("PRAGMA auto_vacuum = INCREMENTAL")
            self.db.execute("VACUUM")
        except sqlite3.OperationalError:
            pass

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE .. COMMIT; rolled back on any exception. Our own commits keep a sealed file
        sealed (integrity.py): a read that revises the guard's snapshot must not cost the next index
        run a read of every page (a commit may checkpoint the log into the file)."""
        self.db.execute("BEGIN IMMEDIATE")
        sealed = sealed_identity(self.path)  # no other writer now
        try:
            yield self.db
        except BaseException:
            if self.db.in_transaction:  # a full disk rolls back by itself: keep its error, not ROLLBACK's
                self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")
        keep_sealed(self.path, sealed)

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

    def close(self) -> None:
        # The last connection to close checkpoints the log into the file, whoever wrote it: a
        # long-lived server's reads close many (ragraf serve --socket-only).
        sealed = sealed_identity(self.path)
        self.db.close()
        keep_sealed(self.path, sealed)


def _statements(script: str) -> list[str]:
    """Split a migration script into statements (executescript would commit our transaction)."""
    return [s.strip() for s in script.split(";") if s.strip()]
