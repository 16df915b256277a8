"""What `ragraf index` costs after a change, against what git pays for the same change (issue 28).

On a temporary git repository made from the speed corpus (or --corpus, made a repository when it
is not one), after a cold `ragraf index`, the CPU-seconds (this process's waited-for children:
the CLI and its workers) of `ragraf index --json` after each change, and in the same run the floor:
the change itself made by git (the branch switch's `git checkout`; nothing for an edit) plus a
`git status` after it. The changes: none, a one-file edit, a new file, and a switch between two
branches that differ in --switch files (modified across many folders). Between measurements an
unmeasured run lets the files just written settle (a file hashed within the racy window of its
write, 2 s at most, is read again by the next run), so each figure is the cost of its change alone.

    python benchmarks/change_cost.py                  # needs python benchmarks/corpora.py speed
    python benchmarks/change_cost.py --json --repeat 3
    python benchmarks/change_cost.py --work /tmp/cc --keep    # reuse a prepared copy next time
    python benchmarks/change_cost.py --server   # through a running `ragraf watch` (its CPU counted)

Targets (issue 28): one-file edit <= 2x the floor, 150-file branch switch <= 6x.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import queue
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

try:
    from benchmarks import corpora
except ModuleNotFoundError:  # run as a script: python benchmarks/change_cost.py
    import corpora  # type: ignore[no-redef]

# Whole CLI processes measured in process: no background server (cli_cpu.py measures that path).
os.environ.setdefault("RAGRAF_SERVER_IDLE_S", "0")

GIT_ENV = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.com", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@example.com"}  # fmt: skip
TARGETS = {"edit": 2.0, "switch": 6.0}
SETTLE_S = 2.2  # past the racy window (RACY_NS, 2 s)


def children_cpu() -> float:
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return kids.ru_utime + kids.ru_stime


def measured(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, str]:
    """CPU-seconds of one command and its children, and its stdout; a failure stops the benchmark."""
    before = children_cpu()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    cpu = children_cpu() - before
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}: {(proc.stderr or proc.stdout)[-2000:]}")
    return cpu, proc.stdout


def process_cpu(pid: int) -> float:
    """CPU-seconds of a running process, the children it waited for and, as they are now, its
    living descendants (a fork server and the workers it forks, which the process never waits
    for) with what they waited for (Linux /proc)."""
    total = 0
    todo = [pid]
    while todo:
        one = todo.pop()
        try:
            fields = Path(f"/proc/{one}/stat").read_text().rsplit(")", 1)[1].split()
            tasks = list(Path(f"/proc/{one}/task").iterdir())
        except OSError:
            continue  # ended meanwhile: its parent's waited-for time holds it
        total += sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
        for task in tasks:
            with contextlib.suppress(OSError):
                todo += [int(c) for c in (task / "children").read_text().split()]
    return total / os.sysconf("SC_CLK_TCK")


class Watch:
    """A running `ragraf watch --json` of the root: its runs as they commit, and its CPU."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [*ragraf_cli(), "watch", "--root", str(root), "--json"], cwd=root, env=env,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True,
        )  # fmt: skip
        self.runs: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.runs.put(line)

    def cpu(self) -> float:
        return process_cpu(self.proc.pid)

    def drain(self) -> None:
        while not self.runs.empty():
            self.runs.get_nowait()

    def next_run(self, timeout_s: float) -> bool:
        """Wait for the watch to commit its next run; False when none came within timeout_s."""
        try:
            self.runs.get(timeout=timeout_s)
        except queue.Empty:
            return False
        return True

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def ragraf_cli() -> list[str]:
    here = Path(sys.executable).parent / "ragraf"
    return [str(here)] if here.exists() else [sys.executable, "-m", "ragraf.cli"]


