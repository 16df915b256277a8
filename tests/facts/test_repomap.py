"""The repo map (files ranked by how much the rest uses their definitions, fitted to a budget, cached) and related code."""

from __future__ import annotations

import hashlib
import marshal
import os
import shutil
from pathlib import Path

import pytest
from facts.test_graph import PROJECT
from store.sample_index import SQLITE_NAMES_NUMBERED
from support import cli_json, write

from ragraf.api import Index
from ragraf.api.ops import graph as graph_ops
from ragraf.facts import repomap


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    write(root, PROJECT)
    with Index.open(root) as idx:
        idx.index()
    return root


def test_the_most_used_file_leads_with_its_signatures(project: Path) -> None:
    env = cli_json("map", cwd=project)
    paths = [r["path"] for r in env["results"]]
    assert paths[0] == "pkg/sessions.py"  # Session is used by api.py and the tests
    assert paths.index("pkg/api.py") < paths.index("tests/test_api.py")
    first = env["results"][0]["symbols"]
    assert first[0]["signature"] == "class Session:" and first[0]["line"] == 1


def test_a_small_budget_keeps_the_best_and_counts_the_rest(project: Path) -> None:
    env = cli_json("map", "--budget", "12", cwd=project)
    assert len(env["results"]) == 1
    assert env["truncated"]["results"] == 3  # of the four files that define something


def test_focus_ranks_around_a_path(project: Path) -> None:
    env = cli_json("map", "--focus", "pkg/util.py", cwd=project)
    assert env["results"][0]["path"] == "pkg/util.py"


