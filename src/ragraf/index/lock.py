"""One writer at a time: an flock on the index home's lock file, naming its holder."""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
import time
from pathlib import Path
from types import TracebackType

from ragraf.errors import LockHeldError, StoreError


class WriterLock:
    """Exclusive flock; the kernel releases it when the holder dies, so a crash never wedges it."""

    def __init__(self, home: Path, wait: bool = True, timeout_s: float = 600.0) -> None:
        self.path = home / "lock"
        self.wait = wait
        self.timeout_s = timeout_s
        self.fd: int | None = None

    def holder(self) -> str:
        try:
            info = json.loads(self.path.read_text() or "{}")
        except (OSError, ValueError):
            return "another process"
        return f"pid {info.get('pid')} on {info.get('host')} ({info.get('command', '?')}, since {info.get('since', '?')})"

    def acquire(self, on_wait=None) -> None:  # type: ignore[no-untyped-def]
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StoreError(
                f"cannot take the index lock {self.path}: {exc.strerror}",
                suggest="the index home must be writable to index (RAGRAF_HOME moves it)",
            ) from None
        deadline = time.monotonic() + self.timeout_s
        told = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not self.wait or time.monotonic() > deadline:
                    os.close(fd)
                    raise LockHeldError(
                        f"another indexer holds the index lock: {self.holder()}",
                        suggest="wait for it to finish, or run without --no-wait to queue behind it",
                    ) from None
                if on_wait and not told:
                    on_wait(self.holder())
                    told = True
                time.sleep(0.1)
        os.ftruncate(fd, 0)
        info = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "command": " ".join(sys.argv[:3]),
            "since": time.strftime("%Y-%m-%dT%H:%M:%S"),
        }
        os.pwrite(fd, json.dumps(info).encode(), 0)
        self.fd = fd

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
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> WriterLock:
        self.acquire()
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()
