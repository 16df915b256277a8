"""What the campaigns share: corpora, the real CLI in a subprocess, the index file read directly,
process-tree memory sampling, deterministic edits and a description of the machine."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import sysconfig
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragraf.store.sqlite.sql import unpack_text

REPO = Path(__file__).resolve().parents[1]
RESULTS_DIR = REPO / "reliability" / "results"


def use_test_helpers() -> None:
    """Make tests/ importable (the fake embedding server, the adapter helpers) without copying them."""
    for folder in (REPO / "tests", REPO / "tests" / "adapters"):
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))


# corpora --------------------------------------------------------------------------------------

STDLIB = Path(sysconfig.get_paths()["stdlib"])


def copy_stdlib(dest: Path, packages: tuple[str, ...], max_files: int | None = None) -> int:
    """Copy stdlib packages (sources only, no tests, no caches) under dest; returns files copied."""
    n = 0
    for name in packages:
        src = STDLIB / name
        for path in sorted(src.rglob("*")):
            if max_files is not None and n >= max_files:
                return n
            rel = path.relative_to(STDLIB)
            if (
                not path.is_file()
                or "__pycache__" in rel.parts
                or "test" in rel.parts
                or "tests" in rel.parts
            ):
                continue
            if path.suffix not in (".py", ".txt", ".rst", ".md", ".cfg", ".toml", ".json"):
                continue
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
            n += 1
    return n


class Editor:
    """Deterministic edits of a corpus: modify, create and delete files; keeps what it wrote."""

    def __init__(self, root: Path, seed: int) -> None:
        self.root = root
        self.rng = random.Random(seed)
        self.serial = 0

    def files(self) -> list[Path]:
        return sorted(
            p for p in self.root.rglob("*.py") if p.is_file() and not any(s.startswith(".") for s in p.parts)
        )

    def modify(self, path: Path) -> None:
        self.serial += 1
        n = self.serial
        text = path.read_text(encoding="utf-8", errors="replace")
        lines = text.split("\n")
        at = self.rng.randrange(len(lines) + 1)
        # A comment line somewhere (shifts every line after it) and a new function at the end.
        lines.insert(at, f"# reliability edit {n}")
        body = "\n".join(lines).rstrip("\n")
        body += f"\n\n\ndef reliability_edit_{n}(value):\n    return value + {n}\n"
        path.write_text(body, encoding="utf-8")

    def create(self) -> Path:
        self.serial += 1
        n = self.serial
        folder = self.rng.choice(sorted({p.parent for p in self.files()} or {self.root}))
        path = folder / f"reliability_new_{n}.py"
        path.write_text(
            f'"""Created by the reliability campaign ({n})."""\n\n\nclass ReliabilityCreated{n}:\n'
            f"    def value(self):\n        return {n}\n",
            encoding="utf-8",
        )
        return path

    def delete(self) -> Path | None:
        created = sorted(self.root.rglob("reliability_new_*.py"))
        if not created:
            return None
        path = self.rng.choice(created)
        path.unlink()
        return path

    def round(self, modify: int, create: int = 1, delete: int = 1) -> dict[str, int]:
        """One round of edits: `modify` files changed, some created and deleted."""
        files = self.files()
        for path in self.rng.sample(files, min(modify, len(files))):
            self.modify(path)
        deleted = sum(self.delete() is not None for _ in range(delete))
        for _ in range(create):
            self.create()
        return {"modified": min(modify, len(files)), "created": create, "deleted": deleted}


# the CLI ------------------------------------------------------------------------------------------


def base_env(home: Path, cache: Path, embedder: str = "none", **extra: str) -> dict[str, str]:
    """The environment of a ragraf subprocess: private home and cache, one embedder. Compiled
    bytecode is kept (beside the cache), as an installed ragraf has it: with PYTHONDONTWRITEBYTECODE
    (set in some containers) every command would compile its modules again, 0.09 CPU-s each."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("RAGRAF_") and k != "PYTHONDONTWRITEBYTECODE"
    }
    env.update(
        RAGRAF_HOME=str(home),
        RAGRAF_CACHE_DIR=str(cache),
        RAGRAF_EMBEDDER=embedder,
        RAGRAF_SERVER_IDLE_S="0",  # every command in process: no background server
        PYTHONPYCACHEPREFIX=str(cache.parent / "pycache"),
        PYTHONPATH=str(REPO / "src") + os.pathsep + env.get("PYTHONPATH", ""),
    )
    env.update(extra)
    return env


