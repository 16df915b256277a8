"""What matching a query against a revision's paths costs, cold (a fresh process: a CLI search) and
warm, for the path index (PathIndex: built, then matched) and the joined paths (JoinedPaths: what
a process's first search uses), on the speed corpus's paths and on ten copies of them.

The paths are listed as the indexer would keep them (no index needed). Each cold figure is the
median of fresh subprocesses, each timing one query's build + match after imports; warm is the
median match over the queries in one process, after one round.

    python benchmarks/path_match.py            # needs python benchmarks/corpora.py speed
    python benchmarks/path_match.py --runs 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
CORPUS = ROOT / "data" / "speed"
COPIES = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet")
# Prose as long as a pasted bug report, from the corpus itself.
LONG_SOURCE = CORPUS / "django-5.2.8" / "docs" / "releases" / "5.1.txt"


def corpus_paths() -> list[str]:
    """The speed corpus's indexable paths, as discovery and extraction keep them."""
    from ragraf.config import Settings
    from ragraf.corpus.discover import discover
    from ragraf.corpus.extract import Unindexable, extract

    config = Settings(CORPUS)
    kept = []
    for f in discover(CORPUS, config.max_file_bytes).files:
        try:
            extract(CORPUS / f.path, f.path, config.max_line_chars)
        except (Unindexable, OSError):
            continue
        kept.append(f.path)
    return kept


def queries() -> dict[str, list[str]]:
    """Short questions, identifiers, and 4.5 KB bug-report-sized prose."""
    try:
        from benchmarks.speed import IDENT_QUERIES, NL_QUERIES
    except ModuleNotFoundError:
        from speed import IDENT_QUERIES, NL_QUERIES  # type: ignore[no-redef]
    prose = LONG_SOURCE.read_text()
    return {
        "question": list(NL_QUERIES),
        "identifier": list(IDENT_QUERIES),
        "bug report": [prose[i : i + 4500] for i in range(0, 13_500, 4500)],
    }


def one_cold(kind: str, paths_file: str, query: str) -> float:
    """In this (fresh) process: ms to build `kind` over the paths and match one query."""
    from ragraf.search.paths import JoinedPaths, PathIndex
    from ragraf.search.rank import QueryInfo

    paths = Path(paths_file).read_text().split("\n")
    stems = QueryInfo.of(query).path_words
    start = time.perf_counter()
    index = PathIndex.build(set(paths)) if kind == "index" else JoinedPaths.build(paths)
    index.match(stems, 20)
    return (time.perf_counter() - start) * 1000


def cold(kind: str, paths_file: Path, qs: list[str], runs: int) -> float:
    times = []
    for q in qs[:runs]:
        out = subprocess.run(
            [sys.executable, __file__, "--one", kind, str(paths_file), q],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        times.append(float(out.stdout))
    return statistics.median(times)


def warm(kind: str, paths: list[str], qs: list[str]) -> float:
    from ragraf.search.paths import JoinedPaths, PathIndex
    from ragraf.search.rank import QueryInfo

    index = PathIndex.build(set(paths)) if kind == "index" else JoinedPaths.build(paths)
    stems = [QueryInfo.of(q).path_words for q in qs]
    for s in stems:
        index.match(s, 20)
    times = []
    for s in stems:
        start = time.perf_counter()
        index.match(s, 20)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="fresh processes per cold figure")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--one", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(one_cold(*args.one))
        return
    base = corpus_paths()
    trees = {"speed": base, "speed x10": [f"{c}/{p}" for c in COPIES for p in base]}
    rows = []
    tmp = ROOT / "data" / ".path_match"
    tmp.mkdir(exist_ok=True)
    for name, paths in trees.items():
        paths_file = tmp / f"{name.replace(' ', '_')}.txt"
        paths_file.write_text("\n".join(paths))
        for label, qs in queries().items():
            row = {"tree": name, "paths": len(paths), "queries": label}
            for kind in ("index", "joined"):
                row[f"{kind}_cold_ms"] = round(cold(kind, paths_file, qs, args.runs), 1)
                row[f"{kind}_warm_ms"] = round(warm(kind, paths, qs), 2)
            rows.append(row)
            if not args.json:
                print(
                    f"{name:10} {len(paths):7,} paths  {label:10}  cold: index {row['index_cold_ms']:7.1f} ms"
                    f"  joined {row['joined_cold_ms']:6.1f} ms   warm: index {row['index_warm_ms']:6.2f} ms"
                    f"  joined {row['joined_warm_ms']:6.2f} ms",
                    flush=True,
                )
    if args.json:
        print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
