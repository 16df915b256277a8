"""The stat cache of a view and the freshness guard's snapshot."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager

from ragraf.store.base import StatEntry


def read_snapshot(db: sqlite3.Connection, key: str) -> bytes | None:
    """The guard snapshot stored under key: its base, then its delta (the changes since)."""
    rows = dict(db.execute("SELECT key, value FROM meta WHERE key IN (?, ?)", (key, key + ":delta")))
    if key not in rows:
        return None
    return bytes(rows[key]) + bytes(rows.get(key + ":delta", b""))


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
        return read_snapshot(self.db, self._snapshot_key())

    def guard_snapshot_digest(self) -> bytes | None:
        """sha1 of the snapshot's base and of its delta, written with them: a long-running guard
        compares 40 bytes, not the blob."""
        row = self.db.execute(
            "SELECT value FROM meta WHERE key = ?", (self._snapshot_key() + ":sha1",)
        ).fetchone()
        return bytes(row[0]) if row else None

    def set_guard_snapshot(self, blob: bytes, base: int | None = None) -> None:
        """The first `base` bytes (the base: all of a 100,000-file listing) are written only when
        they differ from the stored ones; the rest (the changes since) each time."""
        key = self._snapshot_key()
        cut = len(blob) if base is None else base
        head, tail = memoryview(blob)[:cut], blob[cut:]
        head_sha = hashlib.sha1(head).digest()
        with self.transaction() as db:
            stored, has_base = db.execute(
                "SELECT (SELECT value FROM meta WHERE key = ?1 || ':sha1'), EXISTS (SELECT 1 FROM meta WHERE key = ?1)",
                (key,),
            ).fetchone()
            if not has_base or stored is None or bytes(stored)[:20] != head_sha:
                db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, bytes(head)))
            if tail:
                db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key + ":delta", tail))
            else:
                db.execute("DELETE FROM meta WHERE key = ?", (key + ":delta",))
            db.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                (key + ":sha1", head_sha + hashlib.sha1(tail).digest()),
            )
