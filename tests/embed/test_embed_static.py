"""The static tier: the shipped table, its vectors, damaged tables, and the index's two tiers."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest
from embed.fake_embed_server import FakeServer
from support import SAMPLE, cli_json, write

from ragraf import Index
from ragraf.embed.errors import ModelFileError
from ragraf.embed.static import TABLE, StaticEmbedder, load_table, pack_table, static_query_text
from ragraf.search.tiers import fuse_tiers
from ragraf.store import ChunkHit


def test_the_shipped_table_loads_within_its_memory_and_size_limits() -> None:
    table, recipe, sha = load_table(TABLE)
    assert TABLE.stat().st_size <= 20 * 1024 * 1024
    assert table.dtype == np.float32 and table.nbytes <= 100 * 1024 * 1024
    assert recipe["source"].startswith("all-MiniLM-L6-v2") and len(sha) == 64
    assert StaticEmbedder().model_id.startswith(f"static:minilm@{sha[:12]}/")


def test_vectors_are_unit_length_deterministic_and_independent_of_their_batch() -> None:
    embedder = StaticEmbedder()
    texts = ["def check_password(user, password):", "parseJsonBody(request)", "retry with backoff"]
    together = embedder.embed(texts)
    alone = np.stack([embedder.embed([t])[0] for t in texts])
    assert np.array_equal(together, alone)
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    assert embedder.embed_query(texts[1]) @ embedder.embed(["parse JSON body of a request"])[0] > 0.5


def test_a_repeated_token_weighs_the_square_root_of_its_count() -> None:
    embedder = StaticEmbedder()
    embedder.load()
    table = embedder._table
    assert table is not None
    [server], [error] = embedder.token_ids(["server", "error"])  # one WordPiece each
    want = 3.0 * table[server] + table[error]  # "server" nine times: weight 3, not 9
    want /= np.linalg.norm(want)
    got = embedder.embed(["server " * 9 + "error"])[0]
    assert np.allclose(got, want, atol=1e-5)
    assert not np.allclose(got, embedder.embed(["server error"])[0], atol=1e-3)


def test_word_by_word_tokenizing_gives_the_tokenizers_own_ids() -> None:
    from tokenizers import Tokenizer

    from ragraf.embed.static import TOKENIZER
    from ragraf.tokens import camel_words

    tokenizer = Tokenizer.from_file(str(TOKENIZER))
    tokenizer.no_padding()
    tokenizer.enable_truncation(512)
    texts = [
        *SAMPLE.values(),
        "class HTTPServer(BaseServer):\n    def getUserName2(self) -> str: return self._user_name  # id42",
        "a" * 150 + " " + "xY" * 80,  # words past WordPiece's 100 characters are [UNK]
        "parse(" * 400,  # past 512 tokens: cut as the tokenizer cuts
        "caf\u00e9 na\u00efve \u4e2d\u6587 \U0001f600 safeParse",  # not ASCII: tokenized whole
        "ctrl\x01chars\x7fjoin up",  # characters the normalizer deletes: tokenized whole
        "tabs\tand\r\nnewlines;;;{}[]()<>=+-*/%&|^~!@#$`'\"\\?.,:",
        "",
    ]
    embedder = StaticEmbedder()
    for _ in range(2):  # the second time from the word cache
        got = embedder.token_ids(texts)
        want = [
            e.ids for e in tokenizer.encode_batch([camel_words(t) for t in texts], add_special_tokens=False)
        ]
        assert got == want


def test_a_query_is_embedded_from_its_content_words() -> None:
    embedder = StaticEmbedder()
    asked = embedder.embed_query("How does the server handle a retry with backoff?")
    assert np.array_equal(asked, embedder.embed(["server retry backoff ?"])[0])
    assert static_query_text("how is it done?") == "?"
    assert static_query_text("how is it") == "how is it"  # nothing else left: the query whole
    assert np.isfinite(embedder.embed_query("the of and")).all()


@pytest.mark.parametrize("text", ["", "!!!! ???? ;;;; {}[]()", "\u2603\u2603 \U0001f600 \x00", "   \n\t"])
def test_punctuation_empty_and_unknown_text_get_a_finite_unit_vector(text: str) -> None:
    vector = StaticEmbedder().embed([text])[0]
    assert np.isfinite(vector).all()
    assert np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize(
    "damage", [lambda b: b[: len(b) // 2], lambda b: b"not a table at all", lambda b: b[:100] + b"\0" * 5000]
)
def test_a_truncated_or_corrupt_table_names_the_file_and_the_fix(tmp_path: Path, damage) -> None:
    bad = tmp_path / "static.npz"
    bad.write_bytes(damage(TABLE.read_bytes()))
    with pytest.raises(ModelFileError) as caught:
        StaticEmbedder(bad).embed(["x"])
    assert str(bad) in caught.value.message and "pip install --force-reinstall ragraf" in caught.value.suggest


def test_a_table_of_another_vocabulary_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "small.npz"
    pack_table(other, np.ones((10, 8), dtype=np.float32), {"format": "ragraf-static-1"})
    with pytest.raises(ModelFileError, match="10 rows for a 30522-token vocabulary"):
        StaticEmbedder(other).load()


def test_packing_the_same_table_twice_gives_the_same_bytes(tmp_path: Path) -> None:
    table = np.random.default_rng(0).standard_normal((50, 16)).astype(np.float32)
    a, b = tmp_path / "a.npz", tmp_path / "b.npz"
    assert pack_table(a, table, {"format": "ragraf-static-1"}) == pack_table(
        b, table, {"format": "ragraf-static-1"}
    )
    assert a.read_bytes() == b.read_bytes()


def test_embedder_static_makes_the_index_fully_semantic_in_the_index_run(sample: Path) -> None:
    env = {"RAGRAF_EMBEDDER": "static"}
    report = cli_json("index", "--root", str(sample), env=env)
    assert report["warnings"] == [] and "static_embeddings" not in report
    found = cli_json("search", "pool of keep-alive network connections", "--root", str(sample), env=env)
    cap = found["capability"]
    assert cap["semantic_coverage"] == 1.0 and cap["tiers"] == {"static": 1.0} and not cap["degraded"]
    vector = cli_json(
        "search", "exponential waiting between attempts", "--mode", "vector", "--root", str(sample), env=env
    )
    assert vector["results"] and not vector["capability"]["degraded"]


def test_a_damaged_table_answers_lexically_with_the_warning_first(sample: Path, tmp_path: Path) -> None:
    bad = tmp_path / "static.npz"
    bad.write_bytes(TABLE.read_bytes()[:4096])
    env = {"RAGRAF_EMBEDDER": "static", "RAGRAF_STATIC_TABLE": str(bad)}
    report = cli_json("index", "--root", str(sample), env=env)
    assert any(str(bad) in w for w in report["warnings"]), report["warnings"]
    found = cli_json("search", "TCPConnector", "--root", str(sample), env=env)
    cap = found["capability"]
    assert cap["degraded"] and str(bad) in cap["reasons"][0] and "lexical" in cap["reasons"][0]
    assert found["results"]


@pytest.fixture
def fake() -> FakeServer:
    server = FakeServer("openai")
    yield server
    server.close()


def _two_tiers(server: FakeServer) -> dict[str, str]:
    return {
        "RAGRAF_EMBEDDER": "openai",
        "RAGRAF_EMBED_URL": server.url,
        "RAGRAF_EMBED_MODEL": "m",
        "RAGRAF_EMBED_API_KEY": "k",
    }


def test_two_tiers_the_static_one_first_and_each_tier_reported(sample: Path, fake: FakeServer) -> None:
    env = _two_tiers(fake)
    report = cli_json("index", "--root", str(sample), env=env)
    chunks = report["chunks"]["total"]
    assert report["static_embeddings"]["computed"] == chunks and report["embeddings"]["computed"] == chunks
    full = cli_json("search", "retry with backoff", "--root", str(sample), env=env)
    assert full["capability"]["tiers"] == {"transformer": 1.0, "static": 1.0}
    assert full["capability"]["semantic_coverage"] == 1.0 and full["capability"]["reasons"] == []

    # Half the transformer's vectors gone (as if its run were still going): every chunk is still
    # covered, the static tier answering for the rest, and the answer says so.
    db = Index.open(sample).settings.db_path
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM meta WHERE key LIKE 'covered:%'")
        conn.execute("DELETE FROM vectors WHERE model NOT LIKE 'static:%' AND chunk_id % 2 = 0")
    half = cli_json("search", "retry with backoff", "--mode", "vector", "--root", str(sample), env=env)
    cap = half["capability"]
    assert 0 < cap["tiers"]["transformer"] < 1 and cap["tiers"]["static"] == 1.0
    assert cap["semantic_coverage"] == 1.0 and not cap["degraded"]
    assert any("static tier answers for the other chunks" in r for r in cap["reasons"]), cap["reasons"]
    assert len(half["results"]) == min(5, chunks)


def test_changing_the_static_table_rebuilds_and_reembeds_only_that_tier(
    sample: Path, fake: FakeServer, tmp_path: Path
) -> None:
    env = _two_tiers(fake)
    cli_json("index", "--root", str(sample), env=env)
    table, recipe, _ = load_table(TABLE)
    other = tmp_path / "other.npz"
    pack_table(other, table[:, ::-1].copy(), recipe)
    again = cli_json("index", "--root", str(sample), env={**env, "RAGRAF_STATIC_TABLE": str(other)})
    assert again["full_rebuild"] and "index version mismatch" in again["reason"]
    assert again["static_embeddings"]["computed"] == again["chunks"]["total"]
    assert again["embeddings"]["computed"] == 0  # the transformer's vectors stayed with their chunks


def test_fuse_tiers_ranks_by_both_tiers_the_transformer_counting_more() -> None:
    def hit(chunk_id: int) -> ChunkHit:
        return ChunkHit(chunk_id, f"c{chunk_id}", 1, 1, None, "", 0.0)

    # The transformer has embedded chunks 1-3; the static tier ranks all of them.
    transformer = [hit(3), hit(1), hit(2)]
    static = [hit(1), hit(7), hit(8), hit(9), hit(3)]
    fused = fuse_tiers(transformer, static, 5)
    # 1: 2/102 + 1/101 (both judge it near), 3: 2/101 + 1/105, 2: 2/103; static alone 7: 1/102
    assert [h.chunk_id for h in fused] == [1, 3, 2, 7, 8]
    assert [h.score for h in fused] == sorted((h.score for h in fused), reverse=True)
    assert [h.chunk_id for h in fuse_tiers([], static, 3)] == [1, 7, 8]
    # Over a quarter of the chunks, the transformer's second is about the fifth of all:
    # 1: 2/105 + 1/101, 3: 2/101 + 1/105, 2: 2/109.
    assert [h.chunk_id for h in fuse_tiers(transformer, static, 5, coverage=0.25)] == [3, 1, 2, 7, 8]


def test_the_same_content_at_a_second_path_needs_no_static_vector_again(tmp_path: Path) -> None:
    a = tmp_path / "a"
    write(a, SAMPLE)
    env = {"RAGRAF_EMBEDDER": "static"}
    cli_json("index", "--root", str(a), env=env)
    write(a, {"src/copy.py": (a / "src/app/retry.py").read_text()})
    second = cli_json("index", "--root", str(a), env=env)
    assert second["embeddings"]["computed"] == 0


def _stored_vectors(idx: Index) -> dict[int, np.ndarray]:
    db = sqlite3.connect(str(idx.settings.db_path))
    try:
        return {
            cid: np.frombuffer(vec, dtype=np.float32)
            for cid, vec in db.execute("SELECT chunk_id, vec FROM vectors")
        }
    finally:
        db.close()


@pytest.mark.parametrize("files", [6, 90])  # one forked worker; a pool of spawned ones
def test_each_new_chunk_gets_its_static_vector_beside_the_parse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: int
) -> None:
    from ragraf.index import embedding
    from ragraf.index.embedding import embed_text

    root = tmp_path / "repo"
    write(
        root,
        {
            f"pkg/m{i:03d}.py": f"def handler_{i}(request):\n    return retry(request, {i})\n"
            for i in range(files)
        },
    )
    after: list[int] = []  # texts the embedding phase embeds after the parse, in this process
    phase = embedding.embed_with_cache
    monkeypatch.setattr(
        embedding,
        "embed_with_cache",
        lambda e, c, texts, *a: after.append(len(texts)) or phase(e, c, texts, *a),
    )
    idx = Index.open(root, home=str(tmp_path / "home"), embedder="static")
    report = idx.index()
    chunks = report.chunks["total"]
    assert sum(after) == 0 and report.embeddings["computed"] == chunks == files
    stored = _stored_vectors(idx)
    rev = idx.store().current_revision()
    assert rev is not None
    hits = [h for i in range(files) for h in idx.store().chunks_of(rev.rev_no, f"pkg/m{i:03d}.py")]
    assert len(hits) == len(stored) == chunks
    fresh = StaticEmbedder().embed([embed_text(h) for h in hits])
    assert np.array_equal(
        np.stack([stored[h.chunk_id] for h in hits]), fresh
    )  # as the phase would embed them
    # --lexical-only leaves embeddings for later, the static tier's too.
    write(root, {"pkg/late.py": "def arrived_late():\n    return 0\n"})
    assert idx.index(lexical_only=True).files["added"] == 1
    assert len(_stored_vectors(idx)) == chunks
    assert idx.index().embeddings["computed"] == 1 and len(_stored_vectors(idx)) == chunks + 1
    assert sum(after) == 1  # that one by the embedding phase
    idx.close()
