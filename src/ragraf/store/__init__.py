"""Stores: the Store protocol and its SQLite implementation (PostgreSQL serves shared indexes)."""

from __future__ import annotations

import re

from ragraf.store.base import (
    ChunkHit,
    ChunkRecord,
    ContentBundle,
    ContentKey,
    DriftEntry,
    DriftEvent,
    FactHit,
    FactRecord,
    ManifestEntry,
    NewRevision,
    RefSites,
    Revision,
    StatEntry,
    Store,
)


def open_store(settings, create: bool = False) -> Store:  # type: ignore[no-untyped-def]
    """The store the settings name; create=True makes a new index where none exists."""
    if settings.store == "postgres":
        from ragraf.store.postgres import PostgresStore, checkout_name, default_repo_key

        # One repository per indexed root in a shared database, named by its path unless pg_repo
        # names it (checkouts at different paths, on different machines, then share one index).
        key = settings.pg_repo or default_repo_key(settings.root)
        return PostgresStore(
            settings.pg_dsn, repo_key=key, create=create, checkout=checkout_name(settings.root)
        )
    from ragraf.store.sqlite import SqliteStore

    return SqliteStore(settings.db_path, create=create, view=settings.view, label=view_label(settings.view))


def open_base(settings) -> Store:  # type: ignore[no-untyped-def]
    """The base view of a work tree's index (the same file, no view), made when absent."""
    from ragraf.store.sqlite import SqliteStore

    return SqliteStore(settings.db_path, create=True)


def view_label(view: str) -> str:
    """A work tree's name in revision names: its folder's name, tamed to [A-Za-z0-9._-]."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", view.rstrip("/").rsplit("/", 1)[-1]).strip("-.")
    return name or "tree"


def laid_over(rev: Revision) -> str | None:
    """The base revision a view's revision was laid over (rev-0012 of rev-0012+wt-feature-x.3)."""
    return rev.rev.split("+", 1)[0] if "+" in rev.rev else None


__all__ = [
    "ChunkHit", "ChunkRecord", "ContentBundle", "ContentKey", "DriftEntry", "DriftEvent", "FactHit", "FactRecord",
    "ManifestEntry", "NewRevision", "RefSites", "Revision", "StatEntry", "Store", "laid_over", "open_base", "open_store",
]  # fmt: skip
