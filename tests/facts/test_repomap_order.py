"""The map's ranking, computed as arrays, is the one the per-use definition gives: checked on a real
code base (this project's own source, copied), unfocused and focused."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from ragraf.api import Index
from ragraf.facts import repomap
from ragraf.languages import is_test_path

SOURCE = Path(__file__).resolve().parents[2] / "src" / "ragraf"


def reference_ranking(store, rev_no: int, focus: list[str]) -> list[tuple[str, list[tuple[str, int]]]]:  # type: ignore[no-untyped-def]
    """The map's definition, one use and one edge at a time: a file using a name points at the
    other files defining it (by sqrt(uses) / definers, halved from a test; none past MAX_DEFINERS),
    PageRank over that, each definition scored by the rank flowing to its file by its name."""
    defs = [d for d in store.find_facts(rev_no, "def", limit=10**7) if d.kind in repomap._KINDS]
    definers: dict[str, set[str]] = {}
    for d in defs:
        definers.setdefault(d.name, set()).add(d.path)
    uses: dict[tuple[str, str], int] = {}
    for r in store.find_facts(rev_no, "ref", limit=10**7):
        uses[(r.path, r.name)] = uses.get((r.path, r.name), 0) + 1
    edges = []
    for (src, name), count in uses.items():
        where = definers.get(name, set())
        if 0 < len(where) <= repomap.MAX_DEFINERS:
            w = math.sqrt(count) / len(where) * (0.5 if is_test_path(src) else 1.0)
            edges += [(src, dst, w, name) for dst in sorted(where) if dst != src]
    files = sorted({d.path for d in defs} | {e[0] for e in edges})
    at = {f: i for i, f in enumerate(files)}
    s = np.array([at[e[0]] for e in edges], dtype=np.int64)
    t = np.array([at[e[1]] for e in edges], dtype=np.int64)
    w = np.array([e[2] for e in edges])
    personal = repomap._personalization(files, focus, definers)
    rank = repomap._pagerank(len(files), s, t, w, np.array([personal[f] for f in files]))
    out = rank.copy()
    totals = np.bincount(s, weights=w, minlength=len(files))
    share: dict[tuple[str, str], float] = {}
    for (_src, dst, weight, name), i in zip(edges, s.tolist(), strict=True):
        share[(dst, name)] = share.get((dst, name), 0.0) + out[i] * weight / totals[i]
    by_file: dict[str, list[tuple[float, int, str]]] = {}
    for d in defs:
        score = share.get((d.path, d.name), 0.0) + (1e-9 if d.container is None else 0.0)
        by_file.setdefault(d.path, []).append((score, d.line, d.name))
    ranked = sorted(by_file, key=lambda p: (-out[at[p]], p))
    return [
        (p, [(n, line) for _, line, n in sorted(by_file[p], key=lambda x: (-x[0], x[1]))][: repomap.SYMBOLS_PER_FILE])
        for p in ranked
    ]  # fmt: skip


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("real") / "ragraf"
    shutil.copytree(SOURCE, root, ignore=shutil.ignore_patterns("__pycache__"))
    with Index.open(root) as idx:
        idx.index()
    return root


@pytest.mark.parametrize("focus", [[], ["store"], ["rank_files"]], ids=["unfocused", "path", "name"])
def test_the_map_ranks_a_real_code_base_as_its_definition_does(real: Path, focus: list[str]) -> None:
    with Index.open(real) as idx:
        store, rev_no = idx.store(), idx._current().rev_no
        ranked = repomap.rank_files(store, rev_no, focus)
        expected = reference_ranking(store, rev_no, focus)
    assert len(ranked) > 100
    got = [(f.path, [(s.name, s.line) for s in f.symbols]) for f in ranked]
    # same files in the same order, each with the same key definitions in the same order
    assert [p for p, _ in got] == [p for p, _ in expected]
    assert got == expected
    if focus == ["store"]:
        assert ranked[0].path.startswith("store/")


def test_a_ranking_packed_for_the_cache_unpacks_as_it_was(real: Path) -> None:
    with Index.open(real) as idx:
        ranked = repomap.rank_files(idx.store(), idx._current().rev_no, [])
    back = repomap.unpack(json.loads(json.dumps(repomap.pack(ranked))))
    assert back == ranked
    assert all(
        type(f) is repomap.RankedFile and type(s) is repomap.RankedDef for f in back for s in f.symbols
    )
    assert back[0].symbols[0].path == ranked[0].path
    assert repomap.unpack(repomap.pack([])) == []
    short = repomap.pack(ranked)
    short["counts"][0] += 1  # columns that do not add up are refused, not read askew
    with pytest.raises(ValueError):
        repomap.unpack(short)
