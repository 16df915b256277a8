"""Run the reliability campaigns and write docs/reliability.md (issue 10).

    python -m reliability.report                 # the short versions (what CI runs), a few minutes
    python -m reliability.report --long          # the long versions: 50 kills, both server shapes,
                                                 # 60 s of concurrency, 2,000 fuzz examples a property,
                                                 # a 100,000-file monorepo
    python -m reliability.report --only crash,scale --long
    python -m reliability.report --render        # rewrite the page from reliability/results/*.json

Each campaign's figures land in reliability/results/NAME.json together with the exact command
that reproduces them and the machine (CPU, cores, memory, load average) they were measured on;
the page is rendered from those files, so a campaign can be re-run alone and the page rebuilt.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import subprocess
import sys
import time
from typing import Any

from reliability.common import REPO, RESULTS_DIR, loadavg, machine, save_result

DOC = REPO / "docs" / "reliability.md"
TESTS = REPO / "tests" / "reliability"
CAMPAIGNS = (
    "crash",
    "embedder_faults",
    "concurrency",
    "fuzz",
    "secrets",
    "hostile_trees",
    "jsonrpc",
    "secrets_corpus",
    "integrity",
    "http_slow_clients",
    "redaction",
    "scale",
)
PYTEST_CAMPAIGNS = (
    "fuzz",
    "secrets",
    "hostile_trees",
    "jsonrpc",
    "secrets_corpus",
    "integrity",
    "http_slow_clients",
)


# Bugs these campaigns found that have been fixed since; the test that pinned each (as a strict
# xfail until the fix) now guards it. Open bugs are read from the strict xfails themselves.
FIXED_BUGS = [
    ("retention changed the current revision's lexical answers: BM25 statistics and the over-fetch spanned "
     "the rows of every retained revision, so `ragraf gc` reordered and dropped results of the unchanged "
     "revision", "test_crash.py::test_retention_does_not_change_the_answers_of_the_current_revision", "189f732"),
    ("a revision's lexical answers depended on chunks outside it (BM25 statistics and the over-fetch "
     "limit spanned every content in the FTS table): what a killed run had stored reordered and dropped "
     "results of the unchanged revision", "test_crash.py::test_contents_left_by_a_killed_run_do_not_change_the_answers_of_the_current_revision", "b47976e"),
    ("the embedding timeout bounded each socket read, not the request: a server dribbling its answer "
     "held a request with a 1 s timeout for 8 s", "test_embedder_faults.py::test_a_slow_drip_answer_is_cut_at_the_request_timeout", "21f5419"),
    ("https:// to a plain-HTTP port was retried as transient (5 attempts, ~15 s of backoff)",
     "test_embedder_faults.py::test_tls_to_a_plain_port_fails_at_once_without_retries", "165a676"),
    ("a symlink loop in the root made read and outline raise RuntimeError (a traceback in the CLI)",
     "test_fuzz.py::test_a_symlink_loop_inside_the_root_is_refused_cleanly", "991eb82"),
    ("a path through a regular file (README.md/x) made read raise NotADirectoryError (found by the long "
     "fuzz run)", "test_fuzz.py::test_a_path_through_a_file_is_refused_cleanly", "991eb82"),
    ("secret names were matched case-sensitively: DEPLOY.PEM, prod.KEY, ID_RSA, .ENV were indexed and "
     "readable", "test_secrets.py::test_secret_names_in_upper_case_are_secrets_too", "991eb82"),
    ("with three concurrent indexers one waited 187 s while the others took the lock six times: flock "
     "serves no order (three writers taking it four times each took it CCCCAAAABBBB); waiting writers now "
     "queue and are served in arrival order (ABCABCABCABC)",
     "tests/index/test_lock_fairness.py::test_three_writers_take_the_lock_in_turn_in_the_order_they_queued", "25ebad3"),
    ("a page damaged mid-file was noticed only by `doctor --check`: reads answered and `index` said up to date",
     "test_integrity.py::test_a_page_damaged_mid_file_is_refused_by_index_until_rebuilt", "7f5f430"),
    ("serve --http never closed a connection that sent nothing, or a byte at a time (slowloris)",
     "test_http_slow_clients.py::test_idle_and_trickling_connections_are_closed_while_others_are_served", "fd2af09"),
    ("in a git work tree the skip report was empty although symlinks and committed secrets were left out",
     "test_hostile_trees.py::test_a_git_work_tree_names_what_it_leaves_out_as_a_plain_folder_does", "2430cb6"),
    ("`read` of a FIFO or socket said only 'not a regular file', and a symlink inside the root was called new "
     "since the revision ('run ragraf index', which never takes it in)",
     "test_hostile_trees.py::test_outline_and_read_of_a_special_file_say_what_it_is", "b11bdcd"),
    ("drift a reader reported late, against a revision an index run had just closed, was opened again beside "
     "its archived copy (the concurrency campaign once counted 5 duplicate keys)",
     "tests/store/test_contract.py::test_drift_reported_late_against_a_revision_since_closed_opens_nothing", "af7a0b0"),
]  # fmt: skip


# running ------------------------------------------------------------------------------------------


def _pytest(name: str, long: bool) -> dict[str, Any]:
    """A pytest-based campaign (fuzz, secrets): counts of passed / failed / xfailed, and time."""
    env = dict(os.environ, RAGRAF_RELIABILITY_LONG="1" if long else "0")
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-rxXf",
        "-p",
        "no:cacheprovider",
        f"tests/reliability/test_{name}.py",
    ]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    took = time.monotonic() - t0
    tail = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    counts = {
        k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|xfailed|xpassed|error|errors|skipped)", tail)
    }
    failures = [line for line in proc.stdout.splitlines() if line.startswith(("FAILED", "ERROR", "XPASS"))]
    prefix = "RAGRAF_RELIABILITY_LONG=1 " if long else ""
    result = {
        "campaign": name,
        "tests_passed": counts.get("passed", 0),
        "tests_failed": counts.get("failed", 0) + counts.get("error", 0) + counts.get("errors", 0),
        "known_bugs_xfailed": counts.get("xfailed", 0),
        "xpassed": counts.get("xpassed", 0),
        "failures": failures,
        "duration_s": round(took, 1),
        "summary": tail,
        "ok": proc.returncode == 0,
        "loadavg": loadavg(),
    }
    if name == "fuzz":
        result["examples_per_property"] = 2000 if long else 60
    save_result(name, result, f"{prefix}python -m pytest -q tests/reliability/test_{name}.py")
    return result


def run_campaign(name: str, long: bool, scale_files: int, scale_embedder: str) -> dict[str, Any]:
    """One campaign with its short (CI) or long parameters; saves and returns its figures."""
    before = loadavg()
    if name == "crash":
        from reliability import crash

        if long:
            result = crash.run(runs=50)
            cmd = "python -m reliability.crash --runs 50"
        else:
            result = crash.run(runs=5, packages=crash.SHORT_PACKAGES, modify=10)
            cmd = "python -m reliability.crash --runs 5 --packages asyncio,json --modify 10"
        first_runs = 12 if long else 3
        save_result(
            "crash-first",
            crash.first_index_kills(first_runs),
            f"python -m reliability.crash --first {first_runs}",
        )
    elif name == "embedder_faults":
        from reliability import embedder_faults

        if long:
            result = embedder_faults.run(shapes=("openai", "ollama"))
            cmd = "python -m reliability.embedder_faults --shapes openai,ollama"
        else:
            result = embedder_faults.run(shapes=("openai",), parallel=6)
            cmd = "python -m reliability.embedder_faults --shapes openai --parallel 6"
    elif name == "concurrency":
        from reliability import concurrency

        if long:
            result = concurrency.run(seconds=60, mode="hybrid", embedder="fake")
            cmd = "python -m reliability.concurrency --seconds 60 --mode hybrid --embedder fake"
        else:
            result = concurrency.run(seconds=10, packages=("asyncio", "json"))
            cmd = "python -m reliability.concurrency --seconds 10 --packages asyncio,json"
    elif name in PYTEST_CAMPAIGNS:
        return _pytest(name, long)
    elif name == "redaction":
        from reliability import redaction

        result = redaction.measure(redaction.DEFAULT_CORPORA)
        cmd = "python -m reliability.redaction"
    elif name == "scale":
        from reliability import scale

        files = scale_files or (100_000 if long else 2000)
        result = scale.run(files=files, embedder=scale_embedder)
        cmd = f"python -m reliability.scale --files {files} --embedder {scale_embedder}"
        name = f"scale-{scale_embedder}-{files}"
    else:
        raise SystemExit(f"unknown campaign {name!r}; pick from {', '.join(CAMPAIGNS)}")
    result["loadavg_before"] = before
    save_result(name, result, cmd)
    return result


# rendering ----------------------------------------------------------------------------------------


def known_bugs() -> list[dict[str, str]]:
    """Every strict xfail in tests/reliability whose reason starts with "bug:"."""
    bugs = []
    for path in sorted(TESTS.glob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for deco in node.decorator_list:
                if not (isinstance(deco, ast.Call) and ast.unparse(deco.func).endswith("mark.xfail")):
                    continue
                kw = {k.arg: k.value for k in deco.keywords}
                reason = ast.literal_eval(kw["reason"]) if "reason" in kw else ""
                if reason.startswith("bug:"):
                    bugs.append(
                        {"test": f"{path.relative_to(REPO)}::{node.name}", "reason": reason[4:].strip()}
                    )
    return bugs


def _load(name: str) -> dict[str, Any] | None:
    path = RESULTS_DIR / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def _cmd(r: dict[str, Any]) -> str:
    return f"\n```sh\n{r.get('command', '?')}\n```\n"


def _measured(r: dict[str, Any]) -> str:
    m = r.get("machine", {})
    before = r.get("loadavg_before")
    load = f"load average {' '.join(map(str, before))} before, " if before else "load average "
    took = f"; took {r['duration_s']} s" if r.get("duration_s") is not None else ""
    after = " ".join(map(str, r.get("loadavg", [])))
    return f"_Measured {m.get('date', '?')} at commit {m.get('ragraf_commit', '?')}; {load}{after} after{took}._\n"


def _verdict(ok: Any) -> str:
    return "**pass**" if ok else "**FAIL**"


def render_crash_first(r: dict[str, Any]) -> str:
    refusals = sorted({re.sub(r"\(looked for [^)]*\)", "(looked for …)", x) for x in r["refusals_seen"]})
    lines = [
        "### Kills during the very first index",
        "",
        "The index file is being created and migrated: a reader must refuse cleanly, and the next run must "
        f"build a consistent index. {r['runs']} kills at random instants of a {r['uninterrupted_s']} s first run.",
        _cmd(r),
        "| figure | value |",
        "|---|---|",
        f"| readers that answered or refused cleanly (no traceback) | {r['clean_refusals_or_answers']}/{r['runs']} |",
        f"| refusals seen | {'; '.join(f'`{x}`' for x in refusals) or '-'} |",
        f"| `ragraf index` recovered | {r['recoveries']}/{r['runs']} |",
        f"| `ragraf doctor --check` passed | {r['doctor_check_passed']}/{r['runs']} |",
        "",
        f"Verdict: {_verdict(r['ok'])}.",
        "",
    ]
    return "\n".join(lines)


def render_crash(r: dict[str, Any], title: str = "## Crash campaign") -> str:
    runs = r["runs"]
    landed = ", ".join(f"{phase}: {n}" for phase, n in r["landed"].items())
    final = r["final"]
    lines = [
        title,
        "",
        f"`ragraf index` on a copy of {r['corpus_files']} files of the Python standard library, {r['edits_per_run']} "
        f"files edited before each run (a comment line inserted, a function appended; files created and "
        f"deleted), embedder: {'the fake OpenAI-shaped server (20 ms per batch of 16)' if r['embedder'] == 'fake' else 'the default local model (MiniLM int8 on the CPU)' if r['embedder'] == 'local' else r['embedder']}. "
        "Each run is SIGKILLed (its whole process group, pool workers included) at a random instant of a "
        "phase chosen in turn; where it really landed is read from its progress lines and the index file.",
        _cmd(r),
        "| figure | value |",
        "|---|---|",
        f"| runs | {runs} |",
        f"| kills (the rest finished before the instant came) | {r['kills']} |",
        f"| where the kills landed | {landed} |",
        f"| kills after the new revision was committed | {r['committed_before_kill']} |",
        f"| previous revision intact (digest of manifest, chunks, lines, facts) | {runs - r['data_lost']}/{runs} |",
        f"| **data lost** | **{r['data_lost']}** |",
        f"| `ragraf index` recovered | {r['recoveries']}/{runs} (slowest {r['recovery_s_max']} s) |",
        f"| `ragraf doctor --check` passed after recovery | {r['doctor_check_passed']}/{runs} |",
        f"| semantic coverage 1.0 after recovery | {r['coverage_complete_after_recovery']}/{runs} |",
        f"| processes left behind | {r['leftover_processes']} |",
    ]  # fmt: skip
    if "uncommitted_kills" in r:
        committed = runs - r["uncommitted_kills"]
        lines += [
            f"| kill before the commit: the revision answered the {r['queries_per_run']} fixed queries "
            f"identically (store level) | {r['answers_identical_when_not_committed']}/{r['uncommitted_kills']} |",
            f"| kill after the commit: the superseded revision answered them identically (store level; "
            f"not required: nothing answers from a superseded revision, and its lexical rows leave with it) | "
            f"{r['answers_identical_when_committed']}/{committed} |",
        ]  # fmt: skip
    else:
        lines.append(
            f"| previous revision answered the {r['queries_per_run']} fixed queries identically | "
            f"{r['previous_answers_identical']}/{runs} |"
        )
    lines += [
        f"| CLI answers identical when the kill came before the commit | {r['cli_answers_identical']}/{r['cli_answers_compared']} |",
        f"| recovered index = clean build of the same files (corpus hash and digest) | {final['identical']} |",
        "",
        f"Verdict: {_verdict(r['ok'])} (no data lost, every recovery complete and consistent).",
        "",
        _measured(r),
    ]  # fmt: skip
    return "\n".join(lines)


def render_faults(r: dict[str, Any]) -> str:
    lines = [
        "## Embedder fault campaign",
        "",
        f"`ragraf index` of {r['corpus_files']} files against a loopback embedding server "
        f"(tests/embed/fake_embed_server.py, plus a slow-drip mode) with RAGRAF_EMBED_TIMEOUT_S={r['timeout_s']:g} "
        f"and RAGRAF_EMBED_BATCH_SIZE={r['batch_size']}. \"Twice\"/\"once\" faults hit the first embedding "
        "requests, then the server heals; \"always\" faults never heal; \"one text\" faults hit every request "
        "holding one particular chunk. After each faulty run every vector in the index file and in the shared "
        "cache is compared with the server's deterministic vector for its text; then the fault goes away and "
        "a clean run must reach semantic coverage 1.0, computing only what the faulty run left undone.",
        _cmd(r),
        "| server | fault | outcome of the faulty run | time | requests | coverage after | wrong vectors (index + cache) | `doctor --check` | clean run: vectors kept + computed / chunks | clean run coverage | verdict |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]  # fmt: skip
    for f in r["faults"]:
        cov = f["coverage_after_fault"]
        lines.append(
            f"| {f['shape']} | {f['description']} | {f['outcome']} | {f['duration_s']} s | {f['requests']} | "
            f"{cov if cov is not None else '-'} | {f['wrong_vectors_index']} + {f['wrong_vectors_cache']} | "
            f"{'ok' if f['doctor_consistency_ok'] else 'FAIL'} | {f.get('vectors_kept_from_faulty_run', '?')} + "
            f"{f.get('clean_run_computed', '?')} / {f.get('total_chunks', '?')} | {f['coverage_after_clean_run']} | {_verdict(f['ok'])} |"
        )
    lines += ["", "What the faulty runs said (first line of the warning or error):", ""]
    seen = set()
    for f in r["faults"]:
        if f["message"] and f["fault"] not in seen:
            seen.add(f["fault"])
            msg = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", f["message"]).replace("|", "\\|")
            lines.append(f"- **{f['fault']}**: {msg[:260]}")
    lines += [
        "",
        f"Wrong vectors in all: **{r['wrong_vectors']}**. Verdict: {_verdict(r['ok'])}.",
        "",
        _measured(r),
    ]  # fmt: skip
    return "\n".join(lines)


def render_concurrency(r: dict[str, Any]) -> str:
    mcp = r.get("mcp") or {}
    lat = r["read_latency_ms"]
    checks = ", ".join(f"{v} {k}" for k, v in sorted(r["checks"].items()))
    lines = [
        "## Concurrency",
        "",
        f"{r['writers']} writers looping `ragraf index` (the second waits on the lock) and {r['readers']} reader "
        f"processes looping every read operation through the library for {r['seconds']:g} s, while an editor "
        f"changes files every 0.3 s, on {r['corpus_files']} standard-library files (embedder "
        f"{'a loopback fake server' if r.get('embedder') == 'fake' else 'none'}, {r['search_mode']} search). Every file version is archived by sha256 before it reaches the disk, so "
        "each answer is checked against the exact content of the revision its envelope names.",
        _cmd(r),
        "| figure | value |",
        "|---|---|",
        f"| edits (files modified / created / deleted) | {r['edits'].get('modified', 0)} / {r['edits'].get('created', 0)} / {r['edits'].get('deleted', 0)} |",
        f"| `ragraf index` runs / new revisions / runs that waited for the lock | {r['index_runs']} / {r['new_revisions']} / {r['index_runs_that_waited']} |",
        f"| failed index runs | {len(r['index_runs_failed'])} |",
        f"| reader operations | {r['reader_ops']} ({', '.join(f'{k} {v}' for k, v in sorted(r['reader_ops_by_kind'].items()))}) |",
        f"| **reader errors** | **{r['reader_error_count']}** |",
        f"| **answers not matching their revision** | **{r['inconsistent_count']}** |",
        f"| results checked | {checks} |",
        f"| revisions answered from | {r['revisions_answered_from']} |",
        f"| read latency under this load p50 / p95 / max | {lat['p50']} / {lat['p95']} / {lat['max']} ms |",
        f"| ledger entries (open + archived) / duplicate keys / duplicate events | {r['ledger']['entries']} / {r['ledger']['duplicate_keys']} / {r['ledger']['duplicate_events']} |",
    ]  # fmt: skip
    if mcp:
        lines += [
            f"| two MCP servers during a reindex: calls | {sum(mcp['calls'].values())} ({', '.join(f'{k} {v}' for k, v in mcp['calls'].items())}) |",
            f"| MCP errors / inconsistent answers / revision going backwards | {len(mcp['errors'])} / {len(mcp['inconsistent'])} / {mcp['revision_went_backwards']} |",
            f"| MCP revisions seen | {', '.join(sorted({x for v in mcp['revisions_seen'].values() for x in v}))} |",
            f"| `reindex` tool during a CLI reindex | {'error' if mcp['mcp_reindex'].get('is_error') else 'ok'} in {mcp['mcp_reindex'].get('seconds')} s: {mcp['mcp_reindex'].get('text', '').replace('|', '/')} |",
        ]  # fmt: skip
    lines += ["", f"Verdict: {_verdict(r['ok'])}.", "", _measured(r)]
    return "\n".join(lines)


def render_pytest(r: dict[str, Any], title: str, what: str) -> str:
    extra = f" {r['examples_per_property']} examples per property." if "examples_per_property" in r else ""
    lines = [
        f"## {title}",
        "",
        what + extra,
        _cmd(r),
        f"Tests passed: **{r['tests_passed']}**, failed: **{r['tests_failed']}**, known bugs (strict xfail): "
        f"{r['known_bugs_xfailed']}. Verdict: {_verdict(r['ok'])}.",
        "",
        _measured(r),
    ]
    return "\n".join(lines)


def _cpu(r: dict[str, Any], key: str) -> str:
    return f"{r[key]} s CPU" if key in r else "CPU not recorded"


def render_scale(results: list[dict[str, Any]]) -> str:
    lines = [
        "## Scale",
        "",
        "A generated monorepo (reliability/scale.py, deterministic from its seed): services of nested "
        "packages in Python, TypeScript, JavaScript, Go, Java, Rust, C, C++, Markdown, JSON and YAML; "
        "file lengths log-normal (median 14 lines, tail to 900); identifiers from one vocabulary so "
        "definitions and calls cross files; committed to git. Peak RSS is the sum over the indexer's whole "
        "process tree (its chunking workers included), polled every 0.2 s. Search latency is a warm library "
        "call (what an MCP server pays per query; it includes the freshness guard); the CLI figure includes "
        "starting Python.",
        "",
    ]
    t = results[0]["targets"]
    for r in results:
        c, cold, s = r["corpus"], r["cold"], r["search_warm"]
        met = r["met"]
        emb = cold["report"].get("embeddings") or {}
        lines += [
            f"### {c['files']:,} files, {c['lines']:,} lines, embedder {r['embedder']}",
            _cmd(r),
            "| figure | value | target |",
            "|---|---|---|",
            f"| corpus | {c['files']:,} files, {c['lines']:,} lines, {c['bytes'] / 2**20:.0f} MiB in {c['folders']:,} folders | 100,000 files / ≥ 1,000,000 lines |",
            f"| cold index | {cold['wall_s']} s wall ({cold['reported_s']} s inside ragraf), {cold['report']['chunks']['total']:,} chunks"
            + (f", {emb.get('computed', 0):,} embeddings" if emb else "") + " | |",
            f"| peak RSS while indexing (process tree; largest single process) | {cold['peak_rss_mib']:,} MiB ({cold['peak_rss_single_process_mib']:,} MiB), {cold['processes']} processes | ≤ {t['peak_rss_gib']} GiB {'✓' if met['peak_rss'] else '✗'} |",
            f"| no-change re-index (median of 3, CLI wall) | {r['no_change_median_s']} s | ≤ {t['no_change_s']} s {'✓' if met['no_change'] else '✗'} |",
            f"| one-file change (median of 3, CLI wall; CPU user + system) | {r['one_file_median_s']} s ({_cpu(r, 'one_file_cpu_median_s')}) | ≤ {t['one_file_s']} s {'✓' if met['one_file'] else '✗'} |",
            *([f"| one-file change once retention drops a revision per run (median of 3) | {r['one_file_steady_median_s']} s ({_cpu(r, 'one_file_steady_cpu_median_s')}) | ≤ {t['one_file_s']} s |"]
              if "one_file_steady_median_s" in r else []),
            f"| search p50 / p95 / max ({s['queries']} warm queries, k=10) | {s['p50_ms']} / {s['p95_ms']} / {s['max_ms']} ms | p95 ≤ {t['search_p95_ms']} ms {'✓' if met['search_p95'] else '✗'} |",
            f"| search from the CLI (cold process) | {', '.join(str(x) for x in r['search_cold_cli_ms'])} ms | |",
            f"| index size on disk | {r['index_mib']:,} MiB (+ {r['cache_mib']:,} MiB embedding cache) | |",
            f"| `ragraf doctor --check` | {'ok' if r['doctor_check_exit'] == 0 else 'FAIL: ' + '; '.join(r['doctor_problems'])} | |",
            "",
            _measured(r),
        ]  # fmt: skip
        if r.get("hotspots"):
            lines += _hotspots(r, with_calls=True)
            if r.get("hotspots_command"):
                lines[-1:] = ["", f"_Profiled with: {r['hotspots_command']}._", ""]
    return "\n".join(lines)


def _hotspots(r: dict[str, Any], with_calls: bool) -> list[str]:
    """The profile's top functions of a warm search and of a one-file re-index, a line each."""
    lines = ["Where the time goes (cProfile, ragraf's own functions by cumulative time):", ""]
    for label, key in (("three warm searches", "search_x3"), ("one one-file re-index", "one_file_reindex")):
        top = ", ".join(
            f"`{h['function'].split(' ', 1)[1]}` ({h['function'].split(':')[0]}) {h['cumulative_s']} s"
            f" = {h['share']:.0%}" + (f", {h['calls']:,} calls" if with_calls else "")
            for h in r["hotspots"][key][:5]
        )
        lines.append(f"- {label}: {top}")
    return [*lines, ""]


