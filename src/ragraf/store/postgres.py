"""The PostgreSQL + pgvector store: many repositories in one database, behind the SQLite store's contract.

Readers see the last committed revision (MVCC); one writer per repository holds an advisory lock;
a revision, its manifest and the ledger's archive commit in one transaction. Lexical search is
BM25 computed in SQL over a tsvector (GIN); vector search is cosine over pgvector (HNSW).
"""

from __future__ import annotations

import datetime as dt
import functools
import itertools
import json
import math
import os
import re
import socket
import threading
import time
import unicodedata
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool, PoolTimeout

from ragraf.errors import ConfigError, IndexMissingError, LockHeldError, StoreError
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
from ragraf.store.postgres_migrations import BOOTSTRAP, MIGRATIONS, SCHEMA, TS_CONFIG
from ragraf.store.sqlite import dedupe_key

T = TypeVar("T")

# Advisory lock keys (classid, objid): "RAGF" + a purpose, objid = repository / model id.
LOCK_WRITER = 0x52414746
LOCK_SCHEMA = 0x52414700
LOCK_VECTOR_INDEX = 0x52414701

# BM25 as SQLite's FTS5 computes it (k1, b, body weight 1, symbol weight 4), so both stores rank alike.
BM25_K1 = 1.2
BM25_B = 0.75
# Postings the first lexical pass may score; more only when they could change the top results.
LEXICAL_CANDIDATES = 2000
# Below this many chunks in a revision an exact scan is fast and exact like SQLite's; above it HNSW.
EXACT_VECTOR_MAX = 20_000
# Checkouts (machine and root) whose file stats a repository keeps: the latest writers.
KEEP_CHECKOUTS = 20
# A checkout's guard snapshot, prefixed with the revision it was written at (8 bytes, big-endian).
SET_SNAPSHOT = (
    "INSERT INTO meta (repo_id, key, value) SELECT %s, %s, int8send(coalesce(max(rev_no), 0)::bigint) || %s "
    "FROM revisions WHERE repo_id = %s ON CONFLICT (repo_id, key) DO UPDATE SET value = excluded.value"
)
# Tokens longer than this are base64 or minified noise; PostgreSQL would refuse words over 2 KiB.
_MAX_TOKEN = 500

_REVISION_COLUMNS = "rev_no, rev, corpus_hash, created_at, index_version, git_head, git_branch, files, chunks"
_LEDGER_COLUMNS = (
    "entry_id, rev, change, path, detected_by, detected_at, old_sha256, new_sha256, affected_nodes, "
    "affected_symbols, dedupe_key"
)
_TOKEN = re.compile(r"[^\W_]+")
_KEEP = "0zq0"
_QUOTED = re.compile(r'"((?:[^"]|"")*)"')
_FTS_KEYWORDS = frozenset({"OR", "AND", "NOT", "NEAR"})
_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_ASCII_LOWER = str.maketrans(_UPPER, _UPPER.lower())


# tokens ------------------------------------------------------------------------------------


def lex_tokens(text: str) -> list[str]:
    """Tokens as FTS5's unicode61 makes them: runs of letters and digits, lower case, no diacritics."""
    if not text.isascii():
        text = "".join(ch for ch in unicodedata.normalize("NFD", text) if not unicodedata.combining(ch))
        text = unicodedata.normalize("NFC", text)
    return [_unstemmed(t) for t in _TOKEN.findall(text.lower()) if len(t) <= _MAX_TOKEN]


def _unstemmed(token: str) -> str:
    """The token as the index stores it: marked unstemmable where FTS5's Porter stemmer skips it."""
    # FTS5 leaves tokens under 3 or over 64 bytes alone; PostgreSQL's stemmer would not ("os" ->
    # "o"). A suffix ending in a digit matches no Porter rule and no real token.
    size = len(token.encode())
    if (size < 3 or size > 64) and not token.isdigit():
        return token + _KEEP
    return token


def match_terms(match: str) -> list[str]:
    """tsquery operands ('a <-> b' for a phrase) of an FTS5 MATCH string from tokens.fts_match, or of plain words."""
    quoted = [m.group(1).replace('""', '"') for m in _QUOTED.finditer(match)]
    terms = quoted or [w for w in match.split() if w not in _FTS_KEYWORDS]
    # Only letters and digits survive lex_tokens, so no operand can carry tsquery syntax.
    operands = [" <-> ".join(lex_tokens(term)) for term in terms]
    return [op for op in operands if op]


def _clean(text: str | None) -> str | None:
    """PostgreSQL text cannot hold NUL; SQLite can. Replace it rather than fail a whole batch."""
    if text is None or "\x00" not in text:
        return text
    return text.replace("\x00", "\ufffd")


# connection details -----------------------------------------------------------------------


def describe_dsn(dsn: str) -> tuple[str, str]:
    """(HOST:PORT, database) of a DSN, with libpq's defaults, for messages; never the password."""
    try:
        params = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        params = {}
    host = str(params.get("host") or params.get("hostaddr") or os.environ.get("PGHOST") or "localhost")
    port = str(params.get("port") or os.environ.get("PGPORT") or "5432")
    db = str(params.get("dbname") or os.environ.get("PGDATABASE") or params.get("user") or "")
    return f"{host}:{port}", db


def _connection_lost(exc: BaseException) -> bool:
    """True when the connection itself failed (server down or restarted), not the statement."""
    if isinstance(exc, psycopg.InterfaceError):
        return True
    state = getattr(exc, "sqlstate", None)
    return isinstance(exc, psycopg.OperationalError) and (
        state is None or state.startswith("08") or state in ("57P01", "57P02", "57P03")
    )


