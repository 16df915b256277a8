"""What a newcomer reads from the CLI: the dry run's estimate is what the run makes, the first index
in a git repository says why most files cost nothing, work-tree revisions carry their git HEAD,
`refs` says how many it found, `drift` says what its numbers count."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support import SAMPLE, git, init_git, run_cli, write

ENV = {"RAGRAF_EMBEDDER": "none"}
EXPRESS = Path(__file__).parents[2] / "benchmarks" / "data" / "express"


def _tree(tmp_path: Path) -> Path:
    """A real tree (express's sources) with files that share a content, as vendored copies do."""
    root = tmp_path / "repo"
    if EXPRESS.is_dir():
        shutil.copytree(EXPRESS, root)
    else:
        write(root, SAMPLE)
    write(root, SAMPLE)
    # a source file of some size (express's .js, or the sample's own files where express is not laid out)
    first = sorted(p for p in root.rglob("*") if p.suffix in (".js", ".py") and p.stat().st_size > 200)[0]
    write(
        root,
        {
            "vendor/a/copy.js": first.read_text(),
            "vendor/b/copy.js": first.read_text(),
            "docs/again.md": "# Retry\n\nBack off exponentially between attempts.\n",
            "docs/once-more.md": "# Retry\n\nBack off exponentially between attempts.\n",
        },
    )
    return root


def _json(*args: str, cwd: Path) -> dict:
    out = run_cli(*args, "--json", cwd=cwd, env=ENV)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.parametrize("in_git", [False, True])
def test_the_dry_run_predicts_the_chunks_the_index_makes(tmp_path: Path, in_git: bool) -> None:
    root = _tree(tmp_path)
    if in_git:
        init_git(root)
        write(root, {"src/app/new_file.py": "def brand_new():\n    return 1\n"})  # untracked
    predicted = _json("index", "--dry-run", cwd=root)
    made = _json("index", cwd=root)
    assert predicted["files_sharing_content"] >= 2
    assert predicted["files"] == made["files"]["added"]
    assert predicted["chunks"] == made["chunks"]["total"]
    assert sum(row["chunks"] for row in predicted["folders"].values()) == predicted["chunks"]


def test_the_first_index_in_a_git_repository_explains_the_base_and_the_view(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write(root, SAMPLE)
    init_git(root)
    write(root, {"src/app/retry.py": "def retry_with_backoff():\n    return 2\n"})  # one file edited
    first = run_cli("index", "-q", cwd=root, env=ENV)
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert lines[0].startswith("base main@") and "shared by every work tree" in lines[0]
    assert "rev-0001:" in lines[0]
    assert lines[1].startswith("rev-0001+wt-")
    assert "not read again; 1 file read from disk" in lines[2]
    write(root, {"src/app/retry.py": "def retry_with_backoff():\n    return 3\n"})
    second = run_cli("index", "-q", cwd=root, env=ENV)
    assert second.stdout.count("\n") == 1, second.stdout  # an ordinary run: its one line
    head = git(root, "rev-parse", "HEAD").strip()
    revisions = _json("revisions", cwd=root)["results"]
    assert len(revisions) == 2
    assert all(r["git_head"] == head and r["git_branch"] == "main" for r in revisions)
    status = run_cli("status", cwd=root, env=ENV).stdout
    assert f"git main@{head[:10]}" in status


def test_refs_and_def_say_how_many_they_found(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write(root, SAMPLE)
    assert run_cli("index", "-q", cwd=root, env=ENV).returncode == 0
    calls = run_cli("refs", "--calls", "resolve_host", cwd=root, env=ENV).stdout.splitlines()
    found = _json("refs", "--calls", "resolve_host", cwd=root)["results"]
    files = len({r["path"] for r in found})
    noun = "call site" if len(found) == 1 else "call sites"
    assert calls[-1] == f"{len(found)} {noun} in {files} file{'s' * (files != 1)}"
    defs = run_cli("def", "TCPConnector", cwd=root, env=ENV).stdout.splitlines()
    assert defs[-1] == "1 definition in 1 file"


def test_drift_says_what_its_counts_count(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write(root, SAMPLE)
    assert run_cli("index", "-q", cwd=root, env=ENV).returncode == 0
    write(root, {"src/app/server.py": (root / "src/app/server.py").read_text() + "\nEXTRA = 1\n"})
    out = run_cli("drift", cwd=root, env=ENV)
    assert out.returncode == 0, out.stderr
    data = _json("drift", cwd=root)
    symbols = sum(len(e["affected_symbols"]) for e in data["results"])
    assert (
        f"1 file changed on disk since rev-0001: {symbols} indexed definitions in them may be out of date"
        in out.stdout
    )
    named = data["results"][0]["affected_symbols"][0]["name"]
    assert f"may be out of date: {named}" in out.stdout
