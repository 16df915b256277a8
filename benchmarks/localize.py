"""Issue localization end to end through the CLI: a pasted report to the files its fix changed.

Runs `../shared/bench-issues` (or any tasks.jsonl in its format): each task's tree is laid out from
its repository's git bundle, indexed incrementally from the previous task's (one index home per
repository), then asked through `ragraf localize`, `ragraf search` (hybrid and lexical) and a plain
BM25 ranker over the same files' whole text, all in one run. Prints file Acc@1/@3/@5/@10 and
all@5/@10 overall and per repository, p50/p95 latency of each CLI call, and the incremental index
time from one task's tree to the next.

    python benchmarks/localize.py                          # all 57 tasks, default embedder
    python benchmarks/localize.py --embedder none --repos flask,requests
    python benchmarks/localize.py --tasks my/tasks.jsonl --methods localize,bm25 --json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Whole CLI processes measured in process: no background server (cli_cpu.py measures that path).
os.environ.setdefault("RAGRAF_SERVER_IDLE_S", "0")

HERE = Path(__file__).resolve().parent
SHARED = HERE.parent.parent / "shared" / "bench-issues"
METHODS = ("localize", "hybrid", "lexical", "bm25")
KS = (1, 3, 5, 10)
CODE_SUFFIXES = (".py",)
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


@dataclass
class Task:
    instance_id: str
    repo: str
    bundle: Path
    ref: str
    text: str
    gold: list[str]


@dataclass
class Outcome:
    task: Task
    ranked: dict[str, list[str]] = field(default_factory=dict)  # method -> files, best first
    seconds: dict[str, float] = field(default_factory=dict)  # method -> wall time of the call
    index_s: float = 0.0
    index_files_read: int = 0


def load_tasks(path: Path, repos: set[str] | None) -> list[Task]:
    tasks = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        t = json.loads(line)
        name = t["repo"].split("/")[-1]
        if repos and name not in repos:
            continue
        tasks.append(
            Task(
                t["instance_id"],
                name,
                path.parent / t["bundle"],
                t["ref"],
                t["problem_statement"],
                t["gold_files"],
            )
        )
    return tasks


def ragraf(*args: str, env: dict[str, str], stdin: str | None = None) -> tuple[dict[str, Any], float]:
    """One CLI call's JSON envelope and its wall time."""
    t = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "ragraf.cli", *args, "--json"],
        input=stdin, capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    elapsed = time.perf_counter() - t
    if out.returncode != 0:
        raise SystemExit(
            f"ragraf {' '.join(args[:2])} failed ({out.returncode}): {out.stderr.strip()[-500:]}"
        )
    return json.loads(out.stdout), elapsed


def lay_out(task: Task, work: Path) -> Path:
    """The task's tree at work/<repo>/tree, replacing the previous task's files (the index home is
    elsewhere, so the next index run is incremental)."""
    bare = work / f"{task.repo}.git"
    if not bare.exists():
        subprocess.run(["git", "clone", "-q", "--bare", str(task.bundle), str(bare)], check=True)
    tree = work / task.repo / "tree"
    if tree.exists():
        shutil.rmtree(tree)
    tree.mkdir(parents=True)
    archive = subprocess.run(
        ["git", f"--git-dir={bare}", "archive", "--format=tar", task.ref], capture_output=True, check=True
    )
    with tempfile.TemporaryFile() as tmp:
        tmp.write(archive.stdout)
        tmp.seek(0)
        with tarfile.open(fileobj=tmp) as tar:
            tar.extractall(tree, filter="data")
    return tree


def files_of(envelope: dict[str, Any]) -> list[str]:
    return list(dict.fromkeys(r["path"] for r in envelope.get("results") or []))


def _words(text: str) -> list[str]:
    out = []
    for tok in _TOKEN.findall(text):
        out.append(tok.lower())
        parts = [p.lower() for piece in tok.split("_") for p in _CAMEL.findall(piece)]
        if len(parts) > 1:
            out.extend(parts)
    return out


def bm25_files(tree: Path, query: str, k: int = 10) -> list[str]:
    """A plain BM25 ranker (k1 1.2, b 0.75) over whole code files, identifiers split: the baseline."""
    docs: dict[str, Counter[str]] = {}
    for path in sorted(tree.rglob("*")):
        if path.suffix in CODE_SUFFIXES and path.is_file():
            docs[path.relative_to(tree).as_posix()] = Counter(_words(path.read_text(errors="replace")))
    if not docs:
        return []
    n = len(docs)
    avg = sum(sum(c.values()) for c in docs.values()) / n
    df: Counter[str] = Counter()
    for counts in docs.values():
        df.update(counts.keys())
    terms = Counter(_words(query))
    scores = {}
    for path, counts in docs.items():
        length = sum(counts.values())
        s = 0.0
        for term in terms:
            tf = counts.get(term, 0)
            if tf:
                idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
                s += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / avg))
        scores[path] = s
    return sorted(scores, key=lambda p: (-scores[p], p))[:k]


