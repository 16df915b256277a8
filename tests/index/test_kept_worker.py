"""A threaded process (a server's live loop) keeps its one fork-server worker between small batches:
a new worker per run paid its start and its grammars' loading again each time (issue 28). One that
a parse past the timeout brought down is not kept."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import outliving, write
from test_index import PARSER_TRAP_TSX

from ragraf.config import load_settings
from ragraf.index import workers
from ragraf.languages import language_of


@pytest.fixture
def threaded(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """A second thread running (so small batches go to the fork server), a fresh kept list, and
    the number of pools made."""
    made: list[int] = []
    new = workers._pool

    def counted(n: int, method: str):  # type: ignore[no-untyped-def]
        made.append(n)
        return new(n, method)

    monkeypatch.setattr(workers, "_pool", counted)
    monkeypatch.setattr(workers, "_KEPT", [])
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        yield made
    finally:
        stop.set()
        thread.join()
        for pool in workers._KEPT:
            pool.shutdown()


def _batch(root: Path, files: dict[str, str], timeout_s: float = 60.0) -> list[object]:
    write(root, files)
    settings = load_settings(
        root, env={"RAGRAF_HOME": str(root / ".home"), "RAGRAF_PARSE_TIMEOUT_S": str(timeout_s)}
    )
    jobs = [(("", language_of(p), settings.chunk_params()), p) for p in sorted(files)]
    return list(workers.prepare_all(jobs, settings))


def test_small_batches_in_a_row_share_one_worker(tmp_path: Path, threaded: list[int]) -> None:
    for i in range(4):
        bundles = _batch(tmp_path, {f"m{i}.py": f"def edit_{i}(x):\n    return x\n"})
        assert [name for b in bundles for kind, name, *_ in b.facts if kind == "def"] == [f"edit_{i}"]  # type: ignore[attr-defined]
    assert threaded == [1]
    assert len(workers._KEPT) == 1


def test_a_worker_a_parse_brought_down_is_replaced(tmp_path: Path, threaded: list[int]) -> None:
    _batch(tmp_path, {"a.py": "def first(x):\n    return x\n"})
    bundles = _batch(tmp_path, {"odd.tsx": PARSER_TRAP_TSX}, timeout_s=1)
    assert [b.facts_status for b in bundles] == [workers.FAILED]  # type: ignore[attr-defined]
    made = len(threaded)
    bundles = _batch(tmp_path, {"b.py": "def after(x):\n    return x\n"})
    assert [name for b in bundles for kind, name, *_ in b.facts if kind == "def"] == ["after"]  # type: ignore[attr-defined]
    assert len(threaded) == made + 1  # the broken worker was not kept
    assert len(workers._KEPT) == 1


def test_a_threaded_process_forks_its_big_batches_from_the_fork_server(
    tmp_path: Path, threaded: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    methods: list[str] = []
    counted = workers._pool
    monkeypatch.setattr(workers, "_pool", lambda n, method: (methods.append(method), counted(n, method))[1])
    files = {f"pkg/m{i:03d}.py": f"def big_{i}(x):\n    return x\n" for i in range(workers._POOL_MIN_FILES)}
    bundles = _batch(tmp_path, files)
    assert [name for b in bundles for kind, name, *_ in b.facts if kind == "def"] == [
        f"big_{i}" for i in range(len(files))
    ]  # type: ignore[attr-defined]
    assert methods == ["forkserver"] and threaded == [min(os.cpu_count() or 1, 8)]
    assert not workers._KEPT  # only the one worker of small batches is kept


def _descendants(pid: int) -> set[int]:
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
    found, todo = set(), [pid]
    while todo:
        p = todo.pop()
        kids = {c for c, parent in parents.items() if parent == p}
        found |= kids
        todo.extend(kids)
    return found


SERVER = """
import sys, threading, time
from pathlib import Path
from ragraf.config import load_settings
from ragraf.index import workers
from ragraf.languages import language_of
root = Path(sys.argv[1])
threading.Thread(target=time.sleep, args=(600,), daemon=True).start()  # a server's threads
settings = load_settings(root, env={"RAGRAF_HOME": str(root / ".home")})
jobs = [(("", language_of("a.py"), settings.chunk_params()), "a.py")]
assert all(b is not None for b in workers.prepare_all(jobs, settings))
print("ready", flush=True)
time.sleep(600)
"""


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM"])
def test_a_killed_server_leaves_no_fork_server_or_worker_behind(tmp_path: Path, how: str) -> None:
    # The fork server's worker holds the server's end of the line to its owner, and watched only its
    # own parent (the fork server): the two kept each other alive after the owner was gone.
    import signal
    import subprocess
    import sys

    write(tmp_path, {"a.py": "def f():\n    return 1\n"})
    proc = subprocess.Popen([sys.executable, "-c", SERVER, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        left = _descendants(proc.pid)
        assert len(left) >= 3  # the fork server, its worker, the resource tracker
    finally:
        proc.send_signal(getattr(signal, how))
        proc.wait(timeout=30)
    assert not outliving(left, 20), "the fork server or its worker outlived the server"
