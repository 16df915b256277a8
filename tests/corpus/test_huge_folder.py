"""A folder of 100,000 entries (a data set's images beside the code): discovery lists it, a new
entry in it costs one read, and live mode's inotify watches it, also through a burst of new entries
that overflows the kernel's event queue."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import pytest
from support import cli_json, init_git, settled, write

from ragraf import Index
from ragraf.adapters.live_index import live_ops
from ragraf.index.live import LiveLoop, LiveRun

pytestmark = pytest.mark.timeout(600)  # only stops a hang

ENTRIES = 100_000
NOTES = 2_000  # text files among the entries, read and indexed; the rest are images the rules leave out
HANG_S = 120  # only stops a hang: the checks count reads, never time them


def huge_folder(root: Path) -> Path:
    """root with data/ holding ENTRIES entries (empty images and short notes) and src/app.py."""
    data = root / "data"
    data.mkdir(parents=True)
    for i in range(ENTRIES - NOTES):
        os.close(os.open(data / f"img{i:06}.png", os.O_CREAT | os.O_WRONLY, 0o644))
    for i in range(NOTES):
        (data / f"note{i:05}.txt").write_text(f"note number {i}\n")
    write(root, {"src/app.py": "def needle_beside_the_data():\n    pass\n"})
    assert len(os.listdir(data)) == ENTRIES
    return root


def defined(root: Path, name: str) -> list[str]:
    return [r["path"] for r in cli_json("def", name, cwd=root)["results"]]


def test_a_folder_of_100000_entries_is_indexed_and_a_new_entry_in_it_costs_one_read(tmp_path: Path) -> None:
    root = huge_folder(tmp_path / "repo")
    init_git(root)
    settled(root)
    report = cli_json("index", cwd=root)
    assert report["base"]["files"]["added"] == NOTES + 1, report
    assert defined(root, "needle_beside_the_data") == ["src/app.py"]
    again = cli_json("index", cwd=root)
    assert not again["new_revision"] and again["files_read"] == 0, again

    # A new file in the huge folder (its stamp moves: the folder is listed again), then one edited
    # in place: each is the one file read.
    write(root, {"data/found_later.py": "def found_among_the_images():\n    pass\n"})
    past = time.time() - 60  # out of the racy window, or the next run reads it again, whatever the load
    for written in (root / "data/found_later.py", root / "data"):
        os.utime(written, (past, past))
    report = cli_json("index", cwd=root)
    assert report["files"]["added"] == 1 and report["files_read"] == 1, report
    assert defined(root, "found_among_the_images") == ["data/found_later.py"]
    write(root, {"data/note00007.txt": "note number seven, changed\n"})
    report = cli_json("index", cwd=root)
    assert report["files"]["modified"] == 1 and report["files_read"] == 1, report
    hits = cli_json("search", "seven changed", cwd=root)["results"]
    assert hits and hits[0]["path"] == "data/note00007.txt"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")
def test_live_mode_watches_a_folder_of_100000_entries_through_a_burst_that_overflows_inotify(
    tmp_path: Path,
) -> None:
    root = huge_folder(tmp_path / "plain")
    settled(root)
    cli_json("index", cwd=root)
    runs: list[LiveRun] = []
    notes: list[str] = []
    idx = Index.open(root)
    stop = threading.Event()
    loop = LiveLoop(idx.settings.root, idx.settings.home, live_ops(idx), runs.append, notes.append, stop)
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()

    def fresh_at(name: str, paths: list[str]) -> None:
        deadline = time.monotonic() + HANG_S
        while True:
            with Index.open(root, lazy_refresh_max_files=0) as reader:
                env = reader.find_symbol(name)
            if env.state == "fresh" and [f["path"] for f in env.to_dict()["results"]] == paths:
                return
            assert time.monotonic() < deadline, f"never found {name} fresh at {paths}; notes {notes}"
            time.sleep(0.1)

    try:
        deadline = time.monotonic() + HANG_S
        while not runs:
            assert time.monotonic() < deadline, f"the live loop never caught up; notes {notes}"
            time.sleep(0.05)
        (root / "data" / "saved_live.py").write_text("def saved_into_the_huge_folder():\n    pass\n")
        fresh_at("saved_into_the_huge_folder", ["data/saved_live.py"])
        # More new entries at once than the kernel queues events for (fs.inotify.max_queued_events,
        # 16,384 by default): events are lost, and a full pass finds what they named.
        queued = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
        burst = root / "data" / "burst"
        burst.mkdir()
        for i in range(queued + 1000):
            os.close(os.open(burst / f"b{i:06}.png", os.O_CREAT | os.O_WRONLY, 0o644))
        (burst / "after_the_burst.py").write_text("def written_after_the_burst():\n    pass\n")
        fresh_at("written_after_the_burst", ["data/burst/after_the_burst.py"])
    finally:
        stop.set()
        thread.join(timeout=HANG_S)
        idx.close()
    assert not thread.is_alive()
