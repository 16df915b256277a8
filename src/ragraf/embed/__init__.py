"""Embeddings: the Embedder protocol, its providers, the shared cache and the batching pipeline."""

from typing import TYPE_CHECKING

from ragraf.lazy import lazy_exports

if TYPE_CHECKING:
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
# numpy comes with the Embedder protocol's module: loaded only when something embeds.
__getattr__ = lazy_exports(
    __name__,
    {"Embedder": "ragraf.embed.base", "make_embedder": "ragraf.embed.factory"}
    | {"EmbedResult": "ragraf.embed.pipeline", "embed_with_cache": "ragraf.embed.pipeline"}
    | {n: "ragraf.embed.cache" for n in ("EmbeddingCache", "NullCache", "default_cache_dir", "open_cache")},
)
