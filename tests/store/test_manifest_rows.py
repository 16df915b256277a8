"""Manifests kept as rows valid over a range of revisions: every way a revision is made (whole,
as a change to the newest, as a change to an older one, in a work tree's view), every retained
revision reads back the manifest it was committed with, and a one-file change writes one row."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest
from store.sample_index import (
    PG_MANIFEST_PER_REVISION,
    SQLITE_MANIFEST_PER_REVISION,
    SQLITE_NAMES_NUMBERED,
    StoreFactory,
    bundle,
)
from support import SAMPLE

from ragraf.config import Settings
from ragraf.store import ManifestEntry, NewRevision, Revision, Store
from ragraf.store.sqlite import SqliteStore

Files = dict[str, str]


class Recorder:
    """Commits revisions and remembers what each one's manifest must read back as."""

    def __init__(self, store: Store, settings: Settings) -> None:
        self.store, self.settings = store, settings
        self.expected: dict[int, dict[str, ManifestEntry]] = {}
        self.n_chunks: dict[int, int] = {}  # content id -> its chunks

    def entries(self, files: Files) -> dict[str, ManifestEntry]:
        bundles = {path: bundle(self.settings, path, text) for path, text in files.items()}
        ids = self.store.add_contents(list(bundles.values()))
        for b in bundles.values():
            self.n_chunks[ids[b.key]] = len(b.chunks)
        return {p: ManifestEntry(p, b.key[0], ids[b.key], len(files[p])) for p, b in bundles.items()}

    def whole(self, files: Files) -> Revision:
        manifest = self.entries(files)
        return self._commit(manifest, sorted(manifest.values(), key=lambda e: e.path), None, ())

    def change(self, parent: Revision, edits: Files, removed: tuple[str, ...] = ()) -> Revision:
        given = self.entries(edits)
        manifest = {**self.expected[parent.rev_no], **given}
        for path in removed:
            del manifest[path]
        return self._commit(manifest, sorted(given.values(), key=lambda e: e.path), parent, removed)

    def _commit(
        self,
        manifest: dict[str, ManifestEntry],
        given: list[ManifestEntry],
        parent: Revision | None,
        removed: tuple[str, ...],
    ) -> Revision:
        corpus = hashlib.sha1("".join(f"{p}\0{e.sha256}\n" for p, e in sorted(manifest.items())).encode())
        rev = self.store.commit_revision(
            NewRevision(
                corpus.hexdigest(), "test-version", None, None, given,
                parent=parent.rev_no if parent else None, removed=removed,
            )
        )  # fmt: skip
        self.expected[rev.rev_no] = manifest
        return rev

    def check(self, store: Store | None = None) -> None:
        """Every retained revision reads as it was committed, through every manifest reader."""
        store = store or self.store
        for rev in store.revisions():
            want = self.expected[rev.rev_no]
            assert store.manifest(rev.rev_no) == want, rev.rev
            assert sorted(store.manifest_hashes(rev.rev_no)) == sorted((p, e.sha256) for p, e in want.items())
            for path in [*want, "src/never.py"]:
                assert store.manifest_entry(rev.rev_no, path) == want.get(path), (rev.rev, path)
            assert rev.files == len(want)
            assert rev.chunks == sum(self.n_chunks[i] for i in {e.content_id for e in want.values()})
            for path in want:
                assert [h.path for h in store.chunks_of(rev.rev_no, path)] == [path] * self.n_chunks[
                    want[path].content_id
                ]
            assert store.consistency_problems(rev.rev_no, None) == []


def _script(rec: Recorder) -> list[Revision]:
    """Edits, deletes, a re-add of an old content, a revert, a change to an older revision and
    a whole manifest, in that order."""
    one = rec.whole(SAMPLE)
    two = rec.change(one, {"src/app/extra.py": "def extra():\n    return 42\n"})
    three = rec.change(two, {"src/app/extra.py": "def extra():\n    return 43\n"}, removed=("docs/guide.md",))
    four = rec.change(three, {"docs/guide.md": SAMPLE["docs/guide.md"], "src/app/gone.py": "G = 1\n"})
    five = rec.change(four, {}, removed=("src/app/extra.py", "src/app/gone.py"))  # one's manifest again
    six = rec.change(two, {"src/app/later.py": "def later():\n    pass\n"})  # not the newest: made whole
    seven = rec.whole({**SAMPLE, "src/app/extra.py": "def extra():\n    return 43\n", "docs/x.md": "# x\n"})
    eight = rec.change(seven, {"docs/x.md": "# y\n"})
    return [one, two, three, four, five, six, seven, eight]


