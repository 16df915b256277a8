"""Ranking rules on hand-made candidates: what each rule does to an order."""

from __future__ import annotations

import pytest

from ragraf.search.paths import PathIndex
from ragraf.search.rank import (
    FILE_EVIDENCE,
    Candidate,
    QueryInfo,
    add_file_evidence,
    apply_rules,
    older_versions,
    stem,
)
from ragraf.store import ChunkHit


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("alias", "aliases"),
        ("class", "classes"),
        ("process", "processes"),
        ("status", "statuses"),
        ("type", "types"),
        ("name", "names"),
        ("response", "responses"),
        ("route", "routing"),
        ("dependency", "dependencies"),
    ],
)
def test_a_word_and_its_plural_or_inflection_share_a_stem(one: str, other: str) -> None:
    assert stem(one) == stem(other)


@pytest.mark.parametrize(
    ("query", "wanted"),
    [
        ("alias handling for field names", "pkg/aliases.py"),
        ("how are types inferred", "src/types.ts"),
        ("the error classes", "lib/classes.py"),
    ],
)
def test_a_file_named_for_a_query_word_in_another_number_ranks_first(query: str, wanted: str) -> None:
    others = ["pkg/fields_impl.py", "src/checker.ts", "lib/base.py"]
    hits = [ChunkHit(i, p, 1, 10, None, "x", 1.0) for i, p in enumerate([*others, wanted])]
    ranked = apply_rules(QueryInfo.of(query), [Candidate(h, 1.0) for h in hits], {"path_match": True})
    assert ranked[0].hit.path == wanted
    off = apply_rules(
        QueryInfo.of(query), [Candidate(h, 1.0) for h in hits], {"path_match": False, "name_match": False}
    )
    assert off[0].hit.path != wanted  # the order comes from the rule, not from the path sort


def _ranked(query: str, scored: dict[str, float], rules: dict[str, bool]) -> list[str]:
    hits = [ChunkHit(i, p, 1, 10, None, "x", s) for i, (p, s) in enumerate(scored.items())]
    ranked = apply_rules(QueryInfo.of(query), [Candidate(h, h.score) for h in hits], rules)
    return [c.hit.path for c in ranked]


def test_a_version_folder_with_a_newer_sibling_ranks_after_the_newer_one() -> None:
    scored = {"src/v3/types.ts": 1.2, "src/v4/core/schemas.ts": 1.0}
    assert (
        _ranked("how a schema parses input", scored, {"version_penalty": True})[0] == "src/v4/core/schemas.ts"
    )
    assert (
        _ranked("how a schema parses input", scored, {"version_penalty": False, "name_match": False})[0]
        == "src/v3/types.ts"
    )


def test_a_versioned_copy_of_modules_ranks_after_the_unversioned_ones() -> None:
    scored = {"pkg/v1/fields.py": 1.2, "pkg/v1/schema.py": 1.1, "pkg/fields.py": 1.0}
    on = _ranked("how are fields declared", scored, {"version_penalty": True})
    # The whole copy goes down, not only the file with an unversioned twin.
    assert on == ["pkg/fields.py", "pkg/v1/fields.py", "pkg/v1/schema.py"]
    assert _ranked("how are fields declared", scored, {"version_penalty": False})[0] == "pkg/v1/fields.py"


def test_a_query_naming_the_version_keeps_its_folder_up() -> None:
    scored = {"src/v3/errors.ts": 1.2, "src/v4/core/errors.ts": 1.0}
    assert _ranked("v3 compatibility error types", scored, {"version_penalty": True})[0] == "src/v3/errors.ts"


def test_entry_files_or_a_lone_version_folder_do_not_make_a_folder_older() -> None:
    # index.ts re-exporting the current version exists beside it in many packages.
    assert older_versions({"src/index.ts", "src/v4/index.ts", "src/v4/schemas.ts"}) == set()
    assert older_versions({"api/v1/users.py", "api/app.py"}) == set()
    assert older_versions({"lib/dev3/a.py", "lib/dev4/a.py"}) == set()  # not version folders


