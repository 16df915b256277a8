"""The repo map: the most central definitions, by PageRank over the file graph of definitions and uses.

A file that uses a name defined elsewhere points at the files defining it (weighted down when many
files define it, Aider's rule, so `get` or `run` do not pull every file in). PageRank over those
edges, personalized by the focus (paths, or names whose defining files lead), ranks the files;
each definition takes the share of rank that flowed to it by its name. The map is the files in rank
order with their key definitions' signatures, fitted to a token budget.
"""

from __future__ import annotations

import gc
import hashlib
import marshal
from functools import partial
from itertools import accumulate, chain, repeat
from typing import Any, NamedTuple

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


Columns = dict[str, list[Any]]  # a ranking as pack gives it: per file, then per definition


class RankedDef(NamedTuple):  # a tuple: a map makes tens of thousands
    name: str
    kind: str
    path: str
    line: int
    signature: str
    score: float


class RankedFile(NamedTuple):
    path: str
    rank: float
    symbols: tuple[RankedDef, ...]


def rank_files(store: Store, rev_no: int, focus: list[str]) -> list[RankedFile]:
    """Every file with definitions, most central first, with its key definitions (at most
    SYMBOLS_PER_FILE, the most used first): `rank_columns`' ranking, one tuple per definition."""
    return unpack(rank_columns(store, rev_no, focus))


def rank_columns(store: Store, rev_no: int, focus: list[str]) -> Columns:
    """The ranking `rank_files` gives, as `pack`'s columns: a few flat lists, not a tuple per
    definition (tens of thousands of objects the collector would track, whose making sets off its
    walks over all a warm process holds). The store's rows become integer columns once (a path
    and a name are numbers from then on); the edges, the rank and each definition's share are
    array arithmetic, with no Python step per use or per edge."""
    # The reading makes a few hundred thousand strings and no cycle: the collector, run every
    # few thousand of them, would walk everything a warm process holds (its graphs' memos) to
    # free nothing.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _rank_columns(store, rev_no, focus)
    finally:
        if enabled:
            gc.enable()


