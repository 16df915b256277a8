"""Embedder fault campaign: `ragraf index` against a loopback embedding server that misbehaves.

For every fault (429 with and without Retry-After, 500/502/503, resets, a hang past the timeout,
a slow drip, wrong vector count, wrong dimension, NaN, malformed JSON, a 400 for one text, 401,
TLS to a plain port, nothing listening) one run of `ragraf index` meets the fault, then:

- the run either completes (after bounded retries) or stops with a clear warning or error, in
  bounded time, leaving a state `ragraf doctor --check` accepts;
- no wrong vector entered the index or the shared cache: every stored vector is compared with
  the fake server's deterministic vector for the text it was computed from;
- a clean run (the fault gone) completes: semantic coverage 1.0.

    python -m reliability.embedder_faults [--shapes openai,ollama]
"""

from __future__ import annotations

import argparse
import shutil
import socket
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from reliability.common import (
    base_env,
    cli_json,
    copy_stdlib,
    index_db_path,
    loadavg,
    read_db,
    save_result,
    use_test_helpers,
)

use_test_helpers()
from embed.fake_embed_server import DIM, FakeServer, Reply, Request, fake_vector  # noqa: E402

TIMEOUT_S = 1.0
BATCH = 8
POISON = "reliability_poison_marker"
PROBE = ["dimension probe"]
MODEL = {"openai": "fault-model", "ollama": "fault-model"}


