"""The joined paths a process's first search matches with rank exactly as the path index does."""

from __future__ import annotations

import random
import sysconfig
from pathlib import Path

import pytest

from ragraf.search import paths as path_search
from ragraf.search.paths import JoinedPaths, PathIndex, path_index
from ragraf.search.rank import QueryInfo

STDLIB = Path(sysconfig.get_paths()["stdlib"])
QUESTIONS = [
    "decode a JSON document into Python objects",
    "how are mutually exclusive argument groups enforced",
    "tests for the email header parser",
    "unit tests for asyncio streams and their transports",
    "where are dependencies of a package resolved",
    "HTTPServer request handler",
    "getUserName",
    "concurrent futures process pool",
    "xml etree element tree",
    "lib test support",
]


def _stdlib_paths() -> list[str]:
    # A real tree of a few thousand files (folders named for words, test_*.py beside modules),
    # copied under a folder of each size so the budget for long queries is reached.
    found = sorted(str(p.relative_to(STDLIB)) for p in STDLIB.rglob("*") if p.is_file())[:6000]
    return found + [f"vendor/{p}" for p in found[:3000]]


def _queries(paths: list[str], n: int, seed: int) -> list[str]:
    # Words of the paths themselves (so most queries match), mixed with plain prose words.
    words = sorted({w for p in paths[::7] for w in p.replace("/", " ").replace(".", " ").split()})
    prose = "the parser reads each header line and resolves its encoding before decoding".split()
    rng = random.Random(seed)
    return [" ".join(rng.sample(words, rng.randint(1, 40)) + rng.sample(prose, 3)) for _ in range(n)]


def test_joined_paths_rank_the_same_paths_as_the_path_index_on_a_real_tree() -> None:
    paths = _stdlib_paths()
    index, joined = PathIndex.build(paths), JoinedPaths.build(paths)
    for query in QUESTIONS + _queries(paths, 150, seed=7):
        stems = QueryInfo.of(query).path_words  # with the starts a short query's words are abbreviated by
        assert joined.match(stems, 20) == index.match(stems, 20), query


def test_a_short_query_finds_the_paths_that_abbreviate_its_words() -> None:
    paths = ["pkg/utils.py", "pkg/model.py", "pkg/impls/serialize.rs", "pkg/detect.py"]
    index, joined = PathIndex.build(paths), JoinedPaths.build(paths)
    q = QueryInfo.of("utility helpers for implementations")
    assert index.match(q.stems, 5) == []
    assert (
        set(index.match(q.path_words, 5))
        == set(joined.match(q.path_words, 5))
        == {
            "pkg/utils.py",
            "pkg/impls/serialize.rs",
        }
    )
    # A long query (a pasted report) keeps its own words: its starts would name too much.
    words = "parser header encoding socket buffer stream request response client server session cookie"
    long = QueryInfo.of(f"{words} timeout retry utility")
    assert long.path_words == long.stems


def test_a_long_query_is_cut_by_the_budget_at_the_same_stem() -> None:
    paths = [f"src/pkg/common_{i}.py" for i in range(12_000)] + [
        f"src/other/shared_{i}/mod.py" for i in range(12_000)
    ]
    paths += ["src/pkg/resolver.py", "src/other/shared_1/resolver_cache.py"]
    index, joined = PathIndex.build(paths), JoinedPaths.build(paths)
    # After resolver, common and shared are held by 12,000 paths each: the budget takes the first by name.
    for query in ("src pkg common shared resolver", "resolver shared common", "other mod"):
        stems = QueryInfo.of(query).stems
        assert joined.match(stems, 5) == index.match(stems, 5), query
    assert joined.match(QueryInfo.of("common resolver").stems, 1) == ["src/pkg/resolver.py"]