class PostgresStore:
    """Store protocol over PostgreSQL with pgvector; one instance serves one repository (repo_key)."""

    def __init__(
        self,
        dsn: str,
        repo_key: str,
        create: bool = False,
        *,
        pool_size: int = 8,
        connect_timeout_s: float = 5.0,
        statement_timeout_s: float = 120.0,
        checkout: str = "",
    ) -> None:
        if not dsn.strip():
            raise ConfigError(
                "the PostgreSQL store needs a connection string",
                suggest="set RAGRAF_PG_DSN, e.g. postgresql://user@host:5432/ragraf",
            )
        self.dsn = dsn
        self.repo_key = repo_key
        self.checkout = checkout or checkout_name(Path.cwd())
        self.where, self.database = describe_dsn(dsn)
        self.connect_timeout_s = connect_timeout_s
        self.statement_timeout_s = statement_timeout_s
        self._search_path = SCHEMA
        self._models: dict[tuple[str, int], int] = {}
        self._indexed_models: set[int] = set()
        self._covered: set[tuple[int, str]] = set()
        self._rev_chunks: dict[int, int] = {}
        self._hnsw_pool: ConnectionPool | None = None
        self._hnsw_searched = False
        self._hnsw_ef: weakref.WeakKeyDictionary[psycopg.Connection, int] = weakref.WeakKeyDictionary()
        self._pool_lock = threading.Lock()
        conn = self._connect()
        try:
            self._prepare_schema(conn, create)
            self.repo_id = self._repository(conn, create)
        except psycopg.Error as exc:
            raise self._translate(exc) from None
        finally:
            conn.close()
        self.pool = self._new_pool(max(1, pool_size), self._configure, "")

    def _new_pool(
        self, size: int, configure: Callable[[psycopg.Connection], None], role: str
    ) -> ConnectionPool:
        return ConnectionPool(
            self.dsn,
            kwargs=self._connect_kwargs(),
            min_size=1,
            max_size=size,
            configure=configure,
            timeout=self.connect_timeout_s * 2,
            name=f"ragraf{role}:{self.repo_key}"[:60],
            open=True,
        )

    # connections ------------------------------------------------------------------------------

    def _connect_kwargs(self, application: str = "ragraf") -> dict[str, Any]:
        # Auto-prepared statements would get generic plans that cannot match a partial HNSW index.
        return {
            "autocommit": True,
            "connect_timeout": max(1, int(self.connect_timeout_s)),
            "application_name": application[:63],
            "prepare_threshold": None,
            "keepalives": 1,
        }

    def _configure(self, conn: psycopg.Connection) -> None:
        from pgvector.psycopg import register_vector

        # Searches run many at once: a parallel plan per query would only add worker start-ups.
        conn.execute(
            "SELECT set_config('search_path', %s, false), set_config('statement_timeout', %s, false), "
            "set_config('idle_in_transaction_session_timeout', %s, false), "
            "set_config('max_parallel_workers_per_gather', '0', false)",
            (self._search_path, f"{int(self.statement_timeout_s * 1000)}", "300000"),
        )
        register_vector(conn)

    def _configure_hnsw(self, conn: psycopg.Connection) -> None:
        # Only HNSW searches run here, so their settings hold for the session. enable_sort off:
        # the only ordered path left is the HNSW index, whatever the statistics say; iterative
        # scanning walks the graph until enough neighbours pass the revision test.
        self._configure(conn)
        conn.execute(
            "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', false), "
            "set_config('enable_sort', 'off', false)"
        )

    def _hnsw_connections(self) -> ConnectionPool:
        """The pool for HNSW searches after a process's first: settings made once per connection,
        not per search (a transaction around SET LOCAL cost ~0.6 ms of client and server CPU each)."""
        with self._pool_lock:
            if self._hnsw_pool is None:
                self._hnsw_pool = self._new_pool(self.pool.max_size, self._configure_hnsw, "-hnsw")
            return self._hnsw_pool

    def _connect(self, application: str = "ragraf") -> psycopg.Connection:
        """A connection outside the pool (schema setup, the writer lock), errors made actionable."""
        try:
            return psycopg.connect(self.dsn, **self._connect_kwargs(application))
        except psycopg.Error as exc:
            raise self._translate(exc) from None

    def _unreachable(self, detail: str) -> StoreError:
        low = detail.lower()
        first = detail.strip().splitlines()[0] if detail.strip() else "no answer"
        if "refused" in low or "no such file or directory" in low:
            return StoreError(
                f"PostgreSQL at {self.where} refused the connection; start it or check RAGRAF_PG_DSN",
                suggest="start the PostgreSQL server, or point RAGRAF_PG_DSN at a running one",
            )
        if "timeout" in low or "timed out" in low:
            return StoreError(
                f"PostgreSQL at {self.where} did not answer within {self.connect_timeout_s:g} s; "
                "check the host, the network and RAGRAF_PG_DSN",
                suggest="check that the server is up and reachable from this machine",
            )
        if "password" in low or "authentication" in low or ("role" in low and "does not exist" in low):
            return StoreError(
                f"PostgreSQL at {self.where} rejected the login ({first})",
                suggest="check the user and password in RAGRAF_PG_DSN (or ~/.pgpass)",
            )
        if "database" in low and "does not exist" in low:
            return StoreError(
                f"PostgreSQL at {self.where} has no database {self.database!r}",
                suggest=f"create it (createdb {self.database}) or fix the database name in RAGRAF_PG_DSN",
            )
        return StoreError(
            f"cannot use PostgreSQL at {self.where}: {first}",
            suggest="check that the server runs and that RAGRAF_PG_DSN is right",
        )

    def _translate(self, exc: BaseException) -> StoreError:
        """A psycopg or pool error as a StoreError that says what to do."""
        if isinstance(exc, PoolTimeout):
            # The pool only says it waited; a direct attempt tells refused from slow.
            try:
                psycopg.connect(self.dsn, **self._connect_kwargs()).close()
            except psycopg.Error as probe:
                return self._unreachable(str(probe))
            return StoreError(
                f"no free connection to PostgreSQL at {self.where} within {self.connect_timeout_s * 2:g} s",
                suggest="the server or the pool is saturated; retry, or raise max_connections",
            )
        if _connection_lost(exc):
            return self._unreachable(str(exc))
        if isinstance(exc, psycopg.errors.QueryCanceled):
            return StoreError(
                f"a PostgreSQL statement at {self.where} ran past {self.statement_timeout_s:g} s and was cancelled",
                suggest="retry; if it persists the server is overloaded or the index needs VACUUM ANALYZE",
            )
        if isinstance(exc, psycopg.errors.InsufficientPrivilege):
            return StoreError(
                f"PostgreSQL at {self.where} refused an operation: {str(exc).strip().splitlines()[0]}",
                suggest="grant this user rights on the ragraf schema, or use a user that owns it",
            )
        return StoreError(
            f"PostgreSQL at {self.where} failed: {str(exc).strip().splitlines()[0] if str(exc).strip() else exc!r}",
            suggest="see the server log; run the command again",
        )

    def _recover(self) -> None:
        """After a lost connection: fail at once if the server is down, else replace the pool's dead ones."""
        try:
            psycopg.connect(self.dsn, **self._connect_kwargs()).close()
        except psycopg.Error as exc:
            raise self._unreachable(str(exc)) from None
        for pool in (self.pool, self._hnsw_pool):
            if pool is not None:
                pool.check()

    def _read(self, run: Callable[[psycopg.Connection], T], pool: ConnectionPool | None = None) -> T:
        """Run a read; a connection lost to a server restart is retried once on a fresh one."""
        for attempt in (1, 2):
            try:
                with (pool or self.pool).connection() as conn:
                    return run(conn)
            except (psycopg.Error, PoolTimeout) as exc:
                if attempt == 1 and _connection_lost(exc):
                    self._recover()
                    continue
                raise self._translate(exc) from None
        raise AssertionError("unreachable")

    def _rows(
        self, query: str | sql.Composable, params: Sequence[object] | dict[str, object] = ()
    ) -> list[tuple[Any, ...]]:
        return self._read(lambda conn: conn.execute(query, params).fetchall())  # type: ignore[arg-type]

    def _live_connection(self) -> psycopg.Connection:
        """A pooled connection that has just answered; a dead one (server restart) is replaced once."""
        for attempt in (1, 2):
            conn = self.pool.getconn()
            try:
                conn.execute("SELECT 1")
                return conn
            except psycopg.Error as exc:
                self.pool.putconn(conn)
                if attempt == 2 or not _connection_lost(exc):
                    raise
                self._recover()
        raise AssertionError("unreachable")

    @contextmanager
    def _tx(self, write: bool = True) -> Iterator[psycopg.Connection]:
        """A pooled connection inside one transaction: committed whole, or rolled back on any error."""
        try:
            conn = self._live_connection()
        except (psycopg.Error, PoolTimeout) as exc:
            raise self._translate(exc) from None
        try:
            with conn.transaction():
                if write:
                    # The statement timeout guards readers; a big batch into an HNSW graph may take
                    # minutes, and cutting it would only make the indexer start over.
                    conn.execute("SELECT set_config('statement_timeout', '0', true)")
                yield conn
        except (psycopg.Error, PoolTimeout) as exc:
            raise self._translate(exc) from None
        finally:
            self.pool.putconn(conn)

    def _row(self, query: str, params: Sequence[object] | dict[str, object] = ()) -> tuple[Any, ...] | None:
        rows = self._rows(query, params)
        return rows[0] if rows else None

    # schema -------------------------------------------------------------------------------------

    def _prepare_schema(self, conn: psycopg.Connection, create: bool) -> None:
        """Check pgvector, then create or migrate the schema; DDL only when something is missing."""
        version = 0
        if conn.execute("SELECT to_regclass('ragraf.schema_version')").fetchone()[0]:  # type: ignore[index]
            row = conn.execute("SELECT coalesce(max(version), 0) FROM ragraf.schema_version").fetchone()
            version = int(row[0]) if row else 0
        if version == 0 and not create:
            raise IndexMissingError(
                f"no ragraf index in PostgreSQL at {self.where}/{self.database} yet",
                suggest="run `ragraf index` first (it creates the schema)",
            )
        ext_schema = self._ensure_vector(conn)
        self._search_path = f'{SCHEMA}, "{ext_schema}"' if ext_schema != SCHEMA else SCHEMA
        if version > len(MIGRATIONS):
            raise StoreError(
                f"the index schema in PostgreSQL at {self.where} was written by a newer ragraf (schema {version})",
                suggest="upgrade ragraf on this machine",
            )
        if version < len(MIGRATIONS):
            self._migrate(conn)
        conn.execute("SELECT set_config('search_path', %s, false)", (self._search_path,))

    def _ensure_vector(self, conn: psycopg.Connection) -> str:
        """The schema holding the vector extension; created here when allowed, else an actionable error."""
        found = conn.execute(
            "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
            "WHERE e.extname = 'vector'"
        ).fetchone()
        if found:
            return str(found[0])
        available = conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone()
        if not available:
            raise StoreError(
                f"the pgvector extension is not installed on the PostgreSQL server at {self.where}",
                suggest="install pgvector on the server (package postgresql-NN-pgvector, or build it), "
                f"then run CREATE EXTENSION vector as a superuser in database {self.database}",
            )
        try:
            with conn.transaction():
                # Two first runs would both try; IF NOT EXISTS alone does not survive that race.
                conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (LOCK_SCHEMA,))
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except psycopg.errors.InsufficientPrivilege:
            raise StoreError(
                f"the vector extension is missing in database {self.database!r} at {self.where}, "
                "and this user may not create it",
                suggest=f"run CREATE EXTENSION vector as a superuser in database {self.database}, "
                "or install pgvector",
            ) from None
        return self._ensure_vector(conn)

    def _migrate(self, conn: psycopg.Connection) -> None:
        """Apply the missing numbered migrations under a lock, so two first runs cannot race."""
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (LOCK_SCHEMA,))
            conn.execute("SELECT set_config('statement_timeout', '0', true)")
            conn.execute(BOOTSTRAP)
            conn.execute("SELECT set_config('search_path', %s, true)", (self._search_path,))
            version = conn.execute("SELECT coalesce(max(version), 0) FROM ragraf.schema_version").fetchone()
            for number in range((version or (0,))[0], len(MIGRATIONS)):
                conn.execute(MIGRATIONS[number])
                conn.execute("INSERT INTO ragraf.schema_version (version) VALUES (%s)", (number + 1,))

    def _repository(self, conn: psycopg.Connection, create: bool) -> int:
        row = conn.execute("SELECT id FROM repositories WHERE key = %s", (self.repo_key,)).fetchone()
        if row is None and create:
            conn.execute(
                "INSERT INTO repositories (key) VALUES (%s) ON CONFLICT (key) DO NOTHING", (self.repo_key,)
            )
            row = conn.execute("SELECT id FROM repositories WHERE key = %s", (self.repo_key,)).fetchone()
        if row is None:
            raise IndexMissingError(
                f"no index yet for {self.repo_key} in PostgreSQL at {self.where}/{self.database}",
                suggest="run `ragraf index` first",
            )
        return int(row[0])

    # the writer lock ---------------------------------------------------------------------------

    @contextmanager
    def writer_lock(self, wait: bool = True, timeout_s: float = 600.0) -> Iterator[None]:
        """One writer per repository: a session advisory lock, freed by the server if the holder dies."""
        name = f"ragraf writer pid {os.getpid()} on {socket.gethostname()}"
        conn = self._connect(name)
        try:
            deadline = time.monotonic() + timeout_s
            while not self._try_lock(conn):
                if not wait or time.monotonic() > deadline:
                    raise LockHeldError(
                        f"another indexer holds the index lock of {self.repo_key}: {self._lock_holder(conn)}",
                        suggest="wait for it to finish, or run without --no-wait to queue behind it",
                    )
                time.sleep(0.1)
            try:
                yield
            finally:
                if not conn.closed:
                    conn.execute("SELECT pg_advisory_unlock(%s, %s)", (LOCK_WRITER, self.repo_id))
        except psycopg.Error as exc:
            raise self._translate(exc) from None
        finally:
            conn.close()

    def _try_lock(self, conn: psycopg.Connection) -> bool:
        row = conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (LOCK_WRITER, self.repo_id)).fetchone()
        return bool(row and row[0])

    def _lock_holder(self, conn: psycopg.Connection) -> str:
        row = conn.execute(
            "SELECT a.pid, a.application_name, a.client_addr::text, a.backend_start FROM pg_locks l "
            "LEFT JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted "
            "AND l.classid = %s::oid AND l.objid = %s::oid AND l.objsubid = 2 LIMIT 1",
            (LOCK_WRITER, self.repo_id),
        ).fetchone()
        if row is None:
            return "another process"
        pid, app, addr, since = row
        who = app or f"server pid {pid}"
        when = since.isoformat(timespec="seconds") if since else "?"
        return f"{who} (from {addr or 'a local socket'}, since {when})"

    # revisions ----------------------------------------------------------------------------------

    def current_revision(self) -> Revision | None:
        row = self._row(
            f"SELECT {_REVISION_COLUMNS} FROM revisions WHERE repo_id = %s ORDER BY rev_no DESC LIMIT 1",
            (self.repo_id,),
        )
        return Revision(*row) if row else None

    def revisions(self) -> list[Revision]:
        rows = self._rows(
            f"SELECT {_REVISION_COLUMNS} FROM revisions WHERE repo_id = %s ORDER BY rev_no", (self.repo_id,)
        )
        return [Revision(*row) for row in rows]

    def revision(self, name: str) -> Revision | None:
        row = self._row(
            f"SELECT {_REVISION_COLUMNS} FROM revisions WHERE repo_id = %s AND rev = %s", (self.repo_id, name)
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
                f"INSERT INTO revisions (repo_id, {_REVISION_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (self.repo_id, *_revision_values(rev)),
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

    def _archive_ledger(self, conn: psycopg.Connection, closer: str, at: str) -> None:
        # DELETE .. RETURNING moves exactly the rows it removes: an entry a reader registers meanwhile
        # stays open for the next revision instead of vanishing between a copy and a delete.
        conn.execute(
            "WITH moved AS (DELETE FROM drift_ledger WHERE repo_id = %s RETURNING *) "
            "INSERT INTO drift_archive (repo_id, entry_id, rev, change, path, detected_by, detected_at, "
            "old_sha256, new_sha256, affected_nodes, affected_symbols, dedupe_key, closed_by, archived_at) "
            f"SELECT repo_id, {_LEDGER_COLUMNS}, %s, %s FROM moved ORDER BY entry_id ON CONFLICT DO NOTHING",
            (self.repo_id, closer, at),
        )

    # contents and chunks ------------------------------------------------------------------------

    def content_ids(self, keys: list[ContentKey]) -> dict[ContentKey, int]:
        if not keys:
            return {}
        return self._read(lambda conn: self._content_ids(conn, keys))

    def _content_ids(self, conn: psycopg.Connection, keys: Sequence[ContentKey]) -> dict[ContentKey, int]:
        rows = conn.execute(
            "SELECT c.sha256, c.language, c.chunker, c.id FROM contents c "
            "JOIN unnest(%s::text[], %s::text[], %s::text[]) AS k (sha256, language, chunker) "
            "ON c.sha256 = k.sha256 AND c.language = k.language AND c.chunker = k.chunker "
            "WHERE c.repo_id = %s",
            ([k[0] for k in keys], [k[1] for k in keys], [k[2] for k in keys], self.repo_id),
        ).fetchall()
        return {(r[0], r[1], r[2]): int(r[3]) for r in rows}

    def add_contents(self, items: list[ContentBundle]) -> dict[ContentKey, int]:
        """Store chunks and facts of new contents in one transaction (orphans until a revision names them)."""
        if not items:
            return {}
        with self._tx() as conn:
            return self._add_contents(conn, items)

    def _next_ids(self, conn: psycopg.Connection, table: str, count: int, column: str = "id") -> list[int]:
        """Ids drawn from a table's identity sequence, so COPY can write rows that refer to each other."""
        if count == 0:
            return []
        rows = conn.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s)",
            (f"{SCHEMA}.{table}", column, count),
        ).fetchall()
        return [int(r[0]) for r in rows]

    def _add_contents(
        self, conn: psycopg.Connection, items: Sequence[ContentBundle]
    ) -> dict[ContentKey, int]:
        # The repository row lock serialises content writers of one repository, so a content is
        # never inserted twice; other repositories and every reader go on meanwhile.
        conn.execute("SELECT 1 FROM repositories WHERE id = %s FOR UPDATE", (self.repo_id,))
        ids = self._content_ids(conn, [item.key for item in items])
        new: dict[ContentKey, ContentBundle] = {}
        for item in items:
            if item.key not in ids:
                new.setdefault(item.key, item)
        if not new:
            return {item.key: ids[item.key] for item in items}
        bundles = list(new.values())
        content_ids = self._next_ids(conn, "contents", len(bundles))
        chunk_ids = iter(self._next_ids(conn, "chunks", sum(len(item.chunks) for item in bundles)))
        n_chunks = n_tokens = 0
        cur = conn.cursor()
        with cur.copy(
            "COPY contents (id, repo_id, sha256, language, chunker, n_chunks, facts_status) FROM STDIN"
        ) as copy:
            for item, content_id in zip(bundles, content_ids, strict=True):
                ids[item.key] = content_id
                copy.write_row((content_id, self.repo_id, *item.key, len(item.chunks), item.facts_status))
        with cur.copy(
            "COPY chunks (id, repo_id, content_id, ord, start_line, end_line, symbol, text, lex_body, "
            "lex_symbol, lex_len) FROM STDIN"
        ) as copy:
            for item, content_id in zip(bundles, content_ids, strict=True):
                for c in item.chunks:
                    body = lex_tokens(c.index_text)
                    symbol = lex_tokens(c.symbol or "")
                    n_chunks += 1
                    n_tokens += len(body) + len(symbol)
                    copy.write_row(
                        (
                            next(chunk_ids),
                            self.repo_id,
                            content_id,
                            c.ord,
                            c.start_line,
                            c.end_line,
                            _clean(c.symbol),
                            _clean(c.text),
                            " ".join(body),
                            " ".join(symbol),
                            len(body) + len(symbol),
                        )
                    )
        with cur.copy(
            "COPY facts (repo_id, content_id, kind, name, name_lower, def_kind, container, line, start_line, "
            "end_line, signature, is_call, body_hash) FROM STDIN"
        ) as copy:
            for item, content_id in zip(bundles, content_ids, strict=True):
                for f in item.facts:
                    copy.write_row(
                        (
                            self.repo_id,
                            content_id,
                            f.kind,
                            _clean(f.name),
                            _clean(f.name.lower()),
                            f.def_kind,
                            _clean(f.container),
                            f.line,
                            f.start_line,
                            f.end_line,
                            _clean(f.signature),
                            f.is_call,
                            f.body_hash,
                        )
                    )
        if any(item.refs for item in bundles):
            with cur.copy("COPY ref_sites (repo_id, ord, content_id, name, sites) FROM STDIN") as copy:
                for item, content_id in zip(bundles, content_ids, strict=True):
                    for ord_, r in enumerate(item.refs):
                        # JSON escapes every control character, so packed sites never hold a NUL.
                        copy.write_row((self.repo_id, ord_, content_id, _clean(r.name), r.sites))
        # BM25 needs the row count, the mean length and each term's document frequency; counters
        # kept here beat a scan on every query. Sorted lexemes: concurrent upserts never deadlock.
        conn.execute(
            "UPDATE repositories SET n_chunks = n_chunks + %s, n_tokens = n_tokens + %s WHERE id = %s",
            (n_chunks, n_tokens, self.repo_id),
        )
        conn.execute(
            "INSERT INTO lex_df (repo_id, lexeme, df) SELECT %s, lexeme, count(*) FROM chunks c, "
            "unnest(tsvector_to_array(c.tsv)) AS lexeme WHERE c.content_id = ANY(%s) GROUP BY lexeme "
            "ORDER BY lexeme ON CONFLICT (repo_id, lexeme) DO UPDATE SET df = lex_df.df + excluded.df",
            (self.repo_id, content_ids),
        )
        return {item.key: ids[item.key] for item in items}

    def count_chunks(self, rev_no: int) -> int:
        if rev_no in self._rev_chunks:
            return self._rev_chunks[rev_no]  # a committed revision never changes
        row = self._row(
            "SELECT chunks FROM revisions WHERE repo_id = %s AND rev_no = %s", (self.repo_id, rev_no)
        )
        if row is None:
            return 0
        self._rev_chunks[rev_no] = int(row[0])
        return int(row[0])

    def chunks_of(self, rev_no: int, path: str) -> list[ChunkHit]:
        rows = self._rows(
            "SELECT c.id, m.path, c.start_line, c.end_line, c.symbol, c.text, m.sha256 FROM manifest m "
            "JOIN chunks c ON c.content_id = m.content_id WHERE m.repo_id = %s AND m.rev_no = %s "
            "AND m.path = %s ORDER BY c.ord",
            (self.repo_id, rev_no, path),
        )
        return [ChunkHit(r[0], r[1], r[2], r[3], r[4], r[5], 0.0, r[6]) for r in rows]

    def chunks_of_paths(self, rev_no: int, paths: list[str]) -> dict[str, list[ChunkHit]]:
        """chunks_of for several paths in one round trip; a path the revision lacks maps to []."""
        out: dict[str, list[ChunkHit]] = {path: [] for path in paths}
        if not paths:
            return out
        rows = self._rows(
            "SELECT c.id, m.path, c.start_line, c.end_line, c.symbol, c.text, m.sha256 FROM manifest m "
            "JOIN chunks c ON c.content_id = m.content_id WHERE m.repo_id = %s AND m.rev_no = %s "
            "AND m.path = ANY(%s) ORDER BY m.path, c.ord",
            (self.repo_id, rev_no, list(out)),
        )
        for r in rows:
            out[r[1]].append(ChunkHit(r[0], r[1], r[2], r[3], r[4], r[5], 0.0, r[6]))
        return out

    def lexical_search(self, match: str, rev_no: int, limit: int) -> list[ChunkHit]:
        """BM25 (FTS5's formula and weights) over chunk text and symbols, restricted to one revision.

        `match` is the FTS5 string tokens.fts_match builds ("a" OR "b"); each quoted term is one
        operand (a phrase when it holds several tokens), and the operands are OR-ed.
        """
        operands = match_terms(match)
        if not operands or limit <= 0:
            return []
        return self._read(lambda conn: self._lexical(conn, operands, rev_no, limit))

    def _lexical(
        self, conn: psycopg.Connection, operands: list[str], rev_no: int, limit: int
    ) -> list[ChunkHit]:
        terms = self._term_stats(conn, operands)
        if not terms:
            return []
        n_rows, avgdl = terms[0][3], terms[0][4]
        # FTS5's IDF: every stored chunk of the repository counts, older revisions' too.
        idf = [max(math.log((n_rows - t[2] + 0.5) / (t[2] + 0.5)), 1e-6) for t in terms]
        bound = [w * (BM25_K1 + 1) for w in idf]  # no chunk gets more from a term than this
        order = sorted(range(len(terms)), key=lambda k: terms[k][2])
        everything = list(range(len(terms)))
        rows: list[tuple[Any, ...]] = []
        if len(terms) > 1:
            # A query's best chunks mostly hold all its terms, and few chunks do (an AND of
            # postings): scoring those first gives a floor that most other chunks cannot reach.
            match = " & ".join(f"({t[0]})" for t in terms)
            rows = self._score(conn, terms, idf, match, everything, avgdl, rev_no, limit)
        if len(rows) == limit:
            floor = rows[-1][3]
            # Any other chunk that can reach the floor holds one of these sets of terms; an AND of
            # postings is short, so asking for them beats MaxScore's every chunk with a rare term.
            groups = _reaching_groups(everything, bound, floor - 1e-9) or [[k] for k in order]
            if groups != [everything]:
                rows = self._merged(
                    rows, self._score_groups(conn, terms, idf, groups, avgdl, rev_no, limit), limit
                )
        else:
            # MaxScore: candidates come from the rarest terms only, as long as a chunk that holds
            # none of them provably cannot reach the top `limit`.
            essential: list[int] = []
            postings = 0
            for k in order:  # the rarest terms within the budget, at least one
                if essential and postings + terms[k][2] > LEXICAL_CANDIDATES:
                    break
                essential.append(k)
                postings += terms[k][2]
            match = " | ".join(f"({terms[k][0]})" for k in essential)
            rows = self._score(
                conn, terms, idf, match, essential[:1] if len(essential) == 1 else [], avgdl, rev_no, limit
            )
            rest = order[len(essential) :]
            floor = rows[-1][3] if len(rows) == limit else 0.0  # the top `limit` can only get better
            if rest and sum(bound[k] for k in rest) >= floor - 1e-9:
                # A chunk with no essential term reaches the top only if the bounds of the terms
                # it holds add up to the floor: ask for just those combinations of terms.
                groups = _reaching_groups(rest, bound, floor - 1e-9) or [[k] for k in rest]
                rows = self._merged(
                    rows, self._score_groups(conn, terms, idf, groups, avgdl, rev_no, limit), limit
                )
        if not rows:
            return []
        return [ChunkHit(r[0], r[1], r[2], r[5], r[6], r[7], float(r[3]), r[4]) for r in rows]

    def _score_groups(
        self,
        conn: psycopg.Connection,
        terms: list[tuple[str, int, int, int, float]],
        idf: list[float],
        groups: list[list[int]],
        avgdl: float,
        rev_no: int,
        limit: int,
    ) -> list[tuple[Any, ...]]:
        """_score over the chunks holding every term of at least one group (an AND of postings is short)."""
        match = " | ".join("(" + " & ".join(f"({terms[k][0]})" for k in g) + ")" for g in groups)
        held = sorted(set.intersection(*(set(g) for g in groups)))
        return self._score(conn, terms, idf, match, held, avgdl, rev_no, limit)

    @staticmethod
    def _merged(
        rows: list[tuple[Any, ...]], more: list[tuple[Any, ...]], limit: int
    ) -> list[tuple[Any, ...]]:
        """The top `limit` of two passes; both score with every term, so a chunk found twice has one score."""
        merged = {(r[0], r[1]): r for r in rows + more}
        return sorted(merged.values(), key=lambda r: (-r[3], r[1], r[2]))[:limit]

    def _term_stats(
        self, conn: psycopg.Connection, operands: list[str]
    ) -> list[tuple[str, int, int, int, float]]:
        """(tsquery text, nodes, document frequency, chunks in the repository, mean length) per operand."""
        rows = conn.execute(
            "SELECT q::text, numnode(q), d.df, r.n_chunks, r.n_tokens "
            "FROM unnest(%(ops)s::text[]) WITH ORDINALITY AS u (op, i) "
            "CROSS JOIN LATERAL (SELECT to_tsquery(%(cfg)s::regconfig, u.op) AS q) t "
            "CROSS JOIN repositories r "
            "LEFT JOIN lex_df d ON d.repo_id = r.id AND numnode(t.q) = 1 "
            "AND d.lexeme = (tsvector_to_array(to_tsvector(%(cfg)s::regconfig, u.op)))[1] "
            "WHERE r.id = %(repo)s ORDER BY u.i",
            {"ops": operands, "cfg": TS_CONFIG, "repo": self.repo_id},
        ).fetchall()
        terms = []
        for query, nodes, df, n_chunks, n_tokens in rows:
            if nodes == 0:
                continue  # nothing left to match once normalised
            if nodes > 1:  # a phrase: its frequency is counted, phrases are rare in queries
                found = conn.execute(
                    "SELECT count(*) FROM chunks WHERE repo_id = %s AND tsv @@ %s::tsquery",
                    (self.repo_id, query),
                ).fetchone()
                df = found[0] if found else 0
            n = max(int(n_chunks), 1)
            terms.append((query, int(nodes), int(df or 0), n, max(int(n_tokens), 1) / n))
        return terms

    def _score(
        self,
        conn: psycopg.Connection,
        terms: list[tuple[str, int, int, int, float]],
        idf: list[float],
        match: str,
        held: list[int],
        avgdl: float,
        rev_no: int,
        limit: int,
    ) -> list[tuple[Any, ...]]:
        """Top (chunk id, path, start line, score, sha256, end line, symbol, text) of the revision
        among chunks matching the tsquery `match`; every one of them holds the terms `held`."""
        params: dict[str, object] = {
            "repo": self.repo_id,
            "rev": rev_no,
            "essential": match,
            "k1": BM25_K1,
            "b": BM25_B,
            "avgdl": avgdl,
            "limit": limit,
            "over": limit * 3 + 20,  # chunks, over-fetched as SQLite does, for contents at several paths
        }
        for i, (t, w) in enumerate(zip(terms, idf, strict=True)):
            params[f"q{i}"] = t[0]
            params[f"idf{i}"] = w
        # Testing for a term every candidate holds would cost ~10% of the scan, for nothing.
        tested = tuple(t[1] == 1 and i not in held for i, t in enumerate(terms))
        return conn.execute(score_query(tested), params).fetchall()

    # facts --------------------------------------------------------------------------------------

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
        where = [sql.SQL("m.repo_id = %s AND m.rev_no = %s AND f.kind = %s")]
        args: list[object] = [self.repo_id, rev_no, fact_kind]
        if name is not None:
            where.append(sql.SQL("f.name_lower = %s"))
            args.append(name.lower())
            if exact:
                where.append(sql.SQL("f.name = %s"))
                args.append(name)
        if path is not None:
            where.append(sql.SQL("m.path = %s"))
            args.append(path)
        query = sql.SQL(
            "SELECT f.kind, f.name, f.def_kind, m.path, f.line, f.start_line, f.end_line, f.container, "
            "f.signature, f.is_call, f.body_hash FROM facts f JOIN manifest m ON m.content_id = f.content_id "
            "WHERE {} ORDER BY m.path, f.line, f.id LIMIT %s"
        ).format(sql.SQL(" AND ").join(where))
        rows = self._rows(query, (*args, limit))
        return [FactHit(*r[:9], bool(r[9]), r[10]) for r in rows]

    def _find_refs(
        self, rev_no: int, name: str | None, path: str | None, exact: bool, limit: int
    ) -> list[FactHit]:
        """Each use of the packed references, by path, then line, cut at `limit` as SQLite's store does."""
        where = [sql.SQL("r.repo_id = %s AND m.repo_id = %s AND m.rev_no = %s")]
        args: list[object] = [self.repo_id, self.repo_id, rev_no]
        if name is not None:
            if exact:
                where.append(sql.SQL("r.name = %s"))
                args.append(name)
            else:
                # SQLite's NOCASE folds ASCII letters only, whatever the database's collation; no
                # caller asks so, so it may scan the repository's names.
                where.append(sql.SQL("translate(r.name, %s, %s) = %s"))
                args += [_UPPER, _UPPER.lower(), name.translate(_ASCII_LOWER)]
        if path is not None:
            where.append(sql.SQL("m.path = %s"))
            args.append(path)
        # Byte order ("C") is SQLite's and Python's order of paths, which the cut below relies on.
        query = sql.SQL(
            "SELECT r.name, m.path, r.sites FROM ref_sites r JOIN manifest m ON m.content_id = r.content_id "
            'WHERE {} ORDER BY m.path COLLATE "C", r.ord'
        ).format(sql.SQL(" AND ").join(where))
        return ref_hits(self._rows(query, args), limit)

    def facts_status(self, rev_no: int, path: str) -> str | None:
        row = self._row(
            "SELECT c.facts_status FROM manifest m JOIN contents c ON c.id = m.content_id "
            "WHERE m.repo_id = %s AND m.rev_no = %s AND m.path = %s",
            (self.repo_id, rev_no, path),
        )
        return row[0] if row else None

    # drift ledger -------------------------------------------------------------------------------

    def register_drift(self, events: list[DriftEvent]) -> int:
        """Append events to the ledger; an event registered twice adds nothing. Returns entries added."""
        if not events:
            return 0
        keys = [dedupe_key(e) for e in events]
        # Known events cost a read, not a write: a read-only user still answers.
        known = {
            r[0]
            for r in self._rows(
                "SELECT dedupe_key FROM drift_ledger WHERE repo_id = %s AND dedupe_key = ANY(%s)",
                (self.repo_id, keys),
            )
        }
        fresh = [e for e, k in zip(events, keys, strict=True) if k not in known]
        if not fresh:
            return 0
        with self._tx() as conn:
            return self._insert_drift(conn, fresh)

    def _insert_drift(self, conn: psycopg.Connection, events: Sequence[DriftEvent]) -> int:
        # The first revision's events name no revision (nothing to drift from); SQLite's
        # INSERT OR IGNORE drops them on its NOT NULL, and so do we.
        events = [e for e in events if e.rev is not None]
        if not events:
            return 0
        now = dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")
        old_ids = sorted({e.old_content_id for e in events if e.old_content_id is not None})
        nodes: dict[int, list[int]] = {}
        symbols: dict[int, list[dict[str, object]]] = {}
        if old_ids:
            for content_id, chunk_ids in conn.execute(
                "SELECT content_id, array_agg(id ORDER BY ord) FROM chunks "
                "WHERE content_id = ANY(%s) AND repo_id = %s GROUP BY content_id",
                (old_ids, self.repo_id),
            ):
                nodes[content_id] = list(chunk_ids)
            for content_id, name, container, kind, line in conn.execute(
                "SELECT content_id, name, container, def_kind, line FROM facts "
                "WHERE content_id = ANY(%s) AND repo_id = %s AND kind = 'def' ORDER BY content_id, line, id",
                (old_ids, self.repo_id),
            ):
                symbols.setdefault(content_id, []).append(
                    {"name": f"{container}.{name}" if container else name, "kind": kind, "line": line}
                )
        columns: list[list[object]] = [[] for _ in range(9)]
        for e in events:
            row = (
                e.rev,
                e.change,
                _clean(e.path),
                e.detected_by,
                e.old_sha256,
                e.new_sha256,
                json.dumps(nodes.get(e.old_content_id, []) if e.old_content_id is not None else []),
                json.dumps(symbols.get(e.old_content_id, []) if e.old_content_id is not None else []),
                dedupe_key(e),
            )
            for column, value in zip(columns, row, strict=True):
                column.append(value)
        added = conn.execute(
            "INSERT INTO drift_ledger (repo_id, rev, change, path, detected_by, detected_at, old_sha256, "
            "new_sha256, affected_nodes, affected_symbols, dedupe_key) "
            "SELECT %s, u.rev, u.change, u.path, u.detected_by, %s, u.old_sha256, u.new_sha256, "
            "u.nodes::json, u.symbols::json, u.dedupe_key "
            "FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[], "
            "%s::text[], %s::text[]) WITH ORDINALITY "
            "AS u (rev, change, path, detected_by, old_sha256, new_sha256, nodes, symbols, dedupe_key, ord) "
            "ORDER BY u.ord ON CONFLICT (repo_id, dedupe_key) DO NOTHING RETURNING entry_id",
            (self.repo_id, now, *columns),
        ).fetchall()
        return len(added)

    def open_entries(self, rev: str | None = None) -> list[DriftEntry]:
        if rev:
            rows = self._rows(
                f"SELECT {_LEDGER_COLUMNS} FROM drift_ledger WHERE repo_id = %s AND rev = %s ORDER BY entry_id",
                (self.repo_id, rev),
            )
        else:
            rows = self._rows(
                f"SELECT {_LEDGER_COLUMNS} FROM drift_ledger WHERE repo_id = %s ORDER BY entry_id",
                (self.repo_id,),
            )
        return [_entry(r) for r in rows]

    def open_summary(self, rev: str, paths: list[str]) -> tuple[int, int]:
        """(open entries of rev, affected symbols of the latest entry of each given path)."""
        row = self._row(
            "SELECT (SELECT count(*) FROM drift_ledger WHERE repo_id = %(repo)s AND rev = %(rev)s), "
            "(SELECT coalesce(sum(json_array_length(l.affected_symbols)), 0) FROM unnest(%(paths)s::text[]) p (path) "
            " CROSS JOIN LATERAL (SELECT affected_symbols FROM drift_ledger WHERE repo_id = %(repo)s "
            "  AND rev = %(rev)s AND path = p.path ORDER BY entry_id DESC LIMIT 1) l)",
            {"repo": self.repo_id, "rev": rev, "paths": paths},  # type: ignore[arg-type]
        )
        assert row is not None
        return int(row[0]), int(row[1])

    def archived_entries(self, closed_by: list[str]) -> list[DriftEntry]:
        if not closed_by:
            return []
        rows = self._rows(
            f"SELECT {_LEDGER_COLUMNS}, closed_by FROM drift_archive WHERE repo_id = %s AND closed_by = ANY(%s) "
            "ORDER BY entry_id",
            (self.repo_id, closed_by),
        )
        return [_entry(r) for r in rows]

    # vectors ------------------------------------------------------------------------------------

    def _model(self, model: str, dim: int) -> int | None:
        """Id of a (model, dim) that has stored vectors, cached (an id never changes)."""
        if (model, dim) not in self._models:
            row = self._row("SELECT id FROM models WHERE name = %s AND dim = %s", (model, dim))
            if row is None:
                return None
            self._models[(model, dim)] = int(row[0])
        return self._models[(model, dim)]

    def chunks_missing_vectors(
        self, rev_no: int, model: str, limit: int, after_id: int = 0
    ) -> list[ChunkHit]:
        """Chunks of a revision without a vector for model, by id after after_id (each chunk once)."""

        def run(conn: psycopg.Connection) -> list[tuple[Any, ...]]:
            ids = self._missing_ids(conn, rev_no, model, after_id, limit)
            return conn.execute(
                "SELECT c.id, (SELECT min(m.path) FROM manifest m WHERE m.repo_id = %s AND m.rev_no = %s "
                "AND m.content_id = c.content_id), c.start_line, c.end_line, c.symbol, c.text "
                "FROM chunks c WHERE c.id = ANY(%s) ORDER BY c.id",
                (self.repo_id, rev_no, ids),
            ).fetchall()

        return [ChunkHit(r[0], r[1], r[2], r[3], r[4], r[5], 0.0) for r in self._read(run)]

    def _missing_ids(
        self, conn: psycopg.Connection, rev_no: int, model: str, after_id: int, limit: int | None
    ) -> list[int]:
        """Ids of the revision's chunks without a vector of model, ascending."""
        # A set difference of two index-only scans (the repository's chunk ids minus the model's
        # vector ids), then a revision probe for the few left: no plan hinges on how fresh the
        # statistics of a just-committed revision are.
        rows = conn.execute(
            "SELECT x.id FROM (SELECT id FROM chunks WHERE repo_id = %(repo)s AND id > %(after)s EXCEPT "
            " SELECT chunk_id FROM vectors WHERE repo_id = %(repo)s AND chunk_id > %(after)s AND model_id IN "
            " (SELECT id FROM models WHERE name = %(model)s)) x "
            "WHERE EXISTS (SELECT 1 FROM chunks c JOIN manifest m ON m.content_id = c.content_id "
            " WHERE c.id = x.id AND m.repo_id = %(repo)s AND m.rev_no = %(rev)s OFFSET 0) "
            "ORDER BY x.id LIMIT %(limit)s",
            {"repo": self.repo_id, "after": after_id, "model": model, "rev": rev_no, "limit": limit},
        ).fetchall()
        return [r[0] for r in rows]

    def add_vectors(self, model: str, items: list[tuple[int, bytes]], dim: int) -> None:
        """Store float32 unit vectors per chunk (a second write for a chunk replaces the first)."""
        if not items:
            return
        with self._tx() as conn:
            model_id = self._insert_vectors(conn, model, items, dim)
            self._ensure_vector_index(conn, model_id, dim)
        self._indexed_models.add(model_id)  # only once committed: a rollback drops the index too

    def _insert_vectors(
        self, conn: psycopg.Connection, model: str, items: Sequence[tuple[int, bytes]], dim: int
    ) -> int:
        # A known model is only read: an upsert would lock its row until commit, and writers of
        # every repository that share the model would queue behind each other's HNSW inserts.
        model_id = self._models.get((model, dim))
        if model_id is None:
            row = conn.execute("SELECT id FROM models WHERE name = %s AND dim = %s", (model, dim)).fetchone()
            if row is None:
                row = conn.execute(
                    "INSERT INTO models (name, dim) VALUES (%s, %s) ON CONFLICT (name, dim) DO NOTHING RETURNING id",
                    (model, dim),
                ).fetchone()
            if row is None:  # another writer inserted it meanwhile; its row is committed now
                row = conn.execute(
                    "SELECT id FROM models WHERE name = %s AND dim = %s", (model, dim)
                ).fetchone()
            assert row is not None
            model_id = int(row[0])
        matrix = np.frombuffer(b"".join(blob for _, blob in items), dtype=np.float32).reshape(len(items), dim)
        # Binary COPY into a scratch table, then one upsert: text-formatting floats is the slow part.
        conn.execute(
            "CREATE TEMP TABLE IF NOT EXISTS vectors_in (chunk_id bigint, embedding vector) ON COMMIT DELETE ROWS"
        )
        with conn.cursor().copy("COPY vectors_in (chunk_id, embedding) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(["int8", "vector"])
            for (chunk_id, _), vec in zip(items, matrix, strict=True):
                copy.write_row((chunk_id, vec))
        conn.execute(
            "INSERT INTO vectors (model_id, chunk_id, repo_id, embedding) "
            "SELECT %s, i.chunk_id, c.repo_id, i.embedding FROM vectors_in i "
            "JOIN chunks c ON c.id = i.chunk_id AND c.repo_id = %s "
            "ON CONFLICT (model_id, chunk_id) DO UPDATE SET embedding = excluded.embedding",
            (model_id, self.repo_id),
        )
        conn.execute("TRUNCATE vectors_in")
        return model_id

    def _ensure_vector_index(self, conn: psycopg.Connection, model_id: int, dim: int) -> None:
        """The model's partial HNSW index, built once after its first vectors (a bulk build beats inserts)."""
        if model_id in self._indexed_models:
            return
        name = f"vectors_hnsw_m{model_id}"
        conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (LOCK_VECTOR_INDEX, model_id))
        exists = conn.execute("SELECT to_regclass(%s)", (f"{SCHEMA}.{name}",)).fetchone()
        if not (exists and exists[0]):
            conn.execute("SELECT set_config('statement_timeout', '0', true)")
            conn.execute("SELECT set_config('maintenance_work_mem', '512MB', true)")
            # DDL takes no bind parameters; both numbers come from our own models table.
            conn.execute(
                sql.SQL(
                    "CREATE INDEX IF NOT EXISTS {} ON {}.vectors USING hnsw ((embedding::vector({})) "
                    "vector_cosine_ops) WHERE model_id = {}"
                ).format(
                    sql.Identifier(name), sql.Identifier(SCHEMA), sql.Literal(dim), sql.Literal(model_id)
                )
            )
            # Fresh statistics let the planner pick the new index over a scan of every vector.
            conn.execute("ANALYZE vectors")

    def vector_coverage(self, rev_no: int, model: str) -> float:
        """Share of the revision's chunks with a vector of model; a full coverage is remembered."""
        if (rev_no, model) in self._covered:
            return 1.0  # a revision never changes and its vectors stay while it is kept
        total = self.count_chunks(rev_no)
        if not total:
            return 1.0
        missing = len(self._read(lambda conn: self._missing_ids(conn, rev_no, model, 0, None)))
        if not missing:
            self._covered.add((rev_no, model))
        return (total - missing) / total

    def vector_search(self, rev_no: int, model: str, query: bytes, dim: int, limit: int) -> list[ChunkHit]:
        """Cosine similarity over the chunks of one revision: exact for small revisions, HNSW beyond."""
        model_id = self._model(model, dim) if limit > 0 else None
        if model_id is None:
            return []
        vec = np.frombuffer(query, dtype=np.float32)
        if self.count_chunks(rev_no) <= EXACT_VECTOR_MAX:
            nearest = sql.SQL(
                "SELECT v.chunk_id, v.embedding <=> %(vec)s AS distance FROM vectors v "
                "JOIN chunks c ON c.id = v.chunk_id "
                "WHERE v.model_id = %(model)s AND v.repo_id = %(repo)s AND c.content_id IN (SELECT content_id "
                "FROM manifest WHERE repo_id = %(repo)s AND rev_no = %(rev)s OFFSET 0) "
                "ORDER BY distance, v.chunk_id LIMIT %(limit)s"
            )
            params = {"vec": vec, "model": model_id, "repo": self.repo_id, "rev": rev_no, "limit": limit}
            rows = self._rows(with_paths(nearest), params)
        else:
            rows = self._hnsw_search(model_id, dim, vec, rev_no, limit)
        hits = [ChunkHit(r[0], r[2], r[3], r[4], r[5], r[6], 1.0 - float(r[1]), r[7]) for r in rows]
        hits.sort(key=lambda h: (-h.score, h.path, h.start_line))
        return hits

    def _hnsw_search(
        self, model_id: int, dim: int, vec: np.ndarray, rev_no: int, limit: int
    ) -> list[tuple[Any, ...]]:
        query = nearest_with_paths(model_id, dim)
        params = {"vec": vec, "repo": self.repo_id, "rev": rev_no, "limit": limit}
        ef = hnsw_ef_search(limit)
        with self._pool_lock:
            first, self._hnsw_searched = not self._hnsw_searched, True

        def once(conn: psycopg.Connection) -> list[tuple[Any, ...]]:
            # _configure_hnsw's settings for one transaction: one round trip for them, the search
            # and the transaction around them.
            with conn.pipeline(), conn.transaction():
                conn.execute(
                    "SELECT set_config('hnsw.ef_search', %s, true), "
                    "set_config('hnsw.iterative_scan', 'relaxed_order', true), "
                    "set_config('enable_sort', 'off', true)",
                    (str(ef),),
                )
                cur = conn.execute(query, params)
            return cur.fetchall()

        def run(conn: psycopg.Connection) -> list[tuple[Any, ...]]:
            if self._hnsw_ef.get(conn) != ef:  # set when a search asks for another depth
                conn.execute("SELECT set_config('hnsw.ef_search', %s, false)", (str(ef),))
                self._hnsw_ef[conn] = ef
            return conn.execute(query, params).fetchall()

        # A process that searches once (a CLI call) is not worth a second connection; one that
        # searches again (an agent's server) is.
        return self._read(once) if first else self._read(run, self._hnsw_connections())

    # stat cache ---------------------------------------------------------------------------------

    # File stats are one checkout's (this machine, this root): machines sharing the repository
    # each keep their own, so none re-hashes every file because another indexed last.

    def stat_cache(self) -> dict[str, StatEntry]:
        rows = self._rows(
            "SELECT path, size, mtime_ns, ctime_ns, inode, sha256, checked_ns FROM stat_cache "
            "WHERE repo_id = %s AND checkout = %s",
            (self.repo_id, self.checkout),
        )
        return {row[0]: StatEntry(*row[1:]) for row in rows}

    def update_stat_cache(self, entries: dict[str, StatEntry], removed: list[str]) -> None:
        if not entries and not removed:
            return
        paths = list(entries)
        values = list(entries.values())
        with self._tx() as conn:
            if removed:
                conn.execute(
                    "DELETE FROM stat_cache WHERE repo_id = %s AND checkout = %s AND path = ANY(%s)",
                    (self.repo_id, self.checkout, removed),
                )
            if entries:
                conn.execute(
                    "INSERT INTO stat_cache (repo_id, checkout, path, size, mtime_ns, ctime_ns, inode, sha256, "
                    "checked_ns) SELECT %s, %s, * FROM unnest(%s::text[], %s::bigint[], %s::bigint[], "
                    "%s::bigint[], %s::bigint[], %s::text[], %s::bigint[]) ON CONFLICT (repo_id, checkout, path) "
                    "DO UPDATE SET size = excluded.size, mtime_ns = excluded.mtime_ns, ctime_ns = excluded.ctime_ns, "
                    "inode = excluded.inode, sha256 = excluded.sha256, checked_ns = excluded.checked_ns",
                    (
                        self.repo_id,
                        self.checkout,
                        [_clean(p) for p in paths],
                        [e.size for e in values],
                        [e.mtime_ns for e in values],
                        [e.ctime_ns for e in values],
                        [e.inode for e in values],
                        [e.sha256 for e in values],
                        [e.checked_ns for e in values],
                    ),
                )
            self._forget_old_checkouts(conn)

    def _forget_old_checkouts(self, conn: psycopg.Connection) -> None:
        """Note this checkout's write; drop the stats of all but the KEEP_CHECKOUTS latest writers
        (CI runners come and go, each its own checkout)."""
        conn.execute(
            "INSERT INTO meta (repo_id, key, value) VALUES (%s, %s, %s) "
            "ON CONFLICT (repo_id, key) DO UPDATE SET value = excluded.value",
            (self.repo_id, "stats@" + self.checkout, time.time_ns().to_bytes(8, "big")),
        )
        old = [
            row[0].removeprefix("stats@")
            for row in conn.execute(
                "SELECT key FROM meta WHERE repo_id = %s AND key LIKE 'stats@%%' ORDER BY value DESC OFFSET %s",
                (self.repo_id, KEEP_CHECKOUTS),
            )
        ]
        if old:
            conn.execute(
                "DELETE FROM stat_cache WHERE repo_id = %s AND checkout = ANY(%s)", (self.repo_id, old)
            )
            keys = [f"{prefix}@{name}" for name in old for prefix in ("stats", "guard_snapshot")]
            conn.execute("DELETE FROM meta WHERE repo_id = %s AND key = ANY(%s)", (self.repo_id, keys))

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

    def guard_snapshot(self) -> bytes | None:
        # A snapshot vouches for files matching the revision it was written at. Another checkout may
        # have committed one since; then it vouches for nothing, and the guard lists and compares.
        row = self._row(
            "SELECT m.value, (SELECT coalesce(max(rev_no), 0) FROM revisions WHERE repo_id = %s) FROM meta m "
            "WHERE m.repo_id = %s AND m.key = %s",
            (self.repo_id, self.repo_id, "guard_snapshot@" + self.checkout),
        )
        if row is None:
            return None
        value = bytes(row[0])
        return value[8:] if int.from_bytes(value[:8], "big") == row[1] else None

    def set_guard_snapshot(self, blob: bytes) -> None:
        with self._tx() as conn:
            conn.execute(SET_SNAPSHOT, (self.repo_id, "guard_snapshot@" + self.checkout, blob, self.repo_id))

    # retention ----------------------------------------------------------------------------------

    def gc(self, keep: int) -> dict[str, int]:
        """Drop revisions beyond the last `keep` and every content no kept revision names."""
        keep = max(1, keep)
        with self._tx() as conn:
            conn.execute("SELECT 1 FROM repositories WHERE id = %s FOR UPDATE", (self.repo_id,))
            old = [
                r[0]
                for r in conn.execute(
                    "DELETE FROM revisions WHERE repo_id = %s AND rev_no IN (SELECT rev_no FROM revisions "
                    "WHERE repo_id = %s ORDER BY rev_no DESC OFFSET %s) RETURNING rev_no",
                    (self.repo_id, self.repo_id, keep),
                )
            ]
            conn.execute(
                "WITH gone AS (SELECT lexeme, count(*) AS n FROM contents o JOIN chunks c ON c.content_id = o.id, "
                "unnest(tsvector_to_array(c.tsv)) AS lexeme WHERE o.repo_id = %s AND NOT EXISTS "
                "(SELECT 1 FROM manifest m WHERE m.content_id = o.id) GROUP BY lexeme) "
                "UPDATE lex_df d SET df = d.df - gone.n FROM gone WHERE d.repo_id = %s AND d.lexeme = gone.lexeme",
                (self.repo_id, self.repo_id),
            )
            # Chunks, facts, references and vectors of a deleted content go with it (ON DELETE CASCADE).
            stats = conn.execute(
                "WITH orphans AS (DELETE FROM contents c WHERE c.repo_id = %s AND NOT EXISTS "
                "(SELECT 1 FROM manifest m WHERE m.content_id = c.id) RETURNING c.id) "
                "SELECT (SELECT count(*) FROM orphans), count(ch.id), coalesce(sum(ch.lex_len), 0) "
                "FROM orphans o JOIN chunks ch ON ch.content_id = o.id",
                (self.repo_id,),
            ).fetchone()
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

    def drop_repository(self) -> None:
        """Delete this repository's whole index (every revision, content, vector and ledger entry)."""
        with self._tx() as conn:
            conn.execute("DELETE FROM repositories WHERE id = %s", (self.repo_id,))

    def close(self) -> None:
        self.pool.close()
        if self._hnsw_pool is not None:
            self._hnsw_pool.close()


