"""Crash campaign: `ragraf index` SIGKILLed at random instants, then checked and recovered.

Each run edits some files, answers a fixed query set, starts `ragraf index`, kills its whole
process group at a random instant inside a chosen phase (startup/discovery, hashing, chunking,
commit, embedding), then verifies:

- the previous revision is intact: its digest (manifest, chunk texts and lines, facts) and its
  answers to the query set are identical to those taken before the run;
- when the killed run had not committed, the CLI answers the query set exactly as before;
- `ragraf index` completes, `ragraf doctor --check` passes, semantic coverage is 1.0.

At the end the recovered index is compared with a clean build of the same files.

    python -m reliability.crash --runs 50
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from reliability.common import (
    Editor,
    base_env,
    cli,
    cli_json,
    copy_stdlib,
    group_alive,
    index_db_path,
    kill_group,
    loadavg,
    ragraf_cmd,
    read_db,
    revision_digest,
    revisions,
    save_result,
    use_test_helpers,
)

PHASES = ("startup/discovery", "hashing", "chunking", "commit", "embedding")
# The stderr line (LineProgress) that opens each phase after the first.
MARKERS = {
    "hashing": "hashing files: ",
    "chunking": "chunking files: ",
    "commit": "chunking files: {n}/{n} done",
    "embedding": "embedding chunks: ",
}
SEARCHES = [
    "event loop run forever",
    "create subprocess exec pipe",
    "cancel a running task",
    "lock acquire release",
    "stream reader readline",
    "transport write data",
    "timeout context manager",
    "future add done callback",
    "queue put get",
    "selector register file descriptor",
    "parse message header",
    "json decode error",
]
DEFS = ["BaseEventLoop", "Future", "gather", "sleep", "Queue", "Message", "JSONDecoder", "reliability_edit_1"]
REFS = ["get_event_loop", "call_soon", "loads", "get_payload"]

LONG_PACKAGES = ("asyncio", "email", "json", "http", "concurrent", "importlib", "logging", "xml", "urllib")
SHORT_PACKAGES = ("asyncio", "json")


def store_answers(db_path: Path, rev_no: int) -> list[Any]:
    """The query set answered from one revision, read through the store (lexical + facts)."""
    from ragraf.facts.lookup import find_definitions, find_references
    from ragraf.search.engine import run_search
    from ragraf.store.sqlite import SqliteStore

    store = SqliteStore(db_path)
    try:
        out: list[Any] = []
        for q in SEARCHES:
            hits = run_search(store, rev_no, q, 10, mode="lexical").hits
            out.append([(c.hit.path, c.hit.start_line, c.hit.end_line, c.hit.text) for c in hits])
        for name in DEFS:
            hits, how = find_definitions(store, rev_no, name)
            out.append([how, *[(h.path, h.line, h.end_line, h.kind) for h in hits]])
        for name in REFS:
            out.append([(h.path, h.line, h.is_call) for h in find_references(store, rev_no, name, True)])
        return out
    finally:
        store.close()


def cli_answers(root: Path, env: dict[str, str], queries_file: Path) -> list[Any]:
    """The query set through the real CLI (hybrid search, def, refs) of the current revision."""
    out = cli("search", "--root", str(root), "--queries", str(queries_file), "-k", "8", "--json", env=env)
    if out.returncode != 0:
        return [("search failed", out.returncode, out.stderr[-500:])]
    answers: list[Any] = []
    for line in out.stdout.splitlines():
        env_ = json.loads(line)
        answers.append(_shape(env_))
    for args in (("def", DEFS[0]), ("refs", REFS[0], "--calls")):
        code, data = cli_json(*args, "--root", str(root), env=env)
        answers.append((code, _shape(data)))
    return answers


def _shape(env: dict[str, Any]) -> Any:
    results = [
        (
            r.get("path"),
            r.get("start_line"),
            r.get("end_line"),
            r.get("line"),
            r.get("snippet"),
            r.get("stale"),
        )
        for r in env.get("results", [])
    ]
    return (
        env.get("index_rev"),
        env.get("state"),
        env.get("capability", {}).get("semantic_coverage"),
        results,
    )


def answer_changes(before: list[Any], after: list[Any]) -> dict[str, int]:
    """How two answers of the query set differ: queries reordered (same results) or changed."""
    reordered = changed = 0
    for a, b in zip(before, after, strict=True):
        if a == b:
            continue
        if sorted(map(repr, a)) == sorted(map(repr, b)):
            reordered += 1
        else:
            changed += 1
    return {"queries_reordered": reordered, "queries_changed": changed}


def _phase_times(stderr: str, t: dict[str, float], now: float, n_chunk: int | None) -> None:
    for phase, marker in MARKERS.items():
        if phase in t:
            continue
        if phase == "commit":
            if n_chunk is None:
                continue
            marker = marker.format(n=n_chunk)
        if marker in stderr:
            t[phase] = now


def _chunk_total(stderr: str) -> int | None:
    for line in stderr.splitlines():
        if line.startswith("chunking files: ") and "/" not in line:
            return int(line.split(": ")[1])
    return None


def landed_phase(stderr: str, committed: bool) -> str:
    """Where a kill landed, from the progress lines the run printed and whether it committed."""
    if "embedding chunks: " in stderr or "embedding " in stderr and " chunks in " in stderr:
        return "embedding"
    n = _chunk_total(stderr)
    if n is not None and f"chunking files: {n}/{n} done" in stderr:
        return "commit (revision visible)" if committed else "commit (before the revision)"
    if "chunking files: " in stderr:
        return "chunking"
    if "hashing files: " in stderr:
        return "hashing"
    return "startup/discovery"


def timed_run(cmd: list[str], env: dict[str, str], log_path: Path) -> dict[str, float]:
    """An uninterrupted run, noting when each phase began (seconds after start)."""
    t: dict[str, float] = {}
    with open(log_path, "w") as err:
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        while proc.poll() is None:
            text = log_path.read_text()
            _phase_times(text, t, time.monotonic() - t0, _chunk_total(text))
            time.sleep(0.005)
        t["end"] = time.monotonic() - t0
    text = log_path.read_text()
    _phase_times(text, t, t["end"], _chunk_total(text))
    if proc.returncode != 0:
        raise RuntimeError(f"calibration run failed: {text[-2000:]}")
    return t


def kill_in_phase(
    cmd: list[str],
    env: dict[str, str],
    log_path: Path,
    phase: str,
    calib: dict[str, float],
    rng: random.Random,
) -> dict[str, Any]:
    """Start the indexer and SIGKILL its process group at a random instant of `phase`."""
    order = ["startup/discovery", *MARKERS]
    starts = {"startup/discovery": 0.0, **{p: calib.get(p, calib["end"]) for p in MARKERS}}
    i = order.index(phase)
    end = starts[order[i + 1]] if i + 1 < len(order) else calib["end"]
    duration = max(0.005, end - starts[phase])
    delay = rng.uniform(0, duration)
    seen: dict[str, float] = {}
    with open(log_path, "w") as err:
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        armed_at = 0.0 if phase == "startup/discovery" else None
        while proc.poll() is None:
            now = time.monotonic() - t0
            if armed_at is None:
                text = log_path.read_text()
                _phase_times(text, seen, now, _chunk_total(text))
                if phase in seen:
                    armed_at = now
            if armed_at is not None and now >= armed_at + delay:
                break
            time.sleep(0.002)
        finished = proc.poll() is not None
        killed_at = time.monotonic() - t0
        kill_group(proc)
    # SIGKILL is delivered at once but a dying worker can take a moment to leave /proc.
    deadline = time.monotonic() + 5
    while (leftovers := group_alive(proc.pid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return {
        "target": phase,
        "delay_s": round(delay, 4),
        "killed_at_s": round(killed_at, 3),
        "finished_before_kill": finished,
        "leftover_processes": leftovers,
        "stderr": log_path.read_text(),
    }


def run(
    runs: int = 50,
    packages: tuple[str, ...] = LONG_PACKAGES,
    corpus: Path | None = None,
    modify: int = 80,
    embedder: str = "fake",
    seed: int = 10,
    workdir: Path | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """The campaign; returns its figures."""
    rng = random.Random(seed)
    tmp = Path(workdir or tempfile.mkdtemp(prefix="ragraf-crash-"))
    root, home, cache = tmp / "corpus", tmp / "home", tmp / "cache"
    root.mkdir(parents=True)
    files = (
        shutil.copytree(corpus, root, dirs_exist_ok=True) and sum(1 for p in root.rglob("*") if p.is_file())
        if corpus
        else copy_stdlib(root, packages)
    )
    fake = None
    extra: dict[str, str] = {}
    if embedder == "fake":
        use_test_helpers()
        from embed.fake_embed_server import FakeServer, Reply

        fake = FakeServer("openai")
        # A little latency per batch, so the embedding phase is long enough to be hit.
        fake.rule = lambda request: Reply(hang=0.02)
        extra = {
            "RAGRAF_EMBED_URL": fake.url + "/v1",
            "RAGRAF_EMBED_MODEL": "crash-model",
            "RAGRAF_EMBED_BATCH_SIZE": "16",
            "RAGRAF_EMBED_TIMEOUT_S": "30",
        }
        env = base_env(home, cache, "openai", **extra)
    else:
        env = base_env(home, cache, embedder)
    queries_file = tmp / "queries.txt"
    queries_file.write_text("\n".join(SEARCHES) + "\n")
    db_path = index_db_path(root, env)
    index_cmd = ragraf_cmd("index", "--root", str(root))
    editor = Editor(root, seed)
    t_start = time.monotonic()
    try:
        code, first = cli_json("index", "--root", str(root), env=env)
        if code != 0:
            raise RuntimeError(f"initial index failed: {first}")
        editor.round(modify)
        calib = timed_run(index_cmd, env, tmp / "calibration.log")
        log(
            f"corpus {files} files; calibration run: {json.dumps({k: round(v, 3) for k, v in calib.items()})}"
        )
        records: list[dict[str, Any]] = []
        for i in range(runs):
            editor.round(modify)
            with read_db(db_path) as db:
                rev_no, rev, _ = revisions(db)[-1]
                digest_before = revision_digest(db, rev_no)
            answers_before = store_answers(db_path, rev_no)
            cli_before = cli_answers(root, env, queries_file)
            target = PHASES[i % len(PHASES)]
            if target == "embedding" and embedder == "none":
                target = "commit"
            kill = kill_in_phase(index_cmd, env, tmp / f"run-{i}.log", target, calib, rng)
            with read_db(db_path) as db:
                after_revs = revisions(db)
                digest_after = revision_digest(db, rev_no)
            committed = after_revs[-1][0] != rev_no
            landed = (
                "after the run finished"
                if kill["finished_before_kill"]
                else landed_phase(kill["stderr"], committed)
            )
            answers_after = store_answers(db_path, rev_no)
            cli_same = None
            if not committed:
                cli_same = cli_answers(root, env, queries_file) == cli_before
            t_rec = time.monotonic()
            rec_code, rec = cli_json("index", "--root", str(root), env=env)
            recovery_s = time.monotonic() - t_rec
            doc_code, doc = cli_json("doctor", "--check", "--root", str(root), env=env)
            st_code, status = cli_json("status", "--root", str(root), env=env)
            coverage = status.get("capability", {}).get("semantic_coverage")
            record = {
                "run": i,
                "target": target,
                "landed": landed,
                "killed_at_s": kill["killed_at_s"],
                "leftover_processes": len(kill["leftover_processes"]),
                "previous_rev": rev,
                "committed_by_killed_run": after_revs[-1][1] if committed else None,
                "previous_revision_intact": digest_after == digest_before,
                "previous_answers_identical": answers_after == answers_before,
                "previous_answer_changes": answer_changes(answers_before, answers_after),
                "cli_answers_identical": cli_same,
                "recovery_exit": rec_code,
                "recovery_s": round(recovery_s, 3),
                "recovery_new_revision": rec.get("new_revision"),
                "recovery_rev": rec.get("index_rev"),
                "recovery_chunks_new": rec.get("chunks", {}).get("new"),
                "recovery_embeddings": rec.get("embeddings"),
                "doctor_exit": doc_code,
                "doctor_problems": [c["detail"] for c in doc.get("results", []) if not c.get("ok")],
                "status_exit": st_code,
                "semantic_coverage": coverage,
                "state_after_recovery": status.get("state"),
            }
            # A superseded revision (the killed run committed its successor) is not answered from any
            # more: its lexical rows left the index with it, so its ranking shifting is reported apart.
            record["ok"] = (
                record["previous_revision_intact"]
                and (record["previous_answers_identical"] or committed)
                and cli_same is not False
                and rec_code == 0
                and doc_code == 0
                and st_code == 0
                and (embedder == "none" or coverage == 1.0)
                and record["state_after_recovery"] == "fresh"
                and not kill["leftover_processes"]
            )
            records.append(record)
            log(
                f"run {i + 1}/{runs}: target {target}, landed {landed} at {kill['killed_at_s']:.3f}s; "
                f"{'ok' if record['ok'] else 'PROBLEM ' + json.dumps(record)}"
            )
        final = compare_with_clean_build(root, env, db_path, tmp, extra, embedder)
    finally:
        if fake is not None:
            fake.close()
    landed_counts = Counter(r["landed"] for r in records)
    lost = sum(1 for r in records if not r["previous_revision_intact"])
    result = {
        "campaign": "crash",
        "runs": runs,
        "corpus_files": files,
        "edits_per_run": modify,
        "embedder": embedder,
        "seed": seed,
        "calibration_s": {k: round(v, 3) for k, v in calib.items()},
        "kills": sum(1 for r in records if r["landed"] != "after the run finished"),
        "landed": dict(sorted(landed_counts.items())),
        "committed_before_kill": sum(1 for r in records if r["committed_by_killed_run"]),
        "recoveries": sum(1 for r in records if r["recovery_exit"] == 0),
        "doctor_check_passed": sum(1 for r in records if r["doctor_exit"] == 0),
        "coverage_complete_after_recovery": sum(1 for r in records if r["semantic_coverage"] == 1.0),
        "cli_answers_compared": sum(1 for r in records if r["cli_answers_identical"] is not None),
        "cli_answers_identical": sum(1 for r in records if r["cli_answers_identical"]),
        "data_lost": lost,
        "previous_answers_identical": sum(1 for r in records if r["previous_answers_identical"]),
        "uncommitted_kills": sum(1 for r in records if not r["committed_by_killed_run"]),
        "answers_identical_when_not_committed": sum(
            1 for r in records if not r["committed_by_killed_run"] and r["previous_answers_identical"]
        ),
        "answers_identical_when_committed": sum(
            1 for r in records if r["committed_by_killed_run"] and r["previous_answers_identical"]
        ),
        "answers_reordered_queries": sum(r["previous_answer_changes"]["queries_reordered"] for r in records),
        "answers_changed_queries": sum(r["previous_answer_changes"]["queries_changed"] for r in records),
        "queries_per_run": len(SEARCHES) + len(DEFS) + len(REFS),
        "leftover_processes": sum(r["leftover_processes"] for r in records),
        "recovery_s_max": max((r["recovery_s"] for r in records), default=0),
        "failed_runs": [r for r in records if not r["ok"]],
        "final": final,
        "duration_s": round(time.monotonic() - t_start, 1),
        "loadavg": loadavg(),
    }
    result["ok"] = not result["failed_runs"] and lost == 0 and final["identical"]
    if workdir is None:
        shutil.rmtree(tmp, ignore_errors=True)
    return result


def first_index_kills(
    runs: int = 12, packages: tuple[str, ...] = SHORT_PACKAGES, seed: int = 11, workdir: Path | None = None
) -> dict[str, Any]:
    """Kills during the very first `ragraf index` of a folder (the index file being created and
    migrated): a reader must refuse cleanly (no index yet / unusable, with what to run), and the next
    `ragraf index` must build a consistent index."""
    rng = random.Random(seed)
    tmp = Path(workdir or tempfile.mkdtemp(prefix="ragraf-crash-first-"))
    root = tmp / "corpus"
    root.mkdir(parents=True)
    copy_stdlib(root, packages)
    env0 = base_env(tmp / "home-calibration", tmp / "cache", "none")
    t0 = time.monotonic()
    cli("index", "--root", str(root), env=env0)
    full = time.monotonic() - t0
    rows = []
    for i in range(runs):
        env = base_env(tmp / f"home-{i}", tmp / "cache", "none")
        proc = subprocess.Popen(
            ragraf_cmd("index", "--root", str(root)),
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        delay = rng.uniform(0, full)
        time.sleep(delay)
        finished = proc.poll() is not None
        kill_group(proc)
        search = cli("search", "event loop", "--root", str(root), "--json", env=env)
        refusal = (search.stderr.strip().splitlines() or [""])[0]
        clean = search.returncode == 0 or (search.returncode == 1 and "Traceback" not in search.stderr)
        rec = cli("index", "--root", str(root), env=env)
        doctor = cli("doctor", "--check", "--root", str(root), env=env)
        rows.append({
            "killed_at_s": round(delay, 3), "finished_before_kill": finished, "search_exit": search.returncode,
            "refusal": refusal[:200], "clean_answer_or_refusal": clean, "recovery_exit": rec.returncode,
            "doctor_exit": doctor.returncode,
        })  # fmt: skip
    if workdir is None:
        shutil.rmtree(tmp, ignore_errors=True)
    return {
        "runs": runs,
        "uninterrupted_s": round(full, 2),
        "clean_refusals_or_answers": sum(r["clean_answer_or_refusal"] for r in rows),
        "recoveries": sum(r["recovery_exit"] == 0 for r in rows),
        "doctor_check_passed": sum(r["doctor_exit"] == 0 for r in rows),
        "refusals_seen": sorted({r["refusal"] for r in rows if r["search_exit"] != 0}),
        "rows": rows,
        "ok": all(
            r["clean_answer_or_refusal"] and r["recovery_exit"] == 0 and r["doctor_exit"] == 0 for r in rows
        ),
    }


def compare_with_clean_build(
    root: Path, env: dict[str, str], db_path: Path, tmp: Path, extra: dict[str, str], embedder: str
) -> dict[str, Any]:
    """The recovered index against a from-scratch build of the same files: same revision digest."""
    clean_env = dict(env, RAGRAF_HOME=str(tmp / "clean-home"), RAGRAF_CACHE_DIR=str(tmp / "clean-cache"))
    code, report = cli_json("index", "--root", str(root), env=clean_env)
    clean_db = index_db_path(root, clean_env)
    with read_db(db_path) as db:
        rev_no, rev, chash = revisions(db)[-1]
        digest = revision_digest(db, rev_no)
        vectors = db.execute("SELECT count(*) FROM vectors").fetchone()[0]
    with read_db(clean_db) as db:
        c_rev_no, _, c_hash = revisions(db)[-1]
        c_digest = revision_digest(db, c_rev_no)
        c_vectors = db.execute("SELECT count(*) FROM vectors").fetchone()[0]
    return {
        "clean_build_exit": code,
        "recovered_rev": rev,
        "corpus_hash_equal": chash == c_hash,
        "digest_equal": digest == c_digest,
        "vectors_recovered_index": vectors,
        "vectors_clean_build": c_vectors,
        "identical": code == 0 and chash == c_hash and digest == c_digest,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--modify", type=int, default=80, help="files edited between runs")
    parser.add_argument("--embedder", choices=["fake", "local", "none"], default="fake")
    parser.add_argument("--corpus", type=Path, help="copy this folder instead of stdlib packages")
    parser.add_argument("--packages", default=",".join(LONG_PACKAGES), help="stdlib packages to copy")
    parser.add_argument("--seed", type=int, default=10)
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it")
    parser.add_argument("--first", type=int, default=0, help="only kill N first-ever index runs")
    args = parser.parse_args()
    if args.first:
        first = first_index_kills(args.first)
        print(save_result("crash-first", first))
        raise SystemExit(0 if first["ok"] else 1)
    result = run(
        args.runs,
        tuple(args.packages.split(",")),
        args.corpus,
        args.modify,
        args.embedder,
        args.seed,
        args.keep,
    )
    print(save_result("crash" if args.embedder == "fake" else f"crash-{args.embedder}", result))
    print(json.dumps({k: v for k, v in result.items() if k != "failed_runs"}, indent=2))
    raise SystemExit(0 if result["ok"] else 1)


if __name__ == "__main__":
    main()
