"""What only the PostgreSQL store promises: shared databases, advisory locks, crashes, restarts, clear errors."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import psycopg
import pytest
from pg_server import PgServer, free_port
from store.sample_index import CHUNKER, PG_MANIFEST_PER_REVISION, commit_files, sha
from support import SAMPLE

from ragraf.config import Settings
from ragraf.errors import ConfigError, IndexMissingError, LockHeldError, StoreError
from ragraf.search.engine import lexical_candidates
from ragraf.store import (
    ChunkRecord,
    ContentBundle,
    DriftEvent,
    FactRecord,
    ManifestEntry,
    NewRevision,
    Revision,
    StatEntry,
    Store,
)
from ragraf.store import postgres as pg
from ragraf.store.base import unpack_sites
from ragraf.store.columns import revision_values
from ragraf.store.postgres import PostgresStore, lex_tokens, match_terms
from ragraf.store.postgres import connection as pg_connection
from ragraf.store.postgres import lexical as pg_lexical
from ragraf.store.postgres import stats as pg_stats
from ragraf.store.postgres import vectors as pg_vectors
from ragraf.store.sqlite import SqliteStore
from ragraf.tokens import fts_match, query_terms

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def open_pg(pg_dsn: str) -> Iterator:  # type: ignore[type-arg]
    """open_pg(key=None, dsn=None, create=True, checkout=""): a PostgresStore closed after the test."""
    opened: list[PostgresStore] = []

    def make(
        key: str | None = None, dsn: str | None = None, create: bool = True, checkout: str = ""
    ) -> PostgresStore:
        key = key or f"pg-{uuid.uuid4().hex[:12]}"
        store = PostgresStore(dsn or pg_dsn, key, create=create, pool_size=4, checkout=checkout)
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


def fresh_database(pg_server: PgServer) -> str:
    return pg_server.create_database(f"db_{uuid.uuid4().hex[:10]}")


# many repositories, one database ------------------------------------------------------------


def test_two_repositories_in_one_database_do_not_see_each_other(open_pg, settings: Settings) -> None:  # type: ignore[no-untyped-def]
    a, b = open_pg(), open_pg()
    rev_a = commit_files(a, settings, SAMPLE)
    rev_b = commit_files(
        b, settings, {"src/app/server.py": SAMPLE["src/app/server.py"], "only_b.py": "x = 1\n"}
    )
    assert rev_a.rev == rev_b.rev == "rev-0001"  # each repository numbers its own revisions
    assert sorted(b.manifest(rev_b.rev_no)) == ["only_b.py", "src/app/server.py"]
    # The same content in two repositories is stored once in each: ids never cross.
    key = (sha(SAMPLE["src/app/server.py"]), "python", CHUNKER)
    assert a.content_ids([key])[key] != b.content_ids([key])[key]
    assert paths(lexical_candidates(b, rev_b.rev_no, "retry backoff", 10)) == []
    assert b.find_facts(rev_b.rev_no, "def", name="retry_with_backoff") == []
    assert len(a.find_facts(rev_a.rev_no, "def", name="retry_with_backoff")) == 1
    a.register_drift([DriftEvent(rev_a.rev, "create", "new.py", "guard", None, "a" * 64)])
    assert b.open_entries() == [] and len(a.open_entries()) == 1
    a.update_stat_cache({"x.py": StatEntry(1, 2, 3, 4, "s" * 64, 5)}, [])
    assert b.stat_cache() == {}
    for store, rev in ((a, rev_a), (b, rev_b)):
        chunks = store.chunks_missing_vectors(rev.rev_no, "m", 100)
        store.add_vectors("m", [(c.chunk_id, unit(str(c.chunk_id)).tobytes()) for c in chunks], 8)
    found = b.vector_search(rev_b.rev_no, "m", unit("q").tobytes(), 8, 50)
    assert {h.path for h in found} == {"only_b.py", "src/app/server.py"}
    commit_files(a, settings, {"one.py": "y = 2\n"})
    assert a.gc(1)["revisions_removed"] == 1
    assert b.current_revision() == rev_b and b.vector_coverage(rev_b.rev_no, "m") == 1.0
    b.drop_repository()
    assert a.current_revision() is not None
    with pytest.raises(IndexMissingError):
        open_pg(key=b.repo_key, create=False)


def test_lexical_ranking_matches_sqlite_on_a_real_corpus(open_pg, settings: Settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = REPO / "benchmarks" / "data" / "fastapi"
    files = sorted(root.glob("fastapi/**/*.py"))[:120] + sorted(root.glob("docs_src/**/*.py"))[:120]
    if len(files) < 50:
        pytest.skip("the fastapi bench corpus is not in this checkout")
    texts = {str(p.relative_to(root)): p.read_text(errors="replace") for p in files}
    sqlite = SqliteStore(tmp_path / "index.db", create=True)
    stores = [sqlite, open_pg()]
    revs = [commit_files(s, settings, texts) for s in stores]
    queries = [
        "dependency injection with yield", "OAuth2PasswordBearer token", "how are background tasks run",
        "websocket route", "jsonable_encoder datetime", "request validation error handler",
        "APIRouter include_router prefix", "response_model exclude unset", "UploadFile", "CORS middleware",
        "Depends security scopes", "HTTPException status code detail", "path operation decorator",
        "openapi schema generation", "query parameter alias", "Annotated Query", "lifespan startup",
        "get_openapi", "serialize pydantic model", "StreamingResponse",
    ]  # fmt: skip
    same = 0
    for q in queries:
        tops = [paths(lexical_candidates(s, r.rev_no, q, 10)) for s, r in zip(stores, revs, strict=True)]
        same += tops[0] == tops[1]
    sqlite.close()
    assert same / len(queries) >= 0.95


def test_each_checkout_keeps_its_own_file_stats_and_the_latest_writers_are_kept(  # type: ignore[no-untyped-def]
    open_pg, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pg_stats, "KEEP_CHECKOUTS", 2)
    key = f"shared-{uuid.uuid4().hex[:8]}"
    laptop, runner, other = (open_pg(key, checkout=f"{host}:/src/api") for host in ("laptop", "ci-1", "ci-2"))
    entry = StatEntry(10, 20, 30, 40, "s" * 64, 50)
    laptop.update_stat_cache({"a.py": entry}, [])
    laptop.set_guard_snapshot(b"laptop")
    assert runner.stat_cache() == {} and runner.guard_snapshot() is None
    runner.update_stat_cache({"a.py": entry._replace(inode=41)}, [])
    runner.set_guard_snapshot(b"ci-1")
    assert laptop.stat_cache() == {"a.py": entry} and laptop.guard_snapshot() == b"laptop"
    runner.update_stat_cache({}, ["a.py"])
    assert runner.stat_cache() == {} and laptop.stat_cache() == {"a.py": entry}
    # A third writer: the checkout that wrote longest ago is forgotten, stats and snapshot.
    laptop.update_stat_cache({"b.py": entry}, [])
    other.update_stat_cache({"a.py": entry}, [])
    assert laptop.stat_cache() == {"a.py": entry, "b.py": entry} and laptop.guard_snapshot() == b"laptop"
    assert runner.guard_snapshot() is None
    # A revision committed since (by any checkout) leaves every snapshot vouching for nothing.
    commit_files(other, settings, {"a.py": "x = 1\n"})
    assert laptop.guard_snapshot() is None
    laptop.set_guard_snapshot(b"laptop again")
    assert laptop.guard_snapshot() == b"laptop again"
    with psycopg.connect(laptop.dsn) as conn:
        left = conn.execute(
            "SELECT DISTINCT checkout FROM ragraf.stat_cache WHERE repo_id = %s ORDER BY 1", (laptop.repo_id,)
        ).fetchall()
    assert left == [("ci-2:/src/api",), ("laptop:/src/api",)]


def test_file_stats_written_before_checkouts_are_dropped_on_open(
    pg_server: PgServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    dsn = fresh_database(pg_server)
    with monkeypatch.context() as old_ragraf:
        old_ragraf.setattr(pg_connection, "MIGRATIONS", pg.MIGRATIONS[:5])
        PostgresStore(dsn, "repo", create=True).close()
    with psycopg.connect(dsn) as conn:
        conn.execute(
            "INSERT INTO ragraf.stat_cache (repo_id, path, size, mtime_ns, ctime_ns, inode, sha256, checked_ns) "
            "SELECT id, 'a.py', 1, 2, 3, 4, 'old', 5 FROM ragraf.repositories"
        )
        conn.execute("INSERT INTO ragraf.meta SELECT id, 'guard_snapshot', 'old' FROM ragraf.repositories")
    store = PostgresStore(dsn, "repo", checkout="laptop:/src/api")
    try:
        # Whose stats they were is unknown: every checkout hashes its files once more.
        assert store.stat_cache() == {} and store.guard_snapshot() is None
        store.update_stat_cache({"a.py": StatEntry(1, 2, 3, 4, "new", 5)}, [])
        assert store.stat_cache() == {"a.py": StatEntry(1, 2, 3, 4, "new", 5)}
    finally:
        store.close()


# the writer lock ----------------------------------------------------------------------------


def test_one_writer_per_repository_holds_the_advisory_lock(open_pg) -> None:  # type: ignore[no-untyped-def]
    first = open_pg()
    second = open_pg(key=first.repo_key)
    other = open_pg()
    with first.writer_lock(wait=False):
        with pytest.raises(LockHeldError) as err, second.writer_lock(wait=False):
            pass
        assert "ragraf writer pid" in err.value.message and str(os.getpid()) in err.value.message
        t0 = time.monotonic()
        with pytest.raises(LockHeldError), second.writer_lock(wait=True, timeout_s=0.5):
            pass
        assert time.monotonic() - t0 >= 0.5
        with other.writer_lock(wait=False):  # another repository is not blocked
            pass
    with second.writer_lock(wait=False):
        pass


def test_a_waiting_writer_gets_the_lock_when_the_holder_lets_go(open_pg) -> None:  # type: ignore[no-untyped-def]
    first = open_pg()
    second = open_pg(key=first.repo_key)
    got = threading.Event()
    with first.writer_lock(wait=False):

        def wait_for_it() -> None:
            with second.writer_lock(wait=True, timeout_s=10):
                got.set()

        thread = threading.Thread(target=wait_for_it)
        thread.start()
        time.sleep(0.3)
        assert not got.is_set()
    thread.join(10)
    assert got.is_set()


_KILLED_WRITER = """
import json, sys, time
from ragraf.store import DriftEvent, ManifestEntry, NewRevision
from ragraf.store.postgres import PostgresStore

