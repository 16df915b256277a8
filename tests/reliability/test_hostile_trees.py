"""Hostile trees (issue 27): random and invalid ignore lines, and special files (FIFO, socket,
symlink to a device, folder) as every file ragraf reads itself. No traceback, no hang (a timeout
only stops one), every operation answers with JSON."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import init_git, run_cli, write

from ragraf.corpus.discover import discover, read_ignore_file

LONG = os.environ.get("RAGRAF_RELIABILITY_LONG") == "1"
HANG_S = 120  # only stops a hang
FILES = {
    "a.py": "def alpha():\n    return 1\n",
    "docs/b.md": "# Beta\n\ntext\n",
    "c.log": "x\n",
    "sub/d.py": "D = 1\n",
}
# Pieces git's pattern syntax gives meaning to, and a few that trip regex compilers.
PIECES = st.sampled_from(
    ["*", "**", "?", "/", "\\", "!", "#", "[", "]", "[z-a]", "[!a]", "[^", "-", " ", "\t", "a", "b.py", "sub",
     "docs/", "*.log", "\\ ", "\\#", "\\!", "\u00e9", "{", "}", "(", ")", "+", "$", "^", "|", "."]
)  # fmt: skip
LINES = st.lists(st.lists(PIECES, max_size=6).map("".join), max_size=12)


@settings(max_examples=1500 if LONG else 150, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])  # fmt: skip
@given(lines=LINES)
def test_random_ignore_lines_never_crash_and_bad_ones_are_named(
    tmp_path_factory: pytest.TempPathFactory, lines: list[str]
) -> None:
    root = tmp_path_factory.mktemp("ign")
    write(
        root,
        {**FILES, ".gitignore": "\n".join(lines) + "\n", "sub/.gitignore": "\n".join(reversed(lines)) + "\n"},
    )
    (root / ".ragrafignore").write_text("\n".join(lines[:3]) + "\n")
    warnings: list[str] = []
    read_ignore_file(root / ".gitignore", warnings)
    found = discover(root, 1 << 20)
    assert {f.path for f in found.files} <= {*FILES, ".gitignore", "sub/.gitignore", ".ragrafignore"}
    for w in found.warnings:
        name, number = w.split(":")[:2]
        assert name in (".gitignore", "sub/.gitignore", ".ragrafignore") and number.isdigit(), w


SPECIAL_AT = [".gitignore", ".ragrafignore", "sub/.gitignore", "ragraf.toml", "pyproject.toml", "e.py",
              ".git/info/exclude"]  # fmt: skip
KINDS = ["fifo", "socket", "zero", "dir"]


def _make(path: Path, kind: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() or path.is_symlink():
        path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(str(path))
    elif kind == "zero":
        os.symlink("/dev/zero", path)
    else:
        path.mkdir()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("at", SPECIAL_AT)
def test_a_special_file_anywhere_ragraf_reads_never_hangs_nor_crashes(
    tmp_path: Path, at: str, kind: str
) -> None:
    root = tmp_path / "r"
    write(root, FILES)
    if at.startswith(".git/"):
        init_git(root)
    _make(root / at, kind)
    env = {"RAGRAF_EMBEDDER": "none", "RAGRAF_HOME": str(tmp_path / "home")}
    for args in (("index",), ("search", "alpha"), ("status",), ("outline", at), ("read", at), ("def", "alpha"),
                 ("doctor",), ("index", "--dry-run")):  # fmt: skip
        out = run_cli(*args, "--root", str(root), "--json", env=env, timeout=HANG_S)
        assert "Traceback" not in out.stderr, (args, out.stderr[-2000:])
        assert out.returncode in (0, 1, 2, 3), (args, out.returncode)
        if args[0] != "doctor":
            json.loads(out.stdout)


OPENSSH_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU=\n-----END OPENSSH PRIVATE KEY-----\n"


def test_a_git_work_tree_names_what_it_leaves_out_as_a_plain_folder_does(tmp_path: Path) -> None:
    reports = {}
    for name in ("plain", "git"):
        root = tmp_path / name
        write(
            root, {"a.py": "def alpha():\n    return 1\n", ".env": "TOKEN=x\n", "my_id_backup": OPENSSH_KEY}
        )
        os.symlink("a.py", root / "link.py")
        if name == "git":
            init_git(root)  # all four committed: the base's index leaves out the same three
        env = {"RAGRAF_EMBEDDER": "none", "RAGRAF_HOME": str(tmp_path / f"home-{name}"),
               "GIT_CEILING_DIRECTORIES": str(tmp_path)}  # fmt: skip
        out = run_cli("index", "--root", str(root), "--json", env=env, timeout=HANG_S)
        assert out.returncode == 0, out.stderr
        reports[name] = json.loads(out.stdout)
    assert reports["git"]["skipped"] == reports["plain"]["skipped"] == 3
    assert reports["git"]["skipped_files"] == reports["plain"]["skipped_files"]
    assert [f["path"] for f in reports["git"]["skipped_files"]] == ["link.py", "my_id_backup"]


@pytest.mark.parametrize(("kind", "said"), [("fifo", "a FIFO"), ("socket", "a socket"), ("dir", "a folder")])
def test_outline_and_read_of_a_special_file_say_what_it_is(tmp_path: Path, kind: str, said: str) -> None:
    root = tmp_path / "r"
    write(root, FILES)
    env = {"RAGRAF_EMBEDDER": "none", "RAGRAF_HOME": str(tmp_path / "home")}
    assert run_cli("index", "--root", str(root), env=env, timeout=HANG_S).returncode == 0
    _make(root / "odd.py", kind)
    for op in ("outline", "read"):
        out = run_cli(op, "odd.py", "--root", str(root), "--json", env=env, timeout=HANG_S)
        error = json.loads(out.stdout)["error"]
        assert out.returncode == 2 and f"odd.py is {said}" in error["message"], (op, error)
        assert "not on disk" not in error["message"] and error["suggest"]


def test_a_symlink_inside_the_root_is_named_as_one_never_as_new_since(tmp_path: Path) -> None:
    root = tmp_path / "r"
    write(root, FILES)
    os.symlink("a.py", root / "link.py")
    env = {"RAGRAF_EMBEDDER": "none", "RAGRAF_HOME": str(tmp_path / "home")}
    assert run_cli("index", "--root", str(root), env=env, timeout=HANG_S).returncode == 0
    outline = run_cli("outline", "link.py", "--root", str(root), "--json", env=env, timeout=HANG_S)
    assert "a symlink" in json.loads(outline.stdout)["error"]["message"]
    read = json.loads(run_cli("read", "link.py", "--root", str(root), "--json", env=env).stdout)
    assert read["stale_warnings"] == [] and any("a symlink" in note for note in read["notes"]), read


def test_a_symlink_leading_nowhere_is_named_with_its_target(tmp_path: Path) -> None:
    root = tmp_path / "r"
    write(root, FILES)
    os.symlink("gone.py", root / "dangling.py")
    env = {"RAGRAF_EMBEDDER": "none", "RAGRAF_HOME": str(tmp_path / "home")}
    assert run_cli("index", "--root", str(root), env=env, timeout=HANG_S).returncode == 0
    for op in ("outline", "read"):
        out = run_cli(op, "dangling.py", "--root", str(root), "--json", env=env, timeout=HANG_S)
        error = json.loads(out.stdout)["error"]
        assert out.returncode == 2, (op, error)
        assert error["message"] == "dangling.py is a symlink to gone.py, which does not exist", (op, error)
