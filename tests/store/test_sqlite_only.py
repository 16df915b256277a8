"""Behaviour of the SQLite store alone: migrating an older index in place, and remembering coverage."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest
from store.sample_index import CHUNKER, SQLITE_MANIFEST_PER_REVISION, SQLITE_NAMES_NUMBERED
from support import SAMPLE, write

from ragraf import Index
from ragraf.store import ChunkRecord, ContentBundle, ManifestEntry, NewRevision
from ragraf.store import sqlite as sq
from ragraf.store.sqlite.migrations import APPLICATION_ID, MIGRATIONS
from ragraf.store.sqlite.sql import unpack_text
from ragraf.tokens import index_text


def _found(idx: Index) -> list[str]:
    return [r.path for r in idx.search("TCPConnector", mode="lexical").results]


# Before schema 9, references were one row per use.
_REFS_AS_ROWS = (
    "CREATE TABLE refs (content_id INTEGER NOT NULL, name TEXT NOT NULL, container TEXT, line INTEGER NOT NULL, "
    "is_call INTEGER NOT NULL)",
    "INSERT INTO refs SELECT r.content_id, r.name, json_extract(s.value, '$[2]'), json_extract(s.value, '$[0]'), "
    "json_extract(s.value, '$[1]') FROM ref_sites r, json_each(r.sites) s",
    "DROP TABLE ref_sites",
    "CREATE INDEX refs_by_name ON refs (name)",
)


# Before schema 10, the lexical tables held each row's body and chunk text was plain.
_FTS = "USING fts5 (body, symbol, tokenize = 'porter unicode61 remove_diacritics 2')"
_LEXICAL_WITH_CONTENT = tuple(
    statement
    for table in ("chunks_fts", "chunks_fts_retained")
    for statement in (
        f"CREATE VIRTUAL TABLE {table}_old {_FTS}",
        f"INSERT INTO {table}_old (rowid, body, symbol) SELECT f.rowid, fts_body(k.text, k.symbol), "
        f"coalesce(k.symbol, '') FROM {table} f JOIN chunks k ON k.id = f.rowid",
        f"DROP TABLE {table}",
        f"ALTER TABLE {table}_old RENAME TO {table}",
    )
) + ("UPDATE chunks SET text = unpack_text(text)",)


def _back_to_schema(version: int, db_path: Path, *statements: str) -> None:
    """Mark the file as an older schema, after statements that make it look as a ragraf of that day
    left it."""
    db = sqlite3.connect(db_path)
    db.create_function("unpack_text", 1, unpack_text)
    db.create_function(
        "fts_body", 2, lambda text, symbol: index_text(unpack_text(text) + "\n" + (symbol or ""))
    )
    undo = (
        *(SQLITE_NAMES_NUMBERED if version < 16 else ()),
        *(("DROP INDEX facts_for_map",) if version < 15 else ()),
        *(("DROP INDEX ref_sites_by_content",) if version < 14 else ()),
        *(("ALTER TABLE ref_sites DROP COLUMN uses",) if version < 13 else ()),
        *(SQLITE_MANIFEST_PER_REVISION if version < 12 else ()),
        *(_LEXICAL_WITH_CONTENT if version < 10 else ()),
        *(_REFS_AS_ROWS if version < 9 else ()),
    )
    for statement in (*undo, *statements):
        db.execute(statement)
    db.execute(f"PRAGMA user_version = {version}")
    db.commit()
    db.close()


def _back_to_schema_6(db_path: Path, *statements: str) -> None:
    _back_to_schema(6, db_path, *statements)


def _assert_consistent(idx: Index) -> None:
    check = idx.doctor(check=True).to_dict()
    assert next(c for c in check["results"] if c["check"] == "consistency")["ok"], check


def test_an_index_at_schema_6_gains_the_retained_lexical_index_and_keeps_its_answers(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write(root, SAMPLE)
    idx = Index.open(root, embedder="none")
    idx.index()
    before = _found(idx)
    idx.close()
    _back_to_schema_6(  # every lexical row in chunks_fts, manifests indexed by content
        idx.settings.db_path,
        "INSERT INTO chunks_fts (rowid, body, symbol) SELECT rowid, body, symbol FROM chunks_fts_retained",
        "DROP TABLE chunks_fts_retained",
        "DROP INDEX manifest_by_revision",
        "CREATE INDEX manifest_by_content ON manifest (content_id, rev_no)",
    )
    idx = Index.open(root, embedder="none")
    assert _found(idx) == before
    db = sqlite3.connect(idx.settings.db_path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS) == 16
    assert db.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    assert db.execute("SELECT count(*) FROM chunks_fts_retained").fetchone()[0] == 0
    indexes = {
        r[0]
        for r in db.execute(
            "SELECT name FROM sqlite_master WHERE tbl_name IN ('manifest', 'manifest_rows') AND type = 'index'"
        )
    }
    assert indexes == {"manifest_rows_by_revision", "manifest_rows_by_content"}
    db.close()
    _assert_consistent(idx)


def _references(idx: Index, name: str) -> list[tuple[str, int, str | None, str]]:
    hits = idx.find_references(name).results
    return [(h["path"], h["line"], h["container"], h["kind"]) for h in hits]


def test_an_index_at_schema_8_packs_its_references_by_name_and_answers_the_same(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    many = "".join(
        f"def use_{i}():\n    resolve_host('h{i}')\n    return resolve_host\n\n\n" for i in range(30)
    )
    write(root, {**SAMPLE, "src/app/many.py": f"from app.server import resolve_host\n\n\n{many}"})
    idx = Index.open(root, embedder="none")
    idx.index()
    before = {name: _references(idx, name) for name in ("resolve_host", "TCPConnector", "gethostbyname")}
    assert len(before["resolve_host"]) > 60 and {kind for *_, kind in before["resolve_host"]} == {
        "call",
        "reference",
    }
    idx.close()
    _back_to_schema(8, idx.settings.db_path)
    db = sqlite3.connect(idx.settings.db_path)
    uses = db.execute("SELECT count(*) FROM refs").fetchone()[0]
    db.close()
    idx = Index.open(root, embedder="none")
    assert {name: _references(idx, name) for name in before} == before
    db = sqlite3.connect(idx.settings.db_path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    assert db.execute("SELECT count(*) FROM sqlite_master WHERE name = 'refs'").fetchone()[0] == 0
    # One row per (content, name): many.py's 91 uses of resolve_host are one.
    assert db.execute("SELECT count(*) FROM ref_sites").fetchone()[0] < uses / 2
    db.close()
    _assert_consistent(idx)


def _file_bytes(db_path: Path) -> int:
    return sum(p.stat().st_size for p in db_path.parent.glob(db_path.name + "*"))


def test_an_index_at_schema_9_keeps_only_its_lexical_index_and_compressed_text_and_answers_the_same(
    tmp_path: Path,
) -> None:
    root = tmp_path / "repo"
    bulk = {
        f"src/gen/mod_{i}.py": f"def handler_{i}(request):\n    return render(request, 'page_{i}')\n" * 40
        for i in range(40)
    }
    write(root, {**SAMPLE, **bulk, "src/extra.py": "def extra_helper():\n    return 1\n"})
    idx = Index.open(root, embedder="none")
    idx.index()
    write(root, {"src/extra.py": "def extra_helper():\n    return 2\n"})
    idx.index()  # a second revision: the first one's extra.py is retained content
    before = {
        q: [(r.path, r.start_line, r.snippet) for r in idx.search(q, mode="lexical").results]
        for q in ("TCPConnector", "handler_7 request", "extra_helper")
    }
    idx.close()
    _back_to_schema(9, idx.settings.db_path)
    db = sqlite3.connect(idx.settings.db_path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.execute("PRAGMA auto_vacuum = NONE")
    db.execute("VACUUM")  # as schema 9 left a file: no incremental vacuum
    db.close()
    old_bytes = _file_bytes(idx.settings.db_path)
    idx = Index.open(root, embedder="none")
    after = {
        q: [(r.path, r.start_line, r.snippet) for r in idx.search(q, mode="lexical").results] for q in before
    }
    assert after == before and all(before.values())
    db = sqlite3.connect(idx.settings.db_path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    assert db.execute("SELECT count(*) FROM chunks WHERE typeof(text) != 'blob'").fetchone()[0] == 0
    assert db.execute("SELECT count(*) FROM chunks_fts WHERE body IS NOT NULL").fetchone()[0] == 0
    assert db.execute("PRAGMA auto_vacuum").fetchone()[0] == 2  # incremental from now on
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    assert _file_bytes(idx.settings.db_path) < old_bytes
    _assert_consistent(idx)
    write(root, {"src/extra.py": "def extra_helper():\n    return 3\n"})
    idx.index()  # rows move between the lexical tables and leave them, by bodies rebuilt from text
    _assert_consistent(idx)
    assert [r.path for r in idx.search("extra_helper", mode="lexical").results] == ["src/extra.py"]


def test_an_index_whose_schema_6_already_had_the_retained_lexical_index_opens(tmp_path: Path) -> None:
    # For a while schema 6 created chunks_fts_retained itself; such an index must still migrate to 7.
    root = tmp_path / "repo"
    write(root, {**SAMPLE, "src/extra.py": "def extra_helper():\n    return 1\n"})
    idx = Index.open(root, embedder="none")
    idx.index()
    write(root, {"src/extra.py": "def extra_helper():\n    return 2\n"})
    idx.index()  # a second revision: the first one's extra.py is retained content
    before = _found(idx)
    idx.close()
    _back_to_schema_6(idx.settings.db_path)
    idx = Index.open(root, embedder="none")
    assert _found(idx) == before
    db = sqlite3.connect(idx.settings.db_path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    db.close()
    _assert_consistent(idx)


def test_a_fully_embedded_revision_is_remembered_until_retention_drops_it(tmp_path: Path) -> None:
    from store.sample_index import commit_files

    from ragraf.config import load_settings
    from ragraf.store.sqlite import SqliteStore

    settings = load_settings(tmp_path)
    store = SqliteStore(tmp_path / "index.db", create=True)
    rev = commit_files(store, settings, SAMPLE)
    chunks = store.chunks_missing_vectors(rev.rev_no, "m", 1000)
    store.add_vectors("m", [(c.chunk_id, bytes(16)) for c in chunks[:-1]], 4)
    assert store.vector_coverage(rev.rev_no, "m") < 1.0
    store.add_vectors("m", [(chunks[-1].chunk_id, bytes(16))], 4)
    store.mark_covered(rev.rev_no, "m")
    other = SqliteStore(tmp_path / "index.db")  # another process's handle reads the record, not the vectors
    other.db.execute("DELETE FROM vectors")  # (only to prove it: the count would now say 0)
    assert other.vector_coverage(rev.rev_no, "m") == 1.0
    commit_files(store, settings, {**SAMPLE, "extra.py": "x = 1\n"})
    store.gc(1)
    assert not store.db.execute("SELECT count(*) FROM meta WHERE key LIKE 'covered:%'").fetchone()[0]


def test_after_a_fully_embedded_revision_only_new_contents_are_asked_for_vectors(tmp_path: Path) -> None:
    from store.sample_index import commit_files

    from ragraf.config import load_settings
    from ragraf.store.sqlite import SqliteStore

    settings = load_settings(tmp_path)
    store = SqliteStore(tmp_path / "index.db", create=True)
    first = commit_files(store, settings, SAMPLE)
    store.add_vectors(
        "m", [(c.chunk_id, bytes(16)) for c in store.chunks_missing_vectors(first.rev_no, "m", 1000)], 4
    )
    store.mark_covered(first.rev_no, "m")
    second = commit_files(store, settings, {**SAMPLE, "extra.py": "def extra():\n    return 1\n"})
    missing = store.chunks_missing_vectors(second.rev_no, "m", 1000)
    assert [c.path for c in missing] == ["extra.py"]
    total = store.count_chunks(second.rev_no)
    assert store.vector_coverage(second.rev_no, "m") == (total - len(missing)) / total
    # Another model has no fully embedded revision: every chunk is asked for.
    assert len(store.chunks_missing_vectors(second.rev_no, "other", 1000)) == total
    store.add_vectors("m", [(c.chunk_id, bytes(16)) for c in missing], 4)
    assert store.vector_coverage(second.rev_no, "m") == 1.0 and not store.chunks_missing_vectors(
        second.rev_no, "m", 1000
    )


def test_a_searching_handle_reads_only_the_vectors_a_new_revision_adds(tmp_path: Path) -> None:
    import numpy as np
    from store.sample_index import commit_files, sha

    from ragraf.config import load_settings
    from ragraf.store.sqlite import SqliteStore

    def unit(seed: str) -> np.ndarray:
        v = np.random.default_rng(int(sha(seed)[:12], 16)).normal(size=8).astype(np.float32)
        return v / np.linalg.norm(v)

    def embed(store: SqliteStore, rev_no: int) -> None:
        chunks = store.chunks_missing_vectors(rev_no, "m", 1000)
        store.add_vectors("m", [(c.chunk_id, unit(c.text).tobytes()) for c in chunks], 8)

    def answer(store: SqliteStore, rev_no: int) -> list[tuple[int, str, float]]:
        hits = store.vector_search(rev_no, "m", unit("query").tobytes(), 8, 50)
        return [(h.chunk_id, h.path, round(h.score, 6)) for h in hits]

    settings = load_settings(tmp_path)
    writer = SqliteStore(tmp_path / "index.db", create=True)
    one = commit_files(writer, settings, SAMPLE)
    embed(writer, one.rev_no)
    reader = SqliteStore(tmp_path / "index.db")
    assert answer(reader, one.rev_no) == answer(SqliteStore(tmp_path / "index.db"), one.rev_no)
    changed = {
        **SAMPLE,
        "src/app/server.py": SAMPLE["src/app/server.py"] + "\n\ndef added():\n    return 2\n",
    }
    two = commit_files(writer, settings, {**changed, "src/new.py": "def fresh():\n    return 1\n"})
    # Not embedded yet: the new contents' chunks are left out, as a fresh handle leaves them out.
    assert answer(reader, two.rev_no) == answer(SqliteStore(tmp_path / "index.db"), two.rev_no)
    embed(writer, two.rev_no)
    fresh = answer(SqliteStore(tmp_path / "index.db"), two.rev_no)
    assert answer(reader, two.rev_no) == fresh
    assert {path for _, path, _ in fresh} >= {"src/new.py", "src/app/server.py"}
    # A kept content is not read again: a vector removed behind the reader's back is still used.
    kept = writer.manifest(two.rev_no)["src/app/retry.py"].content_id
    writer.db.execute(
        "DELETE FROM vectors WHERE chunk_id IN (SELECT id FROM chunks WHERE content_id = ?)", (kept,)
    )
    assert any(path == "src/app/retry.py" for _, path, _ in answer(reader, two.rev_no))
    assert not any(
        path == "src/app/retry.py" for _, path, _ in answer(SqliteStore(tmp_path / "index.db"), two.rev_no)
    )


def test_a_partly_embedded_revision_is_counted_again_only_after_a_write(tmp_path: Path) -> None:
    from store.sample_index import commit_files

    from ragraf.config import load_settings

    def unit(i: int) -> bytes:
        v = np.random.default_rng(i).normal(size=8).astype(np.float32)
        return (v / np.linalg.norm(v)).tobytes()

    writer = sq.SqliteStore(tmp_path / "index.db", create=True)
    rev = commit_files(writer, load_settings(tmp_path), SAMPLE)
    chunks = writer.chunks_missing_vectors(rev.rev_no, "m", 1000)
    half = len(chunks) // 2
    writer.add_vectors("m", [(c.chunk_id, unit(c.chunk_id)) for c in chunks[:half]], 8)
    reader = sq.SqliteStore(tmp_path / "index.db")
    query = unit(0)
    assert reader.vector_coverage(rev.rev_no, "m") == pytest.approx(half / len(chunks))
    first = reader.vector_search(rev.rev_no, "m", query, 8, 50)
    assert len(first) == half
    statements: list[str] = []
    reader.db.set_trace_callback(statements.append)
    # Nothing written since: the shares and the vectors read stand, and no count runs again.
    assert reader.vector_coverage(rev.rev_no, "m") == pytest.approx(half / len(chunks))
    assert reader.vector_search(rev.rev_no, "m", query, 8, 50) == first
    assert statements and not [s for s in statements if "count(" in s.lower()]
    # Another process's write is seen at the next search: the rest of the vectors, and the share.
    writer.add_vectors("m", [(c.chunk_id, unit(c.chunk_id)) for c in chunks[half:]], 8)
    assert reader.vector_coverage(rev.rev_no, "m") == 1.0
    hits = reader.vector_search(rev.rev_no, "m", query, 8, 50)
    assert len(hits) == min(len(chunks), 50)
    assert hits == sq.SqliteStore(tmp_path / "index.db").vector_search(rev.rev_no, "m", query, 8, 50)


def test_a_large_revision_is_searched_through_int8_codes_with_exact_answers(tmp_path: Path) -> None:
    assert sq.simsimd is not None  # installed with ragraf: else every search scores every row in float32
    store = sq.SqliteStore(tmp_path / "index.db", create=True)
    dim, n = 64, 4000  # uniform random vectors: the hardest case for a quantised first pass
    chunks = [ChunkRecord.of(i, i + 1, i + 1, None, f"row {i}") for i in range(n)]
    content = ContentBundle(("a" * 64, "text", CHUNKER), chunks, [], "unsupported")
    cid = store.add_contents([content])[content.key]
    rev = store.commit_revision(
        NewRevision("r", "v", None, None, [ManifestEntry("rows.txt", "a" * 64, cid, 1)])
    )
    rng = np.random.default_rng(5)
    matrix = rng.normal(size=(n, dim)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    missing = store.chunks_missing_vectors(rev.rev_no, "m64", n)
    store.add_vectors("m64", [(c.chunk_id, matrix[i].tobytes()) for i, c in enumerate(missing)], dim)
    ids = np.array([c.chunk_id for c in missing])
    assert len(ids) > 2 * sq.PRESELECT_DEPTH  # so the int8 pass runs
    for q in range(20):
        query = matrix[q] + 0.5 * rng.normal(size=dim).astype(np.float32)
        query /= np.linalg.norm(query)
        exact = matrix @ query
        want = np.argsort(-exact)[:10]
        got = store.vector_search(rev.rev_no, "m64", query.tobytes(), dim, 10)
        assert [h.chunk_id for h in got] == [int(ids[i]) for i in want]
        assert [h.score for h in got] == pytest.approx(
            [float(exact[i]) for i in want], rel=1e-6
        )  # float32, not int8
    store.close()


def test_a_cold_index_gives_back_the_pages_its_waiting_lexical_rows_held(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    bulk = {
        f"src/gen/mod_{i}.py": f"def handler_{i}(request):\n    return render(request, 'p{i}')\n" * 40
        for i in range(40)
    }
    write(root, {**SAMPLE, **bulk})
    idx = Index.open(root, embedder="none")
    idx.index()
    db = sqlite3.connect(idx.settings.db_path)
    pages, free = (db.execute(f"PRAGMA {p}").fetchone()[0] for p in ("page_count", "freelist_count"))
    db.close()
    assert free * 10 < pages, (free, pages)


def test_a_new_index_text_rebuilds_the_lexical_rows_on_open_and_they_move_and_leave_cleanly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "repo"
    write(root, {**SAMPLE, "src/extra.py": "def extra_helper():\n    return 1\n"})
    idx = Index.open(root, embedder="none")
    idx.index()
    write(root, {"src/extra.py": "def extra_helper():\n    return 2\n"})
    idx.index()  # the first extra.py is retained content
    idx.close()
    from ragraf.index import workers
    from ragraf.store.sqlite import connection, sql

    def marked(text: str) -> str:
        return index_text(text) + "\nzzmarked"

    monkeypatch.setattr(sql, "index_text", marked)
    monkeypatch.setattr(workers, "index_texts", lambda texts: [marked(t) for t in texts])
    for module in (sql, connection):
        monkeypatch.setattr(module, "INDEX_TEXT_VERSION", "2")
    idx = Index.open(root, embedder="none")
    assert idx.search("zzmarked", mode="lexical").results  # rebuilt with the new body
    db = sqlite3.connect(idx.settings.db_path)
    assert db.execute("SELECT value FROM meta WHERE key = 'lexical_body'").fetchone()[0] == "2"
    db.close()
    write(root, {"src/extra.py": "def extra_helper():\n    return 3\n"})
    idx.index()  # rows leave and move by bodies of the new index_text
    idx.gc()
    _assert_consistent(idx)
    assert [r.path for r in idx.search("extra_helper", mode="lexical").results] == ["src/extra.py"]
