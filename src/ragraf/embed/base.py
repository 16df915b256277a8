"""The Embedder protocol and the checks every provider's answer passes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from ragraf.embed.errors import NonFiniteVector, WrongDimension, WrongVectorCount


# Not runtime_checkable: isinstance() would read model_id, which loads a local model.
class Embedder(Protocol):
    """Turns texts into L2-normalized float32 vectors; a pure function of (model_id, text)."""

    model_id: str  # provider + endpoint where it matters + model + revision; part of the index version
    tokens_used: int  # running total of tokens, as the provider reports them

    @property
    def dim(self) -> int: ...

    def embed(self, texts: list[str]) -> np.ndarray:
        """float32 array of shape (len(texts), dim), each row of unit length."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """The vector of a search query (some models want a query prefix)."""
        ...


def check_vectors(rows: Sequence[Sequence[float]], expected: int, dim: int | None, source: str) -> np.ndarray:
    """Validate a provider's answer and L2-normalize it; wrong counts or shapes raise, never reshape."""
    if len(rows) != expected:
        raise WrongVectorCount(
            f"{source} returned {len(rows)} vectors for {expected} texts",
            suggest="check the endpoint is an embedding API; lower RAGRAF_EMBED_BATCH_SIZE if it caps batches",
        )
    if expected == 0:
        return np.zeros((0, dim or 0), dtype=np.float32)
    want = dim if dim is not None else len(rows[0])
    for i, row in enumerate(rows):
        if not isinstance(row, list | tuple) or len(row) != want:
            got = len(row) if isinstance(row, list | tuple) else type(row).__name__
            raise WrongDimension(
                f"{source} returned a vector of dimension {got} at position {i}, expected {want}",
                suggest="the model changed behind the same name: run `ragraf index --full`",
            )
    try:
        matrix = np.asarray(rows, dtype=np.float64)
    except (TypeError, ValueError):
        raise NonFiniteVector(f"{source} returned non-numeric vector values") from None
    norms = np.linalg.norm(matrix, axis=1)
    bad = ~np.isfinite(matrix).all(axis=1) | ~np.isfinite(norms) | (norms == 0)
    if bad.any():
        raise NonFiniteVector(
            f"{source} returned NaN, infinite or all-zero vectors at {np.flatnonzero(bad).tolist()}"
        )
    return (matrix / norms[:, None]).astype(np.float32)


def normalize(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length as float32 (rows of zeros stay zero)."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.maximum(norms, 1e-12)).astype(np.float32)
