"""For a process that answers many reads (a server, a library user): the guard's stat pass only
when the kernel reported a change under the root since the last one (Linux inotify).

Armed on the second guard of a root in a process (a one-shot command never pays for it), before
the stat pass that sets the baseline, so nothing that happens during that pass is missed. Any
event, a lost event (queue overflow), a new snapshot or a watch that cannot be added sends the
guard back to the full stat pass; elsewhere than Linux, or with RAGRAF_WATCH=0, there is only that.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable

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
_IN_NONBLOCK = os.O_NONBLOCK
_IN_CLOEXEC = 0o2000000
_MAX_ROOTS = 8  # each watcher holds one of the user's inotify instances (128 by default)


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        return libc
    except (OSError, AttributeError):
        return None


_LIBC = _libc()


class _Watch:
    """One root's inotify descriptor and what the last stat pass found."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.fd = -1
        self.failed = False
        self.guards = 0
        self.digest: bytes | None = None
        self.moved: list[str] | None = None

    def arm(self, folders: list[str]) -> bool:
        """Watch every folder of the snapshot; False (and never again) when the kernel says no."""
        if _LIBC is None or self.failed:
            return False
        fd = _LIBC.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if fd < 0:
            self.failed = True
            return False
        for folder in folders:
            if _LIBC.inotify_add_watch(fd, os.fsencode(folder), _MASK) < 0:
                os.close(fd)  # out of watches (fs.inotify.max_user_watches) or a folder vanished
                self.failed = True
                return False
        self.fd = fd
        return True

    def changed(self) -> bool:
        """Drain the queue: True when anything happened since the last call (or overflowed)."""
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

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
        self.fd = -1
        self.digest = self.moved = None


_WATCHES: OrderedDict[str, _Watch] = OrderedDict()
_REGISTRY_LOCK = threading.Lock()


def _watch_of(root: str) -> _Watch:
    with _REGISTRY_LOCK:
        watch = _WATCHES.get(root)
        if watch is None:
            watch = _WATCHES[root] = _Watch()
            while len(_WATCHES) > _MAX_ROOTS:
                _WATCHES.popitem(last=False)[1].close()
        _WATCHES.move_to_end(root)
        return watch


def moved_since(
    root: str,
    digest: bytes,
    stat_pass: Callable[[], list[str] | None],
    folders: Callable[[], list[str] | None],
) -> list[str] | None:
    """What stat_pass() would answer for the snapshot named by digest, running it only when the
    kernel reported something under root since its last run (or nothing is watched)."""
    watch = _watch_of(root)
    with watch.lock:
        watch.guards += 1
        if watch.fd >= 0 and watch.digest == digest and watch.moved is not None and not watch.changed():
            return list(watch.moved)
        if watch.fd >= 0 and watch.digest is not None and watch.digest != digest:
            watch.close()  # a new snapshot may list new folders: watch those too
        if watch.fd < 0 and watch.guards >= 2:
            names = folders()
            if names is not None:
                watch.arm(names)
        elif watch.fd >= 0:
            watch.changed()  # what happened so far is covered by the pass below
        moved = stat_pass()
        if watch.fd >= 0 and moved is not None:
            watch.digest, watch.moved = digest, moved
        else:
            watch.digest = watch.moved = None
        return moved
