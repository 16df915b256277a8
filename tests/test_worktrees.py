"""Git work trees over one base index (DESIGN §10), on real repositories with `git worktree add`."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from support import SAMPLE, cli_json, git, init_git, run_cli, write

from ragraf import Index
from ragraf.errors import ConfigError
from ragraf.index.lock import WriterLock

FILLER = {f"src/lib/mod_{i}.py": f"def helper_{i}(x):\n    return x + {i}\n" for i in range(20)}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    write(root, {**SAMPLE, **FILLER})
    init_git(root)
    return root


def worktree(repo: Path, name: str, *args: str, commit: str | None = None) -> Path:
    path = repo.parent / name
    git(repo, "worktree", "add", "-q", *args, str(path), *([commit] if commit else []))
    time.sleep(0.05)  # past the window in which a fresh checkout's stat cannot be trusted yet
    return path


def commit_all(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)


def paths(env: object) -> list[str]:
    return [r.path if hasattr(r, "path") else r["path"] for r in env.results]  # type: ignore[attr-defined]


def view_rows(root: Path) -> dict[str, int]:
    """path -> content id of the view's current revision, straight from the index file."""
    idx = Index.open(root)
    db = sqlite3.connect(idx.settings.db_path)
    rev_no = db.execute("SELECT max(rev_no) FROM revisions WHERE view = ?", (idx.settings.view,)).fetchone()[
        0
    ]
    rows = dict(db.execute("SELECT path, content_id FROM manifest WHERE rev_no = ?", (rev_no,)).fetchall())
    db.close()
    return rows


def base_rows(root: Path) -> dict[str, int]:
    db = sqlite3.connect(Index.open(root).settings.db_path)
    rev_no = db.execute("SELECT max(rev_no) FROM revisions WHERE view = ''").fetchone()[0]
    rows = dict(db.execute("SELECT path, content_id FROM manifest WHERE rev_no = ?", (rev_no,)).fetchall())
    db.close()
    return rows


def test_first_index_builds_the_base_and_the_view_in_the_common_dir(repo: Path) -> None:
    report = cli_json("index", cwd=repo)
    assert report["index_rev"] == "rev-0001+wt-repo.1"
    assert report["base"]["index_rev"] == "rev-0001" and report["base"]["branch"] == "main"
    assert report["base"]["commit"] == git(repo, "rev-parse", "HEAD").strip()
    assert report["files_read"] == 0  # the clean checkout is the base: nothing to read twice
    homes = list((repo / ".git" / "ragraf").glob("index-*.db"))
    assert len(homes) == 1 and not (repo / ".ragraf").exists()
    assert git(repo, "status", "--porcelain") == ""  # the index never shows up in the work tree
    env = Index.open(repo).search("TCPConnector").to_dict()
    assert env["index_rev"] == "rev-0001+wt-repo.1" and env["state"] == "fresh"
    assert env["worktree"]["base_rev"] == "rev-0001" and env["worktree"]["base_behind"] == 0
    assert env["results"][0]["path"] == "src/app/server.py"


def test_no_op_index_and_reads_write_nothing(repo: Path) -> None:
    cli_json("index", cwd=repo)
    again = cli_json("index", cwd=repo)
    assert again["new_revision"] is False and again["base"]["new_revision"] is False
    assert again["index_rev"] == "rev-0001+wt-repo.1" and again["files_read"] == 0
    env = Index.open(repo).search("resolve_host")
    assert env.index_rev == "rev-0001+wt-repo.1" and env.worktree["refresh"] == "fresh"  # type: ignore[index]


def test_a_new_worktree_reads_only_its_touched_files(repo: Path) -> None:
    Index.open(repo).index()
    feature = worktree(repo, "feature-x", "-b", "feature-x")
    write(feature, {"src/app/pool.py": "class ConnectionPool:\n    size = 4\n"})
    (feature / "src/app/retry.py").write_text("def retry_forever(fn):\n    while True:\n        fn()\n")
    report = Index.open(feature).index()
    assert report.index_rev == "rev-0001+wt-feature-x.1"  # type: ignore[union-attr]
    assert report.files_read == 2 and report.chunks["new"] == 2  # type: ignore[union-attr]
    assert report.base["new_revision"] is False  # type: ignore[union-attr]
    rows, base = view_rows(feature), base_rows(repo)
    assert rows["src/lib/mod_3.py"] == base["src/lib/mod_3.py"]  # untouched: the base's rows
    assert rows["src/app/retry.py"] != base["src/app/retry.py"] and "src/app/pool.py" not in base
    idx = Index.open(feature)
    assert paths(idx.find_symbol("ConnectionPool")) == ["src/app/pool.py"]
    assert paths(idx.find_symbol("retry_with_backoff")) == []
    # the main work tree still answers from its own view
    assert paths(Index.open(repo).find_symbol("retry_with_backoff")) == ["src/app/retry.py"]


