"""Ignore files as a hostile tree has them: FIFOs, devices, symlinks, huge files, lines git accepts
but a regex compiler does not. None hangs, none crashes; each is named in a warning."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from support import init_git, run_cli, write

from ragraf.corpus.discover import IGNORE_FILE_MAX_BYTES, discover, read_ignore_file

FILES = {"a.py": "def alpha():\n    pass\n", "b.log": "log line\n", "sub/c.py": "def gamma():\n    pass\n"}


def _special(path: Path, kind: str) -> None:
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "zero":
        os.symlink("/dev/zero", path)
    elif kind == "socket":
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
        sock.close()
    elif kind == "dir":
        path.mkdir()


@pytest.mark.parametrize("kind", ["fifo", "zero", "socket", "dir"])
@pytest.mark.parametrize("name", [".gitignore", ".ragrafignore", "sub/.gitignore"])
@pytest.mark.parametrize("shape", ["walk", "git"])
def test_an_ignore_file_that_is_not_a_regular_file_is_named_and_not_read(
    tmp_path: Path, kind: str, name: str, shape: str
) -> None:
    root = tmp_path / "r"
    write(root, FILES)
    if shape == "git":
        init_git(root)
    _special(root / name, kind)
    found = discover(root, 1 << 20)
    assert {"a.py", "sub/c.py"} <= {f.path for f in found.files}
    assert any(w.startswith(f"{name} is a") and "not a regular file" in w for w in found.warnings), (
        found.warnings
    )


def test_a_huge_ignore_file_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / ".gitignore"
    path.write_bytes(b"#" * (IGNORE_FILE_MAX_BYTES + 1))
    warnings: list[str] = []
    assert read_ignore_file(path, warnings) is None
    assert warnings == [f".gitignore is larger than {IGNORE_FILE_MAX_BYTES} bytes: not read (shorten it)"]


def test_invalid_lines_are_skipped_as_git_skips_them_and_named_with_their_line(tmp_path: Path) -> None:
    write(tmp_path, {**FILES, ".gitignore": "foo\\\n*.log\n\\\n[z-a]\n"})
    found = discover(tmp_path, 1 << 20)
    assert {f.path for f in found.files} == {".gitignore", "a.py", "sub/c.py"}  # *.log still applies
    assert [w.split(":")[:2] for w in found.warnings] == [
        [".gitignore", "1"],
        [".gitignore", "3"],
        [".gitignore", "4"],
    ]
    assert all("skipped, as git skips it" in w for w in found.warnings)


@pytest.mark.parametrize("shape", ["walk", "git"])
def test_index_search_and_status_answer_beside_a_fifo_gitignore_and_invalid_lines(
    tmp_path: Path, shape: str
) -> None:
    root = tmp_path / "r"
    write(root, {**FILES, ".ragrafignore": "foo\\\n[z-a]\n"})
    if shape == "git":
        init_git(root)
    os.mkfifo(root / ".gitignore")
    env = {"RAGRAF_EMBEDDER": "none"}
    index = run_cli("index", "--root", str(root), "--json", env=env, timeout=60)
    assert index.returncode == 0, index.stderr
    assert "Traceback" not in index.stderr
    import json

    warnings = json.loads(index.stdout)["warnings"]
    assert (
        ".ragrafignore:1: invalid pattern 'foo\\\\' skipped, as git skips it (fix or remove the line)"
        in warnings
    )
    assert any(w.startswith(".gitignore is a FIFO") for w in warnings)
    for args in (("search", "alpha"), ("status",), ("outline", "a.py"), ("outline", ".gitignore")):
        out = run_cli(*args, "--root", str(root), "--json", env=env, timeout=60)
        assert "Traceback" not in out.stderr
        assert json.loads(out.stdout)["op"] == args[0]
    outline = json.loads(run_cli("outline", ".gitignore", "--root", str(root), "--json", env=env).stdout)
    assert "is a FIFO, not a regular file" in outline["error"]["message"]
