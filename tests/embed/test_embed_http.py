"""The HTTP providers against a real loopback server scripted to misbehave (both API shapes)."""

from __future__ import annotations

import base64
import email.utils
import math
import socket
import time

import numpy as np
import pytest
from embed.fake_embed_server import DIM, FakeServer, Reply, fake_vector, make_remote

from ragraf.embed.errors import (
    ConnectionRefused,
    EmbedTimeout,
    InputRejected,
    MalformedResponse,
    NonFiniteVector,
    ProviderRejected,
    ProviderUnavailable,
    WrongDimension,
    WrongVectorCount,
)
from ragraf.embed.http import RetryPolicy, retry_after_seconds
from ragraf.embed.ollama import OllamaEmbedder
from ragraf.embed.remote import prefixes_for
from ragraf.errors import ConfigError, EmbedderError


def test_a_good_answer_gives_normalized_float32_rows_in_order(server, remote):
    vectors = remote.embed(["alpha beta", "gamma"])
    assert vectors.dtype == np.float32 and vectors.shape == (2, DIM)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    expected = np.asarray(fake_vector("gamma"))
    assert np.allclose(vectors[1], expected / np.linalg.norm(expected), atol=1e-6)
    request = server.requests[0]
    assert request.body["input"] == ["alpha beta", "gamma"] and request.body["model"] == remote.model
    assert request.path == ("/api/embed" if server.shape == "ollama" else "/v1/embeddings")


def test_the_model_id_names_provider_endpoint_and_model(server, remote):
    base = server.url if server.shape == "ollama" else server.url + "/v1"
    assert remote.model_id == f"{server.shape}:{base}:{remote.model}"


def test_tokens_are_recorded_as_the_provider_reports_them(server, remote):
    remote.embed(["one two three", "four"])
    remote.embed(["five six"])
    assert remote.tokens_used == 6
    assert remote.last_usage["total_tokens"] == 2


def test_openai_sends_the_bearer_key(sleeps):
    fake = FakeServer("openai")
    try:
        make_remote(fake, sleeps).embed(["x"])
        assert fake.requests[0].headers["authorization"] == "Bearer sk-test"
    finally:
        fake.close()


def test_the_dimension_is_learnt_from_the_first_answer(server, remote):
    assert remote.dim == DIM
    assert len(server.requests) == 1  # asked once
    remote.embed(["a"])
    assert remote.dim == DIM and len(server.requests) == 2


def test_429_with_retry_after_seconds_waits_that_long(server, remote, sleeps):
    server.script = [Reply(429, {"error": "slow down"}, {"Retry-After": "7"})]
    assert remote.embed(["a"]).shape == (1, DIM)
    assert sleeps == [7.0] and len(server.requests) == 2


def test_429_with_an_http_date_waits_until_then(server, remote, sleeps):
    when = email.utils.formatdate(time.time() + 5, usegmt=True)
    server.script = [Reply(429, {"error": "slow down"}, {"Retry-After": when})]
    remote.embed(["a"])
    assert len(sleeps) == 1 and 3.0 <= sleeps[0] <= 5.0


def test_429_without_retry_after_backs_off_exponentially(server, remote, sleeps):
    server.script = [Reply(429, {"error": "slow down"}), Reply(429, {"error": "slow down"})]
    remote.embed(["a"])
    assert sleeps == [1.0, 2.0]


def test_a_query_with_one_attempt_waits_a_retry_after_that_fits_its_budget(server, sleeps):
    query = make_remote(server, sleeps, retry=RetryPolicy(max_attempts=1, budget_s=5.0))
    server.script = [Reply(429, {"error": "slow down"}, {"Retry-After": "1"})]
    assert query.embed(["a"]).shape == (1, DIM)
    assert sleeps == [1.0] and len(server.requests) == 2


def test_a_query_with_one_attempt_waits_only_once_and_never_past_its_budget(server, sleeps):
    query = make_remote(server, sleeps, retry=RetryPolicy(max_attempts=1, budget_s=5.0))
    server.script = [Reply(429, {"error": "slow down"}, {"Retry-After": "1"})] * 3
    with pytest.raises(ProviderUnavailable, match="failed 2 times; last: HTTP 429"):
        query.embed(["a"])
    assert sleeps == [1.0] and len(server.requests) == 2
    sleeps.clear()
    server.requests.clear()
    server.script = [Reply(429, {"error": "slow down"}, {"Retry-After": "9"})]
    with pytest.raises(ProviderUnavailable, match="failed 1 times"):
        query.embed(["a"])
    assert sleeps == [] and len(server.requests) == 1


