"""The --real scale campaign's cached build (reliability/scale.py): a rerun reuses the repository
under --work as its commit has it, whatever the previous run edited; another layout is rebuilt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import init_git, write

from reliability import scale


def cached_build(work: Path, layout: int) -> Path:
    root = work / "real"
    write(root, {"linux/kernel/fork.c": "int fork(void) { return 0; }\n", "python/app.py": "x = 1\n"})
    init_git(root)
    (work / "real.json").write_text(json.dumps({"layout": layout, "files": 2, "bytes": 36}), encoding="utf-8")
    return root


def test_a_cached_build_is_reused_with_the_previous_runs_edits_undone(tmp_path: Path) -> None:
    root = cached_build(tmp_path, scale.REAL_LAYOUT)
    with (root / "python/app.py").open("a", encoding="utf-8") as fh:
        fh.write("\n\ndef scale_edit_0(value):\n    return value\n")
    write(root, {"python/new.py": "y = 2\n"})
    again, info = scale.build_real(tmp_path, log=lambda line: None)
    assert again == root and info["reused"] and info["files"] == 2
    assert (root / "python/app.py").read_text() == "x = 1\n"
    assert not (root / "python/new.py").exists()


def test_a_build_of_another_layout_is_not_reused(tmp_path: Path, monkeypatch) -> None:
    cached_build(tmp_path, scale.REAL_LAYOUT - 1)
    monkeypatch.setattr(scale, "LINUX_TARBALL", tmp_path / "no-such-linux-source.tar.xz")
    with pytest.raises(SystemExit, match="apt-get install -y linux-source-6.1"):
        scale.build_real(tmp_path, log=lambda line: None)  # rebuilt, not reused: the source is needed
