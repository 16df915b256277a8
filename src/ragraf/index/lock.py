"""One writer at a time, served in arrival order: an flock on the index home's lock file, naming
its holder, and a queue of tickets beside it."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType

from ragraf.errors import LockHeldError, StoreError

# The descriptors of the flocks this process holds (the lock, its ticket). A forked child (a pool
# worker) closes its copies: the kernel keeps a flock while any copy is open, so a worker left
# behind by a killed indexer would hold the lock until it noticed and exited.
_HELD: set[int] = set()


def _close_held_in_child() -> None:
    for fd in _HELD:
        with contextlib.suppress(OSError):
            os.close(fd)  # closing a copy: the parent's flock stays (never LOCK_UN here)
    _HELD.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_close_held_in_child)


def keep_out_of_listings(home: Path) -> None:
    """A `.gitignore` of `*` in the index home, as pytest and mypy leave in their caches: a home
    inside the indexed root (RAGRAF_HOME under any name) is then neither indexed nor shown by
    `git status`."""
    marker = home / ".gitignore"
    if not marker.exists():
        marker.write_text("# Created by ragraf: the index home is not part of the project.\n*\n")


class WriterLock:
    """Exclusive flock; the kernel releases it when the holder dies, so a crash never wedges it.

    Waiters queue: each takes a ticket (a file in lock.queue/, numbered past every ticket there,
    flocked by its owner for as long as it waits or holds) and takes the lock only when no live
    ticket is ahead of it. A flock on the queue's guard file makes taking a ticket and looking at
    the queue atomic; a ticket whose owner died is unlocked, so it is stale and removed."""

    def __init__(self, home: Path, wait: bool = True, timeout_s: float = 600.0) -> None:
        self.path = home / "lock"
        self.queue = home / "lock.queue"
        self.wait = wait
        self.timeout_s = timeout_s
        self.fd: int | None = None
        self._ticket: tuple[Path, int] | None = None

    def holder(self) -> str:
        try:
            info = json.loads(self.path.read_text() or "{}")
        except (OSError, ValueError):
            return "another process"
        return f"pid {info.get('pid')} on {info.get('host')} ({info.get('command', '?')}, since {info.get('since', '?')})"

    def acquire(self, on_wait: Callable[[str], object] | None = None) -> None:
        try:
            self.queue.mkdir(parents=True, exist_ok=True)
            keep_out_of_listings(self.path.parent)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise _unwritable(self.path, exc) from None
        deadline = time.monotonic() + self.timeout_s
        told = False
        try:
            try:
                self._take_ticket()
            except OSError as exc:
                raise _unwritable(self.queue, exc) from None
            while not (self._my_turn() and _try_flock(fd)):
                if not self.wait or time.monotonic() > deadline:
                    raise LockHeldError(
                        f"another indexer holds the index lock: {self.holder()}",
                        suggest="wait for it to finish, or run without --no-wait to queue behind it",
                    )
                if on_wait and not told:
                    on_wait(self.holder())
                    told = True
                time.sleep(0.1)
        except BaseException:
            os.close(fd)
            self._leave_queue()
            raise
        os.ftruncate(fd, 0)
        info = {
            "pid": os.getpid(),
            "host": os.uname().nodename,  # gethostname(), without loading socket
            "command": " ".join(sys.argv[:3]),
            "since": time.strftime("%Y-%m-%dT%H:%M:%S"),
        }
        os.pwrite(fd, json.dumps(info).encode(), 0)
        self.fd = fd
        _HELD.add(fd)

    def waiting(self) -> int:
        """How many live tickets the queue holds (the holder's among them, when it queued)."""
        with self._guard():
            return len(self._live_tickets(None))

    @contextlib.contextmanager
    def _guard(self) -> Iterator[None]:
        fd = os.open(self.queue / ".guard", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _take_ticket(self) -> None:
        with self._guard():
            numbers = [int(p.name) for p in self.queue.iterdir() if p.name.isdigit()]
            path = self.queue / f"{max(numbers, default=0) + 1:012d}"
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
            fcntl.flock(fd, fcntl.LOCK_EX)  # made and locked under the guard: never seen unlocked
            os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._ticket = (path, fd)
        _HELD.add(fd)

    def _live_tickets(self, before: str | None) -> list[Path]:
        """The tickets ahead of `before` (all with None) whose owner is alive; stale ones removed."""
        live = []
        for path in sorted(self.queue.iterdir()):
            if not path.name.isdigit() or (before is not None and path.name >= before):
                continue
            try:
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                continue
            try:
                if _try_flock(fd, fcntl.LOCK_SH):
                    path.unlink(missing_ok=True)  # its owner died without leaving the queue
                else:
                    live.append(path)
            finally:
                os.close(fd)
        return live

    def _my_turn(self) -> bool:
        assert self._ticket is not None
        with self._guard():
            return not self._live_tickets(self._ticket[0].name)

    def _leave_queue(self) -> None:
        if self._ticket is not None:
            path, fd = self._ticket
            with contextlib.suppress(OSError):
                path.unlink()
            _HELD.discard(fd)
            os.close(fd)
            self._ticket = None

    def busy(self) -> str | None:
        """Who holds the lock now (another indexer at work), or None; takes nothing."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return self.holder()
        finally:
            os.close(fd)  # closing drops a shared lock taken just now
        return None

    def release(self) -> None:
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            _HELD.discard(self.fd)
            os.close(self.fd)
            self.fd = None
        self._leave_queue()

    def __enter__(self) -> WriterLock:
        self.acquire()
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


def _unwritable(path: Path, exc: OSError) -> StoreError:
    return StoreError(
        f"cannot take the index lock {path}: {exc.strerror}",
        suggest="the index home must be writable to index (RAGRAF_HOME moves it)",
    )


def _try_flock(fd: int, kind: int = fcntl.LOCK_EX) -> bool:
    try:
        fcntl.flock(fd, kind | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True
