"""Code facts on the shared bench and at scale: `def` puts a gold file first on symbol queries,
def / refs / outline latency on a large corpus, and what facts add to a cold index.

    python benchmarks/facts_quality.py                     # the six bench corpora (symbol queries)
    python benchmarks/facts_quality.py --annotations my.json --corpus ~/src/repo  # your own
    python benchmarks/facts_quality.py --latency DIR       # p50/p95 of def/refs/outline on DIR
    python benchmarks/facts_quality.py --index-cost DIR    # cold lexical index of DIR, with and without facts
    python benchmarks/facts_quality.py --half-written DIR  # files cut mid-line: definitions kept
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import quality  # noqa: E402
import speed  # noqa: E402

from ragraf import Index  # noqa: E402
from ragraf.facts.model import unsupported  # noqa: E402

# The bench corpora sit in a gitignored folder of this repository: without a ceiling, ragraf's
# `git ls-files` would see the parent repository. (Set at import: spawned index workers see it too.)
os.environ["GIT_CEILING_DIRECTORIES"] = os.pathsep.join(
    [c for c in os.environ.get("GIT_CEILING_DIRECTORIES", "").split(os.pathsep) if c]
    + [str(quality.corpora.DATA_DIR)]
)
_NO_FACTS = "RAGRAF_BENCH_NO_FACTS"
if os.environ.get(_NO_FACTS):
    # The index run as it would be without facts: every language "unsupported", so the chunker
    # walks the tree for its own symbols. Done at import so that spawned index workers, which
    # import this script as their main module, run without facts too.
    from ragraf.index import workers

    workers.extract_facts = lambda text, language, tree=None: unsupported(language)  # type: ignore[assignment]


def gold_first(embedder: str, corpora: list[quality.Corpus], homes: Path = quality.HOMES_DIR) -> int:
    """Share of symbol queries whose first `def` result is a gold file; returns how many."""
    hits = total = 0
    for corpus in corpora:
        # A home of its own: quality.py rebuilds its homes from scratch, which must not race this run.
        home = homes / f"facts-{corpus.name}-{embedder}"
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
    share = f"{hits / total:.1%}" if total else "no symbol queries"
    print(f"\ndef puts a gold file first for {hits}/{total} symbol queries ({share}; target >= 95%)")
    return hits


def _is_gold(path: str, gold: set[str]) -> bool:
    return any(path == g or path.endswith("/" + g) for g in gold)


def latency(root: Path, samples: int = 200) -> None:
    """p50/p95 of def, refs and outline over names and files drawn from the index."""
    home = quality.HOMES_DIR / f"facts-latency-{root.resolve().name}"
    idx = Index.open(root, home=home, embedder="none")
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


def index_cost(root: Path, rounds: int = 2) -> None:
    """Cold lexical index of root with facts and without, alternating, each in a fresh process.

    Wall time on a shared machine swings with its load, so CPU time (the index process and its
    workers) is reported beside it, and is the steadier of the two.
    """
    best: dict[str, tuple[float, float]] = {}
    files = 0
    work = Path(tempfile.mkdtemp(prefix="ragraf-facts-cost-"))
    try:
        for round_no in range(rounds):
            for mode in ("with facts", "without facts"):
                env = {**os.environ, "RAGRAF_EMBEDDER": "none"}
                env.pop(_NO_FACTS, None)
                if mode == "without facts":
                    env[_NO_FACTS] = "1"
                home = work / f"home-{round_no}-{mode.replace(' ', '-')}"
                out = subprocess.run(
                    [sys.executable, __file__, "--cold-index", str(root), "--home", str(home)],
                    env=env, check=True, capture_output=True, text=True,
                ).stdout  # fmt: skip
                wall, cpu, files = json.loads(out.strip().splitlines()[-1])
                walls, cpus = best.get(mode, (wall, cpu))
                best[mode] = (min(walls, wall), min(cpus, cpu))
                print(f"  round {round_no + 1}: {mode:<14} {wall:6.1f} s wall {cpu:6.1f} s CPU", flush=True)
                shutil.rmtree(home, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"cold lexical index of {files} files, best of {rounds} (target: facts add <= 30%)")
    for i, unit in enumerate(("wall", "CPU")):
        with_facts, without = best["with facts"][i], best["without facts"][i]
        print(
            f"  {unit:<4} {with_facts:6.1f} s with facts, {without:6.1f} s without"
            f" ({100 * (with_facts / without - 1):+.0f}%)"
        )


def _cold_index(root: Path, home: Path) -> None:
    """One cold lexical index; prints [wall s, CPU s, files] as JSON (the child of index_cost)."""
    idx = Index.open(root, home=home, embedder="none")
    cpu_before = _cpu_seconds()
    started = time.perf_counter()
    report = idx.index(full=True, quiet=True, lexical_only=True).to_dict()
    wall = time.perf_counter() - started
    cpu = _cpu_seconds() - cpu_before
    idx.close()
    print(json.dumps([wall, cpu, speed.files_total(report)]))


def _cpu_seconds() -> float:
    """User + system time of this process and its finished children (the index workers)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def half_written(root: Path, limit: int = 600) -> None:
    """Cut one line of real files in half, as an editor mid-keystroke leaves it: what share of the
    file's other definitions (name, line and container) still come out, with the re-parse of what
    the error swallowed and without it."""
    from ragraf.facts import extract
    from ragraf.languages import language_of

    rng = random.Random(1)
    suffixes = {".py", ".ts", ".tsx", ".js", ".go", ".rs", ".java", ".rb", ".php", ".kt", ".cs", ".swift"}
    files = sorted(p for p in root.rglob("*") if p.suffix in suffixes and p.is_file())
    rng.shuffle(files)
    cases: list[tuple[str, str, set[tuple[str, int, str | None]]]] = []
    for path in files[:limit]:
        try:
            text = path.read_text()
        except (OSError, UnicodeDecodeError):
            continue
        language = language_of(str(path))
        full = extract.extract_facts(text, language)
        if not full.supported or full.partial or len(full.definitions) < 5:
            continue
        lines = text.split("\n")
        i = rng.randrange(len(lines) // 4, len(lines) // 2 + 1)
        while i < len(lines) and len(lines[i].strip()) < 8:
            i += 1
        if i == len(lines):
            continue
        lines[i] = lines[i][: len(lines[i]) // 2]
        want = {(d.name, d.line, d.container) for d in full.definitions if d.line != i + 1}
        cases.append(("\n".join(lines), language, want))
    salvaged = extract.salvaged
    for label in ("without re-parse", "with re-parse"):
        if label == "without re-parse":
            extract.salvaged = lambda facts, *_: facts  # type: ignore[assignment]
        kept: dict[str, list[int]] = {}
        cpu = time.process_time()
        for text, language, want in cases:
            got = extract.extract_facts(text, language)
            row = kept.setdefault(language, [0, 0, 0])
            row[0] += len(want & {(d.name, d.line, d.container) for d in got.definitions})
            row[1] += len(want)
            row[2] += 1
        cpu = time.process_time() - cpu
        extract.salvaged = salvaged  # type: ignore[assignment]
        print(f"{label} ({cpu:.2f} s CPU):")
        for language, (hit, total, n) in sorted(kept.items()):
            print(f"  {language:<11} {n:4} files  {hit}/{total} definitions kept ({hit / total:.1%})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--latency", type=Path, help="an indexed (or indexable) folder to time def/refs/outline on"
    )
    ap.add_argument("--index-cost", type=Path, help="a folder to index cold with and without facts")
    ap.add_argument("--rounds", type=int, default=2, help="--index-cost: runs of each, the best counts")
    ap.add_argument("--half-written", type=Path, help="a folder whose files are cut mid-line, one each")
    ap.add_argument("--cold-index", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--home", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--annotations", type=Path, help="an annotation file in the bench format")
    ap.add_argument("--corpus", type=Path, help="the repository the annotation paths are relative to")
    ap.add_argument("--index-root", default="", help="with --corpus: index only this subfolder of it")
    ap.add_argument("--embedder", default="none")
    args = ap.parse_args()
    if bool(args.annotations) != bool(args.corpus):
        ap.error("--annotations and --corpus go together")
    if args.cold_index:
        _cold_index(args.cold_index, args.home)
    elif args.index_cost:
        index_cost(args.index_cost, args.rounds)
    elif args.half_written:
        half_written(args.half_written)
    elif args.latency:
        latency(args.latency)
    elif args.annotations:
        gold_first(args.embedder, [quality.custom_corpus(args.annotations, args.corpus, args.index_root)])
    else:
        gold_first(args.embedder, quality.bench_corpora(None, quality.corpora.SHARED_BENCH))


if __name__ == "__main__":
    main()
