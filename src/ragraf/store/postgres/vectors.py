"""Vectors: models, chunks missing vectors, storing them, the HNSW index, coverage and vector search."""

from __future__ import annotations

import functools
import threading
import weakref
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

import numpy as np
import psycopg
from psycopg import sql
from psycopg_pool import ConnectionPool

from ragraf.store.base import ChunkHit
from ragraf.store.postgres.connection import LOCK_VECTOR_INDEX
from ragraf.store.postgres.migrations import SCHEMA

# Below this many chunks in a revision an exact scan is fast and exact like SQLite's; above it HNSW.
EXACT_VECTOR_MAX = 20_000


class VectorsMixin:
    """Vector storage and search of PostgresStore."""

    repo_id: int
    _read: Callable[..., Any]
    _rows: Callable[..., list[tuple[Any, ...]]]
    _row: Callable[..., tuple[Any, ...] | None]
    _tx: Callable[..., AbstractContextManager[psycopg.Connection]]
    _models: dict[tuple[str, int], int]
    _indexed_models: set[int]
    _covered: set[tuple[int, str]]
    _hnsw_searched: bool
    _hnsw_ef: weakref.WeakKeyDictionary[psycopg.Connection, int]
    _pool_lock: threading.Lock
    _hnsw_connections: Callable[[], ConnectionPool]
    count_chunks: Callable[[int], int]

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

    def chunks_with_vectors(self, model: str, chunk_ids: list[int]) -> set[int]:
        """Those of the chunks that have a vector of model."""
        rows = self._rows(
            "SELECT chunk_id FROM vectors WHERE repo_id = %s AND chunk_id = ANY(%s) "
            "AND model_id IN (SELECT id FROM models WHERE name = %s)",
            (self.repo_id, list(chunk_ids), model),
        )
        return {int(r[0]) for r in rows}

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
