"""Rankings independent of k: one candidate pool and one ranking, which each k only cuts."""

from __future__ import annotations

from pathlib import Path

import pytest
from adapters.servers import mcp_client
from support import cli_json, write

from ragraf import Index

pytestmark = pytest.mark.anyio

TOPICS = ["cache", "retry", "socket", "token", "parser", "queue", "route", "schema"]
QUERIES = [
    "retry the request with a backoff",
    "cache eviction of expired entries",
    "parse_token",
    "QueueWorker",
    "where are routes registered",
    "socket timeout while reading the schema",
    "teardown request callbacks",
    "validate schema fields and raise errors",
]


def crowded_repository(root: Path) -> Path:
    """Forty files that share their words, several functions each, adjacent ones among them: more
    candidates than any k, so a pool sized by k would rank them differently."""
    files: dict[str, str | bytes] = {}
    for i in range(40):
        a, b = TOPICS[i % len(TOPICS)], TOPICS[(i * 3 + 1) % len(TOPICS)]
        body = [f'"""The {a} and {b} helpers of part {i}."""\n']
        for j in range(4):
            body.append(
                f"\n\ndef {a}_{b}_{j}(request, timeout={i + j}):\n"
                f'    """Handle the {a} of a request: retry on a {b} error, then raise."""\n'
                + "".join(f"    step_{n} = request.{a}({n}, '{b}')\n" for n in range(12 + i % 5))
                + f"    return {b}_{j}\n"
            )
        if i % 5 == 0:
            body.append(
                f"\n\nclass {a.title()}{b.title()}Worker:\n    def teardown_request(self):\n        return {i}\n"
            )
        folder = "tests" if i % 7 == 0 else "src/pkg"
        name = f"test_{a}_{i}.py" if folder == "tests" else f"{a}_{b}_{i}.py"
        files[f"{folder}/{name}"] = "".join(body)
    files["docs/guide.md"] = (
        "# Guide\n\nRetry the request with a backoff; the cache evicts expired entries.\n"
    )
    write(root, files)
    return root


@pytest.fixture(scope="module")
def crowded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = crowded_repository(tmp_path_factory.mktemp("crowded") / "repo")
    with Index.open(root, embedder="local") as idx:
        idx.index()
    return root


def _ranked(env: object) -> list[tuple[str, int, int, float]]:
    return [(r.path, r.start_line, r.end_line, r.score) for r in env.results]  # type: ignore[attr-defined]


@pytest.mark.parametrize("mode", ["hybrid", "lexical", "vector"])
def test_the_top_k_is_the_first_k_of_the_top_ten_for_every_k(crowded: Path, mode: str) -> None:
    with Index.open(crowded, embedder="local") as idx:
        for query in QUERIES:
            ten = _ranked(idx.search(query, k=10, mode=mode))
            assert len(ten) == 10, (query, mode)  # the corpus holds more than ten answers to each
            for k in range(1, 10):
                assert _ranked(idx.search(query, k=k, mode=mode)) == ten[:k], (query, mode, k)


def test_k_zero_answers_no_results_but_the_freshness(crowded: Path) -> None:
    with Index.open(crowded, embedder="local") as idx:
        env = idx.search("QueueWorker", k=0)
    assert env.results == [] and env.state == "fresh" and env.index_rev


async def test_mcp_search_at_top_k_5_is_the_first_five_of_the_cli_at_k_10(crowded: Path) -> None:
    env = {"RAGRAF_EMBEDDER": "local"}
    for query in QUERIES[:4]:
        cli = cli_json("search", query, "-k", "10", "--root", str(crowded), env=env)
        async with mcp_client(crowded, env=env) as client:
            result = await client.call_tool("search", {"query": query, "top_k": 5})
        mcp = result.structured_content["results"]
        key = ("path", "start_line", "end_line", "score")
        assert [[r[f] for f in key] for r in mcp] == [[r[f] for f in key] for r in cli["results"][:5]]


def test_a_search_unpacks_the_text_of_the_chunks_it_shows_not_of_its_whole_pool(
    crowded: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ragraf.store.base as base

    unpacked: list[int] = []
    real = base.unpack_text

    def counting(stored: bytes | str) -> str:
        unpacked.append(1)
        return real(stored)

    with Index.open(crowded, embedder="local") as idx:
        idx.search("retry the request with a backoff", k=10)  # warm: the path index loads
        store = idx.store()
        rev_no = store.current_revision().rev_no
        drawn = store.lexical_search('"retry" OR "request" OR "backoff"', rev_no, 100)
        monkeypatch.setattr(base, "unpack_text", counting)
        env = idx.search("retry the request with a backoff", k=10, mode="lexical")
    assert len(env.results) == 10 and all(r.snippet for r in env.results)
    # The lexical pool alone holds far more chunks than are shown; only shown ones were unpacked.
    assert len(drawn) > 60 and 10 <= len(unpacked) <= 20, (len(drawn), len(unpacked))
