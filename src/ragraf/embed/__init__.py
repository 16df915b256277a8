"""Embeddings: the Embedder protocol, its providers, the shared cache and the batching pipeline."""

from ragraf.embed.base import Embedder
from ragraf.embed.cache import EmbeddingCache, NullCache, default_cache_dir, open_cache
from ragraf.embed.factory import make_embedder
from ragraf.embed.pipeline import EmbedResult, embed_with_cache

__all__ = [
    "EmbedResult",
    "Embedder",
    "EmbeddingCache",
    "NullCache",
    "default_cache_dir",
    "embed_with_cache",
    "make_embedder",
    "open_cache",
]
