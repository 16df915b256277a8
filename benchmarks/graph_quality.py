"""Impact → tests, checked against real test runs: a mutation campaign over open-source projects.

For each project (an sdist, unpacked under --work; fetched with `pip download --no-deps
--no-binary :all:` when missing), the suite is run once as it is (tests failing already are left
out), then one function at a time is broken (its body starts with `raise RuntimeError`), the suite
is run again and its failing test files are the truth (kept in --work/truth2-NAME.json, so a
second run only asks ragraf). `ragraf impact --diff -` is given the same
change; its first --top test files are compared with the truth: recall (of the failing files the top
could hold, min(failing, top), the share in it; and of all failing files) and precision (of the top, the share that failed), over the mutants that fail
at least one test. Mutants are drawn with a fixed seed from the package's own functions and methods.

    python benchmarks/graph_quality.py                      # click, attrs, more-itertools
    python benchmarks/graph_quality.py --projects click --mutants 40 --json
"""

from __future__ import annotations

import argparse
import ast
import difflib
import json
import os
import random
import re
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path

# Whole CLI processes measured in process: no background server (cli_cpu.py measures that path).
os.environ.setdefault("RAGRAF_SERVER_IDLE_S", "0")

# name → (sdist spec, source folder for PYTHONPATH, package folder mutated, tests folder)
PROJECTS = {
    "click": ("click==8.1.7", "src", "src/click", "tests"),
    "attrs": ("attrs==23.2.0", "src", "src/attr", "tests"),
    "more-itertools": ("more-itertools==10.2.0", ".", "more_itertools", "tests"),
}
_FAILED = re.compile(r"^(?:FAILED|ERROR) (\S+?\.py)")
_SUITE_TIMEOUT_S = 600


@dataclass
class Score:
    mutants: int = 0  # drawn
    untested: int = 0  # broke no test: left out of the figures
    found: int = 0  # failing files in the top
    reachable: int = 0  # failing files the top could hold: min(failing, top) per mutant
    failing: int = 0  # failing files
    listed: int = 0  # files in the top
    perfect_recall: int = 0
    rows: list[dict] = field(default_factory=list)

    def figures(self) -> dict:
        scored = self.mutants - self.untested
        return {
            "mutants": self.mutants, "scored": scored, "untested": self.untested,
            "recall_at_top": round(self.found / self.reachable, 3) if self.reachable else None,
            "recall_of_all": round(self.found / self.failing, 3) if self.failing else None,
            "precision": round(self.found / self.listed, 3) if self.listed else None,
            "mutants_all_found": self.perfect_recall,
        }  # fmt: skip


def unpack(work: Path, spec: str) -> Path:
    name, version = spec.split("==")
    for folder in (work / f"{name}-{version}", work / f"{name.replace('-', '_')}-{version}"):
        if folder.is_dir():
            return folder
    dl = work / "dl"
    dl.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:", "-d", str(dl), spec],
        check=True,
    )  # fmt: skip
    archive = next(
        p
        for p in dl.iterdir()
        if p.name.lower().startswith(name.lower().replace("-", "_")[:4]) and version in p.name
    )
    with tarfile.open(archive) as tar:
        tar.extractall(work, filter="data")
    return unpack(work, spec)


