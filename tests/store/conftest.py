"""Store fixtures: each test gets a fresh index in SQLite and in PostgreSQL, built from real chunks and facts."""

from __future__ import annotations

import importlib.util
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from pg_server import pg_dsn, pg_server  # noqa: F401  (session fixtures: one server per run)
from store.sample_index import StoreFactory

from ragraf.config import Settings, load_settings
from ragraf.store import Store

# The PostgreSQL tests need the `postgres` extra; without it they are skipped here, and in CI the
# run stops at once (a missing install must never pass for a green PostgreSQL suite).
MISSING = [m for m in ("psycopg", "psycopg_pool", "pgvector") if importlib.util.find_spec(m) is None]
IN_CI = os.environ.get("CI", "").lower() in ("true", "1")
if MISSING and IN_CI:
    pytest.exit(f"PostgreSQL tests cannot run in CI: missing {', '.join(MISSING)}", returncode=1)
collect_ignore = ["test_postgres.py", "test_migrate.py"] if MISSING else []


def pytest_report_header(config: pytest.Config) -> str | None:
    if MISSING:
        return (
            f"PostgreSQL store tests skipped: {', '.join(MISSING)} not installed (pip install '.[postgres]')"
        )
    return None


@pytest.fixture(scope="session")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return load_settings(tmp_path_factory.mktemp("settings"), env={})


@pytest.fixture(params=["sqlite", "postgres"])
def store_factory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreFactory]:
    """make(create=True) opens the test's one index; every call is a new handle on the same index."""
    opened: list[Store] = []
    if request.param == "sqlite":
        from ragraf.store.sqlite import SqliteStore

        path = tmp_path / "index.db"

        def make(create: bool = True) -> Store:
            store = SqliteStore(path, create=create)
            opened.append(store)
            return store
    else:
        if MISSING:
            pytest.skip(f"{', '.join(MISSING)} not installed")
        from ragraf.store.postgres import PostgresStore

        dsn = request.getfixturevalue("pg_dsn")
        key = f"test-{uuid.uuid4().hex[:12]}"

        def make(create: bool = True) -> Store:
            store = PostgresStore(dsn, key, create=create, pool_size=4)
            opened.append(store)
            return store

    make.kind = request.param  # type: ignore[attr-defined]
    yield make
    for store in opened:
        store.close()
