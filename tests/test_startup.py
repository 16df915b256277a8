"""Start-up: a command imports only what it runs (issue 28). The real CLI in a subprocess, then the
modules it loaded: `--version`, a lookup and a lexical search never load numpy, tree-sitter, the
indexer, the embedders or the servers; a no-change `ragraf index` loads no parser either."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import init_git, run_cli, settled

# Runs the CLI as `ragraf` would, then prints the loaded module names on the last line of stderr.
WRAPPER = (
    "import json, sys\n"
    "from ragraf.cli import main\n"
    "try:\n"
    "    main(sys.argv[1:], prog_name='ragraf')\n"
    "except SystemExit as exc:\n"
    "    code = exc.code\n"
    "else:\n"
    "    code = 0\n"
    "sys.stderr.write('\\nMODULES ' + json.dumps(sorted(sys.modules)) + '\\n')\n"
    "sys.exit(code)\n"
)

# Never needed to answer a read from a lexical index.
HEAVY = (
    "numpy",
    "tree_sitter",
    "onnxruntime",
    "tokenizers",
    "mcp",
    "starlette",
    "uvicorn",
    "multiprocessing",
    "concurrent.futures",
    "ragraf.index.indexer",
    "ragraf.index.workers",
    "ragraf.index.embedding",
    "ragraf.chunking",
    "ragraf.facts.extract",
    "ragraf.embed.base",
    "ragraf.embed.static",
    "ragraf.adapters.mcp_server",
    "ragraf.adapters.http_api",
)
# Nor, for a lookup of an unchanged tree (plain or a git work tree over its base), anything that
# lists, hashes or indexes files, searches, walks the call graph, watches or sets up agents.
LOOKUP_NEVER = (
    *HEAVY,
    "ctypes",
    "ragraf.index.overlay",
    "ragraf.corpus.discover",
    "ragraf.corpus.extract",
    "ragraf.corpus.secrets",
    "ragraf.search.engine",
    "ragraf.search.localize",
    "ragraf.facts.graph",
    "ragraf.facts.impact",
    "ragraf.facts.related",
    "ragraf.facts.repomap",
    "ragraf.search.report",
    "ragraf.freshness.watch",
    "ragraf.freshness.changes",
    "ragraf.adapters.commands",
    "ragraf.adapters.agent_setup",
    "ragraf.adapters.render",
)
# An index run that finds nothing changed reads no file: no parser, no chunker, no embedder.
INDEX_NEVER = (
    "numpy",
    "tree_sitter",
    "onnxruntime",
    "mcp",
    "ragraf.index.workers",
    "ragraf.chunking",
    "ragraf.facts.extract",
    "ragraf.embed.base",
    "ragraf.corpus.secrets",  # its patterns compile only when a file is read
)


def loaded(*args: str, cwd: Path, env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    proc = subprocess.run(
        [sys.executable, "-c", WRAPPER, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=120,
    )
    marker = proc.stderr.rfind("MODULES ")
    assert marker >= 0, proc.stderr
    return proc, set(json.loads(proc.stderr[marker + len("MODULES ") :]))


def heavy_in(modules: set[str], names: tuple[str, ...]) -> list[str]:
    """The names loaded, a package counting when any of its modules is."""
    return [n for n in names if any(m == n or m.startswith(n + ".") for m in modules)]


@pytest.fixture
def indexed(sample: Path, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    env = {"RAGRAF_HOME": str(tmp_path / "home"), "RAGRAF_EMBEDDER": "none"}
    settled(sample)
    out = run_cli("index", "-q", cwd=sample, env=env)
    assert out.returncode == 0, out.stderr
    return sample, env


def test_version_loads_no_parser_embedder_indexer_or_server(tmp_path: Path) -> None:
    proc, modules = loaded("--version", cwd=tmp_path, env={})
    assert proc.returncode == 0 and "version" in proc.stdout
    assert heavy_in(modules, HEAVY) == []


@pytest.mark.parametrize(
    "args",
    [
        ("def", "TCPConnector"),
        ("refs", "resolve_host"),
        ("search", "retry backoff", "--mode", "lexical"),
        ("search", "retry backoff", "--mode", "lexical", "--json"),
        ("outline", "src/app/server.py"),
        ("status",),
    ],
)
def test_a_read_loads_no_parser_embedder_indexer_or_server(
    indexed: tuple[Path, dict[str, str]], args: tuple[str, ...]
) -> None:
    root, env = indexed
    proc, modules = loaded(*args, cwd=root, env=env)
    assert proc.returncode == 0, proc.stderr
    assert heavy_in(modules, HEAVY) == []
    assert "ragraf.api.index" in modules  # it did answer through the operations layer


@pytest.mark.parametrize("git_repo", [False, True], ids=["folder", "git-work-tree"])
def test_a_lookup_of_an_unchanged_tree_only_stats(sample: Path, tmp_path: Path, git_repo: bool) -> None:
    if git_repo:
        init_git(sample)
    env = {"RAGRAF_HOME": str(tmp_path / "home"), "RAGRAF_EMBEDDER": "none"}
    settled(sample)
    assert run_cli("index", "-q", cwd=sample, env=env).returncode == 0
    for command in (("def", "TCPConnector"), ("refs", "resolve_host"), ("status",)):
        proc, modules = loaded(*command, cwd=sample, env=env)
        assert proc.returncode == 0, proc.stderr
        assert "fresh" in proc.stdout
        assert heavy_in(modules, LOOKUP_NEVER) == [], command


def test_a_read_answers_as_before(indexed: tuple[Path, dict[str, str]]) -> None:
    root, env = indexed
    proc, _ = loaded("def", "TCPConnector", "--json", cwd=root, env=env)
    found = json.loads(proc.stdout)
    assert [(r["path"], r["line"]) for r in found["results"]] == [("src/app/server.py", 4)]
    assert found["state"] == "fresh"


def test_a_no_change_index_loads_no_parser_or_embedder(indexed: tuple[Path, dict[str, str]]) -> None:
    root, env = indexed
    proc, modules = loaded("index", "--json", "-q", cwd=root, env=env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["new_revision"] is False
    assert heavy_in(modules, INDEX_NEVER) == []


def test_an_index_run_with_work_still_loads_the_parser(indexed: tuple[Path, dict[str, str]]) -> None:
    root, env = indexed
    (root / "src/app/fresh.py").write_text("def fresh_function():\n    return 1\n")
    proc, modules = loaded("index", "--json", "-q", cwd=root, env=env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["files"]["added"] == 1
    assert "ragraf.index.workers" in modules and "ragraf.chunking" in modules


def test_the_package_exports_load_on_first_use() -> None:
    code = (
        "import sys, ragraf\n"
        "assert 'ragraf.api.index' not in sys.modules and 'numpy' not in sys.modules\n"
        "from ragraf import Index, RagrafError, __version__\n"
        "from ragraf.embed import make_embedder\n"
        "from ragraf.facts import qualified_name\n"
        "assert 'ragraf.api.index' in sys.modules and 'tree_sitter' not in sys.modules\n"
        "assert Index.__name__ == 'Index' and ragraf.Index is Index\n"
        "try:\n    ragraf.NoSuchName\nexcept AttributeError as exc:\n    print(exc)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "module 'ragraf' has no attribute 'NoSuchName'" in proc.stdout
