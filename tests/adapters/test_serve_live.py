"""`ragraf serve --live` and `ragraf watch`: real subprocesses keep the index up with the disk, and
the guard still checks every answer (the MCP SDK client for the server, JSON lines for watch)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from servers import SERVER_ENV, build_index
from support import git, init_git, settled, write

from ragraf import Index

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")

HANG_S = 90  # only stops a hang: nothing here is timed
# The reads must not refresh a work tree's view themselves: what they find fresh the loop indexed.
NO_LAZY = {"RAGRAF_LAZY_REFRESH_MAX_FILES": "0"}


def module(name: str) -> str:
    return f"def {name}():\n    return 1\n"


def atomic_write(path: Path, text: str) -> None:
    tmp = path.parent / f".{path.name}.swx-tmp"
    tmp.write_text(text)
    os.rename(tmp, path)


@pytest.mark.anyio
async def test_serve_live_answers_an_atomic_save_fresh_over_mcp(tmp_path: Path) -> None:
    root = build_index(tmp_path / "repo")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "ragraf.cli", "serve", "--live", "--root", str(root)],
        env={**os.environ, **SERVER_ENV, **NO_LAZY},
    )
    async with Client(params, read_timeout_seconds=60) as client:
        atomic_write(root / "src/app/live.py", module("saved_while_serving"))
        atomic_write(root / "src/app/retry.py", module("retry_rewritten"))
        for name, path in (
            ("saved_while_serving", "src/app/live.py"),
            ("retry_rewritten", "src/app/retry.py"),
        ):
            deadline = time.monotonic() + HANG_S
            while True:
                env = (await client.call_tool("find_symbol", {"name": name})).structured_content
                if env["state"] == "fresh" and [f["path"] for f in env["results"]] == [path]:
                    break
                assert env["state"] in ("fresh", "drifted")  # before the run: answered, marked
                assert time.monotonic() < deadline, env
                await anyio.sleep(0.05)
        gone = (await client.call_tool("find_symbol", {"name": "retry_with_backoff"})).structured_content
        assert gone["state"] == "fresh" and gone["results"] == []


class Watcher:
    """`ragraf watch --json` in a subprocess, its JSON lines read as they come."""

    def __init__(self, root: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ragraf.cli", "watch", "--json", "--root", str(root)],
            env={**os.environ, **SERVER_ENV, **NO_LAZY},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.runs: list[dict[str, Any]] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.runs.append(json.loads(line))

    def wait_runs(self, n: int) -> None:
        deadline = time.monotonic() + HANG_S
        while len(self.runs) < n:
            assert self.proc.poll() is None, self.proc.stderr.read() if self.proc.stderr else ""
            assert time.monotonic() < deadline, self.runs
            time.sleep(0.05)

    def stop(self, signum: int) -> tuple[int, str]:
        self.proc.send_signal(signum)
        code = self.proc.wait(timeout=HANG_S)
        return code, self.proc.stderr.read() if self.proc.stderr else ""


def defined(root: Path, name: str) -> list[str] | None:
    """Where a fresh read finds name defined; None while the answer is drifted."""
    with Index.open(root, lazy_refresh_max_files=0) as idx:
        env = idx.find_symbol(name)
    return [f["path"] for f in env.to_dict()["results"]] if env.state == "fresh" else None


def wait_defined(root: Path, name: str, paths: list[str]) -> None:
    deadline = time.monotonic() + HANG_S
    while defined(root, name) != paths:
        assert time.monotonic() < deadline, f"{name} never fresh at {paths}"
        time.sleep(0.05)


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "repo"
    write(root, {"src/server.py": module("serve"), "src/retry.py": module("retry")})
    init_git(root)
    git(root, "checkout", "-q", "-b", "wide")
    write(root, {f"gen/m{n:03}.py": module(f"generated_{n}") for n in range(200)})
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "wide")
    git(root, "checkout", "-q", "main")
    settled(root)
    yield root


def test_watch_prints_a_json_line_per_run_coalesces_a_checkout_and_sigterm_exits_0(repo: Path) -> None:
    watcher = Watcher(repo)
    try:
        watcher.wait_runs(1)
        assert watcher.runs[0]["trigger"] == "start" and watcher.runs[0]["mode"] == "inotify"
        atomic_write(repo / "src/server.py", module("serve_saved_atomically"))
        wait_defined(repo, "serve_saved_atomically", ["src/server.py"])
        os.rename(repo / "src/retry.py", repo / "src/server.py")  # a rename over an existing file
        wait_defined(repo, "retry", ["src/server.py"])
        git(repo, "checkout", "-q", "-f", "wide")
        wait_defined(repo, "generated_199", ["gen/m199.py"])
        wait_defined(repo, "generated_0", ["gen/m000.py"])
        runs = len(watcher.runs)
        assert runs <= 1 + 2 * 3 + 5, watcher.runs  # each change a run or two; the checkout a few
        assert all(r["op"] == "watch" and r["index_rev"] for r in watcher.runs)
        assert sum(r["files"]["added"] for r in watcher.runs[1:]) >= 200
    finally:
        code, err = watcher.stop(signal.SIGTERM)
    assert code == 0, err
    assert "stopped after" in err and "answers" in err and "Traceback" not in err


def test_watch_interrupted_by_ctrl_c_exits_130_and_says_what_answers(repo: Path) -> None:
    watcher = Watcher(repo)
    watcher.wait_runs(1)
    code, err = watcher.stop(signal.SIGINT)
    assert code == 130, err
    assert "interrupted after 1 run;" in err and "Traceback" not in err


def test_serve_live_ends_on_sigterm_with_exit_0_while_its_client_keeps_stdin_open(tmp_path: Path) -> None:
    root = build_index(tmp_path / "repo")
    proc = subprocess.Popen(
        [sys.executable, "-m", "ragraf.cli", "serve", "--live", "--root", str(root)],
        env={**os.environ, **SERVER_ENV},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        seen = ""
        while "watching" not in seen:  # the live loop is up
            line = proc.stderr.readline()
            assert line, seen
            seen += line
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=HANG_S) == 0
        assert "Traceback" not in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
