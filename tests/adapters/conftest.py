"""Fixtures for the adapter tests: a real index in a temp folder and real servers in subprocesses."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # the helpers beside this file (servers.py)

from servers import HttpServer, build_index, running_http  # noqa: E402


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def indexed(tmp_path: Path) -> Path:
    return build_index(tmp_path / "repo")


@pytest.fixture(scope="module")
def indexed_module(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_index(tmp_path_factory.mktemp("adapters") / "repo")


@pytest.fixture(scope="module")
def http_server(indexed_module: Path) -> Iterator[HttpServer]:
    with running_http(indexed_module) as server:
        yield server


@pytest.fixture
def http_factory() -> Iterator[Callable[..., HttpServer]]:
    with contextlib.ExitStack() as stack:
        yield lambda root, env=None: stack.enter_context(running_http(root, env))
