"""Running git without a fixed time limit: a command may take as long as its work does, and is
stopped only when it stalls, that is makes no progress (no output, no CPU time, no file I/O) for
`RAGRAF_GIT_STALL_S` seconds (a git blocked on a FIFO, a dead network mount, a lock held forever)."""

from __future__ import annotations

import os
import selectors
import subprocess
import threading
import time
from pathlib import Path
from typing import IO

DEFAULT_STALL_S = 60.0


def stall_limit() -> float:
    """Seconds without progress after which a git command is stopped (RAGRAF_GIT_STALL_S)."""
    try:
        value = float(os.environ.get("RAGRAF_GIT_STALL_S", "") or DEFAULT_STALL_S)
    except ValueError:
        return DEFAULT_STALL_S
    return value if value > 0 else DEFAULT_STALL_S


def _work_done(pid: int) -> tuple[int, ...] | None:
    """The child's CPU ticks and bytes read and written so far (Linux /proc); None elsewhere."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        ticks = (int(fields[11]), int(fields[12]))  # utime, stime
    except (OSError, IndexError, ValueError):
        return None
    try:
        with open(f"/proc/{pid}/io", "rb") as f:
            io = tuple(int(line.split()[1]) for line in f.read().splitlines()[:2])  # rchar, wchar
    except (OSError, IndexError, ValueError):
        io = ()
    return ticks + io


def _write_all(stdin: IO[bytes], data: bytes) -> None:
    try:
        stdin.write(data)
        stdin.close()
    except OSError:  # the child stopped reading (it exited, or was stopped)
        pass


def run_watched(
    cmd: list[str],
    cwd: Path | str,
    env: dict[str, str] | None = None,
    stall_s: float | None = None,
    input: bytes | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run cmd to completion with its stdout and stderr captured (and input on its stdin), however
    long it works; raises subprocess.TimeoutExpired once it has made no progress for stall_s
    (default stall_limit())."""
    stall = stall_s if stall_s is not None else stall_limit()
    stdin = subprocess.DEVNULL if input is None else subprocess.PIPE
    proc = subprocess.Popen(
        cmd, cwd=cwd, env=env, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stderr is not None
    if input is not None:
        assert proc.stdin is not None
        threading.Thread(target=_write_all, args=(proc.stdin, input), daemon=True).start()
    chunks: dict[int, list[bytes]] = {proc.stdout.fileno(): [], proc.stderr.fileno(): []}
    tick = min(1.0, stall / 4)
    with selectors.DefaultSelector() as sel:
        for fd in chunks:
            sel.register(fd, selectors.EVENT_READ)
        last_work = _work_done(proc.pid)
        last_progress = time.monotonic()
        try:
            while sel.get_map():
                for key, _ in sel.select(tick):
                    data = os.read(key.fd, 1 << 16)
                    if data:
                        chunks[key.fd].append(data)
                        last_progress = time.monotonic()
                    else:
                        sel.unregister(key.fd)
                work = _work_done(proc.pid)
                if work != last_work:
                    last_work, last_progress = work, time.monotonic()
                if time.monotonic() - last_progress > stall:
                    raise subprocess.TimeoutExpired(cmd, stall)
            returncode = proc.wait()
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        finally:
            proc.stdout.close()
            proc.stderr.close()
    out, err = (b"".join(chunks[fd]) for fd in chunks)
    return subprocess.CompletedProcess(cmd, returncode, out, err)
