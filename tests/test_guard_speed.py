"""The guard's no-change path (snapshot parsed once per blob, one lstat per file) still catches every change."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from support import settled, write

from ragraf import Index
from ragraf.api import guarded
from ragraf.corpus import discover as discover_module
from ragraf.corpus import extract as extract_module
from ragraf.corpus.stat_cache import settled as holds_since
from ragraf.freshness import guard as guard_module
from ragraf.freshness import snapshot
from ragraf.freshness.guard import guard
from ragraf.index import indexer as indexer_module
from ragraf.index.lock import WriterLock

SERVER = "src/app/server.py"


def indexed(root: Path) -> Index:
    (root / ".ragraf").mkdir(exist_ok=True)  # the index home, made before: no folder moves during the run
    settled(root)
    idx = Index.open(root)
    idx.index()
    return idx


def moved(idx: Index) -> list[str] | None:
    return snapshot.moved_files(idx.settings.root, idx.store().guard_snapshot())


def drift_of(idx: Index) -> dict[str, list[str]]:
    return idx.status().results[0]["drift"]


def test_nothing_changed_is_decided_without_listing_and_the_parsed_snapshot_is_reused(sample: Path) -> None:
    idx = indexed(sample)
    assert moved(idx) == []
    view = snapshot._VIEWS[str(sample)][1]
    assert moved(idx) == [] and snapshot._VIEWS[str(sample)][1] is view
    assert idx.status().state == "fresh"


def test_an_edit_with_its_mtime_put_back_is_still_caught(sample: Path) -> None:
    idx = indexed(sample)
    path = sample / SERVER
    before = path.stat()
    path.write_text(path.read_text().replace("limit", "LIMIT"))  # same size
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size
    assert moved(idx) == [SERVER]
    assert drift_of(idx)["modified"] == [SERVER]


def test_a_touched_but_unchanged_file_is_rehashed_and_not_reported(sample: Path) -> None:
    idx = indexed(sample)
    os.utime(sample / SERVER)
    assert moved(idx) == [SERVER]
    assert idx.status().state == "fresh"


@pytest.mark.parametrize("change", ["create", "delete", "replace_by_folder"])
def test_a_created_or_vanished_file_sends_the_guard_to_list_again(sample: Path, change: str) -> None:
    idx = indexed(sample)
    if change == "create":
        (sample / "src/app/new_module.py").write_text("def brand_new():\n    return 1\n")
    else:
        os.remove(sample / SERVER)
        if change == "replace_by_folder":
            (sample / SERVER).mkdir()
    assert moved(idx) is None
    drift = drift_of(idx)
    if change == "create":
        assert drift["created"] == ["src/app/new_module.py"]
    else:
        assert drift["deleted"] == [SERVER]


def test_a_file_vanishing_while_its_folder_keeps_its_mtime_is_caught(sample: Path) -> None:
    idx = indexed(sample)
    folder = sample / "src/app"
    stamp = folder.stat()
    os.remove(sample / SERVER)
    os.utime(folder, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))  # the folder looks untouched
    assert moved(idx) is None
    assert drift_of(idx)["deleted"] == [SERVER]


def test_an_edited_ignore_file_sends_the_guard_to_list_again(sample: Path) -> None:
    (sample / ".gitignore").write_text("*.log\n")
    idx = indexed(sample)
    assert moved(idx) == []
    ignore = sample / ".gitignore"
    before = ignore.stat()
    ignore.write_text("src/\n")  # same size, mtime put back: only ctime moved
    os.utime(ignore, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert moved(idx) is None


def _this_second(path: Path) -> None:
    """An mtime of whole seconds, as FAT and HFS+ keep them: a write later in the same second
    would leave it as it is."""
    whole = time.time_ns() // 10**9 * 10**9
    os.utime(path, ns=(whole, whole))


def test_a_fine_timestamp_settles_after_a_clock_tick_and_a_whole_second_one_after_the_window() -> None:
    fine = 1_700_000_000_123_456_789
    assert holds_since(fine + 30_000_000, fine) and not holds_since(fine + 10_000_000, fine)
    assert not holds_since(fine - 1, fine)  # a date in the future
    whole = 1_700_000_000 * 10**9
    assert not holds_since(whole + 1_500_000_000, whole) and holds_since(whole + 2_000_000_001, whole)


def test_a_run_vouches_for_what_it_read_as_of_before_it_read_it(
    sample: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write in the clock tick of the one before it keeps the mtime: what a run read holds only
    if that tick had passed before the read, so the stat cache's time is taken before any read."""
    idx = indexed(sample)
    reads: list[int] = []
    real = indexer_module.extract

    def recording(*args: object, **kwargs: object) -> object:
        reads.append(time.time_ns())
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(indexer_module, "extract", recording)
    (sample / SERVER).write_text((sample / SERVER).read_text() + "\n# edited\n")
    idx.index()
    assert reads and idx.store().stat_cache()[SERVER].checked_ns <= min(reads)


