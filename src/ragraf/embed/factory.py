"""make_embedder: the provider the settings name, built without loading or contacting anything.

Its own module so the providers can import the protocol from base.py without a loop back here.
"""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING, Any

from ragraf.errors import ConfigError

if TYPE_CHECKING:
    from ragraf.config import Settings
    from ragraf.embed.base import Embedder

PROVIDERS = ("local", "static", "ollama", "openai", "none")


def _require(modules: dict[str, str], provider: str) -> None:
    missing = [pkg for mod, pkg in modules.items() if importlib.util.find_spec(mod) is None]
    if missing:
        raise ConfigError(
            f"embedder {provider!r} needs {', '.join(missing)}, which is not installed",
            suggest=f"pip install {' '.join(missing)} (or set RAGRAF_EMBEDDER=none for lexical-only search)",
        )


def make_embedder(settings: Settings, **http: Any) -> Embedder | None:
    """The configured embedder, or None for embedder = "none"; nothing is loaded or contacted yet.

    `http` reaches the HTTP providers (timeout_s, retry, sleep): a query-time caller passes a
    short timeout and RetryPolicy(max_attempts=1) so a dead endpoint costs one try, not five.
    """
    provider = settings.embedder.strip().lower()
    if provider == "none":
        return None
    if provider == "local":
        from ragraf.embed import local

        _require(local.REQUIRED_MODULES, provider)
        return local.LocalEmbedder.from_settings(settings)
    if provider == "static":
        from ragraf.embed import static

        _require({"tokenizers": "tokenizers"}, provider)
        return static.StaticEmbedder.from_settings(settings)
    if provider in ("ollama", "openai"):
        _require({"httpx": "httpx"}, provider)
        if provider == "ollama":
            from ragraf.embed.ollama import OllamaEmbedder

            return OllamaEmbedder.from_settings(settings, **http)
        from ragraf.embed.openai_compat import OpenAIEmbedder

        return OpenAIEmbedder.from_settings(settings, **http)
    raise ConfigError(
        f"unknown embedder {settings.embedder!r}",
        suggest=f"set RAGRAF_EMBEDDER to one of {', '.join(PROVIDERS)}",
    )
