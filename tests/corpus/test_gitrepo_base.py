"""The base index reads the base commit's files from git's object store: no checkout stays on disk,
and a new base commit costs the work of the files it changed."""

from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path

import pytest
from support import SAMPLE, cli_json, git, init_git, write

from ragraf import Index

FILLER = {f"src/lib/mod_{i}.py": f"def helper_{i}(x):\n    return x + {i}\n" for i in range(20)}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    write(root, {**SAMPLE, **FILLER, "tools/run.sh": '#!/bin/sh\nexec run_tool "$@"\n'})
    os.chmod(root / "tools/run.sh", 0o755)
    init_git(root)
    return root


def commit_all(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)


def base_manifest(root: Path) -> dict[str, str]:
    """path -> sha256 of the base's current revision, straight from the index file."""
    db = sqlite3.connect(Index.open(root).settings.db_path)
    rev_no = db.execute("SELECT max(rev_no) FROM revisions WHERE view = ''").fetchone()[0]
    rows = dict(db.execute("SELECT path, sha256 FROM manifest WHERE rev_no = ?", (rev_no,)).fetchall())
    db.close()
    return rows


def home_entries(root: Path) -> list[str]:
    return sorted(p.name for p in (root / ".git" / "ragraf").iterdir() if not p.name.startswith("lock"))


def test_no_checkout_of_the_base_stays_next_to_the_index(repo: Path) -> None:
    report = cli_json("index", cwd=repo)
    assert report["base"]["files"]["added"] == len(SAMPLE) + len(FILLER) + 1
    assert not [name for name in home_entries(repo) if name.endswith((".base", ".gitindex"))], home_entries(
        repo
    )


def test_a_new_base_commit_reads_only_the_files_it_changed(repo: Path) -> None:
    cli_json("index", cwd=repo)
    before = base_manifest(repo)
    write(
        repo,
        {
            "src/lib/mod_3.py": "def helper_3(x):\n    return x * 333\n",
            "src/new_feature.py": "def brand_new_feature():\n    pass\n",
        },
    )
    (repo / "src/lib/mod_4.py").unlink()
    commit_all(repo, "change three files")
    report = cli_json("index", cwd=repo)
    base = report["base"]
    assert base["files"] == {"added": 1, "modified": 1, "deleted": 1, "unchanged": len(before) - 2}
    assert base["files_read"] == 2
    after = base_manifest(repo)
    assert set(after) == (set(before) - {"src/lib/mod_4.py"}) | {"src/new_feature.py"}
    assert {p: s for p, s in after.items() if before.get(p) != s}.keys() == {
        "src/lib/mod_3.py",
        "src/new_feature.py",
    }
    # The base answers as a fresh index of the same commit does.
    scratch = repo.parent / "scratch"
    git(repo.parent, "clone", "-q", str(repo), str(scratch))
    fresh = cli_json("index", cwd=scratch)
    assert fresh["base"]["files"]["added"] == len(after) and base_manifest(scratch) == after
    found = cli_json("def", "brand_new_feature", cwd=repo)
    assert [r["path"] for r in found["results"]] == ["src/new_feature.py"]
    check = cli_json("doctor", "--check", cwd=repo)
    assert next(c for c in check["results"] if c["check"] == "consistency")["ok"], check
    assert not [name for name in home_entries(repo) if name.endswith(".base")]


def test_a_changed_ragrafignore_in_the_base_commit_applies_to_every_file(repo: Path) -> None:
    cli_json("index", cwd=repo)
    assert "src/lib/mod_7.py" in base_manifest(repo)
    write(repo, {".ragrafignore": "src/lib/\n"})
    commit_all(repo, "leave the library out")
    cli_json("index", cwd=repo)
    assert not [p for p in base_manifest(repo) if p.startswith("src/lib/")]
    write(repo, {"src/app/extra.py": "def extra():\n    pass\n"})
    commit_all(repo, "one more")  # the ignore file is unchanged now: the base's copy still applies
    report = cli_json("index", cwd=repo)
    assert report["base"]["files_read"] == 1
    assert not [p for p in base_manifest(repo) if p.startswith("src/lib/")]
    assert "src/app/extra.py" in base_manifest(repo)


def test_the_whole_checkout_an_older_ragraf_kept_is_removed(repo: Path) -> None:
    cli_json("index", cwd=repo)
    db = Index.open(repo).settings.db_path
    old = db.with_suffix(".base")
    write(old, {"src/app/server.py": "stale\n"})
    db.with_suffix(".base.gitindex").write_bytes(b"DIRC")
    write(repo, {"src/app/server.py": SAMPLE["src/app/server.py"] + "\n# more\n"})
    commit_all(repo, "edit")
    cli_json("index", cwd=repo)
    assert not old.exists() and not db.with_suffix(".base.gitindex").exists()


def test_a_base_whose_last_commit_is_gone_is_read_whole_again(repo: Path) -> None:
    cli_json("index", cwd=repo)
    # History rewritten and the old commit pruned: git cannot say what changed since.
    write(repo, {"src/lib/mod_1.py": "def helper_1(x):\n    return -x\n"})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--amend", "-m", "rewritten")
    git(repo, "reflog", "expire", "--expire=now", "--all")
    git(repo, "gc", "-q", "--prune=now")
    report = cli_json("index", cwd=repo)
    assert report["base"]["files"]["modified"] == 1
    sha = hashlib.sha256((repo / "src/lib/mod_1.py").read_bytes()).hexdigest()
    assert base_manifest(repo)["src/lib/mod_1.py"] == sha
