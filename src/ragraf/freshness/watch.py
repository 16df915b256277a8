"""For a process that answers many reads (a server, a library user): the guard's stat pass only
when the kernel reported a change under the root since the last one (Linux inotify).

Armed on the second guard of a root in a process (a one-shot command never pays for it), before
the stat pass that sets the baseline, so nothing that happens during that pass is missed. Any
event, a lost event (queue overflow), a new snapshot or a watch that cannot be added sends the
guard back to the full stat pass; elsewhere than Linux, or with RAGRAF_WATCH=0, there is only that.

TreeWatch, for the live loop (index/live.py): every folder of a tree, and the paths the kernel names.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import os
import select
import struct
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

# Events about a folder's entries rather than a file's content: only a whole pass can follow them.
_STRUCTURE = (
    0x040  # IN_MOVED_FROM
    | 0x080  # IN_MOVED_TO
    | 0x100  # IN_CREATE
    | 0x200  # IN_DELETE
    | 0x400  # IN_DELETE_SELF
    | 0x800  # IN_MOVE_SELF
    | 0x4000  # IN_Q_OVERFLOW
    | 0x8000  # IN_IGNORED
    | 0x40000000  # IN_ISDIR
)
# Anything that can change what a folder holds or what a file in it contains.
_MASK = (
    0x002  # IN_MODIFY
    | 0x004  # IN_ATTRIB
    | 0x008  # IN_CLOSE_WRITE
    | 0x040  # IN_MOVED_FROM
    | 0x080  # IN_MOVED_TO
    | 0x100  # IN_CREATE
    | 0x200  # IN_DELETE
    | 0x400  # IN_DELETE_SELF
    | 0x800  # IN_MOVE_SELF
)
# The watched folder is gone from its path (deleted, moved away, or its watch dropped).
_GONE = 0x400 | 0x800 | 0x8000  # IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED
_IN_NONBLOCK = os.O_NONBLOCK
_IN_CLOEXEC = 0o2000000
_MAX_ROOTS = 8  # each watcher holds one of the user's inotify instances (128 by default)


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        libc.inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
        return libc
    except (OSError, AttributeError):
        return None


_LIBC = _libc()


class _Watch:
    """One root's inotify descriptor and what the last stat pass found."""

    def __init__(self, root: str) -> None:
        self.lock = threading.Lock()
        self.root = root
        self.fd = -1
        self.failed = False
        self.digest: bytes | None = None
        self.moved: list[str] | None = None
        self.folders: dict[int, str] = {}  # watch descriptor -> its folder, relative ("" the root)
        self.listed: bytes | None = None  # the snapshot whose folders are all watched
        # What the kernel named since the last pass: files (relative) whose content or attributes
        # changed; None once a folder changed (an entry made, removed or renamed) or events were lost.
        self.named: set[str] | None = set()
        self.delta: Delta | None = None  # of the snapshot at digest

    def arm(self, folders: list[str]) -> bool:
        """Watch every folder of the snapshot; False (and never again) when the kernel says no."""
        if _LIBC is None or self.failed:
            return False
        fd = _LIBC.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if fd < 0:
            self.failed = True
            return False
        self.fd = fd
        if not self.add(folders):
            self.close()  # out of watches (fs.inotify.max_user_watches) or a folder vanished
            self.failed = True
            return False
        return True

    def add(self, folders: list[str]) -> bool:
        """Watch these folders too (one watched already keeps its watch); False when one cannot be."""
        assert _LIBC is not None
        cut = len(self.root) + 1
        watched = set(self.folders.values())
        for folder in folders:
            if folder[cut:] in watched:
                continue
            wd = _LIBC.inotify_add_watch(self.fd, os.fsencode(folder), _MASK)
            if wd < 0:
                return False
            self.folders[wd] = folder[cut:]
        return True

    def changed(self) -> bool:
        """Drain the queue: True when anything happened since the last call (or overflowed), what
        it was added to `named`."""
        seen = False
        while True:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                return seen
            except OSError:
                self.close()
                return True
            if not data:
                return seen
            seen = True
            self._note(data)

    def _note(self, data: bytes) -> None:
        offset = 0
        while offset + _EVENT.size <= len(data):
            wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
            raw = data[offset + _EVENT.size : offset + _EVENT.size + length].rstrip(b"\0")
            offset += _EVENT.size + length
            folder = self.folders.get(wd)
            if mask & _GONE:
                self.folders.pop(wd, None)  # so the next snapshot's folders watch it again if it is back
            if mask & _STRUCTURE or folder is None or not raw:
                self.named = None  # a folder's entries or the folder itself: a whole pass says what
            elif self.named is not None:
                name = os.fsdecode(raw)
                self.named.add(f"{folder}/{name}" if folder else name)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
        self.fd = -1
        self.digest = self.moved = self.listed = None
        self.folders = {}


