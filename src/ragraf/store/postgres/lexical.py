"""Lexical search: BM25 as FTS5 computes it, scored in SQL over the chunks' tsvector (GIN)."""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg import sql

from ragraf.store.base import ChunkHit
from ragraf.store.postgres.migrations import TS_CONFIG
from ragraf.store.postgres.tokens import match_terms

# BM25 as SQLite's FTS5 computes it (k1, b, body weight 1, symbol weight 4), so both stores rank alike.
BM25_K1 = 1.2
BM25_B = 0.75
# Postings the first lexical pass may score; more only when they could change the top results.
LEXICAL_CANDIDATES = 2000


class LexicalMixin:
    """Lexical search of PostgresStore."""

    repo_id: int
    _read: Callable[..., Any]

    def lexical_search(self, match: str, rev_no: int, limit: int) -> list[ChunkHit]:
        """BM25 (FTS5's formula and weights) over chunk text and symbols, restricted to one revision.

        `match` is the FTS5 string tokens.fts_match builds ("a" OR "b"); each quoted term is one
        operand (a phrase when it holds several tokens), and the operands are OR-ed.
        """
        operands = match_terms(match)
        if not operands or limit <= 0:
            return []
        return self._read(lambda conn: self._lexical(conn, operands, rev_no, limit))

    def _lexical(
        self, conn: psycopg.Connection, operands: list[str], rev_no: int, limit: int
    ) -> list[ChunkHit]:
        terms = self._term_stats(conn, operands)
        if not terms:
            return []
        n_rows, avgdl = terms[0][3], terms[0][4]
        # FTS5's IDF: every stored chunk of the repository counts, older revisions' too.
        idf = [max(math.log((n_rows - t[2] + 0.5) / (t[2] + 0.5)), 1e-6) for t in terms]
        bound = [w * (BM25_K1 + 1) for w in idf]  # no chunk gets more from a term than this
        order = sorted(range(len(terms)), key=lambda k: terms[k][2])
        everything = list(range(len(terms)))
        rows: list[tuple[Any, ...]] = []
        if len(terms) > 1:
            # A query's best chunks mostly hold all its terms, and few chunks do (an AND of
            # postings): scoring those first gives a floor that most other chunks cannot reach.
            match = " & ".join(f"({t[0]})" for t in terms)
            rows = self._score(conn, terms, idf, match, everything, avgdl, rev_no, limit)
        if len(rows) == limit:
            floor = rows[-1][3]
            # Any other chunk that can reach the floor holds one of these sets of terms; an AND of
            # postings is short, so asking for them beats MaxScore's every chunk with a rare term.
            groups = _reaching_groups(everything, bound, floor - 1e-9) or [[k] for k in order]
            if groups != [everything]:
                rows = self._merged(
                    rows, self._score_groups(conn, terms, idf, groups, avgdl, rev_no, limit), limit
                )
        else:
            # MaxScore: candidates come from the rarest terms only, as long as a chunk that holds
            # none of them provably cannot reach the top `limit`.
            essential: list[int] = []
            postings = 0
            for k in order:  # the rarest terms within the budget, at least one
                if essential and postings + terms[k][2] > LEXICAL_CANDIDATES:
                    break
                essential.append(k)
                postings += terms[k][2]
            match = " | ".join(f"({terms[k][0]})" for k in essential)
            rows = self._score(
                conn, terms, idf, match, essential[:1] if len(essential) == 1 else [], avgdl, rev_no, limit
            )
            rest = order[len(essential) :]
            floor = rows[-1][3] if len(rows) == limit else 0.0  # the top `limit` can only get better
            if rest and sum(bound[k] for k in rest) >= floor - 1e-9:
                # A chunk with no essential term reaches the top only if the bounds of the terms
                # it holds add up to the floor: ask for just those combinations of terms.
                groups = _reaching_groups(rest, bound, floor - 1e-9) or [[k] for k in rest]
                rows = self._merged(
                    rows, self._score_groups(conn, terms, idf, groups, avgdl, rev_no, limit), limit
                )
        if not rows:
            return []
        return [ChunkHit(r[0], r[1], r[2], r[5], r[6], r[7], float(r[3]), r[4]) for r in rows]

    def _score_groups(
        self,
        conn: psycopg.Connection,
        terms: list[tuple[str, int, int, int, float]],
        idf: list[float],
        groups: list[list[int]],
        avgdl: float,
        rev_no: int,
        limit: int,
    ) -> list[tuple[Any, ...]]:
        """_score over the chunks holding every term of at least one group (an AND of postings is short)."""
        match = " | ".join("(" + " & ".join(f"({terms[k][0]})" for k in g) + ")" for g in groups)
        held = sorted(set.intersection(*(set(g) for g in groups)))
        return self._score(conn, terms, idf, match, held, avgdl, rev_no, limit)

    @staticmethod
    def _merged(
        rows: list[tuple[Any, ...]], more: list[tuple[Any, ...]], limit: int
    ) -> list[tuple[Any, ...]]:
        """The top `limit` of two passes; both score with every term, so a chunk found twice has one score."""
        merged = {(r[0], r[1]): r for r in rows + more}
        return sorted(merged.values(), key=lambda r: (-r[3], r[1], r[2]))[:limit]

    def _term_stats(
        self, conn: psycopg.Connection, operands: list[str]
    ) -> list[tuple[str, int, int, int, float]]:
        """(tsquery text, nodes, document frequency, chunks in the repository, mean length) per operand."""
        rows = conn.execute(
            "SELECT q::text, numnode(q), d.df, r.n_chunks, r.n_tokens "
            "FROM unnest(%(ops)s::text[]) WITH ORDINALITY AS u (op, i) "
            "CROSS JOIN LATERAL (SELECT to_tsquery(%(cfg)s::regconfig, u.op) AS q) t "
            "CROSS JOIN repositories r "
            "LEFT JOIN lex_df d ON d.repo_id = r.id AND numnode(t.q) = 1 "
            "AND d.lexeme = (tsvector_to_array(to_tsvector(%(cfg)s::regconfig, u.op)))[1] "
            "WHERE r.id = %(repo)s ORDER BY u.i",
            {"ops": operands, "cfg": TS_CONFIG, "repo": self.repo_id},
        ).fetchall()
        terms = []
        for query, nodes, df, n_chunks, n_tokens in rows:
            if nodes == 0:
                continue  # nothing left to match once normalised
            if nodes > 1:  # a phrase: its frequency is counted, phrases are rare in queries
                found = conn.execute(
                    "SELECT count(*) FROM chunks WHERE repo_id = %s AND tsv @@ %s::tsquery",
                    (self.repo_id, query),
                ).fetchone()
                df = found[0] if found else 0
            n = max(int(n_chunks), 1)
            terms.append((query, int(nodes), int(df or 0), n, max(int(n_tokens), 1) / n))
        return terms

    def _score(
        self,
        conn: psycopg.Connection,
        terms: list[tuple[str, int, int, int, float]],
        idf: list[float],
        match: str,
        held: list[int],
        avgdl: float,
        rev_no: int,
        limit: int,
    ) -> list[tuple[Any, ...]]:
        """Top (chunk id, path, start line, score, sha256, end line, symbol, text) of the revision
        among chunks matching the tsquery `match`; every one of them holds the terms `held`."""
        params: dict[str, object] = {
            "repo": self.repo_id,
            "rev": rev_no,
            "essential": match,
            "k1": BM25_K1,
            "b": BM25_B,
            "avgdl": avgdl,
            "limit": limit,
            "over": limit * 3 + 20,  # chunks, over-fetched as SQLite does, for contents at several paths
        }
        for i, (t, w) in enumerate(zip(terms, idf, strict=True)):
            params[f"q{i}"] = t[0]
            params[f"idf{i}"] = w
        # Testing for a term every candidate holds would cost ~10% of the scan, for nothing.
        tested = tuple(t[1] == 1 and i not in held for i, t in enumerate(terms))
        return conn.execute(score_query(tested), params).fetchall()


