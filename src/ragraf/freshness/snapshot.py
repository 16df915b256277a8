"""A packed snapshot of the stat cache and folder stamps, so the guard loads in one read, not 10,000 rows."""

from __future__ import annotations

import bisect
import hashlib
import os
import struct
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property, partial
from itertools import count
from pathlib import Path
from typing import TYPE_CHECKING

from ragraf.corpus.stat_cache import settled
from ragraf.store import StatEntry

if TYPE_CHECKING:  # numpy is imported where snapshots are written: the guard's read needs none of it
    import numpy as np

    from ragraf.corpus.discover import FileStat

_HEADER = struct.Struct("<4sII")  # magic, files, folders
_MAGIC = b"RGS1"


@dataclass(frozen=True)
class GuardSnapshot:
    paths: list[str]
    stats: list[list[int]]  # per path: size, mtime_ns, ctime_ns, inode, trusted (0/1)
    folders: list[str]
    folder_mtimes: list[int]


def _encoded(name: str) -> bytes:
    return name.encode("utf-8", errors="surrogateescape")


def _join(names: list[str]) -> bytes:
    return "\0".join(names).encode("utf-8", errors="surrogateescape")


def _split(data: bytes, n: int) -> list[str]:
    return data.decode("utf-8", errors="surrogateescape").split("\0") if n else []


def _row(s: StatEntry, racy_ns: int) -> tuple[int, int, int, int, int]:
    return s.size, s.mtime_ns, s.ctime_ns, s.inode, int(settled(s.checked_ns, s.mtime_ns, racy_ns))


def pack(stats: dict[str, StatEntry], stamps: dict[str, int], racy_ns: int) -> bytes:
    """Paths NUL-joined, then int64 arrays; a trusted flag marks hashes taken well after the mtime."""
    import numpy as np

    paths = sorted(stats)
    rows = np.array([_row(s, racy_ns) for s in map(stats.__getitem__, paths)], dtype=np.int64)
    folders = sorted(stamps)
    return _pack(
        paths, rows.reshape(len(paths), 5), folders, np.array([stamps[f] for f in folders], dtype=np.int64)
    )


def _pack(paths: list[str], rows: np.ndarray, folders: list[str], fm: np.ndarray) -> bytes:
    p, f = _join(paths), _join(folders)
    return b"".join([
        _HEADER.pack(_MAGIC, len(paths), len(folders)), struct.pack("<QQ", len(p), len(f)), p, f,
        rows.tobytes(), fm.tobytes(),
    ])  # fmt: skip


def base_length(blob: bytes | None) -> int | None:
    """Where the snapshot's base ends and its delta (the changes since, see revise) begins; None
    when unreadable."""
    if not blob or len(blob) < _HEADER.size + 16:
        return None
    magic, n, d = _HEADER.unpack_from(blob)
    lp, lf = struct.unpack_from("<QQ", blob, _HEADER.size)
    end = _HEADER.size + 16 + lp + lf + n * 40 + d * 8
    return end if magic == _MAGIC and len(blob) >= end else None


def _sections(blob: bytes | None) -> tuple[list[str], list[str], int] | None:
    """Paths, folders and the offset of the int64 arrays (n x 5 stat rows, then folder mtimes) of
    a snapshot without a delta; None when unreadable."""
    if base_length(blob) != len(blob or b""):
        return None
    assert blob is not None
    _magic, n, d = _HEADER.unpack_from(blob)
    lp, lf = struct.unpack_from("<QQ", blob, _HEADER.size)
    at = _HEADER.size + 16
    paths = _split(blob[at : at + lp], n)
    at += lp
    folders = _split(blob[at : at + lf], d)
    at += lf
    if len(paths) != n or len(folders) != d:
        return None
    return paths, folders, at


