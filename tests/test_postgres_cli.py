"""The whole CLI on the PostgreSQL store: RAGRAF_STORE=postgres behaves like the default SQLite one."""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path

import pytest
from pg_server import pg_dsn, pg_server  # noqa: F401  (session fixtures: one server per run)
from support import cli_json, run_cli, settled, write

from ragraf.api.index import Index
from ragraf.config import load_settings
from ragraf.corpus import extract as extract_module


def test_index_search_facts_freshness_and_changes_on_postgres(sample: Path, pg_dsn: str) -> None:  # noqa: F811
    # A fresh root path is a fresh repository in the shared database.
    env = {"RAGRAF_STORE": "postgres", "RAGRAF_PG_DSN": pg_dsn, "RAGRAF_HOME": str(sample.parent / "home")}
    root = sample.parent / f"repo-{uuid.uuid4().hex[:8]}"
    sample.rename(root)
    first = cli_json("index", "--root", str(root), env=env)
    assert first["index_rev"] == "rev-0001" and first["files"]["added"] == 5
    search = cli_json("search", "TCPConnector", "--root", str(root), env=env)
    assert search["state"] == "fresh" and search["results"][0]["path"] == "src/app/server.py"
    assert cli_json("def", "TCPConnector", "--root", str(root), env=env)["results"][0]["line"] == 4
    calls = cli_json("refs", "resolve_host", "--calls", "--root", str(root), env=env)["results"]
    assert [(c["path"], c["line"]) for c in calls] == [("src/app/server.py", 11)]
    write(
        root, {"src/app/server.py": (root / "src/app/server.py").read_text() + "\ndef added():\n    pass\n"}
    )
    drifted = cli_json("search", "TCPConnector", "--root", str(root), env=env)
    assert drifted["state"] == "drifted" and drifted["results"][0]["stale"] is True
    refused = run_cli("status", "--reindex-on-drift", "fail", "--root", str(root), env=env)
    assert refused.returncode == 3
    assert cli_json("index", "--root", str(root), env=env)["index_rev"] == "rev-0002"
    changes = cli_json("changes", "--from", "rev-0001", "--root", str(root), env=env)["results"][0]
    assert [s["name"] for s in changes["symbols"]["added"]] == ["added"]
    assert cli_json("doctor", "--check", "--root", str(root), env=env)["results"][0]["ok"]


def test_checkouts_at_different_paths_share_the_index_pg_repo_names(sample: Path, pg_dsn: str) -> None:  # noqa: F811
    env = {"RAGRAF_STORE": "postgres", "RAGRAF_PG_DSN": pg_dsn, "RAGRAF_HOME": str(sample.parent / "home")}
    shared = {**env, "RAGRAF_PG_REPO": f"team/api-{uuid.uuid4().hex[:8]}"}
    laptop = sample.parent / f"laptop-{uuid.uuid4().hex[:8]}"
    ci = sample.parent / f"ci-{uuid.uuid4().hex[:8]}"
    shutil.copytree(sample, laptop)
    sample.rename(ci)
    assert cli_json("index", "--root", str(laptop), env=shared)["index_rev"] == "rev-0001"
    # Another checkout of the same files finds that index: nothing to add, the same revision answers.
    again = cli_json("index", "--root", str(ci), env=shared)
    assert again["index_rev"] == "rev-0001" and again["files"]["added"] == 0
    found = cli_json("search", "TCPConnector", "--root", str(ci), env=shared)
    assert found["index_rev"] == "rev-0001" and found["results"][0]["path"] == "src/app/server.py"
    # Unnamed, a checkout is a repository of its own, named by its path.
    alone = run_cli("search", "TCPConnector", "--json", "--root", str(ci), env=env)
    assert alone.returncode != 0 and json.loads(alone.stdout)["error"]["code"] == "index_missing"


