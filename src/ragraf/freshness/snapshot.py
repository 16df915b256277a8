"""A packed snapshot of the stat cache and folder stamps, so the guard loads in one read, not 10,000 rows."""

from __future__ import annotations

import bisect
import os
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ragraf.corpus import FileStat
from ragraf.store import StatEntry

_HEADER = struct.Struct("<4sII")  # magic, files, folders
_MAGIC = b"RGS1"


@dataclass(frozen=True)
class GuardSnapshot:
    paths: list[str]
    stats: list[list[int]]  # per path: size, mtime_ns, ctime_ns, inode, trusted (0/1)
    folders: list[str]
    folder_mtimes: list[int]


def _join(names: list[str]) -> bytes:
    return "\0".join(names).encode("utf-8", errors="surrogateescape")


def _split(data: bytes, n: int) -> list[str]:
    return data.decode("utf-8", errors="surrogateescape").split("\0") if n else []


def pack(stats: dict[str, StatEntry], stamps: dict[str, int], racy_ns: int) -> bytes:
    """Paths NUL-joined, then int64 arrays; a trusted flag marks hashes taken well after the mtime."""
    paths = sorted(stats)
    rows = np.array(
        [
            [s.size, s.mtime_ns, s.ctime_ns, s.inode, int(s.checked_ns - s.mtime_ns > racy_ns)]
            for s in map(stats.get, paths)
        ],
        dtype=np.int64,
    ).reshape(len(paths), 5)
    folders = sorted(stamps)
    fm = np.array([stamps[f] for f in folders], dtype=np.int64)
    p, f = _join(paths), _join(folders)
    return b"".join([
        _HEADER.pack(_MAGIC, len(paths), len(folders)), struct.pack("<QQ", len(p), len(f)), p, f,
        rows.tobytes(), fm.tobytes(),
    ])  # fmt: skip


def _parse(blob: bytes | None) -> tuple[list[str], np.ndarray, list[str], np.ndarray] | None:
    """Paths, stat rows (n x 5), folders and folder mtimes, the arrays still over the blob; None when unreadable."""
    if not blob or len(blob) < _HEADER.size + 16:
        return None
    magic, n, d = _HEADER.unpack_from(blob)
    if magic != _MAGIC:
        return None
    lp, lf = struct.unpack_from("<QQ", blob, _HEADER.size)
    at = _HEADER.size + 16
    if len(blob) != at + lp + lf + n * 40 + d * 8:
        return None
    paths = _split(blob[at : at + lp], n)
    at += lp
    folders = _split(blob[at : at + lf], d)
    at += lf
    if len(paths) != n or len(folders) != d:
        return None
    rows = np.frombuffer(blob, dtype=np.int64, count=n * 5, offset=at).reshape(n, 5)
    mtimes = np.frombuffer(blob, dtype=np.int64, count=d, offset=at + n * 40)
    return paths, rows, folders, mtimes


def patch(blob: bytes, stats: dict[str, StatEntry], racy_ns: int) -> bytes:
    """The snapshot with these files' stats replaced (files it does not list are ignored): what
    pack would give for the same stat cache, without reading the rest of it back."""
    parsed = _parse(blob)
    if parsed is None:
        raise ValueError("unreadable guard snapshot")
    paths, rows, _folders, _mtimes = parsed
    rows = rows.copy()
    for path, s in stats.items():
        i = bisect.bisect_left(paths, path)
        if i < len(paths) and paths[i] == path:
            rows[i] = (s.size, s.mtime_ns, s.ctime_ns, s.inode, int(s.checked_ns - s.mtime_ns > racy_ns))
    at = len(blob) - rows.nbytes - len(parsed[3]) * 8
    return blob[:at] + rows.tobytes() + blob[at + rows.nbytes :]


def file_count(blob: bytes | None) -> int:
    """How many files the snapshot lists."""
    return _HEADER.unpack_from(blob)[1] if blob and len(blob) >= _HEADER.size else 0


