"""Warm search latency of pasted bug reports (about 4 KB: a traceback, file paths, a code excerpt)
against short queries, in one process on one bench corpus (the largest, zod, by default).

Each bug report is a made-up traceback naming a file and a function of the corpus, followed by 4 KB
of that file. Issue 4's targets: short queries p50 <= 20 ms, p95 <= 60 ms; a 4 KB bug report
<= 150 ms p50. A pasted report is searched as `localize` ranks it; `localize` itself is timed too
(issue 23's target on the speed corpus: p50 <= 300 ms).

    python benchmarks/long_query.py                  # needs python benchmarks/corpora.py
    python benchmarks/long_query.py --repo pydantic --rounds 10
    python benchmarks/long_query.py --corpus benchmarks/data/speed
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

try:
    from benchmarks import corpora, quality
except ModuleNotFoundError:  # run as a script
    import corpora  # type: ignore[no-redef]
    import quality  # type: ignore[no-redef]

from ragraf.languages import is_test_path

SHORT = ("how does parsing return a result", "error formatting", "schema", "where are checks run")


def bug_reports(files: list[tuple[str, str]], size: int = 4000) -> list[str]:
    """A pasted bug report per (path, text): a traceback through that file, then its text."""
    out = []
    for path, text in files:
        body = text[len(text) // 3 :].encode()[:size].decode("utf-8", "ignore")
        out.append(
            "After upgrading, parsing fails with:\n\n"
            "TypeError: Cannot read properties of undefined (reading 'shape')\n"
            f"    at parse ({path}:120:15)\n    at run ({path}:88:9)\n\n"
            f"The code around it in {path}:\n\n{body}\n\nWhat changed?"
        )
    return out


def timed(
    idx: quality.IndexLike, queries: list[str] | tuple[str, ...], rounds: int, op: str = "search"
) -> list[float]:
    call = getattr(idx, op)
    for q in queries:  # warm-up: the first search of a process loads what it needs
        call(q, k=10)
    times = []
    for _ in range(rounds):
        for q in queries:
            t = time.perf_counter()
            call(q, k=10)
            times.append((time.perf_counter() - t) * 1000)
    return times


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", default="zod", help="a bench corpus (default: zod, the largest)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument(
        "--embedder", default=None, help="local (default), static (fast to index a big corpus), none"
    )
    ap.add_argument(
        "--corpus", type=Path, help="any folder instead of a bench corpus (e.g. benchmarks/data/speed)"
    )
    args = ap.parse_args(argv)
    os.environ["GIT_CEILING_DIRECTORIES"] = str(corpora.DATA_DIR)
    if args.corpus:
        root = args.corpus.resolve()
        corpus = quality.Corpus(root.name, root, "", ())
    else:
        corpus = quality.bench_corpora([args.repo], corpora.SHARED_BENCH)[0]
    sources = sorted(
        (
            p
            for p in corpus.root.rglob("*")
            if p.suffix in (".ts", ".py", ".js")
            and p.stat().st_size > 20_000
            and not is_test_path(p.relative_to(corpus.root).as_posix())
        ),
        key=lambda p: p.as_posix(),
    )[:3]
    files = [(p.relative_to(corpus.root).as_posix(), p.read_text(encoding="utf-8")) for p in sources]
    idx = quality.open_index(corpus.root, corpus.name, args.embedder)
    try:
        idx.index(quiet=True)
        reports = bug_reports(files)
        short, long = timed(idx, SHORT, args.rounds), timed(idx, reports, args.rounds)
        located = timed(idx, reports, args.rounds, op="localize")
    finally:
        idx.close()
    size = statistics.mean(len(r.encode()) for r in reports) / 1024
    print(f"{corpus.name}: warm hybrid search, {args.rounds} rounds")
    rows = (
        (f"short ({len(SHORT)} queries)", short),
        (f"bug report ({size:.1f} KB)", long),
        (f"localize ({size:.1f} KB)", located),
    )
    for label, times in rows:
        print(
            f"  {label:<24} p50 {statistics.median(times):6.1f} ms   "
            f"p95 {quality.percentile(times, 95):6.1f} ms"
        )
    print(f"  bug report / short p50: {statistics.median(long) / statistics.median(short):.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