def run(
    tasks: list[Task], methods: list[str], work: Path, embedder: str, k: int, verbose: bool
) -> list[Outcome]:
    outcomes = []
    for n, task in enumerate(tasks, 1):
        tree = lay_out(task, work)
        env = {**os.environ, "RAGRAF_HOME": str(work / task.repo / "home"), "RAGRAF_EMBEDDER": embedder}
        out = Outcome(task)
        report, out.index_s = ragraf("index", "--root", str(tree), "-q", env=env)
        out.index_files_read = int(report.get("files_read") or 0)
        for method in methods:
            if method == "bm25":
                t = time.perf_counter()
                out.ranked[method] = bm25_files(tree, task.text, k)
                out.seconds[method] = time.perf_counter() - t
                continue
            if method == "localize":
                found, secs = ragraf(
                    "localize", "-", "--root", str(tree), "-k", str(k), env=env, stdin=task.text
                )
            else:
                found, secs = ragraf(
                    "search", task.text, "--root", str(tree), "-k", str(k), "--mode", method, env=env
                )
            out.ranked[method] = files_of(found)
            out.seconds[method] = secs
        outcomes.append(out)
        first = {
            m: next((i + 1 for i, p in enumerate(out.ranked[m]) if p in task.gold), None) for m in methods
        }
        print(f"[{n}/{len(tasks)}] {task.instance_id}: index {out.index_s:.1f} s; gold rank "
              + ", ".join(f"{m} {first[m] or '-'}" for m in methods), file=sys.stderr)  # fmt: skip
        if verbose:
            for m in methods:
                print(f"    {m}: {out.ranked[m][:5]}  gold {task.gold}", file=sys.stderr)
    return outcomes


def accuracy(outcomes: list[Outcome], method: str) -> dict[str, float]:
    if not outcomes:
        return {}
    row: dict[str, float] = {}
    for k in KS:
        row[f"acc@{k}"] = sum(any(p in o.task.gold for p in o.ranked[method][:k]) for o in outcomes) / len(
            outcomes
        )
    for k in (5, 10):
        row[f"all@{k}"] = sum(set(o.task.gold) <= set(o.ranked[method][:k]) for o in outcomes) / len(outcomes)
    return row


def summary(outcomes: list[Outcome], methods: list[str]) -> dict[str, Any]:
    by_repo: dict[str, list[Outcome]] = defaultdict(list)
    for o in outcomes:
        by_repo[o.task.repo].append(o)
    latency = {}
    for m in methods:
        secs = sorted(o.seconds[m] for o in outcomes)
        latency[m] = {
            "p50_ms": round(1000 * statistics.median(secs), 1),
            "p95_ms": round(1000 * secs[int(0.95 * (len(secs) - 1))], 1),
        }
    incremental = sorted(
        o.index_s for o in outcomes if o.index_files_read and o is not by_repo[o.task.repo][0]
    )
    return {
        "tasks": len(outcomes),
        "overall": {m: accuracy(outcomes, m) for m in methods},
        "repos": {
            r: {"tasks": len(os), **{m: accuracy(os, m) for m in methods}}
            for r, os in sorted(by_repo.items())
        },
        "latency": latency,
        "incremental_index_s": {
            "p50": round(statistics.median(incremental), 2) if incremental else None,
            "max": round(max(incremental), 2) if incremental else None,
        },
        "per_task": [
            {
                "instance_id": o.task.instance_id,
                "gold": o.task.gold,
                "index_s": round(o.index_s, 2),
                **{m: o.ranked[m] for m in methods},
            }
            for o in outcomes
        ],  # fmt: skip
    }


def print_tables(data: dict[str, Any], methods: list[str]) -> None:
    cols = [f"acc@{k}" for k in KS] + ["all@5", "all@10"]
    print(f"{data['tasks']} tasks; file accuracy (%)", file=sys.stderr)
    print(f"  {'':28}" + "".join(f"{c:>8}" for c in cols), file=sys.stderr)
    for m in methods:
        print(
            f"  {'overall ' + m:28}" + "".join(f"{100 * data['overall'][m][c]:8.1f}" for c in cols),
            file=sys.stderr,
        )
    for repo, row in data["repos"].items():
        for m in methods:
            label = f"{repo} ({row['tasks']}) {m}"
            print(f"  {label:28}" + "".join(f"{100 * row[m][c]:8.1f}" for c in cols), file=sys.stderr)
    for m in methods:
        lat = data["latency"][m]
        print(
            f"  latency {m:10} p50 {lat['p50_ms']:8.1f} ms  p95 {lat['p95_ms']:8.1f} ms (whole CLI process)",
            file=sys.stderr,
        )
    inc = data["incremental_index_s"]
    print(
        f"  incremental index from one task's tree to the next: p50 {inc['p50']} s, max {inc['max']} s",
        file=sys.stderr,
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--tasks", type=Path, default=SHARED / "tasks.jsonl", help="a tasks.jsonl in the bench-issues format"
    )
    ap.add_argument("--repos", default="", help="comma-separated repository names (default: all)")
    ap.add_argument("--methods", default=",".join(METHODS), help="comma-separated: " + ",".join(METHODS))
    ap.add_argument(
        "--embedder", default=os.environ.get("RAGRAF_EMBEDDER", "local"), help="local (default), none, …"
    )
    ap.add_argument(
        "--work", type=Path, default=HERE / "data" / "bench-issues", help="where trees and index homes go"
    )
    ap.add_argument("-k", type=int, default=10)
    ap.add_argument("--json", action="store_true", help="print the JSON summary on stdout")
    ap.add_argument("--out", type=Path, help="also write the JSON summary to this file")
    ap.add_argument("--verbose", "-v", action="store_true")
    args = ap.parse_args(argv)
    methods = [m for m in args.methods.split(",") if m]
    unknown = set(methods) - set(METHODS)
    if unknown:
        ap.error(f"unknown methods: {', '.join(sorted(unknown))}")
    repos = {r for r in args.repos.split(",") if r} or None
    tasks = load_tasks(args.tasks, repos)
    if not tasks:
        ap.error("no tasks")
    args.work.mkdir(parents=True, exist_ok=True)
    outcomes = run(tasks, methods, args.work.resolve(), args.embedder, args.k, args.verbose)
    data = {"embedder": args.embedder, "k": args.k, **summary(outcomes, methods)}
    print_tables(data, methods)
    if args.out:
        args.out.write_text(json.dumps(data, indent=1))
    if args.json:
        print(json.dumps(data, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
