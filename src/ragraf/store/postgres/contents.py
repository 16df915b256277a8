"""Contents and their chunks, facts and references: content ids, storing new contents, reading chunks."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

import psycopg

from ragraf.store.base import ChunkHit, ContentBundle, ContentKey, vector_rows
from ragraf.store.postgres.migrations import SCHEMA
from ragraf.store.postgres.tokens import _clean, lex_tokens


class ContentsMixin:
    """Contents and chunks of PostgresStore."""

    repo_id: int
    _read: Callable[..., Any]
    _rows: Callable[..., list[tuple[Any, ...]]]
    _row: Callable[..., tuple[Any, ...] | None]
    _tx: Callable[..., AbstractContextManager[psycopg.Connection]]
    _rev_chunks: dict[int, int]

    def content_ids(self, keys: list[ContentKey]) -> dict[ContentKey, int]:
        if not keys:
            return {}
        return self._read(lambda conn: self._content_ids(conn, keys))

    def _content_ids(self, conn: psycopg.Connection, keys: Sequence[ContentKey]) -> dict[ContentKey, int]:
        rows = conn.execute(
            "SELECT c.sha256, c.language, c.chunker, c.id FROM contents c "
            "JOIN unnest(%s::text[], %s::text[], %s::text[]) AS k (sha256, language, chunker) "
            "ON c.sha256 = k.sha256 AND c.language = k.language AND c.chunker = k.chunker "
            "WHERE c.repo_id = %s",
            ([k[0] for k in keys], [k[1] for k in keys], [k[2] for k in keys], self.repo_id),
        ).fetchall()
        return {(r[0], r[1], r[2]): int(r[3]) for r in rows}

    def add_contents(
        self, items: list[ContentBundle], static: tuple[str, int] | None = None
    ) -> dict[ContentKey, int]:
        """Store chunks and facts of new contents in one transaction (orphans until a revision names
        them), and with `static` (model, dim) the vectors the bundles carry for that model."""
        if not items:
            return {}
        model, dim = static or ("", 0)
        vectors: list[tuple[int, bytes]] = []  # (chunk id, row) of the new chunks
        with self._tx() as conn:
            ids = self._add_contents(conn, items, vectors, dim)
            if vectors:
                model_id = self._insert_vectors(conn, model, vectors, dim)  # type: ignore[attr-defined]
                self._ensure_vector_index(conn, model_id, dim)  # type: ignore[attr-defined]
        if vectors:
            self._indexed_models.add(model_id)  # type: ignore[attr-defined]  # once committed
        return ids

    def _next_ids(self, conn: psycopg.Connection, table: str, count: int, column: str = "id") -> list[int]:
        """Ids drawn from a table's identity sequence, so COPY can write rows that refer to each other."""
        if count == 0:
            return []
        rows = conn.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s)",
            (f"{SCHEMA}.{table}", column, count),
        ).fetchall()
        return [int(r[0]) for r in rows]

    def _add_contents(
        self,
        conn: psycopg.Connection,
        items: Sequence[ContentBundle],
        vectors: list[tuple[int, bytes]],
        dim: int = 0,
    ) -> dict[ContentKey, int]:
        # The repository row lock serialises content writers of one repository, so a content is
        # never inserted twice; other repositories and every reader go on meanwhile.
        conn.execute("SELECT 1 FROM repositories WHERE id = %s FOR UPDATE", (self.repo_id,))
        ids = self._content_ids(conn, [item.key for item in items])
        new: dict[ContentKey, ContentBundle] = {}
        for item in items:
            if item.key not in ids:
                new.setdefault(item.key, item)
        if not new:
            return {item.key: ids[item.key] for item in items}
        bundles = list(new.values())
        content_ids = self._next_ids(conn, "contents", len(bundles))
        chunk_ids = iter(self._next_ids(conn, "chunks", sum(len(item.chunks) for item in bundles)))
        n_chunks = n_tokens = 0
        cur = conn.cursor()
        with cur.copy(
            "COPY contents (id, repo_id, sha256, language, chunker, n_chunks, facts_status) FROM STDIN"
        ) as copy:
            for item, content_id in zip(bundles, content_ids, strict=True):
                ids[item.key] = content_id
                copy.write_row((content_id, self.repo_id, *item.key, len(item.chunks), item.facts_status))
        with cur.copy(
            "COPY chunks (id, repo_id, content_id, ord, start_line, end_line, symbol, text, lex_body, "
            "lex_symbol, lex_len) FROM STDIN"
        ) as copy:
            for item, content_id in zip(bundles, content_ids, strict=True):
                rows = vector_rows(item, dim) if dim else []
                # Records by position (ContentBundle: plain tuples from a worker).
                for i, (ord_, start, end, name, text, tail) in enumerate(item.chunks):
                    body = lex_tokens(text + "\n" + tail)
                    symbol = lex_tokens(name or "")
                    n_chunks += 1
                    n_tokens += len(body) + len(symbol)
                    chunk_id = next(chunk_ids)
                    if rows:
                        vectors.append((chunk_id, rows[i]))
                    copy.write_row(
                        (
                            chunk_id,
                            self.repo_id,
                            content_id,
                            ord_,
                            start,
                            end,
                            _clean(name),
                            _clean(text),
                            " ".join(body),
                            " ".join(symbol),
                            len(body) + len(symbol),
                        )
                    )
        with cur.copy(
            "COPY facts (repo_id, content_id, kind, name, name_lower, def_kind, container, line, start_line, "
            "end_line, signature, is_call, body_hash) FROM STDIN"
        ) as copy:
            for item, content_id in zip(bundles, content_ids, strict=True):
                for kind, name, def_kind, container, line, first, last, sig, call, body_hash in item.facts:
                    copy.write_row(
                        (
                            self.repo_id,
                            content_id,
                            kind,
                            _clean(name),
                            _clean(name.lower()),
                            def_kind,
                            _clean(container),
                            line,
                            first,
                            last,
                            _clean(sig),
                            call,
                            body_hash,
                        )
                    )
        if any(item.refs for item in bundles):
            with cur.copy("COPY ref_sites (repo_id, ord, content_id, name, sites) FROM STDIN") as copy:
                for item, content_id in zip(bundles, content_ids, strict=True):
                    for ord_, (name, sites) in enumerate(item.refs):
                        # JSON escapes every control character, so packed sites never hold a NUL.
                        copy.write_row((self.repo_id, ord_, content_id, _clean(name), sites))
        # BM25 needs the row count, the mean length and each term's document frequency; counters
        # kept here beat a scan on every query. Sorted lexemes: concurrent upserts never deadlock.
        conn.execute(
            "UPDATE repositories SET n_chunks = n_chunks + %s, n_tokens = n_tokens + %s WHERE id = %s",
            (n_chunks, n_tokens, self.repo_id),
        )
        conn.execute(
            "INSERT INTO lex_df (repo_id, lexeme, df) SELECT %s, lexeme, count(*) FROM chunks c, "
            "unnest(tsvector_to_array(c.tsv)) AS lexeme WHERE c.content_id = ANY(%s) GROUP BY lexeme "
            "ORDER BY lexeme ON CONFLICT (repo_id, lexeme) DO UPDATE SET df = lex_df.df + excluded.df",
            (self.repo_id, content_ids),
        )
        return {item.key: ids[item.key] for item in items}

    def count_chunks(self, rev_no: int) -> int:
        if rev_no in self._rev_chunks:
            return self._rev_chunks[rev_no]  # a committed revision never changes
        row = self._row(
            "SELECT chunks FROM revisions WHERE repo_id = %s AND rev_no = %s", (self.repo_id, rev_no)
        )
        if row is None:
            return 0
        self._rev_chunks[rev_no] = int(row[0])
        return int(row[0])

    def chunks_of(self, rev_no: int, path: str) -> list[ChunkHit]:
        rows = self._rows(
            "SELECT c.id, m.path, c.start_line, c.end_line, c.symbol, c.text, m.sha256 FROM manifest m "
            "JOIN chunks c ON c.content_id = m.content_id WHERE m.repo_id = %s AND m.rev_no = %s "
            "AND m.path = %s ORDER BY c.ord",
            (self.repo_id, rev_no, path),
        )
        return [ChunkHit(r[0], r[1], r[2], r[3], r[4], r[5], 0.0, r[6]) for r in rows]

    def chunks_of_paths(self, rev_no: int, paths: list[str]) -> dict[str, list[ChunkHit]]:
        """chunks_of for several paths in one round trip; a path the revision lacks maps to []."""
        out: dict[str, list[ChunkHit]] = {path: [] for path in paths}
        if not paths:
            return out
        rows = self._rows(
            "SELECT c.id, m.path, c.start_line, c.end_line, c.symbol, c.text, m.sha256 FROM manifest m "
            "JOIN chunks c ON c.content_id = m.content_id WHERE m.repo_id = %s AND m.rev_no = %s "
            "AND m.path = ANY(%s) ORDER BY m.path, c.ord",
            (self.repo_id, rev_no, list(out)),
        )
        for r in rows:
            out[r[1]].append(ChunkHit(r[0], r[1], r[2], r[3], r[4], r[5], 0.0, r[6]))
        return out
