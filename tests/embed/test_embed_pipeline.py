"""embed_with_cache: hits and misses, dedupe, batches cached as they land, isolation of bad texts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from embed.fake_embed_server import FakeServer, Reply, make_remote

from ragraf.embed.cache import EmbeddingCache, NullCache
from ragraf.embed.errors import EmbedInterrupted, NonFiniteVector, ProviderUnavailable
from ragraf.embed.pipeline import embed_with_cache


class CountingEmbedder:
    """A deterministic in-process embedder that records each batch it is given."""

    model_id = "test:counting"
    dim = 4

    def __init__(self, fail_on: str | None = None, down_after: int | None = None) -> None:
        self.batches: list[list[str]] = []
        self.tokens_used = 0
        self.fail_on = fail_on
        self.down_after = down_after

    def embed(self, texts: list[str]) -> np.ndarray:
        if self.down_after is not None and len(self.batches) >= self.down_after:
            raise ProviderUnavailable("the test provider went down")
        self.batches.append(list(texts))
        if self.fail_on is not None and self.fail_on in texts:
            raise NonFiniteVector("NaN for the poisoned text")
        self.tokens_used += sum(len(t) for t in texts)
        return np.stack([self.vector(t) for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]

    @staticmethod
    def vector(text: str) -> np.ndarray:
        v = np.array([len(text), sum(map(ord, text)) % 97, 1.0, 2.0], dtype=np.float32)
        return v / np.linalg.norm(v)


def test_hits_come_from_the_cache_and_only_misses_are_computed(tmp_path: Path):
    cache = EmbeddingCache(tmp_path)
    embedder = CountingEmbedder()
    embed_with_cache(embedder, cache, ["a", "bb"], batch_size=8)
    embedder.batches.clear()
    result = embed_with_cache(embedder, cache, ["ccc", "a", "dddd", "bb"], batch_size=8)
    assert embedder.batches == [["ccc", "dddd"]]
    assert (result.cache_hits, result.computed, result.failed) == (2, 2, 0)
    for text, vector in zip(["ccc", "a", "dddd", "bb"], result.vectors, strict=True):
        assert np.allclose(vector, CountingEmbedder.vector(text))


def test_identical_texts_are_computed_once(tmp_path: Path):
    embedder = CountingEmbedder()
    result = embed_with_cache(embedder, EmbeddingCache(tmp_path), ["x", "y", "x", "x"], batch_size=8)
    assert sorted(embedder.batches[0]) == ["x", "y"] and len(embedder.batches) == 1
    assert result.computed == 2 and result.duplicates == 2
    assert all(v is not None for v in result.vectors)


def test_misses_go_in_batches_of_batch_size_and_report_progress(tmp_path: Path):
    embedder = CountingEmbedder()
    progress: list[tuple[int, int]] = []
    texts = [f"text number {i}" for i in range(10)]
    result = embed_with_cache(
        embedder, NullCache(), texts, batch_size=4, on_progress=lambda d, t: progress.append((d, t))
    )
    assert [len(b) for b in embedder.batches] == [4, 4, 2]
    assert progress == [(0, 10), (4, 10), (8, 10), (10, 10)]
    assert result.tokens == sum(len(t) for t in texts)
    assert result.counts() == {"computed": 10, "cache_hits": 0, "failed": 0, "tokens": result.tokens}


def test_a_provider_going_down_keeps_finished_batches_cached_for_the_next_run(tmp_path: Path):
    cache = EmbeddingCache(tmp_path)
    texts = [f"t{i:02d}" for i in range(10)]
    with pytest.raises(EmbedInterrupted, match="went down") as caught:
        embed_with_cache(CountingEmbedder(down_after=2), cache, texts, batch_size=3)
    partial = caught.value.result
    assert partial.computed == 6 and sum(v is not None for v in partial.vectors) == 6
    assert isinstance(caught.value.cause, ProviderUnavailable)
    resumed = CountingEmbedder()
    result = embed_with_cache(resumed, cache, texts, batch_size=3)
    assert result.cache_hits == 6 and result.computed == 4
    assert sum(len(b) for b in resumed.batches) == 4


def test_a_text_the_provider_cannot_embed_is_skipped_with_a_failure_entry(tmp_path: Path):
    cache = EmbeddingCache(tmp_path)
    texts = ["aa", "bb", "poison", "cc", "dd"]
    result = embed_with_cache(CountingEmbedder(fail_on="poison"), cache, texts, batch_size=8)
    assert result.failed == 1 and result.failures == [(2, "NaN for the poisoned text")]
    assert result.vectors[2] is None and all(result.vectors[i] is not None for i in (0, 1, 3, 4))
    assert result.computed == 4
    assert cache.get_many(CountingEmbedder.model_id, ["poison"]) == [None]


def test_a_batch_that_times_out_is_split_and_only_the_slow_text_is_skipped(tmp_path: Path):
    fake = FakeServer("ollama")
    try:
        fake.rule = lambda request: Reply(hang=1.0) if "slow text" in request.body["input"] else None
        embedder = make_remote(fake, [], timeout_s=0.3)
        texts = ["one", "two", "slow text", "four!"]
        result = embed_with_cache(embedder, EmbeddingCache(tmp_path), texts, batch_size=4)
    finally:
        fake.close()
    assert result.failed == 1 and result.failures[0][0] == 2 and "did not answer" in result.failures[0][1]
    assert result.computed == 3 and all(result.vectors[i] is not None for i in (0, 1, 3))
    # One timeout for the batch, then each text alone: the timeout is not retried as is.
    assert [len(r.body["input"]) for r in fake.requests] == [4, 1, 1, 1, 1]


def test_an_unreachable_http_provider_interrupts_the_run(tmp_path: Path):
    fake = FakeServer("openai")
    fake.script = [Reply(503, {"error": "overloaded"})] * 5
    try:
        sleeps: list[float] = []
        embedder = make_remote(fake, sleeps)
        with pytest.raises(EmbedInterrupted, match="failed 5 times"):
            embed_with_cache(embedder, EmbeddingCache(tmp_path), ["a", "b"], batch_size=8)
    finally:
        fake.close()