def _parse(blob: bytes | None) -> tuple[list[str], np.ndarray, list[str], np.ndarray] | None:
    """Paths, stat rows (n x 5), folders and folder mtimes, the arrays still over the blob; None when unreadable."""
    import numpy as np

    blob = folded(blob)
    found = _sections(blob)
    if found is None or blob is None:
        return None
    paths, folders, at = found
    n, d = len(paths), len(folders)
    rows = np.frombuffer(blob, dtype=np.int64, count=n * 5, offset=at).reshape(n, 5)
    mtimes = np.frombuffer(blob, dtype=np.int64, count=d, offset=at + n * 40)
    return paths, rows, folders, mtimes


_ROW = struct.Struct("=5q")  # one file's stat row as stored: native int64s, as numpy writes them


def _stat_bytes(s: StatEntry, racy_ns: int) -> bytes:
    return _ROW.pack(*_row(s, racy_ns))


def _layout(blob: bytes) -> tuple[list[str], list[str], int, int]:
    """Paths, folders, and where the stat rows and the folder mtimes begin; ValueError when unreadable."""
    found = _sections(blob)
    if found is None:
        raise ValueError("unreadable guard snapshot")
    paths, folders, at = found
    return paths, folders, at, at + len(paths) * _ROW.size


def patch(blob: bytes, stats: dict[str, StatEntry], racy_ns: int) -> bytes:
    """The snapshot with these files' stats replaced (files it does not list are ignored), as a
    change to its delta (see revise)."""
    end, delta = _readable(blob)
    listed = _listed(blob[:end])
    kept = {
        p: e
        for p, e in stats.items()
        if p in delta.files or (_encoded(p) in listed and p not in delta.removed)
    }
    return revise(blob, kept, [], {}, [], racy_ns)


def _merged(
    names: list[str], values: bytes, width: int, changed: dict[str, bytes], removed: Iterable[str]
) -> tuple[list[str], bytes]:
    """Sorted names and their fixed-width records with `removed` taken out and `changed` replaced
    or inserted in order: work that follows the change (the unchanged records are copied as runs
    of bytes, no object per row)."""
    edits: list[tuple[int, int, str, bytes]] = []  # (index in names, 0 insert | 1 replace | 2 drop, ...)
    for name in sorted(changed):
        i = bisect.bisect_left(names, name)
        edits.append((i, 1 if i < len(names) and names[i] == name else 0, name, changed[name]))
    for name in set(removed) - changed.keys():
        i = bisect.bisect_left(names, name)
        if i < len(names) and names[i] == name:
            edits.append((i, 2, name, b""))
    if not edits:
        return names, values
    edits.sort(key=lambda e: e[:3])
    out_names: list[str] = []
    out_values: list[bytes] = []
    done = 0  # names[:done] are placed
    for i, kind, name, record in edits:
        out_names.extend(names[done:i])
        out_values.append(values[done * width : i * width])
        done = i if kind == 0 else i + 1
        if kind != 2:
            out_names.append(name)
            out_values.append(record)
    out_names.extend(names[done:])
    out_values.append(values[done * width :])
    return out_names, b"".join(out_values)


@dataclass
class _Delta:
    """The changes since a snapshot's base: stat rows set or dropped, folder stamps set or dropped."""

    files: dict[str, bytes] = field(default_factory=dict)  # path -> its _ROW
    removed: set[str] = field(default_factory=set)
    folders: dict[str, bytes] = field(default_factory=dict)  # folder -> its mtime, int64
    gone: set[str] = field(default_factory=set)

    def size(self) -> int:
        return len(self.files) + len(self.removed) + len(self.folders) + len(self.gone)


_DELTA = struct.Struct("<4sIIIII")  # magic; files listed after it; files set, removed, folders set, gone
_DELTA_MAGIC = b"RGD1"
_MTIME = struct.Struct("=q")
# A delta of more records than this (or 1/256 of the files) is folded into a new base.
_DELTA_MIN = 64
_DELTA_SHARE = 256
_APPLIED_MAX = 16  # a view inserts or drops up to this many rows for a delta, else reads it folded


