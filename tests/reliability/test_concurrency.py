"""Short concurrency campaign (reliability/concurrency.py): 2 writers + 8 readers while files change,
then two MCP servers answering during a reindex.

Counted, not timed: each writer runs `index` 3 times, each reader tries 6 operations and keeps going
until the writers are done, and the writers go on until every reader has tried once, whatever the
machine's speed; the timeout only stops a hang."""

from __future__ import annotations

import pytest

from reliability import concurrency

pytestmark = pytest.mark.timeout(1800)  # only stops a hang


@pytest.fixture(scope="module")
def campaign() -> dict:
    return concurrency.run(
        seconds=0, packages=("asyncio", "json"), log=lambda line: None, min_index_runs=3, min_reader_ops=6
    )


def test_every_index_run_succeeds_and_writers_take_turns(campaign: dict) -> None:
    assert campaign["index_runs_failed"] == []
    assert campaign["index_runs"] >= 2 * 3
    # The editor changed files before the writers started, so the first run to take the lock indexed them.
    assert campaign["new_revisions"] >= 1


def test_no_reader_error_under_concurrent_writers(campaign: dict) -> None:
    assert campaign["reader_error_count"] == 0, campaign["reader_errors"]
    # Every reader tried its 6 operations at least, and each try was an answer or a clean refusal.
    assert len(campaign["reader_attempts"]) == 8 and min(campaign["reader_attempts"]) >= 6
    assert campaign["reader_ops"] == sum(campaign["reader_attempts"])


def test_every_answer_verifies_against_the_revision_it_names(campaign: dict) -> None:
    assert campaign["inconsistent_count"] == 0, campaign["inconsistent_answers"]
    assert campaign["checks"].get("search results verified", 0) > 0


def test_the_ledger_has_no_duplicate_event(campaign: dict) -> None:
    ledger = campaign["ledger"]
    assert ledger["entries"] > 0
    assert ledger["duplicate_keys"] == 0
    assert ledger["duplicate_events"] == 0
    assert ledger["open_and_archived"] == 0


def test_two_mcp_servers_answer_consistently_during_a_reindex(campaign: dict) -> None:
    mcp = campaign["mcp"]
    assert mcp["errors"] == []
    assert mcp["inconsistent"] == []
    assert mcp["revision_went_backwards"] == 0
    assert mcp["cli_reindex_exit"] == 0
    assert concurrency.reindex_ok(mcp["mcp_reindex"]), mcp["mcp_reindex"]
    assert all(n > 0 for n in mcp["calls"].values()) and len(mcp["calls"]) == 2
