"""The content-addressed embedding cache: order, hits and misses, concurrent writers, bypass."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from ragraf.config import load_settings
from ragraf.embed import cache as cache_module
from ragraf.embed.cache import CACHE_FILE, EmbeddingCache, NullCache, cache_key, default_cache_dir, open_cache


def vec(seed: int, dim: int = 16) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(dim).astype(np.float32)


def test_lookups_preserve_order_and_mark_misses_none(tmp_path: Path):
    cache = EmbeddingCache(tmp_path)
    cache.put_many("m", ["b", "d"], [vec(2), vec(4)])
    got = cache.get_many("m", ["a", "b", "c", "d", "b"])
    assert got[0] is None and got[2] is None
    assert (
        np.array_equal(got[1], vec(2)) and np.array_equal(got[3], vec(4)) and np.array_equal(got[4], vec(2))
    )
    assert got[1].dtype == np.float32


def test_the_model_id_is_part_of_the_key(tmp_path: Path):
    cache = EmbeddingCache(tmp_path)
    cache.put_many("model-a", ["text"], [vec(1)])
    assert cache.get_many("model-b", ["text"]) == [None]
    assert cache_key("model-a", "text") != cache_key("model-b", "text")


def test_storing_a_text_twice_keeps_the_first_vector(tmp_path: Path):
    cache = EmbeddingCache(tmp_path)
    cache.put_many("m", ["t"], [vec(1)])
    cache.put_many("m", ["t"], [vec(2)])
    assert np.array_equal(cache.get_many("m", ["t"])[0], vec(1))


def test_stats_and_prune_by_model_and_age(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    cache = EmbeddingCache(tmp_path)
    cache.put_many("m1", ["a", "b"], [vec(1), vec(2)])
    cache.put_many("m2", ["a"], [vec(3)])
    stats = cache.stats()
    assert stats.enabled and stats.vectors == 3 and stats.file_bytes > 0
    assert [(m.model_id, m.vectors, m.bytes) for m in stats.models] == [("m1", 2, 128), ("m2", 1, 64)]
    assert cache.prune(models=["m1"]) == 2
    assert [m.model_id for m in cache.stats().models] == ["m2"]
    assert cache.prune(older_than_days=1) == 0
    later = time.time() + 2 * 86400
    monkeypatch.setattr(cache_module.time, "time", lambda: later)
    assert cache.prune(older_than_days=1) == 1
    assert cache.stats().vectors == 0


def test_ten_thousand_hits_come_back_in_order_on_a_fresh_connection(tmp_path: Path):
    cache = EmbeddingCache(tmp_path)
    texts = [f"def function_{i}(x):\n    return x + {i}\n" for i in range(10_000)]
    vectors = np.random.default_rng(0).standard_normal((10_000, 384)).astype(np.float32)
    cache.put_many("local:test", texts, vectors)
    fresh = EmbeddingCache(tmp_path)  # a new process would start without a warm connection
    got = fresh.get_many("local:test", texts)
    assert all(g is not None for g in got) and np.array_equal(np.stack(got), vectors)  # type: ignore[arg-type]


WRITER = """
import sys, time
from pathlib import Path
import numpy as np
from ragraf.embed import cache as cache_module
from ragraf.embed.cache import EmbeddingCache
directory, start, count = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
cache = EmbeddingCache(directory)
while not (directory / "go").exists():  # start together
    time.sleep(0.005)
for offset in range(start, start + count, 50):
    ids = range(offset, min(offset + 50, start + count))
    cache.put_many("shared", [f"text {i}" for i in ids],
                   [np.random.default_rng(i).standard_normal(16).astype(np.float32) for i in ids])
"""


def test_two_processes_writing_at_once_lose_nothing_and_corrupt_nothing(tmp_path: Path):
    # Overlapping ranges: both write texts 1000-1999, each alone writes its other half.
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(tmp_path), str(start), "2000"], stderr=subprocess.PIPE
        )
        for start in (0, 1000)
    ]
    time.sleep(0.3)
    (tmp_path / "go").touch()
    for w in workers:
        _, err = w.communicate(timeout=60)
        assert w.returncode == 0, err.decode()
    cache = EmbeddingCache(tmp_path)
    got = cache.get_many("shared", [f"text {i}" for i in range(3000)])
    assert all(np.array_equal(g, vec(i)) for i, g in enumerate(got))
    assert cache.stats().vectors == 3000
    with sqlite3.connect(tmp_path / CACHE_FILE) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_ragraf_cache_0_bypasses_the_cache(tmp_path: Path):
    settings = load_settings(tmp_path, env={"RAGRAF_CACHE": "0", "RAGRAF_CACHE_DIR": str(tmp_path / "c")})
    cache = open_cache(settings)
    assert isinstance(cache, NullCache)
    cache.put_many("m", ["a"], [vec(1)])
    assert cache.get_many("m", ["a"]) == [None]
    assert not (tmp_path / "c").exists()


def test_ragraf_cache_dir_chooses_the_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    settings = load_settings(tmp_path, env={"RAGRAF_CACHE_DIR": str(tmp_path / "c")})
    cache = open_cache(settings)
    assert isinstance(cache, EmbeddingCache) and cache.path == tmp_path / "c" / CACHE_FILE
    monkeypatch.delenv("RAGRAF_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "ragraf"


def test_a_corrupt_cache_file_is_set_aside_and_replaced(tmp_path: Path):
    (tmp_path / CACHE_FILE).write_bytes(b"this is not a database" * 100)
    settings = load_settings(tmp_path, env={"RAGRAF_CACHE_DIR": str(tmp_path)})
    cache = open_cache(settings)
    assert isinstance(cache, EmbeddingCache)
    cache.put_many("m", ["a"], [vec(1)])
    assert cache.get_many("m", ["a"])[0] is not None
    assert list(tmp_path.glob(f"{CACHE_FILE}.corrupt-*"))


def test_a_weight_files_sha256_is_remembered_by_its_stat_and_recomputed_when_it_changes(
    tmp_path: Path,
) -> None:
    import hashlib

    from ragraf.embed.quantize import sha256_file

    weights = tmp_path / "w.onnx"
    weights.write_bytes(b"a" * 1000)
    memo = tmp_path / "models"
    first = sha256_file(weights, memo)
    assert first == hashlib.sha256(b"a" * 1000).hexdigest() and (memo / "sha256-memo.json").is_file()
    (memo / "sha256-memo.json").write_text((memo / "sha256-memo.json").read_text().replace(first, "f" * 64))
    assert sha256_file(weights, memo) == "f" * 64  # answered from the memo, not from the bytes
    weights.write_bytes(b"b" * 1000)  # same size, new content: ctime and mtime move
    assert sha256_file(weights, memo) == hashlib.sha256(b"b" * 1000).hexdigest()
    assert sha256_file(weights) == hashlib.sha256(b"b" * 1000).hexdigest()