def ragraf_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "ragraf.cli", *args]


def cli(*args: str, env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """The real `ragraf` command."""
    return subprocess.run(ragraf_cmd(*args), capture_output=True, text=True, env=env, timeout=timeout)


def cli_json(*args: str, env: dict[str, str], timeout: float = 600) -> tuple[int, dict[str, Any]]:
    """(exit code, the JSON it printed) of `ragraf ARGS --json`."""
    out = cli(*args, "--json", env=env, timeout=timeout)
    try:
        data = json.loads(out.stdout.strip().splitlines()[-1]) if out.stdout.strip() else {}
    except ValueError:
        data = {"unparsed_stdout": out.stdout[-2000:]}
    if out.returncode != 0:
        data.setdefault("stderr", out.stderr[-2000:])
    return out.returncode, data


def kill_group(proc: subprocess.Popen[Any]) -> None:
    """SIGKILL a process started with start_new_session=True, and every child it spawned."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def group_alive(pgid: int) -> list[int]:
    """Pids still alive in a process group (zombies excluded)."""
    alive = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            stat = (entry / "stat").read_text()
            fields = stat[stat.rindex(")") + 2 :].split()
            if int(fields[2]) == pgid and fields[0] != "Z":
                alive.append(int(entry.name))
    return alive


# the index file, read directly ----------------------------------------------------------------


def index_db_path(root: Path, env: dict[str, str]) -> Path:
    """Where ragraf keeps the index of root under env (RAGRAF_HOME)."""
    from ragraf.config import load_settings

    return load_settings(root, env=env).db_path


@contextlib.contextmanager
def read_db(path: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection to an index file (never creates or migrates anything)."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=60)
    try:
        yield db
    finally:
        db.close()


def revisions(db: sqlite3.Connection) -> list[tuple[int, str, str]]:
    """(rev_no, rev, corpus_hash) of every retained revision."""
    return db.execute("SELECT rev_no, rev, corpus_hash FROM revisions ORDER BY rev_no").fetchall()


def revision_digest(db: sqlite3.Connection, rev_no: int) -> str:
    """sha256 of everything a revision answers from: manifest, chunk texts and lines, facts, refs."""
    h = hashlib.sha256()
    rows = db.execute(
        "SELECT m.path, m.sha256, c.ord, c.start_line, c.end_line, coalesce(c.symbol, ''), c.text "
        "FROM manifest m JOIN chunks c ON c.content_id = m.content_id WHERE m.rev_no = ? "
        "ORDER BY m.path, c.ord",
        (rev_no,),
    )
    for *row, text in rows:
        h.update(json.dumps([*row, unpack_text(text)]).encode())
    facts = db.execute(
        "SELECT m.path, f.kind, f.name, f.line, f.end_line FROM manifest m JOIN facts f "
        "ON f.content_id = m.content_id WHERE m.rev_no = ? ORDER BY m.path, f.line, f.name, f.kind",
        (rev_no,),
    )
    for row in facts:
        h.update(json.dumps(row).encode())
    refs = db.execute(
        "SELECT m.path, r.name, r.sites FROM manifest m JOIN ref_sites r ON r.content_id = m.content_id "
        "WHERE m.rev_no = ? ORDER BY m.path, r.name",
        (rev_no,),
    )
    for row in refs:
        h.update(json.dumps(row).encode())
    return h.hexdigest()


# memory -----------------------------------------------------------------------------------------


def _tree(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            stat = (entry / "stat").read_text()
            ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
            children.setdefault(ppid, []).append(int(entry.name))
    out, stack = [], [pid]
    while stack:
        p = stack.pop()
        out.append(p)
        stack.extend(children.get(p, []))
    return out


def _rss_bytes(pid: int) -> int:
    with contextlib.suppress(OSError, ValueError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def _pss_bytes(pid: int) -> int:
    """Proportional set size: a page shared by n processes counts 1/n in each, so PSS sums across
    a tree where RSS counts a shared page (the interpreter, libraries) once per process."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    return 0


def _io_counters(pid: int) -> dict[str, int]:
    """/proc/PID/io: write_bytes (what the process caused to be written to storage), wchar (what it
    passed to write calls) and their read counterparts."""
    out: dict[str, int] = {}
    with contextlib.suppress(OSError, ValueError):
        for line in Path(f"/proc/{pid}/io").read_text().splitlines():
            name, value = line.split(":")
            out[name] = int(value)
    return out


@dataclass
class TreeRss:
    """Polls the resident memory of a process and all its descendants (summed) until stopped: RSS
    (a page shared by a fork counted in each process) and PSS (shared pages split between their
    processes: the honest sum), the main process and the rest apart, and the main process's I/O
    counters at the last poll."""

    pid: int
    interval_s: float = 0.1
    peak_total: int = 0
    peak_single: int = 0
    peak_processes: int = 0
    peak_main: int = 0
    peak_others: int = 0  # the descendants' RSS summed (workers, the resource tracker)
    peak_pss_total: int = 0
    main_io: dict[str, int] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> TreeRss:
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.is_set():
            pids = _tree(self.pid)
            sizes = [_rss_bytes(p) for p in pids]
            self.peak_total = max(self.peak_total, sum(sizes))
            self.peak_single = max(self.peak_single, max(sizes, default=0))
            self.peak_processes = max(self.peak_processes, len([s for s in sizes if s]))
            self.peak_main = max(self.peak_main, sizes[0] if sizes else 0)
            self.peak_others = max(self.peak_others, sum(sizes[1:]))
            self.peak_pss_total = max(self.peak_pss_total, sum(_pss_bytes(p) for p in pids))
            self.main_io = _io_counters(self.pid) or self.main_io
            self._stop.wait(self.interval_s)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


# the machine ------------------------------------------------------------------------------------


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    cpu = platform.processor() or ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem = 0
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem = int(line.split()[1]) * 1024
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, check=False
    ).stdout.strip()
    return {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "host": platform.node(),
        "os": f"{platform.system()} {platform.release()}",
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": round(mem / 2**30, 1),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "ragraf_commit": commit,
        "loadavg": loadavg(),
    }


def invoked_command() -> str:
    """The command line that started this process, as one would type it from the repository."""
    import shlex

    module = Path(sys.argv[0]).stem
    return f"python -m reliability.{module} " + " ".join(shlex.quote(a) for a in sys.argv[1:])


def save_result(name: str, data: dict[str, Any], command: str | None = None) -> Path:
    """Write a campaign's figures to reliability/results/NAME.json (the report reads them), with the
    command that reproduces them and the machine they were measured on."""
    data = {**data, "command": (command or invoked_command()).strip(), "machine": machine()}
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{name}.json"
    path.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
    return path


def children_cpu() -> float:
    """CPU-seconds (user + system) of the waited-for child processes so far: the difference around
    a command is what it cost, whatever the load of a shared machine."""
    import resource

    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return kids.ru_utime + kids.ru_stime


def git_status_cpu(root: Path) -> float:
    """CPU-seconds of one `git status --porcelain` in root: the floor a re-index is held to."""
    before = children_cpu()
    subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, check=True)
    return children_cpu() - before


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0..100) by nearest rank."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]