def test_every_revision_reads_back_the_manifest_it_was_committed_with_through_gc(
    store_factory: StoreFactory, settings: Settings
) -> None:
    rec = Recorder(store_factory(), settings)
    revs = _script(rec)
    assert [r.rev_no for r in rec.store.revisions()] == [r.rev_no for r in revs]
    rec.check()
    rec.check(store_factory())  # another handle reads the same
    removed = rec.store.gc(keep=3)
    assert removed["revisions_removed"] == 5
    assert [r.rev_no for r in rec.store.revisions()] == [r.rev_no for r in revs[-3:]]
    assert rec.store.manifest(revs[0].rev_no) == {}
    rec.check()
    # What only dropped revisions named went with them (gone.py's content); what a kept one names stayed.
    assert removed["contents_removed"] == 1
    nine = rec.change(revs[-1], {"src/app/extra.py": "def extra():\n    return 44\n"})
    rec.check()
    rec.store.gc(keep=1)
    assert [r.rev_no for r in rec.store.revisions()] == [nine.rev_no]
    rec.check()


def _row_count(store: Store, kind: str) -> int:
    if kind == "sqlite":
        assert isinstance(store, SqliteStore)
        return int(store.db.execute("SELECT count(*) FROM manifest_rows").fetchone()[0])
    row = store._row("SELECT count(*) FROM manifest_rows WHERE repo_id = %s", (store.repo_id,))  # type: ignore[attr-defined]
    assert row is not None
    return int(row[0])


def test_a_one_file_change_writes_one_row_and_gc_removes_only_rows_no_kept_revision_holds(
    store_factory: StoreFactory, settings: Settings
) -> None:
    kind = store_factory.kind  # type: ignore[attr-defined]
    rec = Recorder(store_factory(), settings)
    files = {**SAMPLE, **{f"src/gen/m{i}.py": f"def m{i}():\n    return {i}\n" for i in range(40)}}
    rev = rec.whole(files)
    assert _row_count(rec.store, kind) == len(files)
    for n in range(4):
        rev = rec.change(rev, {"src/gen/m0.py": f"def m0():\n    return {n + 100}\n"})
        assert _row_count(rec.store, kind) == len(files) + n + 1
    rev = rec.change(rev, {}, removed=("src/gen/m1.py",))  # closes a row, adds none
    assert _row_count(rec.store, kind) == len(files) + 4
    rec.store.gc(keep=2)  # what the older kept revision holds: m1's first row and m0's newest
    assert _row_count(rec.store, kind) == len(files)
    rec.check()


def test_work_tree_views_interleaved_in_one_file_each_read_their_own_revisions(
    tmp_path: Path, settings: Settings
) -> None:
    path = tmp_path / "index.db"
    base = Recorder(SqliteStore(path, create=True), settings)
    gone_view = str(tmp_path / "removed-worktree")
    tree = Recorder(SqliteStore(path, view=str(tmp_path), label="feature"), settings)
    other = Recorder(SqliteStore(path, view=gone_view, label="old"), settings)
    for rec in (tree, other):
        rec.expected, rec.n_chunks = base.expected, base.n_chunks  # one numbering of revisions
    b1 = base.whole(SAMPLE)
    t1 = tree.change(b1, {"src/app/feature.py": "def feature():\n    pass\n"})  # over the base: whole
    o1 = other.change(b1, {}, removed=("docs/guide.md",))
    b2 = base.change(b1, {"src/app/base_only.py": "X = 1\n"})
    t2 = tree.change(t1, {"docs/guide.md": "# feature\n"})
    b3 = base.change(b2, {}, removed=("src/app/base_only.py",))
    for rec, revs in ((base, [b1, b2, b3]), (tree, [t1, t2]), (other, [o1])):
        assert [r.rev_no for r in rec.store.revisions()] == [r.rev_no for r in revs]
        rec.check()
    base.store.gc(keep=1)  # the base keeps its newest; the removed work tree's view goes
    assert [r.rev_no for r in base.store.revisions()] == [b3.rev_no]
    assert other.store.revisions() == []
    db = sqlite3.connect(path)
    assert db.execute("SELECT count(*) FROM manifest_rows WHERE view = ?", (gone_view,)).fetchone()[0] == 0
    db.close()
    for rec in (base, tree):
        rec.check()
    t3 = tree.change(t2, {"src/app/feature.py": "def feature():\n    return 1\n"})
    tree.check()
    assert base.store.manifest(t3.rev_no) == base.expected[t3.rev_no]


