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
    import numpy as np  # a map's arithmetic; numpy is not loaded for other operations

    defs = [d for d in store.find_facts(rev_no, "def", limit=MAX_REFS) if d.kind in _KINDS]
    definers: dict[str, set[str]] = {}
    for d in defs:
        definers.setdefault(d.name, set()).add(d.path)
    # edges: user file → defining file, weight by uses (sublinear) over the number of definers
    srcs, dsts, weights, names = [], [], [], []
    test_weight: dict[str, float] = {}
    for src, name, count in store.ref_uses(rev_no):
        where = definers.get(name)
        if not where or len(where) > MAX_DEFINERS or (len(where) == 1 and src in where):
            continue
        if src not in test_weight:  # a test's uses say less about what matters than the code's
            test_weight[src] = 0.5 if is_test_path(src) else 1.0
        w = math.sqrt(count) / len(where) * test_weight[src]
        for dst in where:
            if dst != src:
                srcs.append(src)
                dsts.append(dst)
                weights.append(w)
                names.append(name)
    files = sorted({d.path for d in defs} | set(srcs))
    if not files:
        return []
    at = {f: i for i, f in enumerate(files)}
    s = np.fromiter((at[f] for f in srcs), dtype=np.int64, count=len(srcs))
    t = np.fromiter((at[f] for f in dsts), dtype=np.int64, count=len(dsts))
    w = np.asarray(weights, dtype=np.float64)
    personal = _personalization(files, focus, definers)
    rank = _pagerank(len(files), s, t, w, np.asarray([personal[f] for f in files]))
    # each definition's share: the rank that flowed to its file by its name
    totals = np.bincount(s, weights=w, minlength=len(files))
    flow = rank[s] * w / totals[s] if len(s) else w
    share: dict[tuple[int, str], float] = {}
    for dst, name, f in zip(t.tolist(), names, flow.tolist(), strict=True):
        share[(dst, name)] = share.get((dst, name), 0.0) + f
    by_file: dict[str, list[RankedDef]] = {}
    for d in defs:
        score = share.get((at[d.path], d.name), 0.0) + (1e-9 if d.container is None else 0.0)
        by_file.setdefault(d.path, []).append(
            RankedDef(d.name, d.kind or "", d.path, d.line, (d.signature or d.name).strip(), score)
        )
    ranks = rank.tolist()
    ranked = [
        RankedFile(p, ranks[i], tuple(sorted(by_file[p], key=lambda d: (-d.score, d.line))))
        for i, p in enumerate(files)
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


def _pagerank(n: int, src, dst, w, personal):  # type: ignore[no-untyped-def]
    """Personalized PageRank over weighted edges src → dst (numpy arrays); a file with no edges
    out gives its rank back by the personalization."""
    import numpy as np

    totals = np.bincount(src, weights=w, minlength=n)
    dangling = totals == 0
    step = w / totals[src] if len(src) else w
    rank = personal.copy()
    for _ in range(ITERATIONS):
        spread = np.bincount(dst, weights=rank[src] * step, minlength=n)
        rank = (1 - DAMPING) * personal + DAMPING * (rank[dangling].sum() * personal + spread)
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
