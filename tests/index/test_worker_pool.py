"""The worker pool of an index run: forked with the batch's queries compiled, the parse timeout
whatever the parent handles, and the collector's threshold while a batch's bundles come in."""

import gc
import json
import subprocess
import sys
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


# A batch in a fresh interpreter, single-threaded as the CLI is (the test process runs threads,
# and a threaded process never forks a pool): the start methods of its pools, and each bundle.
BATCH = """
import json, signal, sys
from pathlib import Path
from ragraf.config import load_settings
from ragraf.index import workers
root, limit, trap = Path(sys.argv[1]), sys.argv[2], sys.argv[3] == "1"
if limit:
    workers._FORK_MAX_RESIDENT = int(limit)
started, pool = [], workers._pool
workers._pool = lambda n, how: started.append(how) or pool(n, how)
settings = load_settings(root, embedder="none", parse_timeout_s=1)
jobs = [(("", "python", settings.chunk_params()), f"m{i}.py") for i in range(workers._POOL_MIN_FILES)]
if trap:
    jobs.append((("", "tsx", settings.chunk_params()), "odd.tsx"))
signal.signal(signal.SIGALRM, lambda *_: None)  # a handler the GIL-holding parse never runs
bundles = list(workers.prepare_all(jobs, settings))
print(json.dumps({"started": started, "status": [b and b.facts_status for b in bundles],
                  "names": [b and b.facts and b.facts[0][1] for b in bundles]}))
"""


def _batch(root: Path, limit: str = "", trap: bool = False) -> dict[str, list[str]]:
    for i in range(workers._POOL_MIN_FILES):
        (root / f"m{i}.py").write_text(f"def f{i}():\n    return {i}\n")
    (root / "odd.tsx").write_text(PARSER_TRAP_TSX)
    out = subprocess.run(
        [sys.executable, "-c", BATCH, str(root), limit, "1" if trap else "0"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_a_forked_pool_ends_a_parse_past_the_timeout_though_the_parent_handles_sigalrm(
    tmp_path: Path,
) -> None:
    batch = _batch(tmp_path, trap=True)
    assert batch["started"][0] == "fork"
    assert batch["status"] == ["supported"] * workers._POOL_MIN_FILES + [workers.FAILED]


@pytest.mark.parametrize(("limit", "method"), [("", "fork"), ("0", "spawn")], ids=["small", "past the limit"])
def test_a_process_forks_its_pool_unless_its_pages_would_count_in_every_worker(
    tmp_path: Path, limit: str, method: str
) -> None:
    batch = _batch(tmp_path, limit)
    assert batch["started"] == [method]
    assert batch["names"] == [f"f{i}" for i in range(workers._POOL_MIN_FILES)]
