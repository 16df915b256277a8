"""Short embedder fault campaign (reliability/embedder_faults.py): every fault once, OpenAI shape."""

from __future__ import annotations

import time

import pytest

from ragraf.embed.errors import EmbedTimeout
from ragraf.errors import EmbedderError
from reliability import embedder_faults
from reliability.embedder_faults import FAULTS, DripServer, Reply

pytestmark = pytest.mark.timeout(1800)  # only stops a hang


@pytest.fixture(scope="module")
def campaign() -> dict:
    return embedder_faults.run(shapes=("openai",), parallel=6, log=lambda line: None)


@pytest.mark.parametrize("fault", [f.name for f in FAULTS])
def test_each_fault_completes_or_stops_cleanly_and_the_next_clean_run_completes(
    campaign: dict, fault: str
) -> None:
    row = next(r for r in campaign["faults"] if r["fault"] == fault)
    assert row["ok"], row
    # Bounded work, whatever the machine's speed: retries (five attempts at most) and the bisection
    # of a batch with one bad text never send more requests than there are texts (14 of 36 at worst).
    assert row["requests"] <= row["total_chunks"], row


def test_no_wrong_vector_ever_enters_the_index_or_the_cache(campaign: dict) -> None:
    assert campaign["wrong_vectors"] == 0
    assert sum(r["index_vectors"] for r in campaign["faults"]) > 0


def _remote(url: str, timeout: float = 1.0) -> tuple[object, list[float]]:
    from ragraf.embed.openai_compat import OpenAIEmbedder

    sleeps: list[float] = []
    return OpenAIEmbedder("m", url, api_key="k", timeout_s=timeout, sleep=sleeps.append), sleeps


def test_a_slow_drip_answer_is_cut_at_the_request_timeout() -> None:
    server = DripServer("openai")
    # 20 pieces 3 s apart: a minute unless the 1 s timeout cuts it (the bound below only tells the two apart).
    server.script = [Reply(headers={"X-Drip": "3"})]
    embedder, _ = _remote(server.url + "/v1", timeout=1.0)
    try:
        t0 = time.monotonic()
        with pytest.raises(EmbedTimeout):
            embedder.embed(["a", "b", "c"])
        assert time.monotonic() - t0 < 30
    finally:
        server.close()


def test_tls_to_a_plain_port_fails_at_once_without_retries() -> None:
    server = DripServer("openai")
    embedder, sleeps = _remote(server.url.replace("http://", "https://") + "/v1")
    try:
        with pytest.raises(EmbedderError) as caught:
            embedder.embed(["a"])
        assert sleeps == []
        assert "http://" in (caught.value.message + caught.value.suggest)
    finally:
        server.close()
