"""The PostgreSQL + pgvector store: many repositories in one database, behind the SQLite store's contract.

Readers see the last committed revision (MVCC); one writer per repository holds an advisory lock;
a revision, its manifest and the ledger's archive commit in one transaction. Lexical search is
BM25 computed in SQL over a tsvector (GIN); vector search is cosine over pgvector (HNSW).

The package: connection.py holds the pools, errors, schema and writer lock (ConnectionBase);
each other module one concern's mixin (revisions, contents, lexical, facts, vectors, ledger,
stats, upkeep), tokens.py the text helpers and migrations.py the schema; PostgresStore joins them.
"""

from __future__ import annotations

from ragraf.store.postgres.connection import (
    LOCK_SCHEMA,
    LOCK_VECTOR_INDEX,
    LOCK_WRITER,
    ConnectionBase,
    describe_dsn,
)
from ragraf.store.postgres.contents import ContentsMixin
from ragraf.store.postgres.facts import FactsMixin
from ragraf.store.postgres.ledger import LedgerMixin
from ragraf.store.postgres.lexical import (
    BM25_B,
    BM25_K1,
    LEXICAL_CANDIDATES,
    LexicalMixin,
    score_query,
)
from ragraf.store.postgres.migrations import BOOTSTRAP, MIGRATIONS, SCHEMA, TS_CONFIG
from ragraf.store.postgres.revisions import RevisionsMixin
from ragraf.store.postgres.stats import (
    KEEP_CHECKOUTS,
    SET_SNAPSHOT,
    StatsMixin,
    checkout_name,
    default_repo_key,
)
from ragraf.store.postgres.tokens import lex_tokens, match_terms
from ragraf.store.postgres.upkeep import UpkeepMixin
from ragraf.store.postgres.vectors import (
    EXACT_VECTOR_MAX,
    VectorsMixin,
    hnsw_ef_search,
    hnsw_query,
    nearest_with_paths,
    with_paths,
)

__all__ = [
    "BM25_B",
    "BM25_K1",
    "BOOTSTRAP",
    "EXACT_VECTOR_MAX",
    "KEEP_CHECKOUTS",
    "LEXICAL_CANDIDATES",
    "LOCK_SCHEMA",
    "LOCK_VECTOR_INDEX",
    "LOCK_WRITER",
    "MIGRATIONS",
    "SCHEMA",
    "SET_SNAPSHOT",
    "TS_CONFIG",
    "PostgresStore",
    "checkout_name",
    "default_repo_key",
    "describe_dsn",
    "hnsw_ef_search",
    "hnsw_query",
    "lex_tokens",
    "match_terms",
    "nearest_with_paths",
    "score_query",
    "with_paths",
]


class PostgresStore(
    RevisionsMixin,
    ContentsMixin,
    LexicalMixin,
    FactsMixin,
    VectorsMixin,
    LedgerMixin,
    StatsMixin,
    UpkeepMixin,
    ConnectionBase,
):
    """Store protocol over PostgreSQL with pgvector; one instance serves one repository (repo_key)."""
