"""What one `ragraf` command costs in CPU on the ~10,000-file speed corpus, against `git status`
and `rg` in the same run (issue 28: a CLI read and a no-change `ragraf index` <= 1.5x `git status`).

On a temporary git repository made from the speed corpus (or --corpus), indexed once lexically
(RAGRAF_EMBEDDER=none), each round runs every command once, interleaved so a load spike on this
shared machine hits them alike; a command's figure is the median over --repeat rounds of the
CPU-seconds of its process and children (resource.getrusage(RUSAGE_CHILDREN)), wall time being
meaningless under load. Commands: `ragraf --version`, `def QuerySet`, `search "queryset filter"
--mode lexical`, `refs QuerySet`, a no-change `index`, and `index` after a one-file edit (a line appended to the
first tracked Python file, restored at the end, past the racy window); floors: `git status`, `rg -n
QuerySet`, and `git status` after the same kind of edit.
Compiled bytecode is kept (in the work dir), as an installed ragraf has it, and one unmeasured
run of each command comes first. Each command runs twice a round: in process (RAGRAF_NO_SERVER=1)
and on the default path, where the first read found no server and started one in the background
(`ragraf serve --socket-only`), which answers the reads over its CLI socket (fastcli.py); the
server's own CPU for each (/proc/PID/stat, itself and its children) is reported beside the
client's, and the sum. Figures and what they mean: docs/speed.md.

    python benchmarks/cli_cpu.py                        # needs python benchmarks/corpora.py speed
    python benchmarks/cli_cpu.py --json --repeat 7
    python benchmarks/cli_cpu.py --work /tmp/cc --keep  # reuse the prepared copy next time
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

try:
    from benchmarks import corpora
except ModuleNotFoundError:  # run as a script: python benchmarks/cli_cpu.py
    import corpora  # type: ignore[no-redef]

GIT_ENV = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.com", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@example.com"}  # fmt: skip
TARGET_RATIO = 1.5  # against git status: every read and the no-change index
EDIT_TARGET_RATIO = 2.0  # a one-file edit, against git status after the same edit
SETTLE_S = 2.2  # past the racy window (RACY_NS, 2 s): files hashed just after their write are trusted


def children_cpu() -> float:
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return kids.ru_utime + kids.ru_stime


def ragraf_cli() -> list[str]:
    here = Path(sys.executable).parent / "ragraf"
    return [str(here)] if here.exists() else [sys.executable, "-m", "ragraf.cli"]


def commands() -> dict[str, list[str]]:
    """What is measured, by name; the floors first."""
    cli = ragraf_cli()
    return {
        "git status": ["git", "status", "--porcelain"],
        "rg -n QuerySet": ["rg", "-n", "QuerySet", "."],
        "ragraf --version": [*cli, "--version"],
        "ragraf def QuerySet": [*cli, "def", "QuerySet"],
        'ragraf search "queryset filter" --mode lexical': [
            *cli,
            "search",
            "queryset filter",
            "--mode",
            "lexical",
        ],
        "ragraf refs QuerySet": [*cli, "refs", "QuerySet"],
        "ragraf index (no change)": [*cli, "index", "-q"],
        EDITED_FLOOR: ["git", "status", "--porcelain"],
        EDITED: [*cli, "index", "-q"],
    }


# Measured after an edit of one file, past the racy window: its floor is git status seeing it.
EDITED_FLOOR, EDITED = "git status (one file edited)", "ragraf index (one file edited)"


def edit_target(root: Path, env: dict[str, str]) -> Path:
    """The file the edited rows change: the first tracked Python file in git's order."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "*.py"], cwd=root, env=env, capture_output=True, check=True
    )
    return root / os.fsdecode(out.stdout.split(b"\0")[0])


def edit(target: Path, n: int) -> None:
    with target.open("a", encoding="utf-8") as fh:
        fh.write(f"\n# cli_cpu edit {n}\n")
    time.sleep(SETTLE_S)