class Bench:
    def __init__(self, root: Path, home: Path) -> None:
        self.root = root
        # ragraf as installed runs from compiled bytecode: a shell with PYTHONDONTWRITEBYTECODE
        # would have every run compile its modules again (a third of a one-file edit's CPU).
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        self.env = {**env, **GIT_ENV, "RAGRAF_HOME": str(home), "RAGRAF_EMBEDDER": "none",
                    "RAGRAF_CACHE_DIR": str(home.parent / "cache"),
                    "PYTHONPYCACHEPREFIX": str(home.parent / "pycache"),
                    "GIT_CEILING_DIRECTORIES": str(root.parent)}  # fmt: skip

    def git(self, *args: str) -> tuple[float, str]:
        return measured(["git", *args], self.root, self.env)

    def index(self) -> tuple[float, dict[str, Any]]:
        cpu, out = measured(
            [*ragraf_cli(), "index", "--root", str(self.root), "--json", "-q"], self.root, self.env
        )
        return cpu, json.loads(out)

    def settle(self) -> None:
        time.sleep(SETTLE_S)
        self.index()
        time.sleep(SETTLE_S)
        self.index()  # files the first run hashed while racy are trusted from here on


def tracked(bench: Bench) -> list[str]:
    return [p for p in bench.git("ls-files", "-z")[1].split("\0") if p]


