"""Contents and their chunks: storing them, reading a revision's chunks, and lexical (BM25) search."""

from __future__ import annotations

import math
import re
import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import NamedTuple

from ragraf.store.base import ChunkHit, ContentBundle, ContentKey, vector_rows
from ragraf.store.sqlite.bulk import defer_indexes
from ragraf.store.sqlite.sql import pack_text

_CURRENT_FTS = (
    "SELECT rowid AS id, bm25(chunks_fts, 1.0, 4.0) AS score FROM chunks_fts WHERE chunks_fts MATCH ?"
)
_RETAINED_FTS = (
    "SELECT rowid AS id, bm25(chunks_fts_retained, 1.0, 4.0) AS score FROM chunks_fts_retained "
    "WHERE chunks_fts_retained MATCH ?"
)

_TERM = re.compile(r'"((?:[^"]|"")*)"')
# FTS5's bm25 constants: no chunk gets more than idf * (K1 + 1) from one term, whatever its weights.
_K1 = 1.2
# Rows the common terms of a query must match before it is answered in two steps (below, the one
# statement is as cheap); tests lower it.
PRUNE_ROWS = 20_000


def _varint(blob: bytes) -> int:
    """The first SQLite varint of a blob (FTS5's averages record opens with the number of rows)."""
    value = 0
    for byte in blob[:9]:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            break
    return value


def _any(terms: list[str]) -> str:
    """An FTS5 MATCH string OR-ing terms as _TERM found them (quotes inside still doubled)."""
    return " OR ".join(f'"{t}"' for t in terms)


def _idf(rows: int, hits: int) -> float:
    """FTS5's bm25 IDF of a phrase matching `hits` of `rows` rows."""
    idf = math.log((rows - hits + 0.5) / (hits + 0.5))
    return idf if idf > 0.0 else 1e-6


class _TermCounts(NamedTuple):
    """The rows of the current lexical table each term of a query matches, and all its rows."""

    terms: list[str]
    hits: dict[str, int]
    rows: int
    version: int  # PRAGMA data_version when counted

    def without_idle_terms(self, pool: int) -> tuple[str, _TermCounts]:
        """The match without the terms in half the rows or more, when the others alone fill the pool.

        FTS5 gives such a term its floor IDF of 1e-6: it moves no score by more than a millionth, but
        bm25 still walks its every occurrence in every row it holds (a repository's own name, `zod` in
        97% of zod's chunks, was half the lexical search's time). Rows it alone matches would close the
        pool with scores of ~0, so it is dropped only when another term matches a whole pool of rows.
        """
        live = [t for t in self.terms if _idf(self.rows, self.hits[t]) > 1e-6]
        if len(live) == len(self.terms) or not live or max(self.hits[t] for t in live) < pool:
            return _any(self.terms), self
        return _any(live), self._replace(terms=live)


