"""Ranking rules on hand-made candidates: what each rule does to an order."""

from __future__ import annotations

import pytest

from ragraf.search.rank import Candidate, QueryInfo, apply_rules, stem
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
    off = apply_rules(QueryInfo.of(query), [Candidate(h, 1.0) for h in hits], {"path_match": False})
    assert off[0].hit.path != wanted  # the order comes from the rule, not from the path sort
