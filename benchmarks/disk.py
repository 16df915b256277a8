"""Bytes on disk of a ragraf index against the corpus it indexes (issue 28's "disk ≤ 2× the corpus").

Copies the speed corpus (or --corpus) into a temporary git repository with one commit, runs a cold
lexical `ragraf index` (the default path: a base index of the commit and a view of the work tree),
then reports `du -sb` of the index home (everything ragraf keeps: the SQLite file, its WAL, any
checkout of its own) against `du -sb` of the corpus without .git, and the SQLite file's bytes per
table (dbstat), and the CPU-seconds the cold index took.

    python benchmarks/disk.py                      # needs python benchmarks/corpora.py speed
    python benchmarks/disk.py --corpus benchmarks/data/speed/pygments-2.19.2 --json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

# Whole CLI processes measured in process: no background server (cli_cpu.py measures that path).
os.environ.setdefault("RAGRAF_SERVER_IDLE_S", "0")

SPEED = Path(__file__).resolve().parent / "data" / "speed"
GIT_ENV = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.com", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@example.com"}  # fmt: skip


def du(path: Path, exclude: str = "") -> int:
    args = ["du", "-sb", *([f"--exclude={exclude}"] if exclude else []), str(path)]
    return int(subprocess.run(args, capture_output=True, text=True, check=True).stdout.split()[0])


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def by_table(db: Path) -> dict[str, int]:
    """Bytes of each table with its indexes (FTS5 shadow tables under their FTS table's name)."""
    con = sqlite3.connect(db)
    try:
        rows = con.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name").fetchall()
        owner = dict(con.execute("SELECT name, tbl_name FROM sqlite_master").fetchall())
    except sqlite3.OperationalError:  # SQLite built without dbstat
        return {}
    finally:
        con.close()
    tables: dict[str, int] = {}
    fts = ("chunks_fts_retained", "chunks_fts")
    for name, size in rows:
        table = owner.get(name, name)
        table = next((f for f in fts if table.startswith(f)), table)
        tables[table] = tables.get(table, 0) + int(size)
    return dict(sorted(tables.items(), key=lambda kv: -kv[1]))


def run(corpus: Path, keep: bool) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="ragraf-disk-"))
    try:
        repo = work / "repo"
        shutil.copytree(corpus, repo, symlinks=True)
        for args in (("init", "-q", "-b", "main"), ("add", "-A"), ("commit", "-q", "-m", "corpus")):
            subprocess.run(
                ["git", *args], cwd=repo, check=True, capture_output=True, env={**os.environ, **GIT_ENV}
            )
        env = {**os.environ, "RAGRAF_EMBEDDER": "none"}
        env.pop("RAGRAF_HOME", None)
        cpu0 = _children_cpu()
        out = subprocess.run(
            [sys.executable, "-m", "ragraf.cli", "index", "--json"], cwd=repo, capture_output=True, text=True,
            env=env, check=False,
        )  # fmt: skip
        if out.returncode != 0:
            raise SystemExit(f"ragraf index failed: {out.stderr or out.stdout}")
        index_cpu = _children_cpu() - cpu0
        report = json.loads(out.stdout)
        home = repo / ".git" / "ragraf"
        corpus_bytes = du(repo, exclude=".git")
        index_bytes = du(home)
        dbs = sorted(home.glob("*.db"))
        return {
            "corpus": str(corpus),
            "files": sum((report.get("files") or {}).values()),
            "corpus_bytes": corpus_bytes,
            "index_home_bytes": index_bytes,
            "ratio": round(index_bytes / corpus_bytes, 3),
            "index_cpu_s": round(index_cpu, 2),
            "home_entries": {p.name: du(p) for p in sorted(home.iterdir())},
            "tables": by_table(dbs[0]) if dbs else {},
        }
    finally:
        if keep:
            print(f"kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=SPEED)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the temporary repository and its index")
    args = ap.parse_args(argv)
    if not args.corpus.is_dir():
        raise SystemExit(f"{args.corpus} is missing: run python benchmarks/corpora.py speed")
    result = run(args.corpus, args.keep)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    mb = 1e6
    print(
        f"corpus {result['corpus']}: {result['files']} files, {result['corpus_bytes'] / mb:.1f} MB (du -sb, no .git)"
    )
    print(
        f"index home: {result['index_home_bytes'] / mb:.1f} MB = {result['ratio']:.2f}x the corpus (target <= 2x)"
    )
    print(
        f"cold lexical `ragraf index`: {result['index_cpu_s']:.1f} CPU-s (the index process and its workers)"
    )
    for name, size in result["home_entries"].items():
        print(f"  {name:40} {size / mb:8.1f} MB")
    for name, size in result["tables"].items():
        print(f"  table {name:34} {size / mb:8.1f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