class ContentsMixin:
    """Contents, chunks and lexical search of SqliteStore."""

    db: sqlite3.Connection
    transaction: Callable[[], AbstractContextManager[sqlite3.Connection]]

    def content_ids(self, keys: list[ContentKey]) -> dict[ContentKey, int]:
        """The stored ids of these contents, asked 500 hashes at a time."""
        wanted = set(keys)
        found: dict[ContentKey, int] = {}
        shas = sorted({key[0] for key in wanted})
        for i in range(0, len(shas), 500):
            part = shas[i : i + 500]
            for row_id, *key in self.db.execute(
                f"SELECT id, sha256, language, chunker FROM contents WHERE sha256 IN ({','.join('?' * len(part))})",
                part,
            ):
                if tuple(key) in wanted:
                    found[tuple(key)] = row_id  # type: ignore[index]
        return found

    def add_contents(
        self, items: list[ContentBundle], static: tuple[str, int] | None = None
    ) -> dict[ContentKey, int]:
        """Store chunks and facts of new contents in one transaction (orphans until a revision names
        them), and with `static` (model, dim) the vectors the bundles carry for that model."""
        ids: dict[ContentKey, int] = {}
        model, dim = static or ("", 0)
        with self.transaction() as db:
            held = self.content_ids([item.key for item in items])  # stored before, by another path or run
            # Ids are given here, as SQLite would (the highest plus one), so that each table takes
            # one statement per batch rather than several per file.
            content_id = db.execute("SELECT coalesce(max(id), 0) FROM contents").fetchone()[0]
            chunk_id = db.execute("SELECT coalesce(max(id), 0) FROM chunks").fetchone()[0]
            contents, chunks, pending, facts, refs, vectors = [], [], [], [], [], []
            for item in items:
                key = item.key
                if key in held or key in ids:
                    ids[key] = held.get(key) or ids[key]
                    continue
                content_id += 1
                ids[key] = content_id
                contents.append((content_id, *key, len(item.chunks), item.facts_status))
                rows = vector_rows(item, dim) if dim else []
                # Records by position (ContentBundle: plain tuples from a worker).
                for i, (ord_, start, end, symbol, text, tail) in enumerate(item.chunks):
                    chunk_id += 1
                    if rows:
                        vectors.append((chunk_id, model, dim, rows[i]))
                    chunks.append((chunk_id, content_id, ord_, start, end, symbol, pack_text(text)))
                    pending.append((chunk_id, text + "\n" + tail, symbol or ""))
                facts += [
                    (
                        content_id,
                        kind,
                        name,
                        name.lower(),
                        def_kind,
                        container,
                        line,
                        first,
                        last,
                        sig,
                        int(call),
                        body,
                    )
                    for kind, name, def_kind, container, line, first, last, sig, call, body in item.facts
                ]
                refs += [(content_id, name, sites) for name, sites in item.refs]
            db.executemany(
                "INSERT INTO contents (id, sha256, language, chunker, n_chunks, facts_status) VALUES (?, ?, ?, ?, ?, ?)",
                contents,
            )
            db.executemany(
                "INSERT INTO chunks (id, content_id, ord, start_line, end_line, symbol, text) VALUES (?, ?, ?, ?, ?, ?, ?)",
                chunks,
            )
            # A store without a revision answers nothing, so its lexical rows need not wait: they go
            # straight into chunks_fts (each body written once, not also into and out of pending_fts),
            # and the commit of its first revision drops those it does not name (a killed run's).
            first = db.execute("SELECT NOT EXISTS (SELECT 1 FROM revisions)").fetchone()[0]
            if first:
                defer_indexes(db)  # made once when the first revision commits (bulk.py)
            lexical = "chunks_fts (rowid, body, symbol)" if first else "pending_fts (chunk_id, body, symbol)"
            db.executemany(f"INSERT INTO {lexical} VALUES (?, ?, ?)", pending)
            # each name of a definition or a use numbered once (schema 16): a repo map reads the numbers
            named = {f[2] for f in facts if f[1] == "def"} | {r[1] for r in refs}
            db.executemany("INSERT OR IGNORE INTO names (name) VALUES (?)", [(n,) for n in named])
            db.executemany(
                "INSERT INTO facts (content_id, kind, name, name_lower, def_kind, container, line, start_line, "
                "end_line, signature, is_call, body_hash, name_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, "
                "?10, ?11, ?12, (SELECT id FROM names WHERE name = ?3 AND ?2 = 'def'))",
                facts,
            )
            db.executemany(
                "INSERT INTO ref_sites (content_id, name, sites, uses, name_id) VALUES "
                "(?1, ?2, ?3, json_array_length(?3), (SELECT id FROM names WHERE name = ?2))",
                refs,
            )
            db.executemany("INSERT INTO vectors (chunk_id, model, dim, vec) VALUES (?, ?, ?, ?)", vectors)
        return ids

    def count_chunks(self, rev_no: int) -> int:
        row = self.db.execute("SELECT chunks FROM revisions WHERE rev_no = ?", (rev_no,)).fetchone()
        return int(row[0]) if row else 0

    def chunks_of(self, rev_no: int, path: str) -> list[ChunkHit]:
        rows = self.db.execute(
            "SELECT c.id, m.path, c.start_line, c.end_line, c.symbol, c.text, m.sha256 FROM manifest m "
            "JOIN chunks c ON c.content_id = m.content_id WHERE m.rev_no = ? AND m.path = ? ORDER BY c.ord",
            (rev_no, path),
        ).fetchall()
        return [ChunkHit(r[0], r[1], r[2], r[3], r[4], r[5], 0.0, r[6]) for r in rows]

    def chunks_of_paths(self, rev_no: int, paths: list[str]) -> dict[str, list[ChunkHit]]:
        """chunks_of for several paths; a path the revision lacks maps to []."""
        return {path: self.chunks_of(rev_no, path) for path in paths}  # in-process: no round trips to save

    def lexical_search(self, match: str, rev_no: int, limit: int) -> list[ChunkHit]:
        """BM25 over chunk text and symbols, restricted to the chunks of one revision."""
        counts = self._term_counts(match, rev_no)
        if counts is not None:
            match, counts = counts.without_idle_terms(limit * 3 + 20)
            found = self._lexical_pruned(match, rev_no, limit, counts)
            if found is not None:
                return found
        # The current revisions (one per view) share the lexical index, so over-fetch before the
        # manifest filter; an older revision also needs the rows of what it alone still names. One
        # statement, so a commit in between cannot move rows out from under the question.
        rows = self.db.execute(
            f"WITH hits AS MATERIALIZED (SELECT id, score FROM ({_CURRENT_FTS} UNION ALL {_RETAINED_FTS} "
            "  AND ? NOT IN (SELECT max(rev_no) FROM revisions GROUP BY view)) ORDER BY score LIMIT ?) "
            "SELECT c.id, m.path, c.start_line, c.end_line, c.symbol, c.text, -hits.score, m.sha256 "
            "FROM hits JOIN chunks c ON c.id = hits.id "
            "JOIN manifest m ON m.content_id = c.content_id AND m.rev_no = ? "
            "ORDER BY hits.score, m.path, c.start_line LIMIT ?",
            (match, match, rev_no, limit * 3 + 20, rev_no, limit),
        ).fetchall()
        return [ChunkHit(r[0], r[1], r[2], r[3], r[4], r[5], float(r[6]), r[7]) for r in rows]

    def _term_counts(self, match: str, rev_no: int) -> _TermCounts | None:
        """How many rows of the current lexical table each term of an OR of terms matches; None for
        another kind of match, one term, or an older revision (which also reads the retained rows)."""
        terms = _TERM.findall(match)
        if len(terms) < 2 or _TERM.sub("", match).replace(" OR ", "").strip():
            return None
        version = self.db.execute("PRAGMA data_version").fetchone()[0]
        head = self.db.execute(
            "SELECT (SELECT block FROM chunks_fts_data WHERE id = 1), "
            "? IN (SELECT max(rev_no) FROM revisions GROUP BY view)"
            + ", (SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?)"
            * len(terms),
            (rev_no, *(_any([t]) for t in terms)),
        ).fetchone()
        block, current = head[0], head[1]
        if not current or not isinstance(block, bytes):
            return None
        return _TermCounts(terms, dict(zip(terms, head[2:], strict=True)), _varint(block), version)

    def _lexical_pruned(
        self, match: str, rev_no: int, limit: int, counts: _TermCounts | None = None
    ) -> list[ChunkHit] | None:
        """The same answer as the one statement, scoring only the rows holding a query's rarer terms;
        None when that cannot be shown to be the same (then the one statement answers).

        FTS5 scores every row a term matches (a common word matches a fifth of a large repository's
        chunks), and a row gets at most idf * (K1 + 1) from a term. So the rows holding none of the
        rare terms score at most the sum of the common terms' bounds; when the rows holding a rare
        term already fill the pool with scores better than that, the others cannot enter it. Those
        rows are scored by the whole query, the common terms made to count nothing for rows holding
        none of the rare ones (`ALL NOT (COMMON NOT RARE)`: a phrase under NOT adds 0.0 to a row's
        score), so each score is the very one the one statement gives.
        """
        counts = counts or self._term_counts(match, rev_no)
        if counts is None or len(counts.terms) < 2:
            return None
        terms, hits, rows, version = counts
        pool = limit * 3 + 20
        order = sorted(terms, key=lambda t: (hits[t], t))
        most = {t: _idf(rows, hits[t]) * (_K1 + 1) for t in terms}
        tries = 2
        for rare in range(1, len(terms)):
            common = order[rare:]
            bound = sum(most[t] for t in common) * (1 + 1e-9)
            # Common terms that could give a row over half the best score a row could get are
            # rarely outscored by a pool's worst (at 100,000 files, skipping such splits halved p95).
            if sum(hits[t] for t in order[:rare]) < pool or bound > sum(most.values()) / 2:
                continue
            if sum(hits[t] for t in common) < PRUNE_ROWS or tries == 0:
                break
            tries -= 1
            pruned = f"({match}) NOT (({_any(common)}) NOT ({_any(order[:rare])}))"
            found = self.db.execute(
                "WITH hits AS MATERIALIZED (SELECT rowid AS id, bm25(chunks_fts, 1.0, 4.0) AS score "
                "  FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY score LIMIT ?) "
                "SELECT c.id, m.path, c.start_line, c.end_line, c.symbol, c.text, -hits.score, m.sha256, "
                "  (SELECT count(*) FROM hits), (SELECT max(score) FROM hits) "
                "FROM hits JOIN chunks c ON c.id = hits.id "
                "JOIN manifest m ON m.content_id = c.content_id AND m.rev_no = ? "
                "ORDER BY hits.score, m.path, c.start_line LIMIT ?",
                (pruned, pool, rev_no, limit),
            ).fetchall()
            if not found or found[0][8] < pool or -found[0][9] <= bound:
                continue  # the rows holding a rare term cannot show it: count one more term rare
            if self.db.execute("PRAGMA data_version").fetchone()[0] != version:
                return None  # another connection committed in between: the counts may be another state's
            return [ChunkHit(r[0], r[1], r[2], r[3], r[4], r[5], float(r[6]), r[7]) for r in found]
        return None
