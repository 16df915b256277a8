"""Fixtures of the embed tests: the fake embedding server and a recording sleep."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from embed.fake_embed_server import FakeServer, make_remote

from ragraf.embed.remote import RemoteEmbedder


@pytest.fixture(params=["ollama", "openai"])
def server(request: pytest.FixtureRequest) -> Iterator[FakeServer]:
    """A fake server in Ollama's shape, then in OpenAI's."""
    fake = FakeServer(request.param)
    yield fake
    fake.close()


@pytest.fixture
def sleeps() -> list[float]:
    """Records the delays the retry layer asks for instead of waiting them."""
    return []


@pytest.fixture
def remote(server: FakeServer, sleeps: list[float]) -> Iterator[RemoteEmbedder]:
    """An embedder pointed at the fake server."""
    embedder = make_remote(server, sleeps)
    yield embedder
    embedder.close()