def unpack(blob: bytes | None) -> GuardSnapshot | None:
    """The snapshot, or None when absent or unreadable (the guard then lists files)."""
    parsed = _parse(blob)
    if parsed is None:
        return None
    paths, rows, folders, mtimes = parsed
    return GuardSnapshot(paths, rows.tolist(), folders, mtimes.tolist())


IGNORE_FILES = (".gitignore", ".ragrafignore")


def listing_after(
    root: Path, snap: GuardSnapshot, moved: list[str]
) -> tuple[list[FileStat], list[str]] | None:
    """Every file of the last listing with its stat, when moved_files has just named the moved ones:
    only those are stat'ed again
    (a file that moves meanwhile keeps its old stat in the cache, so the next guard still sees it)."""
    again = set(moved)
    files: list[FileStat] = []
    try:
        for path, (size, mtime, ctime, inode, _trusted) in zip(snap.paths, snap.stats, strict=True):
            if path in again:
                st = os.lstat(f"{root}/{path}")
                files.append(FileStat(path, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino))
            else:
                files.append(FileStat(path, size, mtime, ctime, inode))
    except OSError:
        return None  # something vanished: list again
    return files, moved


StatKey = tuple[int, int, int, int]  # size, mtime_ns, ctime_ns, inode


@dataclass(frozen=True)
class StatView:
    """A snapshot laid out for the guard: absolute paths, and the stat key each file must still have."""

    folders: list[str]
    folder_mtimes: list[int]
    files: list[str]
    paths: list[str]  # the same files, relative to the root
    keys: list[StatKey | None]  # None: the hash is not trusted (racy), so the file always counts as moved


# Long-running servers guard every request; parsing the same blob again each time is wasted work.
_VIEWS: dict[str, tuple[bytes, StatView]] = {}
_MAX_VIEWS = 8


def stat_view(root: Path, blob: bytes | None) -> StatView | None:
    """The snapshot of root laid out for moved_files, parsed once per blob; None when absent or unreadable."""
    base = str(root)
    cached = _VIEWS.get(base)
    if cached is not None and cached[0] == blob:
        return cached[1]
    parsed = _parse(blob)
    if parsed is None or blob is None:
        return None
    paths, rows, folders, mtimes = parsed
    # Column by column, zipped: a third of the time of converting row lists (100,000 files: 50 ms, not 150).
    keys: list[StatKey | None] = list(zip(*(rows[:, j].tolist() for j in range(4)), strict=True))
    for i in np.flatnonzero(rows[:, 4] == 0).tolist():
        keys[i] = None
    prefix = f"{base}/"
    view = StatView(
        [prefix + f if f else base for f in folders],
        mtimes.tolist(),
        list(map(prefix.__add__, paths)),
        paths,
        keys,
    )
    if len(_VIEWS) >= _MAX_VIEWS:
        _VIEWS.clear()
    _VIEWS[base] = (blob, view)
    return view


def moved_files(root: Path, blob: bytes | None) -> list[str] | None:
    """The guard's check: files whose stat moved since the snapshot; None when a folder or an ignore
    file changed, something vanished or there is no snapshot, so the files must be listed again."""
    view = stat_view(root, blob)
    if view is None:
        return None
    stat = os.stat
    try:
        if any(
            stat(folder).st_mtime_ns != mtime
            for folder, mtime in zip(view.folders, view.folder_mtimes, strict=True)
        ):
            return None
        # One lstat per file is the floor; nothing else is built for the (nearly always) unchanged ones.
        moved = [
            i
            for i, (st, key) in enumerate(zip(map(os.lstat, view.files), view.keys, strict=True))
            if (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino) != key
        ]
    except OSError:
        return None  # something vanished: list again
    paths = [view.paths[i] for i in moved]
    if any(p.rsplit("/", 1)[-1] in IGNORE_FILES for p in paths):
        return None  # the rules that pick files may have changed
    return paths
