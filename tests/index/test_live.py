"""The live loop keeps the index up with the disk: atomic saves, renames, deletes, new folders,
checkouts and bursts, each indexed by few runs, with nothing lost (grepai#225: atomic writes dropped)."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from embed.fake_embed_server import FakeServer, Reply
from support import git, init_git, settled, write

from ragraf import Index
from ragraf.adapters.live_index import live_ops
from ragraf.index import live as live_module
from ragraf.index.live import LiveLoop, LiveRun
from ragraf.index.lock import WriterLock

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")

HANG_S = 90  # only stops a hang: the checks count runs, never time them
# A work tree's read refreshes its view itself when few files moved: the test's reads must not, so
# that what they find fresh was indexed by the loop.
READER = {"lazy_refresh_max_files": 0}


def module(name: str, body: str = "1") -> str:
    return f"def {name}():\n    return {body}\n"


@dataclass
class Live:
    """A live loop over root in a thread, and what it told."""

    root: Path
    runs: list[LiveRun] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def wait_for(self, check: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + HANG_S
        while not check():
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"never {what}; runs {[r.to_dict() for r in self.runs]}; notes {self.notes}"
                )
            time.sleep(0.05)

    def defined(self, name: str) -> set[str]:
        """Paths defining name in the current revision, once the guard finds it fresh."""
        with Index.open(self.root, **READER) as idx:
            env = idx.find_symbol(name)
        if env.state != "fresh":
            return {"<drifted>"}
        facts = env.to_dict()["results"]
        assert not any(f["stale"] for f in facts)
        return {f["path"] for f in facts}

    def indexed(self, name: str, paths: set[str]) -> None:
        """Wait until a fresh read finds name defined exactly at paths."""
        self.wait_for(lambda: self.defined(name) == paths, f"found {name} fresh at {sorted(paths)}")

    def fresh(self) -> None:
        def check() -> bool:
            with Index.open(self.root, **READER) as idx:
                return idx.status().state == "fresh"

        self.wait_for(check, "fresh")


def _start(root: Path, use_inotify: bool = True) -> Iterator[Live]:
    live = Live(root)
    idx = Index.open(root)
    stop = threading.Event()
    loop = LiveLoop(
        idx.settings.root, idx.settings.home, live_ops(idx), live.runs.append, live.notes.append, stop,
        use_inotify=use_inotify,
    )  # fmt: skip
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        live.wait_for(lambda: len(live.runs) >= 1, "caught up")
        yield live
    finally:
        stop.set()
        thread.join(timeout=HANG_S)
        idx.close()
    assert not thread.is_alive()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return _repo(tmp_path, git_repo=True)


def _repo(tmp_path: Path, git_repo: bool) -> Path:
    root = tmp_path / "repo"
    write(
        root,
        {"src/app/server.py": module("serve"), "src/app/retry.py": module("retry"), "README.md": "# r\n"},
    )
    if git_repo:
        init_git(root)
    settled(root)
    return root


@pytest.fixture
def live(repo: Path) -> Iterator[Live]:
    yield from _start(repo)


def _atomic_write(path: Path, text: str) -> None:
    """As editors and agents save: a temp file beside the target, then rename over it."""
    tmp = path.parent / f".{path.name}.tmp{os.getpid()}"
    tmp.write_text(text)
    os.rename(tmp, path)


@linux
@pytest.mark.parametrize("git_repo", [True, False], ids=["git", "folder"])
def test_a_new_file_saved_through_a_temp_file_and_a_rename_is_indexed(tmp_path: Path, git_repo: bool) -> None:
    for live in _start(_repo(tmp_path, git_repo)):
        _atomic_write(live.root / "src/app/atomic.py", module("atomic_save"))
        live.indexed("atomic_save", {"src/app/atomic.py"})
        live.fresh()  # and the temp file itself never lingers in the index


@linux
def test_an_existing_file_saved_through_a_temp_file_and_a_rename_gets_its_new_content(live: Live) -> None:
    for n in range(3):  # saved again and again: each save lands, none is dropped
        _atomic_write(live.root / "src/app/server.py", module(f"serve_v{n}"))
        live.indexed(f"serve_v{n}", {"src/app/server.py"})
    assert live.defined("serve") == set()


@linux
def test_a_rename_over_an_existing_file_indexes_the_moved_content_and_drops_the_source(live: Live) -> None:
    os.rename(live.root / "src/app/retry.py", live.root / "src/app/server.py")
    live.indexed("retry", {"src/app/server.py"})
    assert live.defined("serve") == set()


@linux
def test_an_edit_then_a_rename_of_that_file_over_another_in_one_burst_both_land(live: Live) -> None:
    app = live.root / "src/app"
    (app / "server.py").write_text(module("served_again"))
    os.rename(app / "server.py", app / "retry.py")  # within the quiet time that ends a burst
    live.indexed("served_again", {"src/app/retry.py"})
    assert live.defined("serve") == set()
    live.fresh()


@linux
def test_a_burst_is_gathered_while_git_holds_its_index_lock_as_a_checkout_does(
    live: Live, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(live_module, "MAX_DELAY_S", HANG_S)
    lock = live.root / ".git" / "index.lock"
    before = len(live.runs)
    lock.write_text("")
    write(live.root, {"src/app/one.py": module("held_one")})
    time.sleep(live_module.DEBOUNCE_S * 4)  # quiet for longer than ends a burst
    write(live.root, {"src/app/two.py": module("held_two")})
    time.sleep(live_module.DEBOUNCE_S * 4)
    lock.unlink()
    live.indexed("held_one", {"src/app/one.py"})
    live.indexed("held_two", {"src/app/two.py"})
    assert [r.paths for r in live.runs[before:]] == [2], [r.to_dict() for r in live.runs[before:]]


@linux
def test_a_deleted_file_leaves_the_index(live: Live) -> None:
    (live.root / "src/app/retry.py").unlink()
    live.indexed("retry", set())
    live.fresh()


@linux
def test_a_new_folder_is_watched_and_its_files_indexed_also_when_edited_later(live: Live) -> None:
    deep = live.root / "pkg/sub/deeper"
    deep.mkdir(parents=True)
    (deep / "mod.py").write_text(module("first_in_new_folder"))
    live.indexed("first_in_new_folder", {"pkg/sub/deeper/mod.py"})
    (deep / "mod.py").write_text(module("edited_in_new_folder"))  # only a watch on the new folder sees this
    live.indexed("edited_in_new_folder", {"pkg/sub/deeper/mod.py"})


@linux
def test_a_renamed_folder_is_watched_under_its_new_name_and_a_deleted_one_forgotten(live: Live) -> None:
    os.rename(live.root / "src/app", live.root / "src/core")
    live.indexed("serve", {"src/core/server.py"})
    (live.root / "src/core/server.py").write_text(module("edited_after_the_folder_moved"))
    live.indexed("edited_after_the_folder_moved", {"src/core/server.py"})
    for path in (live.root / "src/core").iterdir():
        path.unlink()
    (live.root / "src/core").rmdir()
    live.indexed("retry", set())
    live.fresh()


@linux
def test_a_checkout_of_200_changed_files_is_indexed_by_a_few_runs(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "wide")
    write(repo, {f"gen/m{n:03}.py": module(f"generated_{n}") for n in range(200)})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "wide")
    git(repo, "checkout", "-q", "main")
    for live in _start(repo):
        before = len(live.runs)
        git(repo, "checkout", "-q", "wide")
        live.indexed("generated_0", {"gen/m000.py"})
        live.indexed("generated_199", {"gen/m199.py"})
        live.fresh()  # the guard compared every file: all 200 are in
        assert len(live.runs) - before <= 5, [r.to_dict() for r in live.runs[before:]]
        before = len(live.runs)
        git(repo, "checkout", "-q", "main")  # and back: 200 deletions
        live.indexed("generated_7", set())
        live.fresh()
        assert len(live.runs) - before <= 5


@linux
def test_a_burst_of_100_edits_is_coalesced_and_every_edit_lands(live: Live) -> None:
    (live.root / "burst").mkdir()
    before = len(live.runs)
    for n in range(100):
        _atomic_write(live.root / f"burst/f{n % 20}.py", module(f"burst_{n}"))
    for n in range(80, 100):  # each file's last edit
        live.indexed(f"burst_{n}", {f"burst/f{n % 20}.py"})
    live.fresh()
    assert len(live.runs) - before <= 10, [r.to_dict() for r in live.runs[before:]]


@linux
def test_editor_swap_and_backup_files_stay_out_when_the_rules_exclude_them(repo: Path) -> None:
    (repo / ".ragrafignore").write_text("*.swp\n*~\n4913\n")
    for live in _start(repo):
        app = repo / "src/app"
        # vim's save: probe file 4913, swap file, the old file kept as a backup, the new one written.
        (app / "4913").write_text(module("probe"))
        (app / "4913").unlink()
        (app / ".server.py.swp").write_text(module("in_swap"))
        os.rename(app / "server.py", app / "server.py~")
        (app / "server.py").write_text(module("saved_by_vim"))
        live.indexed("saved_by_vim", {"src/app/server.py"})
        live.fresh()
        assert live.defined("serve") == set()  # the backup holds it: not indexed
        assert live.defined("in_swap") == set()
        assert live.defined("probe") == set()


@linux
def test_files_the_default_rules_leave_out_cause_no_run(live: Live) -> None:
    before = len(live.runs)
    for name in ("yarn.lock", "mod.pyc", ".env", "bundle.min.js"):
        (live.root / "src/app" / name).write_text("x = 1\n")
    time.sleep(1.0)  # apart from the next burst (the loop gathers 150 ms of quiet): not a timing check
    (live.root / "src/app/after.py").write_text(module("after_the_left_out_ones"))
    live.indexed("after_the_left_out_ones", {"src/app/after.py"})
    assert len(live.runs) == before + 1, [r.to_dict() for r in live.runs[before:]]


@linux
def test_a_manual_index_holding_the_lock_is_waited_for_and_lost_events_run_a_full_pass(live: Live) -> None:
    with Index.open(live.root) as idx:
        home = idx.settings.home
    lock = WriterLock(home)
    lock.acquire()
    try:
        runs = len(live.runs)
        (live.root / "src/app/server.py").write_text(module("while_locked"))
        live.wait_for(lambda: any("holds the lock" in n for n in live.notes), "waited for the lock")
        # More events than the kernel queues (fs.inotify.max_queued_events, 16384 by default): two
        # files touched in turn, so no two events in a row are alike and merged.
        limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
        a, b = live.root / "README.md", live.root / "src/app/retry.py"
        for n in range(limit + 1000):
            os.utime(a if n % 2 else b)
        (live.root / "src/app/lost.py").write_text(module("among_lost_events"))
        assert len(live.runs) == runs  # nothing ran under the other indexer's lock
    finally:
        lock.release()
    live.indexed("while_locked", {"src/app/server.py"})
    live.indexed("among_lost_events", {"src/app/lost.py"})
    assert live.runs[runs].trigger == "lock"  # the first run after the other indexer's
    assert any("dropped events" in n for n in live.notes)
    live.fresh()
    assert len(live.runs) - runs <= 2


def test_without_inotify_the_stat_pass_finds_changes(repo: Path) -> None:
    for live in _start(repo, use_inotify=False):
        _atomic_write(repo / "src/app/polled.py", module("found_by_polling"))
        live.indexed("found_by_polling", {"src/app/polled.py"})
        assert live.runs[-1].trigger == "poll"
        assert live.runs[-1].mode == "poll"


def _slow_embedder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[FakeServer, Path]:
    """A repository of 80 chunks and a slow provider (40 batches of 2 take seconds)."""
    fake = FakeServer("openai")
    fake.rule = lambda _request: Reply(hang=0.1)
    for key, value in {"EMBEDDER": "openai", "EMBED_URL": fake.url, "EMBED_MODEL": "m", "EMBED_API_KEY": "k",
                       "EMBED_BATCH_SIZE": "2", "CACHE_DIR": str(tmp_path / "cache")}.items():  # fmt: skip
        monkeypatch.setenv(f"RAGRAF_{key}", value)
    root = tmp_path / "repo"
    write(root, {f"src/m{n:02}.py": module(f"chunk_{n}") for n in range(80)})
    settled(root)
    return fake, root


@linux
def test_the_slow_embedding_tier_lets_a_waiting_manual_index_have_the_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake, root = _slow_embedder(tmp_path, monkeypatch)
    monkeypatch.setattr(live_module, "EMBED_SLICE_S", 0.5)
    for live in _start(root):
        batches = -(-live.runs[0].report["chunks"]["total"] // 2)
        live.wait_for(lambda: len(fake.requests) >= 3, "began embedding")
        with Index.open(root) as idx:
            idx.index(lexical_only=True)  # waits for the lock
        assert len(fake.requests) < batches  # got it before the slow tier was done


@linux
def test_the_slow_embedding_tier_yields_to_the_next_change_and_resumes_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake, root = _slow_embedder(tmp_path, monkeypatch)
    for live in _start(root):
        batches = -(-live.runs[0].report["chunks"]["total"] // 2)
        live.wait_for(lambda: len(fake.requests) >= 3, "began embedding")
        (root / "src/late.py").write_text(module("arrived_while_embedding"))
        live.indexed("arrived_while_embedding", {"src/late.py"})
        assert len(fake.requests) < batches  # the lexical run did not wait for the slow tier

        def covered() -> bool:
            with Index.open(root, **READER) as idx:
                return idx.status().capability.semantic_coverage >= 1.0

        live.wait_for(covered, "embedded everything after the change")


@linux
def test_after_its_first_run_the_loop_stats_only_what_the_kernel_named(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragraf.freshness import snapshot

    full_passes: list[str] = []
    whole = snapshot.changes_since

    def counted(root: Path, blob: bytes | None) -> object:
        if threading.current_thread() is not threading.main_thread():  # the loop's, not the test's reads
            full_passes.append(threading.current_thread().name)
        return whole(root, blob)

    monkeypatch.setattr(snapshot, "changes_since", counted)
    for live in _start(repo):  # its first run is the cold index: no stat pass
        (live.root / "src/app/server.py").write_text(module("edited_in_place"))
        live.indexed("edited_in_place", {"src/app/server.py"})
        (live.root / "src/app/added.py").write_text(module("added_beside"))
        live.indexed("added_beside", {"src/app/added.py"})
        (live.root / "pkg/deep").mkdir(parents=True)
        (live.root / "pkg/deep/mod.py").write_text(module("in_a_new_folder"))
        live.indexed("in_a_new_folder", {"pkg/deep/mod.py"})
        os.rename(live.root / "pkg", live.root / "moved")
        live.indexed("in_a_new_folder", {"moved/deep/mod.py"})
        (live.root / "src/app/retry.py").unlink()
        live.indexed("retry", set())
        live.fresh()
        assert len(live.runs) >= 6 and full_passes == []
