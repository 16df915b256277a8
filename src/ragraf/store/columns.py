"""What the SQLite and PostgreSQL stores write alike: column lists, the ledger's dedupe key, rows to records."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ragraf.store.base import DriftEntry, DriftEvent, Revision

REVISION_COLUMNS = "rev_no, rev, corpus_hash, created_at, index_version, git_head, git_branch, files, chunks"
LEDGER_COLUMNS = (
    "entry_id, rev, change, path, detected_by, detected_at, old_sha256, new_sha256, affected_nodes, "
    "affected_symbols, dedupe_key"
)


def dedupe_key(e: DriftEvent) -> str:
    """One key per (revision, path, change, old content, new content): who saw it does not matter."""
    raw = f"{e.rev}\0{e.path}\0{e.change}\0{e.old_sha256 or ''}\0{e.new_sha256 or ''}"
    return hashlib.sha1(raw.encode("utf-8", errors="surrogateescape")).hexdigest()


def drift_entry(row: tuple[Any, ...]) -> DriftEntry:
    """A ledger or archive row (LEDGER_COLUMNS, then closed_by for the archive) as a DriftEntry; the
    affected lists are JSON text in SQLite and already decoded from jsonb in PostgreSQL."""
    closed = row[11] if len(row) > 11 else None
    nodes, symbols = (json.loads(v) if isinstance(v, str) else list(v) for v in row[8:10])
    return DriftEntry(*row[:8], nodes, symbols, row[10], closed)


def revision_values(rev: Revision) -> tuple[object, ...]:
    """A revision's values in REVISION_COLUMNS order."""
    return (
        rev.rev_no, rev.rev, rev.corpus_hash, rev.created_at, rev.index_version,
        rev.git_head, rev.git_branch, rev.files, rev.chunks,
    )  # fmt: skip