def test_a_retry_after_beyond_the_cap_fails_at_once(server, remote, sleeps):
    server.script = [Reply(429, {"error": "quota"}, {"Retry-After": "3600"})]
    with pytest.raises(ProviderUnavailable, match="rate limited for 3600 s"):
        remote.embed(["a"])
    assert sleeps == [] and len(server.requests) == 1


def test_500_then_503_then_success_is_retried(server, remote, sleeps):
    server.script = [Reply(500, "oops"), Reply(503, {"error": "loading"})]
    assert remote.embed(["a", "b"]).shape == (2, DIM)
    assert sleeps == [1.0, 2.0] and len(server.requests) == 3


def test_a_503_with_retry_after_waits_that_long(server, remote, sleeps):
    server.script = [Reply(503, {"error": "loading model"}, {"Retry-After": "3"})]
    remote.embed(["a"])
    assert sleeps == [3.0]


def test_a_server_that_keeps_failing_is_given_up_after_five_attempts(server, remote, sleeps):
    server.script = [Reply(503, {"error": "down"})] * 6
    with pytest.raises(ProviderUnavailable, match="failed 5 times; last: HTTP 503: down"):
        remote.embed(["a"])
    assert sleeps == [1.0, 2.0, 4.0, 8.0] and len(server.requests) == 5


def test_backoff_is_capped_at_thirty_seconds():
    policy = RetryPolicy(base_delay_s=5.0)
    assert [policy.backoff(n) for n in range(1, 6)] == [5.0, 10.0, 20.0, 30.0, 30.0]


def test_a_reset_connection_is_retried(server, remote, sleeps):
    server.script = [Reply(reset=True)]
    assert remote.embed(["a"]).shape == (1, DIM)
    assert sleeps == [1.0] and len(server.requests) == 2


def test_a_hang_past_the_timeout_raises_embed_timeout_without_retrying(server, sleeps):
    embedder = make_remote(server, sleeps, timeout_s=0.3)
    server.script = [Reply(hang=60)]
    start = time.monotonic()
    with pytest.raises(EmbedTimeout, match="did not answer within 0.3 s"):
        embedder.embed(["a"])
    # Only tells a cut request from one that waited out the hang, on any machine.
    assert time.monotonic() - start < 30
    assert sleeps == [] and len(server.requests) == 1


def test_the_wrong_number_of_vectors_is_an_error(server, remote):
    answer = server.answer(["a", "b", "c"])
    server.script = [Reply(body=answer)]
    with pytest.raises(WrongVectorCount, match="returned 3 vectors for 2 texts"):
        remote.embed(["a", "b"])


def test_vectors_of_mixed_dimension_are_an_error(server, remote):
    answer = server.answer(["a", "b"])
    rows = answer["embeddings"] if server.shape == "ollama" else [d["embedding"] for d in answer["data"]]
    rows[1].append(0.5)
    server.script = [Reply(body=answer)]
    with pytest.raises(WrongDimension, match="dimension 9 at position 1, expected 8"):
        remote.embed(["a", "b"])


def test_a_dimension_other_than_the_known_one_is_an_error(server, sleeps):
    embedder = make_remote(server, sleeps, dim=16)
    with pytest.raises(WrongDimension, match="expected 16"):
        embedder.embed(["a"])


def test_nan_in_a_vector_is_an_error(server, remote):
    answer = server.answer(["a", "b"])
    rows = answer["embeddings"] if server.shape == "ollama" else [d["embedding"] for d in answer["data"]]
    rows[0][3] = math.nan
    server.script = [Reply(body=answer)]
    with pytest.raises(NonFiniteVector, match=r"at \[0\]"):
        remote.embed(["a", "b"])


def test_malformed_json_is_an_error(server, remote, sleeps):
    server.script = [Reply(body='{"embeddings": [[0.1, 0.2')]
    with pytest.raises(MalformedResponse, match="invalid JSON"):
        remote.embed(["a"])
    assert sleeps == []


def test_json_without_the_expected_fields_is_an_error(server, remote):
    server.script = [Reply(body={"result": "ok"})]
    with pytest.raises(MalformedResponse):
        remote.embed(["a"])


def test_401_carries_the_providers_message_and_is_not_retried(server, remote, sleeps):
    message = {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}
    server.script = [Reply(401, message if server.shape == "openai" else {"error": "unauthorized: bad key"})]
    with pytest.raises(ProviderRejected) as caught:
        remote.embed(["a"])
    assert caught.value.status == 401
    assert "Incorrect API key provided" in caught.value.message or "bad key" in caught.value.message
    assert "RAGRAF_EMBED_API_KEY" in caught.value.suggest
    assert sleeps == [] and len(server.requests) == 1


