"""What the index run's page check costs (issue 27): `PRAGMA quick_check` on an index file against a
no-change `ragraf index` of the same tree, in CPU-seconds measured in the same run.

Indexes ROOT (embedder none) into a home of its own unless --home names one that holds its index
already, then, --repeat times: a no-change `ragraf index --json` (CPU of the waited-for CLI and its
workers), quick_check on the file read-only in this process (CPU of this process), and `find ROOT
-type f` as a floor. An index run reads the pages only when the file changed since the last run
finished on it (src/ragraf/store/sqlite/integrity.py), so the no-change run itself skips it.

    python benchmarks/integrity_cost.py benchmarks/data/speed
    python benchmarks/integrity_cost.py /path/to/tree --home /tmp/its-home --repeat 5
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

# Whole CLI processes measured in process: no background server (cli_cpu.py measures that path).
os.environ.setdefault("RAGRAF_SERVER_IDLE_S", "0")


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _own_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def measure(root: Path, home: Path, repeat: int) -> dict[str, object]:
    env = {**os.environ, "RAGRAF_HOME": str(home), "RAGRAF_EMBEDDER": "none"}
    index = [sys.executable, "-m", "ragraf.cli", "index", "--root", str(root), "--json"]
    subprocess.run(index, env=env, capture_output=True, check=True)  # cold, or catching up
    (db_path,) = [p for p in home.glob("index-*.db")]
    runs = []
    for _ in range(repeat):
        c0 = _children_cpu()
        subprocess.run(index, env=env, capture_output=True, check=True)
        no_change = _children_cpu() - c0
        c0 = _own_cpu()
        db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
        verdict = db.execute("PRAGMA quick_check(1)").fetchone()[0]
        db.close()
        check = _own_cpu() - c0
        c0 = _children_cpu()
        subprocess.run(["find", str(root), "-type", "f"], capture_output=True, check=True)
        floor = _children_cpu() - c0
        runs.append({"no_change_index_cpu_s": round(no_change, 3), "quick_check_cpu_s": round(check, 3),
                     "find_cpu_s": round(floor, 3), "verdict": verdict,
                     "check_over_no_change": round(check / no_change, 2) if no_change else None})  # fmt: skip
    return {"root": str(root), "index_mb": round(db_path.stat().st_size / 1e6, 1), "runs": runs}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", type=Path)
    ap.add_argument("--home", type=Path, help="an index home to reuse (default: a new temporary one)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    home = args.home or Path(tempfile.mkdtemp(prefix="ragraf-integrity-"))
    print(json.dumps(measure(args.root.resolve(), home, args.repeat), indent=1))


if __name__ == "__main__":
    main()
