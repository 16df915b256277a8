"""Indexing and search speed of ragraf on a ~10,000-file corpus (issue 2's figures), in one run.

On a temporary copy of the speed corpus (so it can be edited): cold lexical index (files/s), a
no-change re-index and a one-file-change re-index (through the library and end to end through
`ragraf index --root X --json` as a subprocess), and warm lexical search p50/p95 over ~50
developer questions and identifiers. ``--embedder local`` adds a cold index with that embedder
(empty embedding cache) and hybrid search latency.

    python benchmarks/speed.py                       # needs python benchmarks/corpora.py speed
    python benchmarks/speed.py --embedder local --json
    python benchmarks/speed.py --cold-only           # cold index in files per CPU-second, and its floor
    python benchmarks/speed.py --corpus ~/src/myrepo --queries my_queries.txt
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

try:
    from benchmarks import corpora, metric
except ModuleNotFoundError:  # run as a script: python benchmarks/speed.py
    import corpora  # type: ignore[no-redef]
    import metric  # type: ignore[no-redef]

# Whole CLI processes measured in process: no background server (cli_cpu.py measures that path).
os.environ.setdefault("RAGRAF_SERVER_IDLE_S", "0")

# Plausible questions a developer asks about django + sympy + pygments, common words included.
NL_QUERIES: tuple[str, ...] = (
    "how does the ORM build the SQL for a queryset filter",
    "where are database migrations applied and recorded",
    "how is the CSRF token checked on a POST request",
    "middleware that handles sessions and cookies",
    "how does the template engine resolve a variable in a context",
    "where are URL patterns matched against the request path",
    "password hashing and checking in the auth framework",
    "how is a model form validated and then saved",
    "send an email with attachments",
    "how does the admin site register a model",
    "database cache backend with expiry of old entries",
    "how are static files collected and served",
    "signal sent after a model instance is saved",
    "how are time zones converted for datetime fields",
    "paginate a list of objects in a view",
    "translation of strings and the active language",
    "how does the test client make a request to a view",
    "transactions and the atomic block on a database connection",
    "file upload handling and temporary files on disk",
    "how to serialize a queryset to JSON",
    "what happens when a foreign key target is deleted",
    "where is the user model swapped for a custom one",
    "the user is not logged in and gets redirected to the login page",
    "how to add a custom command to manage.py",
    "raise an error when the value of the field is not valid",
    "solve a system of linear equations",
    "how is the derivative of an expression computed",
    "simplify trigonometric expressions",
    "integrate a rational function",
    "determinant and inverse of a matrix",
    "pretty print an expression with unicode characters",
    "how are polynomials factored over the integers",
    "series expansion of a function around a point",
    "test if a number is prime and factor it",
    "convert an expression to LaTeX",
    "how does the lexer split a Python source file into tokens",
    "HTML formatter with line numbers",
    "guess the lexer from a file name or its content",
    "register a new style with colors for each token type",
    "regular expression lexer with states and callbacks",
    "what is the default for the setting of the secret key",
    "why can the request body only be read once",
)
IDENT_QUERIES: tuple[str, ...] = (
    "QuerySet",
    "get_object_or_404",
    "HttpResponseRedirect",
    "CsrfViewMiddleware",
    "ModelAdmin",
    "select_related",
    "render_to_string",
    "Symbol",
    "lambdify",
    "RegexLexer",
    "HtmlFormatter",
    "get_lexer_by_name",
)

TARGETS = {  # issue 2, on a 2-core machine; issue 28 in CPU-seconds
    "cold_files_per_s": (">=", 300.0),
    "cold_files_per_cpu_s": (">=", 300.0),
    "nochange_s": ("<=", 0.5),
    "onefile_s": ("<=", 1.0),
    "search_p50_ms": ("<=", 20.0),
    "search_p95_ms": ("<=", 60.0),
}


@dataclass(frozen=True)
class Figure:
    """One measured figure with its unit and the target it is held against."""

    key: str
    label: str
    value: float
    unit: str
    target: str | None = None  # a key of TARGETS

    def verdict(self) -> str:
        """'ok', 'MISS' or '' when no target applies."""
        if self.target is None:
            return ""
        op, bound = TARGETS[self.target]
        good = self.value >= bound if op == ">=" else self.value <= bound
        return "ok" if good else "MISS"

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict."""
        d: dict[str, object] = {
            "key": self.key,
            "label": self.label,
            "value": round(self.value, 4),
            "unit": self.unit,
        }
        if self.target:
            op, bound = TARGETS[self.target]
            d.update(target=f"{op} {bound:g}", verdict=self.verdict())
        return d


