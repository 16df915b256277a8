"""make_embedder: the provider named in the settings, or an actionable ConfigError."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from ragraf.config import load_settings
from ragraf.embed import make_embedder
from ragraf.embed.http import RetryPolicy
from ragraf.embed.local import LocalEmbedder
from ragraf.embed.ollama import OllamaEmbedder
from ragraf.embed.openai_compat import OpenAIEmbedder
from ragraf.errors import ConfigError


def settings(tmp_path: Path, **env: str):
    return load_settings(tmp_path, env={f"RAGRAF_{k.upper()}": v for k, v in env.items()})


def test_none_means_no_embedder(tmp_path: Path):
    assert make_embedder(settings(tmp_path, embedder="none")) is None


def test_local_is_the_default_and_loads_nothing_yet(tmp_path: Path):
    embedder = make_embedder(settings(tmp_path, cache_dir=str(tmp_path / "c")))
    assert isinstance(embedder, LocalEmbedder)
    assert embedder._session is None and embedder.dim == 384
    assert embedder.models_dir == tmp_path / "c" / "models"


def test_ollama_defaults_to_the_local_server(tmp_path: Path):
    embedder = make_embedder(settings(tmp_path, embedder="ollama", embed_timeout_s="7"))
    assert isinstance(embedder, OllamaEmbedder)
    assert embedder.model_id == "ollama:http://127.0.0.1:11434:nomic-embed-text"
    assert embedder.endpoint.timeout_s == 7.0


def test_a_query_time_caller_can_ask_for_one_short_try(tmp_path: Path):
    embedder = make_embedder(
        settings(tmp_path, embedder="ollama"), timeout_s=2.0, retry=RetryPolicy(max_attempts=1)
    )
    assert embedder.endpoint.timeout_s == 2.0 and embedder.endpoint.retry.max_attempts == 1


def test_openai_takes_url_model_and_key_from_the_settings(tmp_path: Path):
    embedder = make_embedder(
        settings(
            tmp_path,
            embedder="openai",
            embed_url="https://openrouter.ai/api/v1/",
            embed_model="text-embedding-3-small",
            embed_api_key="sk-x",
        )
    )
    assert isinstance(embedder, OpenAIEmbedder)
    assert embedder.model_id == "openai:https://openrouter.ai/api/v1:text-embedding-3-small"
    assert embedder.endpoint.client.headers["authorization"] == "Bearer sk-x"


def test_an_unknown_provider_lists_the_known_ones(tmp_path: Path):
    with pytest.raises(ConfigError, match="unknown embedder 'sentencepiece'") as caught:
        make_embedder(settings(tmp_path, embedder="sentencepiece"))
    assert "local, static, ollama, openai, none" in caught.value.suggest


def test_an_unknown_local_model_is_a_config_error(tmp_path: Path):
    with pytest.raises(ConfigError, match="unknown local embedding model"):
        make_embedder(settings(tmp_path, embed_model="bge-large"))


def test_a_missing_package_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "onnxruntime" else real(name, *a)
    )
    with pytest.raises(ConfigError, match="needs onnxruntime") as caught:
        make_embedder(settings(tmp_path))
    assert "pip install onnxruntime" in caught.value.suggest
