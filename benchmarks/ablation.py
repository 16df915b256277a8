"""Ranking ablation on the shared bench: NDCG@10 with each ranking rule switched off, one at a time.

    python benchmarks/ablation.py --mode lexical --embedder none
    python benchmarks/ablation.py --mode hybrid

Uses existing indexes under benchmarks/data/.homes (run quality.py once first).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import quality  # noqa: E402
from metric import score_query  # noqa: E402

from ragraf import Index  # noqa: E402
from ragraf.search.rank import OFF_BY_DEFAULT, RULES  # noqa: E402


def run(
    mode: str, embedder: str | None, variants: dict[str, dict[str, bool] | None]
) -> dict[str, dict[str, float]]:
    """NDCG@10 per variant, per category and overall."""
    scores: dict[str, dict[str, list[float]]] = {v: {} for v in variants}
    for corpus in quality.bench_corpora(None, quality.corpora.SHARED_BENCH):
        home = quality.HOMES_DIR / f"{corpus.name}-{embedder or 'default'}"
        overrides = {"embedder": embedder} if embedder else {}
        idx = Index.open(corpus.root, home=home, **overrides)
        for task in corpus.tasks:
            for name, rules in variants.items():
                env = idx.search(task.query, k=10, mode=mode, rules=rules)
                chunks = [
                    quality.Chunk(quality.annotation_path(r.path, corpus.prefix), r.start_line, r.end_line)
                    for r in env.results
                ]
                s = score_query(chunks, task.relevant, task.secondary).ndcg10
                scores[name].setdefault(task.category, []).append(s)
                scores[name].setdefault("overall", []).append(s)
        idx.close()
    return {v: {c: sum(xs) / len(xs) for c, xs in cats.items()} for v, cats in scores.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mode", default="hybrid")
    ap.add_argument("--embedder", default=None)
    args = ap.parse_args()
    variants: dict[str, dict[str, bool] | None] = {"all rules": None, "no rules": {r: False for r in RULES}}
    variants.update({f"without {r}": {r: False} for r in RULES if r not in OFF_BY_DEFAULT})
    variants.update({f"with {r}": {r: True} for r in OFF_BY_DEFAULT})
    table = run(args.mode, args.embedder, variants)
    print(f"{'variant':<28} {'overall':>8} {'semantic':>9} {'architecture':>13} {'symbol':>7}")
    for name, row in table.items():
        print(
            f"{name:<28} {row['overall']:>8.3f} {row.get('semantic', 0):>9.3f} "
            f"{row.get('architecture', 0):>13.3f} {row.get('symbol', 0):>7.3f}"
        )


if __name__ == "__main__":
    main()