def checkout_name(root: Path) -> str:
    """Whose file stats a store keeps: this machine's checkout at root."""
    return f"{socket.gethostname()}:{root.resolve()}"


def default_repo_key(root: Path) -> str:
    """A repository's name in a shared database when none is configured: its absolute root path."""
    return str(root.resolve())


def _revision_values(rev: Revision) -> tuple[object, ...]:
    return (
        rev.rev_no,
        rev.rev,
        rev.corpus_hash,
        rev.created_at,
        rev.index_version,
        rev.git_head,
        rev.git_branch,
        rev.files,
        rev.chunks,
    )


def _entry(row: tuple[Any, ...]) -> DriftEntry:
    closed = row[11] if len(row) > 11 else None
    return DriftEntry(*row[:8], list(row[8]), list(row[9]), row[10], closed)


def _reaching_groups(terms: list[int], bound: list[float], floor: float) -> list[list[int]]:
    """The smallest sets of terms whose score bounds add up to `floor`; empty past 10 terms."""
    if len(terms) > 10:
        return []
    groups: list[list[int]] = []
    for size in range(1, len(terms) + 1):
        for group in itertools.combinations(terms, size):
            if sum(bound[k] for k in group) >= floor and not any(set(g) <= set(group) for g in groups):
                groups.append(list(group))
    return groups