def test_a_sqlite_index_with_whole_manifests_per_revision_is_migrated_to_rows_and_reads_the_same(
    tmp_path: Path, settings: Settings
) -> None:
    path = tmp_path / "index.db"
    base = Recorder(SqliteStore(path, create=True), settings)
    tree = Recorder(SqliteStore(path, view=str(tmp_path), label="feature"), settings)
    tree.expected, tree.n_chunks = base.expected, base.n_chunks
    revs = _script(base)
    tree.change(revs[1], {"src/app/feature.py": "def feature():\n    pass\n"})
    base.change(revs[-1], {"docs/x.md": "# z\n"})
    base.store.close()
    tree.store.close()
    db = sqlite3.connect(path)
    undo = (
        *SQLITE_NAMES_NUMBERED,
        "DROP INDEX ref_sites_by_content",
        "ALTER TABLE ref_sites DROP COLUMN uses",
        *SQLITE_MANIFEST_PER_REVISION,
    )
    for statement in (*undo, "PRAGMA user_version = 11"):
        db.execute(statement)
    db.commit()
    whole_rows = db.execute("SELECT count(*) FROM manifest").fetchone()[0]
    db.close()
    base.store, tree.store = SqliteStore(path), SqliteStore(path, view=str(tmp_path), label="feature")
    base.check()
    tree.check()
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == 16
    rows = db.execute("SELECT count(*) FROM manifest_rows").fetchone()[0]
    db.close()
    assert rows < whole_rows / 2  # a path unchanged across revisions is one row
    nxt = base.change(base.store.current_revision(), {"src/app/extra.py": "E = 1\n"})  # type: ignore[arg-type]
    base.check()
    assert nxt.files == len(base.expected[nxt.rev_no])


def test_a_postgres_index_with_whole_manifests_per_revision_is_migrated_to_rows_and_reads_the_same(
    store_factory: StoreFactory, settings: Settings
) -> None:
    if store_factory.kind != "postgres":  # type: ignore[attr-defined]
        pytest.skip("the PostgreSQL schema's migration")
    import psycopg

    rec = Recorder(store_factory(), settings)
    _script(rec)
    dsn = rec.store.dsn  # type: ignore[attr-defined]
    with psycopg.connect(dsn, autocommit=True) as conn:
        whole_rows = conn.execute("SELECT count(*) FROM ragraf.manifest").fetchone()[0]  # type: ignore[index]
        for statement in PG_MANIFEST_PER_REVISION:
            conn.execute(statement)
        conn.execute("DELETE FROM ragraf.schema_version WHERE version > 6")
    reopened = store_factory(create=False)
    rec.check(reopened)
    rows = reopened._row("SELECT count(*) FROM manifest_rows WHERE repo_id = %s", (reopened.repo_id,))  # type: ignore[attr-defined]
    assert rows is not None and rows[0] < whole_rows / 2
    rec.store = reopened
    nxt = rec.change(reopened.current_revision(), {"src/app/extra.py": "E = 1\n"})  # type: ignore[arg-type]
    rec.check()
    assert nxt.files == len(rec.expected[nxt.rev_no])