def prepare(source: Path, root: Path, switch: int, log: Any) -> None:
    """A git repository at root with branches main and switch (switch files modified), on main."""
    log(f"copying {source} -> {root}")
    shutil.copytree(source, root, symlinks=True, ignore=shutil.ignore_patterns(".ragraf", ".git"))
    bench = Bench(root, root.parent / "home")
    bench.git("init", "-q", "-b", "main")
    bench.git("add", "-A")
    bench.git("commit", "-q", "-m", "base")
    # Spread over the tree: every n-th tracked source file, so many folders change, as in a real pull.
    sources = [p for p in tracked(bench) if p.endswith(".py")]
    step = max(1, len(sources) // switch)
    bench.git("checkout", "-q", "-b", "switch")
    for rel in sources[::step][:switch]:
        with (root / rel).open("a", encoding="utf-8") as fh:
            fh.write("\n# changed on the switch branch\n")
    bench.git("commit", "-q", "-am", f"{switch} files changed")
    bench.git("checkout", "-q", "main")


def run(args: argparse.Namespace) -> dict[str, Any]:
    log = (lambda s: None) if args.json else (lambda s: print(s, file=sys.stderr, flush=True))
    source = args.corpus.resolve() if args.corpus else corpora.DATA_DIR / "speed"
    if not args.corpus and not corpora.is_ready("speed"):
        corpora.prepare_speed()
    work = args.work or Path(tempfile.mkdtemp(prefix="ragraf-change-", dir=args.tmp))
    root, home = work / "corpus", work / "home"
    fresh = not (root / ".git").is_dir()
    try:
        if fresh:
            prepare(source, root, args.switch, log)
        bench = Bench(root, home)
        log("cold index ..." if fresh else "settling the prepared copy ...")
        cold_cpu, cold = bench.index()
        bench.settle()
        files = len(tracked(bench))
        on = bench.git("rev-parse", "--abbrev-ref", "HEAD")[1].strip()
        edit_target = next(p for p in sorted(tracked(bench)) if p.endswith(".txt") or p.endswith(".rst"))
        rows: dict[str, dict[str, Any]] = {}

        watch = Watch(root, bench.env) if args.server else None
        if watch is not None:
            log("waiting for `ragraf watch` ...")
            watch.next_run(120)  # its first run, against what the last index left
            time.sleep(SETTLE_S)

        def change(name: str, make: Any) -> None:
            runs = []
            for n in range(args.repeat):
                served = watch.cpu() if watch is not None else 0.0
                if watch is not None:
                    watch.drain()
                change_cpu = make(n)
                if watch is not None and name != "no_change" and not watch.next_run(30):
                    log(f"{name}: the watch committed no run within 30 s")
                git_cpu, _ = bench.git("status", "--porcelain")
                cpu, report = bench.index()
                if watch is not None:  # what the watch spent on the change and on answering
                    cpu += watch.cpu() - served
                runs.append((cpu, change_cpu + git_cpu, git_cpu, report))
                bench.settle()
            cpu = statistics.median(r[0] for r in runs)
            floor = statistics.median(r[1] for r in runs)
            status = statistics.median(r[2] for r in runs)
            last = runs[-1][3]
            rows[name] = {
                "ragraf_cpu_s": round(cpu, 3), "floor_cpu_s": round(floor, 3), "git_status_cpu_s": round(status, 3),
                "ratio": round(cpu / floor, 2) if floor else None,
                "ratio_to_git_status": round(cpu / status, 2) if status else None,
                "files": last.get("files"), "files_read": last.get("files_read"),
                **({"target": TARGETS[name], "met": cpu / floor <= TARGETS[name]} if name in TARGETS and floor else {}),
            }  # fmt: skip
            log(f"{name}: {rows[name]}")

        def nothing(_n: int) -> float:
            return 0.0

        def edit(n: int) -> float:
            with (root / edit_target).open("a", encoding="utf-8") as fh:
                fh.write(f"\nchange-cost edit {time.time_ns()} {n}\n")
            return 0.0

        def new_file(n: int) -> float:
            # Folders that hold indexed source (not Django.egg-info, which the rules leave out).
            folder = (
                root
                / sorted({str(Path(p).parent) for p in tracked(bench) if "/" in p and p.endswith(".py")})[
                    n % 7
                ]
            )
            (folder / f"change_cost_{time.time_ns()}.py").write_text(f"def added_{n}():\n    return {n}\n")
            return 0.0

        state = {"on": on}

        def switch(_n: int) -> float:
            state["on"] = "switch" if state["on"] == "main" else "main"
            return bench.git("checkout", "-q", state["on"])[0]

        try:
            for name, make in (
                ("no_change", nothing),
                ("edit", edit),
                ("new_file", new_file),
                ("switch", switch),
            ):
                if not args.only or name in args.only:
                    change(name, make)
        finally:
            if watch is not None:
                watch.stop()
        return {
            "corpus": str(source), "files": files, "repeat": args.repeat, "switch_files": args.switch,
            "cold_index_cpu_s": round(cold_cpu, 1) if fresh else None, "cold_files": cold.get("files"),
            "changes": rows, "work": str(work) if args.keep or args.work else None,
            "server": "watch" if args.server else None,
        }  # fmt: skip
    finally:
        if not args.keep and not args.work:
            shutil.rmtree(work, ignore_errors=True)


def render(summary: dict[str, Any]) -> None:
    how = "through a running `ragraf watch`, its CPU counted" if summary.get("server") else "in process"
    print(f"{summary['files']} files, CPU-seconds, median of {summary['repeat']}, {how}")
    print(f"{'change':<10} {'ragraf':>8} {'floor':>8} {'ratio':>7} {'vs status':>10}  target")
    for name, row in summary["changes"].items():
        target = f"<= {row['target']}x {'met' if row['met'] else 'MISSED'}" if "target" in row else ""
        print(f"{name:<10} {row['ragraf_cpu_s']:>8.3f} {row['floor_cpu_s']:>8.3f} {row['ratio']!s:>7}"
              f" {row['ratio_to_git_status']!s:>10}  {target}")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--corpus", type=Path, help="a folder or git repository to copy (default: the speed corpus)"
    )
    ap.add_argument("--switch", type=int, default=150, help="files the two branches differ in")
    ap.add_argument("--repeat", type=int, default=3, help="measurements per change (median kept)")
    ap.add_argument("--only", action="append", choices=("no_change", "edit", "new_file", "switch"),
                    help="measure only this change (repeatable)")  # fmt: skip
    ap.add_argument("--work", type=Path, help="a work folder to prepare, or reuse when already prepared")
    ap.add_argument("--tmp", default=None, help="where the temporary copy goes (default: the system temp)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary copy")
    ap.add_argument("--json", action="store_true", help="print the JSON summary instead of the table")
    ap.add_argument("--server", action="store_true",
                    help="with a `ragraf watch` running: each change is indexed by the watch and the CLI's "
                    "index is answered by it; the watch's CPU is counted with the CLI's")  # fmt: skip
    args = ap.parse_args(argv)
    summary = run(args)
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        render(summary)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
