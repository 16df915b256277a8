"""Vectors: storing them, coverage of a revision, and cosine search with an int8 first pass."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:  # numpy is imported where vectors are used: a lookup or lexical search never loads it
    import numpy as np

try:  # SIMD int8 dot products; without it every search scores all rows in float32, as numpy does
    import simsimd
except ImportError:  # pragma: no cover - a dependency, absent only in a broken install
    simsimd = None

from ragraf.store.base import ChunkHit
from ragraf.store.sqlite.sql import _covered_key

# Rows an int8 pass keeps for exact scoring (at least ten per result): at 110,000 vectors it finds
# every one of the true 40 nearest among its best 200, and the pass costs 2.5 against 21 ms of CPU.
PRESELECT_DEPTH = 500


class VectorsMixin:
    """Vectors of SqliteStore."""

    db: sqlite3.Connection
    _vector_rows: dict[tuple[str, int], VectorRows]
    _covered: set[tuple[int, str]]
    _coverage_seen: dict[tuple[int, str], tuple[tuple[int, int], float]]
    transaction: Callable[[], AbstractContextManager[sqlite3.Connection]]
    count_chunks: Callable[[int], int]

    def chunks_missing_vectors(
        self, rev_no: int, model: str, limit: int, after_id: int = 0
    ) -> list[ChunkHit]:
        """Chunks of a revision without a vector for model, by id after after_id (each chunk once)."""
        fresh, args = self._unvouched_contents(rev_no, model)
        rows = self.db.execute(
            f"WITH fresh AS MATERIALIZED ({fresh}) "
            "SELECT c.id, min(m.path), c.start_line, c.end_line, c.symbol, c.text FROM fresh f "
            "JOIN chunks c ON c.content_id = f.content_id "
            "JOIN manifest m ON m.rev_no = ? AND m.content_id = c.content_id "
            "WHERE c.id > ? AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.model = ? AND v.chunk_id = c.id) "
            "GROUP BY c.id ORDER BY c.id LIMIT ?",
            (*args, rev_no, after_id, model, limit),
        ).fetchall()
        return [ChunkHit(r[0], r[1], r[2], r[3], r[4], r[5], 0.0) for r in rows]

    def _unvouched_contents(self, rev_no: int, model: str) -> tuple[str, tuple[int, ...]]:
        """A query for the revision's contents that may lack vectors of model: those the newest
        earlier fully embedded revision does not hold (so a one-file revision checks one content,
        not 100,000), or all of them when no earlier revision is fully embedded."""
        covered = [
            int(key.split(":", 2)[1])
            for (key,) in self.db.execute("SELECT key FROM meta WHERE key LIKE 'covered:%'")
            if key.split(":", 2)[2:] == [model] and int(key.split(":", 2)[1]) < rev_no
        ]
        if not covered:
            return "SELECT DISTINCT content_id FROM manifest WHERE rev_no = ?", (rev_no,)
        return (
            "SELECT DISTINCT m.content_id FROM manifest m WHERE m.rev_no = ? AND NOT EXISTS "
            "(SELECT 1 FROM manifest r WHERE r.rev_no = ? AND r.content_id = m.content_id)",
            (rev_no, max(covered)),
        )

    def add_vectors(self, model: str, items: list[tuple[int, bytes]], dim: int) -> None:
        if not items:
            return
        with self.transaction() as db:
            db.executemany(
                "INSERT OR REPLACE INTO vectors (chunk_id, model, dim, vec) VALUES (?, ?, ?, ?)",
                [(chunk_id, model, dim, blob) for chunk_id, blob in items],
            )

    def vector_coverage(self, rev_no: int, model: str) -> float:
        """The share of the revision's chunks with a vector of model; a revision once fully embedded
        stays so (its content never changes), which the indexer records (mark_covered)."""
        if (rev_no, model) in self._covered:
            return 1.0
        # A partial tier is counted again only after a write: each search asks (7 ms at 25% of zod).
        stamp = self._change_stamp()
        seen = self._coverage_seen.get((rev_no, model))
        if seen is not None and seen[0] == stamp:
            return seen[1]
        if self.db.execute("SELECT 1 FROM meta WHERE key = ?", (_covered_key(rev_no, model),)).fetchone():
            self._covered.add((rev_no, model))
            return 1.0
        fresh, args = self._unvouched_contents(rev_no, model)
        missing = self.db.execute(
            f"SELECT count(*) FROM chunks c WHERE c.content_id IN ({fresh}) "
            "AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.chunk_id = c.id AND v.model = ?)",
            (*args, model),
        ).fetchone()[0]
        total = self.count_chunks(rev_no)
        if not missing:
            self._covered.add((rev_no, model))
        share = 1.0 if not total else (total - missing) / total
        self._coverage_seen[(rev_no, model)] = (stamp, share)
        return share

    def _change_stamp(self) -> tuple[int, int]:
        """Changes the database has seen: other connections' commits (SQLite's data_version) and the
        rows this connection has written. Taken before a read, an equal stamp later means its answer holds."""
        return self.db.execute("PRAGMA data_version").fetchone()[0], self.db.total_changes

    def chunks_with_vectors(self, model: str, chunk_ids: list[int]) -> set[int]:
        """Those of the chunks that have a vector of model."""
        found: set[int] = set()
        for i in range(0, len(chunk_ids), 500):
            batch = chunk_ids[i : i + 500]
            found.update(
                r[0]
                for r in self.db.execute(
                    f"SELECT chunk_id FROM vectors WHERE model = ? AND chunk_id IN ({','.join('?' * len(batch))})",
                    (model, *batch),
                )
            )
        return found

    def mark_covered(self, rev_no: int, model: str) -> None:
        """Record that every chunk of the revision has a vector of model (the writer says so)."""
        with self.transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, '1')", (_covered_key(rev_no, model),)
            )

    def _vectors(self, rev_no: int, model: str, dim: int) -> VectorView:
        """The model's rows and those of the revision: vectors read once per content and kept, so a
        new revision reads only the contents it adds (a commit rewrites a few files, not every vector)."""
        pool = self._vector_rows.get((model, dim))
        if pool is None:
            # The two tiers of an index (static and transformer) each keep their rows; a third
            # model (another embedder configured meanwhile) pushes out the one read first.
            while len(self._vector_rows) >= 2:
                del self._vector_rows[next(iter(self._vector_rows))]
            pool = self._vector_rows[(model, dim)] = VectorRows(model, dim)
        with pool.lock:
            # Vectors of its partial contents can land only with a write: without one, no count.
            stamp = self._change_stamp()
            if pool.rev_no != rev_no or (
                pool.stamp != stamp and self._partial_count(pool) != pool.partial_count
            ):
                self._select(pool, rev_no)
            pool.stamp = stamp
            n = pool.n  # views taken under the lock: a later read may grow or compact the pool
            return VectorView(pool.ids[:n], pool.matrix[:n], pool.codes[:n], pool.scales[:n], pool.selected)

    def _partial_count(self, pool: VectorRows) -> int:
        """Vectors stored so far for the revision's contents that were not fully embedded when read."""
        count = 0
        for i in range(0, len(pool.partial), 500):
            batch = pool.partial[i : i + 500]
            # Driven from the few contents' chunks: a join may otherwise walk every vector of the model.
            count += self.db.execute(
                f"SELECT count(*) FROM chunks c WHERE c.content_id IN ({','.join('?' * len(batch))}) AND EXISTS "
                "(SELECT 1 FROM vectors v WHERE v.model = ? AND v.chunk_id = c.id AND v.dim = ?)",
                (*batch, pool.model, pool.dim),
            ).fetchone()[0]
        return count

    def _select(self, pool: VectorRows, rev_no: int) -> None:
        """Point the pool at a revision, reading the vectors of contents it has not kept yet."""
        import numpy as np

        # A content is its (id, sha256, language, chunker): an id SQLite reuses after retention
        # names another content, whose rows are read afresh.
        contents = self.db.execute(
            "SELECT DISTINCT c.id, c.sha256, c.language, c.chunker FROM manifest m "
            "JOIN contents c ON c.id = m.content_id WHERE m.rev_no = ?",
            (rev_no,),
        ).fetchall()
        known = pool.rows
        partial: list[tuple[int, bytes]] = []
        pool.partial = []
        fresh = [key for key in contents if key not in known]
        for i in range(0, len(fresh), 500):
            batch = {key[0]: key for key in fresh[i : i + 500]}
            found: dict[int, list[tuple[int, bytes | None]]] = {content_id: [] for content_id in batch}
            for content_id, chunk_id, vec in self.db.execute(
                "SELECT c.content_id, c.id, v.vec FROM chunks c LEFT JOIN vectors v "
                "ON v.model = ? AND v.chunk_id = c.id AND v.dim = ? "
                f"WHERE c.content_id IN ({','.join('?' * len(batch))})",
                (pool.model, pool.dim, *batch),
            ):
                found[content_id].append((chunk_id, vec))
            for content_id, chunks in found.items():
                have = [(chunk_id, vec) for chunk_id, vec in chunks if vec is not None]
                if len(have) == len(chunks):
                    known[batch[content_id]] = pool.append(have)
                else:  # not fully embedded yet: used, but read again once more of it is
                    partial.extend(have)
                    pool.partial.append(content_id)
        parts = [known[key] for key in contents if key in known]
        if partial:
            parts.append(pool.append(partial))
        selected = np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)
        if pool.n > 2 * len(selected) + 4096:
            selected = pool.compact([key for key in contents if key in known], selected)
        # In chunk id order, as one read of the revision lists them, so ties rank alike.
        pool.selected = selected[np.argsort(pool.ids[selected], kind="stable")]
        pool.partial_count = len(partial)
        pool.rev_no = rev_no

    def vector_search(self, rev_no: int, model: str, query: bytes, dim: int, limit: int) -> list[ChunkHit]:
        """Cosine similarity (vectors are unit length) over the chunks of one revision."""
        import numpy as np

        view = self._vectors(rev_no, model, dim)
        selected = view.selected
        if not len(selected) or limit <= 0:
            return []
        vec = np.frombuffer(query, dtype=np.float32)
        depth = max(PRESELECT_DEPTH, 10 * limit)
        if simsimd is not None and len(selected) > 2 * depth:
            # The int8 pass picks the few rows worth an exact score; only their float32 rows are
            # read. Sorted back, they keep the revision's chunk id order, so ties rank as before.
            query_codes, _ = quantize(vec[None])  # its scale is one factor for every row: no need
            approx = np.asarray(simsimd.cdist(query_codes, view.codes, metric="dot"))
            approx = approx.ravel()[selected] * view.scales[selected]
            selected = selected[np.sort(np.argpartition(-approx, depth)[:depth])]
        ids = view.ids[selected]
        # Not `@`: OpenBLAS threads a 1,000-row product and its idle threads then spin, which cost a
        # search 15-25 CPU-ms more than the product itself (~0.1 ms this way).
        scores = np.einsum("ij,j->i", view.matrix[selected], vec)
        top = np.argpartition(-scores, min(limit, len(ids) - 1))[:limit]
        top = top[np.argsort(-scores[top])]
        best = {int(ids[i]): float(scores[i]) for i in top}
        marks = ",".join("?" * len(best))
        # CROSS JOIN keeps the best chunks outside: else the whole revision's manifest is walked (~25 ms).
        rows = self.db.execute(
            "SELECT c.id, m.path, c.start_line, c.end_line, c.symbol, c.text, m.sha256 FROM chunks c "
            "CROSS JOIN manifest m ON m.content_id = c.content_id AND m.rev_no = ? "
            f"WHERE c.id IN ({marks})",
            (rev_no, *best),
        ).fetchall()
        hits = [ChunkHit(r[0], r[1], r[2], r[3], r[4], r[5], best[r[0]], r[6]) for r in rows]
        hits.sort(key=lambda h: (-h.score, h.path, h.start_line))
        return hits


