"""Warm search latency of ragraf in CPU-ms per query, per tier configuration, and the memory each model adds.

One warm process per corpus and configuration, as the MCP server answers: `time.process_time()`
around each library `search` call (every thread of the process counts) over the bench queries,
after one warm-up query. Configurations:

- lexical: BM25 alone (over the two-tier index);
- static: hybrid over the static tier alone (`embedder = static`);
- full: hybrid with both tiers complete (the default `local` embedder), the transformer's query
  embedding reported on its own (`embed_ms`: the same query embedded again, timed alone);
- share25: hybrid with the transformer tier stopped at 25% of the chunks (value order).

Memory: the RSS (VmRSS) a fresh process gains by loading the static table, and by loading the
transformer and embedding one text, each in its own subprocess.

    python benchmarks/search_latency.py                        # six bench corpora, all four
    python benchmarks/search_latency.py --repos aiohttp --configs lexical,static --json
    python benchmarks/search_latency.py --incremental          # reuse the homes of a previous run
    python benchmarks/search_latency.py --corpus benchmarks/data/speed --configs static,lexical

Target (issue 24): p50 ≤ 20 ms CPU per query on every bench corpus; each model ≤ 100 MB of RSS.
Run ``python benchmarks/corpora.py`` first to lay out the corpora.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

try:
    from benchmarks import corpora, metric, quality, speed
except ModuleNotFoundError:  # run as a script: python benchmarks/search_latency.py
    import corpora  # type: ignore[no-redef]
    import metric  # type: ignore[no-redef]
    import quality  # type: ignore[no-redef]
    import speed  # type: ignore[no-redef]

CONFIGS = ("lexical", "static", "full", "share25")
SHARE = 0.25
K = 10
# Which index each configuration searches, and in which mode: (embedder, transformer share, mode).
PLAN: dict[str, tuple[str | None, float | None, str]] = {
    "lexical": (None, None, "lexical"),
    "static": ("static", None, "hybrid"),
    "full": (None, None, "hybrid"),
    "share25": (None, SHARE, "hybrid"),
}

_MEMORY = """
import json, sys
from pathlib import Path

def rss():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0

import numpy, tokenizers, onnxruntime  # the libraries a search process has loaded anyway
from ragraf.embed.static import TABLE, StaticEmbedder
from ragraf.embed.local import LocalEmbedder, MODELS
before = rss()
if sys.argv[1] == "static":
    model = StaticEmbedder(TABLE)
else:
    model = LocalEmbedder(MODELS["all-MiniLM-L6-v2"])
model.load()
model.embed_query("how are requests routed to handlers")
print(json.dumps({"before_mb": round(before, 1), "after_mb": round(rss(), 1)}))
"""


def memory(which: str) -> dict[str, float]:
    """RSS of a fresh process before and after loading one model (static or transformer)."""
    out = subprocess.run(
        [sys.executable, "-c", _MEMORY, which], capture_output=True, text=True, check=True
    ).stdout
    found = json.loads(out.strip().splitlines()[-1])
    found["added_mb"] = round(found["after_mb"] - found["before_mb"], 1)
    return found


def folder_corpus(root: Path, queries: Path | None) -> quality.Corpus:
    """Any folder, searched with speed.py's questions and identifiers (or one query per line of a file)."""
    nl, ident = speed.load_queries(queries)
    tasks = tuple(quality.Task(q, (), (), "") for q in [*nl, *ident])
    return quality.Corpus(root.resolve().name, root.resolve(), "", tasks)


def prepare(corpus: quality.Corpus, config: str, homes: Path, incremental: bool) -> Any:
    """The configuration's index of the corpus, indexed (a cold build unless incremental), open."""
    embedder, share, _ = PLAN[config]
    home_name = f"{corpus.name}-{config if config != 'lexical' else 'full'}"
    if share is not None and not incremental:
        quality.partial_build(corpus, embedder, homes / home_name, share)
    idx = quality.open_index(corpus.root, corpus.name, embedder, homes / home_name)
    # A partial build stays as it is; the lexical configuration needs no vectors of its own.
    idx.index(quiet=True, **({"lexical_only": True} if share is not None or config == "lexical" else {}))
    return idx


