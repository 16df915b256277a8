"""A repository whose object store is huge: a 2 GB pack, a blob of hundreds of megabytes. The index
completes with memory that does not grow with them, and the last revision keeps answering."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from support import cli_json, git, write

# What one `ragraf index` of a handful of source files holds resident (about 80 MiB): far below
# the pack or blob of these tests, so reading either whole shows.
RSS_BOUND_MIB = 200
_PEAK = (
    "import json, resource, subprocess, sys\n"
    "proc = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
    "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
    "print(json.dumps({'exit': proc.returncode, 'peak_kib': peak, 'stdout': proc.stdout, 'stderr': proc.stderr}))\n"
)


def index_with_peak(root: Path) -> tuple[dict, float]:
    """`ragraf index --json` in a fresh parent, which reports the largest resident size any process
    of the run reached (getrusage of its waited-for children: exact, not sampled)."""
    out = subprocess.run(
        [sys.executable, "-c", _PEAK, sys.executable, "-m", "ragraf.cli", "index", "--json"],
        cwd=root, capture_output=True, text=True, check=True, timeout=300,
    )  # fmt: skip
    run = json.loads(out.stdout)
    assert run["exit"] == 0 and "Traceback" not in run["stderr"], run["stderr"]
    return json.loads(run["stdout"]), run["peak_kib"] / 1024


def defined(root: Path, name: str) -> list[str]:
    return [r["path"] for r in cli_json("def", name, cwd=root)["results"]]


def commit_all(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)


def sparse_pack(root: Path, size: int) -> Path:
    """Repack the repository into one pack and make that pack `size` bytes: a hole after its last
    object, the trailer moved to the end. git reads objects through the index's offsets and checks
    the trailer against the index, so every command works (only `git fsck` sees the hole); on disk
    it takes a few KiB."""
    git(root, "repack", "-a", "-d", "-q")
    (pack,) = (root / ".git" / "objects" / "pack").glob("*.pack")
    data = pack.read_bytes()
    pack.chmod(0o644)
    with open(pack, "wb") as fh:
        fh.write(data[:-20])
        fh.seek(size - len(data), os.SEEK_CUR)
        fh.write(data[-20:])
    return pack


def test_a_two_gigabyte_pack_is_never_read_whole_and_the_index_follows_new_commits(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write(root, {f"src/m{i}.py": f"def packed_step_{i}():\n    return {i}\n" for i in range(20)})
    git(root, "init", "-q", "-b", "main")
    commit_all(root, "sources")
    pack = sparse_pack(root, 2 * 1024**3)
    assert pack.stat().st_size == 2 * 1024**3
    assert git(root, "cat-file", "-p", "HEAD:src/m3.py") == "def packed_step_3():\n    return 3\n"

    report, peak = index_with_peak(root)
    assert report["base"]["files"]["added"] == 20
    assert peak < RSS_BOUND_MIB, f"{peak:.0f} MiB resident"
    assert defined(root, "packed_step_7") == ["src/m7.py"]

    # A new commit over the pack: its objects are loose, the unchanged ones stay in the pack.
    write(
        root,
        {
            "src/m7.py": "def packed_step_7_renamed():\n    return 7\n",
            "src/new.py": "def after_pack():\n    pass\n",
        },
    )
    commit_all(root, "after the pack")
    report, peak = index_with_peak(root)
    assert report["base"]["files"] == {"added": 1, "modified": 1, "deleted": 0, "unchanged": 19}
    assert report["base"]["files_read"] == 2
    assert peak < RSS_BOUND_MIB, f"{peak:.0f} MiB resident"
    assert defined(root, "after_pack") == ["src/new.py"]
    assert defined(root, "packed_step_3") == ["src/m3.py"]


def test_a_blob_of_hundreds_of_megabytes_in_a_new_commit_is_streamed_out_of_git(tmp_path: Path) -> None:
    # A new base commit writes its changed files out of git (`git cat-file --batch`); a blob larger
    # than the memory bound (a committed disk image, a model) passes through a chunk at a time.
    # Sparse in the work tree, a loose object of a few hundred KiB in git: the test stays cheap.
    root = tmp_path / "repo"
    write(root, {"src/app.py": "def before_image():\n    pass\n"})
    big = root / "assets" / "disk.img"
    big.parent.mkdir(parents=True)
    big.touch()
    os.truncate(big, 256 * 2**20)
    git(root, "init", "-q", "-b", "main")
    commit_all(root, "an image")
    first, _ = index_with_peak(root)
    assert first["base"]["files"]["added"] == 1  # the image is over the size limit: listed, never read

    os.truncate(big, 300 * 2**20)
    write(root, {"src/app.py": "def after_image():\n    pass\n"})
    commit_all(root, "a larger image")
    report, peak = index_with_peak(root)
    assert report["base"]["files"]["modified"] == 1 and report["base"]["files_read"] == 1
    assert peak < RSS_BOUND_MIB, f"{peak:.0f} MiB resident while a 300 MiB blob was written out"
    assert defined(root, "after_image") == ["src/app.py"]
