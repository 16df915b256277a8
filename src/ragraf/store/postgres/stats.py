"""Per-checkout state: the stat cache, the checkouts kept, and the guard snapshot."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import psycopg

from ragraf.store.base import StatEntry
from ragraf.store.postgres.tokens import _clean

# Checkouts (machine and root) whose file stats a repository keeps: the latest writers.
KEEP_CHECKOUTS = 20
# A checkout's guard snapshot, prefixed with the revision it was written at (8 bytes, big-endian).
SET_SNAPSHOT = (
    "INSERT INTO meta (repo_id, key, value) SELECT %s, %s, int8send(coalesce(max(rev_no), 0)::bigint) || %s "
    "FROM revisions WHERE repo_id = %s ON CONFLICT (repo_id, key) DO UPDATE SET value = excluded.value"
)


class StatsMixin:
    """File stats and guard snapshots of PostgresStore, one checkout's."""

    repo_id: int
    _rows: Callable[..., list[tuple[Any, ...]]]
    _row: Callable[..., tuple[Any, ...] | None]
    _tx: Callable[..., AbstractContextManager[psycopg.Connection]]
    checkout: str

    # File stats are one checkout's (this machine, this root): machines sharing the repository
    # each keep their own, so none re-hashes every file because another indexed last.

    def stat_cache(self) -> dict[str, StatEntry]:
        rows = self._rows(
            "SELECT path, size, mtime_ns, ctime_ns, inode, sha256, checked_ns FROM stat_cache "
            "WHERE repo_id = %s AND checkout = %s",
            (self.repo_id, self.checkout),
        )
        return {row[0]: StatEntry(*row[1:]) for row in rows}

    def update_stat_cache(self, entries: dict[str, StatEntry], removed: list[str]) -> None:
        if not entries and not removed:
            return
        paths = list(entries)
        values = list(entries.values())
        with self._tx() as conn:
            if removed:
                conn.execute(
                    "DELETE FROM stat_cache WHERE repo_id = %s AND checkout = %s AND path = ANY(%s)",
                    (self.repo_id, self.checkout, removed),
                )
            if entries:
                conn.execute(
                    "INSERT INTO stat_cache (repo_id, checkout, path, size, mtime_ns, ctime_ns, inode, sha256, "
                    "checked_ns) SELECT %s, %s, * FROM unnest(%s::text[], %s::bigint[], %s::bigint[], "
                    "%s::bigint[], %s::bigint[], %s::text[], %s::bigint[]) ON CONFLICT (repo_id, checkout, path) "
                    "DO UPDATE SET size = excluded.size, mtime_ns = excluded.mtime_ns, ctime_ns = excluded.ctime_ns, "
                    "inode = excluded.inode, sha256 = excluded.sha256, checked_ns = excluded.checked_ns",
                    (
                        self.repo_id,
                        self.checkout,
                        [_clean(p) for p in paths],
                        [e.size for e in values],
                        [e.mtime_ns for e in values],
                        [e.ctime_ns for e in values],
                        [e.inode for e in values],
                        [e.sha256 for e in values],
                        [e.checked_ns for e in values],
                    ),
                )
            self._forget_old_checkouts(conn)

    def _forget_old_checkouts(self, conn: psycopg.Connection) -> None:
        """Note this checkout's write; drop the stats of all but the KEEP_CHECKOUTS latest writers
        (CI runners come and go, each its own checkout)."""
        conn.execute(
            "INSERT INTO meta (repo_id, key, value) VALUES (%s, %s, %s) "
            "ON CONFLICT (repo_id, key) DO UPDATE SET value = excluded.value",
            (self.repo_id, "stats@" + self.checkout, time.time_ns().to_bytes(8, "big")),
        )
        old = [
            row[0].removeprefix("stats@")
            for row in conn.execute(
                "SELECT key FROM meta WHERE repo_id = %s AND key LIKE 'stats@%%' ORDER BY value DESC OFFSET %s",
                (self.repo_id, KEEP_CHECKOUTS),
            )
        ]
        if old:
            conn.execute(
                "DELETE FROM stat_cache WHERE repo_id = %s AND checkout = ANY(%s)", (self.repo_id, old)
            )
            keys = [f"{prefix}@{name}" for name in old for prefix in ("stats", "guard_snapshot")]
            conn.execute("DELETE FROM meta WHERE repo_id = %s AND key = ANY(%s)", (self.repo_id, keys))

    # guard snapshot -----------------------------------------------------------------------------

    def guard_snapshot(self) -> bytes | None:
        # A snapshot vouches for files matching the revision it was written at. Another checkout may
        # have committed one since; then it vouches for nothing, and the guard lists and compares.
        row = self._row(
            "SELECT m.value, (SELECT coalesce(max(rev_no), 0) FROM revisions WHERE repo_id = %s) FROM meta m "
            "WHERE m.repo_id = %s AND m.key = %s",
            (self.repo_id, self.repo_id, "guard_snapshot@" + self.checkout),
        )
        if row is None:
            return None
        value = bytes(row[0])
        return value[8:] if int.from_bytes(value[:8], "big") == row[1] else None

    def set_guard_snapshot(self, blob: bytes, base: int | None = None) -> None:  # noqa: ARG002 (written whole)
        with self._tx() as conn:
            conn.execute(SET_SNAPSHOT, (self.repo_id, "guard_snapshot@" + self.checkout, blob, self.repo_id))


def checkout_name(root: Path) -> str:
    """Whose file stats a store keeps: this machine's checkout at root."""
    return f"{socket.gethostname()}:{root.resolve()}"


def default_repo_key(root: Path) -> str:
    """A repository's name in a shared database when none is configured: its absolute root path."""
    return str(root.resolve())