def measure(idx: Any, corpus: quality.Corpus, mode: str, embed: bool, repeat: int) -> dict[str, Any]:
    """CPU-ms per search (median of `repeat` runs per query), and per transformer query embedding."""
    queries = [t.query for t in corpus.tasks]
    with contextlib.suppress(Exception):
        idx.search(queries[0], k=K, mode=mode)  # warm-up: loads the vectors, the path index, the model
    searches: list[float] = []
    embeds: list[float] = []
    degraded = 0
    embedder = idx.query_embedder() if embed else None
    for query in queries:
        runs = []
        for _ in range(max(1, repeat)):
            t = time.process_time()
            env = idx.search(query, k=K, mode=mode)
            runs.append((time.process_time() - t) * 1000)
        searches.append(sorted(runs)[len(runs) // 2])
        degraded += bool(env.capability.degraded)
        if embedder is not None:
            t = time.process_time()
            embedder.embed_query(query)
            embeds.append((time.process_time() - t) * 1000)
    out: dict[str, Any] = {"queries": len(queries), "degraded": degraded, **_pct(searches, "")}
    if embeds:
        out.update(_pct(embeds, "embed_"))
        rest = [s - e for s, e in zip(searches, embeds, strict=True)]
        out.update(_pct(rest, "rest_"))
    return out


def _pct(values: list[float], prefix: str) -> dict[str, float]:
    return {
        f"{prefix}p50_ms": round(metric.percentile(values, 50), 2),
        f"{prefix}p95_ms": round(metric.percentile(values, 95), 2),
    }


def render(results: dict[str, dict[str, Any]], mem: dict[str, Any], out: Any = sys.stdout) -> None:
    print(
        f"{'corpus':10} {'config':8} {'p50':>7} {'p95':>7} {'embed p50':>10} {'rest p50':>9}  CPU-ms",
        file=out,
    )
    for corpus, configs in results.items():
        for config, r in configs.items():
            embed = f"{r['embed_p50_ms']:10.2f}" if "embed_p50_ms" in r else f"{'':10}"
            rest = f"{r['rest_p50_ms']:9.2f}" if "rest_p50_ms" in r else f"{'':9}"
            print(f"{corpus:10} {config:8} {r['p50_ms']:7.2f} {r['p95_ms']:7.2f} {embed} {rest}", file=out)
    for which, m in mem.items():
        print(
            f"RSS added by loading the {which}: {m['added_mb']} MB ({m['before_mb']} -> {m['after_mb']})",
            file=out,
        )


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repos", default="", help="comma-separated bench repositories (default: all six)")
    ap.add_argument("--configs", default=",".join(CONFIGS), help=f"comma-separated: {','.join(CONFIGS)}")
    ap.add_argument(
        "--corpus",
        type=Path,
        help="a folder to measure instead of the bench (e.g. benchmarks/data/speed), with speed.py's queries",
    )
    ap.add_argument("--queries", type=Path, help="with --corpus: queries, one per line")
    ap.add_argument("--bench", type=Path, default=corpora.SHARED_BENCH, help="the shared bench folder")
    ap.add_argument(
        "--homes",
        type=Path,
        default=Path(tempfile.gettempdir()) / "ragraf-search-latency",
        help="where the index homes go (kept, for --incremental)",
    )
    ap.add_argument("--incremental", action="store_true", help="reuse the homes a previous run built")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per query (median kept)")
    ap.add_argument("--no-memory", action="store_true", help="skip the two memory subprocesses")
    ap.add_argument("--json", action="store_true", help="print the JSON summary (table on stderr)")
    args = ap.parse_args(argv)
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    if not configs or set(configs) - set(CONFIGS):
        ap.error(f"--configs must be a subset of {','.join(CONFIGS)}")
    # As quality.py: the corpora sit in a gitignored folder of this repository.
    ceilings = [c for c in os.environ.get("GIT_CEILING_DIRECTORIES", "").split(os.pathsep) if c]
    os.environ["GIT_CEILING_DIRECTORIES"] = os.pathsep.join([*ceilings, str(corpora.DATA_DIR)])

    repos = [r.strip() for r in args.repos.split(",") if r.strip()]
    results: dict[str, dict[str, Any]] = {}
    # "full" before "lexical": the lexical configuration searches the full build's index.
    order = sorted(configs, key=lambda c: CONFIGS.index(c) if c != "lexical" else len(CONFIGS))
    todo = (
        [folder_corpus(args.corpus, args.queries)]
        if args.corpus
        else quality.bench_corpora(repos or None, args.bench)
    )
    for corpus in todo:
        results[corpus.name] = {}
        for config in order:
            print(f"... {corpus.name}: {config}", file=sys.stderr, flush=True)
            incremental = args.incremental or (config == "lexical" and "full" in configs)
            idx = prepare(corpus, config, args.homes, incremental)
            try:
                mode = PLAN[config][2]
                results[corpus.name][config] = measure(
                    idx, corpus, mode, config in ("full", "share25"), args.repeat
                )
            finally:
                idx.close()
        results[corpus.name] = {c: results[corpus.name][c] for c in configs}
    mem = {} if args.no_memory else {"static table": memory("static"), "transformer": memory("transformer")}
    render(results, mem, sys.stderr if args.json else sys.stdout)
    if args.json:
        print(json.dumps({"cpu_ms": results, "memory": mem}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
