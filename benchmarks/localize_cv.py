"""localize's fusion measured offline: each channel's ranks kept per task, fused again with other weights.

Lays out every task of `../shared/bench-issues` (or a tasks.jsonl in its format) in its own folder
with its own index home, asks `localize` in process once per task and keeps what each channel
ranked for every file (search/localize.py's `FileAnswer.channels`), plus candidate channels not in
the product (the files calling a definition the report names; whole-file BM25 of the title alone).
Then, without asking the index again: each channel left out (ablation), each candidate added, and a
grid search of the chosen parameters with leave-one-repository-out cross-validation: the weights are
fitted on six repositories and scored on the seventh, so the figure printed is one a rule fitted to
these tasks would reach on a repository it has not seen.

    python benchmarks/localize_cv.py --embedder static                  # ablations
    python benchmarks/localize_cv.py --embedder static --tune callers,K  # cross-validated tuning
    python benchmarks/localize_cv.py --embedder static --tune definition_gain
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import localize as bench  # noqa: E402

import ragraf.api.ops.localize as localize_op  # noqa: E402
from ragraf import Index  # noqa: E402
from ragraf.languages import is_vendored_path, kind_of  # noqa: E402
from ragraf.search import localize as channels  # noqa: E402
from ragraf.tokens import fts_match, query_terms  # noqa: E402

HERE = Path(__file__).resolve().parent
KS = (1, 3, 5, 10)
Record = dict[str, Any]  # one task: its gold files, each channel's ranks, each file's kind


def candidate_callers(store: Any, rev_no: int, report: Any) -> list[str]:
    """Files referencing a code name the report mentions, outside the few files defining it (the
    graph's callers of a named definition), a name used in fewer files weighing more."""
    score: dict[str, float] = {}
    for order, name in enumerate(report.names[: channels.MAX_NAMES]):
        bare = name.rsplit(".", 1)[-1]
        defining = {
            h.path
            for h in store.find_facts(rev_no, "def", name=bare, exact=True, limit=200)
            if h.kind not in ("heading", "variable", "field", "import")
        }
        if not defining or len(defining) > channels.MAX_DEFINING_FILES:
            continue
        users = {
            h.path for h in store.find_facts(rev_no, "ref", name=bare, exact=True, limit=5000)
        } - defining
        if not users or len(users) > 30:
            continue
        weight = 1.0 / math.log2(1 + len(users)) / (1 + 0.05 * order)
        for path in users:
            score[path] = score.get(path, 0.0) + weight
    return sorted(score, key=lambda p: (-score[p], p))


def candidate_title_files(store: Any, rev_no: int, report: Any) -> list[str]:
    """Whole-file BM25 of the title's words alone (a file's best three chunks at 1, 1/2, 1/4)."""
    terms = query_terms(report.title or "")
    if not terms:
        return []
    per_file: dict[str, list[float]] = {}
    for hit in store.lexical_search(fts_match(terms), rev_no, channels.FILE_POOL):
        per_file.setdefault(hit.path, []).append(hit.score)
    score = {
        p: sum(w * s for w, s in zip((1.0, 0.5, 0.25), sorted(v, reverse=True), strict=False))
        for p, v in per_file.items()
    }
    return sorted(score, key=lambda p: (-score[p], p))


CANDIDATES: dict[str, Callable[[Any, int, Any], list[str]]] = {
    "callers": candidate_callers,
    "title_files": candidate_title_files,
}


def capture(tasks: list[bench.Task], work: Path, embedder: str) -> list[Record]:
    """Each task's channel ranks, its tree laid out and indexed once (kept in `work` for the next run)."""
    kept: dict[str, Any] = {}
    real = channels.localize

    def keep_all(store: Any, rev_no: int, report: Any, k: int, **kw: Any) -> Any:
        outcome = real(store, rev_no, report, 100_000, **kw)
        kept["answers"] = outcome.files
        kept["candidates"] = {name: fn(store, rev_no, report) for name, fn in CANDIDATES.items()}
        return channels.LocalizeOutcome(outcome.files[:k], outcome.notes, outcome.missing_paths)

    # The operation reads localize from search/localize.py when it runs (or kept it when imported).
    targets = [m for m in (channels, localize_op) if getattr(m, "localize", None) is real]
    for module in targets:
        module.localize = keep_all  # type: ignore[attr-defined]
    records = []
    for n, task in enumerate(tasks, 1):
        saved = work / "records" / embedder / f"{task.instance_id}.json"
        if saved.exists():
            records.append(json.loads(saved.read_text()))
            continue
        tree = work / "trees" / task.instance_id
        if not tree.exists():
            laid = bench.lay_out(task, work / "layout")
            tree.parent.mkdir(parents=True, exist_ok=True)
            laid.rename(tree)
        idx = Index.open(tree, home=work / "homes" / f"{task.instance_id}-{embedder}", embedder=embedder)
        try:
            idx.index(quiet=True)
            shown = [r["path"] for r in idx.localize(task.text, k=10).to_dict()["results"]]
        finally:
            idx.close()
        ranks = {a.path: a.channels for a in kept["answers"]}
        for name, ranked in kept["candidates"].items():
            for path, rank in _code_apart(ranked).items():
                ranks.setdefault(path, {})[name] = rank
        record = {
            "id": task.instance_id, "repo": task.repo, "gold": task.gold, "shown": shown,
            "ranks": ranks, "files": {p: _file_traits(p) for p in ranks},
            "rarity": {a.path: a.rarity for a in kept["answers"] if a.rarity},
        }  # fmt: skip
        saved.parent.mkdir(parents=True, exist_ok=True)
        saved.write_text(json.dumps(record))
        records.append(record)
        print(f"[{n}/{len(tasks)}] {task.instance_id}", file=sys.stderr)
    for module in targets:
        module.localize = real  # type: ignore[attr-defined]
    return records


def _code_apart(ranked: list[str]) -> dict[str, int]:
    """A channel's ranks as localize counts them: code apart from tests, docs and config."""
    rank = {True: 0, False: 0}
    out = {}
    for path in dict.fromkeys(ranked):
        code = channels._is_code(path)
        out[path] = rank[code]
        rank[code] += 1
    return out


def _file_traits(path: str) -> dict[str, Any]:
    kind = kind_of(path)
    example = channels.is_example_path(path) or (kind == "code" and channels._in_docs(path))
    return {"kind": kind, "example": example, "vendored": is_vendored_path(path)}


def product_params() -> dict[str, float]:
    """The fusion as localize runs it: its weights, rank constant, and no candidate channel."""
    params = {f"w_{c}": w for c, w in channels.WEIGHTS.items()}
    params.update({f"w_{c}": 0.0 for c in CANDIDATES if c not in channels.WEIGHTS})
    params["K"] = channels.FUSE_K
    params["definition_gain"] = channels.DEFINITION_GAIN
    return params


def ranked_files(record: Record, params: dict[str, float]) -> list[str]:
    """The files in localize's order under `params` (search/localize.py's fusion, recomputed)."""
    score: dict[str, float] = {}
    for path, ranks in record["ranks"].items():
        s = sum(params.get(f"w_{c}", 0.0) / (params["K"] + r) for c, r in ranks.items())
        if s <= 0:
            continue
        traits = record["files"][path]
        factor = channels.KIND_FACTOR.get(traits["kind"], 1.0)
        if "path" in ranks or "traceback" in ranks:
            factor = max(factor, 0.8)
        if traits["example"]:
            factor *= channels.EXAMPLE_FACTOR
        if traits["vendored"] and "path" not in ranks:
            factor *= channels.VENDORED_FACTOR
        score[path] = s * factor
    ranked = sorted(score, key=lambda p: (-score[p], p))
    # search/localize.py's rerank_by_definitions over the fused head
    head, rarity = ranked[: channels.RERANK_DEPTH], record.get("rarity", {})
    best = max((rarity.get(p, 0.0) for p in head), default=0.0)
    if best <= 0 or not params.get("definition_gain"):
        return ranked
    gained = {p: score[p] * (1 + params["definition_gain"] * rarity.get(p, 0.0) / best) for p in head}
    return sorted(head, key=lambda p: (-gained[p], p)) + ranked[channels.RERANK_DEPTH :]


def accuracy(records: list[Record], rank: Callable[[Record], list[str]]) -> dict[int, float]:
    return {
        k: 100 * sum(any(p in r["gold"] for p in rank(r)[:k]) for r in records) / len(records) for k in KS
    }


def _objective(records: list[Record], params: dict[str, float]) -> float:
    a = accuracy(records, lambda r: ranked_files(r, params))
    return a[1] + 0.5 * (a[3] + a[5] + a[10])


GRID = {"K": [1.0, 2.0, 4.0, 8.0, 16.0], "definition_gain": [0.0, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.7]}
WEIGHT_GRID = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0]