def measured(cmd: list[str], cwd: Path, env: dict[str, str]) -> float:
    """CPU-seconds of one command and its children; a failure stops the benchmark."""
    before = children_cpu()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    cpu = children_cpu() - before
    if proc.returncode != 0 and not (cmd[0] == "rg" and proc.returncode == 1):  # rg: 1 is no match
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}: {(proc.stderr or proc.stdout)[-2000:]}")
    return cpu


def server_cpu(pid: int) -> float:
    """CPU-seconds of a running process and the children it waited for (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")  # utime stime cutime cstime


def background_server(root: Path, env: dict[str, str]) -> int:
    """The pid of the server the CLI starts for root by itself (the default path: a read that found
    none answers in process and starts `ragraf serve --socket-only`), once its socket answers."""
    import socket
    import struct

    from ragraf.fastcli import socket_path

    measured([*ragraf_cli(), "status"], root, env)  # finds no server: starts one
    path = socket_path(os.path.realpath(root), env)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            try:
                probe.connect(path)
                creds = probe.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
                return struct.unpack("3i", creds)[0]
            except OSError:
                time.sleep(0.1)
    raise SystemExit(f"no background server listened on {path}")


def environment(root: Path, home: Path) -> dict[str, str]:
    """The commands' environment. Compiled bytecode is kept (in a folder of the work dir, not the
    checkout), as an installed ragraf has it: without it every run compiles each module again,
    which doubles start-up (PYTHONDONTWRITEBYTECODE=1 in some containers)."""
    env = {**os.environ, **GIT_ENV, "RAGRAF_HOME": str(home), "RAGRAF_EMBEDDER": "none",
           "RAGRAF_CACHE_DIR": str(home.parent / "cache"), "GIT_CEILING_DIRECTORIES": str(root.parent),
           "PYTHONPYCACHEPREFIX": str(home.parent / "pycache"),
           "RAGRAF_SERVER_IDLE_S": "0"}  # fmt: skip
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def prepare(source: Path, root: Path, env: dict[str, str], log: Any) -> None:
    """A git repository at root holding a copy of source, indexed once and settled."""
    log(f"copying {source} -> {root}")
    shutil.copytree(source, root, symlinks=True, ignore=shutil.ignore_patterns(".ragraf", ".git"))
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "base"]):
        subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)
    log("lexical index ...")
    measured([*ragraf_cli(), "index", "-q"], root, env)


def settle(root: Path, env: dict[str, str]) -> None:
    """Two unmeasured index runs past the racy window, so the measured one changes nothing."""
    for _ in range(2):
        time.sleep(SETTLE_S)
        measured([*ragraf_cli(), "index", "-q"], root, env)


def run(args: argparse.Namespace) -> dict[str, Any]:
    log = (lambda s: None) if args.json else (lambda s: print(s, file=sys.stderr, flush=True))
    if shutil.which("rg") is None:
        raise SystemExit("rg is not on PATH: install ripgrep (the benchmark's second floor)")
    source = args.corpus.resolve() if args.corpus else corpora.DATA_DIR / "speed"
    if not args.corpus and not corpora.is_ready("speed"):
        corpora.prepare_speed()
    work = args.work or Path(tempfile.mkdtemp(prefix="ragraf-cli-cpu-", dir=args.tmp))
    root, home = work / "corpus", work / "home"
    env = environment(root, home)
    try:
        if not (root / ".git").is_dir():
            prepare(source, root, env, log)
        settle(root, env)
        cmds = commands()
        target = edit_target(root, env)
        original = target.read_bytes()
        edits = iter(range(1 << 30))
        for cmd in cmds.values():  # unmeasured: compiles the bytecode the measured runs load
            measured(cmd, root, env)
        alone = {**env, "RAGRAF_NO_SERVER": "1"}
        served_env = {**env, "RAGRAF_SOCKET_DIR": str(work / "sockets"), "RAGRAF_SERVER_IDLE_S": "3600"}
        served_env.pop("CI", None)
        server = background_server(root, served_env)
        samples: dict[str, list[float]] = {name: [] for name in cmds}
        served: dict[str, list[float]] = {name: [] for name in cmds}
        spent: dict[str, float] = dict.fromkeys(cmds, 0.0)
        try:
            for _ in range(2):  # unmeasured: the server's second guard of the root arms its watch
                for cmd in cmds.values():
                    measured(cmd, root, served_env)
            for i in range(args.repeat):
                log(f"round {i + 1}/{args.repeat} (load {os.getloadavg()[0]:.1f})")
                for name, cmd in cmds.items():
                    if name in (EDITED, EDITED_FLOOR):
                        edit(target, next(edits))
                    samples[name].append(measured(cmd, root, alone))
                    if name in (EDITED, EDITED_FLOOR):
                        edit(target, next(edits))
                    before = server_cpu(server)
                    served[name].append(measured(cmd, root, served_env))
                    spent[name] += server_cpu(server) - before
        finally:
            os.kill(server, signal.SIGTERM)
            target.write_bytes(original)
        cpu = {name: statistics.median(values) for name, values in samples.items()}
        client = {name: statistics.median(values) for name, values in served.items()}
        server_s = {name: spent[name] / args.repeat for name in cmds}
        rg = cpu["rg -n QuerySet"]
        rows = {}
        for name in cmds:
            floor = cpu[EDITED_FLOOR if name == EDITED else "git status"]
            rows[name] = {
                "cpu_s": round(cpu[name], 4),
                "samples": [round(v, 4) for v in samples[name]],
                "vs_git_status": round(cpu[name] / floor, 2) if floor else None,
                "vs_rg": round(cpu[name] / rg, 2) if rg else None,
                "served_cpu_s": round(client[name], 4),
                "served_samples": [round(v, 4) for v in served[name]],
                "served_vs_git_status": round(client[name] / floor, 2) if floor else None,
                "server_cpu_s": round(server_s[name], 4),  # mean: /proc ticks are 10 ms
                "served_sum_vs_git_status": round((client[name] + server_s[name]) / floor, 2)
                if floor
                else None,
            }
        return {
            "corpus": str(source),
            "files": len(
                subprocess.run(
                    ["git", "ls-files", "-z"], cwd=root, env=env, capture_output=True, check=True
                ).stdout.split(b"\0")
            )
            - 1,  # fmt: skip
            "repeat": args.repeat,
            "load": [round(x, 2) for x in os.getloadavg()],
            "target_vs_git_status": TARGET_RATIO,
            "rows": rows,
        }
    finally:
        if not args.keep and args.work is None:
            shutil.rmtree(work, ignore_errors=True)


def render(result: dict[str, Any]) -> str:
    lines = [
        f"{result['files']} files, median of {result['repeat']} rounds, load {result['load']}",
        f"{'':<48} {'in process':^28} {'default: the background server':^40}",
        f"{'command':<48} {'cpu-s':>7} {'x git status':>13} {'x rg':>6} {'client':>7} {'x git st':>9}"
        f" {'server':>7} {'sum x git st':>13}",
    ]
    for name, row in result["rows"].items():
        lines.append(
            f"{name:<48} {row['cpu_s']:>7.3f} {row['vs_git_status']:>13.2f} {row['vs_rg']:>6.2f}"
            f" {row['served_cpu_s']:>7.3f} {row['served_vs_git_status']:>9.2f} {row['server_cpu_s']:>7.3f}"
            f" {row['served_sum_vs_git_status']:>13.2f}"
        )
    lines.append(
        f"target: every ragraf read and the no-change index <= {result['target_vs_git_status']}x git status;"
        f" the one-file edit <= {EDIT_TARGET_RATIO}x git status after it (its row's floor)"
    )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, help="a folder to copy instead of the speed corpus")
    ap.add_argument("--work", type=Path, help="prepared copy to use (made there when absent)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary copy")
    ap.add_argument("--tmp", help="where the temporary copy goes")
    ap.add_argument("--repeat", type=int, default=5, help="rounds (the median is reported)")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    args = ap.parse_args()
    result = run(args)
    print(json.dumps(result, indent=2) if args.json else render(result))


if __name__ == "__main__":
    main()
