"""Code facts on the shared bench and at scale: `def` puts a gold file first on symbol queries,
and def / refs / outline latency on a large corpus.

    python benchmarks/facts_quality.py                    # the six bench corpora (symbol queries)
    python benchmarks/facts_quality.py --latency DIR      # p50/p95 of def/refs/outline on an indexed DIR
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import quality  # noqa: E402

from ragraf import Index  # noqa: E402


def gold_first(embedder: str) -> None:
    """Share of symbol queries whose first `def` result is a gold file."""
    hits = total = 0
    for corpus in quality.bench_corpora(None, quality.corpora.SHARED_BENCH):
        # A home of its own: quality.py rebuilds its homes from scratch, which must not race this run.
        home = quality.HOMES_DIR / f"facts-{corpus.name}-{embedder}"
        idx = Index.open(corpus.root, home=home, embedder=embedder)
        idx.index(quiet=True, lexical_only=True)
        for task in corpus.tasks:
            if task.category != "symbol":
                continue
            gold = {t.path for t in task.relevant + task.secondary}
            env = idx.find_symbol(task.query.strip())
            found = [(quality.annotation_path(r["path"], corpus.prefix), r) for r in env.results]
            ok = bool(found) and _is_gold(found[0][0], gold)
            hits += ok
            total += 1
            print(
                f"{'ok ' if ok else 'MISS'} {corpus.name:<9} {task.query!r:<28} -> {found[0][0] if found else None}"
            )
            if not ok:
                # Why: what ranked first, and where the gold files stand, if anywhere.
                print(f"     gold: {', '.join(sorted(gold))}  {' '.join(env.notes)}")
                for rank, (path, r) in enumerate(found[:5], 1):
                    mark = "*" if _is_gold(path, gold) else " "
                    print(f"     {mark}{rank}. {r['kind']:<9} {r['name']} {path}:{r['line']}")
        idx.close()
    print(
        f"\ndef puts a gold file first for {hits}/{total} symbol queries ({hits / total:.1%}; target >= 95%)"
    )


def _is_gold(path: str, gold: set[str]) -> bool:
    return any(path == g or path.endswith("/" + g) for g in gold)


def latency(root: Path, samples: int = 200) -> None:
    """p50/p95 of def, refs and outline over names and files drawn from the index."""
    idx = Index.open(root)
    idx.index(quiet=True, lexical_only=True)
    store = idx.store()
    rev = store.current_revision()
    assert rev is not None
    rng = random.Random(7)
    paths = sorted(store.manifest(rev.rev_no))
    names = [r[0] for r in store.db.execute("SELECT DISTINCT name FROM facts WHERE kind = 'def' LIMIT 5000")]  # type: ignore[attr-defined]
    for label, op in (
        ("def", lambda: idx.find_symbol(rng.choice(names))),
        ("refs", lambda: idx.find_references(rng.choice(names))),
        ("refs --calls", lambda: idx.find_references(rng.choice(names), calls=True)),
        ("outline", lambda: idx.outline(rng.choice(paths))),
    ):
        times = []
        for _ in range(samples):
            t0 = time.perf_counter()
            op()
            times.append((time.perf_counter() - t0) * 1000)
        times.sort()
        print(
            f"{label:<14} p50 {statistics.median(times):7.1f} ms   p95 {times[int(len(times) * 0.95)]:7.1f} ms"
            f"   ({len(paths)} files; guard included)"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--latency", type=Path, help="an indexed (or indexable) folder to time def/refs/outline on"
    )
    ap.add_argument("--embedder", default="none")
    args = ap.parse_args()
    if args.latency:
        latency(args.latency)
    else:
        gold_first(args.embedder)


if __name__ == "__main__":
    main()