def test_first_search_in_a_new_worktree_lays_the_overlay_lazily(repo: Path) -> None:
    Index.open(repo).index()
    feature = worktree(repo, "lazy", "-b", "lazy")
    write(feature, {"src/app/cache.py": "def evict_lru(cache):\n    cache.popitem()\n"})
    env = Index.open(feature).search("evict_lru")
    assert env.index_rev == "rev-0001+wt-lazy.1" and env.state == "fresh"
    assert env.worktree["refresh"] == "refreshed" and env.worktree["touched"] == 1  # type: ignore[index]
    assert env.worktree["indexed"] == {"files_read": 1, "chunks_new": 1}  # type: ignore[index]
    assert paths(env)[0] == "src/app/cache.py"


def test_one_file_change_in_a_worktree_refreshes_its_view_only(repo: Path) -> None:
    Index.open(repo).index()
    feature = worktree(repo, "one", "-b", "one")
    idx = Index.open(feature)
    idx.index()
    (feature / "src/app/server.py").write_text("class UnixConnector:\n    pass\n")
    env = idx.find_symbol("UnixConnector")
    assert env.index_rev == "rev-0001+wt-one.2" and env.state == "fresh"
    assert env.worktree["refresh"] == "refreshed"  # type: ignore[index]
    assert paths(env) == ["src/app/server.py"]
    main = Index.open(repo).find_symbol("TCPConnector")
    assert main.index_rev == "rev-0001+wt-repo.1" and paths(main) == ["src/app/server.py"]


def test_changes_in_a_worktree_list_the_ledger_entries_its_revisions_closed(repo: Path) -> None:
    Index.open(repo).index()
    feature = worktree(repo, "ledger", "-b", "ledger")
    Index.open(feature).index()
    first = Index.open(feature).status().index_rev
    (feature / "src/app/server.py").write_text("class UnixConnector:\n    pass\n")
    opened = Index.open(feature, lazy_refresh_max_files=0).drift()  # seen, not yet indexed
    assert [e["path"] for e in opened.results] == ["src/app/server.py"]
    Index.open(feature).index()
    report = Index.open(feature).changes(first).results[0]
    assert [e["path"] for e in report["ledger"]] == ["src/app/server.py"]
    assert report["counts"]["ledger_entries"] == 1


def test_revert_drops_the_overlay_rows_and_the_base_shows_through(repo: Path) -> None:
    Index.open(repo).index()
    feature = worktree(repo, "rev", "-b", "rev")
    idx = Index.open(feature)
    (feature / "src/app/server.py").write_text("class Changed:\n    pass\n")
    assert paths(idx.find_symbol("Changed")) == ["src/app/server.py"]
    assert view_rows(feature)["src/app/server.py"] != base_rows(repo)["src/app/server.py"]
    git(feature, "checkout", "--", "src/app/server.py")
    env = idx.find_symbol("TCPConnector")
    assert paths(env) == ["src/app/server.py"] and env.state == "fresh"
    assert view_rows(feature) == base_rows(repo)


def test_files_deleted_in_the_branch_do_not_answer(repo: Path) -> None:
    Index.open(repo).index()
    feature = worktree(repo, "del", "-b", "del")
    git(feature, "rm", "-q", "src/app/retry.py")
    commit_all(feature, "drop retry")
    idx = Index.open(feature)
    assert paths(idx.find_symbol("retry_with_backoff")) == []
    assert "src/app/retry.py" not in paths(idx.search("retrying with exponential backoff"))
    assert "src/app/retry.py" not in view_rows(feature)
    assert paths(Index.open(repo).find_symbol("retry_with_backoff")) == ["src/app/retry.py"]