def test_path_index_weighs_a_word_by_how_few_paths_hold_it() -> None:
    paths = [f"src/pkg/module_{i}.py" for i in range(20)] + ["src/pkg/aliases.py", "src/pkg/fields.py"]
    index = PathIndex.build(paths)
    stems = QueryInfo.of("alias handling in the pkg src module").stems
    assert index.match(stems, 3)[0] == "src/pkg/aliases.py"
    assert index.match(frozenset({"nothing"}), 3) == []


def test_a_path_index_updated_for_another_revision_matches_a_fresh_one() -> None:
    before = {f"src/pkg/module_{i}.py" for i in range(40)} | {"src/pkg/aliases.py"}
    after = (before - {"src/pkg/aliases.py", "src/pkg/module_3.py"}) | {"src/pkg/alias_generators.py"}
    updated = PathIndex.build(before).updated(after)
    assert updated == PathIndex.build(after)
    assert updated.match(QueryInfo.of("alias handling").stems, 3) == ["src/pkg/alias_generators.py"]


def test_a_long_query_matches_paths_by_its_rarest_words_within_a_budget() -> None:
    paths = [f"src/pkg/common_{i}.py" for i in range(30_000)] + ["src/pkg/resolver.py"]
    index = PathIndex.build(paths)
    # "src", "pkg" and "common" name every path; the budget skips them, the rare word still counts.
    stems = QueryInfo.of("src pkg common resolver").stems
    assert index.match(stems, 1) == ["src/pkg/resolver.py"]


@pytest.mark.parametrize(
    ("query", "wanted", "other"),
    [
        # Two adjacent query words run together in a name match both.
        ("real IP extraction from forwarded headers", "middleware/realip.go", "middleware/route_headers.go"),
        ("OpenAPI schema generation", "fastapi/openapi/utils.py", "fastapi/schema_gen.py"),
        # A path word of 4 letters or more that starts a query word abbreviates it.
        ("utility functions used across the package", "model2vec/utils.py", "model2vec/hub.py"),
        ("standard library type Serialize implementations", "src/ser/impls.rs", "src/ser/mod.rs"),
        ("formatter", "include/fmt/format.h", "include/fmt/core.h"),
    ],
)
def test_path_words_run_together_or_abbreviated_match_query_words(
    query: str, wanted: str, other: str
) -> None:
    scored = {other: 1.0, wanted: 0.9}
    assert _ranked(query, scored, {"path_match": True})[0] == wanted
    assert _ranked(query, scored, {"path_match": False, "name_match": False})[0] == other


@pytest.mark.parametrize("folder", ["examples", "_examples", "example", "demo", "samples"])
def test_examples_rank_after_the_code_they_use_unless_asked_for(folder: str) -> None:
    scored = {f"{folder}/rest/main.go": 1.2, "mux.go": 1.0}
    assert _ranked("route grouping with sub-routers", scored, {})[0] == "mux.go"
    assert _ranked("route grouping with sub-routers", scored, {"example_penalty": False})[0] != "mux.go"
    assert _ranked("an example of route grouping", scored, {})[0] != "mux.go"


def test_a_folder_merely_containing_the_word_is_not_examples() -> None:
    scored = {"counterexamples/check.go": 1.2, "mux.go": 1.0}
    assert _ranked("route grouping", scored, {})[0] == "counterexamples/check.go"


def test_a_path_word_of_three_letters_abbreviates_nothing() -> None:
    # `env` would stand for environment, envelope and envoy alike.
    scored = {"src/config.py": 1.0, "src/env.py": 0.9}
    assert _ranked("environment variables", scored, {"path_match": True})[0] == "src/config.py"


def test_a_file_named_by_query_words_alone_ranks_before_one_with_a_word_more() -> None:
    scored = {"lang3/tuple/MutableTriple.java": 1.05, "lang3/tuple/Triple.java": 1.0, "lang3/Range.java": 0.9}
    query = "triple container for three related values"
    assert _ranked(query, scored, {})[0] == "lang3/tuple/Triple.java"
    assert _ranked(query, scored, {"name_match": False})[0] == "lang3/tuple/MutableTriple.java"


