"""A long-running process skips the guard's stat pass while inotify reports nothing under the root."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
from support import settled, write

from ragraf import Index
from ragraf.freshness import guard as guard_module
from ragraf.freshness import watch

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")

SERVER = "src/app/server.py"


@pytest.fixture
def passes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the guard's stat passes."""
    calls: list[int] = []
    real = guard_module.moved_files

    def counted(root: Path, blob: bytes | None) -> list[str] | None:
        calls.append(1)
        return real(root, blob)

    monkeypatch.setattr(guard_module, "moved_files", counted)
    return calls


def trusted_index(root: Path) -> Index:
    """Index files and folders dated well before now, so their hashes and stamps are trusted and
    the stat pass decides (the index home is made first: making it moves the root's mtime)."""
    (root / ".ragraf").mkdir(exist_ok=True)
    settled(root)
    idx = Index.open(root)
    idx.index()
    return idx


def test_reads_skip_the_stat_pass_until_something_changes(sample: Path, passes: list[int]) -> None:
    idx = trusted_index(sample)
    for _ in range(6):
        assert idx.search("TCPConnector").state == "fresh"
    assert len(passes) == 2  # the first read, then the one that armed the watch
    (sample / SERVER).write_text((sample / SERVER).read_text() + "\n# edited\n")
    env = idx.search("TCPConnector")
    assert env.state == "drifted" and [w.path for w in env.stale_warnings] == [SERVER]
    assert len(passes) == 2  # the kernel named the file changed in place: only it was stat'ed
    assert idx.search("TCPConnector").state == "drifted"  # nothing new: the last pass's answer stands


def test_files_changed_in_place_are_stat_ed_alone_and_a_new_entry_makes_a_whole_pass(
    sample: Path, passes: list[int]
) -> None:
    idx = trusted_index(sample)
    idx.status()
    idx.status()  # armed
    retry = sample / "src/app/retry.py"
    with retry.open("a", encoding="utf-8") as fh:
        fh.write("\n# appended\n")
    assert [w.path for w in idx.status().stale_warnings] == ["src/app/retry.py"]
    (sample / SERVER).write_text((sample / SERVER).read_text() + "\n# edited\n")
    os.chmod(retry, 0o600)  # attributes only: its ctime moved, still drifted
    assert sorted(w.path for w in idx.status().stale_warnings) == sorted([SERVER, "src/app/retry.py"])
    assert len(passes) == 2
    write(sample, {"src/app/added.py": "def added():\n    pass\n"})  # a new entry in a folder
    env = idx.status()
    assert len(passes) == 3
    assert sorted(w.path for w in env.stale_warnings) == sorted(
        [SERVER, "src/app/added.py", "src/app/retry.py"]
    )
    (sample / ".gitignore").write_text("*.log\nsrc/app/added.py\n")  # a rule changed in place
    env = idx.status()
    assert "src/app/added.py" not in [w.path for w in env.stale_warnings] and len(passes) == 4


def test_created_deleted_and_touched_files_are_seen(sample: Path) -> None:
    idx = trusted_index(sample)
    idx.status()
    idx.status()  # armed
    write(sample, {"src/new_pkg/fresh.py": "def fresh():\n    pass\n"})
    assert [w.path for w in idx.status().stale_warnings] == ["src/new_pkg/fresh.py"]
    (sample / "src/new_pkg/fresh.py").write_text(
        "def fresher():\n    pass\n"
    )  # in a folder born after the snapshot
    assert idx.status().state == "drifted"
    (sample / "src/new_pkg/fresh.py").unlink()
    (sample / "src/new_pkg").rmdir()
    (sample / "src/app/retry.py").unlink()
    env = idx.status()
    assert [(w.path, w.suggest) for w in env.stale_warnings] == [("src/app/retry.py", "reindex")]


def test_a_reindex_watches_the_new_folders_too(sample: Path) -> None:
    idx = trusted_index(sample)
    idx.status()
    idx.status()
    write(sample, {"lib/deep/mod.py": "def deep():\n    pass\n"})
    settled(sample / "lib")  # its stamps trusted at once: only the watch can see the edit below
    idx.index()
    assert idx.status().state == "fresh"
    assert idx.status().state == "fresh"
    (sample / "lib/deep/mod.py").write_text("def deeper():\n    pass\n")
    assert [w.path for w in idx.status().stale_warnings] == ["lib/deep/mod.py"]


def test_a_folder_made_again_is_watched_again(sample: Path) -> None:
    write(sample, {"lib/deep/mod.py": "def deep():\n    pass\n"})
    idx = trusted_index(sample)
    idx.status()
    idx.status()  # armed, lib/deep watched
    shutil.rmtree(sample / "lib/deep")
    write(sample, {"lib/deep/mod.py": "def again():\n    pass\n"})  # a new folder at the old path
    settled(sample / "lib")
    idx.index()
    assert idx.status().state == "fresh"
    (sample / "lib/deep/mod.py").write_text("def deeper():\n    pass\n")
    assert [w.path for w in idx.status().stale_warnings] == ["lib/deep/mod.py"]


