"""Connections of the PostgreSQL store: pools, errors and recovery, schema and migrations, the writer lock."""

from __future__ import annotations

import os
import socket
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool, PoolTimeout

from ragraf.errors import ConfigError, IndexMissingError, LockHeldError, StoreError
from ragraf.store.postgres.migrations import BOOTSTRAP, MIGRATIONS, SCHEMA
from ragraf.store.postgres.stats import checkout_name

T = TypeVar("T")

# Advisory lock keys (classid, objid): "RAGF" + a purpose, objid = repository / model id.
LOCK_WRITER = 0x52414746
LOCK_SCHEMA = 0x52414700
LOCK_VECTOR_INDEX = 0x52414701


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


class ConnectionBase:
    """One repository's connections and schema; the concern mixins of PostgresStore build on these."""

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

    # dropping and closing -----------------------------------------------------------------------

    def drop_repository(self) -> None:
        """Delete this repository's whole index (every revision, content, vector and ledger entry)."""
        with self._tx() as conn:
            conn.execute("DELETE FROM repositories WHERE id = %s", (self.repo_id,))

    def close(self) -> None:
        self.pool.close()
        if self._hnsw_pool is not None:
            self._hnsw_pool.close()
