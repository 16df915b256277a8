"""The embedding endpoint dies mid-session: MCP search answers degraded, warning first, and the server lives."""

from __future__ import annotations

from pathlib import Path

import pytest
from adapters.servers import mcp_client
from embed.fake_embed_server import FakeServer

from ragraf import Index

pytestmark = pytest.mark.anyio


async def test_search_degrades_with_the_warning_first_when_the_embedder_dies(tmp_path: Path) -> None:
    fake = FakeServer("openai")
    env = {
        "RAGRAF_EMBEDDER": "openai",
        "RAGRAF_EMBED_URL": fake.url,
        "RAGRAF_EMBED_MODEL": "m",
        "RAGRAF_EMBED_API_KEY": "k",
        "RAGRAF_EMBED_TIMEOUT_S": "2",
    }
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "pool.py").write_text("class ConnectionPool:\n    def acquire(self):\n        return 1\n")
    Index.open(root, embedder="openai", embed_url=fake.url, embed_model="m", embed_api_key="k").index()
    try:
        async with mcp_client(root, env) as client:
            healthy = await client.call_tool("search", {"query": "connection pool"})
            assert healthy.structured_content["capability"]["semantic"] is True
            assert healthy.structured_content["capability"]["degraded"] is False
            fake.close()  # the endpoint goes away mid-session
            degraded = await client.call_tool("search", {"query": "connection pool"})
            env_ = degraded.structured_content
            assert degraded.is_error is False and env_["capability"]["degraded"] is True
            assert degraded.content[0].text.splitlines()[0].startswith("WARNING: degraded:")
            assert env_["results"][0]["path"] == "src/pool.py"
            alive = await client.call_tool("status", {})
            assert alive.is_error is False
            # An index run with the endpoint gone says why first, in the text an agent reads.
            (root / "src" / "more.py").write_text("def more():\n    return 2\n")
            reindex = await client.call_tool("reindex", {})
            assert reindex.is_error is False
            assert reindex.content[0].text.startswith("WARNING: "), reindex.content[0].text
    finally:
        fake.close()
