"""What an agent reads from the MCP tools: budgets filled, true totals, the next call, tool words."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from servers import build_index, mcp_client

from ragraf import Index

pytestmark = pytest.mark.anyio

CALLERS = 230  # more references than one page (200) holds


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample repository plus a 2,300-line module calling resolve_host 230 times."""
    root = tmp_path_factory.mktemp("answers") / "repo"
    root.mkdir(parents=True)
    body = "".join(f"def caller_{i}(x):\n    return resolve_host(x) + {i}\n\n\n" for i in range(CALLERS))
    (root / "src" / "app").mkdir(parents=True)
    (root / "src" / "app" / "callers.py").write_text("from app.server import resolve_host\n\n\n" + body)
    return build_index(root)


async def test_read_of_a_file_over_the_budget_shows_its_first_lines_and_names_the_next_start_line(
    big: Path,
) -> None:
    async with mcp_client(big) as client:
        first = await client.call_tool("read", {"path": "src/app/callers.py"})
        text = first.content[0].text
        assert len(text.encode()) <= 16 * 1024
        assert "\n  1  from app.server import resolve_host" in text
        m = re.search(r"call `read` again with start_line=(\d+) for the next", text)
        assert m, text[-400:]
        next_line = int(m.group(1))
        assert next_line > 300  # the budget is filled with lines, not an elision alone
        result = first.structured_content["results"][0]
        assert result["end_line"] == next_line - 1 and result["next_start_line"] == next_line
        assert result["content"].count("\n") == next_line - 2  # the payload holds the lines shown
        more = await client.call_tool("read", {"path": "src/app/callers.py", "start_line": next_line})
        assert f"\n{next_line}  " in more.content[0].text
        assert f"src/app/callers.py:1-{next_line - 1} of " in text


async def test_reference_pages_carry_the_true_total_and_the_offset_of_the_next(big: Path) -> None:
    async with mcp_client(big) as client:
        page = await client.call_tool("find_references", {"name": "resolve_host", "calls": True})
        env = page.structured_content
        total = CALLERS + 1  # and TCPConnector.connect's call
        assert env["page"]["total"] == total
        text = page.content[0].text
        shown = text.count(" resolve_host (call)")
        assert f"{total - shown} more results" in text and f"{shown} of {total} shown" in text
        m = re.search(r"call `find_references` again with offset=(\d+)", text)
        assert m and int(m.group(1)) == shown
        rest = await client.call_tool(
            "find_references", {"name": "resolve_host", "calls": True, "offset": int(m.group(1))}
        )
        rest_env = rest.structured_content
        assert shown + len(rest_env["results"]) + rest_env["truncated"]["results"] == total
        seen = {(r["path"], r["line"]) for r in env["results"][:shown]}
        assert not seen & {(r["path"], r["line"]) for r in rest_env["results"]}


async def test_status_revisions_changes_and_drift_read_as_text_without_json_or_full_hashes(
    big: Path,
) -> None:
    calls = {
        "status": {},
        "revisions": {},
        "changes": {"from_rev": "rev-0001"},
        "drift": {},
    }
    async with mcp_client(big) as client:
        for tool, args in calls.items():
            result = await client.call_tool(tool, args)
            text = result.content[0].text
            assert result.is_error is False, text
            assert not any(line.lstrip().startswith(("{", "[{")) for line in text.splitlines()), text
            assert not re.search(r"\b[0-9a-f]{40,}\b", text), (tool, text)
    status = (await _one(big, "status", {})).content[0].text
    assert "semantic coverage:" in status and "drift: none" in status


async def _one(root: Path, tool: str, args: dict) -> object:
    async with mcp_client(root) as client:
        return await client.call_tool(tool, args)


async def test_top_k_over_ten_is_clamped_with_a_note_and_mode_semantic_is_accepted(big: Path) -> None:
    async with mcp_client(big) as client:
        wide = await client.call_tool("search", {"query": "resolve host", "top_k": 50})
        assert wide.is_error is False
        assert len(wide.structured_content["results"]) <= 10
        assert "k=50 clamped to 10" in wide.content[0].text
        semantic = await client.call_tool("search", {"query": "resolve host", "mode": "semantic"})
        assert semantic.is_error is False
        # No embedder here: the vector search is answered lexically, and says so first.
        assert semantic.content[0].text.startswith("WARNING: degraded: no embedder configured")
        bad = await client.call_tool("search", {"query": "x", "mode": "fuzzy"})
        assert bad.is_error is True and "mode" in bad.content[0].text


def test_k_zero_gives_no_results(big: Path) -> None:
    with Index.open(big, embedder="none") as idx:
        env = idx.search("resolve host", k=0)
    assert env.results == [] and any("k=0" in n for n in env.notes)


async def test_messages_name_the_tools_to_call_not_cli_commands(tmp_path: Path) -> None:
    root = build_index(tmp_path / "repo")
    (root / "src" / "app" / "retry.py").write_text("def retry_later():\n    return 1\n")
    (root / "docs" / "guide.md").unlink()
    async with mcp_client(root) as client:
        texts = [
            (await client.call_tool(tool, args)).content[0].text
            for tool, args in [
                ("search", {"query": "retry"}),
                ("find_symbol", {"name": "NoSuchThing"}),
                ("outline", {"path": "src/app/retry.py"}),
                ("status", {}),
            ]
        ]
    joined = "\n".join(texts)
    assert "ragraf " not in joined.replace("ragraf: ", ""), joined
    assert "suggest live_read" not in joined
    assert "read it live: `read` with path=src/app/retry.py" in joined
    assert "run `reindex`" not in joined and "call `reindex`" in joined  # the deleted file
    assert "call `search`" in texts[1]


async def test_filters_narrow_search_symbols_and_references(big: Path) -> None:
    async with mcp_client(big) as client:
        tests_only = await client.call_tool("search", {"query": "TCPConnector", "kind": "test"})
        paths = {r["path"] for r in tests_only.structured_content["results"]}
        assert paths == {"tests/test_server.py"}
        no_tests = await client.call_tool("search", {"query": "TCPConnector", "path": ["!tests/**"]})
        assert "tests/test_server.py" not in {r["path"] for r in no_tests.structured_content["results"]}
        assert no_tests.structured_content["results"]
        ts = await client.call_tool("find_symbol", {"name": "HttpClient", "language": "ts"})
        assert [r["path"] for r in ts.structured_content["results"]] == ["web/client.ts"]
        py = await client.call_tool("find_symbol", {"name": "HttpClient", "language": "python"})
        assert py.structured_content["results"] == []
        refs = await client.call_tool(
            "find_references", {"name": "resolve_host", "calls": True, "path": "src/app/server.py"}
        )
        assert [r["line"] for r in refs.structured_content["results"]] == [11]
        body = await client.call_tool("find_symbol", {"name": "resolve_host", "include_body": True})
        top = body.structured_content["results"][0]
        assert "socket.gethostbyname(name)" in top["body"]
        assert "15      return socket.gethostbyname(name)" in body.content[0].text
