"""embed_with_cache: hits from the cache, misses computed once in batches and cached as they land."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ragraf.embed.base import Embedder
from ragraf.embed.cache import VectorCache
from ragraf.embed.errors import EmbedInputError, EmbedInterrupted, EmbedTimeout, WrongVectorCount
from ragraf.errors import EmbedderError

Progress = Callable[[int, int], None]


@dataclass
class EmbedResult:
    """One vector (or None when its text failed) per input text, and what it cost."""

    vectors: list[np.ndarray | None]
    computed: int = 0  # distinct texts the provider embedded in this call
    cache_hits: int = 0  # input positions answered from the cache
    duplicates: int = 0  # input positions that repeat a text computed in this call
    failed: int = 0  # input positions left without a vector
    tokens: int = 0  # as the provider reports them
    failures: list[tuple[int, str]] = field(default_factory=list)  # (input position, why)

    def counts(self) -> dict[str, int]:
        """The figures `ragraf index --json` reports under "embeddings"."""
        return {
            "computed": self.computed,
            "cache_hits": self.cache_hits,
            "failed": self.failed,
            "tokens": self.tokens,
        }


def embed_with_cache(
    embedder: Embedder,
    cache: VectorCache,
    texts: list[str],
    batch_size: int,
    on_progress: Progress | None = None,
) -> EmbedResult:
    """Vectors for texts: cached ones looked up, the rest embedded in batches and cached per batch.

    A batch that times out (or that the provider rejects for its inputs) is split until the
    offending text stands alone; that text gets None and a failure entry. Any other provider
    failure raises EmbedInterrupted carrying what was done so far, all of it already cached.
    """
    model_id = embedder.model_id
    tokens_before = embedder.tokens_used
    result = EmbedResult(vectors=cache.get_many(model_id, texts))
    result.cache_hits = sum(v is not None for v in result.vectors)
    positions: dict[str, list[int]] = {}
    for i, (text, vector) in enumerate(zip(texts, result.vectors, strict=True)):
        if vector is None:
            positions.setdefault(text, []).append(i)
    # Similar lengths side by side: a batch pads to its longest text, so this wastes least.
    todo = sorted(positions, key=len)
    result.duplicates = sum(len(p) - 1 for p in positions.values())
    total, done = len(todo), 0
    if on_progress:
        on_progress(0, total)
    for start in range(0, total, max(1, batch_size)):
        batch = todo[start : start + max(1, batch_size)]
        try:
            outcomes = _embed_isolating(embedder, batch)
        except EmbedderError as exc:
            result.tokens = embedder.tokens_used - tokens_before
            raise EmbedInterrupted(exc, result) from exc
        good = [(t, v) for t, v in zip(batch, outcomes, strict=True) if isinstance(v, np.ndarray)]
        if good:
            # Cached before moving on, so a killed run resumes without recomputing this batch.
            cache.put_many(model_id, [t for t, _ in good], [v for _, v in good])
        for text, outcome in zip(batch, outcomes, strict=True):
            for i in positions[text]:
                if isinstance(outcome, np.ndarray):
                    result.vectors[i] = outcome
                else:
                    result.failures.append((i, outcome))
        result.computed += len(good)
        done += len(batch)
        if on_progress:
            on_progress(done, total)
    result.failed = len(result.failures)
    result.failures.sort()
    result.tokens = embedder.tokens_used - tokens_before
    return result


def _embed_isolating(embedder: Embedder, texts: list[str]) -> list[np.ndarray | str]:
    """A vector per text, or the error message of a text that fails on its own."""
    try:
        matrix = embedder.embed(texts)
    except EmbedInputError as exc:
        if len(texts) == 1:
            return [exc.message]
        # A timeout costs the full timeout per try, so go straight to single texts; cheaper
        # rejections halve the batch, which finds one bad text in few requests.
        if isinstance(exc, EmbedTimeout):
            parts = [[t] for t in texts]
        else:
            parts = [texts[: len(texts) // 2], texts[len(texts) // 2 :]]
        return [outcome for part in parts for outcome in _embed_isolating(embedder, part)]
    if matrix.ndim != 2 or matrix.shape[0] != len(texts):
        raise WrongVectorCount(f"{embedder.model_id} returned shape {matrix.shape} for {len(texts)} texts")
    return list(matrix)