def _base_and_delta(blob: bytes | None) -> tuple[int, _Delta] | None:
    """Where the snapshot's base ends, and its delta; None when unreadable."""
    end = base_length(blob)
    if end is None or blob is None:
        return None
    delta = _delta_of(blob, end)
    return (end, delta) if delta is not None else None


def _readable(blob: bytes) -> tuple[int, _Delta]:
    """_base_and_delta, or ValueError when unreadable."""
    found = _base_and_delta(blob)
    if found is None:
        raise ValueError("unreadable guard snapshot")
    return found


def _listed(base: bytes) -> set[bytes]:
    """The names of the files a base lists, as stored."""
    n = _HEADER.unpack_from(base)[1]
    lp = struct.unpack_from("<Q", base, _HEADER.size)[0]
    return set(base[_HEADER.size + 16 : _HEADER.size + 16 + lp].split(b"\0")) if n else set()


def _delta_of(blob: bytes, end: int) -> _Delta | None:
    """The delta after the base ending at `end` (empty when there is none); None when unreadable."""
    if end == len(blob):
        return _Delta()
    if len(blob) < end + _DELTA.size + 32:
        return None
    magic, _count, nf, nr, nd, ng = _DELTA.unpack_from(blob, end)
    lengths = struct.unpack_from("<QQQQ", blob, end + _DELTA.size)
    at = end + _DELTA.size + 32
    if magic != _DELTA_MAGIC or len(blob) != at + sum(lengths) + nf * _ROW.size + nd * 8:
        return None
    lists = []
    for length, k in zip(lengths, (nf, nr, nd, ng), strict=True):
        lists.append(_split(blob[at : at + length], k))
        at += length
    files, removed, folders, gone = lists
    if [len(x) for x in lists] != [nf, nr, nd, ng]:
        return None
    rows = [blob[at + i * _ROW.size : at + (i + 1) * _ROW.size] for i in range(nf)]
    at += nf * _ROW.size
    stamps = [blob[at + i * 8 : at + (i + 1) * 8] for i in range(nd)]
    return _Delta(
        dict(zip(files, rows, strict=True)), set(removed), dict(zip(folders, stamps, strict=True)), set(gone)
    )


def _delta_bytes(base: bytes, delta: _Delta) -> bytes:
    files, folders = sorted(delta.files), sorted(delta.folders)
    lists = [_join(files), _join(sorted(delta.removed)), _join(folders), _join(sorted(delta.gone))]
    listed = _listed(base)
    count = (
        _HEADER.unpack_from(base)[1]
        + sum(_encoded(p) not in listed for p in files)
        - sum(_encoded(p) in listed for p in delta.removed)
    )
    return b"".join([
        _DELTA.pack(_DELTA_MAGIC, count, len(files), len(delta.removed), len(folders), len(delta.gone)),
        struct.pack("<QQQQ", *map(len, lists)), *lists,
        *map(delta.files.__getitem__, files), *map(delta.folders.__getitem__, folders),
    ])  # fmt: skip


def _rebased(base: bytes, delta: _Delta) -> bytes:
    """One base with the delta applied: what pack would give for the same stat cache and stamps,
    the unchanged records copied as runs of bytes."""
    paths, folders, at, end = _layout(base)
    paths, rows = _merged(paths, base[at:end], _ROW.size, delta.files, delta.removed)
    folders, mtimes = _merged(folders, base[end:], 8, delta.folders, delta.gone)
    p, f = _join(paths), _join(folders)
    head = _HEADER.pack(_MAGIC, len(paths), len(folders)) + struct.pack("<QQ", len(p), len(f))
    return b"".join([head, p, f, rows, mtimes])


def delta_rows(blob: bytes | None) -> tuple[frozenset[str], bytes] | None:
    """The files the snapshot's delta sets or drops, and a digest of its folder records (two
    snapshots on one base with the same folder records list the same folders); None when unreadable."""
    found = _base_and_delta(blob)
    if found is None:
        return None
    delta = found[1]
    folders = b"".join(_encoded(f) + b"\0" + delta.folders[f] for f in sorted(delta.folders))
    folders += b"\0".join(map(_encoded, sorted(delta.gone)))
    return frozenset(delta.files) | frozenset(delta.removed), hashlib.sha1(folders).digest()


