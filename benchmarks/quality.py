"""Retrieval quality of ragraf on the shared bench (or any annotation file), through the library API.

Per repository, per category and overall: NDCG@10, file Recall@1/@5/@10, MRR@10 (see metric.py),
for several search modes in one run (hybrid, lexical = BM25 alone, vector = embeddings alone, all
over the same chunks), with warm search latency p50/p95 per mode and the index time per corpus.

    python benchmarks/quality.py                                  # six corpora, all modes
    python benchmarks/quality.py --embedder none --modes lexical  # BM25 baseline only
    python benchmarks/quality.py --annotations my.json --corpus ~/src/myrepo --json

Run ``python benchmarks/corpora.py`` first to lay out the six corpora.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

try:
    from benchmarks import corpora, metric
    from benchmarks.mcp_path import McpIndex
except ModuleNotFoundError:  # run as a script: python benchmarks/quality.py
    import corpora  # type: ignore[no-redef]
    import metric  # type: ignore[no-redef]
    from mcp_path import McpIndex  # type: ignore[no-redef]

METRICS = metric.METRICS
Chunk, QueryScore, Target = metric.Chunk, metric.QueryScore, metric.Target
mean, parse_target, percentile, score_query = (
    metric.mean,
    metric.parse_target,
    metric.percentile,
    metric.score_query,
)

MODES = ("hybrid", "lexical", "vector")
CATEGORIES = ("semantic", "architecture", "symbol")
K = 10
HOMES_DIR = corpora.DATA_DIR / ".homes"

# The published anchors of bench/README.md and issue 4 (semble, per repository and overall).
SEMBLE_NDCG10 = {
    "aiohttp": 0.852,
    "fastapi": 0.787,
    "pydantic": 0.792,
    "express": 0.910,
    "trpc": 0.811,
    "zod": 0.615,
}


class IndexLike(Protocol):
    """The part of ragraf.Index the harness uses."""

    def index(self, full: bool = ..., quiet: bool = ...) -> Any: ...
    def search(self, query: str, k: int = ..., mode: str = ...) -> Any: ...
    def close(self) -> None: ...


@dataclass(frozen=True)
class Task:
    """One annotated query."""

    query: str
    relevant: tuple[Target, ...]
    secondary: tuple[Target, ...]
    category: str


@dataclass(frozen=True)
class Corpus:
    """A corpus to evaluate: where to index, how result paths map to annotation paths, its queries."""

    name: str
    root: Path  # the folder indexed
    prefix: str  # prepended to result paths (relative to root) to get annotation paths
    tasks: tuple[Task, ...]
    language: str = ""


@dataclass
class QueryRecord:
    """The outcome of one query in one mode."""

    repo: str
    category: str
    mode: str
    query: str
    score: QueryScore
    latency_ms: float
    top: list[str]
    degraded: bool = False
    error: str | None = None

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return {
            "repo": self.repo,
            "category": self.category,
            "mode": self.mode,
            "query": self.query,
            **self.score.to_dict(),
            "latency_ms": round(self.latency_ms, 3),
            "top": self.top,
            "degraded": self.degraded,
            "error": self.error,
        }


@dataclass
class CorpusRun:
    """Everything measured on one corpus."""

    name: str
    index: dict[str, object] = field(default_factory=dict)
    records: list[QueryRecord] = field(default_factory=list)


def infer_category(query: str) -> str:
    """semble's fallback when an annotation has no category."""
    q = query.strip().lower()
    if " " not in q:
        return "symbol"
    return "architecture" if q.startswith("how ") else "semantic"


def load_tasks(path: Path) -> tuple[Task, ...]:
    """Read an annotation file: a JSON list of {query, relevant, secondary, category}."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(raw, list):
        raise SystemExit(f"{path}: expected a JSON list of annotations")
    tasks = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict) or "query" not in item:
            raise SystemExit(f"{path}: entry {i} has no 'query'")
        category = item.get("category")
        tasks.append(
            Task(
                query=str(item["query"]),
                relevant=tuple(parse_target(t) for t in item.get("relevant", [])),
                secondary=tuple(parse_target(t) for t in item.get("secondary", [])),
                category=category if isinstance(category, str) else infer_category(str(item["query"])),
            )
        )
    return tuple(tasks)


def custom_corpus(annotations: Path, corpus: Path, index_root: str = "") -> Corpus:
    """A user's annotation file over their repository, optionally indexing one subfolder of it."""
    prefix = index_root.strip("/")
    root = corpus.resolve()
    return Corpus(annotations.stem, root / prefix if prefix else root, prefix, load_tasks(annotations))