def test_camel_case_extensions_and_separators_are_read_as_path_stems_reads_them() -> None:
    paths = [
        "src/HTTPServer/requestHandler.py",
        "src/http_server/handlers.py",
        "lib/platform/form.py",  # "orm" in both, as no word part
        "docs/json.md",  # the extension is no word of the path
        "a.b\\c.d",  # a backslash is a separator, and "." inside a folder name splits it
        "data/queries/dependencies.json",
        "web/static/Ss/STATICFILES.txt",
        "x/y",
    ]
    index, joined = PathIndex.build(paths), JoinedPaths.build(paths)
    for query in ("http server request handler", "orm form platform", "json docs", "a b c d", "query dependency",
                  "static files", "handles servers", "y x"):  # fmt: skip
        stems = QueryInfo.of(query).stems
        assert joined.match(stems, 8) == index.match(stems, 8), query
    assert joined.match(QueryInfo.of("orm").stems, 8) == []


def test_paths_whose_lower_case_changes_are_matched_by_their_stems() -> None:
    # "İ" lower-cases to two characters; the Kelvin sign "K" lower-cases to an ASCII "k".
    kelvin = "\u212a" * 3
    paths = [f"src/{kelvin}/x.py", "src/İstanbul/routes.py", "src/kkk/y.py", "src/routes/ünïcode_router.py"]
    index, joined = PathIndex.build(paths), JoinedPaths.build(paths)
    for query in ("kkk", "routes", "router x y", "unicode"):
        stems = QueryInfo.of(query).stems
        assert joined.match(stems, 8) == index.match(stems, 8), query
    assert set(joined.match(QueryInfo.of("kkk").stems, 8)) == {f"src/{kelvin}/x.py", "src/kkk/y.py"}


class _Manifest:
    """The one store method path_index reads, counting its calls."""

    def __init__(self, paths: list[str]) -> None:
        self.paths, self.reads = paths, 0

    def manifest_hashes(self, rev_no: int) -> list[tuple[str, str]]:
        self.reads += 1
        return [(p, "0" * 64) for p in self.paths]


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    path_search._CACHE.clear()
    path_search.BUILDS.clear()


def test_a_process_first_search_joins_the_paths_and_a_second_builds_the_index_beside_it() -> None:
    store = _Manifest([f"pkg/module_{i}.py" for i in range(40)] + ["pkg/aliases.py"])
    first = path_index(store, 1)  # type: ignore[arg-type]
    # The second search starts the build in a thread; the joined paths answer until it is done.
    assert path_index(store, 1) is first and isinstance(first, JoinedPaths)  # type: ignore[arg-type]
    assert len(path_search.BUILDS) == 1 and path_search.BUILDS[0][0] is first
    path_search.BUILDS[0][1].join(timeout=60)
    second = path_index(store, 1)  # type: ignore[arg-type]
    assert isinstance(second, PathIndex) and second == PathIndex.build(store.paths)
    assert path_index(store, 1) is second  # type: ignore[arg-type]
    assert store.reads == 1 and len(path_search.BUILDS) == 1  # one build, one read of the manifest
    # The next revision's index is derived from this one's while few paths differ.
    store.paths = [*store.paths[1:], "pkg/alias_generators.py"]
    third = path_index(store, 2)  # type: ignore[arg-type]
    assert third == PathIndex.build(store.paths)
    stems = QueryInfo.of("alias handling").stems
    assert (
        first.match(stems, 3) == ["pkg/aliases.py"] and third.match(stems, 3)[0] == "pkg/alias_generators.py"
    )


def test_joined_paths_search_their_text_once_per_stem(monkeypatch: pytest.MonkeyPatch) -> None:
    joined = JoinedPaths.build(
        [f"pkg/module_{i}.py" for i in range(40)] + ["pkg/aliases.py", "docs/alias.md"]
    )
    searched: list[str] = []
    holding = JoinedPaths._holding
    monkeypatch.setattr(
        JoinedPaths, "_holding", lambda self, s, key: searched.append(s) or holding(self, s, key)
    )
    stems = QueryInfo.of("alias handling").stems
    first = joined.match(stems, 3)
    assert joined.match(stems, 3) == first and first[0] in ("docs/alias.md", "pkg/aliases.py")
    assert sorted(searched) == sorted(stems)  # the second match read what the first found
