"""A first index builds the name-ordered indexes once, when its revision commits, not row by row
(their pages rewritten by every batch's commit wrote 37 GB for a 3.2 GB index on 104,000 files,
issue 28); a run killed before that commit leaves an index the next run or a migration completes."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from store.sample_index import SQLITE_NAMES_NUMBERED, bundle, commit_files

from ragraf.config import Settings
from ragraf.store.base import LEFTOVER_CONTENTS
from ragraf.store.sqlite import MIGRATIONS, SqliteStore
from ragraf.store.sqlite.bulk import DEFERRED_INDEXES

FILES = {
    "src/pool.py": "def acquire_connection(pool):\n    return pool.connection_for_request()\n",
    "src/retry.py": "def retry_connection(times):\n    return acquire_connection(times)\n",
}


def _indexes(db: sqlite3.Connection) -> dict[str, str]:
    return dict(db.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"))


def _plan(db: sqlite3.Connection, sql: str) -> str:
    return " ".join(row[-1] for row in db.execute(f"EXPLAIN QUERY PLAN {sql}"))


def test_a_first_revision_makes_the_indexes_its_batches_went_without(
    tmp_path: Path, settings: Settings
) -> None:
    store = SqliteStore(tmp_path / "index.db", create=True)
    schema = _indexes(store.db)
    assert set(DEFERRED_INDEXES) <= set(schema)
    store.add_contents([bundle(settings, "src/early.py", "def early():\n    return 1\n")])
    assert not set(DEFERRED_INDEXES) & set(_indexes(store.db))  # written without them
    rev = commit_files(store, settings, FILES)
    assert _indexes(store.db) == schema  # as the schema defines them, and nothing kept of the deferral
    assert store.db.execute("SELECT count(*) FROM meta WHERE key LIKE 'deferred_index:%'").fetchone()[0] == 0
    assert "facts_by_name" in _plan(store.db, "SELECT * FROM facts WHERE name_lower = 'x' AND kind = 'def'")
    assert "ref_sites_by_name" in _plan(store.db, "SELECT * FROM ref_sites WHERE name = 'x'")
    # The early content no revision names waits for gc; nothing else is amiss.
    assert [p for p in store.consistency_problems(rev.rev_no, None) if LEFTOVER_CONTENTS not in p] == []
    # Later batches, beside a revision that answers from the indexes, keep them.
    store.add_contents([bundle(settings, "src/late.py", "def late():\n    return 2\n")])
    assert _indexes(store.db) == schema


def test_a_first_run_killed_before_its_commit_leaves_an_index_the_next_run_completes(
    tmp_path: Path, settings: Settings
) -> None:
    path = tmp_path / "index.db"
    killed = SqliteStore(path, create=True)
    schema = _indexes(killed.db)
    killed.add_contents([bundle(settings, "src/early.py", "def early():\n    return 1\n")])
    killed.db.close()  # no commit, no close(): as a killed process leaves it
    again = SqliteStore(path)
    again.add_contents([bundle(settings, "src/pool.py", FILES["src/pool.py"])])
    commit_files(again, settings, FILES)
    assert _indexes(again.db) == schema


def test_a_migration_finds_the_deferred_indexes_made_first(tmp_path: Path, settings: Settings) -> None:
    path = tmp_path / "index.db"
    killed = SqliteStore(path, create=True)
    killed.add_contents([bundle(settings, "src/early.py", "def early():\n    return 1\n")])
    for statement in SQLITE_NAMES_NUMBERED:  # the file as schema 15 left it
        killed.db.execute(statement)
    killed.db.execute(f"PRAGMA user_version = {len(MIGRATIONS) - 1}")
    killed.db.close()
    migrated = SqliteStore(path)
    assert set(DEFERRED_INDEXES) <= set(_indexes(migrated.db))
    fresh = SqliteStore(tmp_path / "fresh.db", create=True)
    assert _indexes(migrated.db) == _indexes(fresh.db)