def _mark(ok: bool) -> str:
    return "✓" if ok else "✗"


def _memory_and_writes(cold: dict[str, Any]) -> list[str]:
    """The cold run's memory split (main process, workers, the tree's PSS) and what it wrote, when
    the run recorded them."""
    if "peak_pss_mib" not in cold:
        return []
    return [
        f"| peak RSS of the main process / of its workers summed; the tree's PSS (shared pages split) | "
        f"{cold['peak_rss_main_mib']:,} / {cold['peak_rss_workers_mib']:,} MiB; {cold['peak_pss_mib']:,} MiB | |",
        f"| written to storage by the cold index (the tree; the main process's write calls) | "
        f"{cold['write_mib']:,} MiB ({cold['main_wchar_mib']:,} MiB) | |",
    ]


def render_scale_real(r: dict[str, Any]) -> str:
    """The --real scale run (issue 28): a repository of real, distinct files on the default path."""
    c, cold, s, f, t, met = r["corpus"], r["cold"], r["search_warm"], r["floors"], r["targets"], r["met"]
    floor_nc = sorted(f["git_status_no_change_cpu_s"])[len(f["git_status_no_change_cpu_s"]) // 2]
    floor_one = sorted(f["git_status_after_edit_cpu_s"])[len(f["git_status_after_edit_cpu_s"]) // 2]
    lines = [
        f"### A repository of {c['files']:,} real files (issue 28), embedder {r['embedder']}",
        "",
        "Distinct files, not copies of one corpus: " + ", ".join(c["sources"]) + f"; {c['bytes'] / 2**20:,.0f} MiB "
        f"in {c['folders']:,} folders (the largest holds {c['largest_folder_entries']:,} entries), committed into one "
        "git repository as a monorepo would be (reliability/scale.py `--real`, built from the package registries and "
        "cached under `--work`). The default configuration, lexical only (embedder none). CPU-seconds are user + "
        "system of the whole process tree; the floors are `git status` in the same run. The machine was shared, so "
        "cold wall is also given as its two-core bound (CPU-seconds / 2: what two idle cores could reach at best).",
        _cmd(r),
        "| figure | value | target |",
        "|---|---|---|",
        f"| cold index | {cold['wall_s']} s wall, {cold['cpu_s']} CPU-s (two-core bound {cold['two_core_bound_s']} s), "
        f"{cold['report']['chunks']['total']:,} chunks; load {' '.join(map(str, r['loadavg_before']))} before, "
        f"{' '.join(map(str, cold['loadavg_after']))} after | ≤ {t['cold_s']:.0f} s: wall {_mark(met['cold_wall'])}, "
        f"two-core bound {_mark(met['cold_two_core_bound'])} |",
        f"| peak RSS while indexing (process tree; largest single process) | {cold['peak_rss_mib']:,} MiB "
        f"({cold['peak_rss_single_process_mib']:,} MiB), {cold['processes']} processes | ≤ {t['peak_rss_gib']} GiB {_mark(met['peak_rss'])} |",
        *_memory_and_writes(cold),
        f"| no-change `ragraf index` (median of 3; the first after the cold index: {r['no_change'][0]['cpu_s']} CPU-s, "
        f"{r['no_change'][0]['wall_s']} s wall) | {f['no_change_cpu_median_s']} CPU-s ({r['no_change_median_s']} s wall); "
        f"`git status` {floor_nc:.3f} CPU-s: **{f['no_change_x_git_status']}×** | ≤ {t['no_change_x_git_status']}× {_mark(met['no_change'])} |",
        f"| one-file edit, `ragraf index` (median of {len(f['git_status_after_edit_cpu_s'])} edits, retention's steady state among them) | "
        f"{f['one_file_cpu_median_s']} CPU-s ({r['one_file_median_s']} s wall); edit + `git status` {floor_one:.3f} CPU-s: "
        f"**{f['one_file_x_git_status']}×** | ≤ {t['one_file_x_git_status']}× {_mark(met['one_file'])} |",
        f"| search p50 / p95 / max ({s['queries']} warm library queries, k=10, as the MCP server answers) | "
        f"{s['p50_ms']} / {s['p95_ms']} / {s['max_ms']} ms | p95 ≤ {t['search_p95_ms']:.0f} ms {_mark(met['search_p95'])} |",
        f"| search from the CLI (cold process; CPU-s) | {', '.join(str(x) for x in r['search_cold_cli_ms'])} ms "
        f"({', '.join(str(x) for x in r['search_cold_cli_cpu_s'])}) | |",
        f"| on disk | index {r['index_mib']:,} MiB, the whole index home {r['home_mib']:,} MiB = "
        f"{r['home_x_corpus']}× the corpus ({c['bytes'] / 2**20:,.0f} MiB) | |",
        f"| `ragraf doctor --check` | {'ok' if r['doctor_check_exit'] == 0 else 'FAIL: ' + '; '.join(r['doctor_problems'])} | |",
        "",
        _measured(r),
    ]  # fmt: skip
    if r.get("hotspots"):
        lines += _hotspots(r, with_calls=False)
    lines += [
        "Bad input at this size (tests/corpus/, in CI): a folder of 100,000 entries indexes, its no-change run "
        "reads nothing and a new or edited entry in it is the one file read; live mode watches it and catches up "
        "after a burst of more new entries than inotify queues (test_huge_folder.py). A 2 GB pack (sparse: git "
        "reads objects through its index) is never read whole: the index stays under 200 MiB resident and follows "
        "commits over it; a 300 MiB blob in a new base commit is streamed out of `git cat-file --batch` a MiB at "
        "a time (it was read whole: 647 MiB resident for a 310 MiB blob, now 75 MiB) (test_gitrepo_big_objects.py).",
        "",
    ]
    return "\n".join(lines)


ISSUE27 = {
    "hostile_trees": ("Hostile trees", "Hypothesis (tests/reliability/test_hostile_trees.py): random and invalid "
        "gitignore lines (`foo\\`, a lone `\\`, `[z-a]`, nested sets) in .gitignore, a nested .gitignore and "
        ".ragrafignore through discovery (never a crash, every skipped line named with file and line); then a FIFO, "
        "a socket, a symlink to /dev/zero and a folder in place of each file ragraf reads itself (.gitignore, "
        ".ragrafignore, a nested .gitignore, ragraf.toml, pyproject.toml, a source file, .git/info/exclude) through "
        "`index`, `search`, `status`, `outline`, `read`, `def`, `doctor` and `index --dry-run` in a subprocess: "
        "no traceback, JSON on stdout, no hang (a 120 s timeout only stops one). Found and fixed on the way: a "
        "FIFO as .git/info/exclude hung the base checkout (git read-tree waits on it)."),
    "jsonrpc": ("JSON-RPC fuzzing", "tests/reliability/test_jsonrpc.py drives `ragraf serve` line by line: the "
        "2.0 spec's error examples (-32700, -32600, -32601, batches), params a string, an object, array, float or "
        "bool as id, `jsonrpc` 1.0 or missing, params an array, nesting 5,000 deep in params and at the top, a "
        "lone surrogate, a 200 KB query, unknown tools and arguments; then Hypothesis requests with random "
        "`jsonrpc`, `method` and `params` under integer ids. Every request with an id must be answered under it "
        "(or under null when the id itself is what is wrong), a notification never, and the server must exit "
        "cleanly when stdin closes."),
    "secrets_corpus": ("Secrets corpus", "tests/reliability/test_secrets_corpus.py: 46 secret files by name "
        "(`.envrc`, `*.p8`, `.kube/config`, `credentials.csv`, `terraform.tfstate.backup`, `env.local`, `*.ovpn`, "
        "`*.keytab`, …) and by content (`my_id_rsa_backup`, a `.txt` and a `.py` opening with a private key), and "
        "27 token formats (src/ragraf/corpus/secrets.py) inside ordinary source, YAML and Markdown, walked and "
        "tracked in git: no marker or token in the index file (a full SQL dump), in any library answer, nor "
        "through the CLI (text and JSON), MCP or HTTP; answers count what they redacted (`redacted: N`)."),
    "integrity": ("Integrity of the index file", "tests/reliability/test_integrity.py overwrites the root page "
        "of a table no query and no unchanged index run reads (the call sites) in a real index file: reads still "
        "answer, and `ragraf index` refuses it as `index_corrupt` (exit 1, no traceback) saying to run "
        "`ragraf index --full` (`doctor --check` lists the damage) until `--full` rebuilds it; without the check it "
        "said 'up to date'. The check is SQLite's `PRAGMA quick_check`, run by an index run only when the file "
        "changed since the last run finished on it (a stamp of its size, inode and mtime beside it, counted by the "
        "test: read, skipped, skipped, read after another writer touched the file, skipped, skipped after the "
        "run's own commit). Its cost, in CPU-seconds measured in one run by `python benchmarks/integrity_cost.py "
        "TREE` (sphinx's source, embedder none): 0.15 on its 158 MB index against 0.31 for a no-change `ragraf "
        "index` of the tree (ratio 0.48; `find -type f` 0.01); on the 772 MB speed-corpus index 0.5 warm, 1.0 cold "
        "(the file's pages read through the page cache); nothing when the file is unchanged. "
        "Reads do not run it: a query that reaches a damaged page already fails as `index_corrupt`."),
    "http_slow_clients": ("Slow and idle HTTP clients", "tests/reliability/test_http_slow_clients.py opens raw "
        "sockets on 127.0.0.1 to `serve --http` with RAGRAF_HTTP_READ_TIMEOUT_S=1: 20 connections that send "
        "nothing, one sending a 5 KB request head a byte every 0.05 s (slowloris), and a keep-alive connection "
        "whose second request trickles the same way; meanwhile 5 health checks and a search are answered; every "
        "one of the 22 is closed by the server before its request is whole (the bytes sent are counted), and the "
        "server answers after. A nonsense value of the setting is refused naming it. Default 10 s, counted from "
        "connecting or from the previous response; a request already read is never cut."),
}  # fmt: skip


def _render_issue27() -> list[str]:
    out = []
    for name, (title, what) in ISSUE27.items():
        r = _load(name)
        if r:
            out.append(render_pytest(r, title, what))
    r = _load("redaction")
    if r:
        lines = [
            "## Redaction on real corpora",
            "",
            "Every text file of the Python standard library and of the benchmark corpora through the decoding "
            "and redaction the index uses (reliability/redaction.py). Each redacted line is listed in "
            "reliability/results/redaction.json for a person to judge; none of those below is a real credential "
            "(they are the examples of tutorials and tests), so each is a false positive of the rules, though "
            "harmless to search (the line stays, the value reads `[redacted:KIND]`).",
            _cmd(r),
            "| corpus | files | MiB | redactions (files) | redaction CPU | per MiB |",
            "|---|---|---|---|---|---|",
        ]
        for c in r["corpora"]:
            per = f"{1000 * c['redact_cpu_s'] / c['mib']:.0f} ms" if c["mib"] else "-"
            lines.append(f"| {c['corpus']} | {c['files']:,} | {c['mib']} | {c['redactions']} ({c['files_with_redactions']}) "
                         f"| {c['redact_cpu_s']} s | {per} |")  # fmt: skip
        files = sum(c["files"] for c in r["corpora"])
        hit = sum(c["files_with_redactions"] for c in r["corpora"])
        lines += ["", f"False-positive rate: {hit} of {files:,} files ({100 * hit / max(1, files):.2f}%) hold a "
                  "redaction, and every one of them is a false positive.", "", "What was redacted:", ""]  # fmt: skip
        for c in r["corpora"]:
            lines += [f"- `{line}`" for line in c["redacted_lines"]]
        lines += ["", _measured(r)]
        out.append("\n".join(lines))
    return out


def render() -> str:
    """docs/reliability.md from reliability/results/*.json."""
    m = machine()
    crash, faults, conc = _load("crash"), _load("embedder_faults"), _load("concurrency")
    fuzz, secrets = _load("fuzz"), _load("secrets")
    scales = [json.loads(p.read_text()) for p in sorted(RESULTS_DIR.glob("scale-*.json"))]
    scales.sort(key=lambda r: (r["embedder"] != "none", -r["corpus"]["files"]))
    measured_on = next((r["machine"] for r in [crash, faults, conc, *scales] if r and "machine" in r), m)
    out = [
        "# Reliability",
        "",
        "<!-- Generated by `python -m reliability.report`; edit reliability/report.py, not this page. -->",
        "",
        "The standing proof that ragraf holds up (issue 10; DESIGN §1 principles 1–3): repeatable fault "
        "campaigns with figures. Every figure below comes with the command that reproduces it, run from the "
        "repository root with the project's virtualenv (`.venv/bin/python`). The short version of every "
        "campaign runs in CI as `tests/reliability/` (a few minutes in all); the long versions run on demand:",
        "",
        "```sh\npython -m reliability.report --long     # every campaign, long, then this page\n"
        "python -m reliability.report            # the short (CI) versions\n"
        "python -m reliability.report --render   # only rebuild this page from reliability/results/*.json\n```",
        "",
        "## Machine",
        "",
        "| | |",
        "|---|---|",
        f"| CPU | {measured_on.get('cpu')} |",
        f"| cores | {measured_on.get('cores')} |",
        f"| memory | {measured_on.get('memory_gib')} GiB |",
        f"| OS | {measured_on.get('os')} |",
        f"| Python / SQLite | {measured_on.get('python')} / {measured_on.get('sqlite')} |",
        f"| page generated | {m['date']} (load average {' '.join(map(str, m['loadavg']))}) |",
        "",
        "The machine is shared and was loaded while the campaigns ran (each section gives its load average); "
        "times are wall-clock and would be lower on a quiet machine.",
        "",
        "## Summary",
        "",
        "| campaign | promise | verdict |",
        "|---|---|---|",
    ]
    rows = [
        (crash, "Crash", "a SIGKILL at any instant loses nothing; the next run recovers; the data checks pass"),
        (faults, "Embedder faults", "every fault completes or stops cleanly; no wrong vector stored; the next run completes"),
        (conc, "Concurrency", "no reader error, every answer from one revision, no duplicate ledger event"),
        (fuzz, "Hostile input", "no crash, no escape from the root"),
        (secrets, "Secrets", "no secret file indexed or returned by any operation (library, CLI, MCP, HTTP)"),
        (_load("hostile_trees"), "Hostile trees", "0 tracebacks, 0 hangs from ignore lines or special files"),
        (_load("jsonrpc"), "JSON-RPC fuzzing", "0 unanswered requests, 0 crashes of the MCP server"),
        (_load("secrets_corpus"), "Secrets corpus", "0 secrets returned (46 files, 27 token formats)"),
    ]  # fmt: skip
    for r, name, promise in rows:
        out.append(f"| {name} | {promise} | {_verdict(r['ok']) if r else 'not run'} |")
    for r in scales:
        met = r["met"]
        out.append(
            f"| Scale, {r['corpus']['files']:,} files, embedder {r['embedder']} | "
            f"targets met: RSS {'✓' if met['peak_rss'] else '✗'}, no-change {'✓' if met['no_change'] else '✗'}, "
            f"one file {'✓' if met['one_file'] else '✗'}, search p95 {'✓' if met['search_p95'] else '✗'} | "
            + ("runs **pass**; " if r["ok"] else "runs **FAIL**; ")
            + (
                "every target met |"
                if all(met.values())
                else f"targets missed: {', '.join(k for k, v in met.items() if not v)} |"
            )
        )
    out.append("")
    if crash:
        out.append(render_crash(crash))
    local = _load("crash-local")
    if local:
        out.append(render_crash(local, "### The same with the default (local) embedder"))
    first = _load("crash-first")
    if first:
        out.append(render_crash_first(first))
    if faults:
        out.append(render_faults(faults))
    if conc:
        out.append(render_concurrency(conc))
    if fuzz:
        out.append(
            render_pytest(
                fuzz,
                "Hostile input (fuzzing)",
                "Hypothesis (tests/reliability/test_fuzz.py): random bytes through text extraction; random text "
                "through Markdown front-matter blanking (line numbers kept); mutated real source (cuts, "
                "insertions of hostile characters, duplications, swaps, truncations, deep nesting) and random "
                "bytes through `chunk_text` and `extract_facts` for every tree-sitter language and Markdown "
                "(every chunk and fact cites lines that exist, every chunk's text is exactly its lines); random "
                "queries (FTS5 syntax, NUL, quotes, Unicode, any k, every mode) through `Index.search`; random "
                "paths (`..`, absolute, `~`, backslashes, NUL, symlinks out of the root and onto a secret, line "
                "ranges) through `Index.read` and `Index.outline`: only RagrafError may be raised, nothing "
                "outside the root or secret is returned.",
            )
        )
    out += _render_issue27()
    if secrets:
        out.append(
            render_pytest(
                secrets,
                "Secrets",
                "A corpus (walked, and tracked in git) seeded with `.env`, `.env.production`, `config/.env.local`, "
                "`id_rsa`, `id_rsa.pub`, `id_ed25519`, `*.pem`, `*.key`, `*.p12`, `.aws/credentials` (two), "
                "`.npmrc`, `credentials.json`, `.netrc`, symlinks with innocent names onto secrets, and a normal "
                "page naming every one of them (tests/reliability/test_secrets.py): none is in the dry run, the "
                "manifest or the chunk table; search, def, refs, outline, drift and read return none (library, "
                "CLI, MCP and HTTP).",
            )
        )
    if scales:
        out.append(render_scale(scales))
    if real := _load("scale_real"):
        out.append(render_scale_real(real))
    bugs = known_bugs()
    out += ["## Bugs found", "", "### Open", ""]
    if bugs:
        out += [
            "Each is pinned by a strict xfail test (it turns the suite red once fixed, so the marker comes off):",
            "",
        ]
        out += [f"{i}. `{bug['test']}`: {bug['reason']}" for i, bug in enumerate(bugs, 1)]
    else:
        out.append("None: no strict xfail is left in tests/reliability.")
    out += ["", "### Found by these campaigns and fixed", ""]
    out += [
        f"- {what} (fixed in {commit}; guarded by `{test if test.startswith('tests/') else f'tests/reliability/{test}'}`)"
        for what, test, commit in FIXED_BUGS
    ]
    out.append("")
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--long", action="store_true", help="the long versions of every campaign")
    parser.add_argument("--only", help=f"comma-separated: {','.join(CAMPAIGNS)}")
    parser.add_argument("--render", action="store_true", help="only rewrite the page from saved results")
    parser.add_argument("--scale-files", type=int, default=0, help="files of the scale monorepo")
    parser.add_argument("--scale-embedder", choices=["none", "local"], default="none")
    args = parser.parse_args()
    if not args.render:
        for name in args.only.split(",") if args.only else CAMPAIGNS:
            print(f"== {name} ({'long' if args.long else 'short'})", flush=True)
            result = run_campaign(name, args.long, args.scale_files, args.scale_embedder)
            print(f"   {'ok' if result.get('ok') else 'PROBLEM'} in {result.get('duration_s')} s", flush=True)
    DOC.write_text(render(), encoding="utf-8")
    print(f"wrote {DOC.relative_to(REPO)}")


if __name__ == "__main__":
    main()
