"""Live campaign smoke (reliability/live.py): `ragraf watch` under a few dozen scripted edits of
every kind, two branch switches among them; each seen fresh by a reader, none lost."""

from __future__ import annotations

import sys

import pytest

from reliability import live

pytestmark = [
    pytest.mark.timeout(1800),  # only stops a hang
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's"),
]


def test_every_edit_is_seen_fresh_and_none_is_lost() -> None:
    args = live.parse_args(
        ["--files", "150", "--edits", "40", "--checkout-files", "60", "--checkout-every", "20"]
    )
    result = live.campaign(args)
    assert result["lost_changes"] == 0, result["lost"]
    assert result["final_check_missing_count"] == 0, result["final_check_missing"]
    assert result["watch_exit"] == 0
    assert sum(result["edits_by_kind"].values()) == 40
    assert result["edits_by_kind"]["checkout"] == 2
    assert len(result["edits_by_kind"]) >= 5  # in place, atomic, create, rename over, delete, ...
    # Each edit's wait is split by part, for every edit the reader saw fresh.
    assert set(result["latency_parts_s"]) == {"detect", "settle", "run", "read", "last_check"}
    assert result["latency_parts_s"]["run"]["max"] > 0
