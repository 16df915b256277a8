"""A page damaged mid-file, where no query reaches it, is found by the next index run, which
refuses it saying how to rebuild; the check reads the pages only when the file changed since the
last run finished on it."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
from support import run_cli

import ragraf.api.ops.lifecycle as lifecycle
from ragraf import Index
from ragraf.store.sqlite.integrity import stamp_path


def _damage_page_of(db_path: Path, table: str) -> None:
    """Overwrite the root page of `table` (the file's header and schema stay intact)."""
    with sqlite3.connect(db_path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page_size = db.execute("PRAGMA page_size").fetchone()[0]
        (root,) = db.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()
    db.close()
    with db_path.open("r+b") as f:
        f.seek((root - 1) * page_size)
        f.write(b"\xab" * page_size)


def test_a_page_damaged_mid_file_is_refused_by_index_until_rebuilt(sample: Path) -> None:
    assert run_cli("index", "--root", str(sample)).returncode == 0
    db_path = Index.open(sample).settings.db_path
    _damage_page_of(db_path, "ref_sites")  # the call sites: read by no search and no unchanged run
    assert run_cli("search", "TCPConnector", "--root", str(sample)).returncode == 0  # reads still answer

    out = run_cli("index", "--root", str(sample), "--json")
    assert out.returncode == 1 and "Traceback" not in out.stderr, out
    error = json.loads(out.stdout)["error"]
    assert error["code"] == "index_corrupt" and "damaged" in error["message"]
    assert "ragraf index --full" in error["suggest"] and "ragraf doctor --check" in error["suggest"]
    assert run_cli("index", "--root", str(sample)).returncode == 1  # refused again: nothing sealed it

    rebuilt = run_cli("index", "--full", "--root", str(sample), "--json")
    assert rebuilt.returncode == 0 and json.loads(rebuilt.stdout)["index_rev"] == "rev-0001", rebuilt
    assert run_cli("index", "--root", str(sample)).returncode == 0


def test_the_pages_are_read_only_when_the_file_changed_since_the_last_run(
    sample: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[bool] = []
    check = lifecycle.check_pages
    monkeypatch.setattr(lifecycle, "check_pages", lambda db, path: reads.append(check(db, path)))

    def index() -> None:
        idx = Index.open(sample)
        idx.index()
        idx.close()

    index()  # a new file: read
    index()  # unchanged since that run: skipped
    index()
    db_path = Index.open(sample).settings.db_path
    assert stamp_path(db_path).exists()
    st = os.stat(db_path)
    os.utime(db_path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))  # written by something else
    index()  # read again
    index()
    (sample / "src/app/new.py").write_text("def fresh():\n    return 1\n")
    index()  # this run's own commit is sealed with it
    index()
    assert reads == [True, False, False, True, False, False, False]


def test_a_read_that_writes_the_index_keeps_it_sealed(sample: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    idx = Index.open(sample)
    idx.index()
    idx.close()
    db_path = idx.settings.db_path
    sealed = stamp_path(db_path).read_text()
    (sample / "src/app/new.py").write_text("def fresh():\n    return 1\n")
    reader = Index.open(sample)  # a read finding a new file notes the drift in the index
    assert reader.find_symbol("fresh").to_dict()["state"] != "fresh"
    reader.close()
    st = os.stat(db_path)
    assert json.loads(sealed) != [st.st_size, st.st_ino, st.st_mtime_ns], "the read wrote the file"

    reads: list[bool] = []
    check = lifecycle.check_pages
    monkeypatch.setattr(lifecycle, "check_pages", lambda db, path: reads.append(check(db, path)))
    idx = Index.open(sample)
    idx.index()
    idx.close()
    assert reads == [False]


def test_reads_and_index_runs_of_one_long_lived_process_keep_it_sealed(
    sample: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As a server answers (`ragraf serve --socket-only`): each read and each index run opens the
    index and closes it, and the last connection to close checkpoints the log into the file, which
    an index run that did not write, or wrote before the run that sealed the file, must seal again."""
    idx = Index.open(sample)
    idx.index()
    idx.close()
    reads: list[bool] = []
    check = lifecycle.check_pages
    monkeypatch.setattr(lifecycle, "check_pages", lambda db, path: reads.append(check(db, path)))
    for i in range(3):
        reader = Index.open(sample)
        reader.status()
        (sample / f"src/app/new{i}.py").write_text(f"def fresh{i}():\n    return {i}\n")
        run = Index.open(sample)
        run.index()
        run.close()
        reader.status()
        reader.close()  # the last connection: the log goes into the file
    assert reads == [False, False, False]