def bench_corpora(names: Sequence[str] | None, bench_dir: Path) -> list[Corpus]:
    """The shared bench's corpora, laid out by corpora.py."""
    out = []
    for spec in corpora.load_specs(bench_dir):
        if names and spec.name not in names:
            continue
        if not corpora.is_ready(spec.name):
            raise SystemExit(f"corpus {spec.name} is not laid out: run python benchmarks/corpora.py")
        out.append(
            Corpus(
                spec.name,
                spec.root,
                spec.index_root.strip("/"),
                load_tasks(bench_dir / "annotations" / f"{spec.name}.json"),
                spec.language,
            )
        )
    if names:
        missing = set(names) - {c.name for c in out}
        if missing:
            raise SystemExit(f"unknown repositories: {', '.join(sorted(missing))}")
    return out


def stale_spans(corpus: Corpus) -> list[tuple[str, Target]]:
    """Line-span targets of symbol queries whose lines do not name the symbol: spans annotated on
    another version of the file (two of the bench's fastapi spans are). No result can be found at
    them, so they are listed, and scored as whole files only when asked (--widen-stale-spans)."""
    out = []
    for task in corpus.tasks:
        name = re.split(r"[.:#]+", task.query.strip())[-1]
        if task.category != "symbol" or not name:
            continue
        for target in (*task.relevant, *task.secondary):
            if not target.has_span:
                continue
            rel = target.path[len(corpus.prefix) + 1 :] if corpus.prefix else target.path
            try:
                text = (corpus.root / rel).read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue  # a missing gold file is corpora.verify's report
            lines = text.splitlines()[int(target.start_line or 1) - 1 : target.end_line]
            if not any(name in line for line in lines):
                out.append((task.query, target))
    return out


def widen(corpus: Corpus, stale: Sequence[tuple[str, Target]]) -> Corpus:
    """The corpus with the given span targets scored as whole files."""
    marked = set(stale)

    def fix(query: str, targets: tuple[Target, ...]) -> tuple[Target, ...]:
        return tuple(Target(t.path) if (query, t) in marked else t for t in targets)

    tasks = tuple(
        replace(t, relevant=fix(t.query, t.relevant), secondary=fix(t.query, t.secondary))
        for t in corpus.tasks
    )
    return replace(corpus, tasks=tasks)


def annotation_path(result_path: str, prefix: str) -> str:
    """A result path (relative to the indexed root) as an annotation path (relative to the corpus)."""
    p = result_path.replace("\\", "/").lstrip("/")
    return f"{prefix}/{p}" if prefix else p


def _count(value: object) -> int | None:
    """A count from an IndexReport field: an int, or {total} / {added, modified, unchanged}."""
    if isinstance(value, int):
        return value
    if isinstance(value, dict):
        if isinstance(value.get("total"), int):
            return value["total"]
        return sum(int(value.get(k, 0)) for k in ("added", "modified", "unchanged"))
    return None


def _envelope_degraded(env: Any) -> bool:
    """Whether the envelope says the answer is degraded (e.g. no embedder for a vector search)."""
    try:
        return bool(env.to_dict().get("capability", {}).get("degraded"))
    except Exception:  # a minimal envelope without to_dict: not degraded as far as we know
        return False


def evaluate(
    idx: IndexLike,
    corpus: Corpus,
    modes: Sequence[str],
    *,
    full: bool = True,
    repeat: int = 3,
    clock: Callable[[], float] = time.perf_counter,
    embed: bool = True,
) -> CorpusRun:
    """Index the corpus, then run every query in every mode and score it (embed=False: the index
    run embeds nothing more, so the vectors stay as a --transformer-share build left them)."""
    run = CorpusRun(corpus.name)
    t0 = clock()
    report = idx.index(full=full, quiet=True, **({} if embed else {"lexical_only": True}))
    wall = clock() - t0
    info = report.to_dict() if hasattr(report, "to_dict") else dict(report)
    run.index = {
        "wall_s": round(wall, 3),
        "duration_s": info.get("duration_s"),
        "full": full,
        "files": _count(info.get("files")),
        "chunks": _count(info.get("chunks")),
        "index_rev": info.get("index_rev"),
        "embeddings": info.get("embeddings"),
    }
    for mode in modes:
        if corpus.tasks:  # warm-up: load whatever the first query of a mode loads
            with contextlib.suppress(Exception):
                idx.search(corpus.tasks[0].query, k=K, mode=mode)
        for task in corpus.tasks:
            times: list[float] = []
            env: Any = None
            error = None
            try:
                for _ in range(max(1, repeat)):
                    t = clock()
                    env = idx.search(task.query, k=K, mode=mode)
                    times.append((clock() - t) * 1000)
            except Exception as exc:  # one failing query must not hide the other figures
                error = f"{type(exc).__name__}: {exc}"
            results = list(env.results)[:K] if env is not None else []
            chunks = [
                Chunk(annotation_path(r.path, corpus.prefix), int(r.start_line), int(r.end_line))
                for r in results
            ]
            run.records.append(
                QueryRecord(
                    repo=corpus.name,
                    category=task.category,
                    mode=mode,
                    query=task.query,
                    score=score_query(chunks, task.relevant, task.secondary, K),
                    latency_ms=statistics.median(times) if times else 0.0,
                    top=[f"{c.path}:{c.start_line}-{c.end_line}" for c in chunks],
                    degraded=_envelope_degraded(env) if env is not None else False,
                    error=error,
                )
            )
    return run


