"""Facts and references of a revision: definitions, uses and a file's facts status."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from psycopg import sql

from ragraf.store.base import FactHit, MapFacts, ref_hits

_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_ASCII_LOWER = str.maketrans(_UPPER, _UPPER.lower())


class FactsMixin:
    """Fact queries of PostgresStore."""

    repo_id: int
    _rows: Callable[..., list[tuple[Any, ...]]]
    _row: Callable[..., tuple[Any, ...] | None]

    def find_facts(
        self,
        rev_no: int,
        fact_kind: str,
        name: str | None = None,
        path: str | None = None,
        exact: bool = True,
        limit: int = 1000,
    ) -> list[FactHit]:
        """Facts of one kind in a revision, by name (exact or case-insensitive) and/or path."""
        if fact_kind == "ref":
            return self._find_refs(rev_no, name, path, exact, limit)
        where = [sql.SQL("m.repo_id = %s AND m.rev_no = %s AND f.kind = %s")]
        args: list[object] = [self.repo_id, rev_no, fact_kind]
        if name is not None:
            where.append(sql.SQL("f.name_lower = %s"))
            args.append(name.lower())
            if exact:
                where.append(sql.SQL("f.name = %s"))
                args.append(name)
        if path is not None:
            where.append(sql.SQL("m.path = %s"))
            args.append(path)
        query = sql.SQL(
            "SELECT f.kind, f.name, f.def_kind, m.path, f.line, f.start_line, f.end_line, f.container, "
            "f.signature, f.is_call, f.body_hash FROM facts f JOIN manifest m ON m.content_id = f.content_id "
            "WHERE {} ORDER BY m.path, f.line, f.id LIMIT %s"
        ).format(sql.SQL(" AND ").join(where))
        rows = self._rows(query, (*args, limit))
        return [FactHit(*r[:9], bool(r[9]), r[10]) for r in rows]

    def _find_refs(
        self, rev_no: int, name: str | None, path: str | None, exact: bool, limit: int
    ) -> list[FactHit]:
        """Each use of the packed references, by path, then line, cut at `limit` as SQLite's store does."""
        where = [sql.SQL("r.repo_id = %s AND m.repo_id = %s AND m.rev_no = %s")]
        args: list[object] = [self.repo_id, self.repo_id, rev_no]
        if name is not None:
            if exact:
                where.append(sql.SQL("r.name = %s"))
                args.append(name)
            else:
                # SQLite's NOCASE folds ASCII letters only, whatever the database's collation; no
                # caller asks so, so it may scan the repository's names.
                where.append(sql.SQL("translate(r.name, %s, %s) = %s"))
                args += [_UPPER, _UPPER.lower(), name.translate(_ASCII_LOWER)]
        if path is not None:
            where.append(sql.SQL("m.path = %s"))
            args.append(path)
        # Byte order ("C") is SQLite's and Python's order of paths, which the cut below relies on.
        query = sql.SQL(
            "SELECT r.name, m.path, r.sites FROM ref_sites r JOIN manifest m ON m.content_id = r.content_id "
            'WHERE {} ORDER BY m.path COLLATE "C", r.ord'
        ).format(sql.SQL(" AND ").join(where))
        return ref_hits(self._rows(query, args), limit)

    def ref_counts(self, rev_no: int) -> dict[str, int]:
        """Each name the revision's files reference, and in how many of its contents."""
        rows = self._rows(
            "SELECT r.name, count(*) FROM ref_sites r WHERE r.repo_id = %s AND r.content_id IN "
            "(SELECT content_id FROM manifest WHERE repo_id = %s AND rev_no = %s) GROUP BY r.name",
            (self.repo_id, self.repo_id, rev_no),
        )
        return {name: int(n) for name, n in rows}

    def map_facts(self, rev_no: int, kinds: Iterable[str]) -> MapFacts:
        """A repo map's reading of a revision (see MapFacts), each table's rows of the revision's contents."""
        import numpy as np

        paths: dict[int, list[str]] = {}
        for content_id, path in self._rows(
            "SELECT content_id, path FROM manifest WHERE repo_id = %s AND rev_no = %s", (self.repo_id, rev_no)
        ):
            paths.setdefault(content_id, []).append(path)
        held = "content_id IN (SELECT content_id FROM manifest WHERE repo_id = %s AND rev_no = %s)"
        defs = self._rows(
            "SELECT content_id, line, (container IS NULL)::int, name, def_kind, coalesce(signature, '') "
            f"FROM facts WHERE repo_id = %s AND kind = 'def' AND def_kind = ANY(%s) AND {held} ORDER BY id",
            (self.repo_id, sorted(kinds), self.repo_id, rev_no),
        )
        uses = self._rows(
            f"SELECT content_id, json_array_length(sites::json), name FROM ref_sites WHERE repo_id = %s AND {held}",
            (self.repo_id, self.repo_id, rev_no),
        )
        d = [list(c) for c in zip(*defs, strict=True)] or [[]] * 6
        u = [list(c) for c in zip(*uses, strict=True)] or [[]] * 3
        ints = [np.asarray(c, dtype=np.int64) for c in (*d[:3], *u[:2])]
        names = list(dict.fromkeys([*d[3], *u[2]]))  # numbered here: this store keeps no numbers
        number = {n: i for i, n in enumerate(names)}
        d_name, u_name = (np.fromiter(map(number.__getitem__, c), np.int64, len(c)) for c in (d[3], u[2]))
        written = np.arange(len(d_name))  # read ORDER BY id
        return MapFacts(
            paths, names, ints[0], d_name, d[4], ints[1], ints[2], d[5], written, ints[3], u_name, ints[4]
        )

    def facts_status(self, rev_no: int, path: str) -> str | None:
        row = self._row(
            "SELECT c.facts_status FROM manifest m JOIN contents c ON c.id = m.content_id "
            "WHERE m.repo_id = %s AND m.rev_no = %s AND m.path = %s",
            (self.repo_id, rev_no, path),
        )
        return row[0] if row else None