def test_branch_switch_stash_and_detached_head(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "other")
    (repo / "src/app/server.py").write_text("class OtherConnector:\n    pass\n")
    commit_all(repo, "other")
    git(repo, "checkout", "-q", "main")
    Index.open(repo).index()
    feature = worktree(repo, "sw", "-b", "sw")
    idx = Index.open(feature)
    assert paths(idx.find_symbol("TCPConnector")) == ["src/app/server.py"]
    git(feature, "checkout", "-q", "other")
    assert paths(idx.find_symbol("OtherConnector")) == ["src/app/server.py"]
    assert paths(idx.find_symbol("TCPConnector")) == []
    (feature / "src/app/retry.py").write_text("def stashed_work():\n    pass\n")
    assert paths(idx.find_symbol("stashed_work")) == ["src/app/retry.py"]
    git(feature, "stash", "-q")
    assert paths(idx.find_symbol("stashed_work")) == []
    assert paths(idx.find_symbol("retry_with_backoff")) == ["src/app/retry.py"]
    detached = worktree(repo, "det", "--detach", commit="other")
    env = Index.open(detached).find_symbol("OtherConnector")
    assert paths(env) == ["src/app/server.py"] and env.index_rev.startswith("rev-0001+wt-det.")  # type: ignore[union-attr]


def test_refresh_bound_at_and_past_its_edge(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGRAF_LAZY_REFRESH_MAX_FILES", "3")
    Index.open(repo).index()
    at = worktree(repo, "at", "-b", "at")
    write(at, {f"src/new_{i}.py": f"def fresh_{i}():\n    pass\n" for i in range(3)})
    env = Index.open(at).find_symbol("fresh_2")
    assert env.worktree["refresh"] == "refreshed" and paths(env) == ["src/new_2.py"]  # type: ignore[index]
    past = worktree(repo, "past", "-b", "past")
    write(past, {f"src/new_{i}.py": f"def fresh_{i}():\n    pass\n" for i in range(4)})
    (past / "src/app/server.py").write_text("class Edited:\n    pass\n")
    env = Index.open(past).find_symbol("TCPConnector").to_dict()
    assert env["worktree"]["refresh"] == "declined" and env["worktree"]["suggest"] == "reindex"
    assert env["index_rev"] == "rev-0001" and env["state"] == "drifted"  # the base answers, marked
    assert env["results"][0]["stale"] is True
    assert {w["path"] for w in env["stale_warnings"]} == {"src/app/server.py"} | {
        f"src/new_{i}.py" for i in range(4)
    }
    assert any("lazy_refresh_max_files=3" in n for n in env["notes"])
    # an explicit index has no bound; afterwards the view answers fresh
    cli_json("index", cwd=past)
    env = Index.open(past).find_symbol("Edited").to_dict()
    assert env["state"] == "fresh" and env["index_rev"] == "rev-0001+wt-past.1"
    # an existing view past the bound: answered from the view, marked
    write(past, {f"src/more_{i}.py": "x = 1\n" for i in range(4)})
    env = Index.open(past).find_symbol("Edited").to_dict()
    assert env["worktree"]["refresh"] == "declined" and env["index_rev"] == "rev-0001+wt-past.1"
    assert env["state"] == "drifted" and env["drift"]["files"] == 4
    # Refused, it does not say it answers.
    refused = Index.open(past).find_symbol("Edited", reindex_on_drift="fail").to_dict()
    assert refused["state"] == "refused" and refused["error"]["code"] == "drifted"
    assert not [n for n in refused["notes"] if "answering" in n], refused["notes"]


def test_base_staleness_warns_past_the_threshold_and_is_silent_when_fresh(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    Index.open(repo).index()
    feature = worktree(repo, "stale", "-b", "stale")
    for i in range(3):
        (repo / f"src/lib/mod_{i}.py").write_text(f"def helper_{i}(x):\n    return x * {i}\n")
        commit_all(repo, f"main {i}")
    env = Index.open(feature).search("helper").to_dict()
    assert env["worktree"]["base_behind"] == 3 and not any("behind" in n for n in env["notes"])
    monkeypatch.setenv("RAGRAF_BASE_STALENESS_WARN_COMMITS", "2")
    env = Index.open(feature).search("helper").to_dict()
    assert "is 3 commits behind main" in env["notes"][0] and "ragraf index" in env["notes"][0]
    text = run_cli("search", "helper", cwd=feature, env={"RAGRAF_BASE_STALENESS_WARN_COMMITS": "2"}).stdout
    assert text.index("3 commits behind main") < text.index("src/")  # warnings come first
    report = Index.open(feature).index()
    new_base = report.base["index_rev"]  # type: ignore[union-attr,index]
    assert new_base != "rev-0001" and report.index_rev == f"{new_base}+wt-stale.2"  # type: ignore[union-attr]
    env = Index.open(feature).search("helper_1", k=10).to_dict()
    assert env["worktree"]["base_behind"] == 0 and not any("behind" in n for n in env["notes"])
    # the feature branch does not have main's new commits: laid over the new base, it keeps its own
    snippets = [r["snippet"] for r in env["results"] if r["path"] == "src/lib/mod_1.py"]
    assert snippets and all("x + 1" in text for text in snippets)


def test_a_busy_writer_never_costs_the_answer(repo: Path) -> None:
    Index.open(repo).index()
    feature = worktree(repo, "busy", "-b", "busy")
    Index.open(feature).index()
    (feature / "src/app/server.py").write_text("class Busy:\n    pass\n")
    idx = Index.open(feature)
    with WriterLock(idx.settings.home, wait=False):
        env = idx.find_symbol("TCPConnector").to_dict()
    assert env["worktree"]["refresh"] == "busy" and env["state"] == "drifted"
    assert env["results"][0]["stale"] is True
    assert paths(idx.find_symbol("Busy")) == ["src/app/server.py"]  # the next read refreshes


def test_two_worktrees_search_while_the_base_is_reindexed(repo: Path) -> None:
    write(repo, {f"src/bulk/b_{i}.py": f"def bulk_{i}(v):\n    return v - {i}\n" * 20 for i in range(150)})
    commit_all(repo, "bulk")
    Index.open(repo).index()
    trees = [worktree(repo, f"w{i}", "-b", f"w{i}") for i in range(2)]
    for i, tree in enumerate(trees):
        write(tree, {f"src/own_{i}.py": f"def own_{i}():\n    pass\n"})
        Index.open(tree).index()
    for i in range(150):
        (repo / f"src/bulk/b_{i}.py").write_text(f"def bulk_{i}(v):\n    return v + {i}\n" * 20)
    commit_all(repo, "bulk edit")
    errors: list[BaseException] = []
    seen: list[tuple[str, str]] = []
    stop = threading.Event()

    def reader(tree: Path, i: int) -> None:
        try:
            while not stop.is_set():
                env = Index.open(tree).find_symbol(f"own_{i}")
                seen.append((env.index_rev or "", paths(env)[0] if env.results else ""))
        except BaseException as exc:  # noqa: BLE001 - any failure fails the test below
            errors.append(exc)

    threads = [threading.Thread(target=reader, args=(t, i)) for i, t in enumerate(trees)]
    for t in threads:
        t.start()
    out = run_cli("index", "--json", cwd=repo)
    time.sleep(0.5)
    stop.set()
    for t in threads:
        t.join(60)
    assert out.returncode == 0, out.stderr
    assert not errors, errors
    assert seen and all(path.startswith("src/own_") and "+wt-w" in rev for rev, path in seen)


def test_bare_repository_and_shallow_clone(tmp_path: Path, repo: Path) -> None:
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(bare)], check=True)
    tree = tmp_path / "from-bare"
    git(bare, "worktree", "add", "-q", str(tree), "main")
    report = cli_json("index", cwd=tree)
    assert report["base"]["branch"] == "main" and report["index_rev"] == "rev-0001+wt-from-bare.1"
    assert (bare / "ragraf").is_dir()
    shallow = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{repo}", str(shallow)], check=True)
    report = cli_json("index", cwd=shallow)
    assert report["base"]["branch"] == "origin/main"
    env = cli_json("def", "TCPConnector", cwd=shallow)
    assert env["results"][0]["path"] == "src/app/server.py"