_WATCHES: OrderedDict[str, _Watch] = OrderedDict()
_REGISTRY_LOCK = threading.Lock()


def _watch_of(root: str) -> _Watch:
    with _REGISTRY_LOCK:
        watch = _WATCHES.get(root)
        if watch is None:
            watch = _WATCHES[root] = _Watch(root)
            while len(_WATCHES) > _MAX_ROOTS:
                _WATCHES.popitem(last=False)[1].close()
        _WATCHES.move_to_end(root)
        return watch


def kept(root: str, digest: bytes) -> list[str] | None:
    """What the last stat pass of root found moved against the snapshot named by digest, when the
    kernel reported nothing under root since; None otherwise (and the pass is forgotten, so the
    next moved_since runs a new one)."""
    with _REGISTRY_LOCK:
        watch = _WATCHES.get(root)
    if watch is None:
        return None
    with watch.lock:
        if watch.fd < 0 or watch.digest != digest or watch.moved is None:
            return None
        if watch.changed():
            watch.digest = watch.moved = None
            return None
        return list(watch.moved)


# What a snapshot is over (its base and the folders its delta records) and the files its delta sets or drops.
Delta = tuple[bytes, frozenset[str]]


def moved_since(
    root: str,
    digest: bytes,
    stat_pass: Callable[[], list[str] | None],
    folders: Callable[[], list[str] | None],
    restat: Callable[[list[str]], list[str] | None] | None = None,
    delta: Callable[[], Delta | None] | None = None,
) -> list[str] | None:
    """What stat_pass() would answer for the snapshot named by digest, running it only when the
    kernel reported something under root since its last run (or nothing is watched). When all it
    reported is files changed in place, restat(those and the last pass's files) answers instead:
    the files among them whose stat moved, or None for a whole pass. So it does after a new
    snapshot on the same base (an index run's change, delta() says), with the files either
    snapshot's delta names, the only ones whose entries can differ."""
    watch = _watch_of(root)
    with watch.lock:
        if watch.fd >= 0 and watch.listed != digest:
            # A new snapshot (an index run) may list new folders: watch those too, whatever pass
            # answers below. The watch stays: closing it cost a reader 14 ms a revision at 200
            # folders, then arming anew.
            names = folders()
            if names is None or not watch.add(names):
                watch.close()
            else:
                watch.listed = digest
        if watch.fd >= 0 and watch.moved is not None and watch.digest is not None:
            rows: frozenset[str] | None = frozenset()
            now = watch.delta
            if watch.digest != digest:
                now, old = (delta() if delta is not None else None), watch.delta
                rows = now[1] | old[1] if now is not None and old is not None and now[0] == old[0] else None
            if rows is not None:
                if not watch.changed() and not rows and watch.digest == digest:
                    return list(watch.moved)
                if restat is not None and watch.named is not None and watch.fd >= 0:
                    moved = restat(sorted({*watch.moved, *watch.named, *rows}))
                    if moved is not None:
                        watch.digest, watch.moved, watch.named, watch.delta = digest, moved, set(), now
                        return list(moved)
        if watch.fd < 0:  # guard.py comes here from a root's second guard on: a long-running process
            names = folders()
            if names is not None and watch.arm(names):
                watch.listed = digest
        elif watch.fd >= 0:
            watch.changed()  # what happened so far is covered by the pass below
        watch.named = set()
        moved = stat_pass()
        if watch.fd >= 0 and moved is not None:
            watch.digest, watch.moved = digest, moved
            watch.delta = delta() if delta is not None else None
        else:
            watch.digest = watch.moved = None
        return moved


# The tree watch of the live loop (index/live.py): every folder under a root, new ones as they appear.
_IN_MOVED_FROM, _IN_MOVED_TO, _IN_CREATE = 0x040, 0x080, 0x100
_IN_Q_OVERFLOW, _IN_IGNORED, _IN_ISDIR = 0x4000, 0x8000, 0x40000000
_IN_ONLYDIR, _IN_DONT_FOLLOW = 0x01000000, 0x02000000
_EVENT = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len; then the name


@dataclass
class TreeChanges:
    """What the kernel named under a tree since the last read: changed paths (relative, posix), and
    whether events were lost (queue overflow: anything may have changed)."""

    paths: set[str] = field(default_factory=set)
    folders: set[str] = field(default_factory=set)  # those of paths that are folders
    overflow: bool = False
    events: int = 0

    def merge(self, other: TreeChanges) -> None:
        self.paths |= other.paths
        self.folders |= other.folders
        self.overflow = self.overflow or other.overflow
        self.events += other.events


