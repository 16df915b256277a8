"""The SQLite store: one WAL file; readers never wait and see the last committed revision.

The package: connection.py opens the file, checks and migrates it and holds transactions and
damage (ConnectionBase); each other module one concern's mixin (revisions, contents, facts,
vectors, ledger, stats, upkeep), sql.py the SQL several of them share and migrations.py the
schema; SqliteStore joins them.
"""

from __future__ import annotations

from ragraf.store.columns import dedupe_key
from ragraf.store.sqlite.connection import ConnectionBase, damage
from ragraf.store.sqlite.contents import ContentsMixin
from ragraf.store.sqlite.facts import FactsMixin
from ragraf.store.sqlite.ledger import LedgerMixin
from ragraf.store.sqlite.migrations import APPLICATION_ID, MIGRATIONS
from ragraf.store.sqlite.revisions import RevisionsMixin
from ragraf.store.sqlite.stats import StatsMixin
from ragraf.store.sqlite.upkeep import UpkeepMixin
from ragraf.store.sqlite.vectors import (
    PRESELECT_DEPTH,
    VectorRows,
    VectorsMixin,
    VectorView,
    quantize,
    simsimd,
)

__all__ = [
    "APPLICATION_ID",
    "MIGRATIONS",
    "PRESELECT_DEPTH",
    "SqliteStore",
    "VectorRows",
    "VectorView",
    "damage",
    "dedupe_key",
    "quantize",
    "simsimd",
]


class SqliteStore(
    RevisionsMixin,
    ContentsMixin,
    FactsMixin,
    VectorsMixin,
    LedgerMixin,
    StatsMixin,
    UpkeepMixin,
    ConnectionBase,
):
    """Store protocol over one SQLite file; `view` picks whose revisions and stat cache (a git work
    tree's, named `label` in its revisions), '' the base or the only view."""