def failing_files(root: Path, pythonpath: str, tests: str) -> set[str] | None:
    """The test files with a failing or erroring test, or None when the suite did not finish.
    A file that fails to import is one of them, and the others still run (pytest would stop)."""
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONPATH": str(root / pythonpath)}
    try:
        out = subprocess.run(
            [
                sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--tb=no", "-rfE", "-W", "ignore",
                "--continue-on-collection-errors", tests,
            ],
            cwd=root, env=env, capture_output=True, text=True, timeout=_SUITE_TIMEOUT_S,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return None
    return {m.group(1) for line in out.stdout.splitlines() if (m := _FAILED.match(line))}


def mutable_functions(root: Path, package: str) -> list[tuple[str, str, int, int]]:
    """(path, qualified name, line of the first body statement, its indent) of each function with a body."""
    found = []
    for path in sorted((root / package).rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        try:
            tree = ast.parse(path.read_text())
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(getattr(body[0], "value", None), ast.Constant)
            ):
                body = body[1:]  # after the docstring
            if not body or node.name.startswith("__") and node.name != "__init__":
                continue
            first = body[0]
            if any(isinstance(d, ast.Name) and d.id == "overload" for d in node.decorator_list):
                continue
            found.append((rel, node.name, first.lineno, first.col_offset))
    return found


def mutate(text: str, line: int, indent: int) -> str:
    lines = text.split("\n")
    lines.insert(line - 1, " " * indent + 'raise RuntimeError("mutant")')
    return "\n".join(lines)


def ragraf(root: Path, home: Path, *args: str, stdin: str | None = None) -> dict:
    env = {**os.environ, "RAGRAF_EMBEDDER": "none", "RAGRAF_HOME": str(home)}
    out = subprocess.run(
        [sys.executable, "-m", "ragraf.cli", *args, "--root", str(root), "--json"],
        input=stdin, capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    if out.returncode != 0:
        raise SystemExit(f"ragraf {' '.join(args)} failed: {out.stderr.strip()[:500]}")
    return json.loads(out.stdout)


def campaign(name: str, work: Path, mutants: int, top: int, seed: int, depth: int) -> tuple[Score, dict]:
    spec, pythonpath, package, tests = PROJECTS[name]
    root = unpack(work, spec)
    home = work / f"home-{name}"
    t0 = time.perf_counter()
    ragraf(root, home, "index")
    index_s = time.perf_counter() - t0
    # a mutant's failing files depend on the project's code alone: kept under --work for the next run
    truth_file = work / f"truth2-{name}.json"
    truths: dict[str, list[str]] = json.loads(truth_file.read_text()) if truth_file.is_file() else {}
    if "" not in truths:
        before = failing_files(root, pythonpath, tests)
        if before is None:
            raise SystemExit(f"{name}: the suite did not finish as it is")
        truths[""] = sorted(before)
    before = set(truths[""])
    candidates = mutable_functions(root, package)
    random.Random(seed).shuffle(candidates)
    score = Score()
    latencies = []
    for rel, fname, line, indent in candidates[:mutants]:
        path = root / rel
        original = path.read_text()
        changed = mutate(original, line, indent)
        diff = "".join(
            difflib.unified_diff(
                original.splitlines(keepends=True), changed.splitlines(keepends=True), f"a/{rel}", f"b/{rel}"
            )
        )
        key = f"{rel}:{line}"
        if key in truths:
            failed = set(truths[key])
        else:
            try:
                path.write_text(changed)
                failed = failing_files(root, pythonpath, tests)
            finally:
                path.write_text(original)
            if failed is not None:  # a suite that did not finish is run again next time
                truths[key] = sorted(failed)
                truth_file.write_text(json.dumps(truths, indent=1))
        score.mutants += 1
        truth = (failed or set()) - before
        if not truth:
            score.untested += 1
            continue
        t1 = time.perf_counter()
        env = ragraf(root, home, "impact", "--diff", "-", "--depth", str(depth), stdin=diff)
        latencies.append(time.perf_counter() - t1)
        # a file failing before the change can say nothing about it: neither truth nor listed
        files = [r["path"] for r in env["results"] if r["role"] == "test_file"]
        listed = [p for p in files if p not in before][:top]
        hits = truth & set(listed)
        score.found += len(hits)
        score.failing += len(truth)
        score.reachable += min(len(truth), top)
        score.listed += len(listed)
        score.perfect_recall += len(hits) == min(len(truth), top)
        score.rows.append({
            "function": f"{rel}:{fname}", "failing": sorted(truth), "listed": listed, "found": sorted(hits),
        })  # fmt: skip
    latencies.sort()
    extra = {
        "index_s": round(index_s, 2),
        "impact_cli_p50_s": round(latencies[len(latencies) // 2], 3) if latencies else None,
    }
    return score, extra


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--projects", default=",".join(PROJECTS))
    parser.add_argument("--work", type=Path, default=Path("/tmp/ragraf-graph-quality"))
    parser.add_argument("--mutants", type=int, default=25, help="functions broken per project")
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument("--depth", type=int, default=10, help="impact --depth (its default)")
    parser.add_argument("--seed", type=int, default=25)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--rows", action="store_true", help="each mutant's failing and listed files")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    report = {}
    total = Score()
    for name in args.projects.split(","):
        score, extra = campaign(name, args.work, args.mutants, args.top, args.seed, args.depth)
        report[name] = {**score.figures(), **extra, **({"rows": score.rows} if args.rows else {})}
        for attr in ("mutants", "untested", "found", "reachable", "failing", "listed", "perfect_recall"):
            setattr(total, attr, getattr(total, attr) + getattr(score, attr))
        if not args.json:
            print(name, json.dumps(report[name] if args.rows else score.figures() | extra), flush=True)
    report["all"] = total.figures()
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print("all", json.dumps(report["all"]))


if __name__ == "__main__":
    main()
