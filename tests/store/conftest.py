"""Store fixtures: each test gets a fresh index in SQLite and in PostgreSQL, built from real chunks and facts."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from pg_server import pg_dsn, pg_server  # noqa: F401  (session fixtures: one server per run)
from store.sample_index import StoreFactory

from ragraf.config import Settings, load_settings
from ragraf.store import Store


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
