"""An index written by an older ragraf is migrated in place, step by step, and keeps answering."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from support import SAMPLE, write

from ragraf import Index
from ragraf.store.sqlite_migrations import APPLICATION_ID, MIGRATIONS


def test_an_index_at_schema_6_gains_the_retained_lexical_index_and_keeps_its_answers(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write(root, SAMPLE)
    idx = Index.open(root, embedder="none")
    idx.index()
    before = [r.path for r in idx.search("TCPConnector", mode="lexical").results]
    db_path = idx.settings.db_path
    idx.close()
    # Take the file back to schema 6, as a ragraf of that day left it (every lexical row in chunks_fts).
    db = sqlite3.connect(db_path)
    db.execute("INSERT INTO chunks_fts (rowid, body, symbol) SELECT rowid, body, symbol FROM chunks_fts_retained")
    db.execute("DROP TABLE chunks_fts_retained")
    db.execute("PRAGMA user_version = 6")
    db.commit()
    db.close()
    idx = Index.open(root, embedder="none")
    assert [r.path for r in idx.search("TCPConnector", mode="lexical").results] == before
    db = sqlite3.connect(db_path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS) == 7
    assert db.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    assert db.execute("SELECT count(*) FROM chunks_fts_retained").fetchone()[0] == 0
    db.close()
    check = idx.doctor(check=True).to_dict()
    assert next(c for c in check["results"] if c["check"] == "consistency")["ok"], check
