"""Embeddings in the pipeline: progressive indexing, coverage, resumption, the shared cache, degraded search."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from embed.fake_embed_server import FakeServer, Reply
from support import SAMPLE, cli_json, run_cli, write

from ragraf import Index
from ragraf.index.lock import WriterLock


def _openai_env(server: FakeServer) -> dict[str, str]:
    return {
        "RAGRAF_EMBEDDER": "openai",
        "RAGRAF_EMBED_URL": server.url,
        "RAGRAF_EMBED_MODEL": "m",
        "RAGRAF_EMBED_API_KEY": "k",
    }


@pytest.fixture
def fake() -> FakeServer:
    server = FakeServer("openai")
    yield server
    server.close()


def test_default_local_model_gives_hybrid_search_with_full_coverage(sample: Path) -> None:
    report = Index.open(sample, embedder="local").index()
    assert report.embeddings["computed"] > 0 and report.embeddings["failed"] == 0
    env = Index.open(sample, embedder="local").search("pool of keep-alive network connections")
    assert env.capability.semantic and env.capability.semantic_coverage == 1.0 and not env.capability.degraded
    assert env.results[0].path == "src/app/server.py"
    vector_only = Index.open(sample, embedder="local").search(
        "exponential waiting between attempts", mode="vector"
    )
    assert vector_only.results[0].path == "src/app/retry.py"


def test_lexical_only_first_then_the_next_run_completes_coverage(sample: Path, fake: FakeServer) -> None:
    env = _openai_env(fake)
    first = cli_json("index", "--lexical-only", "--root", str(sample), env=env)
    assert "embeddings" not in first
    partial = cli_json("search", "TCPConnector", "--root", str(sample), env=env)
    assert partial["capability"]["semantic_coverage"] == 0.0 and partial["results"]
    assert partial["capability"]["degraded"]  # no vectors yet: said so, answered lexically
    assert "run `ragraf index` to finish embedding" in " ".join(partial["capability"]["reasons"])
    with WriterLock(Index.open(sample).settings.home):  # an index run at work: say so, not "run it"
        busy = cli_json("search", "TCPConnector", "--root", str(sample), env=env)
    assert "an index run is embedding now (pid" in " ".join(busy["capability"]["reasons"]), busy
    second = cli_json("index", "--root", str(sample), env=env)
    assert second["embeddings"]["computed"] > 0 and second["new_revision"] is False
    full = cli_json("search", "TCPConnector", "--root", str(sample), env=env)
    assert full["capability"]["semantic_coverage"] == 1.0 and not full["capability"]["degraded"]


def test_identical_tree_at_a_second_path_embeds_nothing(tmp_path: Path, fake: FakeServer) -> None:
    env = _openai_env(fake)
    a, b = tmp_path / "a", tmp_path / "b"
    write(a, SAMPLE)
    shutil.copytree(a, b)
    cold = cli_json("index", "--root", str(a), env=env)

    def embedding_requests() -> int:
        return sum(r.body["input"] != ["dimension probe"] for r in fake.requests)

    asked = embedding_requests()
    warm = cli_json("index", "--root", str(b), env=env)
    assert cold["embeddings"]["computed"] > 0
    assert (
        warm["embeddings"]["computed"] == 0
        and warm["embeddings"]["cache_hits"] == cold["embeddings"]["computed"]
    )
    assert embedding_requests() == asked  # not one text embedded again for the copy
    # Progress counts the chunks the cache answered: the phase ends at its total.
    shutil.copytree(a, tmp_path / "c")
    out = run_cli("index", "--root", str(tmp_path / "c"), env=env)
    hits = warm["embeddings"]["cache_hits"]
    assert out.returncode == 0 and f"embedding chunks: {hits}/{hits} done" in out.stderr, out.stderr


def test_dead_embedder_at_query_time_answers_degraded_with_the_warning_first(
    sample: Path, fake: FakeServer
) -> None:
    env = _openai_env(fake)
    cli_json("index", "--root", str(sample), env=env)
    fake.close()
    out = run_cli("search", "TCPConnector", "--root", str(sample), env={**env, "RAGRAF_EMBED_TIMEOUT_S": "2"})
    assert out.returncode == 0
    first = out.stdout.splitlines()[0]
    assert first.startswith("WARNING: degraded:") and "the static tier's vectors answered" in first, first
    assert "src/app/server.py" in out.stdout
    data = cli_json("search", "TCPConnector", "--root", str(sample), env=env)
    assert data["capability"]["degraded"] and data["capability"]["semantic"]  # the static tier stood in
    assert data["results"][0]["path"] == "src/app/server.py"
    reason = data["capability"]["reasons"][0]
    assert reason.count("RAGRAF_EMBEDDER=none") <= 1, reason  # the advice once, not twice
    # Vectors alone come from the static tier: words no chunk holds still find their nearest.
    vector = cli_json("search", "zebra giraffe elephant", "--mode", "vector", "--root", str(sample), env=env)
    assert vector["capability"]["degraded"] and len(vector["results"]) == 5
    assert (
        cli_json("search", "zebra giraffe elephant", "--mode", "lexical", "--root", str(sample))["results"]
        == []
    )


def test_dead_embedder_without_a_static_tier_answers_lexically(
    sample: Path, fake: FakeServer, tmp_path: Path
) -> None:
    bad = tmp_path / "static.npz"
    bad.write_bytes(b"not a table")
    env = {**_openai_env(fake), "RAGRAF_STATIC_TABLE": str(bad), "RAGRAF_EMBED_TIMEOUT_S": "2"}
    cli_json("index", "--root", str(sample), env=env)
    fake.close()
    data = cli_json("search", "TCPConnector", "--mode", "vector", "--root", str(sample), env=env)
    cap = data["capability"]
    assert cap["degraded"] and not cap["semantic"] and "lexical-only" in cap["reasons"][0]
    assert data["results"][0]["path"] == "src/app/server.py"


def test_a_query_vector_of_the_wrong_size_is_degraded_not_dropped(sample: Path, fake: FakeServer) -> None:
    env = {**_openai_env(fake), "RAGRAF_CACHE": "0"}
    cli_json("index", "--root", str(sample), env=env)
    fake.rule = lambda req: Reply(body={"data": [{"embedding": [0.5] * 4, "index": 0}]})
    for mode in ("hybrid", "vector"):
        data = cli_json("search", "TCPConnector", "--mode", mode, "--root", str(sample), env=env)
        assert data["capability"]["degraded"] and "4-dimensional" in data["capability"]["reasons"][0]
        assert data["results"][0]["path"] == "src/app/server.py"


def test_embedder_failing_mid_index_keeps_the_lexical_revision(sample: Path, fake: FakeServer) -> None:
    env = {**_openai_env(fake), "RAGRAF_EMBED_BATCH_SIZE": "2"}
    # the dimension probe, one good batch, then the key is refused
    fake.script = [Reply(), Reply(), Reply(status=401, body={"error": {"message": "bad key"}})]
    report = cli_json("index", "--root", str(sample), env=env)
    assert report["index_rev"] == "rev-0001" and report["warnings"]
    assert "bad key" in report["warnings"][0]
    env_search = cli_json("search", "TCPConnector", "--root", str(sample), env=env)
    # The static tier covers every chunk; the transformer's tier stopped part way.
    assert 0.0 < env_search["capability"]["tiers"]["transformer"] < 1.0
    assert env_search["capability"]["semantic_coverage"] == 1.0
    assert env_search["results"][0]["path"] == "src/app/server.py"
    fake.script = []
    resumed = cli_json("index", "--root", str(sample), env=env)
    assert resumed["embeddings"]["computed"] > 0 and resumed["embeddings"]["cache_hits"] == 0
    assert (
        cli_json("search", "x", "--root", str(sample), env=env)["capability"]["tiers"]["transformer"] == 1.0
    )


def test_killed_embedding_run_resumes_without_recomputing(tmp_path: Path, fake: FakeServer) -> None:
    root = tmp_path / "many"
    write(root, {f"m{i}.py": f"def handler_{i}(request):\n    return {i}\n" for i in range(300)})
    fake.rule = lambda _req: Reply(hang=0.05)  # slow enough to kill it halfway
    env = {**_openai_env(fake), "RAGRAF_EMBED_BATCH_SIZE": "8"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "ragraf.cli", "index", "-q", "--root", str(root)],
        env={**__import__("os").environ, **env},
    )
    deadline = time.monotonic() + 60
    while len(fake.requests) < 5 and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = len(fake.requests)
    # The last request may have been in flight at the kill: its answer never arrived, so its texts
    # were never embedded. Every earlier answer was, and must not be asked for again.
    embedded_texts = {t for r in fake.requests[:-1] for t in r.body["input"]} - {"dimension probe"}
    fake.rule = None
    resumed = cli_json("index", "--root", str(root), env=env)
    assert resumed["index_rev"] == "rev-0001"
    new_texts = [t for r in fake.requests[before:] for t in r.body["input"] if t != "dimension probe"]
    assert new_texts and not (set(new_texts) & embedded_texts)  # nothing embedded twice
    assert resumed["embeddings"]["computed"] + resumed["embeddings"]["cache_hits"] >= 300 - len(
        embedded_texts
    )


def test_wrong_vectors_never_enter_the_index(sample: Path, fake: FakeServer) -> None:
    env = _openai_env(fake)
    fake.rule = lambda req: Reply(body={"data": [{"embedding": [float("nan")] * 8, "index": 0}]})
    report = cli_json("index", "--root", str(sample), env=env)
    assert report["warnings"] and report["embeddings"]["computed"] == 0
    status = cli_json("status", "--root", str(sample), env=env)
    assert status["capability"]["semantic_coverage"] == 0.0
    assert json.dumps(status)  # the envelope is still whole


def test_dry_run_estimates_the_embedding_bill_and_status_keeps_totals(sample: Path, fake: FakeServer) -> None:
    env = {**_openai_env(fake), "RAGRAF_EMBED_BATCH_SIZE": "2"}
    before = cli_json("index", "--dry-run", "--root", str(sample), env=env)["embedding"]
    assert (
        before["chunks"] == 5
        and before["cached"] == 0
        and before["calls"] == 3
        and before["tokens_estimate"] > 0
    )
    assert not any(r.body["input"] != ["dimension probe"] for r in fake.requests)  # estimating costs nothing
    report = cli_json("index", "--root", str(sample), env=env)
    totals = cli_json("status", "--root", str(sample), env=env)["results"][0]["embeddings"]
    model = next(iter(totals))
    assert totals[model]["computed"] == report["embeddings"]["computed"] == 5
    assert totals[model]["tokens"] == report["embeddings"]["tokens"] > 0
    after = cli_json("index", "--dry-run", "--root", str(sample), env=env)["embedding"]
    assert after["chunks"] == 0 and after["calls"] == 0
