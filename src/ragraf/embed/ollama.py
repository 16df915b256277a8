"""Ollama: POST {url}/api/embed, and POST {url}/api/pull for `ragraf doctor --pull`."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import httpx

from ragraf.embed.errors import MalformedResponse, ProviderRejected, ProviderUnavailable, off_switch
from ragraf.embed.remote import RemoteEmbedder

if TYPE_CHECKING:
    from ragraf.config import Settings

DEFAULT_URL = "http://127.0.0.1:11434"
DEFAULT_MODEL = "nomic-embed-text"


class OllamaEmbedder(RemoteEmbedder):
    """Embeddings from a local or remote Ollama server."""

    provider = "ollama"
    server_name = "Ollama (ollama serve)"

    @classmethod
    def from_settings(cls, settings: Settings, **kwargs: Any) -> OllamaEmbedder:
        """embed_model, embed_url and embed_timeout_s from the settings, Ollama's defaults otherwise."""
        return cls(
            settings.embed_model or DEFAULT_MODEL,
            settings.embed_url or DEFAULT_URL,
            timeout_s=kwargs.pop("timeout_s", None) or settings.embed_timeout_s,
            **kwargs,
        )

    def _request(self, texts: list[str]) -> tuple[list[Any], dict[str, Any]]:
        data = self.endpoint.post_json("/api/embed", {"model": self.model, "input": texts})
        rows = data.get("embeddings") if isinstance(data, dict) else None
        if not isinstance(rows, list):
            raise MalformedResponse(
                f"ollama at {self.url} answered without an 'embeddings' list: {json.dumps(data)[:120]}",
                suggest="check RAGRAF_EMBED_URL points at Ollama (ollama >= 0.3 for /api/embed)",
            )
        tokens = data.get("prompt_eval_count")
        return rows, {"prompt_tokens": tokens, "total_tokens": tokens} if isinstance(tokens, int) else {}

    def installed_models(self) -> list[str]:
        """The model names Ollama has pulled (GET /api/tags)."""
        try:
            response = self.endpoint.client.get(self.url + "/api/tags")
            response.raise_for_status()
            return [m.get("name", "") for m in response.json().get("models", [])]
        except (httpx.HTTPError, ValueError, AttributeError) as exc:
            raise ProviderUnavailable(
                f"cannot list the models of ollama at {self.url}: {exc}",
                suggest=f"start Ollama {off_switch()}",
            ) from None

    def pull(self, model: str | None = None, on_status: Callable[[str], None] | None = None) -> None:
        """Pull a model (default: this embedder's) via POST /api/pull, reporting each status line."""
        name = model or self.model
        try:
            # Streamed: the read timeout applies between progress lines, not to the whole download.
            with self.endpoint.client.stream(
                "POST", self.url + "/api/pull", json={"model": name}
            ) as response:
                if not response.is_success:
                    response.read()
                    raise ProviderRejected(
                        f"ollama could not pull {name!r}: HTTP {response.status_code} {response.text[:200]}",
                        suggest="check the model name at ollama.com/library",
                        status=response.status_code,
                    )
                for line in response.iter_lines():
                    if not line.strip():
                        continue
                    event = json.loads(line)
                    if event.get("error"):
                        raise ProviderRejected(f"ollama could not pull {name!r}: {event['error']}")
                    if on_status:
                        on_status(str(event.get("status", "")))
        except httpx.TimeoutException:
            raise ProviderUnavailable(f"pulling {name!r} from ollama at {self.url} stalled") from None
        except httpx.TransportError as exc:
            raise ProviderUnavailable(
                f"ollama at {self.url} is not reachable: {exc}", suggest=f"start Ollama {off_switch()}"
            ) from None
        except ValueError:
            raise MalformedResponse(f"ollama at {self.url} answered /api/pull with invalid JSON") from None
