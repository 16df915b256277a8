"""The SQLite store writes a guard snapshot's base only when it changed: a one-file change to a
100,000-file repository writes the few hundred bytes of its delta, not 10 MB (issue 28)."""

from __future__ import annotations

from pathlib import Path

from ragraf.config import load_settings
from ragraf.store import open_store


def test_an_unchanged_base_is_not_written_again(tmp_path: Path) -> None:
    store = open_store(load_settings(tmp_path, env={"RAGRAF_HOME": str(tmp_path / "home")}), create=True)
    base = bytes(range(256)) * 400
    store.set_guard_snapshot(base, len(base))
    digest = store.guard_snapshot_digest()
    before = store.db.total_changes
    store.set_guard_snapshot(base + b"one change", len(base))
    assert store.db.total_changes - before == 2  # the delta and the digests; not the base
    assert store.guard_snapshot() == base + b"one change" and store.guard_snapshot_digest() != digest
    before = store.db.total_changes
    store.set_guard_snapshot(b"a new base", 10)
    assert store.db.total_changes - before == 3  # the base, the (dropped) delta, the digests
    assert store.guard_snapshot() == b"a new base"


def test_a_digest_left_without_its_base_does_not_stop_the_base_being_written(tmp_path: Path) -> None:
    store = open_store(load_settings(tmp_path, env={"RAGRAF_HOME": str(tmp_path / "home")}), create=True)
    store.set_guard_snapshot(b"base" * 100, 400)
    with store.transaction() as db:
        db.execute("DELETE FROM meta WHERE key = ?", (store._snapshot_key(),))
    store.set_guard_snapshot(b"base" * 100 + b"delta", 400)
    assert store.guard_snapshot() == b"base" * 100 + b"delta"