def test_a_new_snapshot_keeps_the_watch_and_watches_its_new_folders(
    sample: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real, made = watch._LIBC, []
    assert real is not None

    class Counted:
        def inotify_init1(self, flags: int) -> int:
            made.append(flags)
            return real.inotify_init1(flags)

        def inotify_add_watch(self, fd: int, path: bytes, mask: int) -> int:
            return real.inotify_add_watch(fd, path, mask)

    monkeypatch.setattr(watch, "_LIBC", Counted())
    idx = trusted_index(sample)
    idx.status()
    idx.status()  # armed
    for n in range(3):  # each run writes a new snapshot, with a new folder in it
        write(sample, {f"lib/deep{n}/mod.py": f"def deep{n}():\n    pass\n"})
        settled(sample / "lib")
        idx.index()
        assert idx.status().state == "fresh"
        (sample / f"lib/deep{n}/mod.py").write_text("def deeper():\n    pass\n")
        assert [w.path for w in idx.status().stale_warnings] == [f"lib/deep{n}/mod.py"]
    assert len(made) == 1  # one inotify instance all along


def test_off_or_without_inotify_every_read_stats(
    sample: Path, passes: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    idx = trusted_index(sample)
    monkeypatch.setenv("RAGRAF_WATCH", "0")
    off = Index.open(sample)
    for _ in range(3):
        off.status()
    assert len(passes) == 3
    monkeypatch.setattr(watch, "_LIBC", None)
    for _ in range(3):
        idx.status()
    assert len(passes) == 6
    (sample / SERVER).write_text("class Gone:\n    pass\n")
    assert idx.status().state == "drifted" and off.status().state == "drifted"


def test_a_watch_the_kernel_refuses_falls_back_to_stat(
    sample: Path, passes: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    class NoWatches:
        def inotify_init1(self, flags: int) -> int:
            return os.open(os.devnull, os.O_RDONLY)

        def inotify_add_watch(self, fd: int, path: bytes, mask: int) -> int:
            return -1  # ENOSPC: fs.inotify.max_user_watches reached

    monkeypatch.setattr(watch, "_LIBC", NoWatches())
    idx = trusted_index(sample)
    for _ in range(4):
        assert idx.status().state == "fresh"
    assert len(passes) == 4
    (sample / SERVER).write_text("class Edited:\n    pass\n")
    assert idx.status().state == "drifted"


def test_an_index_right_after_a_watched_guard_takes_its_pass_instead_of_its_own(
    sample: Path, passes: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server answers `ragraf index` after a status that found the drift (cli_socket's
    small-change check): the run takes that pass's files while the kernel reports nothing since."""
    from ragraf.freshness import snapshot

    index_passes: list[int] = []
    whole = snapshot.changes_since
    monkeypatch.setattr(snapshot, "changes_since", lambda *a: index_passes.append(1) or whole(*a))
    idx = trusted_index(sample)
    idx.status()
    idx.status()  # armed
    (sample / SERVER).write_text((sample / SERVER).read_text() + "\ndef first_edit():\n    pass\n")
    assert [w.path for w in idx.status().stale_warnings] == [SERVER]
    report = idx.index()
    assert report.files["modified"] == 1 and index_passes == []
    assert [r.path for r in idx.search("first_edit").results][:1] == [SERVER]
    # An edit after the guard's pass: the kernel reported it, so the run makes its own pass.
    (sample / "src/app/retry.py").write_text((sample / "src/app/retry.py").read_text() + "\n# later\n")
    idx.status()
    (sample / SERVER).write_text((sample / SERVER).read_text() + "\ndef second_edit():\n    pass\n")
    report = idx.index()
    assert index_passes == [1] and report.files["modified"] >= 2
    assert idx.status().state == "fresh"


def test_after_an_index_run_of_the_same_process_only_the_changed_files_are_stat_ed_again(
    sample: Path, passes: list[int]
) -> None:
    """An index run revises the snapshot's delta: the next guard stats the files either delta names
    and what the kernel named since, not the tree; a new base or a folder's change makes a pass."""
    idx = trusted_index(sample)
    idx.status()
    idx.status()  # armed
    write(sample, {"src/app/earlier.py": "def earlier():\n    pass\n"})  # the delta records its folder
    settled(sample)  # its stamp trusted (one taken in the racy window is looked at again each time)
    idx.index()
    idx.status()
    idx.status()
    before = len(passes)
    for n in range(3):
        (sample / SERVER).write_text((sample / SERVER).read_text() + f"\ndef edit_{n}():\n    pass\n")
        assert [w.path for w in idx.status().stale_warnings] == [SERVER]
        assert idx.index().files["modified"] == 1
        assert [w.path for w in idx.status().stale_warnings] in ([], [SERVER])  # racy: read again
    assert len(passes) == before
    with (sample / "src/app/retry.py").open("a", encoding="utf-8") as fh:
        fh.write("\n# appended\n")
    assert "src/app/retry.py" in [w.path for w in idx.status().stale_warnings] and len(passes) == before
    write(sample, {"src/app/brand_new.py": "def brand_new():\n    pass\n"})
    assert "src/app/brand_new.py" in [w.path for w in idx.status().stale_warnings]
    assert len(passes) == before + 1
