"""MCP latency of ragraf (issue 7's figures): server start to first answer, and warm `search` p50.

For each corpus: index it into a temporary index home, then drive `python -m ragraf.adapters.mcp_server`
with the MCP SDK's stdio client, as an agent would. "Start to first answer" is the wall time from
spawning the server to the first `search` result (spawn, handshake, open the index, search); "warm"
is the round trip of `tools/call search` on a running server after a few warm-up calls.

    python benchmarks/mcp_latency.py                      # the bench corpora in benchmarks/data
    python benchmarks/mcp_latency.py --corpus ~/src/repo --calls 500 --json
    python benchmarks/mcp_latency.py --embedder none      # lexical only

Targets (issue 7): warm search p50 ≤ 30 ms; start to first answer ≤ 2 s with an existing index.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from ragraf import Index

DATA_DIR = Path(__file__).resolve().parent / "data"
BENCH_CORPORA = {
    "aiohttp": "aiohttp",
    "fastapi": "fastapi",
    "pydantic": "pydantic",
    "express": "lib",
    "zod": "packages/zod/src",
    "trpc": "packages/server/src",
}
QUERIES = (
    "connection pool keep-alive",
    "how are request headers parsed",
    "retry with backoff after a timeout",
    "validate the input and raise an error",
    "cookie",
    "middleware that runs before the handler",
    "serialize the response to JSON",
    "websocket close",
    "where is the router matching paths",
    "stream the body in chunks",
    "ssl certificate verification",
    "redirect",
    "parse query string parameters",
    "schema",
    "error handling when the connection is lost",
    "default timeout",
)


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0..100) by nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def corpora(explicit: list[str]) -> list[tuple[str, Path]]:
    """(name, folder) for each corpus to measure; the bench corpora, else the Python standard library."""
    if explicit:
        return [(Path(p).name, Path(p).expanduser().resolve()) for p in explicit]
    found = [(n, DATA_DIR / n / sub) for n, sub in BENCH_CORPORA.items() if (DATA_DIR / n / sub).is_dir()]
    return found or [("python-stdlib", Path(sysconfig.get_paths()["stdlib"]))]


def copy_corpus(source: Path) -> Path:
    """A temporary copy: nothing is written beside the source, and no enclosing git repo hides its files."""
    copy = Path(tempfile.mkdtemp(prefix="ragraf-mcp-bench-")) / source.name
    skip = ["__pycache__", ".ragraf"]
    if source == Path(sysconfig.get_paths()["stdlib"]):
        skip += ["site-packages", "test", "tests", "idlelib", "lib2to3"]
    shutil.copytree(source, copy, symlinks=True, ignore=shutil.ignore_patterns(*skip))
    return copy


def server_params(root: Path, env: dict[str, str]) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "ragraf.adapters.mcp_server", "--root", str(root)], env=env
    )


async def first_answer_s(root: Path, env: dict[str, str]) -> float:
    """Spawn a server and time until the first search result arrives."""
    t0 = time.perf_counter()
    async with Client(server_params(root, env), read_timeout_seconds=120) as client:
        result = await client.call_tool("search", {"query": QUERIES[0], "top_k": 5})
        elapsed = time.perf_counter() - t0
    if result.is_error:
        raise RuntimeError(result.content[0].text)
    return elapsed


async def warm_round_trips_ms(root: Path, env: dict[str, str], calls: int) -> list[float]:
    """Round trips of `search` on one running server, after warm-up."""
    async with Client(server_params(root, env), read_timeout_seconds=120) as client:
        for q in QUERIES:
            await client.call_tool("search", {"query": q, "top_k": 5})
        times = []
        for i in range(calls):
            t0 = time.perf_counter()
            result = await client.call_tool("search", {"query": QUERIES[i % len(QUERIES)], "top_k": 5})
            times.append((time.perf_counter() - t0) * 1000)
            if result.is_error:
                raise RuntimeError(result.content[0].text)
    return times


def measure(name: str, root: Path, embedder: str | None, calls: int, starts: int) -> dict[str, Any]:
    """Index `root` into a temporary home, then time the MCP server on it."""
    home = Path(tempfile.mkdtemp(prefix="ragraf-bench-home-"))
    env = {**os.environ, "RAGRAF_HOME": str(home)}
    overrides: dict[str, Any] = {"home": home}
    if embedder:
        env["RAGRAF_EMBEDDER"] = embedder
        overrides["embedder"] = embedder
    try:
        t0 = time.perf_counter()
        with Index.open(root, **overrides) as idx:
            report = idx.index().to_dict()
        index_s = time.perf_counter() - t0
        first = [asyncio.run(first_answer_s(root, env)) for _ in range(starts)]
        warm = asyncio.run(warm_round_trips_ms(root, env, calls))
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return {
        "corpus": name,
        "load_average_1m": round(os.getloadavg()[0], 2),
        "files": report["files"]["added"] + report["files"]["unchanged"],
        "chunks": report["chunks"]["total"],
        "index_s": round(index_s, 2),
        "first_answer_s": {"median": round(statistics.median(first), 3), "all": [round(x, 3) for x in first]},
        "warm_search_ms": {
            "calls": len(warm),
            "p50": round(percentile(warm, 50), 2),
            "p95": round(percentile(warm, 95), 2),
            "max": round(max(warm), 2),
        },
    }


def main(argv: list[str] | None = None) -> None:
    """Measure and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", action="append", default=[], help="folder to measure (repeatable)")
    parser.add_argument(
        "--embedder", default=None, help="RAGRAF_EMBEDDER for index and server (default: config)"
    )
    parser.add_argument("--calls", type=int, default=200, help="warm search calls per corpus")
    parser.add_argument("--starts", type=int, default=3, help="server starts per corpus")
    parser.add_argument("--json", action="store_true", help="one JSON object per corpus")
    args = parser.parse_args(argv)
    rows = []
    for name, source in corpora(args.corpus):
        root = copy_corpus(source)
        try:
            rows.append(measure(name, root, args.embedder, args.calls, args.starts))
        finally:
            shutil.rmtree(root.parent, ignore_errors=True)
        row = rows[-1]
        if args.json:
            print(json.dumps(row))
        else:
            warm = row["warm_search_ms"]
            print(
                f"{name:<14} {row['files']:>6} files {row['chunks']:>7} chunks  index {row['index_s']:>6.2f} s  "
                f"start→first answer {row['first_answer_s']['median']:.2f} s  "
                f"warm search p50 {warm['p50']:.1f} ms  p95 {warm['p95']:.1f} ms  ({warm['calls']} calls; "
                f"load {row['load_average_1m']:.1f} on {os.cpu_count()} cores)",
                flush=True,
            )


if __name__ == "__main__":
    main()
