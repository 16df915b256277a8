"""The repo map: the most central definitions, by PageRank over the file graph of definitions and uses.

A file that uses a name defined elsewhere points at the files defining it (weighted down when many
files define it, Aider's rule, so `get` or `run` do not pull every file in). PageRank over those
edges, personalized by the focus (paths, or names whose defining files lead), ranks the files;
each definition takes the share of rank that flowed to it by its name. The map is the files in rank
order with their key definitions' signatures, fitted to a token budget.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ragraf.languages import is_test_path
from ragraf.store import Store

MAX_REFS = 2_000_000  # use sites read for one map
MAX_DEFINERS = 20  # a name defined in more files than this says nothing about which one is used
ITERATIONS = 30
DAMPING = 0.85
CHARS_PER_TOKEN = 4
SYMBOLS_PER_FILE = 8
_KINDS = frozenset(
    {"function", "method", "class", "struct", "interface", "trait", "enum", "type", "constant"}
)


@dataclass(frozen=True)
class RankedDef:
    name: str
    kind: str
    path: str
    line: int
    signature: str
    score: float


@dataclass(frozen=True)
class RankedFile:
    path: str
    rank: float
    symbols: tuple[RankedDef, ...]


def rank_files(store: Store, rev_no: int, focus: list[str]) -> list[RankedFile]:
    """Every file with definitions, most central first, with its definitions most used first."""
    defs = [d for d in store.find_facts(rev_no, "def", limit=MAX_REFS) if d.kind in _KINDS]
    definers: dict[str, set[str]] = {}
    for d in defs:
        definers.setdefault(d.name, set()).add(d.path)
    uses: dict[tuple[str, str], int] = {}
    for r in store.find_facts(rev_no, "ref", limit=MAX_REFS):
        if r.name in definers:
            uses[(r.path, r.name)] = uses.get((r.path, r.name), 0) + 1
    # edges: user file → defining file, weight by uses (sublinear) over the number of definers
    out: dict[str, dict[str, float]] = {}
    flows: dict[tuple[str, str, str], float] = {}  # (src, dst, name) → weight, for the definitions' shares
    for (src, name), count in uses.items():
        targets = definers[name] - {src}
        if not targets or len(definers[name]) > MAX_DEFINERS:
            continue
        w = math.sqrt(count) / len(definers[name])
        if is_test_path(src):
            w *= 0.5  # a test's uses say less about what matters than the code's
        for dst in targets:
            out.setdefault(src, {})[dst] = out.get(src, {}).get(dst, 0.0) + w
            flows[(src, dst, name)] = flows.get((src, dst, name), 0.0) + w
    files = sorted({d.path for d in defs} | set(out))
    if not files:
        return []
    personal = _personalization(files, focus, definers)
    rank = _pagerank(files, out, personal)
    share: dict[tuple[str, str], float] = {}
    for (src, dst, name), w in flows.items():
        share[(dst, name)] = share.get((dst, name), 0.0) + rank[src] * w / sum(out[src].values())
    by_file: dict[str, list[RankedDef]] = {}
    for d in defs:
        score = share.get((d.path, d.name), 0.0) + (1e-9 if d.container is None else 0.0)
        by_file.setdefault(d.path, []).append(
            RankedDef(d.name, d.kind or "", d.path, d.line, (d.signature or d.name).strip(), score)
        )
    ranked = [
        RankedFile(p, rank[p], tuple(sorted(by_file.get(p, []), key=lambda s: (-s.score, s.line))))
        for p in files
        if by_file.get(p)
    ]
    return sorted(ranked, key=lambda f: (-f.rank, f.path))


def _personalization(files: list[str], focus: list[str], definers: dict[str, set[str]]) -> dict[str, float]:
    """Uniform, or all on the focus: files under a focused path, and the files defining a focused name."""
    chosen: set[str] = set()
    for item in focus:
        item = item.strip().strip("/")
        if not item:
            continue
        chosen |= {f for f in files if f == item or f.startswith(item + "/")}
        chosen |= definers.get(item.rsplit(".", 1)[-1], set())
    if not chosen:
        return {f: 1.0 / len(files) for f in files}
    return {f: (1.0 / len(chosen) if f in chosen else 0.0) for f in files}


def _pagerank(
    files: list[str], out: dict[str, dict[str, float]], personal: dict[str, float]
) -> dict[str, float]:
    rank = dict(personal)
    totals = {src: sum(edges.values()) for src, edges in out.items()}
    for _ in range(ITERATIONS):
        nxt = {f: (1 - DAMPING) * personal[f] for f in files}
        dangling = sum(rank[f] for f in files if f not in out)
        for f in files:
            nxt[f] += DAMPING * dangling * personal[f]
        for src, edges in out.items():
            r = rank.get(src, 0.0) * DAMPING / totals[src]
            for dst, w in edges.items():
                nxt[dst] = nxt.get(dst, 0.0) + r * w
        rank = nxt
    return rank


def fit_budget(files: list[RankedFile], budget_tokens: int) -> tuple[list[RankedFile], int]:
    """The files, best first, with their key signatures, as many as fit the budget; and how many did not."""
    room = budget_tokens * CHARS_PER_TOKEN
    kept: list[RankedFile] = []
    for i, f in enumerate(files):
        cost = len(f.path) + 1
        symbols = []
        for s in f.symbols[:SYMBOLS_PER_FILE]:
            line = len(s.signature[:160]) + 8
            if cost + line > room and symbols:
                break
            symbols.append(s)
            cost += line
        if cost > room:
            return kept, len(files) - i
        kept.append(RankedFile(f.path, f.rank, tuple(symbols)))
        room -= cost
    return kept, 0
