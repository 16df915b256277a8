"""Live campaign: `ragraf watch` keeps a generated repository's index up while a script makes
--edits edits (default 1,000), and a reader checks each one.

The edits, in a fixed random order from --seed: a file written in place, a file saved through a
temp file and a rename (as editors and agents save; grepai#225 lost those), a new file, a file
renamed over another, a delete, a new folder with a file, and every --checkout-every edits a
branch switch that changes --checkout-files files (main <-> other). Each edit defines (or removes)
uniquely named functions; after it, a reader in this process (an Index kept open, as a server's)
asks `find_symbol` after each run the watch reports (and every RECHECK_S) until the answer is
fresh (the guard found the disk equal to the revision) and every name of the edit is where the
script put it. Its wait is the edit's latency; an edit not seen within --give-up-s is lost. At the
end every name the script wrote is looked up once more (lost changes: 0 is the target).

Figures: latency p50/p95/max and the share within 1 s (wall time on this machine, which other
processes share: the load is recorded), runs and runs per edit (coalescing), CPU-seconds of the
watch process tree for the edits (its cold index apart) and of git (the floor: `git status`,
measured in the same run), lost changes.
Target (issue 28): after each of 1,000 edits the next read is fresh within 1 s, 0 lost changes.

    python -m reliability.live [--files 5000] [--edits 1000] [--checkout-files 1000]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import resource
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from reliability.common import _tree, base_env, loadavg, percentile, ragraf_cmd, save_result
from reliability.scale import _git, generate

POLL_S = 0.05  # the reader's own reads share the machine: not too often
RECHECK_S = 1.0  # between runs, the reader looks again this often


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _self_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _process_cpu(pid: int) -> float:
    """CPU-seconds of a running process and its descendants (the forkserver and the workers of its
    runs), with the children each reaped."""
    ticks = 0
    for member in _tree(pid):
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{member}/stat").read_text().rsplit(")", 1)[1].split()
            ticks += sum(int(x) for x in fields[11:15])
    return ticks / os.sysconf("SC_CLK_TCK")


def module(*names: str) -> str:
    return "".join(f"def {name}(value):\n    return value + {len(name)}\n\n\n" for name in names)


class Script:
    """The edits and what each leaves: where every name it wrote is defined now (None: nowhere)."""

    def __init__(self, root: Path, seed: int, checkout_files: int) -> None:
        self.root = root
        self.rng = random.Random(seed)
        self.where: dict[str, str | None] = {}  # name -> path defining it, None once gone
        self.names_of: dict[str, list[str]] = {}  # a file the script owns -> names it defines
        self.branch = "main"
        self.checkout_files = checkout_files
        self.git_cpu = 0.0
        self.serial = 0

    def git(self, *args: str) -> None:
        before = _children_cpu()
        _git(self.root, *args)
        self.git_cpu += _children_cpu() - before

    def prepare_branches(self) -> None:
        """main holds branchy/ files defining branch_main_K; `other` changes each to branch_other_K."""
        folder = self.root / "branchy"
        for k in range(self.checkout_files):
            sub = folder / f"d{k // 50:03d}"
            sub.mkdir(parents=True, exist_ok=True)
            (sub / f"b{k:04d}.py").write_text(module(f"branch_main_{k}"))
        _git(self.root, "add", "-A")
        _git(self.root, "commit", "-q", "-m", "main")
        _git(self.root, "checkout", "-q", "-b", "other")
        for k in range(self.checkout_files):
            (folder / f"d{k // 50:03d}" / f"b{k:04d}.py").write_text(module(f"branch_other_{k}"))
        _git(self.root, "commit", "-q", "-am", "other")
        _git(self.root, "checkout", "-q", "main")

    def _new_name(self, kind: str) -> str:
        self.serial += 1
        return f"live_{kind}_{self.serial}"

    def _owned(self) -> list[str]:
        return sorted(self.names_of)

    def _write(self, rel: str, names: list[str], atomic: bool) -> None:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        text = module(*names)
        if atomic:
            tmp = path.parent / f".{path.name}.tmp{self.serial}"
            tmp.write_text(text)
            os.rename(tmp, path)
        else:
            path.write_text(text)
        for old in self.names_of.get(rel, []):
            if old not in names:
                self.where[old] = None
        self.names_of[rel] = names
        for name in names:
            self.where[name] = rel

    def edit(self, number: int, checkout_every: int) -> tuple[str, dict[str, str | None]]:
        """Make edit `number`; (its kind, the names it must leave where, None for nowhere)."""
        if checkout_every and number % checkout_every == checkout_every - 1:
            return self.checkout()
        owned = self._owned()
        kind = self.rng.choices(
            ["in_place", "atomic", "create", "rename_over", "delete", "new_folder"],
            [30, 30, 15, 10, 8, 7],
        )[0]
        if kind in ("rename_over", "delete") and len(owned) < 3:
            kind = "create"
        if kind in ("in_place", "atomic") and not owned:
            kind = "create"
        if kind == "create":
            name = self._new_name("new")
            rel = f"live/n{self.serial:05d}.py"
            self._write(rel, [name], atomic=self.rng.random() < 0.5)
            return kind, {name: rel}
        if kind == "new_folder":
            name = self._new_name("folder")
            rel = f"live/dir{self.serial:05d}/sub/m.py"
            self._write(rel, [name], atomic=False)
            return kind, {name: rel}
        if kind in ("in_place", "atomic"):
            rel = self.rng.choice(owned)
            kept = self.names_of[rel][-2:]  # a file keeps its last names; older ones go
            name = self._new_name("edit")
            gone = [n for n in self.names_of[rel] if n not in kept]
            self._write(rel, [*kept, name], atomic=kind == "atomic")
            return kind, {name: rel, **dict.fromkeys(gone)}
        if kind == "rename_over":
            source, target = self.rng.sample(owned, 2)
            moved, lost = self.names_of.pop(source), self.names_of.pop(target)
            os.rename(self.root / source, self.root / target)
            self.names_of[target] = moved
            for name in lost:
                self.where[name] = None
            for name in moved:
                self.where[name] = target
            return kind, {**dict.fromkeys(lost), **dict.fromkeys(moved, target)}
        rel = self.rng.choice(owned)
        (self.root / rel).unlink()
        names = self.names_of.pop(rel)
        for name in names:
            self.where[name] = None
        return "delete", dict.fromkeys(names)

    def checkout(self) -> tuple[str, dict[str, str | None]]:
        """A branch switch changing checkout_files files; the script's own edits ride along."""
        target = "other" if self.branch == "main" else "main"
        self.git("checkout", "-q", target)
        self.branch = target
        gone = "main" if target == "other" else "other"
        expect: dict[str, str | None] = {}
        for k in sorted({0, self.checkout_files - 1, self.rng.randrange(self.checkout_files)}):
            rel = f"branchy/d{k // 50:03d}/b{k:04d}.py"
            expect[f"branch_{target}_{k}"] = rel
            expect[f"branch_{gone}_{k}"] = None
        return "checkout", expect


