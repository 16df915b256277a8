"""The worker pool of an index run: forked with the batch's queries compiled, the parse timeout
whatever the parent handles, and the collector's threshold while a batch's bundles come in."""

import gc
import signal
import threading
from pathlib import Path

import pytest

from ragraf.config import load_settings
from ragraf.facts import extract
from ragraf.index import workers
from tests.test_index import PARSER_TRAP_TSX


def test_the_threshold_is_raised_for_a_batch_and_put_back_after_the_last_of_two() -> None:
    before = gc.get_threshold()
    first, second = workers._fewer_collections(), workers._fewer_collections()
    first.__enter__()
    assert gc.get_threshold() == workers._FEWER_COLLECTIONS
    second.__enter__()
    first.__exit__(None, None, None)  # the first batch ends while the second still runs
    assert gc.get_threshold() == workers._FEWER_COLLECTIONS
    second.__exit__(None, None, None)
    assert gc.get_threshold() == before


def test_a_batch_that_stops_early_puts_the_threshold_back(tmp_path: Path) -> None:
    before = gc.get_threshold()
    (tmp_path / "a.py").write_text("def a():\n    return 1\n")
    settings = load_settings(tmp_path, embedder="none")
    bundles = workers.prepare_all([(("", "python", settings.chunk_params()), "a.py")], settings)
    next(bundles)
    assert gc.get_threshold() == workers._FEWER_COLLECTIONS
    bundles.close()
    assert gc.get_threshold() == before


def test_the_queries_of_a_batch_are_compiled_before_its_workers_fork() -> None:
    extract._queries.pop("ruby", None)
    extract.compile_queries(["ruby", "markdown", "no-such-language"])
    assert extract._queries["ruby"] is not None
    assert "markdown" not in extract._queries and "no-such-language" not in extract._queries


@pytest.mark.timeout(120)
def test_a_forked_pool_ends_a_parse_past_the_timeout_though_the_parent_handles_sigalrm(
    tmp_path: Path,
) -> None:
    if threading.active_count() > 1:
        pytest.skip("a threaded process forks no pool")
    for i in range(workers._POOL_MIN_FILES):
        (tmp_path / f"m{i}.py").write_text(f"def f{i}():\n    return {i}\n")
    (tmp_path / "odd.tsx").write_text(PARSER_TRAP_TSX)
    settings = load_settings(tmp_path, embedder="none", parse_timeout_s=1)
    jobs = [(("", "python", settings.chunk_params()), f"m{i}.py") for i in range(workers._POOL_MIN_FILES)]
    jobs.append((("", "tsx", settings.chunk_params()), "odd.tsx"))
    previous = signal.signal(signal.SIGALRM, lambda *_: None)  # a handler the GIL-holding parse never runs
    try:
        bundles = list(workers.prepare_all(jobs, settings))
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert bundles[-1] is not None and bundles[-1].facts_status == workers.FAILED
    assert all(b is not None and b.facts_status == "supported" for b in bundles[:-1])


@pytest.mark.parametrize(("limit", "method"), [(None, "fork"), (0, "spawn")], ids=["small", "past the limit"])
def test_a_process_forks_its_pool_unless_its_pages_would_count_in_every_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: int | None, method: str
) -> None:
    if threading.active_count() > 1:
        pytest.skip("a threaded process forks no pool")
    if limit is not None:
        monkeypatch.setattr(workers, "_FORK_MAX_RESIDENT", limit)
    started: list[str] = []
    pool = workers._pool
    monkeypatch.setattr(workers, "_pool", lambda n, how: started.append(how) or pool(n, how))
    for i in range(workers._POOL_MIN_FILES):
        (tmp_path / f"m{i}.py").write_text(f"def f{i}():\n    return {i}\n")
    settings = load_settings(tmp_path, embedder="none")
    jobs = [(("", "python", settings.chunk_params()), f"m{i}.py") for i in range(workers._POOL_MIN_FILES)]
    bundles = list(workers.prepare_all(jobs, settings))
    assert started == [method]
    assert [b.facts[0][1] for b in bundles if b is not None] == [f"f{i}" for i in range(len(jobs))]
