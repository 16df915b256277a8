"""The index run's cheap check for pages damaged mid-file, which no query may reach for weeks.

`PRAGMA quick_check` reads every page (0.14 CPU-s on a 158 MB index, 30% of a no-change run), so an
index run checks only a file that changed since the last run left it: a stamp beside it holds the
size, inode and mtime the file had when that run closed it. Anything that writes the file outside
SQLite's own commits of ours (a disk error surfacing through a copy, a tool, a torn restore) moves
the mtime and costs the next run one check. `doctor --check` stays the thorough check.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from pathlib import Path

from ragraf.errors import IndexCorruptError


def stamp_path(db_path: Path) -> Path:
    return db_path.with_name(db_path.name + ".checked")


def _identity(db_path: Path) -> list[int] | None:
    try:
        st = os.stat(db_path)
    except OSError:
        return None
    return [st.st_size, st.st_ino, st.st_mtime_ns]


def sealed_identity(db_path: Path) -> list[int] | None:
    """The file's identity when it is as the last index run that finished on it left it, else None."""
    try:
        stamp = json.loads(stamp_path(db_path).read_text())
    except (OSError, ValueError):
        return None
    identity = _identity(db_path)
    return identity if identity is not None and stamp == identity else None


def unchanged_since_sealed(db_path: Path) -> bool:
    """The file is as the last index run that finished on it left it."""
    return sealed_identity(db_path) is not None


def keep_sealed(db_path: Path, sealed: list[int] | None) -> None:
    """After a write of ours (a commit, the checkpoint of a connection's close): a file that was
    sealed before it (`sealed`: its identity then) is sealed again when the write moved it."""
    if sealed is not None and _identity(db_path) != sealed:
        seal(db_path)


def check_pages(db: sqlite3.Connection, db_path: Path) -> bool:
    """Raise IndexCorruptError when SQLite finds a damaged page; skipped (False) when the file is
    unchanged since the last run sealed it, True when the pages were read and are sound."""
    if unchanged_since_sealed(db_path):
        return False
    try:
        verdict = str(db.execute("PRAGMA quick_check(1)").fetchone()[0])
    except sqlite3.DatabaseError as exc:
        verdict = str(exc)
    if verdict != "ok":
        raise IndexCorruptError(
            f"the index file {db_path} is damaged ({verdict}); its answers cannot be trusted",
            suggest="run `ragraf index --full` to rebuild it (`ragraf doctor --check` lists what is damaged)",
        )
    return True


def seal(db_path: Path) -> None:
    """Note the file as an index run that finished leaves it (after its connection closed)."""
    identity = _identity(db_path)
    if identity is None:
        return
    tmp = db_path.with_name(db_path.name + ".checked.tmp")
    with contextlib.suppress(OSError):  # a home we cannot write to only costs the next run a check
        tmp.write_text(json.dumps(identity))
        os.replace(tmp, stamp_path(db_path))