@functools.lru_cache(maxsize=256)
def score_query(tested: tuple[bool, ...]) -> str:
    """The lexical scoring statement for terms q0..qN; tested[i]: term i is checked before it is ranked.

    Composed once per shape: building it from sql.SQL pieces cost a third of a search's client CPU.
    """
    # Per term, tf = body hits + 4 x symbol hits (ts_rank_cd, weights D=.25 A=1, one term per
    # call, times 4), and idf * tf * (k1+1) / (tf + K) is written idf * (k1+1) * (1 - K / (tf + K))
    # so each term's tf is computed once; K = k1 * (1 - b + b * length / avgdl). A chunk
    # without a one-word term scores 0 for it, which a lookup in its tsvector tells at a
    # fraction of ts_rank_cd's cost.
    tf = sql.SQL("ts_rank_cd('{{0.25, 0.25, 0.25, 1}}', c.tsv, {q}::tsquery, 0)")
    word_tf = sql.SQL("CASE WHEN c.tsv @@ {q}::tsquery THEN {tf} ELSE 0 END")
    term = sql.SQL(
        "{idf} * (1 - (%(k1)s * (1 - %(b)s + %(b)s * c.lex_len / %(avgdl)s)) / "
        "(4 * {tf} + %(k1)s * (1 - %(b)s + %(b)s * c.lex_len / %(avgdl)s)))"
    )
    parts = []
    for i, check in enumerate(tested):
        q = sql.Placeholder(f"q{i}")
        rank = tf.format(q=q)
        parts.append(
            term.format(idf=sql.Placeholder(f"idf{i}"), tf=word_tf.format(q=q, tf=rank) if check else rank)
        )
    # Candidates come from the GIN index alone, scored and sorted; the revision test then
    # probes the manifest only for the best of them, in order, until `over` pass (the
    # retained revisions share most contents, so that is seldom many more). OFFSET 0 keeps
    # the planner from merging the steps or driving the test from the manifest side.
    return (
        sql.SQL(
            "WITH top AS MATERIALIZED (SELECT s.* FROM ("
            " SELECT c.id, c.content_id, c.start_line, (%(k1)s + 1) * ({score}) AS score FROM chunks c"
            " WHERE c.repo_id = %(repo)s AND c.tsv @@ %(essential)s::tsquery ORDER BY score DESC OFFSET 0) s"
            " WHERE EXISTS (SELECT 1 FROM manifest m WHERE m.repo_id = %(repo)s AND m.rev_no = %(rev)s"
            " AND m.content_id = s.content_id OFFSET 0) LIMIT %(over)s"
            ") SELECT t.id, m.path, t.start_line, t.score, m.sha256, c.end_line, c.symbol, c.text FROM top t "
            "CROSS JOIN LATERAL (SELECT path, sha256 FROM manifest WHERE repo_id = %(repo)s AND rev_no = %(rev)s "
            "AND content_id = t.content_id OFFSET 0) m JOIN chunks c ON c.id = t.id "
            "ORDER BY t.score DESC, m.path, t.start_line LIMIT %(limit)s"
        )
        .format(score=sql.SQL(" + ").join(parts))
        .as_string()
    )


