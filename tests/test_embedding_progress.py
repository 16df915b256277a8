"""While an index run embeds, and after one stopped: what search, status, doctor and the report say."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from embed.fake_embed_server import FakeServer, Reply
from support import cli_json, run_cli, write

from ragraf import Index
from ragraf.index.lock import WriterLock


@pytest.fixture
def fake() -> FakeServer:
    server = FakeServer("openai")
    yield server
    server.close()


def _env(server: FakeServer, batch: int = 8) -> dict[str, str]:
    return {
        "RAGRAF_EMBEDDER": "openai",
        "RAGRAF_EMBED_URL": server.url,
        "RAGRAF_EMBED_MODEL": "m",
        "RAGRAF_EMBED_API_KEY": "k",
        "RAGRAF_EMBED_BATCH_SIZE": str(batch),
        "RAGRAF_CACHE_DIR": "",  # set per test below
    }


def _many(root: Path, n: int = 300) -> Path:
    write(root, {f"m{i}.py": f"def handler_{i}(request):\n    return {i}\n" for i in range(n)})
    return root


def test_a_killed_run_keeps_the_vectors_it_stored_and_coverage_says_so(
    tmp_path: Path, fake: FakeServer
) -> None:
    root = _many(tmp_path / "many")
    env = {**_env(fake), "RAGRAF_CACHE_DIR": str(tmp_path / "cache")}
    fake.rule = lambda _req: Reply(hang=0.03)
    proc = subprocess.Popen(
        [sys.executable, "-m", "ragraf.cli", "index", "-q", "--root", str(root)], env={**os.environ, **env}
    )
    deadline = time.monotonic() + 60
    # The probe and 20 batches of 8: more than one window (128 chunks) stored.
    while len(fake.requests) < 21 and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    fake.rule = None
    env_search = cli_json("search", "handler", "--root", str(root), env=env)
    assert env_search["capability"]["semantic_coverage"] >= 128 / 300
    status = run_cli("status", "--root", str(root), env=env)
    assert (
        "semantic coverage: " in status.stdout and "run `ragraf index` to finish embedding" in status.stdout
    )


def test_an_endpoint_refusing_mid_run_counts_what_was_not_embedded_as_failed(
    tmp_path: Path, fake: FakeServer
) -> None:
    root = _many(tmp_path / "some", 40)
    env = {**_env(fake, batch=8), "RAGRAF_CACHE_DIR": str(tmp_path / "cache")}
    # the dimension probe, two good batches, then the key is refused
    fake.script = [Reply(), Reply(), Reply(), Reply(status=401, body={"error": {"message": "bad key"}})]
    report = cli_json("index", "--root", str(root), env=env)
    emb = report["embeddings"]
    assert emb["computed"] == 16
    assert emb["failed"] == report["chunks"]["total"] - 16 > 0
    assert "bad key" in report["warnings"][0]


def test_while_an_index_run_embeds_search_status_and_doctor_say_so(tmp_path: Path, fake: FakeServer) -> None:
    root = _many(tmp_path / "busy", 20)
    env = {**_env(fake), "RAGRAF_CACHE_DIR": str(tmp_path / "cache")}
    cli_json("index", "--lexical-only", "--root", str(root), env=env)
    home = Index.open(root, embedder="none").settings.home
    with WriterLock(home):  # an index run at work: it holds the writer lock while it embeds
        search = cli_json("search", "handler", "--root", str(root), env=env)
        reason = search["capability"]["reasons"][0]
        assert "an index run is embedding now" in reason and "run `ragraf index`" not in reason
        status = run_cli("status", "--root", str(root), env=env)
        assert "semantic coverage: 0.0% of chunks embedded" in status.stdout
        assert "an index run is embedding now" in status.stdout
        doctor = run_cli("doctor", "--root", str(root), env=env)
        assert doctor.returncode == 0, doctor.stdout
        assert "an index run is embedding now" in doctor.stdout
    doctor = run_cli("doctor", "--root", str(root), env=env)
    assert doctor.returncode == 1 and "FAIL semantic coverage" in doctor.stdout
