"""The transformer tier's queue: code first, central definitions and recent changes next, a budget per run."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from embed.fake_embed_server import FakeServer
from support import cli_json, git, settled, write

from ragraf.index.queue import chunk_value, recent_paths

# Each file one chunk (a definition, small): what the endpoint is sent tells the queue's order.
FILES = {
    "docs/guide.md": "# Guide\n\nHow to configure the connection pool and its limits.\n",
    "config/settings.yaml": "pool:\n  limit: 100\n  timeout: 30\n",
    "tests/test_pool.py": "def test_pool_limit():\n    assert make_pool(limit=3).limit == 3\n",
    "src/lonely.py": "def lonely_helper(x):\n    return x * 2\n",
    "src/pool.py": "def make_pool(limit):\n    return Pool(limit)\n",
    "src/a.py": "def use_a():\n    return make_pool(1)\n",
    "src/b.py": "def use_b():\n    return make_pool(2)\n",
}


@pytest.fixture
def fake() -> FakeServer:
    server = FakeServer("openai")
    yield server
    server.close()


def _env(server: FakeServer, **more: str) -> dict[str, str]:
    return {
        "RAGRAF_EMBEDDER": "openai",
        "RAGRAF_EMBED_URL": server.url,
        "RAGRAF_EMBED_MODEL": "m",
        "RAGRAF_EMBED_API_KEY": "k",
        "RAGRAF_CACHE": "false",  # every text reaches the endpoint, in the order the queue sends it
        "RAGRAF_EMBED_BATCH_SIZE": "1",
        **more,
    }


def _sent_paths(server: FakeServer) -> list[str]:
    heads = [r.body["input"][0].split("\n", 1)[0] for r in server.requests]
    return [head for head in heads if head != "dimension probe"]


def test_chunks_rank_by_kind_then_by_how_central_and_recent_they_are() -> None:
    refs = {"make_pool": 5, "use_a": 0}
    none: frozenset[str] = frozenset()
    keys = {
        "central code": chunk_value("src/pool.py", "make_pool", refs, none),
        "plain code": chunk_value("src/lonely.py", "lonely_helper", refs, none),
        "recent code": chunk_value("src/lonely.py", "lonely_helper", refs, frozenset({"src/lonely.py"})),
        "a method": chunk_value("src/pool.py", "Pool.make_pool", refs, none),
        "test": chunk_value("tests/test_pool.py", "make_pool", refs, none),
        "doc": chunk_value("docs/guide.md", "Guide", refs, none),
        "config": chunk_value("config/settings.yaml", None, refs, none),
    }
    assert keys["a method"] == keys["central code"]  # a method is found by its own name
    order = sorted(keys, key=lambda k: keys[k])
    assert order == ["recent code", "central code", "a method", "plain code", "test", "doc", "config"]


def test_recent_files_are_the_last_commits_and_those_edited_after_most_of_the_tree() -> None:
    minute = 60 * 10**9
    same = {f"f{i}.py": 100 for i in range(20)}
    assert recent_paths(same, []) == frozenset()  # a fresh clone: equal times say nothing
    # An unpacked archive whose build wrote its generated files seconds after the rest.
    built = {**same, "gen.c": 100 + 3 * 10**9}
    assert recent_paths(built, []) == frozenset()
    edited = {**built, "f3.py": 100 + 11 * minute}
    assert recent_paths(edited, ["g.py"]) == frozenset({"f3.py", "g.py"})


def test_the_transformer_embeds_code_first_central_first_and_a_budget_defers_the_rest(
    tmp_path: Path, fake: FakeServer
) -> None:
    root = tmp_path / "repo"
    write(root, FILES)
    settled(root)
    first = cli_json("index", "--root", str(root), env=_env(fake, RAGRAF_EMBED_MAX_CHUNKS="3"))
    total = first["chunks"]["total"]
    assert total == len(FILES) and first["static_embeddings"]["computed"] == total
    assert first["embeddings"]["computed"] == 3
    # make_pool is referenced by three files: first; then the code in chunk order (a window of
    # the queue goes to the endpoint shortest text first, so the test compares sets).
    assert set(_sent_paths(fake)) == {"src/pool.py", "src/a.py", "src/b.py"}
    found = cli_json("search", "connection pool", "--root", str(root), env=_env(fake))
    assert found["capability"]["tiers"] == {"transformer": round(3 / total, 4), "static": 1.0}
    assert found["capability"]["semantic_coverage"] == 1.0

    fake.requests.clear()
    second = cli_json("index", "--root", str(root), env=_env(fake))
    assert second["embeddings"]["computed"] == total - 3
    assert set(_sent_paths(fake)) == {
        "src/lonely.py",
        "tests/test_pool.py",
        "docs/guide.md",
        "config/settings.yaml",
    }
    found = cli_json("search", "connection pool", "--root", str(root), env=_env(fake))
    assert found["capability"]["tiers"] == {"transformer": 1.0, "static": 1.0}


def test_files_changed_by_the_last_commits_or_edited_since_are_embedded_before_other_code(
    tmp_path: Path, fake: FakeServer
) -> None:
    root = tmp_path / "repo"
    write(root, {**FILES, **{f"src/m{i}.py": f"def module_{i}():\n    return {i}\n" for i in range(8)}})
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "init")
    # 100 commits touching nothing: the first one falls out of the history the queue looks at.
    subprocess.run(
        "for i in $(seq 100); do git -c user.name=t -c user.email=t@example.com commit -q --allow-empty -m e; done",
        shell=True, cwd=root, check=True,
    )  # fmt: skip
    write(root, {"src/m5.py": "def module_5():\n    return 'five'\n"})
    git(root, "commit", "-q", "-am", "five")
    write(root, {"src/m6.py": "def module_6():\n    return 'six'\n"})  # edited, not committed
    settled(root)
    checkout = time.time() - 3600  # the tree as checked out an hour ago, m6 edited since
    for path in root.rglob("*"):
        if path.is_file() and ".git" not in path.relative_to(root).parts:
            os.utime(path, (checkout, checkout))
    later = time.time() - 30  # long enough ago to be trusted
    os.utime(root / "src/m6.py", (later, later))
    env = _env(fake, RAGRAF_EMBED_MAX_CHUNKS="3", RAGRAF_WORKTREES="false")  # one index, no base
    cli_json("index", "--root", str(root), env=env)
    # The two recent files, then the most central definition.
    assert set(_sent_paths(fake)) == {"src/m5.py", "src/m6.py", "src/pool.py"}


def test_the_order_is_the_same_however_many_reads_it_takes(
    sample: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragraf import Index
    from ragraf.index import queue

    idx = Index.open(sample)
    idx.index()
    store = idx.store()
    rev = store.current_revision()
    assert rev is not None
    whole = queue.value_order(store, rev.rev_no, "some/model")
    monkeypatch.setattr(queue, "_SCAN", 3)
    assert queue.value_order(store, rev.rev_no, "some/model") == whole
    assert len(whole) == len({c for c, _ in whole}) == rev.chunks > 3
    idx.close()