def test_a_file_hashed_too_soon_after_its_write_always_counts_as_moved(sample: Path) -> None:
    (sample / ".ragraf").mkdir()
    settled(sample)
    (sample / SERVER).write_text((sample / SERVER).read_text() + "\n# fresh\n")
    _this_second(sample / SERVER)  # racy: written this second
    idx = Index.open(sample)
    idx.index()
    assert moved(idx) == [SERVER]
    assert moved(idx) == [SERVER]  # still, from the parsed view
    assert idx.status().state == "fresh"


def test_a_fine_mtime_a_clock_tick_old_is_trusted_and_one_ahead_of_the_clock_is_not(sample: Path) -> None:
    """Fine timestamps (Linux ticks every 1-10 ms) show any later write as a later mtime once a tick
    has passed, so a hash taken 50 ms after the write holds; a date in the future may repeat."""
    (sample / ".ragraf").mkdir()
    settled(sample)
    (sample / SERVER).write_text((sample / SERVER).read_text() + "\n# fresh\n")
    recent = time.time_ns() - 50_000_000 + 1  # not a whole second
    os.utime(sample / SERVER, ns=(recent, recent))
    idx = Index.open(sample)
    idx.index()
    assert moved(idx) == []
    ahead = time.time_ns() + 10**9 + 1
    os.utime(sample / SERVER, ns=(ahead, ahead))
    assert idx.status().state == "fresh"
    assert moved(idx) == [SERVER]


def test_a_new_snapshot_replaces_the_parsed_one(sample: Path) -> None:
    idx = indexed(sample)
    assert moved(idx) == []
    path = sample / SERVER
    path.write_text(path.read_text() + "\n# edited\n")
    past = time.time() - 30
    os.utime(path, (past, past))  # not racy, so the new index trusts it
    idx.index()
    assert moved(idx) == []  # the old view would report the file as moved
    store = idx.store()
    rev = store.current_revision()
    assert rev is not None and not guard(store, idx.settings, rev).drift


def test_two_roots_keep_their_own_parsed_snapshots(sample: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "lib.py").write_text("def helper():\n    return 2\n")
    a, b = indexed(sample), indexed(other)
    assert moved(a) == [] and moved(b) == []
    os.utime(other / "lib.py")
    assert moved(a) == [] and moved(b) == ["lib.py"]


def test_a_missing_or_damaged_snapshot_means_listing_again(sample: Path) -> None:
    idx = indexed(sample)
    blob = idx.store().guard_snapshot()
    assert blob is not None and snapshot.unpack(blob) is not None
    for damaged in (None, b"", b"not a snapshot", blob[:-8], blob + b"\0"):
        snapshot._VIEWS.clear()
        assert snapshot.moved_files(sample, damaged) is None
        assert snapshot.unpack(damaged) is None


def test_a_patched_snapshot_equals_one_packed_from_the_updated_stat_cache() -> None:
    from ragraf.store import StatEntry

    stats = {
        f"src/m{i}.py": StatEntry(100 + i, 10**18 + i, 10**18 + i, 1000 + i, "h", 10**18 + 10**10)
        for i in range(50)
    }
    stamps = {"": 1, "src": 2}
    update = {
        "src/m7.py": StatEntry(5, 2 * 10**18, 2 * 10**18, 77, "h2", 2 * 10**18 + 1),  # racy: not trusted
        "src/m30.py": StatEntry(6, 3 * 10**18, 3 * 10**18, 78, "h3", 3 * 10**18 + 10**10),
        "elsewhere.py": StatEntry(1, 1, 1, 1, "x", 1),  # not listed: ignored
    }
    patched = snapshot.patch(snapshot.pack(stats, stamps, 2 * 10**9), update, 2 * 10**9)
    listed = {p: e for p, e in update.items() if p in stats}
    assert snapshot.folded(patched) == snapshot.pack({**stats, **listed}, stamps, 2 * 10**9)
    assert snapshot.file_count(patched) == 50


