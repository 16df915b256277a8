"""Ranking rules over fused candidates, each separately switchable so its effect can be measured."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import PurePosixPath

from ragraf.languages import is_test_path
from ragraf.store import ChunkHit
from ragraf.tokens import split_identifier

RULES = ("symbol_match", "path_match", "test_penalty", "file_cap", "merge_adjacent")
_TEST_QUERY = re.compile(
    r"\b(tests?|testing|specs?|fixtures?|mocks?|mocking|coverage|pytest|unittest|jest)\b", re.I
)


@dataclass(frozen=True)
class Candidate:
    hit: ChunkHit
    score: float


def enabled(rules: dict[str, bool] | None, name: str) -> bool:
    return True if rules is None else rules.get(name, True)


def asks_about_tests(query: str) -> bool:
    return bool(_TEST_QUERY.search(query))


def _query_identifiers(query: str) -> set[str]:
    words = re.findall(r"[A-Za-z_][A-Za-z0-9_]*", query)
    return {w.lower() for w in words if len(w) > 2}


def apply_rules(
    query: str, candidates: list[Candidate], rules: dict[str, bool] | None = None
) -> list[Candidate]:
    """Boost exact symbol and path-name matches, demote tests unless asked for; returns best first."""
    idents = _query_identifiers(query)
    joined = {i.replace("_", "") for i in idents}
    wants_tests = asks_about_tests(query)
    out = []
    for cand in candidates:
        score = cand.score
        hit = cand.hit
        if enabled(rules, "symbol_match") and hit.symbol:
            last = hit.symbol.rsplit(".", 1)[-1].lower()
            if last in idents or last.replace("_", "") in joined:
                score *= 1.5
        if enabled(rules, "path_match"):
            stem = PurePosixPath(hit.path).stem.lower()
            if (
                stem in idents
                or stem.replace("_", "") in joined
                or (len(split_identifier(stem)) > 1 and all(p in idents for p in split_identifier(stem)))
            ):
                score *= 1.25
        if enabled(rules, "test_penalty") and not wants_tests and is_test_path(hit.path):
            score *= 0.5
        out.append(Candidate(hit, score))
    out.sort(key=lambda c: (-c.score, c.hit.path, c.hit.start_line))
    return out


def merge_and_cap(
    candidates: list[Candidate], k: int, per_file: int, rules: dict[str, bool] | None = None
) -> list[Candidate]:
    """Merge overlapping or adjacent chunks of one file; at most per_file results per file in the top k."""
    taken: list[Candidate] = []
    by_file: dict[str, list[int]] = {}
    for cand in candidates:
        idx = by_file.get(cand.hit.path, [])
        if enabled(rules, "merge_adjacent"):
            merged = False
            for i in idx:
                prior = taken[i].hit
                if cand.hit.start_line <= prior.end_line + 1 and cand.hit.end_line >= prior.start_line - 1:
                    taken[i] = Candidate(_merge(prior, cand.hit), taken[i].score)
                    merged = True
                    break
            if merged:
                continue
        if enabled(rules, "file_cap") and len(idx) >= per_file:
            continue
        by_file.setdefault(cand.hit.path, []).append(len(taken))
        taken.append(cand)
        if len(taken) >= k:
            break
    return taken


def _merge(a: ChunkHit, b: ChunkHit) -> ChunkHit:
    first, second = (a, b) if a.start_line <= b.start_line else (b, a)
    if second.end_line <= first.end_line:
        return first
    first_lines = first.text.split("\n")
    second_lines = second.text.split("\n")
    overlap = first.end_line - second.start_line + 1
    text = "\n".join(first_lines + second_lines[max(overlap, 0) :])
    return replace(first, end_line=second.end_line, text=text, symbol=first.symbol or second.symbol)
