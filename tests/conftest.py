"""Shared fixtures: real folders and real git repositories in temp directories."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import SAMPLE, init_git, write


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
