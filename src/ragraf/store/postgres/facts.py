"""Facts and references of a revision: definitions, uses and a file's facts status."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from psycopg import sql

from ragraf.store.base import FactHit, ref_hits

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

    def ref_uses(self, rev_no: int) -> list[tuple[str, str, int]]:
        """(path, name, uses) of every name each file of the revision references."""
        rows = self._rows(
            "SELECT m.path, r.name, json_array_length(r.sites::json) FROM manifest m "
            "JOIN ref_sites r ON r.content_id = m.content_id AND r.repo_id = m.repo_id "
            "WHERE m.repo_id = %s AND m.rev_no = %s",
            (self.repo_id, rev_no),
        )
        return [(path, name, int(n)) for path, name, n in rows]

    def facts_status(self, rev_no: int, path: str) -> str | None:
        row = self._row(
            "SELECT c.facts_status FROM manifest m JOIN contents c ON c.id = m.content_id "
            "WHERE m.repo_id = %s AND m.rev_no = %s AND m.path = %s",
            (self.repo_id, rev_no, path),
        )
        return row[0] if row else None
