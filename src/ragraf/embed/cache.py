"""The machine-wide, content-addressed embedding cache: key = sha256(model_id NUL text).

One SQLite file in WAL mode: readers never wait, writers queue on busy_timeout, and a
crash mid-write leaves the last committed vectors intact. Shared by every index on the
machine, so an identical file at a second path, worktree or repository is never re-embedded.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

if TYPE_CHECKING:
    from ragraf.config import Settings

log = logging.getLogger(__name__)

CACHE_FILE = "embeddings.sqlite3"
SCHEMA_VERSION = 1  # PRAGMA user_version; a new layout gets a new number and a migration here
_SCHEMA = """
CREATE TABLE IF NOT EXISTS models (
    id INTEGER PRIMARY KEY,
    model_id TEXT NOT NULL UNIQUE
);
CREATE TABLE IF NOT EXISTS vectors (
    key BLOB PRIMARY KEY,            -- sha256(model_id || NUL || text)
    model INTEGER NOT NULL REFERENCES models(id),
    vector BLOB NOT NULL,            -- float32, little-endian
    created_at INTEGER NOT NULL      -- unix seconds
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS vectors_by_model ON vectors(model, created_at);
"""
_CHUNK = 500  # bound parameters per statement, well under SQLite's limit


def cache_key(model_id: str, text: str) -> bytes:
    """The content address of one (model, text) pair."""
    return hashlib.sha256(f"{model_id}\0{text}".encode("utf-8", "surrogatepass")).digest()


def default_cache_dir(settings: Settings | None = None) -> Path:
    """settings.cache_dir (RAGRAF_CACHE_DIR), else $XDG_CACHE_HOME/ragraf, else ~/.cache/ragraf."""
    if settings is not None and settings.cache_dir:
        return Path(settings.cache_dir).expanduser()
    if os.environ.get("RAGRAF_CACHE_DIR"):
        return Path(os.environ["RAGRAF_CACHE_DIR"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "ragraf"


@dataclass(frozen=True)
class ModelStats:
    """What the cache holds for one model."""

    model_id: str
    vectors: int
    bytes: int


@dataclass(frozen=True)
class CacheStats:
    """What the cache holds, per model, and where."""

    path: str
    enabled: bool
    vectors: int
    file_bytes: int
    models: tuple[ModelStats, ...]


class VectorCache(Protocol):
    """What the pipeline needs from a cache; EmbeddingCache and NullCache provide it."""

    def get_many(self, model_id: str, texts: list[str]) -> list[np.ndarray | None]: ...

    def put_many(self, model_id: str, texts: list[str], vectors: list[np.ndarray] | np.ndarray) -> None: ...

    def stats(self) -> CacheStats: ...


class NullCache:
    """RAGRAF_CACHE=0: remembers nothing, so every text is computed."""

    def get_many(self, model_id: str, texts: list[str]) -> list[np.ndarray | None]:
        """A miss for every text."""
        return [None] * len(texts)

    def put_many(self, model_id: str, texts: list[str], vectors: list[np.ndarray] | np.ndarray) -> None:
        """Forget the vectors."""

    def stats(self) -> CacheStats:
        """An empty, disabled cache."""
        return CacheStats(path="", enabled=False, vectors=0, file_bytes=0, models=())

    def prune(self, models: list[str] | None = None, older_than_days: float | None = None) -> int:
        """Nothing to remove."""
        return 0


def _ensure_wal(conn: sqlite3.Connection, patience_s: float) -> None:
    """Switch to WAL once; two processes creating the cache at the same instant may see "database is
    locked" from the switch itself (SQLite does not always wait for it), so wait and retry."""
    deadline = time.monotonic() + patience_s
    delay = 0.01
    while True:
        try:
            if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.5)


