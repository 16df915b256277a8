"""One server for several repositories: `--root A --root B`, a `repo` on every tool, the client's
roots (MCP roots/list), through the SDK's stdio client and over HTTP."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from servers import SERVER_ENV, HttpServer, build_index, free_port, wait_until_up
from support import write

from ragraf import Index

pytestmark = pytest.mark.anyio

OTHER = {
    "lib/billing.py": "def charge_invoice(invoice, card):\n    return card.charge(invoice.total)\n",
    "lib/connector.py": "class TCPConnector:\n    '''Another keep-alive connector.'''\n\n    def connect(self):\n        return 1\n",
}


@pytest.fixture(scope="module")
def two_roots(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("roots")
    first = build_index(base / "app")
    second = base / "billing"
    write(second, OTHER)
    with Index.open(second, embedder="none") as idx:
        idx.index()
    return first, second


def _params(args: list[str], cwd: Path | None = None) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "ragraf.adapters.mcp_server", *args],
        env={**os.environ, **SERVER_ENV},
        cwd=cwd,
    )


@contextlib.asynccontextmanager
async def served(roots: tuple[Path, ...], **client: object) -> AsyncIterator[Client]:
    args = [a for r in roots for a in ("--root", str(r))]
    async with Client(_params(args, client.pop("cwd", None)), read_timeout_seconds=60, **client) as c:  # type: ignore[arg-type]
        yield c


async def test_each_tool_answers_about_the_repo_it_names_and_the_first_by_default(
    two_roots: tuple[Path, Path],
) -> None:
    app, billing = two_roots
    async with served(two_roots) as client:
        default = await client.call_tool("find_symbol", {"name": "charge_invoice"})
        named = await client.call_tool("find_symbol", {"name": "charge_invoice", "repo": "billing"})
        by_path = await client.call_tool("outline", {"path": "lib/billing.py", "repo": str(billing)})
        status = await client.call_tool("status", {"repo": "app"})
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert default.structured_content["repo"] == "app"
    assert default.structured_content["results"] == []
    assert named.structured_content["repo"] == "billing"
    assert named.structured_content["results"][0]["path"] == "lib/billing.py"
    assert named.content[0].text.startswith(f"repo billing ({billing.resolve()})")
    assert "lib/billing.py:1" in named.content[0].text
    assert by_path.is_error is False and by_path.structured_content["repo"] == "billing"
    served_list = status.structured_content["repos"]
    assert [r["name"] for r in served_list] == ["app", "billing"]
    assert f"billing ({billing.resolve()})" in status.content[0].text
    assert all("repo" in t.input_schema["properties"] for t in tools.values())


async def test_a_repo_not_served_is_refused_naming_the_served_ones(
    two_roots: tuple[Path, Path], tmp_path: Path
) -> None:
    app, billing = two_roots
    async with served(two_roots) as client:
        unknown = await client.call_tool("search", {"query": "x", "repo": "web"})
        outside = await client.call_tool("read", {"path": "lib/billing.py", "repo": str(tmp_path)})
        two = await client.call_tool("outline", {"path": "lib/billing.py", "repo": ["app", "billing"]})
        every = await client.call_tool("outline", {"path": "lib/billing.py", "repo": "*"})
        # Confinement stays per root: billing's file is no path of app's.
        escape = await client.call_tool("read", {"path": f"../{billing.name}/lib/billing.py", "repo": "app"})
    for result in (unknown, outside):
        assert result.is_error is True
        error = result.structured_content["error"]
        assert error["code"] == "unknown_repo"
        assert f"app ({app.resolve()})" in error["message"] and "billing" in error["message"]
    assert two.is_error is True and two.structured_content["error"]["code"] == "bad_arguments"
    assert "repo" in two.content[0].text and "repo?: string" in two.content[0].text
    assert every.is_error is True and "only search merges several" in every.content[0].text
    assert escape.is_error is True and escape.structured_content["error"]["code"] == "outside_root"


async def test_search_across_repos_merges_rankings_and_names_each_results_repo(
    two_roots: tuple[Path, Path],
) -> None:
    async with served(two_roots) as client:
        merged = await client.call_tool(
            "search", {"query": "TCPConnector keep-alive", "repo": "*", "top_k": 10}
        )
        listed = await client.call_tool(
            "search", {"query": "TCPConnector keep-alive", "repo": ["billing", "app"], "top_k": 1}
        )
        page2 = await client.call_tool(
            "search", {"query": "TCPConnector keep-alive", "repo": "*", "top_k": 1, "offset": 1}
        )
    env = merged.structured_content
    assert env["repo"] == ["app", "billing"] and set(env["repos"]) == {"app", "billing"}
    repos = {r["repo"] for r in env["results"]}
    assert repos == {"app", "billing"}
    scores = [r["score"] for r in env["results"]]
    assert scores == sorted(scores, reverse=True)
    text = merged.content[0].text
    assert "[billing] lib/connector.py:" in text and "[app] src/app/server.py:" in text
    one = listed.structured_content
    assert len(one["results"]) == 1 and one["results"][0] == {
        **env["results"][0],
        "repo": one["results"][0]["repo"],
    }
    assert one["page"]["next_offset"] == 1 and "call `search` again with offset=1" in listed.content[0].text
    assert page2.structured_content["results"][0]["path"] == env["results"][1]["path"]


async def test_without_root_the_clients_roots_are_served(
    two_roots: tuple[Path, Path], tmp_path: Path
) -> None:
    app, billing = two_roots

    async def list_roots(context: object) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=billing.resolve().as_uri(), name="billing")])

    # The handshake protocol (what agents speak today): the server asks roots/list back.
    async with served((), cwd=tmp_path, list_roots_callback=list_roots, mode="legacy") as client:
        found = await client.call_tool("find_symbol", {"name": "charge_invoice"})
    assert found.is_error is False, found.content[0].text
    assert found.structured_content["repo"] == "billing"
    assert found.structured_content["results"][0]["path"] == "lib/billing.py"


async def test_an_explicit_root_wins_over_the_clients_roots(two_roots: tuple[Path, Path]) -> None:
    app, billing = two_roots

    async def list_roots(context: object) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=billing.resolve().as_uri())])

    async with served((app,), list_roots_callback=list_roots, mode="legacy") as client:
        found = await client.call_tool("find_symbol", {"name": "TCPConnector"})
    assert found.structured_content["repo"] == "app"
    assert found.structured_content["results"][0]["path"] == "src/app/server.py"


def test_http_takes_repo_too(two_roots: tuple[Path, Path]) -> None:
    app, billing = two_roots
    port = free_port()
    args = ["--root", str(app), "--root", str(billing), "--listen", f"127.0.0.1:{port}"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "ragraf.adapters.http_api", *args],
        env={**os.environ, **SERVER_ENV},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    server = HttpServer(proc, port)
    try:
        wait_until_up(server)
        ok, named = server.post("find_symbol", {"name": "charge_invoice", "repo": "billing"})
        bad, refused = server.post("find_symbol", {"name": "charge_invoice", "repo": "nope"})
        merged_status, merged = server.post("search", {"query": "TCPConnector", "repo": "*"})
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert ok == 200 and named["repo"] == "billing" and named["results"][0]["path"] == "lib/billing.py"
    assert bad == 400 and refused["error"]["code"] == "unknown_repo"
    assert merged_status == 200 and {r["repo"] for r in merged["results"]} == {"app", "billing"}


async def test_without_root_or_client_roots_the_working_folder_is_served(
    two_roots: tuple[Path, Path],
) -> None:
    app, _ = two_roots
    async with served((), cwd=app, mode="legacy") as client:  # the SDK's default: no roots offered
        found = await client.call_tool("find_symbol", {"name": "TCPConnector"})
    assert found.structured_content["repo"] == "app"
    assert found.structured_content["results"][0]["path"] == "src/app/server.py"


async def test_a_repo_without_an_index_is_named_and_the_others_still_answer(
    two_roots: tuple[Path, Path], tmp_path: Path
) -> None:
    app, _ = two_roots
    empty = tmp_path / "empty"
    write(empty, {"a.py": "def lonely():\n    return 1\n"})
    async with served((app, empty)) as client:
        merged = await client.call_tool("search", {"query": "TCPConnector", "repo": "*", "top_k": 3})
        alone = await client.call_tool("search", {"query": "TCPConnector", "repo": ["empty"]})
    env = merged.structured_content
    assert merged.is_error is False and env["state"] == "fresh"
    assert {r["repo"] for r in env["results"]} == {"app"}
    assert env["repos"]["empty"]["error"]["code"] == "index_missing"
    assert "NOTE: empty: not searched: no index yet" in merged.content[0].text
    assert "with repo=empty" in merged.content[0].text
    assert alone.is_error is True and alone.structured_content["error"]["code"] == "index_missing"