def open_index(
    root: Path,
    name: str,
    embedder: str | None,
    home_dir: Path = HOMES_DIR,
    fresh: bool = False,
    **settings: object,
) -> IndexLike:
    """ragraf.Index for root with its own home under benchmarks/data/.homes/<name>-<embedder>.

    fresh: remove that home first, so the index time is a cold build (the machine-wide embedding
    cache is left as it is).
    """
    from ragraf import Index

    home = home_dir / f"{name}-{embedder or 'default'}"
    if fresh and home.exists():
        shutil.rmtree(home)
    home.mkdir(parents=True, exist_ok=True)
    overrides: dict[str, object] = {"home": str(home), **settings}
    if embedder:
        overrides["embedder"] = embedder
    return Index.open(root, **overrides)


def partial_build(corpus: Corpus, embedder: str | None, home_dir: Path, share: float) -> None:
    """A cold index of the corpus whose transformer tier covers `share` of its chunks: one run
    embedding a single chunk tells the count, a second embeds up to the share."""
    idx = open_index(corpus.root, corpus.name, embedder, home_dir, fresh=True, embed_max_chunks=1)
    try:
        report = idx.index(full=True, quiet=True).to_dict()
    finally:
        idx.close()
    budget = round(share * (_count(report.get("chunks")) or 0)) - 1
    if budget > 0:
        idx = open_index(corpus.root, corpus.name, embedder, home_dir, embed_max_chunks=budget)
        try:
            idx.index(quiet=True)
        finally:
            idx.close()


def _rows(
    records: Sequence[QueryRecord], key: Callable[[QueryRecord], str], order: Iterable[str]
) -> list[tuple[str, dict[str, float]]]:
    """Mean metrics per group value, in the given order (groups with no queries left out)."""
    out = []
    for value in order:
        group = [r.score for r in records if key(r) == value]
        if group:
            out.append((value, mean(group)))
    return out


def latency(records: Sequence[QueryRecord]) -> dict[str, float]:
    """p50/p95 of the per-query median latencies (ms)."""
    lat = [r.latency_ms for r in records if r.error is None]
    return {
        "p50_ms": round(percentile(lat, 50), 3),
        "p95_ms": round(percentile(lat, 95), 3),
        "timed": len(lat),
    }


def summarize(runs: Sequence[CorpusRun], modes: Sequence[str]) -> dict[str, object]:
    """The JSON summary: per mode, per repository / category / overall, plus latency and index time."""
    repos = [r.name for r in runs]
    records = [rec for r in runs for rec in r.records]
    cats = list(dict.fromkeys([*CATEGORIES, *(rec.category for rec in records)]))
    by_mode: dict[str, object] = {}
    for mode in modes:
        recs = [r for r in records if r.mode == mode]
        per_repo = dict(_rows(recs, lambda r: r.repo, repos))
        macro = {m: statistics.fmean(v[m] for v in per_repo.values()) for m in METRICS} if per_repo else {}
        by_mode[mode] = {
            "overall": mean([r.score for r in recs]),
            "repo_mean": macro,
            "by_repo": {k: {**v, **latency([r for r in recs if r.repo == k])} for k, v in per_repo.items()},
            "by_category": dict(_rows(recs, lambda r: r.category, cats)),
            "by_repo_category": {
                repo: dict(_rows([r for r in recs if r.repo == repo], lambda r: r.category, cats))
                for repo in repos
            },
            "latency": latency(recs),
            "degraded_queries": sum(r.degraded for r in recs),
            "errors": sum(r.error is not None for r in recs),
        }
    return {
        "k": K,
        "modes": list(modes),
        "index": {r.name: r.index for r in runs},
        "results": by_mode,
        "queries": [rec.to_dict() for rec in records],
    }