def test_a_killed_refresh_leaves_the_view_answering(repo: Path) -> None:
    Index.open(repo).index()
    feature = worktree(repo, "kill", "-b", "kill")
    Index.open(feature).index()
    write(feature, {f"src/k_{i}.py": f"def killed_{i}():\n    pass\n" * 50 for i in range(100)})
    proc = subprocess.Popen([sys.executable, "-m", "ragraf.cli", "index", "-q"], cwd=feature)
    time.sleep(0.4)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    env = Index.open(feature).find_symbol("killed_7")
    assert set(paths(env)) == {"src/k_7.py"} and env.state == "fresh"
    check = cli_json("doctor", "--check", cwd=feature)
    assert all(c["ok"] for c in check["results"] if c["check"] in ("index", "consistency")), check


def test_removed_worktrees_lose_their_view_at_the_next_gc(repo: Path) -> None:
    Index.open(repo).index()
    gone = worktree(repo, "gone", "-b", "gone")
    write(gone, {"src/only_here.py": "def only_here():\n    pass\n"})
    Index.open(gone).index()
    git(repo, "worktree", "remove", "--force", str(gone))
    Index.open(repo).gc()
    db = sqlite3.connect(Index.open(repo).settings.db_path)
    views = {r[0] for r in db.execute("SELECT DISTINCT view FROM revisions")}
    assert views == {"", str(repo)}
    assert not db.execute("SELECT count(*) FROM facts WHERE name = 'only_here'").fetchone()[0]


