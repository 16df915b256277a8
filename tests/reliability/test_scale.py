"""Scale smoke (reliability/scale.py): a generated 2,000-file monorepo, the same figures as the long run.

The targets of issue 10 are for 100,000 files on a quiet machine; here, on a loaded CI machine,
memory is held to its target and the incremental runs to the work they do, not to times.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from reliability import scale

pytestmark = pytest.mark.timeout(1800)  # only stops a hang


@pytest.fixture(scope="module")
def campaign() -> dict:
    return scale.run(files=2000, queries=60, log=lambda line: None)


def test_the_generated_monorepo_is_deterministic_and_realistic(tmp_path) -> None:
    a = scale.generate(tmp_path / "a", 300, seed=7)
    b = scale.generate(tmp_path / "b", 300, seed=7)
    assert a == b
    assert a["lines"] >= 10 * 300
    assert len(a["files_by_language"]) >= 8
    first = sorted((tmp_path / "a").rglob("*.py"))[0]
    assert first.read_text() == (tmp_path / "b" / first.relative_to(tmp_path / "a")).read_text()


def test_every_run_succeeds_and_the_index_is_consistent(campaign: dict) -> None:
    assert campaign["ok"], campaign
    assert campaign["cold"]["report"]["files"]["added"] == 2000
    assert campaign["doctor_problems"] == []


def test_memory_stays_under_the_target(campaign: dict) -> None:
    assert campaign["cold"]["peak_rss_mib"] / 1024 <= scale.TARGETS["peak_rss_gib"]


def test_incremental_runs_read_only_what_changed_and_search_answers(campaign: dict) -> None:
    # Times depend on the machine's load, so what is held here is the work: nothing read when nothing
    # changed; per one-file change, that file and the earlier edits the previous run hashed within
    # the 2 s racy window of their write (these runs come quickly one after another), also once
    # retention drops a revision per run.
    for run in campaign["no_change"]:
        assert not run["report"]["new_revision"] and run["report"]["files_read"] == 0
    for run in campaign["one_file"] + campaign["one_file_steady"]:
        assert run["report"]["new_revision"] and 1 <= run["report"]["files_read"] <= run["may_read"], run
        assert run["report"]["files"]["modified"] == 1
    assert campaign["search_warm"]["empty_answers"] < campaign["search_warm"]["queries"] // 2


def test_the_default_path_is_measured_through_the_background_server(campaign: dict) -> None:
    served = campaign["served"]
    assert len(served["no_change_cpu_s"]) == 3 and len(served["one_file_cpu_s"]) == 3
    # The edits were indexed by the server (its CPU counted beside the client's; 0 when in process).
    assert sum(served["one_file_server_cpu_s"]) > 0
    assert served["one_file_x_git_status"] is not None
    deadline = time.monotonic() + 30  # the campaign leaves no server running behind it
    while _running(served["server_pid"]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _running(served["server_pid"])


def _running(pid: int) -> bool:
    """Whether the process runs (a zombie whose parent, init here, has not reaped it yet does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")
