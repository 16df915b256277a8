"""A first index's bulk load: the indexes kept in name order are built once, when its revision
commits, rather than row by row.

Rows of a batch land all over an index ordered by name, so each batch's commit rewrote most of its
pages (in the WAL, then again in the file): the facts and references of 30,000 files (10,000
replayed thrice) wrote 6x their size, a ratio that grows with the repository. A store without any
revision answers nothing, so those indexes can wait: dropped before its first batch, their
definitions kept in `meta`, made again (one sorted pass) in the transaction that commits the first
revision. A run killed before that leaves them dropped; the next run's commit makes them, and a
migration finds them made first (`restore_indexes` at open).
"""

from __future__ import annotations

import sqlite3

DEFERRED_INDEXES = ("facts_by_name", "ref_sites_by_name")
_KEY = "deferred_index:"


def defer_indexes(db: sqlite3.Connection) -> None:
    """Drop the name-ordered indexes of a store without any revision, keeping their definitions
    (their SQL as the schema holds it) to make them again; in the caller's transaction."""
    if db.execute("SELECT EXISTS (SELECT 1 FROM revisions)").fetchone()[0]:
        return  # a revision answers from them
    marks = ",".join("?" * len(DEFERRED_INDEXES))
    for name, sql in db.execute(
        f"SELECT name, sql FROM sqlite_master WHERE type = 'index' AND name IN ({marks})", DEFERRED_INDEXES
    ).fetchall():
        db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (_KEY + name, sql))
        db.execute(f'DROP INDEX "{name}"')


def restore_indexes(db: sqlite3.Connection) -> None:
    """Make the indexes defer_indexes dropped; in the caller's transaction (a first revision's commit)."""
    made = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    for key, sql in db.execute("SELECT key, value FROM meta WHERE key LIKE ?", (_KEY + "%",)).fetchall():
        if key[len(_KEY) :] not in made:
            db.execute(sql)
        db.execute("DELETE FROM meta WHERE key = ?", (key,))