def test_an_unknown_ollama_model_says_how_to_pull_it(sleeps):
    fake = FakeServer("ollama")
    try:
        fake.script = [Reply(404, {"error": 'model "nomic-embed-text" not found, try pulling it first'})]
        with pytest.raises(ProviderRejected, match="not found") as caught:
            make_remote(fake, sleeps).embed(["a"])
        assert "doctor --pull" in caught.value.suggest
    finally:
        fake.close()


def test_a_too_long_input_is_an_input_error_the_pipeline_can_isolate(server, remote):
    server.script = [Reply(400, {"error": "the input length exceeds the context length"})]
    with pytest.raises(InputRejected):
        remote.embed(["a"])


def test_a_refused_connection_names_the_endpoint_and_the_way_out(sleeps):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    embedder = OllamaEmbedder("nomic-embed-text", url, timeout_s=1.0, sleep=sleeps.append)
    with pytest.raises(ConnectionRefused) as caught:
        embedder.embed(["a"])
    assert caught.value.message == (
        f"embedding endpoint {url} refused the connection; start Ollama (ollama serve) "
        "or set RAGRAF_EMBEDDER=none for lexical-only search"
    )
    assert isinstance(caught.value, EmbedderError) and sleeps == []


def test_openai_answers_out_of_order_are_put_back_in_order(sleeps):
    fake = FakeServer("openai")
    try:
        answer = fake.answer(["a", "b", "c"])
        answer["data"].reverse()
        fake.script = [Reply(body=answer)]
        vectors = make_remote(fake, sleeps).embed(["a", "b", "c"])
        expected = np.asarray(fake_vector("a"))
        assert np.allclose(vectors[0], expected / np.linalg.norm(expected), atol=1e-6)
    finally:
        fake.close()


def test_openai_base64_embeddings_are_decoded(sleeps):
    fake = FakeServer("openai")
    try:
        raw = np.asarray(fake_vector("a"), dtype="<f4")
        fake.script = [
            Reply(body={"data": [{"index": 0, "embedding": base64.b64encode(raw.tobytes()).decode()}]})
        ]
        vector = make_remote(fake, sleeps).embed(["a"])[0]
        assert np.allclose(vector, raw / np.linalg.norm(raw), atol=1e-6)
    finally:
        fake.close()


def test_nomic_gets_its_document_and_query_prefixes(sleeps):
    fake = FakeServer("ollama")
    try:
        embedder = make_remote(fake, sleeps, model="nomic-embed-text")
        embedder.embed(["def f(): pass"])
        embedder.embed_query("where is f")
        assert fake.requests[0].body["input"] == ["search_document: def f(): pass"]
        assert fake.requests[1].body["input"] == ["search_query: where is f"]
    finally:
        fake.close()
    assert prefixes_for("intfloat/multilingual-e5-small") == ("passage: ", "query: ")
    assert prefixes_for("text-embedding-3-small") == ("", "")


def test_ollama_pull_reports_each_status_and_lists_models(sleeps):
    fake = FakeServer("ollama")
    try:
        embedder = make_remote(fake, sleeps, model="nomic-embed-text")
        statuses: list[str] = []
        embedder.pull(on_status=statuses.append)
        assert statuses == ["pulling manifest", "success"]
        assert fake.requests[-1].path == "/api/pull" and fake.requests[-1].body == {
            "model": "nomic-embed-text"
        }
        assert embedder.installed_models() == ["nomic-embed-text:latest"]
        fake.pull_lines = [{"error": "pull model manifest: file does not exist"}]
        with pytest.raises(ProviderRejected, match="file does not exist"):
            embedder.pull()
    finally:
        fake.close()


def test_retry_after_accepts_seconds_and_http_dates():
    now = 1_700_000_000.0
    assert retry_after_seconds("12", now) == 12.0
    assert retry_after_seconds(email.utils.formatdate(now + 30, usegmt=True), now) == 30.0
    assert retry_after_seconds(email.utils.formatdate(now - 30, usegmt=True), now) == 0.0
    assert retry_after_seconds("soon", now) is None
    assert retry_after_seconds(None, now) is None


def test_a_url_that_is_not_http_is_a_config_error():
    with pytest.raises(ConfigError, match="not an http"):
        OllamaEmbedder("m", "127.0.0.1:11434")