def folded(blob: bytes | None) -> bytes | None:
    """The snapshot as one base, its delta applied; None when unreadable."""
    found = _base_and_delta(blob)
    if found is None or blob is None:
        return None
    end, delta = found
    return blob if end == len(blob) else _rebased(blob[:end], delta)


def revise(
    blob: bytes,
    stats: dict[str, StatEntry],
    removed: Iterable[str],
    stamps: dict[str, int],
    gone: Iterable[str],
    racy_ns: int,
) -> bytes:
    """The snapshot after a change to the listing: these files' stats replaced or added, the
    `removed` files dropped, the folders listed again stamped anew and the `gone` ones dropped.
    The base stays as it was and the change joins its delta, so a one-file change writes a few
    hundred bytes, not the whole listing; a delta grown past _DELTA_MIN records and 1/_DELTA_SHARE
    of the files is folded into a new base (what pack would give for the same stat cache)."""
    end, delta = _readable(blob)
    for path, entry in stats.items():
        delta.files[path] = _stat_bytes(entry, racy_ns)
        delta.removed.discard(path)
    for path in set(removed) - stats.keys():
        delta.files.pop(path, None)
        delta.removed.add(path)
    for folder, mtime in stamps.items():
        delta.folders[folder] = _MTIME.pack(mtime)
        delta.gone.discard(folder)
    for folder in set(gone) - stamps.keys():
        delta.folders.pop(folder, None)
        delta.gone.add(folder)
    if delta.size() > max(_DELTA_MIN, _HEADER.unpack_from(blob)[1] // _DELTA_SHARE):
        return _rebased(blob[:end], delta)
    return blob[:end] + _delta_bytes(blob[:end], delta)


def file_count(blob: bytes | None) -> int:
    """How many files the snapshot lists."""
    end = base_length(blob)
    if end is None or blob is None:
        return 0
    if end + _DELTA.size <= len(blob):
        return _DELTA.unpack_from(blob, end)[1]
    return _HEADER.unpack_from(blob)[1]


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
    from ragraf.corpus.discover import FileStat

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


class StatView:
    """A snapshot laid out for the guard: the names as stored (bytes, relative to the root, so the
    stat pass decodes and joins nothing) and the stat each file must still have, column by column."""

    def __init__(self, root: str, names: list[bytes], folder_names: list[bytes], ints: memoryview) -> None:
        n = len(names)
        self.root, self.names, self.folder_names = root, names, folder_names
        self.sizes, self.mtimes, self.ctimes, self.inodes = (ints[j : 5 * n : 5].tolist() for j in range(4))
        self.folder_mtimes: list[int] = ints[5 * n :].tolist()
        # A hash taken within the racy window is not trusted: its file always counts as moved (no
        # stat has mtime -1).
        self.untrusted = _positions(ints[4 : 5 * n : 5].tolist(), 0)
        for i in self.untrusted:
            self.mtimes[i] = -1

    def apply(self, delta: _Delta) -> bool:
        """The delta's changes made to the view, in path order; False (and nothing changed) when
        more than _APPLIED_MAX rows would be inserted or dropped, each a move of every row after it."""
        files = (self.names, self.paths, self.sizes, self.mtimes, self.ctimes, self.inodes)
        folders = (self.folder_names, self.folders, self.folder_mtimes)
        moves = sum(not _holds(self.paths, p) for p in delta.files) + len(delta.removed)
        moves += sum(not _holds(self.folders, f) for f in delta.folders) + len(delta.gone)
        if moves > _APPLIED_MAX:
            return False
        for path in sorted(delta.removed):
            _drop(files, path)
        for path, row in sorted(delta.files.items()):
            size, mtime, ctime, inode, trusted = _ROW.unpack(row)
            _put(files, path, (_encoded(path), path, size, mtime if trusted else -1, ctime, inode))
        for folder in sorted(delta.gone):
            _drop(folders, folder)
        for folder, stamp in sorted(delta.folders.items()):
            _put(folders, folder, (_encoded(folder), folder, _MTIME.unpack(stamp)[0]))
        self.untrusted = _positions(self.mtimes, -1)
        return True

    def key(self, i: int) -> StatKey | None:
        """The stat file i must still have; None when its hash is not trusted."""
        if self.mtimes[i] == -1:
            return None
        return self.sizes[i], self.mtimes[i], self.ctimes[i], self.inodes[i]

    @cached_property
    def paths(self) -> list[str]:
        """The files, relative to the root and sorted."""
        return _decoded(self.names)

    @cached_property
    def folders(self) -> list[str]:
        """The listed folders, relative and sorted (the root is "")."""
        return _decoded(self.folder_names)

    def moved(self) -> tuple[list[int], list[int]] | None:
        """The positions of the files whose stat moved (vanished ones included) and of the folders
        whose stamp moved; None when something vanished, so each must be asked on its own."""
        fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY)
        try:
            stat, lstat = partial(os.stat, dir_fd=fd), partial(os.lstat, dir_fd=fd)
            folders = [
                i
                for i, st, mtime in zip(
                    count(), map(stat, [f or b"." for f in self.folder_names]), self.folder_mtimes
                )
                if st.st_mtime_ns != mtime
            ]
            # One lstat per file is the floor; nothing else is built for the (nearly always) unchanged ones.
            files = [
                i
                for i, st, size, mtime, ctime, inode in zip(
                    count(), map(lstat, self.names), self.sizes, self.mtimes, self.ctimes, self.inodes
                )
                if st.st_mtime_ns != mtime
                or st.st_ctime_ns != ctime
                or st.st_size != size
                or st.st_ino != inode
            ]
        except OSError:
            return None
        finally:
            os.close(fd)
        return files, folders

    def moved_among(self, paths: list[str]) -> list[str] | None:
        """moved_files' answer when only these files (relative) can have changed: those of them the
        snapshot lists whose stat moved; None when one vanished or is an ignore file."""
        moved = []
        for path in paths:
            i = bisect.bisect_left(self.paths, path)
            if i == len(self.paths) or self.paths[i] != path:
                continue  # not listed (left out by the rules): the whole pass would not look either
            now = _stat_key(f"{self.root}/{path}")
            if now is None:
                return None  # vanished: list again
            if now != self.key(i):
                moved.append(path)
        return None if any(p.rsplit("/", 1)[-1] in IGNORE_FILES for p in moved) else moved

    def moved_one_by_one(self) -> tuple[list[int], list[int]]:
        """moved() when something vanished: each file and folder asked alone."""
        base = os.fsencode(self.root) + b"/"
        folders = [
            i
            for i, (f, mtime) in enumerate(zip(self.folder_names, self.folder_mtimes, strict=True))
            if (now := _mtime(base + f if f else base)) is None or now != mtime
        ]
        files = [
            i for i, f in enumerate(self.names) if (now := _stat_key(base + f)) is None or now != self.key(i)
        ]
        return files, folders