class Reader:
    """One Index kept open, as a server's reader; it never refreshes a work tree's view itself."""

    def __init__(self, root: Path, home: str, embedder: str) -> None:
        from ragraf import Index

        self.idx = Index.open(root, home=home, embedder=embedder, lazy_refresh_max_files=0)
        self.reads = 0

    def holds(self, expect: dict[str, str | None]) -> bool:
        """Whether fresh answers put every name where expected."""
        for name, path in expect.items():
            self.reads += 1
            env = self.idx.find_symbol(name)
            if env.state != "fresh":
                return False
            paths = [f["path"] for f in env.to_dict()["results"]]
            if paths != ([path] if path else []):
                return False
        return True


class Watch:
    """`ragraf watch --json` in a subprocess; its run lines collected."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            ragraf_cmd("watch", "--json", "--root", str(root)),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.runs: list[dict[str, Any]] = []
        self.ran = threading.Event()  # set when a run line arrives: the reader wakes at once
        self.notes: list[str] = []
        threading.Thread(
            target=self._lines, args=(self.proc.stdout, self.runs, _stamped), daemon=True
        ).start()
        threading.Thread(
            target=self._lines, args=(self.proc.stderr, self.notes, str.strip), daemon=True
        ).start()

    def _lines(self, stream: Any, into: list[Any], parse: Callable[[str], Any]) -> None:
        for line in stream:
            into.append(parse(line))
            self.ran.set()

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=600)


def _stamped(line: str) -> dict[str, Any]:
    """A run line, with when it arrived here (`_at`, this machine's monotonic clock)."""
    return {**json.loads(line), "_at": time.monotonic()}


class Edit:
    """One edit's timeline, split by part: from the write until the watch saw its first event
    (`detect`), gathering the burst (`settle`: the run's lag less its duration), the run (`run`:
    discovery of the named paths, hashing, chunking, commit), and the reader (`read`: from the run's
    line to the fresh answer, its own checks included; a check that fails waits for the next run)."""

    def __init__(self, written: float) -> None:
        self.written = written
        self.checks: list[tuple[float, float, int, bool]] = []  # start, end, runs seen, held

    def check(self, watch: Watch, reader: Reader, expect: dict[str, str | None]) -> bool:
        start, runs = time.monotonic(), len(watch.runs)
        held = reader.holds(expect)
        self.checks.append((start, time.monotonic(), runs, held))
        return held

    def parts(self, watch: Watch) -> dict[str, float] | None:
        if not self.checks or not self.checks[-1][3] or not self.checks[-1][2]:
            return None
        start, end, runs, _held = self.checks[-1]
        run = watch.runs[runs - 1]  # the last run reported before the check that held
        first_event = run["_at"] - run["lag_s"]
        return {
            "detect": first_event - self.written,
            "settle": run["lag_s"] - run["duration_s"],
            "run": run["duration_s"],
            "read": end - run["_at"],
            "last_check": end - start,
            "failed_checks": float(len(self.checks) - 1),
        }


def _wait(check: Callable[[], bool], give_up_s: float) -> float | None:
    t0 = time.monotonic()
    while not check():
        if time.monotonic() - t0 > give_up_s:
            return None
        time.sleep(POLL_S)
    return time.monotonic() - t0


def _after_runs(watch: Watch, seen: int, check: Callable[[], bool], give_up_s: float) -> float | None:
    """Seconds until check() holds, asked as soon as the watch reports a run (and every RECHECK_S):
    a reader polling all the time would take the CPU the watch needs on a small machine."""
    t0 = last = time.monotonic()
    while True:
        now = time.monotonic()
        if len(watch.runs) > seen or now - last >= RECHECK_S:
            seen, last = len(watch.runs), now
            if check():
                return time.monotonic() - t0
        if now - t0 > give_up_s:
            return None
        watch.ran.wait(timeout=min(RECHECK_S, give_up_s))
        watch.ran.clear()


def _spread(values: list[float]) -> dict[str, float]:
    return {"p50": round(percentile(values, 50), 3), "p95": round(percentile(values, 95), 3),
            "max": round(max(values, default=0.0), 3)}  # fmt: skip


def campaign(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="ragraf-live-"))
    root = work / "repo"
    root.mkdir()
    corpus = generate(root, args.files, seed=args.seed)
    _git(root, "init", "-q", "-b", "main")
    script = Script(root, args.seed, args.checkout_files)
    script.prepare_branches()
    env = base_env(work / "home", work / "cache", args.embedder, RAGRAF_LAZY_REFRESH_MAX_FILES="0")

    status_cpu = []
    for _ in range(20):  # the floor: asking git what changed
        before = _children_cpu()
        subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, check=True)
        status_cpu.append(_children_cpu() - before)

    before_watch = _children_cpu()
    watch = Watch(root, env)
    t0 = time.monotonic()
    if _wait(lambda: len(watch.runs) >= 1, 3600) is None:
        raise SystemExit(f"watch never caught up: {watch.notes[-5:]}")
    cold_s = time.monotonic() - t0
    cold_cpu = _process_cpu(watch.proc.pid)
    reader = Reader(root, env["RAGRAF_HOME"], args.embedder)
    reader_cpu0 = _self_cpu()
    runs_after_cold = len(watch.runs)
    latencies: dict[str, list[float]] = {}
    parts: dict[str, list[float]] = {}
    late_by_kind: dict[str, list[float]] = {}
    lost: list[dict[str, Any]] = []
    load = [loadavg()]
    for number in range(args.edits):
        seen = len(watch.runs)
        kind, expect = script.edit(number, args.checkout_every)
        edit = Edit(time.monotonic())
        took = _after_runs(
            watch, seen, lambda edit=edit, expect=expect: edit.check(watch, reader, expect), args.give_up_s
        )
        if (split := edit.parts(watch)) is not None:
            for part, value in split.items():
                parts.setdefault(part, []).append(value)
            late_by_kind.setdefault(kind, []).append(split["failed_checks"])
        if took is None:
            lost.append({"edit": number, "kind": kind, "expect": expect})
        else:
            latencies.setdefault(kind, []).append(took)
        if number % 100 == 99:
            load.append(loadavg())
            print(
                f"{number + 1} edits, {len(watch.runs) - runs_after_cold} runs, {len(lost)} lost", flush=True
            )
    final_missing = [name for name, path in script.where.items() if not reader.holds({name: path})]
    reader_cpu = _self_cpu() - reader_cpu0
    watch_cpu = _process_cpu(watch.proc.pid) - cold_cpu  # the edits' runs, not the cold index
    code = watch.stop()
    total_cpu = _children_cpu() - before_watch - script.git_cpu
    reader.idx.close()
    shutil.rmtree(work, ignore_errors=True)

    every = sorted(t for ts in latencies.values() for t in ts)
    edits = args.edits
    runs = len(watch.runs) - runs_after_cold
    floor = sum(status_cpu) / len(status_cpu)
    return {
        "corpus": {**corpus, "branch_files": args.checkout_files},
        "edits": edits,
        "edits_by_kind": {k: len(v) for k, v in sorted(latencies.items())},
        "cold_index_s": round(cold_s, 1),
        "latency_s": {
            "p50": round(percentile(every, 50), 3),
            "p95": round(percentile(every, 95), 3),
            "max": round(every[-1], 3) if every else None,
            "within_1s": round(sum(t <= 1.0 for t in every) / max(1, len(every)), 4),
            "by_kind_p95": {k: round(percentile(v, 95), 3) for k, v in sorted(latencies.items())},
        },
        # Where an edit's wait went, by part (seconds; see Edit), and how many edits a first check
        # after a run did not find fresh (it then waits for the next run or RECHECK_S).
        "latency_parts_s": {
            part: _spread(values) for part, values in parts.items() if part != "failed_checks"
        },
        "edits_with_failed_checks": sum(v > 0 for v in parts.get("failed_checks", [])),
        "failed_checks_by_kind": {k: int(sum(v)) for k, v in sorted(late_by_kind.items())},
        "lost_changes": len(lost),
        "lost": lost[:20],
        "final_check_missing": final_missing[:20],
        "final_check_missing_count": len(final_missing),
        "runs": runs,
        "runs_per_edit": round(runs / max(1, edits), 3),
        "overflow_runs": sum(r.get("trigger") == "overflow" for r in watch.runs),
        "run_s": _spread([r["duration_s"] for r in watch.runs[runs_after_cold:]]),
        "run_lag_s": _spread([r["lag_s"] for r in watch.runs[runs_after_cold:]]),
        "largest_runs": sorted(
            (
                {k: r[k] for k in ("run", "trigger", "changed_paths", "duration_s", "lag_s", "files")}
                for r in watch.runs[runs_after_cold:]
            ),
            key=lambda r: -r["duration_s"],
        )[:5],
        "cpu_s": {
            "watch_cold_index": round(cold_cpu, 2),
            "watch_process_incl_cold_and_workers": round(total_cpu, 2),
            "watch_edits": round(watch_cpu, 2),
            "watch_per_edit": round(watch_cpu / max(1, edits), 4),
            "git_status_floor": round(floor, 4),
            "watch_per_edit_over_git_status": round(watch_cpu / max(1, edits) / max(floor, 1e-6), 1),
            "git_checkouts": round(script.git_cpu, 2),
            "reader": round(reader_cpu, 2),
            "reader_reads": reader.reads,
        },
        "watch_exit": code,
        "watch_notes": watch.notes[-10:],
        "loadavg": load,
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=5000, help="generated files besides the branch's")
    parser.add_argument("--edits", type=int, default=1000)
    parser.add_argument("--checkout-files", type=int, default=1000, help="files a branch switch changes")
    parser.add_argument(
        "--checkout-every", type=int, default=100, help="a branch switch every N edits (0: none)"
    )
    parser.add_argument("--give-up-s", type=float, default=30.0, help="an edit not seen by then is lost")
    parser.add_argument("--embedder", default="none")
    parser.add_argument("--seed", type=int, default=28)
    parser.add_argument("--name", default="live")
    return parser.parse_args(argv)


def main() -> None:
    args = parse_args()
    result = campaign(args)
    path = save_result(args.name, result)
    shown = (
        "latency_s",
        "latency_parts_s",
        "edits_with_failed_checks",
        "failed_checks_by_kind",
        "lost_changes",
    )
    print(json.dumps({k: result[k] for k in (*shown, "runs", "run_s", "cpu_s", "loadavg")}, indent=1))
    print(f"saved {path}")


if __name__ == "__main__":
    main()
