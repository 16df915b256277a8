"""A threaded process (a server's live loop) keeps its one fork-server worker between small batches:
a new worker per run paid its start and its grammars' loading again each time (issue 28). One that
a parse past the timeout brought down is not kept."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import write
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
        assert [f.name for b in bundles for f in b.facts if f.kind == "def"] == [f"edit_{i}"]  # type: ignore[attr-defined]
    assert threaded == [1]
    assert len(workers._KEPT) == 1


def test_a_worker_a_parse_brought_down_is_replaced(tmp_path: Path, threaded: list[int]) -> None:
    _batch(tmp_path, {"a.py": "def first(x):\n    return x\n"})
    bundles = _batch(tmp_path, {"odd.tsx": PARSER_TRAP_TSX}, timeout_s=1)
    assert [b.facts_status for b in bundles] == [workers.FAILED]  # type: ignore[attr-defined]
    made = len(threaded)
    bundles = _batch(tmp_path, {"b.py": "def after(x):\n    return x\n"})
    assert [f.name for b in bundles for f in b.facts if f.kind == "def"] == ["after"]  # type: ignore[attr-defined]
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
    assert [f.name for b in bundles for f in b.facts if f.kind == "def"] == [
        f"big_{i}" for i in range(len(files))
    ]  # type: ignore[attr-defined]
    assert methods == ["forkserver"] and threaded == [min(os.cpu_count() or 1, 8)]
    assert not workers._KEPT  # only the one worker of small batches is kept
