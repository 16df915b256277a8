"""The drift ledger: registering drift, open entries, and the archive a new revision closes them into."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

import psycopg

from ragraf.store.base import DriftEntry, DriftEvent
from ragraf.store.columns import LEDGER_COLUMNS, dedupe_key, drift_entry
from ragraf.store.postgres.tokens import _clean


class LedgerMixin:
    """The drift ledger of PostgresStore."""

    repo_id: int
    _rows: Callable[..., list[tuple[Any, ...]]]
    _row: Callable[..., tuple[Any, ...] | None]
    _tx: Callable[..., AbstractContextManager[psycopg.Connection]]

    def register_drift(self, events: list[DriftEvent]) -> int:
        """Append events to the ledger; an event registered twice adds nothing. Returns entries added."""
        if not events:
            return 0
        keys = [dedupe_key(e) for e in events]
        # Known events cost a read, not a write: a read-only user still answers.
        known = {
            r[0]
            for r in self._rows(
                "SELECT dedupe_key FROM drift_ledger WHERE repo_id = %s AND dedupe_key = ANY(%s)",
                (self.repo_id, keys),
            )
        }
        fresh = [e for e, k in zip(events, keys, strict=True) if k not in known]
        if not fresh:
            return 0
        with self._tx() as conn:
            # Drift against a revision the repository has moved past is late news (a reader that began
            # before the commit), already archived or stale: it opens nothing. (A commit in flight
            # while this runs can still leave one such entry open, until the next revision archives it.)
            row = conn.execute(
                "SELECT rev FROM revisions WHERE repo_id = %s ORDER BY rev_no DESC LIMIT 1", (self.repo_id,)
            ).fetchone()
            return self._insert_drift(conn, [e for e in fresh if row is not None and e.rev == row[0]])

    def _insert_drift(self, conn: psycopg.Connection, events: Sequence[DriftEvent]) -> int:
        # The first revision's events name no revision (nothing to drift from); SQLite's
        # INSERT OR IGNORE drops them on its NOT NULL, and so do we.
        events = [e for e in events if e.rev is not None]
        if not events:
            return 0
        now = dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")
        old_ids = sorted({e.old_content_id for e in events if e.old_content_id is not None})
        nodes: dict[int, list[int]] = {}
        symbols: dict[int, list[dict[str, object]]] = {}
        if old_ids:
            for content_id, chunk_ids in conn.execute(
                "SELECT content_id, array_agg(id ORDER BY ord) FROM chunks "
                "WHERE content_id = ANY(%s) AND repo_id = %s GROUP BY content_id",
                (old_ids, self.repo_id),
            ):
                nodes[content_id] = list(chunk_ids)
            for content_id, name, container, kind, line in conn.execute(
                "SELECT content_id, name, container, def_kind, line FROM facts "
                "WHERE content_id = ANY(%s) AND repo_id = %s AND kind = 'def' ORDER BY content_id, line, id",
                (old_ids, self.repo_id),
            ):
                symbols.setdefault(content_id, []).append(
                    {"name": f"{container}.{name}" if container else name, "kind": kind, "line": line}
                )
        columns: list[list[object]] = [[] for _ in range(9)]
        for e in events:
            row = (
                e.rev,
                e.change,
                _clean(e.path),
                e.detected_by,
                e.old_sha256,
                e.new_sha256,
                json.dumps(nodes.get(e.old_content_id, []) if e.old_content_id is not None else []),
                json.dumps(symbols.get(e.old_content_id, []) if e.old_content_id is not None else []),
                dedupe_key(e),
            )
            for column, value in zip(columns, row, strict=True):
                column.append(value)
        added = conn.execute(
            "INSERT INTO drift_ledger (repo_id, rev, change, path, detected_by, detected_at, old_sha256, "
            "new_sha256, affected_nodes, affected_symbols, dedupe_key) "
            "SELECT %s, u.rev, u.change, u.path, u.detected_by, %s, u.old_sha256, u.new_sha256, "
            "u.nodes::json, u.symbols::json, u.dedupe_key "
            "FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[], "
            "%s::text[], %s::text[]) WITH ORDINALITY "
            "AS u (rev, change, path, detected_by, old_sha256, new_sha256, nodes, symbols, dedupe_key, ord) "
            "ORDER BY u.ord ON CONFLICT (repo_id, dedupe_key) DO NOTHING RETURNING entry_id",
            (self.repo_id, now, *columns),
        ).fetchall()
        return len(added)

    def open_entries(self, rev: str | None = None) -> list[DriftEntry]:
        if rev:
            rows = self._rows(
                f"SELECT {LEDGER_COLUMNS} FROM drift_ledger WHERE repo_id = %s AND rev = %s ORDER BY entry_id",
                (self.repo_id, rev),
            )
        else:
            rows = self._rows(
                f"SELECT {LEDGER_COLUMNS} FROM drift_ledger WHERE repo_id = %s ORDER BY entry_id",
                (self.repo_id,),
            )
        return [drift_entry(r) for r in rows]

    def open_summary(self, rev: str, paths: list[str]) -> tuple[int, int]:
        """(open entries of rev, affected symbols of the latest entry of each given path)."""
        row = self._row(
            "SELECT (SELECT count(*) FROM drift_ledger WHERE repo_id = %(repo)s AND rev = %(rev)s), "
            "(SELECT coalesce(sum(json_array_length(l.affected_symbols)), 0) FROM unnest(%(paths)s::text[]) p (path) "
            " CROSS JOIN LATERAL (SELECT affected_symbols FROM drift_ledger WHERE repo_id = %(repo)s "
            "  AND rev = %(rev)s AND path = p.path ORDER BY entry_id DESC LIMIT 1) l)",
            {"repo": self.repo_id, "rev": rev, "paths": paths},  # type: ignore[arg-type]
        )
        assert row is not None
        return int(row[0]), int(row[1])

    def archived_entries(self, closed_by: list[str]) -> list[DriftEntry]:
        if not closed_by:
            return []
        rows = self._rows(
            f"SELECT {LEDGER_COLUMNS}, closed_by FROM drift_archive WHERE repo_id = %s AND closed_by = ANY(%s) "
            "ORDER BY entry_id",
            (self.repo_id, closed_by),
        )
        return [drift_entry(r) for r in rows]

    def _archive_ledger(self, conn: psycopg.Connection, closer: str, at: str) -> None:
        # DELETE .. RETURNING moves exactly the rows it removes: an entry a reader registers meanwhile
        # stays open for the next revision instead of vanishing between a copy and a delete.
        conn.execute(
            "WITH moved AS (DELETE FROM drift_ledger WHERE repo_id = %s RETURNING *) "
            "INSERT INTO drift_archive (repo_id, entry_id, rev, change, path, detected_by, detected_at, "
            "old_sha256, new_sha256, affected_nodes, affected_symbols, dedupe_key, closed_by, archived_at) "
            f"SELECT repo_id, {LEDGER_COLUMNS}, %s, %s FROM moved ORDER BY entry_id ON CONFLICT DO NOTHING",
            (self.repo_id, closer, at),
        )
