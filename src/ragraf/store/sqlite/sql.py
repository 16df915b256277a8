"""SQL the SQLite store's concerns share: what revisions name, moving lexical rows, coverage keys."""

from __future__ import annotations

import sqlite3


def _named(content: str) -> str:
    """Whether a content (a column or `?`) is named by some revision; manifests are found by revision first."""
    return f"SELECT 1 FROM manifest m WHERE m.rev_no IN (SELECT rev_no FROM revisions) AND m.content_id = {content}"


def _current(content: str) -> str:
    """Whether a content is in the newest revision of some view (what the lexical index holds)."""
    return (
        f"SELECT 1 FROM manifest m WHERE m.content_id = {content} AND m.rev_no IN "
        "(SELECT max(rev_no) FROM revisions GROUP BY view)"
    )


_CURRENT_CONTENT = _current("k.content_id")  # of chunk k


def _covered_key(rev_no: int, model: str) -> str:
    return f"covered:{rev_no}:{model}"


def _move_rows(
    db: sqlite3.Connection, source: str, target: str, rowids: str, args: tuple[object, ...]
) -> None:
    """Move the lexical rows of the chunks the rowids query selects from one FTS table to the other
    (those the source does not hold are left alone)."""
    ids = db.execute(rowids, args).fetchall()
    db.executemany(
        f"INSERT INTO {target} (rowid, body, symbol) SELECT rowid, body, symbol FROM {source} WHERE rowid = ?",
        ids,
    )
    db.executemany(f"DELETE FROM {source} WHERE rowid = ?", ids)
