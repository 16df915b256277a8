"""Helpers for the adapter tests: a real index, servers in subprocesses, small clients for them."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from support import SAMPLE, write

from ragraf import Index

# Lexical only: fast and deterministic whatever embedder the machine has.
SERVER_ENV = {"RAGRAF_EMBEDDER": "none"}


def build_index(root: Path) -> Path:
    """Write the sample repository under root and index it."""
    root.mkdir(parents=True, exist_ok=True)
    write(root, SAMPLE)
    with Index.open(root, embedder="none") as idx:
        idx.index()
    return root


@contextlib.asynccontextmanager
async def mcp_client(root: Path, env: dict[str, str] | None = None) -> AsyncIterator[Client]:
    """The SDK's stdio client driving `python -m ragraf.adapters.mcp_server --root ROOT`."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "ragraf.adapters.mcp_server", "--root", str(root)],
        env={**os.environ, **SERVER_ENV, **(env or {})},
    )
    async with Client(params, read_timeout_seconds=60) as client:
        yield client


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class HttpServer:
    """A running `python -m ragraf.adapters.http_api` and a tiny client for it."""

    proc: subprocess.Popen[str]
    port: int

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def request(
        self, method: str, path: str, body: bytes | str | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            data = body.encode() if isinstance(body, str) else body
            conn.request(method, path, body=data, headers=headers or {})
            resp = conn.getresponse()
            return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
        finally:
            conn.close()

    def post(
        self, tool: str, args: Any = None, headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, Any]]:
        body = None if args is None else json.dumps(args)
        status, _, raw = self.request(
            "POST", f"/v1/{tool}", body, {"Content-Type": "application/json", **(headers or {})}
        )
        return status, json.loads(raw)


def start_http(root: Path, listen: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "ragraf.adapters.http_api", "--root", str(root), "--listen", listen],
        env={**os.environ, **SERVER_ENV, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_until_up(server: HttpServer, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            raise RuntimeError(f"server exited: {server.proc.stderr.read() if server.proc.stderr else ''}")
        with contextlib.suppress(OSError):
            if server.request("GET", "/healthz")[0] == 200:
                return
        time.sleep(0.05)
    raise RuntimeError("server did not come up")


@contextlib.contextmanager
def running_http(root: Path, env: dict[str, str] | None = None) -> Iterator[HttpServer]:
    port = free_port()
    server = HttpServer(start_http(root, f"127.0.0.1:{port}", env), port)
    try:
        wait_until_up(server)
        yield server
    finally:
        server.proc.terminate()
        try:
            server.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.proc.kill()
            server.proc.wait()
