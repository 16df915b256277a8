"""The stat cache of a view and the freshness guard's snapshot."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager

from ragraf.store.base import StatEntry


class StatsMixin:
    """Stat cache and guard snapshot of SqliteStore."""

    db: sqlite3.Connection
    view: str
    transaction: Callable[[], AbstractContextManager[sqlite3.Connection]]

    def stat_cache(self) -> dict[str, StatEntry]:
        rows = self.db.execute(
            "SELECT path, size, mtime_ns, ctime_ns, inode, sha256, checked_ns FROM stat_cache WHERE view = ?",
            (self.view,),
        ).fetchall()
        make = StatEntry._make
        return {row[0]: make(row[1:]) for row in rows}

    def update_stat_cache(self, entries: dict[str, StatEntry], removed: list[str]) -> None:
        if not entries and not removed:
            return
        with self.transaction() as db:
            db.executemany(
                "DELETE FROM stat_cache WHERE view = ? AND path = ?", [(self.view, p) for p in removed]
            )
            db.executemany(
                "INSERT OR REPLACE INTO stat_cache (view, path, size, mtime_ns, ctime_ns, inode, sha256, checked_ns) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (self.view, p, e.size, e.mtime_ns, e.ctime_ns, e.inode, e.sha256, e.checked_ns)
                    for p, e in entries.items()
                ],
            )

    def _snapshot_key(self) -> str:
        return f"guard_snapshot:{self.view}" if self.view else "guard_snapshot"

    def guard_snapshot(self) -> bytes | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (self._snapshot_key(),)).fetchone()
        return bytes(row[0]) if row else None

    def guard_snapshot_digest(self) -> bytes | None:
        """sha1 of the snapshot, written with it: a long-running guard compares 20 bytes, not the blob."""
        row = self.db.execute(
            "SELECT value FROM meta WHERE key = ?", (self._snapshot_key() + ":sha1",)
        ).fetchone()
        return bytes(row[0]) if row else None

    def set_guard_snapshot(self, blob: bytes) -> None:
        with self.transaction() as db:
            db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (self._snapshot_key(), blob))
            db.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                (self._snapshot_key() + ":sha1", hashlib.sha1(blob).digest()),
            )