def count_hashing(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files the guard hashes from now on."""
    hashed: list[str] = []
    read = extract_module.extract  # the guard imports it where it hashes
    monkeypatch.setattr(
        extract_module, "extract", lambda path, rel, *a: hashed.append(rel) or read(path, rel, *a)
    )
    return hashed


def test_a_file_touched_but_unchanged_is_hashed_by_one_read_not_every_read(
    sample: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    idx = indexed(sample)
    past = time.time() - 30  # a checkout back and forth: new stats, the indexed content
    os.utime(sample / SERVER, (past, past))
    assert moved(idx) == [SERVER]
    hashed = count_hashing(monkeypatch)
    assert idx.search("TCPConnector").state == "fresh"
    assert hashed == [SERVER] and moved(idx) == []
    assert idx.search("TCPConnector").state == "fresh" and hashed == [SERVER]
    # What was learnt never hides a later edit.
    (sample / SERVER).write_text((sample / SERVER).read_text().replace("limit", "LIMIT"))
    assert drift_of(idx)["modified"] == [SERVER]


def test_a_file_written_just_now_is_not_trusted_by_a_read(sample: Path) -> None:
    idx = indexed(sample)
    _this_second(sample / SERVER)  # the same second may still hold a write
    assert idx.status().state == "fresh"
    assert moved(idx) == [SERVER]


def test_a_folder_changed_by_a_file_left_out_is_listed_by_one_read_not_every_read(sample: Path) -> None:
    idx = indexed(sample)
    blob = sample / "src/app/cache.py"
    blob.write_bytes(b"\x00\x01binary")  # left out as binary; its folder's mtime moved
    assert moved(idx) is None
    assert idx.status().state == "fresh"
    assert moved(idx) is None  # the folder changed just now: a file may yet appear in the same tick
    past = time.time() - 30
    for path in (blob, blob.parent):
        os.utime(path, (past, past))
    assert idx.status().state == "fresh"
    assert moved(idx) == []  # a new snapshot, the left-out file in it
    # The file the index leaves out is watched still: turned to text, it is new.
    blob.write_text("def now_text():\n    return 1\n")
    assert drift_of(idx)["created"] == ["src/app/cache.py"]


def test_a_file_created_in_the_tick_of_a_folder_stamp_is_found(sample: Path) -> None:
    (sample / ".ragraf").mkdir()
    settled(sample)
    idx = Index.open(sample)
    folder = sample / "src/app"
    (folder / "first.py").write_text("x = 1\n")
    _this_second(folder)
    stamp = folder.stat().st_mtime_ns
    idx.index()
    # Created after the run took its stamps, within the same second (the folder's mtime stays).
    (folder / "second.py").write_text("def second():\n    return 2\n")
    os.utime(folder, ns=(stamp, stamp))
    assert drift_of(idx)["created"] == ["src/app/second.py"]
    assert idx.index().to_dict()["files"]["added"] == 1


def test_a_read_learns_nothing_while_an_index_run_holds_the_lock(sample: Path) -> None:
    idx = indexed(sample)
    past = time.time() - 30
    os.utime(sample / SERVER, (past, past))
    with WriterLock(idx.settings.home, wait=False):
        assert idx.search("TCPConnector").state == "fresh"  # answers at once, writes nothing
        assert moved(idx) == [SERVER]
    assert idx.search("TCPConnector").state == "fresh"
    assert moved(idx) == []


def test_what_a_read_learnt_against_an_older_revision_is_dropped(sample: Path) -> None:
    idx = indexed(sample)
    store = idx.store()
    rev = store.current_revision()
    assert rev is not None
    past = time.time() - 30
    os.utime(sample / SERVER, (past, past))
    learnt = guard(store, idx.settings, rev).learnt
    assert learnt is not None and list(learnt.entries) == [SERVER]
    (sample / "src/app/new_module.py").write_text("x = 1\n")
    idx.index()  # a new revision meanwhile: its snapshot stands
    store = idx.store()
    before = store.guard_snapshot()
    assert not guard_module.remember(store, learnt)
    assert store.guard_snapshot() == before


def test_reads_write_nothing_while_an_ignore_file_is_dated_in_the_future(
    sample: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ignore = sample / ".gitignore"
    ignore.write_text("*.log\n")
    idx = indexed(sample)
    future = time.time() + 3600
    os.utime(ignore, (future, future))  # every read lists again: a snapshot would not help the next
    writes: list[object] = []
    monkeypatch.setattr(guarded, "remember", lambda store, learnt: writes.append(learnt))
    for _ in range(3):
        assert idx.status().state == "fresh"
    assert writes == []


def test_a_file_created_in_a_folder_taken_back_from_the_default_excludes_is_seen(sample: Path) -> None:
    write(sample, {".ragrafignore": "!build/\n", "build/gen_one.py": "def gen_one():\n    return 1\n"})
    idx = indexed(sample)
    assert moved(idx) == []
    (sample / "build/gen_two.py").write_text("def gen_two():\n    return 2\n")
    assert drift_of(idx)["created"] == ["build/gen_two.py"]


def test_a_file_grown_past_the_size_limit_is_left_out_as_a_listing_would(sample: Path) -> None:
    (sample / ".ragraf").mkdir()
    settled(sample)
    idx = Index.open(sample, max_file_bytes=2000)
    idx.index()
    path = sample / SERVER
    path.write_text(path.read_text() + "".join(f"def grown_{i}():\n    return {i}\n" for i in range(100)))
    past = time.time() - 30
    os.utime(path, (past, past))  # only its stat moved: the guard's word decides what the run reads
    assert moved(idx) == [SERVER]
    assert drift_of(idx)["deleted"] == [SERVER]
    report = idx.index().to_dict()
    assert report["files"]["deleted"] == 1
    assert {"path": SERVER, "reason": "larger than 2000 bytes"} in report["skipped_files"]
    assert idx.find_symbol("grown_5").results == [] and idx.status().state == "fresh"


@pytest.mark.parametrize("listed_by", ["index", "read"])
def test_a_file_over_the_size_limit_that_shrinks_under_it_is_seen(sample: Path, listed_by: str) -> None:
    big = sample / "src/app/big.py"
    big.write_text("def shrunk():\n    return 1\n" + "# padding\n" * 400)
    (sample / ".ragraf").mkdir()
    settled(sample)
    idx = Index.open(sample, max_file_bytes=2000)
    idx.index()
    if listed_by == "read":  # a folder moved by a left-out file: a read lists and keeps a snapshot
        (sample / "src/app/notes.bin").write_bytes(b"\x00")
        settled(sample)
        assert idx.status().state == "fresh" and moved(idx) == []
    big.write_text("def shrunk():\n    return 1\n")  # in place: only its stat moves
    past = time.time() - 30
    os.utime(big, (past, past))
    assert drift_of(idx)["created"] == ["src/app/big.py"]
    idx.index()
    assert [r["path"] for r in idx.find_symbol("shrunk").results] == ["src/app/big.py"]


def test_a_folder_dated_in_the_future_does_not_send_every_read_to_list_again(sample: Path) -> None:
    idx = indexed(sample)
    future = time.time() + 3600
    os.utime(sample / "src/app", (future, future))
    assert idx.status().state == "fresh"
    assert moved(idx) == []  # its date is a stamp no later change repeats
    (sample / "src/app/new_one.py").write_text("x = 1\n")
    assert drift_of(idx)["created"] == ["src/app/new_one.py"]


def test_a_new_file_is_found_by_listing_its_folder_alone(
    sample: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    idx = indexed(sample)
    listings: list[object] = []
    full = discover_module.discover
    monkeypatch.setattr(discover_module, "discover", lambda *a, **k: listings.append(a) or full(*a, **k))
    (sample / "src/app/new_module.py").write_text("def brand_new():\n    return 1\n")
    assert drift_of(idx)["created"] == ["src/app/new_module.py"]
    (sample / "src/app/notes.bin").write_bytes(b"\x00")  # left out: the drift stays the same
    assert drift_of(idx)["created"] == ["src/app/new_module.py"]
    assert listings == []  # only src/app was listed again, each time
    idx.index()
    assert drift_of(idx)["created"] == [] and listings == []
