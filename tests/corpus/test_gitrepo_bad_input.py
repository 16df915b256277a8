"""Repositories git finds odd: the index completes, or says clearly why not, and the last revision
keeps answering."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from support import cli_json, git, init_git, run_cli, write


def commit_all(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)


def defined(root: Path, name: str, env: dict[str, str] | None = None) -> list[str]:
    return [r["path"] for r in cli_json("def", name, cwd=root, env=env)["results"]]


def test_a_repository_without_commits_is_indexed_from_its_files(tmp_path: Path) -> None:
    root = tmp_path / "fresh"
    write(root, {"src/app.py": "def first_steps():\n    pass\n"})
    git(root, "init", "-q", "-b", "main")
    report = cli_json("index", cwd=root)
    assert report["files"]["added"] == 1 and "base" not in report
    assert defined(root, "first_steps") == ["src/app.py"]
    commit_all(root, "first")  # the first commit: from now on there is a base
    write(root, {"src/more.py": "def second_steps():\n    pass\n"})
    report = cli_json("index", cwd=root)
    assert report["base"]["files"]["added"] == 1
    assert defined(root, "second_steps") == ["src/more.py"]


def test_a_shallow_clone_indexes_and_follows_a_new_shallow_head(tmp_path: Path) -> None:
    upstream = tmp_path / "upstream"
    write(upstream, {f"pkg/m{i}.py": f"def step_{i}():\n    pass\n" for i in range(3)})
    init_git(upstream)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{upstream}", str(clone))
    assert cli_json("index", cwd=clone)["base"]["files"]["added"] == 3
    write(upstream, {"pkg/m3.py": "def step_3():\n    pass\n"})
    commit_all(upstream, "more")
    git(clone, "fetch", "-q", "--depth", "1")
    git(clone, "reset", "-q", "--hard", "origin/main")
    # The commit the base reflects is gone from the clone: git cannot say what changed since.
    git(clone, "reflog", "expire", "--expire=now", "--all")
    git(clone, "gc", "-q", "--prune=now")
    report = cli_json("index", cwd=clone)
    assert report["base"]["files"] == {"added": 1, "modified": 0, "deleted": 0, "unchanged": 3}
    assert defined(clone, "step_3") == ["pkg/m3.py"]


def test_without_git_on_path_the_folder_is_indexed_as_a_plain_folder(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write(root, {"src/app.py": "def no_git_here():\n    pass\n"})
    init_git(root)
    env = {"PATH": str(tmp_path / "no-such-bin")}
    out = run_cli("index", "--json", cwd=root, env=env)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    assert json.loads(out.stdout)["files"]["added"] == 1
    assert defined(root, "no_git_here", env=env) == ["src/app.py"]


def test_a_folder_of_thousands_of_entries_indexes_and_its_next_commit_reads_one(tmp_path: Path) -> None:
    # 100,000 entries behave as these do; fewer keep the test fast (nothing here counts entries).
    n = 3000
    root = tmp_path / "repo"
    write(root, {f"flat/f{i:05}.txt": f"entry {i}\n" for i in range(n)})
    write(root, {"flat/needle.py": "def needle_in_haystack():\n    pass\n"})
    init_git(root)
    report = cli_json("index", cwd=root)
    assert report["base"]["files"]["added"] == n + 1
    write(root, {"flat/f00007.txt": "entry seven changed\n"})
    commit_all(root, "one change")
    report = cli_json("index", cwd=root)
    assert report["base"]["files_read"] == 1 and report["base"]["files"]["modified"] == 1
    assert defined(root, "needle_in_haystack") == ["flat/needle.py"]


def test_a_checkout_while_the_index_runs_ends_cleanly_and_the_last_revision_answers(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write(root, {f"src/m{i}.py": f"def main_{i}():\n    return {i}\n" for i in range(150)})
    init_git(root)
    git(root, "checkout", "-q", "-b", "other")
    write(root, {f"src/m{i}.py": f"def other_{i}():\n    return {i}\n" for i in range(150)})
    commit_all(root, "other")
    git(root, "checkout", "-q", "main")
    cli_json("index", cwd=root)
    write(root, {"src/extra.py": "def extra_on_main():\n    pass\n"})
    proc = subprocess.Popen(
        [sys.executable, "-m", "ragraf.cli", "index", "--json"], cwd=root, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env=os.environ.copy(),
    )  # fmt: skip
    git(root, "checkout", "-q", "-f", "other")  # while the run lists, hashes or reads
    during = run_cli("def", "main_1", "--json", cwd=root)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode in (0, 1) and "Traceback" not in err, err
    if proc.returncode == 1:
        assert "→" in err or "suggest" in out, (out, err)
    assert during.returncode == 0 and "Traceback" not in during.stderr, during.stderr
    report = cli_json("index", cwd=root)
    assert report["index_rev"]
    assert defined(root, "other_1") == ["src/m1.py"] and defined(root, "main_1") == []


def test_a_git_that_hangs_stops_the_run_with_a_clear_error_and_the_last_revision_answers(
    tmp_path: Path,
) -> None:
    root = tmp_path / "repo"
    write(root, {"src/app.py": "def before_the_hang():\n    pass\n"})
    init_git(root)
    cli_json("index", cwd=root)
    write(root, {"src/later.py": "def after_the_hang():\n    pass\n"})
    commit_all(root, "later")
    # A git whose diff-tree never answers (as on a hung network mount); every other command is git's.
    real = subprocess.run(["which", "git"], capture_output=True, text=True, check=True).stdout.strip()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").write_text(
        f"#!{sys.executable}\nimport os, sys, time\n"
        "if 'diff-tree' in sys.argv:\n    time.sleep(120)\n"
        f"os.execv({real!r}, [{real!r}, *sys.argv[1:]])\n"
    )
    (bin_dir / "git").chmod(0o755)
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "RAGRAF_GIT_STALL_S": "1"}
    out = run_cli("index", cwd=root, env=env)
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert "made no progress" in out.stderr and "RAGRAF_GIT_STALL_S" in out.stderr
    assert defined(root, "before_the_hang", env=env) == ["src/app.py"]
    report = cli_json("index", cwd=root)  # with git well again, the run completes
    assert report["base"]["files"]["added"] == 1 and defined(root, "after_the_hang") == ["src/later.py"]
