"""What the HTTP embedders share: the model id, dimension discovery, prefixes, token counts."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from ragraf.embed.base import check_vectors
from ragraf.embed.http import HttpEndpoint, RetryPolicy
from ragraf.errors import ConfigError

# Models trained with task prefixes answer best when given them: (document, query).
_PREFIXES = {
    "nomic-embed": ("search_document: ", "search_query: "),
    "e5": ("passage: ", "query: "),
}


def prefixes_for(model: str) -> tuple[str, str]:
    """The (document, query) prefixes a model was trained with; empty for most."""
    name = model.lower().rsplit("/", 1)[-1]
    for marker, pair in _PREFIXES.items():
        if name.startswith(marker) or f"-{marker}" in name or f"{marker}-" in name:
            return pair
    return "", ""


def check_url(url: str, setting: str = "RAGRAF_EMBED_URL") -> str:
    """url without its trailing slash, or a ConfigError if it is not http(s)://host…."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(
            f"{setting} = {url!r} is not an http(s) URL",
            suggest=f"set {setting}, e.g. http://127.0.0.1:11434",
        )
    return url.rstrip("/")


class RemoteEmbedder:
    """An embedder behind an HTTP API; subclasses say how to ask and how to read the answer."""

    provider = "remote"
    server_name = "the embedding server"

    def __init__(
        self,
        model: str,
        url: str,
        timeout_s: float = 120.0,
        dim: int | None = None,
        headers: dict[str, str] | None = None,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.model = model
        self.url = check_url(url)
        self.model_id = f"{self.provider}:{self.url}:{model}"
        self.endpoint = HttpEndpoint(
            self.url, self.provider, timeout_s, headers, retry, sleep, server_name=self.server_name
        )
        self._dim = dim
        self.doc_prefix, self.query_prefix = prefixes_for(model)
        self.tokens_used = 0
        self.last_usage: dict[str, Any] = {}

    @property
    def dim(self) -> int:
        """The configured dimension, else the one of the first answer (asks once if none yet)."""
        if self._dim is None:
            self._embed(["dimension probe"], "")
        assert self._dim is not None
        return self._dim

    def embed(self, texts: list[str]) -> np.ndarray:
        """One request for all texts; the answer is checked, never reshaped."""
        return self._embed(texts, self.doc_prefix)

    def embed_query(self, text: str) -> np.ndarray:
        """The query's vector, with the model's query prefix."""
        return self._embed([text], self.query_prefix)[0]

    def _embed(self, texts: list[str], prefix: str) -> np.ndarray:
        if not texts:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        rows, usage = self._request([prefix + t for t in texts])
        # Counted before the checks: a provider bills the tokens of an answer we then reject.
        self.last_usage = usage
        self.tokens_used += int(usage.get("total_tokens") or usage.get("prompt_tokens") or 0)
        vectors = check_vectors(rows, len(texts), self._dim, f"{self.provider} at {self.url} ({self.model})")
        if self._dim is None:
            self._dim = vectors.shape[1]
        return vectors

    def _request(self, texts: list[str]) -> tuple[list[Any], dict[str, Any]]:
        """(one vector per text, usage as the provider reports it)."""
        raise NotImplementedError

    def close(self) -> None:
        """Release the HTTP connections."""
        self.endpoint.close()