class DripServer(FakeServer):
    """The fake server, plus answers sent slowly: a reply with header X-Drip: SECONDS sends its
    body in 20 pieces that far apart (each piece well inside the client's read timeout)."""

    def _handler(self) -> type:
        base = super()._handler()

        class Handler(base):  # type: ignore[misc, valid-type]
            def _send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
                drip = float(headers.pop("X-Drip", 0) or 0)
                if not drip:
                    super()._send(status, body, headers)
                    return
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.flush()
                step = max(1, len(body) // 20)
                for i in range(0, len(body), step):
                    self.wfile.write(body[i : i + step])
                    self.wfile.flush()
                    time.sleep(drip)

        return Handler


def _texts(request: Request) -> list[str]:
    body = request.body if isinstance(request.body, dict) else {}
    texts = body.get("input", [])
    return texts if isinstance(texts, list) else [texts]


@dataclass(frozen=True)
class Fault:
    """One fault: which requests it hits and what they get instead of an answer."""

    name: str
    description: str
    # transient: the first `times` embedding requests; persistent: all; after: all once `times` have
    # been answered well; poison: those holding the POISON text
    mode: str
    reply: Callable[[FakeServer, list[str]], Reply] | None = None
    times: int = 2
    url: str = ""  # "tls": https to the plain port; "refused": a port nothing listens on

    def rule(self, server: FakeServer) -> Callable[[Request], Reply | None]:
        lock = threading.Lock()
        hits = [0]

        def rule(request: Request) -> Reply | None:
            texts = _texts(request)
            if texts == PROBE or self.reply is None:
                return None
            if self.mode == "poison" and not any(POISON in t for t in texts):
                return None
            with lock:
                hits[0] += 1
                if self.mode == "transient" and hits[0] > self.times:
                    return None
                if self.mode == "after" and hits[0] <= self.times:
                    return None
            return self.reply(server, texts)

        return rule


def _wrong_count(server: FakeServer, texts: list[str]) -> Reply:
    return Reply(body=server.answer(texts[:-1] if len(texts) > 1 else [*texts, texts[0]]))


def _wrong_dim(server: FakeServer, texts: list[str]) -> Reply:
    body = server.answer(texts)
    vectors = [fake_vector(t, DIM + 3) for t in texts]
    if "embeddings" in body:
        body["embeddings"] = vectors
    else:
        for item, v in zip(body["data"], vectors, strict=True):
            item["embedding"] = v
    return Reply(body=body)


def _nan(server: FakeServer, texts: list[str]) -> Reply:
    body = server.answer(texts)
    rows = body["embeddings"] if "embeddings" in body else [d["embedding"] for d in body["data"]]
    for text, row in zip(texts, rows, strict=True):
        if POISON in text:
            row[0] = float("nan")
    return Reply(body=body)


def _drip(server: FakeServer, texts: list[str]) -> Reply:
    # 20 pieces 0.4 s apart: 8 s in all, each gap well under the 1 s timeout.
    return Reply(headers={"X-Drip": "0.4"})


def _context_400(server: FakeServer, texts: list[str]) -> Reply:
    return Reply(400, {"error": {"message": "input exceeds the maximum context length of 512 tokens"}})


FAULTS: list[Fault] = [
    Fault("429 Retry-After", "429 with Retry-After: 1, twice", "transient", lambda s, t: Reply(429, {"error": "slow down"}, {"Retry-After": "1"})),
    Fault("429 no Retry-After", "429 without Retry-After, twice", "transient", lambda s, t: Reply(429, {"error": "slow down"})),
    Fault("500", "HTTP 500, twice", "transient", lambda s, t: Reply(500, "internal error")),
    Fault("502", "HTTP 502, twice", "transient", lambda s, t: Reply(502, "<html>bad gateway</html>")),
    Fault("503", "HTTP 503, twice", "transient", lambda s, t: Reply(503, {"error": "overloaded"})),
    Fault("reset", "connection reset, twice", "transient", lambda s, t: Reply(reset=True)),
    Fault("500 persistent", "HTTP 500 on every embedding request", "persistent", lambda s, t: Reply(500, "down")),
    Fault("500 mid-run", "HTTP 500 on every request after 2 good batches", "after", lambda s, t: Reply(500, "down")),
    Fault("429 persistent", "429 Retry-After: 1 on every embedding request", "persistent", lambda s, t: Reply(429, {"error": "quota"}, {"Retry-After": "1"})),
    Fault("hang", "no answer for 3x the timeout, once", "transient", lambda s, t: Reply(hang=3 * TIMEOUT_S), times=1),
    Fault("hang on one text", "every request holding one text hangs past the timeout", "poison", lambda s, t: Reply(hang=2 * TIMEOUT_S)),
    Fault("slow drip", "the answer dribbles in over 8 s (timeout 1 s), once", "transient", _drip, times=1),
    Fault("wrong count", "one vector too few, once", "transient", _wrong_count, times=1),
    Fault("wrong dimension", f"vectors of dimension {DIM + 3} instead of {DIM}, once", "transient", _wrong_dim, times=1),
    Fault("NaN", "NaN in the vector of one text, always", "poison", _nan),
    Fault("malformed JSON", "a body that is not JSON, once", "transient", lambda s, t: Reply(body="{not json"), times=1),
    Fault("400 one text", "400 context length for one text, always", "poison", _context_400),
    Fault("401", "401 unauthorized on every embedding request", "persistent", lambda s, t: Reply(401, {"error": {"message": "invalid api key"}})),
    Fault("TLS to plain port", "RAGRAF_EMBED_URL=https:// to a plain-HTTP port", "persistent", None, url="tls"),
    Fault("nothing listening", "RAGRAF_EMBED_URL to a closed port", "persistent", None, url="refused"),
]  # fmt: skip


def make_corpus(root: Path) -> int:
    """stdlib json (small, real) plus one file whose text the poison faults key on."""
    n = copy_stdlib(root, ("json",))
    (root / "poison.py").write_text(
        f'"""Module with the marker the poison faults look for."""\n\n\ndef {POISON}(x):\n'
        f'    """{POISON} appears here only."""\n    return x * 2\n',
        encoding="utf-8",
    )
    return n + 1


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check_vectors(db_path: Path, cache_dir: Path, model_id: str, shape: str) -> dict[str, int]:
    """Every stored vector (index and cache) against the fake server's vector for its text."""
    from ragraf.embed.cache import CACHE_FILE, cache_key
    from ragraf.index.embedding import embed_text
    from ragraf.store import ChunkHit
    from ragraf.store.sqlite.sql import unpack_text

    def expected(text: str) -> np.ndarray:
        v = np.asarray(fake_vector(text), dtype=np.float64)
        return (v / np.linalg.norm(v)).astype(np.float32)

    counts = {"index_vectors": 0, "index_wrong": 0, "cache_checked": 0, "cache_wrong": 0, "cache_entries": 0}
    with read_db(db_path) as db:
        paths: dict[int, list[str]] = {}
        for content_id, path in db.execute("SELECT DISTINCT content_id, path FROM manifest"):
            paths.setdefault(content_id, []).append(path)
        chunks = {
            r[0]: r[1:]
            for r in db.execute("SELECT id, content_id, start_line, end_line, symbol, text FROM chunks")
        }
        texts_of: dict[int, list[str]] = {}
        for cid, (content_id, start, end, symbol, text) in chunks.items():
            texts_of[cid] = [
                embed_text(ChunkHit(cid, p, start, end, symbol, unpack_text(text), 0.0))
                for p in paths.get(content_id, [])
            ]
        for chunk_id, model, dim, blob in db.execute("SELECT chunk_id, model, dim, vec FROM vectors"):
            counts["index_vectors"] += 1
            vec = np.frombuffer(blob, dtype=np.float32)
            if model.startswith("static:"):  # the static tier's, computed here, never the server's
                counts["index_wrong"] += not (np.isfinite(vec).all() and abs(float(vec @ vec) - 1.0) < 1e-3)
                continue
            ok = (
                model == model_id
                and dim == DIM
                and len(vec) == DIM
                and bool(np.isfinite(vec).all())
                and any(float(vec @ expected(t)) > 0.9999 for t in texts_of.get(chunk_id, []))
            )
            counts["index_wrong"] += not ok
    cache_file = cache_dir / CACHE_FILE
    if cache_file.exists():
        with sqlite3.connect(f"file:{cache_file}?mode=ro", uri=True) as cache:
            counts["cache_entries"] = cache.execute("SELECT count(*) FROM vectors").fetchone()[0]
            row = cache.execute("SELECT id FROM models WHERE model_id = ?", (model_id,)).fetchone()
            if row:
                for texts in texts_of.values():
                    for text in texts:
                        got = cache.execute(
                            "SELECT vector FROM vectors WHERE key = ? AND model = ?",
                            (cache_key(model_id, text), row[0]),
                        ).fetchone()
                        if got is None:
                            continue
                        counts["cache_checked"] += 1
                        vec = np.frombuffer(got[0], dtype=np.float32)
                        counts["cache_wrong"] += not (
                            len(vec) == DIM
                            and bool(np.isfinite(vec).all())
                            and float(vec @ expected(text)) > 0.9999
                        )
    return counts


def _open(corpus: Path, env: dict[str, str], embedder: str) -> Any:
    from ragraf import Index

    return Index.open(
        corpus,
        home=env["RAGRAF_HOME"],
        cache_dir=env["RAGRAF_CACHE_DIR"],
        embedder=embedder,
        embed_url=env["RAGRAF_EMBED_URL"],
        embed_model=env["RAGRAF_EMBED_MODEL"],
    )


def _coverage(corpus: Path, env: dict[str, str]) -> float | None:
    """semantic_coverage as `ragraf status` reports it (status does not call the embedder)."""
    with _open(corpus, env, env["RAGRAF_EMBEDDER"]) as idx:
        return idx.status().capability.semantic_coverage


def _consistency(corpus: Path, env: dict[str, str]) -> dict[str, Any]:
    """The data check of `ragraf doctor --check` (embedder none: no probe of a faulty endpoint;
    the vectors checked are those of the revision's own model)."""
    with _open(corpus, env, "none") as idx:
        checks = idx.doctor(check=True).results
    found = next((c for c in checks if c["check"] == "consistency"), {"ok": False, "detail": "no check ran"})
    return {"ok": found["ok"], "detail": found["detail"]}


def run_fault(fault: Fault, shape: str, corpus: Path, work: Path) -> dict[str, Any]:
    """One fault: a faulty run, the checks, then a clean run."""
    server = DripServer(shape)
    home, cache = work / "home", work / "cache"
    suffix = "/v1" if shape == "openai" else ""
    url = server.url + suffix
    if fault.url == "tls":
        url = url.replace("http://", "https://")
    elif fault.url == "refused":
        url = f"http://127.0.0.1:{_closed_port()}{suffix}"
    env = base_env(
        home,
        cache,
        shape,
        RAGRAF_EMBED_URL=url,
        RAGRAF_EMBED_MODEL=MODEL[shape],
        RAGRAF_EMBED_BATCH_SIZE=str(BATCH),
        RAGRAF_EMBED_TIMEOUT_S=str(TIMEOUT_S),
        RAGRAF_EMBED_API_KEY="sk-test",
    )
    try:
        server.rule = fault.rule(server)
        t0 = time.monotonic()
        code, report = cli_json("index", "--root", str(corpus), env=env, timeout=600)
        took = time.monotonic() - t0
        requests = len(server.requests)
        coverage = _coverage(corpus, env)
        consistency = _consistency(corpus, env)
        model_id = f"{shape}:{url.rstrip('/')}:{MODEL[shape]}"
        db_path = index_db_path(corpus, env)
        vectors = check_vectors(db_path, cache, model_id, shape)
        # The fault goes away (a TLS or dead URL is corrected to the plain, live one).
        server.rule = None
        clean_env = dict(env, RAGRAF_EMBED_URL=server.url + suffix)
        t1 = time.monotonic()
        vectors_after_fault = vectors["index_vectors"]
        clean_code, clean = cli_json("index", "--root", str(corpus), env=clean_env, timeout=600)
        clean_s = time.monotonic() - t1
        clean_coverage = _coverage(corpus, clean_env)
        clean_model = f"{shape}:{server.url}{suffix}:{MODEL[shape]}"
        clean_vectors = check_vectors(db_path, cache, clean_model, shape)
        clean_consistency = _consistency(corpus, clean_env)
    finally:
        server.close()
    emb = report.get("embeddings") or {}
    warnings = report.get("warnings") or []
    error = report.get("error") or {}
    if code != 0:
        outcome = "error exit"
    elif coverage == 1.0:
        outcome = "completed"
    elif emb.get("failed"):
        outcome = f"completed, {emb['failed']} text(s) not embedded"
    else:
        outcome = "stopped with a warning"
    message = error.get("message") or (warnings[0] if warnings else report.get("stderr", ""))
    return {
        "fault": fault.name,
        "shape": shape,
        "description": fault.description,
        "outcome": outcome,
        "exit": code,
        "duration_s": round(took, 2),
        "requests": requests,
        "embedded": emb.get("computed"),
        "failed_texts": emb.get("failed"),
        "coverage_after_fault": coverage,
        "message": message[:400],
        "revision": report.get("index_rev"),
        "doctor_consistency_ok": consistency["ok"],
        "doctor_detail": consistency["detail"],
        "index_vectors": vectors["index_vectors"],
        "wrong_vectors_index": vectors["index_wrong"],
        "cache_vectors_checked": vectors["cache_checked"],
        "wrong_vectors_cache": vectors["cache_wrong"],
        "clean_run_exit": clean_code,
        "clean_run_s": round(clean_s, 2),
        "clean_run_warnings": clean.get("warnings"),
        "vectors_kept_from_faulty_run": vectors_after_fault,
        "clean_run_computed": (clean.get("embeddings") or {}).get("computed"),
        "clean_run_cache_hits": (clean.get("embeddings") or {}).get("cache_hits"),
        "total_chunks": (clean.get("chunks") or {}).get("total"),
        "coverage_after_clean_run": clean_coverage,
        "wrong_vectors_after_clean_run": clean_vectors["index_wrong"] + clean_vectors["cache_wrong"],
        "doctor_after_clean_run": clean_consistency["ok"],
    }


def verdict(row: dict[str, Any]) -> bool:
    """The campaign's promise for one fault."""
    # Complete, or incomplete and saying so: a warning, an error, or the texts counted as failed.
    stopped_cleanly = row["outcome"] == "completed" or bool(row["message"]) or bool(row["failed_texts"])
    return (
        row["exit"] == 0
        and stopped_cleanly
        and row["doctor_consistency_ok"] is True
        and row["wrong_vectors_index"] == 0
        and row["wrong_vectors_cache"] == 0
        and row["clean_run_exit"] == 0
        and row["coverage_after_clean_run"] == 1.0
        and row["wrong_vectors_after_clean_run"] == 0
        and row["doctor_after_clean_run"] is True
    )


def run(
    shapes: tuple[str, ...] = ("openai", "ollama"),
    only: list[str] | None = None,
    workdir: Path | None = None,
    log: Callable[[str], None] = print,
    parallel: int = 1,
) -> dict[str, Any]:
    """Every fault (or those named in only) for every server shape; `parallel` faults at a time
    (each has its own server, index and cache; timings are cleanest with 1)."""
    tmp = Path(workdir or tempfile.mkdtemp(prefix="ragraf-faults-"))
    corpus = tmp / "corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    files = make_corpus(corpus)
    t0 = time.monotonic()
    jobs = [(shape, fault) for shape in shapes for fault in FAULTS if not only or fault.name in only]

    def one(i: int) -> dict[str, Any]:
        shape, fault = jobs[i]
        work = tmp / f"{shape}-{i}"
        row = run_fault(fault, shape, corpus, work)
        row["ok"] = verdict(row)
        log(
            f"{shape} {fault.name}: {row['outcome']} in {row['duration_s']} s, {row['requests']} requests; "
            f"wrong vectors {row['wrong_vectors_index']}+{row['wrong_vectors_cache']}; clean run coverage "
            f"{row['coverage_after_clean_run']}; {'ok' if row['ok'] else 'PROBLEM'}; {row['message'][:160]}"
        )
        shutil.rmtree(work, ignore_errors=True)
        return row

    with ThreadPoolExecutor(max(1, parallel)) as pool:
        rows = list(pool.map(one, range(len(jobs))))
    if workdir is None:
        shutil.rmtree(tmp, ignore_errors=True)
    return {
        "campaign": "embedder_faults",
        "corpus_files": files,
        "timeout_s": TIMEOUT_S,
        "batch_size": BATCH,
        "parallel": parallel,
        "faults": rows,
        "wrong_vectors": sum(r["wrong_vectors_index"] + r["wrong_vectors_cache"] for r in rows),
        "ok": all(r["ok"] for r in rows),
        "duration_s": round(time.monotonic() - t0, 1),
        "loadavg": loadavg(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="openai,ollama")
    parser.add_argument("--only", help="comma-separated fault names")
    parser.add_argument("--parallel", type=int, default=1, help="faults run at a time")
    args = parser.parse_args()
    result = run(
        tuple(args.shapes.split(",")), args.only.split(",") if args.only else None, parallel=args.parallel
    )
    print(save_result("embedder_faults", result))
    raise SystemExit(0 if result["ok"] else 1)


if __name__ == "__main__":
    main()