class TreeWatch:
    """inotify on every folder under root that `prune` (a folder's relative path) does not exclude;
    a folder created or moved in is watched before its files are looked at, one moved away or
    deleted is forgotten. Linux only: start() says False elsewhere, or when the kernel refuses."""

    def __init__(self, root: Path, prune: Callable[[str], bool]) -> None:
        self.root = root
        self.prune = prune
        self.fd = -1
        self.folders: dict[int, str] = {}  # watch descriptor -> folder ("" for the root)
        self.why_not = ""

    def start(self) -> bool:
        """Watch the tree; False (with why_not) when inotify is unavailable or out of watches."""
        if _LIBC is None:
            self.why_not = "inotify is Linux's"
            return False
        self.fd = _LIBC.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if self.fd < 0:
            self.why_not = f"inotify_init1 failed: {os.strerror(ctypes.get_errno())}"
            return False
        return self._add_tree("")

    def _add(self, rel: str) -> bool:
        path = self.root / rel if rel else self.root
        wd = _LIBC.inotify_add_watch(self.fd, os.fsencode(path), _MASK | _IN_ONLYDIR | _IN_DONT_FOLLOW)  # type: ignore[union-attr]
        if wd >= 0:
            self.folders[wd] = rel
            return True
        err = ctypes.get_errno()
        if err == errno.ENOSPC:
            self.why_not = "out of inotify watches (raise fs.inotify.max_user_watches)"
            return False
        return True  # vanished or not a folder any more: its parent's events say so

    def _add_tree(self, top: str) -> bool:
        """Watch top and every folder below it (top first, so nothing created meanwhile is missed)."""
        if not self._add(top):
            return False
        start = self.root / top if top else self.root
        for dirpath, dirs, _files in os.walk(start):
            rel_dir = os.path.relpath(dirpath, self.root).replace(os.sep, "/")
            rel_dir = "" if rel_dir == "." else rel_dir
            kept = []
            for name in dirs:
                rel = f"{rel_dir}/{name}" if rel_dir else name
                if not self.prune(rel):
                    if not self._add(rel):
                        return False
                    kept.append(name)
            dirs[:] = kept
        return True

    def _forget(self, top: str) -> None:
        """Stop watching top and what is below it (moved away: its watches would name old paths)."""
        for wd, rel in list(self.folders.items()):
            if rel == top or rel.startswith(top + "/"):
                _LIBC.inotify_rm_watch(self.fd, wd)  # type: ignore[union-attr]
                del self.folders[wd]

    def resync(self) -> bool:
        """After lost events: watch the tree anew (folders made meanwhile were never added)."""
        for wd in list(self.folders):
            _LIBC.inotify_rm_watch(self.fd, wd)  # type: ignore[union-attr]
        self.folders.clear()
        self._drain()
        return self._add_tree("")

    def wait(self, timeout_s: float) -> bool:
        """Block until the kernel has something to say, or timeout_s passed; True when it has."""
        try:
            readable, _, _ = select.select([self.fd], [], [], max(0.0, timeout_s))
        except (OSError, ValueError):
            return False
        return bool(readable)

    def _drain(self) -> None:
        with contextlib.suppress(OSError):
            while os.read(self.fd, 65536):
                pass

    def read(self) -> TreeChanges:
        """Everything queued now, as changed paths; new folders are watched on the way."""
        changes = TreeChanges()
        while True:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                return changes
            except OSError:
                changes.overflow = True
                return changes
            if not data:
                return changes
            self._parse(data, changes)

    def _parse(self, data: bytes, changes: TreeChanges) -> None:
        offset = 0
        while offset + _EVENT.size <= len(data):
            wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
            raw = data[offset + _EVENT.size : offset + _EVENT.size + length].rstrip(b"\0")
            offset += _EVENT.size + length
            changes.events += 1
            if mask & _IN_Q_OVERFLOW:
                changes.overflow = True
                continue
            folder = self.folders.get(wd)
            if mask & _IN_IGNORED:
                self.folders.pop(wd, None)
                continue
            if folder is None:
                continue  # a watch already forgotten (its folder moved away)
            if not raw:
                continue  # about the folder itself: its parent names it
            name = os.fsdecode(raw)
            rel = f"{folder}/{name}" if folder else name
            if mask & _IN_ISDIR:
                if self.prune(rel):
                    continue
                if mask & _IN_MOVED_FROM:
                    self._forget(rel)
                elif mask & (_IN_CREATE | _IN_MOVED_TO) and not self._add_tree(rel):
                    changes.overflow = True  # out of watches: only a full pass can say what changed
                changes.folders.add(rel)
            changes.paths.add(rel)

    def pending(self) -> bool:
        """Whether the kernel has queued something (without reading it)."""
        return self.fd >= 0 and self.wait(0)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
        self.fd = -1
        self.folders.clear()