def _fmt_row(label: str, v: dict[str, float], extra: str = "") -> str:
    return (
        f"  {label:<26} {int(v.get('n', 0)):>4} {v['ndcg10']:>8.3f} {v['recall1']:>6.3f} "
        f"{v['recall5']:>6.3f} {v['recall10']:>6.3f} {v['mrr10']:>7.3f}{extra}"
    )


def render(summary: dict[str, Any], out: Any = sys.stdout) -> None:
    """Print the tables a person reads."""

    def p(line: str = "") -> None:
        print(line, file=out)

    p("Index")
    p(f"  {'corpus':<12} {'files':>6} {'chunks':>7} {'wall s':>8}  rev")
    for name, info in summary["index"].items():
        p(
            f"  {name:<12} {info.get('files') or '-':>6} {info.get('chunks') or '-':>7} "
            f"{info['wall_s']:>8.2f}  {info.get('index_rev') or '-'}{'' if info.get('full') else ' (incremental)'}"
        )
    head = f"  {'':<26} {'n':>4} {'NDCG@10':>8} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'MRR@10':>7}"
    for mode in summary["modes"]:
        res = summary["results"][mode]
        lat = res["latency"]
        p()
        p(
            f"Mode {mode}: search p50 {lat['p50_ms']:.1f} ms, p95 {lat['p95_ms']:.1f} ms (warm, k={summary['k']})"
            + (f"  [{res['degraded_queries']} degraded answers]" if res["degraded_queries"] else "")
            + (f"  [{res['errors']} errors]" if res["errors"] else "")
        )
        p(head + f" {'p50 ms':>7} {'p95 ms':>7} {'semble':>7}")
        for repo, v in res["by_repo"].items():
            anchor = SEMBLE_NDCG10.get(repo)
            p(
                _fmt_row(
                    repo,
                    v,
                    f" {v['p50_ms']:>7.1f} {v['p95_ms']:>7.1f} {f'{anchor:.3f}' if anchor is not None else '':>7}",
                )
            )
        for cat, v in res["by_category"].items():
            p(_fmt_row(f"[{cat}]", v))
        p(_fmt_row("overall (mean of queries)", res["overall"]))
        if len(res["by_repo"]) > 1:
            p(_fmt_row("mean of repositories", {**res["repo_mean"], "n": len(res["by_repo"])}))
    modes = summary["modes"]
    if len(modes) > 1:
        p()
        p("NDCG@10 by mode" + ("  (delta = hybrid - lexical)" if {"hybrid", "lexical"} <= set(modes) else ""))
        p(f"  {'':<26}" + "".join(f" {m:>8}" for m in modes) + ("    delta" if "hybrid" in modes else ""))
        first = summary["results"][modes[0]]
        labels = (
            [(r, "by_repo", r) for r in first["by_repo"]]
            + [(f"[{c}]", "by_category", c) for c in first["by_category"]]
            + [("overall", "overall", None)]
        )
        for label, group, key in labels:
            vals = {
                m: (summary["results"][m][group][key] if key else summary["results"][m][group]).get(
                    "ndcg10", 0.0
                )
                for m in modes
            }
            delta = (
                f" {vals['hybrid'] - vals['lexical']:>+8.3f}" if {"hybrid", "lexical"} <= set(modes) else ""
            )
            p(f"  {label:<26}" + "".join(f" {vals[m]:>8.3f}" for m in modes) + delta)


def print_misses(runs: Sequence[CorpusRun], out: Any = sys.stderr) -> None:
    """Per-query detail for queries that did not score 1.0."""
    for run in runs:
        for rec in run.records:
            if rec.score.ndcg10 < 1.0 or rec.error:
                print(
                    f"[{rec.mode}] {rec.repo} {rec.category:<12} ndcg={rec.score.ndcg10:.3f} "
                    f"ranks={list(rec.score.ranks)} q={rec.query!r}",
                    file=out,
                )
                if rec.error:
                    print(f"    error: {rec.error}", file=out)
                for t in rec.top[:5]:
                    print(f"    {t}", file=out)


