"""A new git work tree over an existing base index (issue 8's figures).

Builds a git repository of about 5,000 files (Django from the speed corpus), indexes it once (the
base), then times what an agent does when it starts a task: `git worktree add`, edit 10 files, and
run a first `ragraf search` in the new work tree (the CLI, so process start is included). In the same
run the same work tree's files are indexed from scratch in a folder of their own, which is what a
tool without overlays pays. Prints both, their ratio, and the indexing work the first search did.

    python benchmarks/worktree_speed.py                 # embedder none (lexical)
    python benchmarks/worktree_speed.py --embedder local --no-scratch   # base index = the scratch cost

Targets (issue 8): the first search does the indexing work of <= 10 files and answers in <= 2 s,
>= 50x faster than indexing the work tree from scratch.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# Whole CLI processes measured in process: no background server (cli_cpu.py measures that path).
os.environ.setdefault("RAGRAF_SERVER_IDLE_S", "0")

SOURCE = Path(__file__).resolve().parent / "data" / "speed" / "django-5.2.8"
GIT_ENV = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.com", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@example.com"}  # fmt: skip


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env={**os.environ, **GIT_ENV})


def ragraf(cwd: Path, *args: str, env: dict[str, str]) -> tuple[float, dict[str, Any]]:
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "ragraf.cli", *args, "--json"], cwd=cwd, capture_output=True, text=True,
        env={**os.environ, **env}, check=False,
    )  # fmt: skip
    elapsed = time.perf_counter() - t0
    if out.returncode != 0:
        raise SystemExit(f"ragraf {' '.join(args)} failed: {out.stderr or out.stdout}")
    return elapsed, json.loads(out.stdout)


def make_repo(target: Path, n_files: int) -> int:
    files = sorted(p for p in SOURCE.rglob("*") if p.is_file())[:n_files]
    for src in files:
        dst = target / src.relative_to(SOURCE)
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
    git(target, "init", "-q", "-b", "main")
    git(target, "add", "-A")
    git(target, "commit", "-q", "-m", "base")
    return len(files)


def run(args: argparse.Namespace) -> dict[str, Any]:
    if not SOURCE.is_dir():
        raise SystemExit(f"{SOURCE} is missing: run `python benchmarks/corpora.py` first")
    with tempfile.TemporaryDirectory(prefix="ragraf-wt-") as tmp:
        # Each index starts from an empty embedding cache of its own, so neither borrows the other's work.
        env = {"RAGRAF_EMBEDDER": args.embedder, "RAGRAF_CACHE_DIR": str(Path(tmp) / "cache-base")}
        repo = Path(tmp) / "repo"
        repo.mkdir()
        n = make_repo(repo, args.files)
        base_s, base = ragraf(repo, "index", env=env)

        t0 = time.perf_counter()
        git(repo, "worktree", "add", "-q", "-b", "task", str(Path(tmp) / "task"))
        add_s = time.perf_counter() - t0
        task = Path(tmp) / "task"
        edited = sorted(p for p in task.rglob("*.py") if ".git" not in p.parts)[: args.touched]
        for i, path in enumerate(edited):
            path.write_text(path.read_text() + f"\n\ndef task_change_{i}(value):\n    return value * {i}\n")
        search_s, first = ragraf(task, "search", "task_change_3", env=env)
        warm_s, _ = ragraf(task, "search", "task_change_3", env=env)

        if args.no_scratch:  # the base index was that cost already: the same files, from an empty cache
            scratch_s, cold = base_s, base["base"]
        else:
            scratch = Path(tmp) / "scratch"
            shutil.copytree(task, scratch, ignore=shutil.ignore_patterns(".git"))
            cache = str(Path(tmp) / "cache-scratch")
            scratch_s, cold = ragraf(scratch, "index", env={**env, "RAGRAF_CACHE_DIR": cache})
    tree = first.get("worktree") or {}
    return {
        "files": n, "touched": len(edited), "embedder": args.embedder, "load": os.getloadavg()[0],
        "base_index_s": round(base_s, 2), "base_chunks": base["base"]["chunks"]["total"],
        "worktree_add_s": round(add_s, 3), "first_search_s": round(search_s, 3),
        "add_plus_first_search_s": round(add_s + search_s, 3), "warm_search_cli_s": round(warm_s, 3),
        "first_search_rev": first["index_rev"], "first_search_top": (first["results"] or [{}])[0].get("path"),
        "refresh": tree.get("refresh"), "indexed": tree.get("indexed"),
        "scratch_index_s": round(scratch_s, 2), "scratch_files_read": cold["files_read"],
        "speedup": round(scratch_s / (add_s + search_s), 1),
    }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--touched", type=int, default=10)
    parser.add_argument("--embedder", default="none")
    parser.add_argument(
        "--no-scratch", action="store_true",
        help="take the base index (the same files from an empty cache) as the from-scratch cost",
    )  # fmt: skip
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = run(args)
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    print(
        f"repository: {result['files']} files, base index {result['base_index_s']} s "
        f"({result['base_chunks']} chunks, embedder {result['embedder']}), load {result['load']:.1f}"
    )
    print(
        f"git worktree add: {result['worktree_add_s']} s; first search (CLI): {result['first_search_s']} s "
        f"-> {result['first_search_rev']}, top {result['first_search_top']}"
    )
    print(
        f"  lazy refresh: {result['refresh']}, indexing work {result['indexed']} for {result['touched']} touched files"
    )
    print(f"  a second search (CLI): {result['warm_search_cli_s']} s")
    print(
        f"the same work tree indexed from scratch: {result['scratch_index_s']} s "
        f"({result['scratch_files_read']} files read)"
    )
    print(
        f"speedup (scratch / (add + first search)): {result['speedup']}x  (target >= 50x, first answer <= 2 s)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