def test_unknown_base_branch_is_a_clear_error(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGRAF_BASE_BRANCH", "no-such-branch")
    with pytest.raises(ConfigError, match="no-such-branch"):
        Index.open(repo).index()
    out = run_cli("index", cwd=repo, env={"RAGRAF_BASE_BRANCH": "no-such-branch"})
    assert out.returncode == 1 and "RAGRAF_BASE_BRANCH" in out.stderr + out.stdout
    monkeypatch.delenv("RAGRAF_BASE_BRANCH")
    Index.open(repo).index()
    monkeypatch.setenv("RAGRAF_BASE_BRANCH", "no-such-branch")
    env = Index.open(repo).find_symbol("TCPConnector")  # reads still answer, and say why they cannot compare
    assert paths(env) == ["src/app/server.py"] and "no-such-branch" in env.notes[0]


def test_a_repository_without_a_base_branch_indexes_its_worktree_alone(tmp_path: Path) -> None:
    root = tmp_path / "trunk"
    write(root, SAMPLE)
    git(root, "init", "-q", "-b", "trunk")
    report = cli_json("index", cwd=root)
    assert report["index_rev"] == "wt-trunk.1" and "base" not in report
    assert cli_json("def", "TCPConnector", cwd=root)["results"][0]["path"] == "src/app/server.py"


def test_a_folder_outside_git_is_unchanged(sample: Path) -> None:
    report = cli_json("index", "--root", str(sample))
    assert report["index_rev"] == "rev-0001" and "base" not in report
    env = cli_json("search", "TCPConnector", "--root", str(sample))
    assert "worktree" not in env and (sample / ".ragraf").is_dir()


def test_each_views_current_content_stays_searchable_and_consistent(repo: Path) -> None:
    Index.open(repo).index()
    feature = worktree(repo, "cons", "-b", "cons")
    (feature / "src/app/server.py").write_text('class FeatureConnector:\n    """keepalive pooling"""\n')
    Index.open(feature).index()
    (repo / "src/app/server.py").write_text('class MainConnector:\n    """keepalive pooling"""\n')
    Index.open(repo).index()
    feature_hits = Index.open(feature).search("keepalive pooling", mode="lexical").results
    main_hits = Index.open(repo).search("keepalive pooling", mode="lexical").results
    assert "FeatureConnector" in feature_hits[0].snippet and "MainConnector" in main_hits[0].snippet
    for root in (repo, feature):
        check = cli_json("doctor", "--check", cwd=root)
        assert next(c for c in check["results"] if c["check"] == "consistency")["ok"], check


def test_merge_and_rebase_answer_from_what_the_disk_holds_after(repo: Path) -> None:
    Index.open(repo).index()
    feature = worktree(repo, "mr", "-b", "mr")
    write(feature, {"src/app/feature.py": "def feature_only():\n    pass\n"})
    commit_all(feature, "feature")
    write(repo, {"src/app/mainline.py": "def mainline_only():\n    pass\n"})
    commit_all(repo, "mainline")
    idx = Index.open(feature)
    assert paths(idx.find_symbol("mainline_only")) == []
    git(feature, "merge", "-q", "--no-edit", "main")
    assert paths(idx.find_symbol("mainline_only")) == ["src/app/mainline.py"]
    git(feature, "reset", "-q", "--hard", "HEAD~1")  # undo the merge, then rebase onto main instead
    assert paths(idx.find_symbol("mainline_only")) == []
    git(feature, "rebase", "-q", "main")
    env = idx.find_symbol("mainline_only")
    assert paths(env) == ["src/app/mainline.py"] and env.state == "fresh"
    assert paths(idx.find_symbol("feature_only")) == ["src/app/feature.py"]


def test_worktrees_off_indexes_each_work_tree_on_its_own(repo: Path) -> None:
    report = cli_json("index", cwd=repo, env={"RAGRAF_WORKTREES": "0"})
    assert report["index_rev"] == "rev-0001" and "base" not in report
    assert not list((repo / ".git" / "ragraf").glob("*.base"))
    env = cli_json("def", "TCPConnector", cwd=repo, env={"RAGRAF_WORKTREES": "0"})
    assert "worktree" not in env and env["results"][0]["path"] == "src/app/server.py"