def _csv(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated: hybrid,lexical,vector")
    ap.add_argument("--repos", default="", help="comma-separated bench repositories (default: all six)")
    ap.add_argument(
        "--embedder",
        default=None,
        help="embedder passed to ragraf (none|local|ollama|openai); default: ragraf's default",
    )
    ap.add_argument("--annotations", type=Path, help="an annotation file in the bench format")
    ap.add_argument("--corpus", type=Path, help="the repository the annotation paths are relative to")
    ap.add_argument("--index-root", default="", help="with --corpus: index only this subfolder of it")
    ap.add_argument("--bench", type=Path, default=corpora.SHARED_BENCH, help="the shared bench folder")
    ap.add_argument("--homes", type=Path, default=HOMES_DIR, help="where the index homes go")
    ap.add_argument(
        "--incremental",
        action="store_true",
        help="reuse an existing index (default: a cold build in a fresh home)",
    )
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per query (median kept)")
    ap.add_argument(
        "--via",
        choices=("library", "mcp"),
        default="library",
        help="mcp: every search through `ragraf serve` with the tool's default top_k, scored on the "
        "citations of the text the agent reads (within the byte budget)",
    )
    ap.add_argument(
        "--transformer-share",
        type=float,
        default=None,
        help="build each index with the static tier complete and the transformer tier stopped at this "
        "share of the chunks (embed_max_chunks: the most valuable first), then score it",
    )
    ap.add_argument("--json", action="store_true", help="print the JSON summary on stdout (tables on stderr)")
    ap.add_argument("--out", type=Path, help="also write the JSON summary to this file")
    ap.add_argument("--verbose", "-v", action="store_true", help="per-query detail of imperfect queries")
    ap.add_argument(
        "--widen-stale-spans",
        action="store_true",
        help="score line spans that do not name their symbol query (another version's lines) as whole files",
    )
    args = ap.parse_args(argv)

    modes = _csv(args.modes)
    if not modes or set(modes) - set(MODES):
        ap.error(f"--modes must be a subset of {','.join(MODES)}")
    if bool(args.annotations) != bool(args.corpus):
        ap.error("--annotations and --corpus go together")

    # The bench corpora live in a gitignored folder of this repository: without a ceiling, ragraf's
    # `git ls-files` would see the parent repository and list nothing. Stop git's search above them.
    ceilings = [c for c in os.environ.get("GIT_CEILING_DIRECTORIES", "").split(os.pathsep) if c]
    os.environ["GIT_CEILING_DIRECTORIES"] = os.pathsep.join([*ceilings, str(corpora.DATA_DIR)])

    if args.annotations:
        if not args.corpus.is_dir():
            ap.error(f"--corpus {args.corpus} is not a folder")
        todo = [custom_corpus(args.annotations, args.corpus, args.index_root)]
    else:
        todo = bench_corpora(_csv(args.repos) or None, args.bench)

    table_out = sys.stderr if args.json else sys.stdout
    runs: list[CorpusRun] = []
    stale: list[dict[str, str]] = []
    for corpus in todo:
        found = stale_spans(corpus)
        for query, t in found:
            stale.append(
                {"repo": corpus.name, "query": query, "target": f"{t.path}:{t.start_line}-{t.end_line}"}
            )
            print(
                f"... {corpus.name}: {query!r} gold {t.path}:{t.start_line}-{t.end_line} does not name it "
                f"(another version's lines?){': scored as the whole file' if args.widen_stale_spans else ''}",
                file=sys.stderr,
            )
        if found and args.widen_stale_spans:
            corpus = widen(corpus, found)
        print(f"... {corpus.name}: indexing {corpus.root}", file=sys.stderr, flush=True)
        share = args.transformer_share
        if share is not None and not args.incremental:  # --incremental: score the partial build as it is
            partial_build(corpus, args.embedder, args.homes, share)
        fresh = not args.incremental and share is None
        idx = open_index(corpus.root, corpus.name, args.embedder, args.homes, fresh=fresh)
        if args.via == "mcp":
            idx = McpIndex(idx)
        try:
            runs.append(evaluate(idx, corpus, modes, full=fresh, repeat=args.repeat, embed=share is None))
        finally:
            idx.close()
    summary = summarize(runs, modes)
    summary["embedder"] = args.embedder or "default"
    summary["via"] = args.via
    summary["stale_spans"] = {"targets": stale, "scored_as_files": args.widen_stale_spans}
    if args.verbose:
        print_misses(runs)
    render(summary, table_out)
    text = json.dumps(summary, indent=2)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    if args.json:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
