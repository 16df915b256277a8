"""Impact: changed lines → touched definitions → callers → tests, from the work tree, git and diffs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from facts.test_graph import PROJECT
from support import cli_json, git, init_git, write

from ragraf.api import Index
from ragraf.facts.impact import MAX_DIFF_LINES, parse_diff


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    write(root, PROJECT)
    init_git(root)
    with Index.open(root) as idx:
        idx.index()
    return root


def _by_role(env: dict, role: str) -> list[dict]:
    return [r for r in env["results"] if r["role"] == role]


def _edit(root: Path, rel: str, old: str, new: str) -> None:
    path = root / rel
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_a_body_change_in_the_work_tree_reaches_its_callers_and_the_tests(repo: Path) -> None:
    _edit(repo, "pkg/sessions.py", "return method.upper()", "return method.upper().strip()")
    env = cli_json("impact", "--depth", "4", cwd=repo)
    changed = _by_role(env, "changed")
    assert [(c["qualified"], c["change"]) for c in changed] == [("Session.prepare", "body")]
    files = _by_role(env, "test_file")
    assert [f["path"] for f in files] == ["tests/test_api.py"]
    tests = {t["qualified"]: t for t in _by_role(env, "test")}
    assert tests["test_prepare"]["distance"] == 1
    assert tests["test_get"]["distance"] == 4  # test_get → pkg.get → request → Session.send → prepare
    assert [c["to"] for c in tests["test_get"]["chain"]] == ["Session.send", "request", "get", "test_get"]
    callers = {c["qualified"] for c in _by_role(env, "caller")}
    assert {"Session.send", "request"} <= callers


def test_a_signature_change_and_an_added_function_are_named_so(repo: Path) -> None:
    _edit(repo, "pkg/sessions.py", "def prepare(self, method):", "def prepare(self, method, extra=None):")
    (repo / "pkg/util.py").write_text(
        "def reverse(xs):\n    return xs[::-1]\n\n\ndef added():\n    return 1\n"
    )
    env = cli_json("impact", cwd=repo)
    changed = {(c["qualified"], c["change"]) for c in _by_role(env, "changed")}
    assert changed == {("Session.prepare", "signature"), ("added", "added")}


def test_a_removed_function_names_the_callers_left_behind(repo: Path) -> None:
    (repo / "pkg/util.py").write_text("")
    env = cli_json("impact", cwd=repo)
    assert {(c["qualified"], c["change"]) for c in _by_role(env, "changed")} == {("reverse", "removed")}
    assert any(c["path"] == "pkg/api.py" for c in _by_role(env, "caller"))


def test_staged_and_a_git_range_give_the_same_definitions(repo: Path) -> None:
    _edit(repo, "pkg/api.py", "return request('get', url)", "return request('GET', url)")
    git(repo, "add", "-A")
    staged = cli_json("impact", "--staged", cwd=repo)
    git(repo, "commit", "-q", "-m", "change")
    ranged = cli_json("impact", "--rev", "HEAD~1..HEAD", cwd=repo)
    for env in (staged, ranged):
        assert [c["qualified"] for c in _by_role(env, "changed")] == ["get"]
        assert [t["qualified"] for t in _by_role(env, "test")] == ["test_get"]


def test_a_diff_from_stdin_with_a_binary_and_a_renamed_file(repo: Path) -> None:
    diff = (
        "diff --git a/pkg/util.py b/pkg/tools.py\n"
        "similarity index 90%\nrename from pkg/util.py\nrename to pkg/tools.py\n"
        "--- a/pkg/util.py\n+++ b/pkg/tools.py\n"
        "@@ -1,2 +1,2 @@\n def reverse(xs):\n-    return xs[::-1]\n+    return list(reversed(xs))\n"
        "diff --git a/logo.png b/logo.png\nBinary files a/logo.png and b/logo.png differ\n"
    )
    out = _stdin(repo, diff, "--json")
    assert out.returncode == 0, out.stderr
    env = json.loads(out.stdout)
    assert [c["qualified"] for c in _by_role(env, "changed")] == ["reverse"]
    assert any("renamed" in n for n in env["notes"]) and any("logo.png is binary" in n for n in env["notes"])


def test_a_diff_that_does_not_apply_says_so(repo: Path) -> None:
    diff = "--- a/pkg/util.py\n+++ b/pkg/util.py\n@@ -1,2 +1,2 @@\n def reverse(xs):\n-    return nothing_like_this\n+    return 1\n"
    env = _impact_diff(repo, diff)
    assert any("does not apply" in n and "pkg/util.py:2" in n for n in env["notes"])


def test_a_diff_naming_a_path_outside_the_root_is_refused(repo: Path) -> None:
    diff = "--- a/../../etc/passwd\n+++ b/../../etc/passwd\n@@ -1 +1 @@\n-root\n+toor\n"
    out = _stdin(repo, diff)
    assert out.returncode != 0
    assert "Traceback" not in out.stderr and "root" in out.stderr


def test_a_huge_diff_is_bounded_and_says_what_was_cut() -> None:
    body = "".join(f"+line {i}\n" for i in range(50_000))
    change = parse_diff(f"--- a/big.txt\n+++ b/big.txt\n@@ -0,0 +1,50000 @@\n{body}")
    assert change.lines_cut == 50_000 + 4 - MAX_DIFF_LINES
    assert len(change.files) == 1


def test_garbage_is_no_change_not_a_traceback(repo: Path) -> None:
    env = _impact_diff(repo, "this is not a diff\n\x00\x01")
    assert _by_role(env, "changed") == [] and any("no changes" in n for n in env["notes"])


def _impact_diff(repo: Path, diff: str) -> dict:
    out = _stdin(repo, diff, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _stdin(repo: Path, diff: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`ragraf impact --diff -` with the diff on its standard input."""
    return subprocess.run(
        [sys.executable, "-m", "ragraf.cli", "impact", "--diff", "-", *args],
        cwd=repo, input=diff, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