class EmbeddingCache:
    """Vectors by content address in <directory>/embeddings.sqlite3, safe across processes."""

    def __init__(self, directory: Path, busy_timeout_s: float = 60.0) -> None:
        self.directory = Path(directory)
        self.path = self.directory / CACHE_FILE
        self.busy_timeout_s = busy_timeout_s
        self._conn: sqlite3.Connection | None = None
        self._pid = 0
        self._lock = threading.RLock()
        self._model_ids: dict[str, int] = {}

    def _connect(self) -> sqlite3.Connection:
        # One connection per process (a forked child must not share its parent's).
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        self.directory.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(
            self.path, timeout=self.busy_timeout_s, isolation_level=None, check_same_thread=False
        )
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_s * 1000)}")
            _ensure_wal(conn, self.busy_timeout_s)
            # WAL + NORMAL: a power cut may lose the last batch, never corrupt the file.
            conn.execute("PRAGMA synchronous = NORMAL")
            if conn.execute("PRAGMA user_version").fetchone()[0] < SCHEMA_VERSION:
                with _write(conn):  # only the first opener takes the write lock
                    _create(conn)
                    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except BaseException:
            conn.close()
            raise
        self._conn, self._pid, self._model_ids = conn, os.getpid(), {}
        return conn

    def _model(self, conn: sqlite3.Connection, model_id: str, create: bool) -> int | None:
        if model_id in self._model_ids:
            return self._model_ids[model_id]
        if create:
            conn.execute("INSERT OR IGNORE INTO models(model_id) VALUES (?)", (model_id,))
        row = conn.execute("SELECT id FROM models WHERE model_id = ?", (model_id,)).fetchone()
        if row is None:
            return None
        self._model_ids[model_id] = row[0]
        return row[0]

    def get_many(self, model_id: str, texts: list[str]) -> list[np.ndarray | None]:
        """The cached vector of each text, or None, in the order of texts."""
        keys = [cache_key(model_id, t) for t in texts]
        found: dict[bytes, bytes] = {}
        with self._lock:
            conn = self._connect()
            unique = list(dict.fromkeys(keys))
            for i in range(0, len(unique), _CHUNK):
                part = unique[i : i + _CHUNK]
                marks = ",".join("?" * len(part))
                found.update(conn.execute(f"SELECT key, vector FROM vectors WHERE key IN ({marks})", part))
        return [np.frombuffer(found[k], dtype="<f4") if k in found else None for k in keys]

    def put_many(self, model_id: str, texts: list[str], vectors: list[np.ndarray] | np.ndarray) -> None:
        """Store vectors for texts in one transaction; an existing entry is left as it is."""
        if len(texts) != len(vectors):
            raise ValueError(f"{len(texts)} texts but {len(vectors)} vectors")
        if not texts:
            return
        now = int(time.time())
        with self._lock:
            conn = self._connect()
            with _write(conn):
                model = self._model(conn, model_id, create=True)
                conn.executemany(
                    "INSERT OR IGNORE INTO vectors(key, model, vector, created_at) VALUES (?, ?, ?, ?)",
                    [
                        (cache_key(model_id, t), model, np.asarray(v, dtype="<f4").tobytes(), now)
                        for t, v in zip(texts, vectors, strict=True)
                    ],
                )

    def probe(self) -> None:
        """Open the file and read a row: raises DatabaseError when it is not a cache any more (cheap,
        unlike stats(), which walks every vector)."""
        with self._lock:
            conn = self._connect()
            conn.execute(
                "SELECT m.id, v.key FROM models m LEFT JOIN vectors v ON v.model = m.id LIMIT 1"
            ).fetchall()

    def stats(self) -> CacheStats:
        """Counts and sizes per model."""
        with self._lock:
            conn = self._connect()
            rows = conn.execute(
                "SELECT m.model_id, count(v.key), coalesce(sum(length(v.vector)), 0)"
                " FROM models m LEFT JOIN vectors v ON v.model = m.id GROUP BY m.id ORDER BY m.model_id"
            ).fetchall()
        size = sum(p.stat().st_size for p in self.directory.glob(CACHE_FILE + "*") if p.is_file())
        models = tuple(ModelStats(model_id=r[0], vectors=r[1], bytes=r[2]) for r in rows if r[1])
        return CacheStats(
            path=str(self.path),
            enabled=True,
            vectors=sum(m.vectors for m in models),
            file_bytes=size,
            models=models,
        )

    def prune(self, models: list[str] | None = None, older_than_days: float | None = None) -> int:
        """Delete the vectors of the given models and/or those stored before the cutoff; returns how many."""
        if models is None and older_than_days is None:
            return 0
        clauses, params = [], []
        if models is not None:
            clauses.append(
                f"model IN (SELECT id FROM models WHERE model_id IN ({','.join('?' * len(models))}))"
            )
            params.extend(models)
        if older_than_days is not None:
            clauses.append("created_at < ?")
            params.append(int(time.time() - older_than_days * 86400))
        with self._lock:
            conn = self._connect()
            with _write(conn):
                removed = conn.execute(f"DELETE FROM vectors WHERE {' AND '.join(clauses)}", params).rowcount
                conn.execute("DELETE FROM models WHERE id NOT IN (SELECT DISTINCT model FROM vectors)")
            self._model_ids = {}
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            conn.execute("VACUUM")
        return removed

    def close(self) -> None:
        """Close this process's connection."""
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None


class _write:
    """BEGIN IMMEDIATE … COMMIT: take the write lock up front so two writers queue, not deadlock."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, exc_type: object, *_: object) -> None:
        self.conn.execute("ROLLBACK" if exc_type else "COMMIT")


def _create(conn: sqlite3.Connection) -> None:
    for statement in _SCHEMA.split(";"):
        if statement.strip():
            conn.execute(statement)


def open_cache(settings: Settings) -> EmbeddingCache | NullCache:
    """The cache the settings ask for: NullCache when cache = false (RAGRAF_CACHE=0)."""
    if not settings.cache:
        return NullCache()
    cache = EmbeddingCache(default_cache_dir(settings))
    for attempt in range(2):
        try:
            cache.probe()
            return cache
        except sqlite3.DatabaseError as exc:
            if attempt or isinstance(exc, sqlite3.OperationalError):
                break
            # Not a database any more: it is only a cache, so set it aside and start afresh.
            cache.close()
            aside = cache.path.with_name(f"{CACHE_FILE}.corrupt-{int(time.time())}")
            log.warning("embedding cache %s is corrupt (%s); moved to %s", cache.path, exc, aside)
            cache.path.replace(aside)
            for suffix in ("-wal", "-shm"):
                Path(f"{cache.path}{suffix}").unlink(missing_ok=True)
        except OSError as exc:
            log.warning("embedding cache %s unusable (%s); continuing without a cache", cache.path, exc)
            return NullCache()
    # Degrade, don't die: without a cache everything still works, only slower.
    log.warning("embedding cache %s unusable; continuing without a cache", cache.path)
    return NullCache()
