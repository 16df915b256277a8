"""The MCP path as an agent takes it, for the harnesses: a real `ragraf serve` over stdio driven by the
MCP SDK's client, `search` called with the tool's default top_k, and the results read from the text
the agent reads (within the byte budget), not from the structured content.

    idx = McpIndex(Index.open(root, home=...))   # index() runs in-process; search() goes over MCP

Run alone, it checks the path on the shared bench: for each query, the MCP text's citations at the
default top_k against the library's top 10 (existing index homes, default embedder).

    python benchmarks/mcp_path.py --repos express,zod
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
import threading
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# A result's head line in the search text (api/render.py): `path:start-end  symbol  [kind(, STALE)]`.
_CITATION = re.compile(r"^(\S+):(\d+)-(\d+)(?:  .*)?  \[(?:code|test|doc|config)(?:, STALE)?\]$", re.M)


@dataclass(frozen=True)
class Cited:
    """A result as the text names it."""

    path: str
    start_line: int
    end_line: int


@dataclass
class McpAnswer:
    """What the agent got: the citations in its text, in order, and the whole text."""

    results: list[Cited]
    text: str
    structured: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return self.structured


def citations(text: str) -> list[Cited]:
    """The `path:start-end` citations of a search text, in the order it gives them, each once."""
    seen: set[tuple[str, int, int]] = set()
    out = []
    for m in _CITATION.finditer(text):
        key = (m.group(1), int(m.group(2)), int(m.group(3)))
        if key not in seen:
            seen.add(key)
            out.append(Cited(*key))
    return out


class McpIndex:
    """An Index whose searches go through the MCP server; `top_k` is the tool's default unless the
    caller pins one (the harness passes k=10, which the agent never does)."""

    def __init__(self, index: Any, top_k: int | None = None, env: dict[str, str] | None = None) -> None:
        self._index = index
        self._top_k = top_k
        self._env = env or {}
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._queue: asyncio.Queue[Any] | None = None
        self._session: Future[None] | None = None

    def index(self, full: bool = False, quiet: bool = True) -> Any:
        return self._index.index(full=full, quiet=quiet)

    async def _serve(self, ready: Future[None]) -> None:
        """One task holds the client from start to end (anyio wants its scopes left where entered)."""
        from mcp import Client
        from mcp.client.stdio import StdioServerParameters

        settings = self._index.settings
        env = {
            **os.environ,
            "RAGRAF_HOME": str(settings.home),
            "RAGRAF_EMBEDDER": settings.embedder,
            **self._env,
        }
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "ragraf.adapters.mcp_server", "--root", str(Path(settings.root))],
            env=env,
        )
        self._queue = asyncio.Queue()
        async with Client(params, read_timeout_seconds=120) as client:
            ready.set_result(None)
            while (item := await self._queue.get()) is not None:
                args, answer = item
                try:
                    result = await client.call_tool("search", args)
                    text = "\n".join(getattr(c, "text", "") for c in result.content)
                    answer.set_result(McpAnswer(citations(text), text, result.structured_content or {}))
                except Exception as exc:  # the harness records the query's error and goes on
                    answer.set_exception(exc)

    def search(self, query: str, k: int = 10, mode: str = "hybrid") -> McpAnswer:
        if self._session is None:
            ready: Future[None] = Future()
            self._session = asyncio.run_coroutine_threadsafe(self._serve(ready), self._loop)
            ready.result(timeout=120)
        args: dict[str, Any] = {"query": query}
        if self._top_k is not None:
            args["top_k"] = self._top_k
        if mode != "hybrid":
            args["mode"] = mode
        answer: Future[McpAnswer] = Future()
        assert self._queue is not None
        self._loop.call_soon_threadsafe(self._queue.put_nowait, (args, answer))
        return answer.result(timeout=300)

    def close(self) -> None:
        if self._session is not None and self._queue is not None:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, None)
            self._session.result(timeout=60)
            self._session = None
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._index.close()


def compare(names: list[str] | None = None) -> dict[str, dict[str, int]]:
    """Per bench repository: queries whose MCP citations are the library's top 10 exactly, a prefix
    of them (the byte budget cut the rest), or something else."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import quality  # the bench's corpora and homes; imported here, quality imports this module

    from ragraf import Index

    out = {}
    for corpus in quality.bench_corpora(names, quality.corpora.SHARED_BENCH):
        home = quality.HOMES_DIR / f"{corpus.name}-default"
        library = Index.open(corpus.root, home=home)
        library.index(quiet=True)
        agent = McpIndex(Index.open(corpus.root, home=home))
        row = {"queries": 0, "same": 0, "cut": 0, "other": 0}
        try:
            for task in corpus.tasks:
                ours = [
                    Cited(r.path, r.start_line, r.end_line) for r in library.search(task.query, k=10).results
                ]
                theirs = agent.search(task.query).results
                row["queries"] += 1
                if theirs == ours:
                    row["same"] += 1
                elif ours[: len(theirs)] == theirs:
                    row["cut"] += 1
                else:
                    row["other"] += 1
        finally:
            agent.close()
            library.close()
        out[corpus.name] = row
        print(f"{corpus.name}: {row}", file=sys.stderr)
    return out


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description="MCP search text against the library's top 10, per query")
    ap.add_argument("--repos", default="", help="comma-separated bench repositories (default: all six)")
    rows = compare([r for r in ap.parse_args().repos.split(",") if r] or None)
    total = {k: sum(r[k] for r in rows.values()) for k in ("queries", "same", "cut", "other")}
    print(f"all: {total}")