def load_queries(path: Path | None) -> tuple[list[str], list[str]]:
    """(natural-language, identifier) queries: built in, or one per line from a file (no space = identifier)."""
    if path is None:
        return list(NL_QUERIES), list(IDENT_QUERIES)
    lines = [ln.strip() for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
    return [q for q in lines if " " in q], [q for q in lines if " " not in q]


def cpu_now() -> float:
    """CPU seconds of this process and its finished children (the index workers) so far."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def own_cpu_now() -> float:
    """CPU seconds of this process alone (an index run's main process, without its workers)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime


def static_throughput(idx: Any, limit: int = 20_000) -> tuple[int, float, float]:
    """(chunks, wall s, CPU s) of the static table embedding up to `limit` of the index's chunks
    (as the index run sends them: 128 at a time), read from the store first."""
    from ragraf.embed.static import StaticEmbedder
    from ragraf.index.embedding import embed_text

    store, rev = idx.store(), idx.store().current_revision()
    texts = [embed_text(h) for h in store.chunks_missing_vectors(rev.rev_no, "none/speed", limit)]
    embedder = StaticEmbedder()
    embedder.load()
    t, c = time.perf_counter(), cpu_now()
    for start in range(0, len(texts), 128):
        embedder.embed(texts[start : start + 128])
    return len(texts), time.perf_counter() - t, cpu_now() - c


def parse_floor(root: Path, paths: Sequence[str]) -> tuple[int, float]:
    """(files parsed, CPU s) of reading every indexed file and parsing those with a tree-sitter
    grammar, in this process: the floor a cold index is held against (it parses the same files)."""
    from tree_sitter_language_pack import get_parser

    from ragraf.languages import TREE_SITTER_LANGUAGES, language_of

    parsers: dict[str, Any] = {}
    parsed = 0
    c = cpu_now()
    for path in paths:
        data = (root / path).read_bytes()
        language = language_of(path)
        if language in TREE_SITTER_LANGUAGES:
            parser = parsers.get(language) or parsers.setdefault(language, get_parser(language))  # type: ignore[arg-type]
            parser.parse(data)
            parsed += 1
    return parsed, cpu_now() - c


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """Wall seconds of one call and its value."""
    t = time.perf_counter()
    value = fn()
    return time.perf_counter() - t, value


def files_total(report: dict[str, Any]) -> int:
    """Files in the revision an index report describes."""
    f = report.get("files")
    if isinstance(f, int):
        return f
    return sum(int(f.get(k, 0)) for k in ("added", "modified", "unchanged")) if isinstance(f, dict) else 0


def pick_file(root: Path) -> Path:
    """A deterministic mid-sized source file to edit (a .py file when there is one)."""
    candidates = sorted(p for p in root.rglob("*.py") if p.is_file() and ".ragraf" not in p.parts)
    if not candidates:
        candidates = sorted(
            p for p in root.rglob("*") if p.is_file() and p.suffix in {".js", ".ts", ".md", ".txt"}
        )
    if not candidates:
        raise SystemExit(f"no file to edit under {root}")
    by_size = sorted(candidates, key=lambda p: (p.stat().st_size, str(p)))
    return by_size[len(by_size) // 2]


def edit(path: Path, n: int) -> None:
    """Change one file's content (a trailing comment line)."""
    comment = "//" if path.suffix in {".js", ".ts"} else "#"
    with path.open("a", encoding="utf-8") as fh:
        fh.write(f"\n{comment} ragraf speed bench edit {n}\n")


def ragraf_cli() -> list[str]:
    """The ragraf console script of this interpreter's environment."""
    here = Path(sys.executable).parent / "ragraf"
    if here.exists():
        return [str(here)]
    found = shutil.which("ragraf")
    if found:
        return [found]
    raise SystemExit("the ragraf command is not installed (pip install -e .)")


def cli_index(root: Path, env: dict[str, str]) -> tuple[float, dict[str, Any]]:
    """End-to-end wall seconds of `ragraf index --root X --json` and its parsed output."""
    cmd = [*ragraf_cli(), "index", "--root", str(root), "--json"]
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return wall, json.loads(proc.stdout)


def search_latencies(idx: Any, queries: Sequence[str], mode: str, repeat: int) -> list[float]:
    """Median ms of `repeat` warm runs of each query (k=10), timed around the search call only."""
    for q in queries[:5]:
        idx.search(q, k=10, mode=mode)  # warm-up
    out = []
    for q in queries:
        runs = []
        for _ in range(repeat):
            t = time.perf_counter()
            idx.search(q, k=10, mode=mode)
            runs.append((time.perf_counter() - t) * 1000)
        out.append(statistics.median(runs))
    return out


def _changed(report: dict[str, Any]) -> str:
    f = report.get("files", {})
    if not isinstance(f, dict):
        return "?"
    return "+{added} ~{modified} -{deleted}".format(
        **{k: f.get(k, 0) for k in ("added", "modified", "deleted")}
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Measure everything; return the JSON summary."""
    from ragraf import Index

    source = args.corpus.resolve() if args.corpus else corpora.DATA_DIR / "speed"
    if not args.corpus and not corpora.is_ready("speed"):
        print("laying out the speed corpus (python benchmarks/corpora.py speed) ...", file=sys.stderr)
        corpora.prepare_speed()
    work = Path(tempfile.mkdtemp(prefix="ragraf-speed-", dir=args.tmp))
    root, home, cache = work / "corpus", work / "home", work / "cache"
    figures: list[Figure] = []
    notes: list[str] = []
    log = (lambda s: None) if args.json else (lambda s: print(s, file=sys.stderr, flush=True))
    saved_env = dict(os.environ)
    try:
        log(f"copying {source} -> {root}")
        shutil.copytree(source, root, symlinks=True, ignore=shutil.ignore_patterns(".ragraf"))
        os.environ["RAGRAF_CACHE_DIR"] = str(cache)  # never touch the machine's embedding cache
        os.environ["GIT_CEILING_DIRECTORIES"] = str(work)  # the copy is a plain folder, whatever TMPDIR is in
        # Compiled bytecode kept, as an installed ragraf has it (cli_cpu.py says why).
        cli_env = {**os.environ, "RAGRAF_HOME": str(home), "RAGRAF_EMBEDDER": "none",
                   "PYTHONPYCACHEPREFIX": str(work / "pycache")}  # fmt: skip
        cli_env.pop("PYTHONDONTWRITEBYTECODE", None)

        idx = Index.open(root, embedder="none", home=str(home))
        try:
            log("cold lexical index ...")
            cpu0, own0 = cpu_now(), own_cpu_now()
            wall, rep = timed(lambda: idx.index(full=True, quiet=True))
            lexical_wall, lexical_cpu, main_cpu = wall, cpu_now() - cpu0, own_cpu_now() - own0
            rep = rep.to_dict()
            n_files, chunks = files_total(rep), rep.get("chunks")
            figures.append(
                Figure(
                    "cold_files_per_s",
                    "cold index, lexical (library)",
                    n_files / wall,
                    "files/s",
                    "cold_files_per_s",
                )
            )
            figures.append(Figure("cold_s", f"  {n_files} files, {_count(chunks)} chunks", wall, "s"))
            figures.append(Figure("cold_cpu_s", "  CPU (process and workers)", lexical_cpu, "s"))
            figures.append(Figure("cold_main_cpu_s", "  of which the main process", main_cpu, "s"))
            figures.append(
                Figure(
                    "cold_files_per_cpu_s",
                    "  per CPU-second",
                    n_files / lexical_cpu,
                    "files/cpu-s",
                    "cold_files_per_cpu_s",
                )
            )
            store = idx.store()
            current = store.current_revision()
            indexed = sorted(store.manifest(current.rev_no)) if current else []
            parsed, floor_cpu = parse_floor(root, indexed)
            figures.append(
                Figure(
                    "parse_floor_cpu_s", f"  floor: read + tree-sitter parse ({parsed} files)", floor_cpu, "s"
                )
            )
            figures.append(
                Figure("cold_vs_parse_floor", "  cold CPU against the floor", lexical_cpu / floor_cpu, "x")
            )
            if args.cold_only:
                return _summary(source, args, figures, notes)
            if args.embedder == "static":
                n, swall, scpu = static_throughput(idx)
                figures.append(
                    Figure("static_chunks_per_s", f"static embedding, {n} chunks", n / swall, "chunks/s")
                )
                figures.append(Figure("static_chunks_per_cpu_s", "  per CPU-second", n / scpu, "chunks/s"))

            log("no-change re-index ...")
            lib = [timed(lambda: idx.index(quiet=True))[0] for _ in range(args.repeat)]
            figures.append(
                Figure(
                    "nochange_lib_s",
                    "no-change re-index (library)",
                    statistics.median(lib),
                    "s",
                    "nochange_s",
                )
            )
            cli = [cli_index(root, cli_env) for _ in range(args.repeat)]
            figures.append(
                Figure(
                    "nochange_cli_s",
                    "no-change re-index (CLI, end to end)",
                    statistics.median(w for w, _ in cli),
                    "s",
                    "nochange_s",
                )
            )
            if any(_changed(r) != "+0 ~0 -0" for _, r in cli):
                notes.append(f"no-change CLI runs reported changes: {[_changed(r) for _, r in cli]}")

            target = pick_file(root)
            rel = target.relative_to(root).as_posix()
            log(f"one-file change re-index (editing {rel}) ...")
            lib, cli_walls = [], []
            for i in range(args.repeat):
                edit(target, 2 * i)
                w, r = timed(lambda: idx.index(quiet=True))
                lib.append(w)
                if _changed(r.to_dict()) != "+0 ~1 -0":
                    notes.append(f"library one-file run {i} reported {_changed(r.to_dict())}")
                edit(target, 2 * i + 1)
                w, r = cli_index(root, cli_env)
                cli_walls.append(w)
                if _changed(r) != "+0 ~1 -0":
                    notes.append(f"CLI one-file run {i} reported {_changed(r)}")
            figures.append(
                Figure(
                    "onefile_lib_s",
                    "one-file change re-index (library)",
                    statistics.median(lib),
                    "s",
                    "onefile_s",
                )
            )
            figures.append(
                Figure(
                    "onefile_cli_s",
                    "one-file change re-index (CLI, end to end)",
                    statistics.median(cli_walls),
                    "s",
                    "onefile_s",
                )
            )

            nl, ident = load_queries(args.queries)
            log(f"lexical search over {len(nl) + len(ident)} queries ...")
            idx.close()
            idx = Index.open(root, embedder="none", home=str(home))  # a reader, as a fresh agent would have
            if hasattr(idx, "status"):  # every read op starts with the freshness guard: show its share
                # The first read of a process stats every file (what a one-shot command pays); from
                # the second on, a long-running process watches the folders and stats only on change.
                first = timed(idx.status)[0] * 1000
                warm = [timed(idx.status)[0] * 1000 for _ in range(max(20, args.repeat))][1:]
                figures.append(
                    Figure("status_first_ms", "status, first read of a process (stat pass)", first, "ms")
                )
                figures.append(
                    Figure("status_ms", "status, later reads (watched; p50)", statistics.median(warm), "ms")
                )
            lat_nl = search_latencies(idx, nl, "lexical", args.repeat)
            lat_id = search_latencies(idx, ident, "lexical", args.repeat)
            lat = lat_nl + lat_id
            figures += [
                Figure(
                    "search_p50_ms",
                    f"lexical search p50 ({len(lat)} queries, k=10)",
                    metric.percentile(lat, 50),
                    "ms",
                    "search_p50_ms",
                ),
                Figure(
                    "search_p95_ms", "lexical search p95", metric.percentile(lat, 95), "ms", "search_p95_ms"
                ),
                Figure(
                    "search_nl_p50_ms",
                    f"  natural language p50 / p95 ({len(lat_nl)})",
                    metric.percentile(lat_nl, 50),
                    "ms",
                ),
                Figure("search_nl_p95_ms", "", metric.percentile(lat_nl, 95), "ms"),
                Figure(
                    "search_ident_p50_ms",
                    f"  identifiers p50 / p95 ({len(lat_id)})",
                    metric.percentile(lat_id, 50),
                    "ms",
                ),
                Figure("search_ident_p95_ms", "", metric.percentile(lat_id, 95), "ms"),
                Figure("search_max_ms", "  slowest query", max(lat) if lat else 0.0, "ms"),
            ]
        finally:
            idx.close()

        if args.embedder and args.embedder != "none":
            ehome = work / f"home-{args.embedder}"
            log(f"cold index with embedder {args.embedder} (empty embedding cache) ...")
            more = {"embed_max_chunks": args.transformer_chunks} if args.transformer_chunks else {}
            eidx = Index.open(root, embedder=args.embedder, home=str(ehome), **more)
            try:
                cpu0 = cpu_now()
                wall, rep = timed(lambda: eidx.index(full=True, quiet=True))
                embed_cpu = cpu_now() - cpu0
                rep = rep.to_dict()
                figures.append(
                    Figure(
                        "cold_embed_files_per_s",
                        f"cold index, embedder {args.embedder}",
                        files_total(rep) / wall,
                        "files/s",
                    )
                )
                figures.append(Figure("cold_embed_s", f"  {_count(rep.get('chunks'))} chunks", wall, "s"))
                figures.append(Figure("cold_embed_cpu_s", "  CPU (process and workers)", embed_cpu, "s"))
                # Every chunk has a vector when this run ends with embedder = static, or with two
                # tiers and --transformer-chunks 1 (the static tier complete, the transformer begun).
                figures.append(
                    Figure(
                        "semantic_vs_lexical",
                        "  against the lexical cold index (wall)",
                        wall / lexical_wall,
                        "x",
                    )
                )
                figures.append(
                    Figure(
                        "semantic_vs_lexical_cpu",
                        "  against the lexical cold index (CPU)",
                        embed_cpu / lexical_cpu,
                        "x",
                    )
                )
                covered = eidx.search("settings", k=1).capability
                notes.append(
                    f"after the {args.embedder} run: tiers {covered.tiers}, coverage {covered.semantic_coverage}"
                )
                lat = search_latencies(eidx, [*nl, *ident], "hybrid", args.repeat)
                figures.append(Figure("hybrid_p50_ms", "hybrid search p50", metric.percentile(lat, 50), "ms"))
                figures.append(Figure("hybrid_p95_ms", "hybrid search p95", metric.percentile(lat, 95), "ms"))
            finally:
                eidx.close()
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
        if args.keep:
            print(f"kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    return _summary(source, args, figures, notes)


def _summary(
    source: Path, args: argparse.Namespace, figures: list[Figure], notes: list[str]
) -> dict[str, Any]:
    return {
        "corpus": str(source),
        "cpus": os.cpu_count(),
        "repeat": args.repeat,
        "loadavg": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
        "figures": [f.to_dict() for f in figures],
        "notes": notes,
        "_figures": figures,
    }


def _count(value: object) -> object:
    """A chunk count from an IndexReport field."""
    if isinstance(value, dict):
        return value.get("total", value)
    return value


def render(summary: dict[str, Any], out: Any = sys.stdout) -> None:
    """Print the table with targets next to figures."""
    figures: list[Figure] = summary["_figures"]
    load = summary.get("loadavg")
    print(
        f"ragraf speed on {summary['corpus']} ({summary['cpus']} CPUs, median of {summary['repeat']}"
        + (f", load average {load[0]:.1f} at the end" if load else "")
        + ")",
        file=out,
    )
    print(f"  {'measure':<46} {'figure':>18}  {'target':<10} {'':4}", file=out)
    i = 0
    while i < len(figures):
        f = figures[i]
        nxt = figures[i + 1] if i + 1 < len(figures) else None
        if nxt is not None and nxt.label == "":  # a p50 / p95 pair on one line
            fig = f"{f.value:.1f} / {nxt.value:.1f} {f.unit}"
            i += 2
        else:
            fig = (
                f"{f.value:.0f} {f.unit}"
                if f.unit == "files/s"
                else (f"{f.value:.3f} {f.unit}" if f.unit == "s" else f"{f.value:.1f} {f.unit}")
            )
            i += 1
        tgt = f"{TARGETS[f.target][0]} {TARGETS[f.target][1]:g}" if f.target else ""
        print(f"  {f.label:<46} {fig:>18}  {tgt:<10} {f.verdict():4}", file=out)
    for n in summary["notes"]:
        print(f"  note: {n}", file=out)


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--corpus", type=Path, help="a folder to measure instead of the speed corpus (it is copied)"
    )
    ap.add_argument("--queries", type=Path, help="queries, one per line (default: built-in questions)")
    ap.add_argument(
        "--embedder", default=None, help="also measure a cold index with this embedder (e.g. local)"
    )
    ap.add_argument(
        "--transformer-chunks",
        type=int,
        default=0,
        help="with --embedder local (two tiers): embed_max_chunks for that run (1: time until every chunk "
        "has a vector, the static tier's, with the transformer tier begun)",
    )
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement (median kept)")
    ap.add_argument(
        "--cold-only", action="store_true", help="measure the cold lexical index and its floor only"
    )
    ap.add_argument("--tmp", default=None, help="where the temporary copy goes (default: the system temp)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary copy")
    ap.add_argument("--json", action="store_true", help="print the JSON summary instead of the table")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    summary = run(args)
    if args.json:
        print(json.dumps({k: v for k, v in summary.items() if not k.startswith("_")}, indent=2))
    else:
        render(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