dsn, key, manifest = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
store = PostgresStore(dsn, key)
archive = PostgresStore._archive_ledger

def stall(self, conn, closer, at):
    archive(self, conn, closer, at)
    print("inside the commit", flush=True)
    time.sleep(600)

PostgresStore._archive_ledger = stall
with store.writer_lock(wait=False):
    event = DriftEvent("rev-0001", "create", "half.py", "index", None, "c" * 64)
    store.commit_revision(NewRevision("h2", "v", None, None, [ManifestEntry(*m) for m in manifest], [event]))
"""


def test_a_killed_writer_leaves_nothing_half_visible_and_frees_the_lock(open_pg, settings: Settings) -> None:  # type: ignore[no-untyped-def]
    store = open_pg()
    one = commit_files(store, settings, SAMPLE)
    store.register_drift([DriftEvent(one.rev, "create", "seen.py", "guard", None, "d" * 64)])
    manifest = [[e.path, e.sha256, e.content_id, e.size] for e in store.manifest(one.rev_no).values()]
    child = subprocess.Popen(
        [sys.executable, "-c", _KILLED_WRITER, store.dsn, store.repo_key, json.dumps(manifest)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        ready, _, _ = select.select([child.stdout], [], [], 30)
        assert ready, (
            child.stderr.read() if child.poll() is not None else "the writer never reached its commit"
        )
        assert child.stdout.readline().strip() == "inside the commit"  # type: ignore[union-attr]
        # Mid-commit: the revision row, its manifest, the new entry and the archive exist only inside it.
        assert store.current_revision() == one
        assert store.manifest(2) == {}
        assert [e.path for e in store.open_entries()] == ["seen.py"]
        with pytest.raises(LockHeldError), store.writer_lock(wait=False):
            pass
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
        child.stdout.close()  # type: ignore[union-attr]
        child.stderr.close()  # type: ignore[union-attr]
    assert store.current_revision() == one
    assert store.archived_entries(["rev-0002"]) == []
    assert [e.path for e in store.open_entries()] == ["seen.py"]
    with store.writer_lock(wait=True, timeout_s=10):  # the server frees a dead session's lock
        two = commit_files(store, settings, SAMPLE)
    assert two.rev == "rev-0002"
    assert [e.path for e in store.archived_entries(["rev-0002"])] == ["seen.py"]


# connections --------------------------------------------------------------------------------


def test_the_next_call_after_a_server_restart_reconnects(
    open_pg, pg_server: PgServer, settings: Settings
) -> None:  # type: ignore[no-untyped-def]
    store = open_pg()
    rev = commit_files(store, settings, SAMPLE)
    assert store.current_revision() == rev
    pg_server.restart()
    assert store.current_revision() == rev
    assert paths(lexical_candidates(store, rev.rev_no, "TCPConnector", 3))[0] == "src/app/server.py"
    two = commit_files(store, settings, {"a.py": "x = 1\n"})
    assert two.rev == "rev-0002"
    with store.writer_lock(wait=False):
        pass


def test_a_server_that_is_down_gives_an_actionable_error() -> None:
    dsn = f"postgresql://postgres@127.0.0.1:{free_port()}/ragraf"
    with pytest.raises(StoreError) as err:
        PostgresStore(dsn, "x", create=True, connect_timeout_s=2)
    where = dsn.split("@")[1].split("/")[0]
    assert err.value.message == (
        f"PostgreSQL at {where} refused the connection; start it or check RAGRAF_PG_DSN"
    )
    with pytest.raises(ConfigError, match="connection string"):
        PostgresStore("", "x")


def test_a_server_going_down_later_gives_the_same_error(open_pg, pg_server: PgServer) -> None:  # type: ignore[no-untyped-def]
    store = open_pg()
    store.current_revision()
    pg_server.stop()
    try:
        with pytest.raises(StoreError, match="refused the connection; start it or check RAGRAF_PG_DSN"):
            store.current_revision()
    finally:
        pg_server.start()
    assert store.current_revision() is None


def test_a_server_without_pgvector_says_to_install_it(pg_server: PgServer) -> None:
    dsn = fresh_database(pg_server)
    empty = tempfile.mkdtemp(prefix="no-extensions-")
    os.chmod(empty, 0o755)
    # PostgreSQL 18 looks for extensions on extension_control_path: an empty folder hides pgvector.
    hidden = f"{dsn}?options=-c%20extension_control_path%3D{empty}"
    with pytest.raises(StoreError) as err:
        PostgresStore(hidden, "x", create=True)
    assert "pgvector extension is not installed" in err.value.message
    assert "CREATE EXTENSION vector" in err.value.suggest and "install pgvector" in err.value.suggest


def test_a_user_who_may_not_create_the_extension_is_told_to_ask_a_superuser(pg_server: PgServer) -> None:
    role = f"user_{uuid.uuid4().hex[:8]}"
    pg_server.psql(f"CREATE ROLE {role} LOGIN")
    db = f"db_{uuid.uuid4().hex[:10]}"
    pg_server.create_database(db, owner=role)
    with pytest.raises(StoreError) as err:
        PostgresStore(pg_server.dsn(db, user=role), "x", create=True)
    assert "vector extension is missing" in err.value.message
    assert err.value.suggest.startswith(f"run CREATE EXTENSION vector as a superuser in database {db}")
    # Once a superuser has created it, the same user builds the schema and indexes.
    pg_server.psql("CREATE EXTENSION vector", database=db)
    PostgresStore(pg_server.dsn(db, user=role), "x", create=True).close()


def test_a_schema_written_by_a_newer_ragraf_is_refused(pg_server: PgServer) -> None:
    dsn = fresh_database(pg_server)
    PostgresStore(dsn, "x", create=True).close()
    pg_server.psql("INSERT INTO ragraf.schema_version (version) VALUES (99)", database=dsn.rsplit("/", 1)[1])
    with pytest.raises(StoreError, match="newer ragraf"):
        PostgresStore(dsn, "x")


def test_reading_an_empty_database_creates_nothing(pg_server: PgServer) -> None:
    dsn = fresh_database(pg_server)
    with pytest.raises(IndexMissingError, match="ragraf index"):
        PostgresStore(dsn, "x")
    with psycopg.connect(dsn) as conn:
        assert conn.execute("SELECT to_regnamespace('ragraf')").fetchone() == (None,)


def test_first_runs_that_race_create_the_schema_once(pg_server: PgServer) -> None:
    dsn = fresh_database(pg_server)
    results: list[object] = []

    def first_run(i: int) -> None:
        try:
            store = PostgresStore(dsn, f"repo-{i % 2}", create=True, pool_size=1)
            results.append(store.repo_id)
            store.close()
        except Exception as exc:  # noqa: BLE001 - reported below
            results.append(exc)

    threads = [threading.Thread(target=first_run, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(isinstance(r, int) for r in results), results
    assert len(set(results)) == 2
    with psycopg.connect(dsn) as conn:
        versions = conn.execute("SELECT version FROM ragraf.schema_version ORDER BY version").fetchall()
    assert [v[0] for v in versions] == list(range(1, len(pg.MIGRATIONS) + 1))


# search internals ---------------------------------------------------------------------------


def test_match_strings_from_fts_match_become_tsquery_operands() -> None:
    assert match_terms(fts_match(query_terms("getUserName in HTTPServer"))) == [
        "getusername", "httpserver", "get", "user", "name", "http", "server",
    ]  # fmt: skip
    assert match_terms('"keep alive" OR "say ""hey"""') == ["keep <-> alive", "say <-> hey"]
    assert match_terms("plain words OR more") == ["plain", "words", "more"]
    assert match_terms('"!&|()" OR ":*"') == []
    assert lex_tokens("Café self.limit foo_bar 1e5 42") == [
        "cafe",
        "self",
        "limit",
        "foo",
        "bar",
        "1e5",
        "42",
    ]
    # FTS5's Porter stemmer skips tokens under 3 bytes; PostgreSQL's must not stem them either.
    short = lex_tokens("os x")
    assert short != ["os", "x"] and [t[:2] for t in short] == ["os", "x0"]
    assert match_terms('"hi there"') == [f"{lex_tokens('hi')[0]} <-> there"]


def test_hnsw_search_agrees_with_the_exact_scan(open_pg, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    store = open_pg()
    dim, n = 32, 3000
    chunks = [ChunkRecord.of(i, i + 1, i + 1, None, f"line {i}") for i in range(n)]
    content = ContentBundle(("h" * 64, "text", CHUNKER), chunks, [], "unsupported")
    ids = store.add_contents([content])
    rev = store.commit_revision(
        NewRevision("h", "v", None, None, [ManifestEntry("big.txt", "h" * 64, ids[content.key], 1)])
    )
    rng = np.random.default_rng(7)
    matrix = rng.normal(size=(n, dim)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    missing = store.chunks_missing_vectors(rev.rev_no, "m32", n)
    store.add_vectors("m32", [(c.chunk_id, matrix[i].tobytes()) for i, c in enumerate(missing)], dim)
    query = matrix[17] + 0.1 * matrix[18]
    query /= np.linalg.norm(query)
    exact = [h.chunk_id for h in store.vector_search(rev.rev_no, "m32", query.tobytes(), dim, 10)]
    monkeypatch.setattr(pg_vectors, "EXACT_VECTOR_MAX", 100)
    approx = store.vector_search(rev.rev_no, "m32", query.tobytes(), dim, 10)
    assert approx[0].chunk_id == missing[17].chunk_id
    assert len(set(exact) & {h.chunk_id for h in approx}) >= 9
    model_id = store._model("m32", dim)
    with psycopg.connect(store.dsn) as conn:
        conn.execute("SET search_path = ragraf, public")
        conn.execute("SET enable_sort = off")  # as the store does for this query
        from pgvector.psycopg import register_vector

        register_vector(conn)
        plan = conn.execute(
            psycopg.sql.SQL("EXPLAIN ") + pg.with_paths(pg.hnsw_query(model_id, dim)),
            {"vec": query, "repo": store.repo_id, "rev": rev.rev_no, "limit": 10},
        ).fetchall()
    assert any(f"vectors_hnsw_m{model_id}" in row[0] for row in plan), plan


def test_hnsw_search_answers_like_the_exact_scan_with_every_path_and_no_other_repository(
    open_pg, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    dim, n = 8, 300
    rng = np.random.default_rng(11)
    stores, revs = [], []
    for name in ("a", "b"):  # one model, so one HNSW graph holds both repositories' vectors
        store = open_pg()
        chunks = [ChunkRecord.of(i, i + 1, i + 1, None, f"{name} {i}") for i in range(n)]
        content = ContentBundle((sha(name), "text", CHUNKER), chunks, [], "unsupported")
        cid = store.add_contents([content])[content.key]
        manifest = [ManifestEntry(path, sha(name), cid, 1) for path in (f"{name}.txt", f"copy/{name}.txt")]
        rev = store.commit_revision(NewRevision(name, "v", None, None, manifest))
        matrix = rng.normal(size=(n, dim)).astype(np.float32)
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        missing = store.chunks_missing_vectors(rev.rev_no, "shared8", n)
        store.add_vectors("shared8", [(c.chunk_id, matrix[i].tobytes()) for i, c in enumerate(missing)], dim)
        stores.append(store)
        revs.append(rev)
    a = stores[0]
    query = unit("near a", dim).tobytes()
    exact = a.vector_search(revs[0].rev_no, "shared8", query, dim, 5)
    monkeypatch.setattr(pg_vectors, "EXACT_VECTOR_MAX", 0)
    approx = a.vector_search(revs[0].rev_no, "shared8", query, dim, 5)
    # A hit per path of each of the 5 chunks, best first, ties by path.
    assert len(approx) == 10 and {h.path for h in approx} == {"a.txt", "copy/a.txt"}
    key = [(h.chunk_id, h.path, h.start_line, h.text, round(h.score, 5)) for h in approx]
    assert key == [(h.chunk_id, h.path, h.start_line, h.text, round(h.score, 5)) for h in exact]
    assert pg.hnsw_ef_search(40) > 40  # a margin for the candidates the revision test drops


def test_hnsw_searches_keep_their_settings_to_their_own_connections_and_survive_a_restart(
    open_pg, pg_server: PgServer, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    store = open_pg()
    dim, n = 16, 400
    chunks = [ChunkRecord.of(i, i + 1, i + 1, None, f"row {i}") for i in range(n)]
    content = ContentBundle((sha("hnsw"), "text", CHUNKER), chunks, [], "unsupported")
    ids = store.add_contents([content])
    rev = store.commit_revision(
        NewRevision("h", "v", None, None, [ManifestEntry("rows.txt", sha("hnsw"), ids[content.key], 1)])
    )
    matrix = np.random.default_rng(3).normal(size=(n, dim)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    missing = store.chunks_missing_vectors(rev.rev_no, "m16", n)
    store.add_vectors("m16", [(c.chunk_id, matrix[i].tobytes()) for i, c in enumerate(missing)], dim)
    exact = {k: store.vector_search(rev.rev_no, "m16", matrix[5].tobytes(), dim, k) for k in (5, 40)}
    monkeypatch.setattr(pg_vectors, "EXACT_VECTOR_MAX", 0)

    def answer(k: int) -> list[int]:
        return [h.chunk_id for h in store.vector_search(rev.rev_no, "m16", matrix[5].tobytes(), dim, k)]

    # The first search sets its depth for itself; later ones run on connections of their own,
    # where another depth sets hnsw.ef_search again. Each answer is whole.
    for i, k in enumerate((40, 5, 40)):  # ends at ef_search 60 on the HNSW connection
        got = answer(k)
        assert (store._hnsw_pool is None) == (i == 0)
        assert len(got) == k and got[0] == missing[5].chunk_id
        assert len(set(got) & {h.chunk_id for h in exact[k]}) >= k - 1
    assert store._read(lambda conn: conn.execute("SHOW enable_sort").fetchone()[0]) == "on"
    assert store._read(lambda conn: conn.execute("SHOW hnsw.ef_search").fetchone()[0]) == "40"  # the default
    pg_server.restart()
    assert answer(5)[0] == missing[5].chunk_id


def test_better_chunks_of_other_revisions_are_passed_over_not_counted(
    open_pg, settings: Settings, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    # Revision 1 has many chunks that outscore everything revision 2 holds; a search of
    # revision 2 must look past all of them and still fill its answer, as SQLite does.
    old = {
        f"old/f{i}.py": f"def needle_{i}():\n    return 'needle needle needle needle'\n" for i in range(40)
    }
    new = {f"new/g{i}.py": f"def other_{i}():\n    return 'needle and {i} others'\n" for i in range(6)}
    sqlite = SqliteStore(tmp_path / "index.db", create=True)
    answers = []
    for store in (sqlite, open_pg()):
        first_rev = commit_files(store, settings, old)
        rev = commit_files(store, settings, new)
        first = lexical_candidates(store, first_rev.rev_no, "needle", 3)
        answers.append((paths(first), paths(store.lexical_search('"needle"', rev.rev_no, 4))))
    sqlite.close()
    assert all(p.startswith("old/") for p in answers[1][0])
    assert len(answers[1][1]) == 4 and all(p.startswith("new/") for p in answers[1][1])
    assert answers[0][1] == answers[1][1]


def test_the_lexical_pending_list_stays_short_under_many_commits(open_pg) -> None:  # type: ignore[no-untyped-def]
    store = open_pg()
    with psycopg.connect(store.dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pgstattuple")
    rng = np.random.default_rng(3)
    for commit in range(4):  # about 1 MB of new postings, far past the 64 kB bound
        chunks = [
            ChunkRecord.of(i, i + 1, i + 1, None, text)
            for i, text in enumerate(
                " ".join(f"w{commit}x{v}" for v in rng.integers(0, 10**6, size=120)) for _ in range(300)
            )
        ]
        content = ContentBundle((sha(f"pending {commit}"), "text", CHUNKER), chunks, [], "unsupported")
        ids = store.add_contents([content])
        store.commit_revision(
            NewRevision(
                f"p{commit}", "v", None, None, [ManifestEntry("p.txt", content.key[0], ids[content.key], 1)]
            )
        )
    with psycopg.connect(store.dsn) as conn:
        pending = conn.execute("SELECT pending_pages FROM pgstatginindex('ragraf.chunks_tsv')").fetchone()
        options = conn.execute(
            "SELECT reloptions FROM pg_class WHERE oid = 'ragraf.chunks_tsv'::regclass"
        ).fetchone()
    assert pending is not None and pending[0] <= 64 // 8 + 1
    assert options is not None and "gin_pending_list_limit=64" in options[0]


def test_content_with_nul_bytes_is_stored_not_refused(open_pg, settings: Settings) -> None:  # type: ignore[no-untyped-def]
    store = open_pg()
    rev = commit_files(store, settings, {"odd.txt": "before\x00after nulmarker\n"})
    [chunk] = store.chunks_of(rev.rev_no, "odd.txt")
    assert chunk.text.startswith("before\ufffdafter")
    assert paths(lexical_candidates(store, rev.rev_no, "nulmarker", 5)) == ["odd.txt"]


def paths(hits: list) -> list[str]:  # type: ignore[type-arg]
    return [h.path for h in hits]


def unit(seed: str, dim: int = 8) -> np.ndarray:
    v = np.random.default_rng(int(sha(seed)[:12], 16)).normal(size=dim).astype(np.float32)
    return v / np.linalg.norm(v)


def _commit_whole_manifest(self: PostgresStore, new: NewRevision) -> Revision:
    """A revision as committed before schema 7: every row of its manifest under its number."""
    with self._tx() as conn:
        nxt = conn.execute(
            "UPDATE repositories SET last_rev_no = last_rev_no + 1 WHERE id = %s RETURNING last_rev_no",
            (self.repo_id,),
        ).fetchone()[0]  # type: ignore[index]
        chunks = conn.execute(
            "SELECT coalesce(sum(n_chunks), 0) FROM contents WHERE id = ANY(%s)",
            (sorted({e.content_id for e in new.manifest}),),
        ).fetchone()[0]  # type: ignore[index]
        rev = Revision(
            nxt, f"rev-{nxt:04d}", new.corpus_hash, "2026-01-01T00:00:00+00:00", new.index_version, None, None,
            len(new.manifest), int(chunks),
        )  # fmt: skip
        conn.execute(
            "INSERT INTO revisions (repo_id, rev_no, rev, corpus_hash, created_at, index_version, git_head, "
            "git_branch, files, chunks) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (self.repo_id, *revision_values(rev)),
        )
        with conn.cursor().copy(
            "COPY manifest (repo_id, rev_no, path, sha256, content_id, size) FROM STDIN"
        ) as copy:
            for e in new.manifest:
                copy.write_row((self.repo_id, nxt, e.path, e.sha256, e.content_id, e.size))
    return rev


def test_an_index_from_an_older_ragraf_is_migrated_on_open(
    pg_server: PgServer, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    dsn = fresh_database(pg_server)
    add_contents = PostgresStore._add_contents

    def one_fact_per_use(
        self: PostgresStore, conn: psycopg.Connection, items: list[ContentBundle], *rest: object
    ) -> object:
        # Before schema 5 each use of a name was a row of facts.
        uses = [
            replace(
                item,
                facts=[
                    *item.facts,
                    *(
                        FactRecord("ref", r.name, None, container, line, line, line, None, call)
                        for r in item.refs
                        for line, call, container in unpack_sites(r.sites)
                    ),
                ],
                refs=[],
            )
            for item in items
        ]
        return add_contents(self, conn, uses, *rest)  # type: ignore[arg-type]

    with monkeypatch.context() as old_ragraf:
        old_ragraf.setattr(pg_connection, "MIGRATIONS", pg.MIGRATIONS[:2])
        old_ragraf.setattr(PostgresStore, "_add_contents", one_fact_per_use)
        old_ragraf.setattr(PostgresStore, "commit_revision", _commit_whole_manifest)
        old = PostgresStore(dsn, "repo", create=True)
        rev = commit_files(old, settings, SAMPLE)
        old.close()
    store = PostgresStore(dsn, "repo")  # a reader's open applies what is missing
    assert store.current_revision() == rev
    store.set_guard_snapshot(b"new in schema 3")
    assert store.guard_snapshot() == b"new in schema 3"
    [call] = store.find_facts(rev.rev_no, "ref", name="resolve_host")  # packed by schema 5
    assert (call.path, call.line, call.container, call.is_call) == (
        "src/app/server.py",
        11,
        "TCPConnector.connect",
        True,
    )
    store.close()
    with psycopg.connect(dsn) as conn:
        assert conn.execute("SELECT max(version) FROM ragraf.schema_version").fetchone() == (
            len(pg.MIGRATIONS),
        )


# Before schema 5, references were one row per use in facts, inserted name by name in the order
# the file first uses them.
_REFS_AS_ROWS = (
    "INSERT INTO ragraf.facts (repo_id, content_id, kind, name, name_lower, container, line, start_line, "
    "end_line, is_call) SELECT r.repo_id, r.content_id, 'ref', r.name, lower(r.name), s.value ->> 2, "
    "(s.value ->> 0)::integer, (s.value ->> 0)::integer, (s.value ->> 0)::integer, (s.value ->> 1) = '1' "
    "FROM ragraf.ref_sites r, json_array_elements(r.sites::json) WITH ORDINALITY AS s (value, i) "
    "ORDER BY r.content_id, r.ord, s.i",
    "DROP TABLE ragraf.ref_sites",
    *PG_MANIFEST_PER_REVISION,
    "DELETE FROM ragraf.schema_version WHERE version > 4",
)

# Uses on one line, a container beyond ASCII, many uses of one name in one file.
_REF_FILES = {
    **SAMPLE,
    "src/app/many.py": "from app.server import resolve_host\n\n\n"
    + "".join(f"def use_{i}():\n    resolve_host('h{i}')\n    return resolve_host\n\n\n" for i in range(30)),
    "src/app/grüße.py": "def grüße(name):\n    return resolve_host(name), Résumé(name).resolve_host\n",
}
_REF_LOOKUPS = [
    {"name": "resolve_host"},
    {"name": "RESOLVE_HOST", "exact": False},
    {"name": "Résumé"},
    {"name": "resolve_host", "path": "src/app/many.py"},
    {"path": "src/app/grüße.py"},
    {"name": "resolve_host", "limit": 7},
    {"limit": 5},
    {},
]


def _refs(store: Store, rev_no: int) -> list[list[tuple[object, ...]]]:
    return [
        [(h.name, h.path, h.line, h.container, h.is_call) for h in store.find_facts(rev_no, "ref", **lookup)]  # type: ignore[arg-type]
        for lookup in _REF_LOOKUPS
    ]


def test_references_one_row_per_use_are_packed_by_name_on_open_and_answer_the_same(
    pg_server: PgServer, settings: Settings, tmp_path: Path
) -> None:
    dsn = fresh_database(pg_server)
    store = PostgresStore(dsn, "repo", create=True)
    rev = commit_files(store, settings, _REF_FILES)
    before = _refs(store, rev.rev_no)
    assert len(before[0]) > 60 and {h[4] for h in before[0]} == {True, False}
    assert [h[3] for h in before[2]] == ["grüße"]
    assert len(before[5]) == 7 and len(before[6]) == 5
    # SQLite answers every lookup alike, in the same order.
    sqlite = SqliteStore(tmp_path / "index.db", create=True)
    assert _refs(sqlite, commit_files(sqlite, settings, _REF_FILES).rev_no) == before
    sqlite.close()
    store.close()
    with psycopg.connect(dsn, autocommit=True) as conn:
        packed = conn.execute(
            "SELECT content_id, ord, name, sites FROM ragraf.ref_sites ORDER BY 1, 2"
        ).fetchall()
        for statement in _REFS_AS_ROWS:
            conn.execute(statement)
        uses = conn.execute("SELECT count(*) FROM ragraf.facts WHERE kind = 'ref'").fetchone()[0]  # type: ignore[index]
    store = PostgresStore(dsn, "repo")
    assert _refs(store, rev.rev_no) == before
    with psycopg.connect(dsn) as conn:
        assert conn.execute("SELECT max(version) FROM ragraf.schema_version").fetchone() == (
            len(pg.MIGRATIONS),
        )
        assert conn.execute("SELECT count(*) FROM ragraf.facts WHERE kind = 'ref'").fetchone() == (0,)
        # The migration writes what pack_sites writes, byte for byte; one row per (content, name).
        assert (
            conn.execute("SELECT content_id, ord, name, sites FROM ragraf.ref_sites ORDER BY 1, 2").fetchall()
            == packed
        )
        assert len(packed) < uses / 2
    # Retention drops the references of the contents it drops.
    last = commit_files(store, settings, {"src/app/server.py": SAMPLE["src/app/server.py"]})
    store.gc(1)
    [kept] = store.find_facts(last.rev_no, "ref", name="resolve_host")
    assert kept.path == "src/app/server.py"
    server = store.manifest(last.rev_no)["src/app/server.py"].content_id
    store.close()
    with psycopg.connect(dsn) as conn:
        assert conn.execute("SELECT count(*) FROM ragraf.ref_sites").fetchone() == (
            sum(1 for content_id, *_ in packed if content_id == server),
        )


def test_bm25_statistics_follow_writes_and_retention(open_pg, settings: Settings) -> None:  # type: ignore[no-untyped-def]
    store = open_pg()
    for i in range(4):
        commit_files(store, settings, {**SAMPLE, "gen.py": f"def generation_{i}():\n    return {i}\n"})
    store.gc(2)
    with psycopg.connect(store.dsn) as conn:
        conn.execute("SET search_path = ragraf, public")
        kept = dict(
            conn.execute(
                "SELECT lexeme, df FROM lex_df WHERE repo_id = %s AND df > 0", (store.repo_id,)
            ).fetchall()
        )
        recount = dict(
            conn.execute(
                "SELECT lexeme, count(*) FROM chunks c, unnest(tsvector_to_array(c.tsv)) AS lexeme "
                "WHERE c.repo_id = %s GROUP BY lexeme",
                (store.repo_id,),
            ).fetchall()
        )
        counters = conn.execute(
            "SELECT n_chunks, n_tokens FROM repositories WHERE id = %s", (store.repo_id,)
        ).fetchone()
        actual = conn.execute(
            "SELECT count(*), sum(lex_len) FROM chunks WHERE repo_id = %s", (store.repo_id,)
        ).fetchone()
    assert kept == recount
    assert "generation_0" not in str(kept) and counters == actual


def test_maxscore_pruning_returns_what_scoring_everything_returns(
    open_pg, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    store = open_pg()
    files = {
        f"pkg/mod{i}.py": f"def handler_{i}(request):\n    value = request.{'rare_token' if i % 17 == 0 else 'common'}\n"
        f"    return common_helper(value, {i})\n" + ("# common common common\n" * (i % 5))
        for i in range(120)
    }
    rev = commit_files(store, settings, files)
    match = fts_match(query_terms("rare_token common helper request"))
    everything = store.lexical_search(match, rev.rev_no, 10)
    monkeypatch.setattr(pg_lexical, "LEXICAL_CANDIDATES", 1)
    pruned = store.lexical_search(match, rev.rev_no, 10)
    assert [(h.chunk_id, h.path, round(h.score, 9)) for h in pruned] == [
        (h.chunk_id, h.path, round(h.score, 9)) for h in everything
    ]
    assert everything[0].path in {p for p, t in files.items() if "rare_token" in t}


def test_scoring_the_chunks_with_every_term_first_returns_what_scoring_everything_returns(
    open_pg, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    import math

    store = open_pg()
    words = ("alpha", "beta", "gamma", "delta", "epsilon")
    files = {}
    for i in range(240):
        held = [w for k, w in enumerate(words) if i % (k + 2) == 0] or ["filler"]
        body = " ".join(held * (1 + i % 3)) + f"\nvalue_{i} = {i}\n" + "# padding words\n" * (i % 4)
        files[f"pkg/m{i:03d}.py"] = f"def {held[-1]}_{i}():\n    {body}\n"
    rev = commit_files(store, settings, files)
    group_passes = []
    real = store._score_groups
    monkeypatch.setattr(store, "_score_groups", lambda *a: group_passes.append(a[3]) or real(*a))
    for query in (
        "alpha beta gamma",
        "alpha beta",
        "beta delta epsilon",
        "alpha gamma epsilon delta",
        "gamma",
    ):
        match = fts_match(query_terms(query))
        for limit in (3, 10, 40):
            with store.pool.connection() as conn:  # every chunk holding any term, scored
                terms = store._term_stats(conn, match_terms(match))
                n, avgdl = terms[0][3], terms[0][4]
                idf = [max(math.log((n - t[2] + 0.5) / (t[2] + 0.5)), 1e-6) for t in terms]
                every = " | ".join(f"({t[0]})" for t in terms)
                want = store._score(conn, terms, idf, every, [], avgdl, rev.rev_no, limit)
            got = store.lexical_search(match, rev.rev_no, limit)
            assert [(h.chunk_id, h.path, round(h.score, 9)) for h in got] == [
                (r[0], r[1], round(r[3], 9)) for r in want
            ], (query, limit)
    assert group_passes  # the pass over just the sets of terms that can still reach the top ran