def test_gc_removes_what_a_killed_run_stored_and_what_only_dropped_revisions_named(
    store_factory: StoreFactory, settings: Settings
) -> None:
    kind = store_factory.kind  # type: ignore[attr-defined]
    rec = Recorder(store_factory(), settings)
    one = rec.whole(SAMPLE)
    stray = "from app.server import resolve_host\n\nresolve_host('x')\n"
    rec.entries({"src/app/stray.py": stray})  # stored by a run killed before its commit
    assert _references_without_content(rec.store, kind) == 0 < _references(rec.store, kind, stray)
    assert rec.store.gc(keep=3)["contents_removed"] == 1
    assert _references_without_content(rec.store, kind) == 0
    assert rec.store.gc(keep=3)["contents_removed"] == 0
    two = rec.change(one, {"src/app/stray.py": stray})  # stored again, and named this time
    assert rec.store.gc(keep=1) == {"revisions_removed": 1, "contents_removed": 0, "chunks_removed": 0}
    rec.check()
    three = rec.change(two, {}, removed=("src/app/stray.py",))
    assert rec.store.gc(keep=2)["contents_removed"] == 0  # two still names it
    removed = rec.store.gc(keep=1)
    assert (removed["revisions_removed"], removed["contents_removed"]) == (1, 1)
    assert [r.rev_no for r in rec.store.revisions()] == [three.rev_no]
    assert _references_without_content(rec.store, kind) == 0
    assert [h.name for h in rec.store.find_facts(three.rev_no, "ref", name="resolve_host")] != []
    rec.check()


def _scalar(store: Store, kind: str, sqlite_sql: str, pg_sql: str, args: tuple[object, ...] = ()) -> int:
    if kind == "sqlite":
        assert isinstance(store, SqliteStore)
        return int(store.db.execute(sqlite_sql, args).fetchone()[0])
    row = store._row(pg_sql, (store.repo_id, *args))  # type: ignore[attr-defined]
    assert row is not None
    return int(row[0])


def _references_without_content(store: Store, kind: str) -> int:
    return _scalar(
        store, kind, "SELECT count(*) FROM ref_sites WHERE content_id NOT IN (SELECT id FROM contents)",
        "SELECT count(*) FROM ref_sites WHERE repo_id = %s AND content_id NOT IN (SELECT id FROM contents)",
    )  # fmt: skip


def _references(store: Store, kind: str, text: str) -> int:
    """Reference rows stored for the content of text (whichever path holds it)."""
    digest = hashlib.sha256(text.encode()).hexdigest()
    return _scalar(
        store, kind,
        "SELECT count(*) FROM ref_sites r JOIN contents c ON c.id = r.content_id WHERE c.sha256 = ?",
        "SELECT count(*) FROM ref_sites r JOIN contents c ON c.id = r.content_id WHERE r.repo_id = %s AND c.sha256 = %s",
        (digest,),
    )  # fmt: skip


def test_a_change_to_an_older_revision_commits_on_a_pool_of_one_connection(
    store_factory: StoreFactory, settings: Settings
) -> None:
    if store_factory.kind != "postgres":  # type: ignore[attr-defined]
        pytest.skip("a PostgreSQL connection pool")
    from ragraf.store.postgres import PostgresStore

    first = store_factory()
    store = PostgresStore(first.dsn, first.repo_key, pool_size=1)  # type: ignore[attr-defined]
    try:
        rec = Recorder(store, settings)
        one = rec.whole(SAMPLE)
        rec.change(one, {"src/app/extra.py": "E = 1\n"})
        rec.change(
            one, {"src/app/other.py": "O = 1\n"}
        )  # made whole from one, read on the committing connection
        rec.check()
    finally:
        store.close()


def test_a_one_file_change_costs_the_same_sqlite_steps_whatever_the_repository_size(
    tmp_path: Path, settings: Settings
) -> None:
    """Closing the changed path's row is a primary-key search, not a walk of the view's live rows:
    the SQLite virtual machine's steps for a one-file commit do not grow with the files."""
    steps = []
    for n in (50, 1000):
        rec = Recorder(SqliteStore(tmp_path / f"index-{n}.db", create=True), settings)
        rev = rec.whole({f"src/gen/m{i:04d}.py": f"def m{i}():\n    return {i}\n" for i in range(n)})
        rec.entries({"src/gen/m0007.py": "def m7():\n    return -7\n"})  # its content stored first
        counted = [0]

        def step(counted: list[int] = counted) -> int:
            counted[0] += 1
            return 0

        rec.store.db.set_progress_handler(step, 10)  # type: ignore[attr-defined]
        rec.change(rev, {"src/gen/m0007.py": "def m7():\n    return -7\n"})
        rec.store.db.set_progress_handler(None, 0)  # type: ignore[attr-defined]
        rec.check()
        steps.append(counted[0])
    assert steps[1] < steps[0] * 2, steps  # a walk of the live rows: about 20 times as many
