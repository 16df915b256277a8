"""Warm latency of the graph operations on a large corpus (issue 25's targets), in one process.

Indexes the corpus lexically (or reuses --home), opens one Index as a server does (two guarded
reads first: the second arms the guard's watch of the tree, once per process), and times each
operation: callers and callees of sampled definitions at depth 1 and 3, each name's first ask
(`_first`: its call sites resolved then) and its second, impact of a 10-file change given as a
diff, and the repo map of a revision (first, then cached: in the process, and from the index home's
file as a new process reads it; the first with numpy loaded, as after a search with an embedder,
and with its import added, timed just before). Wall and CPU milliseconds per call (CPU is this process's: the
machine's load does not inflate it), p50 and p95; a raw SQLite lookup of one name is the floor in
the same run.

    python benchmarks/graph_speed.py                       # the speed corpus (benchmarks/data/speed)
    python benchmarks/graph_speed.py --corpus ~/src/repo --home /tmp/h --names 30 --json
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from ragraf.api import Index
from ragraf.api.ops import graph as graph_ops
from ragraf.languages import is_test_path

# Whole CLI processes measured in process: no background server (cli_cpu.py measures that path).
os.environ.setdefault("RAGRAF_SERVER_IDLE_S", "0")


def timed(fn: Callable[[], object], rounds: int = 1) -> tuple[list[float], list[float]]:
    walls, cpus = [], []
    for _ in range(rounds):
        w, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(1000 * (time.perf_counter() - w))
        cpus.append(1000 * (time.process_time() - c))
    return walls, cpus


def summary(walls: list[float], cpus: list[float]) -> dict[str, float]:
    def p95(xs: list[float]) -> float:
        return sorted(xs)[max(0, round(0.95 * len(xs)) - 1)]

    return {
        "n": len(walls),
        "wall_p50_ms": round(statistics.median(walls), 1), "wall_p95_ms": round(p95(walls), 1),
        "cpu_p50_ms": round(statistics.median(cpus), 1), "cpu_p95_ms": round(p95(cpus), 1),
    }  # fmt: skip


def sample_definitions(idx: Index, n: int, seed: int) -> list[tuple[str, str, int, int]]:
    """(qualified name, path, line, end_line) of functions and methods outside tests, drawn evenly."""
    store, rev = idx.store(), idx._current()
    paths = sorted(
        p for p, _ in store.manifest_hashes(rev.rev_no) if p.endswith(".py") and not is_test_path(p)
    )
    rng = random.Random(seed)
    out: list[tuple[str, str, int, int]] = []
    for path in rng.sample(paths, min(len(paths), 8 * n)):
        defs = [
            d for d in store.find_facts(rev.rev_no, "def", path=path, limit=10_000)
            if d.kind in ("function", "method") and d.end_line - d.line >= 3
        ]  # fmt: skip
        if defs:
            d = rng.choice(defs)
            out.append((f"{d.container}.{d.name}" if d.container else d.name, path, d.line, d.end_line))
        if len(out) >= n:
            break
    return out


def ten_file_diff(root: Path, defs: list[tuple[str, str, int, int]]) -> str:
    """A unified diff changing one body line of ten sampled definitions, each in its own file."""
    parts, seen = [], set()
    for _, path, line, end in defs:
        if path in seen or len(seen) >= 10:
            continue
        seen.add(path)
        old = (root / path).read_text(errors="replace").splitlines(keepends=True)
        new = list(old)
        at = min(end, line + 2) - 1
        new[at] = new[at].rstrip("\n") + "  # changed\n"
        parts += difflib.unified_diff(old, new, f"a/{path}", f"b/{path}")
    return "".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--corpus", type=Path, default=Path(__file__).parent / "data" / "speed")
    parser.add_argument("--home", type=Path, default=None, help="an index home to reuse (else a temp one)")
    parser.add_argument("--names", type=int, default=20)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    home = args.home or Path("/tmp/ragraf-graph-speed")
    root = args.corpus.resolve()
    if args.home is None:
        shutil.rmtree(home, ignore_errors=True)
    env = {"RAGRAF_HOME": str(home), "RAGRAF_EMBEDDER": "none"}
    index = subprocess.run(
        [sys.executable, "-m", "ragraf.cli", "index", "--root", str(root), "--json"],
        env={**os.environ, **env}, capture_output=True, text=True,
    )  # fmt: skip
    if index.returncode != 0:
        raise SystemExit(f"ragraf index failed: {index.stderr.strip()[:400]}")
    out: dict[str, object] = {"corpus": str(root)}
    with Index.open(root, home=str(home), embedder="none") as idx:
        defs = sample_definitions(idx, args.names, args.seed)
        names = [d[0] for d in defs]
        db = sqlite3.connect(idx.settings.db_path)
        query = "SELECT count(*) FROM facts WHERE name_lower = ? AND kind = 'def'"
        floor = [
            timed(lambda n=n: db.execute(query, (n.rsplit(".", 1)[-1].lower(),)).fetchall()) for n in names
        ]
        out["floor_sqlite_name_lookup"] = summary([w[0] for w, _ in floor], [c[0] for _, c in floor])
        for _ in range(2):  # the process's warm-up: the store's pages, the guard's watch armed
            idx.outline(defs[0][1])
        for label, call in (
            ("callers_depth1", lambda n: idx.callers(n, depth=1)),
            ("callers_depth3", lambda n: idx.callers(n, depth=3)),
            ("callees", lambda n: idx.callees(n)),
        ):
            walls, cpus, first_walls, first_cpus = [], [], [], []
            for n in names:
                w, c = timed(lambda n=n, call=call: call(n))  # its sites resolved, its files read
                first_walls += w
                first_cpus += c
                w, c = timed(lambda n=n, call=call: call(n))
                walls += w
                cpus += c
            out[f"{label}_first"] = summary(first_walls, first_cpus)
            out[label] = summary(walls, cpus)
        diff = ten_file_diff(root, defs)
        idx.impact(diff=diff)
        out["impact_10_files"] = summary(*timed(lambda: idx.impact(diff=diff), rounds=5))
        graph_ops._MAPS.clear()
        shutil.rmtree(idx.settings.home / "maps", ignore_errors=True)
        # the map's arithmetic loads numpy, which a search with an embedder has loaded before: its
        # import is timed on its own (if no operation above loaded it), the first map after it
        loaded = "numpy" in sys.modules
        numpy_import = timed(lambda: __import__("numpy"))
        out["numpy_import"] = {**summary(*numpy_import), "loaded_before": loaded}
        first = timed(lambda: idx.repo_map())
        out["map_first"] = summary(*first)
        out["map_first_with_numpy_import"] = summary(
            *([a + b for a, b in zip(x, y, strict=True)] for x, y in zip(first, numpy_import, strict=True))
        )
        out["map_cached"] = summary(*timed(lambda: idx.repo_map(), rounds=10))
        out["map_cached_file"] = summary(*timed(lambda: (graph_ops._MAPS.clear(), idx.repo_map()), rounds=5))
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(f"{'operation':<28} {'n':>3} {'wall p50':>9} {'p95':>8} {'cpu p50':>8} {'p95':>8}  (ms)")
    for label, row in out.items():
        if isinstance(row, dict) and "n" in row:
            print(
                f"{label:<28} {row['n']:>3} {row['wall_p50_ms']:>9} {row['wall_p95_ms']:>8} "
                f"{row['cpu_p50_ms']:>8} {row['cpu_p95_ms']:>8}"
            )


if __name__ == "__main__":
    sys.exit(main())
