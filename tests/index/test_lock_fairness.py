"""The writer lock serves waiting writers in arrival order, a dead waiter never blocks the queue, and
a killed holder's forked children (pool workers) do not keep it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ragraf.errors import LockHeldError
from ragraf.index.lock import WriterLock

HANG_STOP_S = 300  # only stops a hang; the assertions count turns, never seconds

# Each writer takes the lock `rounds` times, noting its name in the log each time it holds it.
WRITER = """
import os, sys
from pathlib import Path
from ragraf.index.lock import WriterLock
home, name, rounds, log = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
for _ in range(rounds):
    with WriterLock(home, timeout_s=600):
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        os.write(fd, name.encode())
        os.close(fd)
"""


def _until(check, what: str) -> None:  # type: ignore[no-untyped-def]
    stop = time.monotonic() + HANG_STOP_S
    while not check():
        assert time.monotonic() < stop, f"hang: {what}"
        time.sleep(0.05)


def _writer(home: Path, name: str, rounds: int, log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", WRITER, str(home), name, str(rounds), str(log)])


def test_three_writers_take_the_lock_in_turn_in_the_order_they_queued(tmp_path: Path) -> None:
    home, log = tmp_path / "home", tmp_path / "turns"
    held = WriterLock(home)
    held.acquire()
    writers = []
    try:
        for n, name in enumerate("ABC"):
            writers.append(_writer(home, name, 4, log))
            _until(lambda n=n: held.waiting() == n + 2, f"writer {name} to queue")
    finally:
        held.release()
    for w in writers:
        assert w.wait(timeout=HANG_STOP_S) == 0
    # A writer that comes back for the lock queues behind the two already waiting: strict turns.
    assert log.read_text() == "ABC" * 4
    assert held.waiting() == 0 and not [p for p in (home / "lock.queue").iterdir() if p.name.isdigit()]


def test_a_waiter_killed_in_the_queue_does_not_hold_up_those_behind_it(tmp_path: Path) -> None:
    home, log = tmp_path / "home", tmp_path / "turns"
    held = WriterLock(home)
    held.acquire()
    try:
        dead = _writer(home, "X", 1, log)
        _until(lambda: held.waiting() == 2, "the doomed writer to queue")
        alive = _writer(home, "B", 1, log)
        _until(lambda: held.waiting() == 3, "the second writer to queue")
        os.kill(dead.pid, signal.SIGKILL)
        dead.wait(timeout=HANG_STOP_S)
    finally:
        held.release()
    assert alive.wait(timeout=HANG_STOP_S) == 0
    assert log.read_text() == "B"


def test_no_wait_is_refused_while_a_writer_is_queued_even_between_holders(tmp_path: Path) -> None:
    home = tmp_path / "home"
    queued = WriterLock(home)
    queued.acquire()
    try:
        with pytest.raises(LockHeldError) as err:
            WriterLock(home, wait=False).acquire()
        assert f"pid {os.getpid()}" in err.value.message
        assert queued.waiting() == 1  # the refused one left the queue
    finally:
        queued.release()
    with WriterLock(home, wait=False):
        assert WriterLock(home).busy() is not None


# Takes the lock, forks a child that outlives it (as a forked pool worker may), prints its pid.
HOLDER_WITH_CHILD = """
import os, sys, time
from pathlib import Path
from ragraf.index.lock import WriterLock
WriterLock(Path(sys.argv[1])).acquire()
child = os.fork()
if child == 0:
    time.sleep(600)
    os._exit(0)
print(child, flush=True)
time.sleep(600)
"""


def test_a_killed_holders_forked_child_does_not_keep_the_lock(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER_WITH_CHILD, str(tmp_path)], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    child = int(proc.stdout.readline())
    try:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        os.kill(child, 0)  # alive still
        lock = WriterLock(tmp_path, wait=False)
        lock.acquire()  # LockHeldError while the child's copy of the flock is open
        lock.release()
    finally:
        os.kill(child, signal.SIGKILL)
