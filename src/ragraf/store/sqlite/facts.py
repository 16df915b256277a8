"""Facts and references of a revision: definitions, uses and a file's facts status."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any

from ragraf.store.base import FactHit, MapFacts, ref_hits


class FactsMixin:
    """Fact queries of SqliteStore."""

    db: sqlite3.Connection

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
        where = ["m.rev_no = ?", "f.kind = ?"]
        args: list[object] = [rev_no, fact_kind]
        if name is not None:
            where.append("f.name_lower = ?")
            args.append(name.lower())
            if exact:
                where.append("f.name = ?")
                args.append(name)
        if path is not None:
            where.append("m.path = ?")
            args.append(path)
        rows = self.db.execute(
            "SELECT f.kind, f.name, f.def_kind, m.path, f.line, f.start_line, f.end_line, f.container, f.signature, "
            "f.is_call, f.body_hash FROM facts f "
            f"{_fact_join(name, path)} ON m.content_id = f.content_id "
            f"WHERE {' AND '.join(where)} ORDER BY m.path, f.line LIMIT ?",
            (*args, limit),
        ).fetchall()
        return [
            FactHit(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], bool(r[9]), r[10]) for r in rows
        ]

    def _find_refs(
        self, rev_no: int, name: str | None, path: str | None, exact: bool, limit: int
    ) -> list[FactHit]:
        where = ["m.rev_no = ?"]
        args: list[object] = [rev_no]
        if name is not None:
            where.append("r.name = ?" if exact else "r.name = ? COLLATE NOCASE")
            args.append(name)
        if path is not None:
            where.append("m.path = ?")
            args.append(path)
        rows = self.db.execute(
            f"SELECT r.name, m.path, r.sites FROM ref_sites r {_fact_join(name, path)} ON m.content_id = r.content_id "
            f"WHERE {' AND '.join(where)} ORDER BY m.path, r.rowid",
            args,
        )
        return ref_hits(rows, limit)

    def ref_counts(self, rev_no: int) -> dict[str, int]:
        """Each name the revision's files reference, and in how many of its contents."""
        rows = self.db.execute(
            "SELECT r.name, count(*) FROM ref_sites r WHERE r.content_id IN "
            "(SELECT DISTINCT content_id FROM manifest WHERE rev_no = ?) GROUP BY r.name",
            (rev_no,),
        )
        return dict(rows)

    def map_facts(self, rev_no: int, kinds: Iterable[str]) -> MapFacts:
        """A repo map's reading of a revision (see MapFacts): each table read whole in its own
        order (joined per row to the manifest, SQLite's plan is a lookup per row, minutes on a
        large index) and matched to the revision's paths by content. The definitions come from
        schema 15's index alone, names as schema 16's numbers; the names are read last, so they
        hold every number read before them."""
        import numpy as np

        paths: dict[int, list[str]] = {}
        for content_id, path in self.db.execute(
            "SELECT content_id, path FROM manifest WHERE rev_no = ?", (rev_no,)
        ):
            paths.setdefault(content_id, []).append(path)
        kinds = sorted(kinds)
        (d_order, d_content, d_line, d_top, d_name), (d_kind, d_signature) = _columns(
            self.db,
            ["rowid", "content_id", "line", "container IS NULL", "coalesce(name_id, -1)"],
            ["def_kind", "coalesce(signature, '')"],
            f"facts WHERE def_kind IS NOT NULL AND kind = 'def' AND def_kind IN ({','.join('?' * len(kinds))})",
            kinds,
        )
        (u_content, u_sites, u_name), _ = _columns(
            self.db, ["content_id", "uses", "coalesce(name_id, -1)"], [], "ref_sites", []
        )
        (ids,), (held,) = _columns(self.db, ["id"], ["name"], "names", [])
        names = np.full(int(ids.max()) + 1 if len(ids) else 0, "", dtype=object)
        names[ids] = np.asarray(held, dtype=object)  # each at its number, in whatever order they came
        d_columns = (d_content, d_name, d_kind, d_line, d_top, d_signature, d_order)
        return MapFacts(paths, names.tolist(), *d_columns, u_content, u_name, u_sites)

    def facts_status(self, rev_no: int, path: str) -> str | None:
        row = self.db.execute(
            "SELECT c.facts_status FROM manifest m JOIN contents c ON c.id = m.content_id "
            "WHERE m.rev_no = ? AND m.path = ?",
            (rev_no, path),
        ).fetchone()
        return row[0] if row else None


def _fact_join(name: str | None, path: str | None) -> str:
    """How facts meet the manifest: by a name, facts first (their name index, then one manifest
    probe each; CROSS JOIN fixes that order); by a path, the path's manifest row first."""
    if path is not None:
        return "JOIN manifest m"
    return f"{'CROSS ' if name is not None else ''}JOIN manifest m"


def _columns(
    db: sqlite3.Connection, numbers: list[str], texts: list[str], source: str, args: list[str]
) -> tuple[list[Any], list[list[str]]]:
    """Columns of `SELECT ... FROM source`: integers as numpy arrays, texts as lists. Read as one
    row of concatenated values, one Python object per column instead of one per value; should a
    text hold the separator (no name or kind does), read row by row instead."""
    import numpy as np

    packed = [f"group_concat({c})" for c in numbers] + [f"group_concat({c}, char(31))" for c in texts]
    row = db.execute(f"SELECT {', '.join(packed)}, count(*) FROM {source}", args).fetchone()
    n = row[-1]
    ints = [np.fromstring(v or "", dtype=np.int64, sep=",") for v in row[: len(numbers)]]
    strs = [v.split("\x1f") if n else [] for v in row[len(numbers) : -1]]
    if all(len(c) == n for c in [*ints, *strs]):
        return ints, strs
    rows = db.execute(f"SELECT {', '.join(numbers + texts)} FROM {source}", args).fetchall()
    cols = list(zip(*rows, strict=True))
    ints = [np.asarray(c, dtype=np.int64) for c in cols[: len(numbers)]]
    return ints, [list(c) for c in cols[len(numbers) :]]