def test_the_ranking_is_computed_once_per_revision_and_focus(project: Path, monkeypatch) -> None:
    calls = []
    real = repomap.rank_columns

    def counting(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(repomap, "rank_columns", counting)  # read at each call: imported there lazily
    graph_ops._MAPS.clear()
    with Index.open(project) as idx:
        first = idx.repo_map()
    graph_ops._MAPS.clear()  # a new process: the ranking comes from the cache file
    with Index.open(project) as idx:
        again = idx.repo_map()
        focused = idx.repo_map(focus=["pkg/api.py"])
    assert first.results == again.results
    assert len(calls) == 2  # the unfocused map once, the focused one once
    assert focused.results[0]["path"] == "pkg/api.py"


def test_related_finds_the_definitions_sharing_its_names_and_its_neighbours(project: Path) -> None:
    env = cli_json("related", "pkg/api.py:6", cwd=project)  # inside get
    found = {r["qualified"]: r for r in env["results"]}
    assert found["post"]["shared"] == ["request"]  # both call request, and nothing else of get's
    assert found["request"]["edge"] == "calls"
    assert "get" not in found


def test_related_outside_any_definition_says_so(project: Path) -> None:
    env = cli_json("related", "pkg/__init__.py:1", cwd=project)
    assert env["results"] == [] and any("outline" in n for n in env["notes"])


def test_an_index_from_before_uses_were_counted_maps_the_same(project: Path) -> None:
    import sqlite3

    graph_ops._MAPS.clear()
    with Index.open(project) as idx:
        before = idx.repo_map().results
        db_path = idx.settings.db_path
        shutil.rmtree(idx.settings.home / "maps")
    db = sqlite3.connect(db_path)  # schema 12: the sites of each reference row, not their number
    for statement in SQLITE_NAMES_NUMBERED:
        db.execute(statement)
    db.execute("DROP INDEX ref_sites_by_content")
    db.execute("ALTER TABLE ref_sites DROP COLUMN uses")
    db.execute("PRAGMA user_version = 12")
    db.commit()
    db.close()
    graph_ops._MAPS.clear()
    with Index.open(project) as idx:
        assert idx.repo_map().results == before
    db = sqlite3.connect(db_path)
    assert db.execute("SELECT count(*) FROM ref_sites WHERE uses IS NULL OR uses < 1").fetchone() == (0,)
    assert db.execute("SELECT count(*) FROM ref_sites").fetchone()[0] > 0
    assert db.execute("SELECT count(*) FROM ref_sites WHERE name_id IS NULL").fetchone() == (0,)


def _framed(body: bytes) -> bytes:  # what the cache's digest accepts
    return hashlib.sha1(body).digest() + body


def _miscounted(columns: dict) -> dict:  # a first file claiming one definition more than it has
    return {**columns, "counts": [columns["counts"][0] + 1, *columns["counts"][1:]]}


@pytest.mark.parametrize(
    "damaged",
    [
        lambda good: b"",
        lambda good: good[:-7],  # cut short
        lambda good: good[:40] + bytes([good[40] ^ 1]) + good[41:],  # one bit flipped
        lambda good: _framed(marshal.dumps([1, 2])),  # well framed, not a ranking's columns
        lambda good: _framed(marshal.dumps({"paths": ["pkg/api.py"]})),
        lambda good: _framed(b"[\xff\xff\xff\x7f"),  # marshal's list of 2**31 items, then nothing
        lambda good: _framed(marshal.dumps(_miscounted(marshal.loads(good[20:])))),
    ],
    ids=["empty", "cut", "flipped", "list", "short_columns", "bad_marshal", "miscounted"],
)
def test_a_cached_map_that_does_not_read_back_is_ranked_again(project: Path, damaged) -> None:
    graph_ops._MAPS.clear()
    with Index.open(project) as idx:
        first = idx.repo_map().results
        cached = list((idx.settings.home / "maps").glob("*.marshal"))
    assert len(cached) == 1
    good = cached[0].read_bytes()
    cached[0].write_bytes(damaged(good))
    graph_ops._MAPS.clear()
    with Index.open(project) as idx:
        assert idx.repo_map().results == first
    assert cached[0].read_bytes() == good  # written again, whole
    assert repomap.from_bytes(good)["paths"][0] == first[0]["path"]


def test_a_maps_reading_of_definitions_is_one_index_alone_and_no_other_plan_uses_it(project: Path) -> None:
    with Index.open(project) as idx:
        store, rev_no = idx.store(), idx._current().rev_no
        statements: list[str] = []
        store.db.set_trace_callback(statements.append)
        try:
            facts = store.map_facts(rev_no, ["function", "class", "method"])
        finally:
            store.db.set_trace_callback(None)
        (defs,) = [s for s in statements if "FROM facts" in s]
        plan = " ".join(row[-1] for row in store.db.execute(f"EXPLAIN QUERY PLAN {defs}"))
        assert "COVERING INDEX facts_for_map" in plan
        # in the order the definitions were written, as the facts table holds them
        written = store.db.execute(
            "SELECT name FROM facts WHERE kind = 'def' AND def_kind IN ('function', 'class', 'method') ORDER BY rowid"
        ).fetchall()
        in_order = sorted(zip(facts.def_order, facts.def_name, strict=True))
        assert [facts.names[n] for _, n in in_order] == [n for (n,) in written] and len(written) > 5
        for other in (
            "SELECT name FROM facts WHERE kind = 'def'",
            "SELECT name FROM facts WHERE content_id = 1 AND kind = 'def'",
            "SELECT name FROM facts WHERE name_lower = 'get' AND kind = 'def'",
        ):
            assert "facts_for_map" not in " ".join(
                r[-1] for r in store.db.execute(f"EXPLAIN QUERY PLAN {other}")
            )


def test_names_are_numbered_as_they_are_written_and_the_map_reads_the_numbers(project: Path) -> None:
    write(
        project, {"pkg/extra.py": "from pkg.util import helper\n\n\ndef brand_new():\n    return helper()\n"}
    )
    with Index.open(project) as idx:
        idx.index()  # a second run numbers the names it has not seen, and reuses the others' numbers
        store, rev_no = idx.store(), idx._current().rev_no
        db = store.db
        for table, where in (("facts", "kind = 'def'"), ("ref_sites", "1")):
            rows = db.execute(
                f"SELECT t.name, n.name FROM {table} t LEFT JOIN names n ON n.id = t.name_id WHERE {where}"
            ).fetchall()
            assert rows and all(name == numbered for name, numbered in rows), table
        assert db.execute("SELECT count(DISTINCT name) = count(*) FROM names").fetchone() == (1,)
        assert db.execute("SELECT count(*) FROM names WHERE name = 'brand_new'").fetchone() == (1,)
        statements: list[str] = []
        db.set_trace_callback(statements.append)
        try:
            facts = store.map_facts(rev_no, ["function", "class", "method"])
        finally:
            db.set_trace_callback(None)
    (uses,) = [s for s in statements if "FROM ref_sites" in s]
    assert "name_id" in uses and "(name," not in uses  # numbers, not a string per use
    assert "brand_new" in {facts.names[n] for n in facts.def_name}


def test_only_the_newest_cached_maps_are_kept(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(graph_ops, "MAP_CACHE_KEEP", 3)
    with Index.open(project) as idx:
        maps = idx.settings.home / "maps"
    maps.mkdir(exist_ok=True)
    for n in range(5):  # older revisions' maps and a file of an older format
        old = maps / (f"old{n}.marshal" if n else "old.json")
        old.write_bytes(b"x")
        os.utime(old, ns=(n * 10**9, n * 10**9))
    graph_ops._MAPS.clear()
    with Index.open(project) as idx:
        first = idx.repo_map().results
    kept = sorted(p.name for p in maps.iterdir())
    assert len(kept) == 3 and {"old4.marshal", "old3.marshal"} <= set(kept)
    graph_ops._MAPS.clear()
    with Index.open(project) as idx:  # the map just written is among those kept and read back
        assert idx.repo_map().results == first
    assert sorted(p.name for p in maps.iterdir()) == kept