def _holds(names: list[str], name: str) -> bool:
    i = bisect.bisect_left(names, name)
    return i < len(names) and names[i] == name


def _drop(columns: tuple[list, ...], name: str) -> None:  # type: ignore[type-arg]
    """The row of name taken out of the columns (the second holds the sorted names)."""
    i = bisect.bisect_left(columns[1], name)
    if i < len(columns[1]) and columns[1][i] == name:
        for column in columns:
            del column[i]


def _put(columns: tuple[list, ...], name: str, values: tuple[object, ...]) -> None:  # type: ignore[type-arg]
    """The row of name set to values in the columns, or inserted in order."""
    i = bisect.bisect_left(columns[1], name)
    found = i < len(columns[1]) and columns[1][i] == name
    for column, value in zip(columns, values, strict=True):
        if found:
            column[i] = value
        else:
            column.insert(i, value)


def _positions(values: list[int], value: int) -> list[int]:
    """Where value is in values (a few places: a scan in C between them)."""
    found, i = [], -1
    while True:
        try:
            i = values.index(value, i + 1)
        except ValueError:
            return found
        found.append(i)


def _decoded(names: list[bytes]) -> list[str]:
    return b"\0".join(names).decode("utf-8", errors="surrogateescape").split("\0") if names else []


# Long-running servers guard every request; parsing the same blob again each time is wasted work.
_VIEWS: dict[str, tuple[bytes, StatView]] = {}
_MAX_VIEWS = 8


