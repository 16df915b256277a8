"""Shared fixtures: real folders and real git repositories in temp directories."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from support import SAMPLE, init_git, write

# Lexical-only unless a test asks for embeddings (tests/test_semantic.py does), and a private
# embedding cache, so the suite neither depends on nor pollutes the user's ~/.cache/ragraf.
os.environ.setdefault("RAGRAF_EMBEDDER", "none")
os.environ.setdefault("RAGRAF_CACHE_DIR", tempfile.mkdtemp(prefix="ragraf-test-cache-"))
# Servers the tests start put their CLI sockets here, not in the user's runtime folder.
os.environ.setdefault("RAGRAF_SOCKET_DIR", tempfile.mkdtemp(prefix="ragraf-test-sockets-"))
# A CLI read starts no background server unless a test asks for one (tests/adapters/test_cli_socket.py).
os.environ.setdefault("RAGRAF_SERVER_IDLE_S", "0")


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    write(root, SAMPLE)
    return root


@pytest.fixture
def git_sample(sample: Path) -> Path:
    init_git(sample)
    return sample