def _rank_columns(store: Store, rev_no: int, focus: list[str]) -> Columns:
    import numpy as np  # a map's arithmetic; numpy is not loaded for other operations

    facts = store.map_facts(rev_no, _KINDS)
    paths = [p for held in facts.paths.values() for p in held]
    contents = np.fromiter(facts.paths, np.int64, len(facts.paths))
    many = np.fromiter((len(held) for held in facts.paths.values()), np.int64, len(contents))
    first = np.cumsum(many) - many  # a content's first path id; its other paths follow it
    n_names = len(facts.names)  # a name is its number (the store's) from here on
    all_names = np.asarray(facts.def_name, dtype=np.int64)
    d_slot = _slots(np, contents, facts.def_content)
    d_slot[all_names < 0] = -1
    d_row, d_path = _spread(np, d_slot, first, many)
    d_name = all_names[d_row]
    # each name's defining paths, distinct, in name order
    width = max(len(paths), 1)
    pairs, d_pair = np.unique(d_name * width + d_path, return_inverse=True)
    def_path = pairs % width
    definers = np.bincount(pairs // width, minlength=n_names)
    def_start = np.cumsum(definers) - definers
    # uses of a name defined in 1..MAX_DEFINERS files; from its file to each of them but itself,
    # weighted by uses (sublinear) over the number of definers; a test's uses say less
    u_name = np.asarray(facts.use_name, dtype=np.int64)
    spread = np.where(u_name >= 0, definers[u_name] if n_names else 0, 0)
    u_slot = _slots(np, contents, facts.use_content)
    u_slot[(spread == 0) | (spread > MAX_DEFINERS)] = -1
    u_row, u_path = _spread(np, u_slot, first, many)
    u_name, spread = u_name[u_row], spread[u_row]
    count = np.asarray(facts.use_sites, dtype=np.float64)[u_row]
    using = np.zeros(len(paths), dtype=bool)
    using[u_path] = True
    users = np.flatnonzero(using)  # np.unique(u_path), without the numpy.ma it loads
    test_weight = np.ones(len(paths))
    test_weight[users] = [0.5 if is_test_path(paths[i]) else 1.0 for i in users.tolist()]
    u_weight = np.sqrt(count) / spread * test_weight[u_path]
    e_use, offset = _repeat(np, spread)
    e_src, e_name = u_path[e_use], u_name[e_use]
    e_pair = def_start[e_name] + offset  # the definition (name, path) an edge leads to
    e_dst = def_path[e_pair]
    own = e_dst != e_src
    e_src, e_dst, e_pair, w = e_src[own], e_dst[own], e_pair[own], u_weight[e_use][own]
    listed = np.zeros(len(paths), dtype=bool)
    listed[d_path] = True
    listed[e_src] = True
    files = sorted(paths[i] for i in np.flatnonzero(listed).tolist())
    if not files:
        return pack([])
    at = {f: i for i, f in enumerate(files)}
    file_of = np.full(len(paths), -1, dtype=np.int64)
    file_of[np.flatnonzero(listed)] = [at[paths[i]] for i in np.flatnonzero(listed).tolist()]
    s, t = file_of[e_src], file_of[e_dst]
    wanted = _focus_names(focus)
    numbers = {n: i for i, n in enumerate(facts.names) if n in wanted} if wanted else {}
    focused = {
        n: {paths[i] for i in _definers_of(np, numbers.get(n), def_path, def_start, definers)} for n in wanted
    }
    personal = _personalization(files, focus, focused)
    rank = _pagerank(len(files), s, t, w, np.asarray([personal[f] for f in files]))
    # each definition's share: the rank that flowed to its file by its name
    totals = np.bincount(s, weights=w, minlength=len(files))
    flow = rank[s] * w / totals[s] if len(s) else w
    shares = np.bincount(e_pair, weights=flow, minlength=len(pairs))
    d_file = file_of[d_path]
    top = np.asarray(facts.def_top, dtype=np.float64)[d_row]
    score = shares[d_pair.ravel()] + top * 1e-9
    line = np.asarray(facts.def_line, dtype=np.int64)[d_row]
    # per file, its definitions most used first (then by line, then as the store wrote them)
    order = np.lexsort((np.asarray(facts.def_order, dtype=np.int64)[d_row], line, -score, d_file))
    sorted_file = d_file[order]
    group = np.searchsorted(sorted_file, sorted_file)  # where each file's definitions begin
    kept = order[np.arange(len(order)) - group < SYMBOLS_PER_FILE]
    # the files with kept definitions, most central first (then by path: files are numbered in
    # path order), and their kept definitions file after file, each column picked at once
    k_file = d_file[kept]
    starts = np.flatnonzero(np.diff(k_file, prepend=-1))
    counts = np.diff(np.append(starts, len(kept)))
    by_rank = np.lexsort((k_file[starts], -rank[k_file[starts]]))
    f_ids, starts, counts = k_file[starts][by_rank], starts[by_rank], counts[by_rank]
    picked = kept[np.repeat(starts - (np.cumsum(counts) - counts), counts) + np.arange(len(kept))]
    rows = d_row[picked].tolist()
    names = list(map(facts.names.__getitem__, d_name[picked].tolist()))
    signatures = [
        (s or n).strip() for s, n in zip(map(facts.def_signature.__getitem__, rows), names, strict=True)
    ]
    return {
        "paths": list(map(files.__getitem__, f_ids.tolist())), "ranks": rank[f_ids].tolist(),
        "counts": counts.tolist(), "names": names, "kinds": list(map(facts.def_kind.__getitem__, rows)),
        "lines": line[picked].tolist(), "signatures": signatures, "scores": score[picked].tolist(),
    }  # fmt: skip


def _slots(np, contents, keys):  # type: ignore[no-untyped-def]
    """Each key's place among the revision's contents, -1 for a content it does not hold."""
    order = np.argsort(contents)
    at = np.searchsorted(contents[order], keys)
    at = np.minimum(at, max(len(contents) - 1, 0))
    if not len(contents):
        return np.full(len(keys), -1, dtype=np.int64)
    return np.where(contents[order][at] == keys, order[at], -1)


def _spread(np, content, first, many):  # type: ignore[no-untyped-def]
    """(row, path id) for each path a row's content is held at; rows of no content (-1) drop out."""
    rows = np.flatnonzero(content >= 0)
    held = content[rows]
    row, offset = _repeat(np, many[held])
    return rows[row], first[held][row] + offset


def _repeat(np, counts):  # type: ignore[no-untyped-def]
    """Each index i repeated counts[i] times, and its place 0..counts[i]-1 in its run."""
    index = np.repeat(np.arange(len(counts)), counts)
    starts = np.cumsum(counts) - counts
    return index, np.arange(len(index)) - starts[index]


def _definers_of(np, name, def_path, def_start, definers):  # type: ignore[no-untyped-def]
    if name is None:
        return []
    return def_path[def_start[name] : def_start[name] + definers[name]].tolist()


def _focus_names(focus: list[str]) -> set[str]:
    return {item.strip().strip("/").rsplit(".", 1)[-1] for item in focus if item.strip().strip("/")}


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


def pack(files: list[RankedFile]) -> Columns:
    """A ranking as columns, for the map's cache (JSON of a few flat lists reads back in half the
    time one list per definition takes); `unpack` makes it again, equal to what was packed."""
    symbols = [s for f in files for s in f.symbols]
    names, kinds, _paths, lines, signatures, scores = (
        (list(c) for c in zip(*symbols, strict=True)) if symbols else [[]] * 6
    )
    return {
        "paths": [f.path for f in files], "ranks": [f.rank for f in files],
        "counts": [len(f.symbols) for f in files], "names": names, "kinds": kinds, "lines": lines,
        "signatures": signatures, "scores": scores,
    }  # fmt: skip


def unpack(packed: Columns) -> list[RankedFile]:
    """The ranking `pack` gave these columns (KeyError, TypeError or ValueError if they are not its)."""
    paths, counts = packed["paths"], packed["counts"]
    held = chain.from_iterable(map(repeat, paths, counts))  # each definition's path: its file's
    names, kinds, lines = packed["names"], packed["kinds"], packed["lines"]
    columns = zip(names, kinds, held, lines, packed["signatures"], packed["scores"], strict=True)
    symbols = list(map(partial(tuple.__new__, RankedDef), columns))  # RankedDef(*row), made in C
    return [
        RankedFile(p, r, tuple(symbols[e - n : e]))
        for p, r, n, e in zip(paths, packed["ranks"], counts, accumulate(counts), strict=True)
    ]


def _file(packed: Columns, i: int, end: int) -> RankedFile:
    """The i-th file of a ranking's columns, whose definitions end at `end`."""
    start = end - packed["counts"][i]
    path, picks = packed["paths"][i], slice(start, end)
    columns = (packed[k][picks] for k in ("names", "kinds", "lines", "signatures", "scores"))
    names, kinds, lines, signatures, scores = columns
    rows = zip(names, kinds, repeat(path, end - start), lines, signatures, scores, strict=True)
    return RankedFile(path, packed["ranks"][i], tuple(map(partial(tuple.__new__, RankedDef), rows)))


def first_files(packed: Columns, n: int) -> Columns:
    """A ranking's columns cut to its first n files."""
    ends = sum(packed["counts"][:n])
    return {k: packed[k][: n if k in _PER_FILE else ends] for k in (*_PER_FILE, *_PER_DEFINITION)}


def to_bytes(packed: Columns) -> bytes:
    """A ranking's columns as the map's cache holds them: marshalled (a tenth of JSON's writing
    time, a third of its reading), after their SHA-1, so a file cut short or damaged is told apart."""
    body = marshal.dumps(packed)
    return hashlib.sha1(body).digest() + body


_PER_FILE, _PER_DEFINITION = ("paths", "ranks", "counts"), ("names", "kinds", "lines", "signatures", "scores")


def from_bytes(data: bytes) -> Columns:
    """The columns `to_bytes` gave these bytes; ValueError if they are not what it wrote."""
    digest, body = data[:20], data[20:]
    if len(digest) < 20 or hashlib.sha1(body).digest() != digest:
        raise ValueError("not a cached map: its digest does not match")
    try:
        packed = marshal.loads(body)
        files, counts = len(packed["paths"]), packed["counts"]
        columns = [packed[k] for k in (*_PER_FILE, *_PER_DEFINITION)]
        shaped = all(type(c) is list for c in columns) and all(type(n) is int and n >= 0 for n in counts)
        lengths = {len(c) for c in columns[:3]}, {len(c) for c in columns[3:]}
        if not shaped or lengths != ({files}, {sum(counts)}):
            raise ValueError("not a cached map: its columns do not add up")
    except (EOFError, KeyError, TypeError) as e:  # the digest matched: another version's columns
        raise ValueError(f"not a cached map: {e}") from e
    return packed


def fit_budget(packed: Columns, budget_tokens: int) -> tuple[list[RankedFile], int]:
    """The files of a ranking's columns, best first, with their key signatures, as many as fit
    the budget; and how many did not. Only the files it reaches are made into tuples."""
    room = budget_tokens * CHARS_PER_TOKEN
    kept: list[RankedFile] = []
    files = packed["paths"]
    for i, f in enumerate(map(partial(_file, packed), range(len(files)), accumulate(packed["counts"]))):
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