def _base_view(root: str, blob: bytes) -> StatView | None:
    """The view of the snapshot's base alone."""
    _magic, n, d = _HEADER.unpack_from(blob)
    lp, lf = struct.unpack_from("<QQ", blob, _HEADER.size)
    at = _HEADER.size + 16
    names = blob[at : at + lp].split(b"\0") if n else []
    folders = blob[at + lp : at + lp + lf].split(b"\0") if d else []
    if len(names) != n or len(folders) != d:
        return None
    # The int64 arrays read in place (numpy wrote them in native order): no numpy in a one-shot read.
    return StatView(
        root, names, folders, memoryview(blob)[at + lp + lf : at + lp + lf + n * 40 + d * 8].cast("q")
    )


def stat_view(root: Path, blob: bytes | None) -> StatView | None:
    """The snapshot of root laid out for moved_files, parsed once per blob; None when absent or unreadable."""
    base = str(root)
    cached = _VIEWS.get(base)
    if cached is not None and cached[0] == blob:
        return cached[1]
    found = _base_and_delta(blob)
    if found is None or blob is None:
        return None
    end, delta = found
    view = _base_view(base, blob)
    if view is not None and delta.size() and not view.apply(delta):
        view = _base_view(base, _rebased(blob[:end], delta))  # fewer list moves than inserting each row
    if view is None:
        return None
    if len(_VIEWS) >= _MAX_VIEWS:
        _VIEWS.clear()
    _VIEWS[base] = (blob, view)
    return view


@dataclass(frozen=True)
class Changes:
    """What moved since the snapshot: listed files whose stat moved (vanished ones included) and
    folders whose stamp moved (vanished ones included), so only those folders are listed again."""

    moved: list[str]
    folders: list[str]


def _named(view: StatView, files: list[int]) -> list[str] | None:
    """The moved files' paths; None when an ignore file is among them (the rules that pick files
    may have changed)."""
    paths = [view.names[i].decode("utf-8", errors="surrogateescape") for i in files]
    return None if any(p.rsplit("/", 1)[-1] in IGNORE_FILES for p in paths) else paths


def changes_since(root: Path, blob: bytes | None) -> Changes | None:
    """The stat pass of moved_files, which also names the folders to list again rather than
    giving up on the first; None without a snapshot, or when an ignore file moved."""
    view = stat_view(root, blob)
    if view is None:
        return None
    files, folders = view.moved() or view.moved_one_by_one()
    paths = _named(view, files)
    if paths is None:
        return None
    return Changes(paths, [view.folders[i] for i in folders])


def moved_files(root: Path, blob: bytes | None) -> list[str] | None:
    """The guard's check: files whose stat moved since the snapshot; None when a folder or an ignore
    file changed, something vanished or there is no snapshot, so the files must be listed again."""
    view = stat_view(root, blob)
    moved = view.moved() if view is not None else None
    if moved is None or moved[1]:
        return None
    return _named(view, moved[0])


def listed_names(root: Path, blob: bytes | None) -> tuple[list[str], list[str]]:
    """The files and folders of the last listing, relative and sorted (the view's, not parsed again)."""
    view = stat_view(root, blob)
    if view is None:
        return [], []
    return view.paths, view.folders


def _mtime(path: str | bytes) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


def _stat_key(path: str | bytes) -> StatKey | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino
