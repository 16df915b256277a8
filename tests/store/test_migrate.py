"""`ragraf migrate --from sqlite --to postgres`: an existing index moves whole, vectors included, nothing re-embedded."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import click
import numpy as np
import pytest
from click.testing import CliRunner
from support import SAMPLE, write

from ragraf.config import load_settings
from ragraf.index.indexer import run_index
from ragraf.search.engine import lexical_candidates
from ragraf.store import DriftEvent
from ragraf.store.migrate import copy_sqlite_to_postgres, register
from ragraf.store.postgres import PostgresStore
from ragraf.store.sqlite import SqliteStore

# Not the contract tests' model: one PostgreSQL database holds both tests' vectors, at other dims.
MODEL = "test/migrate-model@1"
DIM = 24
QUERIES = ["TCPConnector", "retry with exponential backoff", "http client request", "keep alive", "guide"]


def embed(text: str) -> bytes:
    """A stand-in embedder: deterministic unit vectors (migration must copy them, not recompute)."""
    rng = np.random.default_rng(abs(hash(text)) % 2**32)
    v = rng.normal(size=DIM).astype(np.float32)
    return (v / np.linalg.norm(v)).tobytes()


@pytest.fixture
def sqlite_index(tmp_path: Path) -> tuple[Path, Path]:
    """A SQLite index of the sample repository built by the real indexer: two revisions, ledger, archive, vectors."""
    root, home = tmp_path / "repo", tmp_path / "home"
    root.mkdir()
    write(root, SAMPLE)
    settings = load_settings(root, env={"RAGRAF_HOME": str(home)})
    store = SqliteStore(settings.db_path, create=True)
    run_index(store, settings)
    rev = store.current_revision()
    assert rev is not None
    old = store.manifest(rev.rev_no)["src/app/server.py"]
    store.register_drift(
        [DriftEvent(rev.rev, "modify", "src/app/server.py", "guard", old.sha256, "f" * 64, old.content_id)]
    )
    write(
        root,
        {"src/app/server.py": SAMPLE["src/app/server.py"] + "\n\ndef keepalive_probe():\n    return True\n"},
    )
    write(root, {"src/app/extra.py": "def extra_helper():\n    return 'extra'\n"})
    run_index(store, settings)
    rev = store.current_revision()
    assert rev is not None and rev.rev == "rev-0002"
    store.register_drift([DriftEvent(rev.rev, "delete", "docs/guide.md", "guard", "a" * 64, None)])
    missing = store.chunks_missing_vectors(rev.rev_no, MODEL, 10_000)
    store.add_vectors(MODEL, [(c.chunk_id, embed(c.text)) for c in missing], DIM)
    store.set_guard_snapshot(b"snapshot\x00bytes")
    store.close()
    return root, home


def _entries(entries: list) -> list[tuple]:  # type: ignore[type-arg]
    return [
        (e.rev, e.change, e.path, e.detected_by, e.detected_at, e.old_sha256, e.new_sha256, e.affected_symbols,
         e.dedupe_key, e.closed_by, len(e.affected_nodes))
        for e in entries
    ]  # fmt: skip


def test_migrate_copies_the_whole_index_and_answers_alike(
    sqlite_index: tuple[Path, Path], pg_dsn: str
) -> None:
    root, home = sqlite_index
    settings = load_settings(root, env={"RAGRAF_HOME": str(home)})
    src = SqliteStore(settings.db_path)
    dst = PostgresStore(pg_dsn, f"migrated-{uuid.uuid4().hex[:8]}", create=True)
    try:
        report = copy_sqlite_to_postgres(src, dst)
        assert (report.revisions, report.ledger_entries, report.archived_entries) == (2, 1, 3)
        assert report.vectors == dst.count_chunks(2) > 0
        assert dst.revisions() == src.revisions()
        for rev in src.revisions():
            a, b = src.manifest(rev.rev_no), dst.manifest(rev.rev_no)
            assert {p: (e.sha256, e.size) for p, e in a.items()} == {
                p: (e.sha256, e.size) for p, e in b.items()
            }
            for path in a:
                assert [
                    (c.start_line, c.end_line, c.symbol, c.text) for c in src.chunks_of(rev.rev_no, path)
                ] == [(c.start_line, c.end_line, c.symbol, c.text) for c in dst.chunks_of(rev.rev_no, path)]
                assert src.facts_status(rev.rev_no, path) == dst.facts_status(rev.rev_no, path)
            for kind in ("def", "ref", "import"):
                assert sorted(src.find_facts(rev.rev_no, kind), key=repr) == sorted(
                    dst.find_facts(rev.rev_no, kind), key=repr
                )
            # References come packed and answer in the same order too: by name, by path, cut by a limit.
            names = sorted({h.name for h in src.find_facts(rev.rev_no, "ref")})
            assert len(names) > 5
            for lookup in [*({"name": n} for n in names), *({"path": p} for p in a), {"limit": 5}]:
                assert src.find_facts(rev.rev_no, "ref", **lookup) == dst.find_facts(
                    rev.rev_no, "ref", **lookup
                )
        rev = dst.current_revision()
        assert rev is not None
        for query in QUERIES:
            want = [
                (h.path, h.start_line, round(h.score, 3))
                for h in lexical_candidates(src, rev.rev_no, query, 10)
            ]
            got = [
                (h.path, h.start_line, round(h.score, 3))
                for h in lexical_candidates(dst, rev.rev_no, query, 10)
            ]
            assert [w[:2] for w in want] == [g[:2] for g in got], query
        # Vectors were copied, not recomputed: the same query vector finds the same chunks, same scores.
        assert dst.vector_coverage(rev.rev_no, MODEL) == 1.0
        for query in QUERIES:
            q = embed(query)
            want = src.vector_search(rev.rev_no, MODEL, q, DIM, 5)
            got = dst.vector_search(rev.rev_no, MODEL, q, DIM, 5)
            assert [(h.path, h.start_line) for h in want] == [(h.path, h.start_line) for h in got]
            # float32 sums in two engines differ in the last bits: a fixed rounding can split them
            assert [h.score for h in got] == pytest.approx([h.score for h in want], abs=1e-4)
        assert _entries(dst.open_entries()) == _entries(src.open_entries())
        closers = [r.rev for r in src.revisions()]
        assert _entries(dst.archived_entries(closers)) == _entries(src.archived_entries(closers))
        assert dst.open_summary("rev-0002", ["docs/guide.md"]) == src.open_summary(
            "rev-0002", ["docs/guide.md"]
        )
        assert dst.stat_cache() == src.stat_cache()
        assert dst.guard_snapshot() == b"snapshot\x00bytes"
        # The PostgreSQL index goes on where the SQLite one stopped.
        run_index(dst, load_settings(root, env={"RAGRAF_HOME": str(home)}))
        write(root, {"new.py": "x = 1\n"})
        run_index(dst, load_settings(root, env={"RAGRAF_HOME": str(home)}))
        assert dst.current_revision().rev == "rev-0003"  # type: ignore[union-attr]
        assert [e.closed_by for e in dst.archived_entries(["rev-0003"])] == ["rev-0003"] * 2
    finally:
        src.close()
        dst.close()


def test_the_migrate_command_refuses_to_overwrite_unless_told(
    sqlite_index: tuple[Path, Path], pg_dsn: str
) -> None:
    root, home = sqlite_index
    main = click.Group()
    register(main)
    key = f"cli-{uuid.uuid4().hex[:8]}"
    args = [
        "migrate",
        "--from",
        "sqlite",
        "--to",
        "postgres",
        "--root",
        str(root),
        "--dsn",
        pg_dsn,
        "--repo-key",
        key,
    ]
    env = {"RAGRAF_HOME": str(home)}
    runner = CliRunner()
    first = runner.invoke(main, [*args, "--json"], env=env)
    assert first.exit_code == 0, first.output
    report = json.loads(first.stdout.strip().splitlines()[-1])
    assert report["op"] == "migrate" and report["revisions"] == 2 and report["vectors"] > 0
    again = runner.invoke(main, args, env=env)
    assert again.exit_code == 1
    assert "already has an index" in again.stderr and "--replace" in again.stderr
    replaced = runner.invoke(main, [*args, "--replace"], env=env)
    assert replaced.exit_code == 0, replaced.output
    assert "copied 2 revisions" in replaced.stdout
    store = PostgresStore(pg_dsn, key)
    assert [r.rev for r in store.revisions()] == ["rev-0001", "rev-0002"]
    store.close()
    down = runner.invoke(
        main, [*args[:-4], "--dsn", "postgresql://u@127.0.0.1:1/x", "--repo-key", key], env=env
    )
    assert down.exit_code == 1 and "refused the connection" in down.stderr
