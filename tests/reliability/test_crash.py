"""Short crash campaign (reliability/crash.py): `ragraf index` SIGKILLed in each phase, 5 runs."""

from __future__ import annotations

import shutil
import sysconfig
from pathlib import Path

import pytest

from ragraf import Index
from ragraf.config import load_settings
from ragraf.index.workers import prepare
from ragraf.languages import language_of
from ragraf.store.sqlite import SqliteStore
from reliability import crash

pytestmark = pytest.mark.timeout(1800)  # only stops a hang


@pytest.fixture(scope="module")
def campaign() -> dict:
    return crash.run(runs=5, packages=crash.SHORT_PACKAGES, modify=10, log=lambda line: None)


def test_no_kill_loses_data_of_the_previous_revision(campaign: dict) -> None:
    assert campaign["data_lost"] == 0
    assert not campaign["failed_runs"], campaign["failed_runs"]


def test_after_every_kill_index_completes_and_doctor_check_passes(campaign: dict) -> None:
    runs = campaign["runs"]
    assert campaign["recoveries"] == runs
    assert campaign["doctor_check_passed"] == runs
    assert campaign["coverage_complete_after_recovery"] == runs


def test_the_current_revision_answers_identically_after_a_kill_before_the_commit(campaign: dict) -> None:
    assert campaign["answers_identical_when_not_committed"] == campaign["uncommitted_kills"]
    assert campaign["cli_answers_identical"] == campaign["cli_answers_compared"]


def test_kills_land_in_several_phases_and_leave_no_process(campaign: dict) -> None:
    assert campaign["kills"] >= 3
    assert len(campaign["landed"]) >= 2
    assert campaign["leftover_processes"] == 0


def test_a_kill_during_the_first_index_leaves_a_clean_refusal_and_a_buildable_index() -> None:
    first = crash.first_index_kills(runs=2)
    assert first["ok"], first["rows"]


def test_the_recovered_index_equals_a_clean_build_of_the_same_files(campaign: dict) -> None:
    assert campaign["final"]["identical"], campaign["final"]


def test_contents_left_by_a_killed_run_do_not_change_the_answers_of_the_current_revision(
    tmp_path: Path,
) -> None:
    root = tmp_path / "repo"
    shutil.copytree(
        Path(sysconfig.get_paths()["stdlib"]) / "json", root, ignore=shutil.ignore_patterns("__pycache__")
    )
    queries = ["decoder scan string", "encode float", "JSONDecodeError position"]
    with Index.open(root, embedder="none", home=tmp_path / "home") as idx:
        idx.index()
        before = [
            [(r.path, r.start_line, r.end_line) for r in idx.search(q, k=5, mode="lexical").results]
            for q in queries
        ]
    # What a run killed between storing new contents and committing its revision leaves behind:
    # chunks in the store that no revision names (the next run reuses or collects them).
    settings = load_settings(root, env={"RAGRAF_HOME": str(tmp_path / "home"), "RAGRAF_EMBEDDER": "none"})
    store = SqliteStore(settings.db_path)
    bundles = []
    for i in range(120):
        path = root / f"draft_{i}.py"
        path.write_text(
            f"def draft_{i}(s):\n    # decoder scan string encode float JSONDecodeError position\n    return s\n"
        )
        from ragraf.corpus.extract import extract

        sha = extract(path, path.name, 4000).sha256
        bundles.append(prepare(((sha, language_of(path.name), settings.chunk_params()), path.name, settings)))
        path.unlink()
    store.add_contents([b for b in bundles if b is not None])
    store.close()
    with Index.open(root, embedder="none", home=tmp_path / "home") as idx:
        after = [
            [(r.path, r.start_line, r.end_line) for r in idx.search(q, k=5, mode="lexical").results]
            for q in queries
        ]
        # doctor names them, and does not call the index unhealthy for them.
        check = idx.doctor(check=True).to_dict()
        assert "error" not in check, check
        leftovers = next(c for c in check["results"] if c["check"] == "leftovers")
        assert (
            leftovers["ok"] and "120 contents" in leftovers["detail"] and "ragraf gc" in leftovers["detail"]
        )
    assert after == before


def test_retention_does_not_change_the_answers_of_the_current_revision(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(
        Path(sysconfig.get_paths()["stdlib"]) / "asyncio",
        root / "asyncio",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    queries = [
        "event loop run forever",
        "cancel a running task",
        "selector register file descriptor",
        "timeout context manager",
        "stream reader readline",
        "create subprocess exec pipe",
    ]
    home = tmp_path / "home"
    with Index.open(root, embedder="none", home=home) as idx:
        idx.index()
        for i, path in enumerate(sorted(root.rglob("*.py"))):
            extra = (
                f"\n\ndef edited_{i}(task, loop):\n    return 'cancel task loop selector timeout reader'\n"
            )
            path.write_text(path.read_text() + extra)
        idx.index()  # rev-0002; rev-0001 is retained
        before = [
            [(r.path, r.start_line) for r in idx.search(q, k=8, mode="lexical").results] for q in queries
        ]
    with Index.open(root, embedder="none", home=home, keep_revisions=1) as idx:
        idx.gc()  # drops rev-0001 only: rev-0002 and its contents are untouched
        assert idx.revisions().results[-1]["rev"] == "rev-0002"
        after = [
            [(r.path, r.start_line) for r in idx.search(q, k=8, mode="lexical").results] for q in queries
        ]
    assert after == before
