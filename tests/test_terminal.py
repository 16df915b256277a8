"""Terminal manners: Ctrl-C during index, piped progress, and the one exit-code table."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from embed.fake_embed_server import FakeServer, Reply
from support import run_cli, write

from ragraf.errors import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK, EXIT_REFUSED, EXIT_USAGE
from ragraf.index import progress as progress_module
from ragraf.index.progress import LineProgress


@pytest.fixture
def fake() -> FakeServer:
    server = FakeServer("openai")
    yield server
    server.close()


def test_ctrl_c_during_embedding_says_what_was_kept_and_exits_130(tmp_path: Path, fake: FakeServer) -> None:
    root = tmp_path / "many"
    write(root, {f"m{i}.py": f"def handler_{i}(request):\n    return {i}\n" for i in range(300)})
    env = {
        **os.environ,
        "RAGRAF_EMBEDDER": "openai",
        "RAGRAF_EMBED_URL": fake.url,
        "RAGRAF_EMBED_MODEL": "m",
        "RAGRAF_EMBED_API_KEY": "k",
        "RAGRAF_EMBED_BATCH_SIZE": "8",
        "RAGRAF_CACHE_DIR": str(tmp_path / "cache"),
    }
    fake.rule = lambda _req: Reply(hang=0.03)
    proc = subprocess.Popen(
        [sys.executable, "-m", "ragraf.cli", "index", "--root", str(root)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while len(fake.requests) < 21 and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == EXIT_INTERRUPTED == 130, err
    assert "Traceback" not in err and "Aborted!" not in err
    assert "interrupted" in err and "this run's lexical revision committed" in err
    assert "semantic coverage" in err and "run `ragraf index` to resume" in err


def test_piped_progress_is_sparse_and_has_no_eta_before_a_rate(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [100.0]
    monkeypatch.setattr(progress_module.time, "monotonic", lambda: clock[0])
    out = io.StringIO()
    bar = LineProgress(out)
    bar.start("embedding chunks", 1000)
    clock[0] += 30.0  # a slow first batch (a model loading) gives no rate yet
    bar.advance(10)
    for _ in range(99):  # then 10 chunks every 0.1 s for 9.9 s
        clock[0] += 0.1
        bar.advance(10)
    bar.done()
    lines = out.getvalue().splitlines()
    assert lines[0] == "embedding chunks: 1000"
    assert lines[-1].startswith("embedding chunks: 1000/1000 done in")
    middle = lines[1:-1]
    assert 1 <= len(middle) <= 2  # at most one line every 5 s of a 10 s phase
    assert "eta" not in lines[1] or "(100/s" in lines[1]  # the rate since the first advance
    assert all("(100/s" in line for line in middle if "eta" in line)


def test_one_exit_code_table(sample: Path, tmp_path: Path) -> None:
    assert run_cli("status", "--root", str(sample)).returncode == EXIT_ERROR  # not indexed yet
    assert run_cli("index", "--root", str(sample)).returncode == EXIT_OK
    assert run_cli("search", "--nope", "x", "--root", str(sample)).returncode == EXIT_USAGE
    missing = run_cli("read", "nope.py", "--root", str(sample))
    outside = run_cli("read", "../outside.py", "--root", str(sample))
    no_root = run_cli("status", "--root", str(tmp_path / "absent"))
    assert missing.returncode == outside.returncode == no_root.returncode == EXIT_USAGE
    assert "does not exist" in missing.stderr and "out of the root" in outside.stderr
    assert "not a directory" in no_root.stderr
    write(sample, {"new_module.py": "def fresh():\n    return 1\n"})
    refused = run_cli("search", "fresh", "--reindex-on-drift", "fail", "--root", str(sample))
    assert refused.returncode == EXIT_REFUSED
