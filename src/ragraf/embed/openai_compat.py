"""Any OpenAI-compatible POST {base}/embeddings: OpenAI, OpenRouter, vLLM, LM Studio, llama.cpp, Ollama /v1."""

from __future__ import annotations

import base64
import json
from typing import TYPE_CHECKING, Any

import numpy as np

from ragraf.embed.errors import MalformedResponse, WrongVectorCount
from ragraf.embed.remote import RemoteEmbedder

if TYPE_CHECKING:
    from ragraf.config import Settings

DEFAULT_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "text-embedding-3-small"


class OpenAIEmbedder(RemoteEmbedder):
    """Embeddings from an OpenAI-compatible endpoint, with a bearer key when one is set."""

    provider = "openai"
    server_name = "the embedding server"

    def __init__(self, model: str, url: str, api_key: str = "", **kwargs: Any) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        super().__init__(model, url, headers=headers, **kwargs)

    @classmethod
    def from_settings(cls, settings: Settings, **kwargs: Any) -> OpenAIEmbedder:
        """embed_model, embed_url, embed_api_key (or OPENAI_API_KEY) and embed_timeout_s."""
        return cls(
            settings.embed_model or DEFAULT_MODEL,
            settings.embed_url or DEFAULT_URL,
            api_key=settings.embed_api_key,
            timeout_s=kwargs.pop("timeout_s", None) or settings.embed_timeout_s,
            **kwargs,
        )

    def _request(self, texts: list[str]) -> tuple[list[Any], dict[str, Any]]:
        data = self.endpoint.post_json(
            "/embeddings", {"model": self.model, "input": texts, "encoding_format": "float"}
        )
        items = data.get("data") if isinstance(data, dict) else None
        if not isinstance(items, list) or not all(isinstance(i, dict) and "embedding" in i for i in items):
            raise MalformedResponse(
                f"openai at {self.url} answered without a 'data' list of embeddings: {json.dumps(data)[:120]}",
                suggest="check RAGRAF_EMBED_URL is the API base (ending in /v1 for most servers)",
            )
        indices = [i.get("index", n) for n, i in enumerate(items)]
        if sorted(indices) != list(range(len(items))):
            raise WrongVectorCount(
                f"openai at {self.url} answered indices {indices[:10]} for {len(texts)} texts"
            )
        rows: list[Any] = [None] * len(items)
        for index, item in zip(indices, items, strict=True):
            rows[index] = _floats(item["embedding"])
        usage = data.get("usage")
        return rows, usage if isinstance(usage, dict) else {}


def _floats(embedding: Any) -> Any:
    # A server that ignores encoding_format may still send base64 little-endian float32.
    if isinstance(embedding, str):
        try:
            return np.frombuffer(base64.b64decode(embedding, validate=True), dtype="<f4").tolist()
        except ValueError:
            raise MalformedResponse("an embedding is a string but not base64 float32") from None
    return embedding
