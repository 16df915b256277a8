"""The drift ledger: registering drift events, open entries and those archived when a revision closed them."""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager

from ragraf.store.base import DriftEntry, DriftEvent
from ragraf.store.columns import LEDGER_COLUMNS, dedupe_key, drift_entry


class LedgerMixin:
    """The drift ledger of SqliteStore."""

    db: sqlite3.Connection
    transaction: Callable[[], AbstractContextManager[sqlite3.Connection]]

    def register_drift(self, events: list[DriftEvent]) -> int:
        """Append events to the ledger; an event registered twice adds nothing. Returns entries added."""
        if not events:
            return 0
        keys = [dedupe_key(e) for e in events]
        known = set()
        for i in range(0, len(keys), 500):
            part = keys[i : i + 500]
            known.update(
                r[0]
                for r in self.db.execute(
                    f"SELECT dedupe_key FROM drift_ledger WHERE dedupe_key IN ({','.join('?' * len(part))})",
                    part,
                )
            )
        fresh = [e for e, k in zip(events, keys, strict=True) if k not in known]
        if not fresh:
            return 0
        with self.transaction() as db:
            # Under the write lock, so no revision commits meanwhile: drift against a revision its view
            # has moved past is late news (a reader that began before the commit), already archived
            # or stale; opened again it would stand as open drift until the next revision.
            latest = {
                rev
                for rev in {e.rev for e in fresh}
                if db.execute(
                    "SELECT 1 FROM revisions r WHERE r.rev = ? AND r.rev_no = "
                    "(SELECT max(n.rev_no) FROM revisions n WHERE n.view = r.view)",
                    (rev,),
                ).fetchone()
            }
            return self._insert_drift(db, [e for e in fresh if e.rev in latest])

    def _insert_drift(self, db: sqlite3.Connection, events: list[DriftEvent]) -> int:
        now = dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")
        added = 0
        for e in events:
            nodes: list[int] = []
            symbols: list[dict[str, object]] = []
            if e.old_content_id is not None:
                nodes = [
                    r[0]
                    for r in db.execute(
                        "SELECT id FROM chunks WHERE content_id = ? ORDER BY ord", (e.old_content_id,)
                    )
                ]
                symbols = [
                    {"name": f"{r[1]}.{r[0]}" if r[1] else r[0], "kind": r[2], "line": r[3]}
                    for r in db.execute(
                        "SELECT name, container, def_kind, line FROM facts WHERE content_id = ? AND kind = 'def' "
                        "ORDER BY line",
                        (e.old_content_id,),
                    )
                ]
            cur = db.execute(
                "INSERT OR IGNORE INTO drift_ledger (rev, change, path, detected_by, detected_at, old_sha256, "
                "new_sha256, affected_nodes, affected_symbols, dedupe_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    e.rev,
                    e.change,
                    e.path,
                    e.detected_by,
                    now,
                    e.old_sha256,
                    e.new_sha256,
                    json.dumps(nodes),
                    json.dumps(symbols),
                    dedupe_key(e),
                ),
            )
            added += cur.rowcount
        return added

    def open_entries(self, rev: str | None = None) -> list[DriftEntry]:
        sql = (
            f"SELECT {LEDGER_COLUMNS} FROM drift_ledger"
            + (" WHERE rev = ?" if rev else "")
            + " ORDER BY entry_id"
        )
        return [drift_entry(r) for r in self.db.execute(sql, (rev,) if rev else ())]

    def open_summary(self, rev: str, paths: list[str]) -> tuple[int, int]:
        """(open entries of rev, affected symbols of the latest entry of each given path)."""
        count = self.db.execute("SELECT count(*) FROM drift_ledger WHERE rev = ?", (rev,)).fetchone()[0]
        symbols = 0
        for path in paths:
            row = self.db.execute(
                "SELECT json_array_length(affected_symbols) FROM drift_ledger WHERE rev = ? AND path = ? "
                "ORDER BY entry_id DESC LIMIT 1",
                (rev, path),
            ).fetchone()
            symbols += row[0] if row else 0
        return count, symbols

    def archived_entries(self, closed_by: list[str]) -> list[DriftEntry]:
        if not closed_by:
            return []
        rows = self.db.execute(
            f"SELECT {LEDGER_COLUMNS}, closed_by FROM drift_archive "
            f"WHERE closed_by IN ({','.join('?' * len(closed_by))}) ORDER BY entry_id",
            closed_by,
        ).fetchall()
        return [drift_entry(r) for r in rows]