def test_a_name_of_a_word_most_candidate_paths_hold_gains_nothing() -> None:
    # In a JSON library every query says JSON: json.hpp is named by it, and so is nothing in particular.
    scored = {"json/detail/iter_impl.hpp": 1.0, "json/json.hpp": 0.98, "json/detail/json_ref.hpp": 0.5}
    assert _ranked("iterator over JSON arrays", scored, {})[0] == "json/detail/iter_impl.hpp"
    scored = {"src/iter_impl.hpp": 1.0, "src/json.hpp": 0.98, "src/ref.hpp": 0.5}  # json is rare here
    assert _ranked("iterator over JSON arrays", scored, {})[0] == "src/json.hpp"


@pytest.mark.parametrize(
    "path", ["src/win/tcp.c", "src/windows/tcp.rs", "net/tcpsock_windows.go", "io/windows.rs"]
)
def test_windows_ports_rank_after_the_portable_code_unless_windows_is_asked_about(path: str) -> None:
    scored = {path: 1.2, "src/unix/tcp.c": 1.0}
    names = {"path_match": False, "name_match": False}
    assert _ranked("TCP connect and accept", scored, names)[0] == "src/unix/tcp.c"
    assert _ranked("TCP connect and accept", scored, {**names, "platform_penalty": False})[0] == path
    assert _ranked("TCP connect and accept on Windows", scored, names)[0] == path


@pytest.mark.parametrize("path", ["ui/window.py", "src/winner.c", "lib/win.c", "gui/windowing.c"])
def test_a_window_or_a_win_file_is_no_windows_port(path: str) -> None:
    scored = {path: 1.2, "src/unix/tcp.c": 1.0}
    rules = {"doc_penalty": False, "path_match": False, "name_match": False}
    assert _ranked("TCP connect and accept", scored, rules)[0] == path


def _hit(path: str, line: int) -> ChunkHit:
    return ChunkHit(
        chunk_id=line, path=path, start_line=line, end_line=line + 9, text="", symbol=None, score=0.0
    )


def test_a_big_file_matched_by_three_chunks_passes_a_satellite_matched_by_one_strong_chunk() -> None:
    # Gson.java matched in three places against one factory matched once, a little better.
    central = [Candidate(_hit("gson/Gson.java", n), s) for n, s in ((100, 1.0), (400, 0.5), (800, 0.5))]
    satellite = [Candidate(_hit("gson/internal/bind/TypeAdapters.java", 10), 1.3)]
    ranked = add_file_evidence(central + satellite)
    assert ranked[0].hit.path == "gson/Gson.java"
    # The third chunk is what tips it: with two chunks the satellite stays first.
    assert add_file_evidence(central[:2] + satellite)[0].hit.path.endswith("TypeAdapters.java")
    unranked = add_file_evidence(central + satellite, {"file_evidence": False})
    assert max(unranked, key=lambda c: c.score).hit.path.endswith("TypeAdapters.java")


def test_file_evidence_counts_two_chunks_after_the_best_and_no_more() -> None:
    many = [Candidate(_hit("core.h", n), s) for n, s in ((1, 1.0), (50, 0.5), (90, 0.5), (130, 0.5))]
    assert add_file_evidence(many)[0].score == pytest.approx(1.0 + FILE_EVIDENCE * 1.0)


def test_a_doc_twice_as_close_to_the_words_as_the_code_still_ranks_after_it_unless_docs_are_asked_for() -> (
    None
):
    scored = {"pkg/.agents/skills/dependencies.md": 1.9, "pkg/dependencies/utils.py": 1.0}
    names = {"path_match": False, "name_match": False}
    assert _ranked("how does dependency injection work", scored, names)[0] == "pkg/dependencies/utils.py"
    assert _ranked("the documentation of dependency injection", scored, names)[0].endswith(".md")
