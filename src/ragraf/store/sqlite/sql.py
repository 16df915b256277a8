"""SQL the SQLite store's concerns share: what revisions name, moving and removing lexical rows,
coverage keys, how chunk text is stored."""

from __future__ import annotations

import sqlite3

from isal import isal_zlib

from ragraf.store.base import LIVE_REV, unpack_text
from ragraf.tokens import INDEX_TEXT_VERSION, index_text


def _named(content: str) -> str:
    """Whether a content (a column or `?`) is named by some revision (the manifest view joins each
    manifest row to the revisions it holds for)."""
    return f"SELECT 1 FROM manifest m WHERE m.content_id = {content}"


def _current(content: str) -> str:
    """Whether a content is in the newest revision of some view (what the lexical index holds): a
    manifest row no revision has closed, of a view that has revisions."""
    return (
        f"SELECT 1 FROM manifest_rows m WHERE m.content_id = {content} AND m.until_rev = {LIVE_REV} "
        "AND EXISTS (SELECT 1 FROM revisions r WHERE r.view = m.view)"
    )


_CURRENT_CONTENT = _current("k.content_id")  # of chunk k


def _covered_key(rev_no: int, model: str) -> str:
    return f"covered:{rev_no}:{model}"


def pack_text(text: str) -> bytes:
    """A chunk's text as stored: zlib-compressed UTF-8 (source text shrinks about 2.3x)."""
    # ISA-L's level 0: over the speed corpus's 104 MB of chunks 0.21 CPU-s against 0.68 for its
    # levels 1 and 2 (zlib 1: 1.5), for 46 MB against 35; it reads back in 0.21 s against 0.33.
    # Any zlib reads it, and ragraf reads what other levels wrote (indexes from before).
    return isal_zlib.compress(text.encode("utf-8"), 0)


def _fts_values(db: sqlite3.Connection, ids: list[int]) -> list[tuple[int, str, str]]:
    """The lexical row each chunk was indexed with, rebuilt from its text and symbol. The FTS
    tables are contentless (they keep only the index), so removing a row means naming its tokens again."""
    rows = []
    for chunk_id in ids:
        hit = db.execute("SELECT text, symbol FROM chunks WHERE id = ?", (chunk_id,)).fetchone()
        if hit is not None:
            symbol = hit[1] or ""
            rows.append((chunk_id, index_text(unpack_text(hit[0]) + "\n" + symbol), symbol))
    return rows


def rebuild_lexical(db: sqlite3.Connection) -> None:
    """Every lexical row made again with this index_text, each table keeping the chunks it holds
    (the current revisions', the retained ones', those waiting for their revision)."""
    held = {
        t: [r[0] for r in db.execute(f"SELECT rowid FROM {t}")] for t in ("chunks_fts", "chunks_fts_retained")
    }
    for table, ids in held.items():
        db.execute(f"INSERT INTO {table} ({table}) VALUES ('delete-all')")
        db.executemany(f"INSERT INTO {table} (rowid, body, symbol) VALUES (?, ?, ?)", _fts_values(db, ids))
    waiting = [r[0] for r in db.execute("SELECT chunk_id FROM pending_fts")]
    db.executemany(
        "UPDATE pending_fts SET body = ?2, symbol = ?3 WHERE chunk_id = ?1", _fts_values(db, waiting)
    )
    db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('lexical_body', ?)", (INDEX_TEXT_VERSION,))


def _held(db: sqlite3.Connection, table: str, ids: list[int]) -> list[int]:
    return [i for i in ids if db.execute(f"SELECT 1 FROM {table} WHERE rowid = ?", (i,)).fetchone()]


def _delete_rows(db: sqlite3.Connection, table: str, ids: list[int]) -> list[tuple[int, str, str]]:
    """Remove the lexical rows of these chunks from one FTS table (those it does not hold are left
    alone: a contentless table would otherwise subtract tokens it never counted); returns them."""
    rows = _fts_values(db, _held(db, table, ids))
    db.executemany(f"INSERT INTO {table} ({table}, rowid, body, symbol) VALUES ('delete', ?, ?, ?)", rows)
    return rows


def _move_rows(
    db: sqlite3.Connection, source: str, target: str, rowids: str, args: tuple[object, ...]
) -> None:
    """Move the lexical rows of the chunks the rowids query selects from one FTS table to the other
    (those the source does not hold are left alone)."""
    if db.execute(f"SELECT NOT EXISTS (SELECT 1 FROM {source})").fetchone()[0]:
        return  # nothing to move (a first revision's 100,000 chunks were each looked up in vain)
    ids = [r[0] for r in db.execute(rowids, args).fetchall()]
    rows = _delete_rows(db, source, ids)
    db.executemany(f"INSERT INTO {target} (rowid, body, symbol) VALUES (?, ?, ?)", rows)
