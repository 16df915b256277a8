"""Corpus discovery, default excludes, ignore files and text extraction on real folders."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support import git, init_git, write

from ragraf import Index
from ragraf.corpus.discover import discover
from ragraf.corpus.extract import Unindexable, extract, strip_front_matter

MiB = 1024 * 1024


def paths(root: Path) -> list[str]:
    return [f.path for f in discover(root, MiB).files]


def test_walk_honours_nested_gitignore_and_default_excludes(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "a.py": "x = 1\n",
            ".gitignore": "*.log\nsecret_dir/\n",
            "pkg/.gitignore": "generated.py\n!keep.log\n",
            "pkg/generated.py": "x\n",
            "pkg/real.py": "y\n",
            "pkg/keep.log": "kept\n",
            "debug.log": "no\n",
            "secret_dir/x.py": "no\n",
            "node_modules/lib/index.js": "no\n",
            ".venv/lib.py": "no\n",
            "build/out.js": "no\n",
            "package-lock.json": "{}",
            "poetry.lock": "",
            "app.min.js": "x",
            "vendor.bundle.js": "x",
            ".env": "KEY=1",
            ".env.local": "KEY=2",
            "server.pem": "x",
            "id_rsa": "x",
            "cert.p12": "x",
            "img.png": "x",
        },
    )
    assert paths(tmp_path) == [".gitignore", "a.py", "pkg/.gitignore", "pkg/keep.log", "pkg/real.py"]


def test_git_lists_tracked_and_untracked_but_not_ignored(tmp_path: Path) -> None:
    write(tmp_path, {"tracked.py": "a\n", ".gitignore": "ignored.py\n"})
    init_git(tmp_path)
    write(tmp_path, {"untracked.py": "b\n", "ignored.py": "c\n"})
    assert paths(tmp_path) == [".gitignore", "tracked.py", "untracked.py"]
    os.remove(tmp_path / "tracked.py")  # deleted but still in git's index: not listed as a file
    assert paths(tmp_path) == [".gitignore", "untracked.py"]


def test_ragrafignore_excludes_and_reincludes_but_never_secrets(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "src/a.py": "a\n",
            "src/gen/b.py": "b\n",
            "dist/bundle.py": "c\n",
            ".env": "K=1",
            ".ragrafignore": "src/gen/\n!dist/\n!.env\n",
        },
    )
    assert paths(tmp_path) == [".ragrafignore", "dist/bundle.py", "src/a.py"]


def test_oversized_and_symlinked_files_are_skipped_with_a_reason(tmp_path: Path) -> None:
    write(tmp_path, {"big.js": "x" * (MiB + 1), "ok.py": "a\n"})
    outside = tmp_path.parent / "outside.py"
    outside.write_text("secret = 1\n")
    os.symlink(outside, tmp_path / "link_out.py")
    os.symlink(tmp_path, tmp_path / "loop")
    found = discover(tmp_path, MiB)
    assert [f.path for f in found.files] == ["ok.py"]
    reasons = dict(found.skipped)
    assert "larger than" in reasons["big.js"]
    assert "symlink" in reasons["link_out.py"]


def test_odd_file_names_survive(tmp_path: Path) -> None:
    names = ["with space.py", "new\nline.py", "ünïcødé.py", "日本.md"]
    write(tmp_path, {n: "x = 1\n" for n in names})
    assert sorted(paths(tmp_path)) == sorted(names)
    init_git(tmp_path)
    assert sorted(paths(tmp_path)) == sorted(names)


def test_binary_with_a_source_name_is_unindexable(tmp_path: Path) -> None:
    write(tmp_path, {"fake.py": b"\x7fELF\x00\x00binary"})
    try:
        extract(tmp_path / "fake.py", "fake.py", 4000)
    except Exception as exc:  # noqa: BLE001
        assert "binary" in str(exc)
    else:
        raise AssertionError("a binary must not be extracted")


def test_minified_line_is_refused_and_invalid_utf8_is_replaced(tmp_path: Path) -> None:
    write(tmp_path, {"one.js": "var a=1;" * 1000, "latin.py": b"name = '\xe9t\xe9'\n"})
    try:
        extract(tmp_path / "one.js", "one.js", 4000)
        raise AssertionError("a minified file must be refused")
    except Exception as exc:  # noqa: BLE001
        assert "minified" in str(exc)
    ex = extract(tmp_path / "latin.py", "latin.py", 4000)
    assert ex.text == "name = '\ufffdt\ufffd'\n"
    assert len(ex.sha256) == 64


def test_front_matter_is_blanked_keeping_line_numbers() -> None:
    text = "---\ntitle: A\ndate: 2024-01-01\n---\n# Heading\nbody\n"
    stripped = strip_front_matter(text)
    assert stripped.split("\n")[4] == "# Heading"
    assert "title" not in stripped
    other_date = text.replace("2024-01-01", "2025-12-31")
    assert strip_front_matter(other_date) == stripped


def test_git_repo_subfolder_lists_paths_relative_to_it(tmp_path: Path) -> None:
    write(tmp_path, {"top.py": "a\n", "sub/inner.py": "b\n"})
    init_git(tmp_path)
    assert git(tmp_path, "ls-files").split() == ["sub/inner.py", "top.py"]
    assert paths(tmp_path / "sub") == ["inner.py"]


def test_utf16_with_a_byte_order_mark_is_text(tmp_path: Path) -> None:
    source = "using System;\r\n\r\nclass Größe\r\n{\r\n    void Run() {}\r\n}\r\n"
    for name, data in (
        ("le.cs", source.encode("utf-16")),
        ("be.cs", b"\xfe\xff" + source.encode("utf-16-be")),
    ):
        (tmp_path / name).write_bytes(data)
        assert extract(tmp_path / name, name, 4000).text == source.replace("\r\n", "\n")
    idx = Index.open(tmp_path, embedder="none")
    assert idx.index().files["added"] == 2
    found = idx.find_symbol("Größe").results
    assert sorted((r["path"], r["line"]) for r in found) == [("be.cs", 3), ("le.cs", 3)]
    assert idx.read("le.cs:5").results[0]["content"] == "    void Run() {}"
    # UTF-32 (its mark begins with UTF-16's) and binary data after FF FE stay binary.
    for name, data in (
        ("u32.cs", source.encode("utf-32")),
        ("blob.bin.cs", b"\xff\xfe" + bytes(range(256)) * 8),
    ):
        (tmp_path / name).write_bytes(data)
        with pytest.raises(Unindexable):
            extract(tmp_path / name, name, 4000)