def fit(records: list[Record], start: dict[str, float], keys: list[str]) -> dict[str, float]:
    """Coordinate ascent over the grid of each key, from localize's own parameters."""
    best, params = _objective(records, start), dict(start)
    for _ in range(3):
        improved = False
        for key in keys:
            for value in GRID.get(key, WEIGHT_GRID):
                trial = {**params, key: value}
                if (o := _objective(records, trial)) > best + 1e-9:
                    best, params, improved = o, trial, True
        if not improved:
            break
    return params


def cross_validated(records: list[Record], keys: list[str]) -> tuple[dict[int, float], dict[str, Any]]:
    """Acc@k with each repository ranked by parameters fitted on the others, and those parameters."""
    start = product_params()
    ranked: dict[str, list[str]] = {}
    chosen = {}
    for repo in sorted({r["repo"] for r in records}):
        params = fit([r for r in records if r["repo"] != repo], start, keys)
        chosen[repo] = {k: v for k, v in params.items() if v != start[k]}
        for r in records:
            if r["repo"] == repo:
                ranked[r["id"]] = ranked_files(r, params)
    return accuracy(records, lambda r: ranked[r["id"]]), chosen


def _row(label: str, a: dict[int, float]) -> str:
    return f"  {label:34}" + "".join(f"{a[k]:8.1f}" for k in KS)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=Path, default=bench.SHARED / "tasks.jsonl")
    ap.add_argument("--repos", default="", help="comma-separated repository names (default: all)")
    ap.add_argument("--embedder", default="static", help="static (default, fast), local, none, …")
    ap.add_argument("--work", type=Path, default=HERE / "data" / "bench-issues-cv")
    ap.add_argument("--tune", default="", help="parameters to fit, cross-validated: K, a channel's name")
    args = ap.parse_args(argv)
    tasks = bench.load_tasks(args.tasks, {r for r in args.repos.split(",") if r} or None)
    if not tasks:
        ap.error("no tasks")
    records = capture(tasks, args.work.resolve(), args.embedder)
    product = product_params()
    drift = [r["id"] for r in records if ranked_files(r, product)[:10] != r["shown"]]
    if drift:  # the offline fusion must be localize's own, or nothing below means anything
        print(f"offline fusion differs from localize on {len(drift)} tasks: {drift[:5]}", file=sys.stderr)
        return 1
    print(
        f"{len(records)} tasks ({args.embedder}); file accuracy (%)  "
        + "".join(f"{'@' + str(k):>8}" for k in KS)
    )
    print(_row("localize", accuracy(records, lambda r: ranked_files(r, product))))
    unranked = {**product, "definition_gain": 0.0}
    print(_row("without the definitions' rerank", accuracy(records, lambda r: ranked_files(r, unranked))))
    for c in channels.WEIGHTS:
        params = {**product, f"w_{c}": 0.0}
        print(_row(f"without {c}", accuracy(records, lambda r, p=params: ranked_files(r, p))))  # type: ignore[misc]
    for c in CANDIDATES:
        for w in (0.5, 1.0):
            params = {**product, f"w_{c}": w}
            print(_row(f"with {c} at {w}", accuracy(records, lambda r, p=params: ranked_files(r, p))))  # type: ignore[misc]
    keys = [k if k in GRID else f"w_{k}" for k in args.tune.split(",") if k]
    if keys:
        unknown = [k for k in keys if k not in product]
        if unknown:
            ap.error(f"unknown parameters: {', '.join(unknown)}")
        fitted = fit(records, product, keys)
        print(_row("fitted on all tasks (optimistic)", accuracy(records, lambda r: ranked_files(r, fitted))))
        cv, chosen = cross_validated(records, keys)
        print(_row("leave one repository out", cv))
        for repo, params in chosen.items():
            print(f"    fitted without {repo}: {params or 'unchanged'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