def test_each_checkout_of_a_shared_index_keeps_its_own_file_stats(
    sample: Path,
    pg_dsn: str,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Two machines' checkouts of one repository: the files are the same, their stats are not.
    env = {
        "RAGRAF_STORE": "postgres",
        "RAGRAF_PG_DSN": pg_dsn,
        "RAGRAF_PG_REPO": f"team/api-{uuid.uuid4().hex[:8]}",
        "RAGRAF_EMBEDDER": "none",
        "RAGRAF_HOME": str(sample.parent / "home"),
    }
    laptop = sample.parent / "laptop"
    shutil.copytree(sample, laptop)
    for root in (laptop, sample):
        settled(root)  # none racy: a read trusts what the index hashed
    checkouts = [Index(load_settings(root, env=env)) for root in (laptop, sample)]
    for idx in checkouts:
        idx.index()
    hashed: list[Path] = []
    read = extract_module.extract  # the guard imports it where it hashes
    monkeypatch.setattr(
        extract_module, "extract", lambda path, *args: hashed.append(path) or read(path, *args)
    )
    for idx in checkouts:
        assert idx.search("TCPConnector").to_dict()["state"] == "fresh"
    # Before, the stats were the repository's: the last to index won, and every read of the
    # other hashed every file again.
    assert hashed == []
    write(laptop, {"src/app/server.py": (laptop / "src/app/server.py").read_text() + "\nx = 1\n"})
    drifted, fresh = (idx.search("TCPConnector").to_dict()["state"] for idx in checkouts)
    assert (drifted, fresh) == ("drifted", "fresh")
    assert hashed == [laptop / "src/app/server.py"]
    # The laptop's revision holds its edit, which the other checkout does not have: drift there.
    checkouts[0].index()
    answers = [idx.search("TCPConnector").to_dict() for idx in checkouts]
    assert [a["state"] for a in answers] == ["fresh", "drifted"]
    assert answers[1]["stale_warnings"][0]["path"] == "src/app/server.py"
    assert checkouts[1].index().to_dict()["files"]["modified"] == 1
    # A checkout that never indexed: its first read hashes its files, and keeps what it learnt.
    runner = sample.parent / "runner"
    shutil.copytree(sample, runner)
    settled(runner)
    reader = Index(load_settings(runner, env=env))
    hashed.clear()
    assert reader.search("TCPConnector").to_dict()["state"] == "fresh"
    assert len(hashed) == 5
    assert reader.search("TCPConnector").to_dict()["state"] == "fresh" and len(hashed) == 5
    for idx in (*checkouts, reader):
        idx.close()


def test_the_static_tier_is_embedded_beside_the_parse_on_postgres(
    sample: Path,
    pg_dsn: str,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ragraf.embed.static import StaticEmbedder
    from ragraf.index import embedding
    from ragraf.index.embedding import embed_text

    env = {
        "RAGRAF_STORE": "postgres", "RAGRAF_PG_DSN": pg_dsn, "RAGRAF_HOME": str(sample.parent / "home"),
        "RAGRAF_EMBEDDER": "static",
    }  # fmt: skip
    root = sample.parent / f"repo-{uuid.uuid4().hex[:8]}"
    sample.rename(root)
    after: list[int] = []  # texts the embedding phase embeds after the parse
    phase = embedding.embed_with_cache
    monkeypatch.setattr(
        embedding,
        "embed_with_cache",
        lambda e, c, texts, *a: after.append(len(texts)) or phase(e, c, texts, *a),
    )
    with Index(load_settings(root, env=env)) as idx:
        report = idx.index()
        assert report.embeddings["computed"] == report.chunks["total"] > 0 and sum(after) == 0
        store = idx.store()
        rev = store.current_revision()
        assert rev is not None
        embedder = StaticEmbedder()
        for path in ("src/app/retry.py", "src/app/server.py"):
            for hit in store.chunks_of(rev.rev_no, path):
                fresh = embedder.embed([embed_text(hit)])[0]
                # The stored vector is the one the embedding phase would have made: its own nearest, at 1.
                nearest = store.vector_search(rev.rev_no, embedder.model_id, fresh.tobytes(), embedder.dim, 1)
                assert nearest[0].chunk_id == hit.chunk_id and nearest[0].score > 0.9999
        found = idx.search("exponential waiting between attempts", mode="vector")
        assert found.results and found.capability.tiers == {"static": 1.0}
