"""The MCP server as an agent sees it: a subprocess driven by the SDK's stdio client."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from servers import SERVER_ENV, mcp_client

from ragraf import Index
from ragraf.adapters.tools import TOOLS, available
from ragraf.index.lock import WriterLock

pytestmark = pytest.mark.anyio

ALL_TOOLS = [
    "search",
    "localize",
    "find_symbol",
    "find_references",
    "outline",
    "read",
    "status",
    "drift",
    "changes",
    "reindex",
    "revisions",
    "callees",
    "callers",
    "graph",
    "impact",
    "repo_map",
    "related",
]

# One good call per tool, and what its text must cite.
GOOD_CALLS: dict[str, tuple[dict[str, Any], str]] = {
    "search": ({"query": "TCPConnector keep-alive", "top_k": 3}, "src/app/server.py:"),
    "localize": (
        {"text": "TCPConnector.connect fails in resolve_host\nsocket.gaierror"},
        "src/app/server.py",
    ),
    "find_symbol": ({"name": "TCPConnector"}, "src/app/server.py:4"),
    "find_references": ({"name": "resolve_host", "calls": True}, "src/app/server.py:11"),
    "outline": ({"path": "src/app/server.py"}, "src/app/server.py:14"),
    "read": ({"path": "src/app/retry.py", "start_line": 4, "end_line": 5}, "def retry_with_backoff"),
    "status": ({}, "rev-0001"),
    "drift": ({}, "rev-0001"),
    "changes": ({"from_rev": "rev-0001", "to_rev": "rev-0001"}, "rev-0001"),
    "reindex": ({}, "up to date at rev-0001"),
    "revisions": ({}, "rev-0001"),
    "callees": ({"name": "TCPConnector.connect"}, "src/app/server.py:11"),
    "callers": ({"name": "resolve_host", "depth": 2}, "src/app/server.py:10"),
    "graph": ({"name": "TCPConnector.connect", "direction": "out"}, "src/app/server.py:14"),
    "impact": (
        {
            "diff": "--- a/src/app/server.py\n+++ b/src/app/server.py\n@@ -15 +15 @@\n-    return socket.gethostbyname(name)\n+    return name\n"
        },
        "src/app/server.py:10",
    ),
    "repo_map": ({"budget": 500}, "src/app/server.py"),
    "related": ({"spec": "src/app/server.py:15"}, "src/app/server.py:10"),
}


def _error_code(result: Any) -> str:
    return result.structured_content["error"]["code"]


async def test_lists_every_tool_with_a_precise_schema_and_description(indexed: Path) -> None:
    async with mcp_client(indexed) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert sorted(tools) == sorted(ALL_TOOLS)
    search = tools["search"].input_schema
    assert search["required"] == ["query"]
    assert search["properties"]["top_k"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 1000,
        "default": 10,
        "description": "How many results (1-10; more is clamped to 10, with a note).",
    }
    assert tools["find_references"].input_schema["properties"]["calls"]["type"] == "boolean"
    assert set(tools["read"].input_schema["properties"]) == {"path", "start_line", "end_line", "repo"}
    assert set(tools["changes"].input_schema["properties"]) == {"from_rev", "to_rev", "repo"}
    assert tools["reindex"].input_schema["properties"]["full"]["type"] == "boolean"
    for name in ("status", "drift", "revisions"):
        assert set(tools[name].input_schema["properties"]) == {"repo"}  # which served root
    for tool in tools.values():
        assert tool.input_schema["additionalProperties"] is False
        assert len(tool.description or "") > 80, tool.name
        assert tool.output_schema is not None
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is (tool.name != "reindex")


@pytest.mark.parametrize("tool", ALL_TOOLS)
async def test_each_tool_answers_with_the_envelope_as_structured_content_and_its_text(
    indexed: Path, tool: str
) -> None:
    if not available(tool):
        pytest.xfail("operation not yet in the API")
    args, cited = GOOD_CALLS[tool]
    async with mcp_client(indexed) as client:
        result = await client.call_tool(tool, args)
    text = result.content[0].text
    assert result.is_error is False, text
    env = result.structured_content
    assert env["index_rev"] == "rev-0001"
    assert cited in text
    if TOOLS[tool].read_only:
        assert env["state"] == "fresh"
        assert set(env) >= {
            "op",
            "corpus_hash",
            "drift",
            "stale_warnings",
            "capability",
            "results",
            "truncated",
        }
        assert text.startswith(f"[{env['op']} @ rev-0001")
    else:
        assert env["files"]["unchanged"] == 5


async def test_search_results_cite_path_and_lines(indexed: Path) -> None:
    async with mcp_client(indexed) as client:
        result = await client.call_tool("search", {"query": "retry with exponential backoff"})
    top = result.structured_content["results"][0]
    assert (top["path"], top["start_line"]) == ("src/app/retry.py", 1)
    assert f"{top['path']}:{top['start_line']}-{top['end_line']}" in result.content[0].text


async def test_bad_arguments_are_tool_errors_and_the_server_keeps_serving(indexed: Path) -> None:
    bad = [
        ("search", {"query": "x", "top_k": 1001}, "top_k"),
        ("search", {"query": "x", "top_k": 0}, "top_k"),
        ("search", {"query": "x", "top_k": "5"}, "top_k"),
        ("search", {}, "query"),
        ("search", {"query": ""}, "query"),
        ("search", {"query": "x", "mode": "fuzzy"}, "mode"),
        ("find_references", {"name": "x", "calls": "yes"}, "calls"),
        ("read", {"path": "src/app/retry.py", "start_line": 5, "end_line": 2}, "end_line"),
        ("read", {"path": "../../etc/passwd"}, ".."),
        ("read", {"path": "/etc/passwd"}, "absolute"),
        ("read", {"path": "src/app\x00/retry.py"}, "NUL"),
        ("outline", {"path": "..\\..\\etc\\passwd"}, ".."),
        ("no_such_tool", {}, "unknown tool"),
    ]
    async with mcp_client(indexed) as client:
        for tool, args, mentioned in bad:
            result = await client.call_tool(tool, args)
            text = result.content[0].text
            assert result.is_error is True, (tool, args)
            assert text.startswith("ERROR ["), text
            assert mentioned in text, text
            assert "→ " in text  # always says what to do
            assert _error_code(result) in ("bad_arguments", "outside_root")
            assert "root:" not in text
        after = await client.call_tool("search", {"query": "TCPConnector"})
    assert after.is_error is False
    assert after.structured_content["results"]


async def test_a_missing_index_says_run_ragraf_index_and_reindex_builds_it(tmp_path: Path) -> None:
    root = tmp_path / "fresh"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "mod.py").write_text("def handle_upload(request):\n    return request.body\n")
    async with mcp_client(root) as client:
        missing = await client.call_tool("search", {"query": "upload"})
        assert missing.is_error is True
        assert _error_code(missing) == "index_missing"
        # The agent is told the tool to call, not a CLI command it may not be able to run.
        assert "ragraf index" not in missing.content[0].text
        assert "call `reindex`" in missing.content[0].text
        assert "call `reindex`" in missing.structured_content["error"]["suggest"]
        status = await client.call_tool("status", {})
        assert status.is_error is True and _error_code(status) == "index_missing"

        built = await client.call_tool("reindex", {})
        assert built.is_error is False, built.content[0].text
        assert built.structured_content["index_rev"] == "rev-0001"
        found = await client.call_tool("search", {"query": "handle_upload"})
    assert found.is_error is False
    assert found.structured_content["results"][0]["path"] == "pkg/mod.py"


async def test_a_root_that_does_not_exist_is_a_tool_error_not_a_crash(tmp_path: Path) -> None:
    async with mcp_client(tmp_path / "nowhere") as client:
        for tool in ("status", "search", "reindex"):
            args = {"query": "x"} if tool == "search" else {}
            result = await client.call_tool(tool, args)
            assert result.is_error is True
            assert _error_code(result) == "usage"  # a root that is not a folder: a bad argument (exit 2)
            assert "not a directory" in result.content[0].text


async def test_a_corrupt_index_is_reported_and_a_full_reindex_repairs_it(indexed: Path) -> None:
    db = Index.open(indexed, embedder="none").settings.db_path
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    db.write_bytes(b"this is not a database" * 100)
    async with mcp_client(indexed) as client:
        broken = await client.call_tool("search", {"query": "TCPConnector"})
        assert broken.is_error is True
        assert _error_code(broken) == "index_corrupt"
        assert "call `reindex` with full=true" in broken.content[0].text
        repaired = await client.call_tool("reindex", {"full": True})
        assert repaired.is_error is False, repaired.content[0].text
        found = await client.call_tool("search", {"query": "TCPConnector"})
    assert found.is_error is False
    assert found.structured_content["results"]


async def test_a_held_lock_refuses_reindex_while_reads_keep_answering(indexed: Path) -> None:
    home = Index.open(indexed, embedder="none").settings.home
    with WriterLock(home, wait=False):
        async with mcp_client(indexed) as client:
            locked = await client.call_tool("reindex", {})
            assert locked.is_error is True
            assert _error_code(locked) == "locked"
            assert "retry" in locked.content[0].text
            read = await client.call_tool("search", {"query": "TCPConnector"})
    assert read.is_error is False


async def test_drift_warnings_come_first_and_results_are_marked_stale(indexed: Path) -> None:
    server = indexed / "src" / "app" / "server.py"
    server.write_text(server.read_text() + "\n\ndef drain_pool(pool):\n    pool.clear()\n")
    async with mcp_client(indexed) as client:
        result = await client.call_tool("search", {"query": "TCPConnector"})
    env = result.structured_content
    assert env["state"] == "drifted"
    assert (
        result.content[0]
        .text.splitlines()[0]
        .startswith("WARNING: src/app/server.py modified after rev-0001")
    )
    assert any(r["stale"] for r in env["results"] if r["path"] == "src/app/server.py")


async def test_reindex_reports_progress_and_makes_a_new_revision(indexed: Path) -> None:
    (indexed / "src" / "app" / "extra.py").write_text("def added_later():\n    return 1\n")
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with mcp_client(indexed) as client:
        result = await client.call_tool("reindex", {}, progress_callback=on_progress)
        revisions = await client.call_tool("revisions", {})
    assert result.is_error is False
    assert result.structured_content["index_rev"] == "rev-0002"
    assert result.structured_content["files"]["added"] == 1
    assert [r["rev"] for r in revisions.structured_content["results"]] == ["rev-0001", "rev-0002"]
    assert seen, "no progress notification arrived"


def test_stdout_carries_only_protocol_messages_and_logs_go_to_stderr(indexed: Path) -> None:
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "search", "arguments": {"top_k": 99}},
        },
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "read", "arguments": {"path": "/x"}},
        },
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "status", "arguments": {}}},
        # A string cut inside an emoji: JSON the SDK cannot read, answered under its id, not dropped.
        {
            "jsonrpc": "2.0",
            "id": 5,
            "method": "tools/call",
            "params": {"name": "search", "arguments": {"query": "\ud83d"}},
        },
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "ragraf.adapters.mcp_server", "--root", str(indexed), "--log-level", "info"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **SERVER_ENV},
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    # An id with a lone surrogate cannot be echoed (answered as null); a batch is not read.
    garbage = '{"jsonrpc":"2.0","id":"s\\udc00","method":"ping"}\n[]\nthis is not json\n'
    proc.stdin.write("".join(json.dumps(m) + "\n" for m in messages) + garbage)
    proc.stdin.flush()
    replies = []
    while len([r for r in replies if "id" in r and r["id"] in (2, 3, 4, 5, None)]) < 7:
        line = proc.stdout.readline()
        assert line, "the server closed stdout early"
        replies.append(json.loads(line))  # every stdout line is a JSON-RPC message
    proc.stdin.close()
    proc.wait(timeout=30)
    stderr = proc.stderr.read()
    by_id = {r["id"]: r for r in replies if "id" in r}
    assert by_id[2]["result"]["isError"] is True
    assert by_id[3]["result"]["isError"] is True
    assert by_id[4]["result"]["isError"] is False
    assert by_id[4]["result"]["structuredContent"]["op"] == "status"
    assert by_id[5]["error"]["code"] == -32602 and "lone surrogate" in by_id[5]["error"]["message"]
    nulls = sorted(r["error"]["code"] for r in replies if r.get("id", 0) is None)
    assert nulls == [-32700, -32602, -32600], nulls  # not JSON; the surrogate id; the batch
    assert "bad_arguments" in stderr  # the log is on stderr
    assert proc.returncode == 0  # a clean exit when the client closes the stream