class VectorView(NamedTuple):
    """A consistent view of a model's rows: chunk ids, float32 vectors, int8 codes and scales, and
    the row numbers of one revision."""

    ids: np.ndarray
    matrix: np.ndarray
    codes: np.ndarray
    scales: np.ndarray
    selected: np.ndarray


class VectorRows:
    """The unit vectors of one (model, dim) a store has read, by content, in one growing matrix."""

    def __init__(self, model: str, dim: int) -> None:
        import numpy as np

        self.model = model
        self.dim = dim
        self.ids = np.empty(0, dtype=np.int64)
        self.matrix = np.empty((0, dim), dtype=np.float32)
        # int8 copies and their per-row scales: a first pass over a large revision reads a quarter
        # of the bytes (the scan is memory-bound), then the float32 rows of the best few decide.
        self.codes = np.empty((0, dim), dtype=np.int8)
        self.scales = np.empty(0, dtype=np.float32)
        self.n = 0
        self.rows: dict[tuple[int, str, str, str], np.ndarray] = {}  # fully embedded content -> its rows
        self.rev_no: int | None = None
        self.selected = np.empty(0, dtype=np.int64)
        self.partial: list[int] = []  # the selected revision's contents not fully embedded when read
        self.partial_count = 0  # their vectors then
        self.stamp: tuple[int, int] | None = None  # the database's change stamp when last checked
        self.lock = threading.Lock()

    def append(self, items: list[tuple[int, bytes]]) -> np.ndarray:
        """Add (chunk id, vector) rows; returns their row numbers."""
        import numpy as np

        need = self.n + len(items)
        if need > len(self.ids):
            size = max(need, len(self.ids) * 3 // 2, 1024)
            ids = np.empty(size, dtype=np.int64)
            matrix = np.empty((size, self.dim), dtype=np.float32)
            codes = np.empty((size, self.dim), dtype=np.int8)
            scales = np.empty(size, dtype=np.float32)
            ids[: self.n] = self.ids[: self.n]
            matrix[: self.n] = self.matrix[: self.n]
            codes[: self.n] = self.codes[: self.n]
            scales[: self.n] = self.scales[: self.n]
            self.ids, self.matrix, self.codes, self.scales = ids, matrix, codes, scales
        rows = np.arange(self.n, need, dtype=np.int64)
        if items:
            self.ids[rows] = [chunk_id for chunk_id, _ in items]
            vectors = np.frombuffer(b"".join(v for _, v in items), dtype=np.float32).reshape(-1, self.dim)
            self.matrix[rows] = vectors
            self.codes[rows], self.scales[rows] = quantize(vectors)
        self.n = need
        return rows

    def compact(self, keep: list[tuple[int, str, str, str]], selected: np.ndarray) -> np.ndarray:
        """Keep only the rows of `keep` (and `selected`, the current revision's); returns selected renumbered."""
        import numpy as np

        order = np.unique(np.concatenate([selected, *(self.rows[key] for key in keep)]))
        renumber = np.full(self.n, -1, dtype=np.int64)
        renumber[order] = np.arange(len(order), dtype=np.int64)
        self.ids = self.ids[order]
        self.matrix = self.matrix[order]
        self.codes = self.codes[order]
        self.scales = self.scales[order]
        self.n = len(order)
        self.rows = {key: renumber[self.rows[key]] for key in keep}
        return renumber[selected]


def quantize(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 codes of float32 rows, each scaled by its own largest component, and those scales."""
    import numpy as np

    scales = np.abs(vectors).max(axis=1) / 127.0
    scales[scales == 0] = 1.0
    codes = np.rint(vectors / scales[:, None]).astype(np.int8)
    return codes, scales.astype(np.float32)
