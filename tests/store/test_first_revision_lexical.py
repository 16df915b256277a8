"""A store's first revision: its lexical rows go straight into the lexical index, and what it leaves
out (a killed run's contents) neither answers nor shifts the BM25 statistics of what it holds."""

from __future__ import annotations

from pathlib import Path

from store.sample_index import bundle, commit_files

from ragraf.config import Settings
from ragraf.store.base import LEFTOVER_CONTENTS
from ragraf.store.sqlite import SqliteStore

KEPT = {
    "src/pool.py": "def acquire_connection(pool):\n    return pool.connection_for_request()\n",
    "src/retry.py": "def retry_connection(times):\n    '''try the connection again'''\n    return times\n",
}
# Stored by a first run killed before its commit; its file is gone by the next run.
ORPHAN = "def drop_connection(conn):\n    '''zanzibar: the connection is dropped'''\n    return conn\n"


def _scores(store: SqliteStore, rev_no: int, match: str) -> list[tuple[str, float]]:
    return [(h.path, round(h.score, 9)) for h in store.lexical_search(match, rev_no, 10)]


def test_a_first_revision_holds_the_lexical_rows_of_its_own_contents_only(
    tmp_path: Path, settings: Settings
) -> None:
    store = SqliteStore(tmp_path / "index.db", create=True)
    store.add_contents([bundle(settings, "src/gone.py", ORPHAN)])
    rev = commit_files(store, settings, KEPT)
    assert store.db.execute("SELECT count(*) FROM pending_fts").fetchone()[0] == 0
    # The orphan content itself waits for gc; its lexical rows left with the commit.
    assert [p for p in store.consistency_problems(rev.rev_no, None) if LEFTOVER_CONTENTS not in p] == []
    assert _scores(store, rev.rev_no, '"zanzibar"') == []
    clean = SqliteStore(tmp_path / "clean.db", create=True)
    clean_rev = commit_files(clean, settings, KEPT)
    for match in ('"connection"', '"connection" OR "retry"', '"pool"'):
        found = _scores(store, rev.rev_no, match)
        assert found and found == _scores(clean, clean_rev.rev_no, match)


def test_contents_stored_beside_a_revision_wait_for_their_own(tmp_path: Path, settings: Settings) -> None:
    store = SqliteStore(tmp_path / "index.db", create=True)
    rev = commit_files(store, settings, KEPT)
    before = _scores(store, rev.rev_no, '"connection"')
    store.add_contents([bundle(settings, "src/gone.py", ORPHAN)])  # a later run, not committed yet
    assert store.db.execute("SELECT count(*) FROM pending_fts").fetchone()[0] > 0
    assert _scores(store, rev.rev_no, '"connection"') == before
    nxt = commit_files(store, settings, {**KEPT, "src/gone.py": ORPHAN})
    assert store.db.execute("SELECT count(*) FROM pending_fts").fetchone()[0] == 0
    assert [p for p, _ in _scores(store, nxt.rev_no, '"zanzibar"')] == ["src/gone.py"]
    assert store.consistency_problems(nxt.rev_no, None) == []
