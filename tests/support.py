"""Test support: real folders, real git repositories, the real CLI in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path


def write(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def settled(root: Path) -> None:
    """Date every file and folder a minute back, so the index trusts their hashes (none is racy)."""
    past = time.time() - 60
    for dirpath, _dirs, files in os.walk(root):
        for name in [*files, "."]:
            os.utime(os.path.join(dirpath, name), (past, past))


def git(root: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    out = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, env=env, check=True)
    return out.stdout


def init_git(root: Path) -> None:
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "init", "--allow-empty")


def run_cli(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """The real `ragraf` command in a subprocess."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "ragraf.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
    )


def cli_json(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> dict:
    out = run_cli(*args, "--json", cwd=cwd, env=env)
    assert out.returncode == 0, out.stderr + out.stdout
    return json.loads(out.stdout)


SAMPLE = {
    "src/app/server.py": (
        "import socket\n\n\n"
        "class TCPConnector:\n"
        '    """Pool of TCP connections with keep-alive."""\n\n'
        "    def __init__(self, limit=100):\n        self.limit = limit\n\n"
        "    def connect(self, host, port):\n        return resolve_host(host), port\n\n\n"
        "def resolve_host(name):\n    return socket.gethostbyname(name)\n"
    ),
    "src/app/retry.py": (
        "import time\n\n\n"
        "def retry_with_backoff(fn, attempts=5):\n"
        '    """Call fn, retrying with exponential backoff when rate limited."""\n'
        "    for attempt in range(attempts):\n"
        "        try:\n            return fn()\n"
        "        except RateLimited:\n            time.sleep(2 ** attempt)\n"
        "    raise RuntimeError('gave up')\n"
    ),
    "tests/test_server.py": "from app.server import TCPConnector\n\n\ndef test_connector():\n    assert TCPConnector(3).limit == 3\n",
    "docs/guide.md": "---\ntitle: Guide\n---\n# Guide\n\nHow to use the connector.\n\n## Retries\n\nBackoff doubles each time.\n",
    "web/client.ts": "export class HttpClient {\n  request(url: string): Promise<Response> {\n    return fetch(url);\n  }\n}\n",
}


def outliving(pids: list[int] | set[int], seconds: float = 15.0) -> list[int]:
    """Those of the processes still alive after waiting up to `seconds` for them to end; they are
    killed (SIGKILL) so a failing test leaves nothing behind."""
    import signal

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() for pid in pids):
        time.sleep(0.1)
    alive = [pid for pid in pids if Path(f"/proc/{pid}").exists()]
    for pid in alive:
        os.kill(pid, signal.SIGKILL)
    return alive