def hnsw_ef_search(limit: int) -> int:
    """Candidates the HNSW search keeps: a margin over `limit`, so the few that fail the
    repository and revision test rarely send it back into the graph (an iterative scan costs
    about as much again)."""
    return min(1000, max(40, limit + limit // 2))


def hnsw_query(model_id: int, dim: int) -> sql.Composed:
    """Nearest chunks of one revision by the model's HNSW index; named params: vec, repo, rev, limit."""
    # The expression and the model predicate must match the partial index's literally, so both
    # numbers are spelled in the SQL; they come from our own models table. OFFSET 0 keeps the
    # revision test a per-candidate lookup (two index probes) instead of a join the planner could
    # drive from the revision's side; iterative scanning walks the graph until enough neighbours
    # pass it.
    typed = sql.SQL("vector({})").format(sql.Literal(dim))
    return sql.SQL(
        "SELECT v.chunk_id, v.embedding::{t} <=> %(vec)s::{t} AS distance FROM vectors v "
        "WHERE v.model_id = {m} AND v.repo_id = %(repo)s AND EXISTS (SELECT 1 FROM manifest m "
        "WHERE m.repo_id = %(repo)s AND m.rev_no = %(rev)s "
        "AND m.content_id = (SELECT c.content_id FROM chunks c WHERE c.id = v.chunk_id) OFFSET 0) "
        "ORDER BY v.embedding::{t} <=> %(vec)s::{t} LIMIT %(limit)s"
    ).format(t=typed, m=sql.Literal(model_id))


@functools.lru_cache(maxsize=64)
def nearest_with_paths(model_id: int, dim: int) -> sql.Composed:
    """with_paths(hnsw_query(...)), composed once per model."""
    return with_paths(hnsw_query(model_id, dim))


def with_paths(nearest: sql.Composable) -> sql.Composed:
    """The nearest chunks (chunk_id, distance) with their paths in the revision, in one statement.

    Rows: chunk id, distance, path, start line, end line, symbol, text, sha256; a content stored
    at several paths gives a row per path. OFFSET 0 keeps the per-chunk probe of the manifest,
    whatever the planner believes about a revision it has no statistics for yet.
    """
    return sql.SQL(
        "WITH best AS MATERIALIZED ({}) "
        "SELECT b.chunk_id, b.distance, m.path, c.start_line, c.end_line, c.symbol, c.text, m.sha256 "
        "FROM best b JOIN chunks c ON c.id = b.chunk_id "
        "CROSS JOIN LATERAL (SELECT path, sha256 FROM manifest WHERE repo_id = %(repo)s AND rev_no = %(rev)s "
        "AND content_id = c.content_id OFFSET 0) m"
    ).format(nearest)