def _reaching_groups(terms: list[int], bound: list[float], floor: float) -> list[list[int]]:
    """The smallest sets of terms whose score bounds add up to `floor`; empty past 10 terms."""
    if len(terms) > 10:
        return []
    groups: list[list[int]] = []
    for size in range(1, len(terms) + 1):
        for group in itertools.combinations(terms, size):
            if sum(bound[k] for k in group) >= floor and not any(set(g) <= set(group) for g in groups):
                groups.append(list(group))
    return groups


@functools.lru_cache(maxsize=256)
def score_query(tested: tuple[bool, ...]) -> str:
    """The lexical scoring statement for terms q0..qN; tested[i]: term i is checked before it is ranked.

    Composed once per shape: building it from sql.SQL pieces cost a third of a search's client CPU.
    """
    # Per term, tf = body hits + 4 x symbol hits (ts_rank_cd, weights D=.25 A=1, one term per
    # call, times 4), and idf * tf * (k1+1) / (tf + K) is written idf * (k1+1) * (1 - K / (tf + K))
    # so each term's tf is computed once; K = k1 * (1 - b + b * length / avgdl). A chunk
    # without a one-word term scores 0 for it, which a lookup in its tsvector tells at a
    # fraction of ts_rank_cd's cost.
    tf = sql.SQL("ts_rank_cd('{{0.25, 0.25, 0.25, 1}}', c.tsv, {q}::tsquery, 0)")
    word_tf = sql.SQL("CASE WHEN c.tsv @@ {q}::tsquery THEN {tf} ELSE 0 END")
    term = sql.SQL(
        "{idf} * (1 - (%(k1)s * (1 - %(b)s + %(b)s * c.lex_len / %(avgdl)s)) / "
        "(4 * {tf} + %(k1)s * (1 - %(b)s + %(b)s * c.lex_len / %(avgdl)s)))"
    )
    parts = []
    for i, check in enumerate(tested):
        q = sql.Placeholder(f"q{i}")
        rank = tf.format(q=q)
        parts.append(
            term.format(idf=sql.Placeholder(f"idf{i}"), tf=word_tf.format(q=q, tf=rank) if check else rank)
        )
    # Candidates come from the GIN index alone, scored and sorted; the revision test then
    # probes the manifest only for the best of them, in order, until `over` pass (the
    # retained revisions share most contents, so that is seldom many more). OFFSET 0 keeps
    # the planner from merging the steps or driving the test from the manifest side.
    return (
        sql.SQL(
            "WITH top AS MATERIALIZED (SELECT s.* FROM ("
            " SELECT c.id, c.content_id, c.start_line, (%(k1)s + 1) * ({score}) AS score FROM chunks c"
            " WHERE c.repo_id = %(repo)s AND c.tsv @@ %(essential)s::tsquery ORDER BY score DESC OFFSET 0) s"
            " WHERE EXISTS (SELECT 1 FROM manifest m WHERE m.repo_id = %(repo)s AND m.rev_no = %(rev)s"
            " AND m.content_id = s.content_id OFFSET 0) LIMIT %(over)s"
            ") SELECT t.id, m.path, t.start_line, t.score, m.sha256, c.end_line, c.symbol, c.text FROM top t "
            "CROSS JOIN LATERAL (SELECT path, sha256 FROM manifest WHERE repo_id = %(repo)s AND rev_no = %(rev)s "
            "AND content_id = t.content_id OFFSET 0) m JOIN chunks c ON c.id = t.id "
            "ORDER BY t.score DESC, m.path, t.start_line LIMIT %(limit)s"
        )
        .format(score=sql.SQL(" + ").join(parts))
        .as_string()
    )
