"""Copy an index from SQLite to PostgreSQL as it is: revisions, contents, facts, ledger and vectors, no re-embedding."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragraf.errors import StoreError
from ragraf.store.base import (
    ChunkRecord,
    ContentBundle,
    FactRecord,
    ManifestEntry,
    RefSites,
    Revision,
    StatEntry,
    unpack_sites,
    unpack_text,
)
from ragraf.store.columns import revision_values
from ragraf.store.postgres import (
    SET_SNAPSHOT,
    PostgresStore,
    checkout_name,
    default_repo_key,
)
from ragraf.store.sqlite import SqliteStore
from ragraf.store.sqlite.stats import read_snapshot

if TYPE_CHECKING:
    import click
    import psycopg

_BATCH = 500  # contents per round trip: bounded memory whatever the index size


@dataclass(frozen=True)
class MigrateReport:
    """What one copy moved."""

    repo_key: str
    revisions: int
    contents: int
    chunks: int
    facts: int
    vectors: int
    ledger_entries: int
    archived_entries: int
    stat_entries: int
    duration_s: float

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def copy_sqlite_to_postgres(
    src: SqliteStore, dst: PostgresStore, note: Callable[[str], None] | None = None
) -> MigrateReport:
    """Copy every revision, content, fact, ledger entry, stat entry and vector of src into dst.

    dst must hold no revision yet. Everything is written in one PostgreSQL transaction (a killed
    copy leaves nothing) from one SQLite read snapshot (an indexer may keep writing meanwhile).
    """
    t0 = time.monotonic()
    say = note or (lambda _msg: None)
    if dst.current_revision() is not None:
        raise StoreError(
            f"{dst.repo_key} already has an index in PostgreSQL at {dst.where}",
            suggest="migrate into another --repo-key, or pass --replace to overwrite it",
        )
    db = src.db
    db.execute("BEGIN")  # one consistent snapshot of the SQLite file for the whole copy
    try:
        with dst._tx() as conn:
            conn.execute("SELECT set_config('statement_timeout', '0', true)")
            counts = _copy(db, dst, conn, say)
    finally:
        db.execute("COMMIT")
    return MigrateReport(dst.repo_key, duration_s=round(time.monotonic() - t0, 3), **counts)


def _copy(
    db: Any, dst: PostgresStore, conn: psycopg.Connection, say: Callable[[str], None]
) -> dict[str, Any]:
    content_map: dict[int, int] = {}
    chunk_map: dict[int, int] = {}
    n_chunks = n_facts = 0
    total = db.execute("SELECT count(*) FROM contents").fetchone()[0]
    say(f"copying {total} contents")
    for rows in _batches(
        db.execute("SELECT id, sha256, language, chunker, facts_status FROM contents ORDER BY id")
    ):
        bundles: list[ContentBundle] = []
        for content_id, sha, language, chunker, status in rows:
            # The lexical tables keep only their index: each row's body is rebuilt as it was made.
            chunks = [
                ChunkRecord.of(ord_, start, end, symbol, text)
                for ord_, start, end, symbol, text in (
                    (o, s, e, y, unpack_text(t))
                    for o, s, e, y, t in db.execute(
                        "SELECT c.ord, c.start_line, c.end_line, c.symbol, c.text FROM chunks c JOIN "
                        "(SELECT rowid FROM chunks_fts UNION ALL SELECT rowid FROM chunks_fts_retained) f "
                        "ON f.rowid = c.id WHERE c.content_id = ? ORDER BY c.ord",
                        (content_id,),
                    )
                )
            ]
            facts = [
                FactRecord(
                    kind, name, def_kind, container, line, start, end, signature, bool(is_call), body_hash
                )
                for kind, name, def_kind, container, line, start, end, signature, is_call, body_hash in db.execute(
                    "SELECT kind, name, def_kind, container, line, start_line, end_line, signature, is_call, "
                    "body_hash FROM facts WHERE content_id = ? ORDER BY rowid",
                    (content_id,),
                )
            ]
            refs = [
                RefSites(name, sites)
                for name, sites in db.execute(
                    "SELECT name, sites FROM ref_sites WHERE content_id = ? ORDER BY rowid", (content_id,)
                )
            ]
            bundle = ContentBundle((sha, language, chunker), chunks, facts, status, refs)
            n_chunks += len(chunks)
            # Passed on packed; the report still counts each use as a fact.
            n_facts += len(facts) + sum(len(unpack_sites(r.sites)) for r in refs)
            bundles.append(bundle)
        new_ids = dst._add_contents(conn, bundles, [])
        for (content_id, *_), b in zip(rows, bundles, strict=True):
            content_map[content_id] = new_ids[b.key]
        _map_chunks(db, conn, [r[0] for r in rows], content_map, chunk_map)

    revisions = [
        Revision(*r)
        for r in db.execute(
            "SELECT rev_no, rev, corpus_hash, created_at, index_version, git_head, git_branch, files, chunks "
            "FROM revisions ORDER BY rev_no"
        )
    ]
    say(f"copying {len(revisions)} revisions")
    for rev in revisions:
        conn.execute(
            "INSERT INTO revisions (repo_id, rev_no, rev, corpus_hash, created_at, index_version, git_head, "
            "git_branch, files, chunks) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (dst.repo_id, *revision_values(rev)),
        )
        manifest = [
            ManifestEntry(path, sha, content_map[content_id], size)
            for path, sha, content_id, size in db.execute(
                "SELECT path, sha256, content_id, size FROM manifest WHERE rev_no = ?", (rev.rev_no,)
            )
        ]
        dst._copy_manifest(conn, rev.rev_no, manifest)
    seq = db.execute("SELECT coalesce(max(seq), 0) FROM sqlite_sequence WHERE name = 'revisions'").fetchone()[
        0
    ]
    last = max([seq, *(r.rev_no for r in revisions)])
    conn.execute("UPDATE repositories SET last_rev_no = %s WHERE id = %s", (last, dst.repo_id))

    ledger = _copy_ledger(db, dst, conn, chunk_map, "drift_ledger")
    archive = _copy_ledger(db, dst, conn, chunk_map, "drift_archive")
    # The main checkout's file stats become this checkout's (a worktree view's are its own).
    stats = {
        r[0]: StatEntry(*r[1:])
        for r in db.execute(
            "SELECT path, size, mtime_ns, ctime_ns, inode, sha256, checked_ns FROM stat_cache WHERE view = ''"
        )
    }
    if stats:
        with conn.cursor().copy(
            "COPY stat_cache (repo_id, checkout, path, size, mtime_ns, ctime_ns, inode, sha256, checked_ns) "
            "FROM STDIN"
        ) as copy:
            for path, e in stats.items():
                copy.write_row((dst.repo_id, dst.checkout, path, *e))
    blob = read_snapshot(db, "guard_snapshot")
    if blob is not None:
        conn.execute(SET_SNAPSHOT, (dst.repo_id, "guard_snapshot@" + dst.checkout, blob, dst.repo_id))
    vectors = _copy_vectors(db, dst, conn, chunk_map, say)
    return {
        "revisions": len(revisions),
        "contents": len(content_map),
        "chunks": n_chunks,
        "facts": n_facts,
        "vectors": vectors,
        "ledger_entries": ledger,
        "archived_entries": archive,
        "stat_entries": len(stats),
    }


def _batches(cursor: Any, size: int = _BATCH) -> Iterator[list[tuple[Any, ...]]]:
    while rows := cursor.fetchmany(size):
        yield rows


def _map_chunks(
    db: Any,
    conn: psycopg.Connection,
    old_contents: list[int],
    content_map: dict[int, int],
    chunk_map: dict[int, int],
) -> None:
    """Old chunk id -> new chunk id, matched by (content, ord)."""
    marks = ",".join("?" * len(old_contents))
    old = {
        (content_map[content_id], ord_): chunk_id
        for chunk_id, content_id, ord_ in db.execute(
            f"SELECT id, content_id, ord FROM chunks WHERE content_id IN ({marks})", old_contents
        )
    }
    new_ids = [content_map[c] for c in old_contents]
    for chunk_id, content_id, ord_ in conn.execute(
        "SELECT id, content_id, ord FROM chunks WHERE content_id = ANY(%s)", (new_ids,)
    ):
        if (content_id, ord_) in old:
            chunk_map[old[(content_id, ord_)]] = chunk_id


def _copy_ledger(
    db: Any, dst: PostgresStore, conn: psycopg.Connection, chunk_map: dict[int, int], table: str
) -> int:
    """Ledger or archive rows, in entry order, with their chunk ids translated."""
    archive = table == "drift_archive"
    columns = (
        "rev, change, path, detected_by, detected_at, old_sha256, new_sha256, affected_nodes, affected_symbols, "
        "dedupe_key"
    )
    extra = ", closed_by, archived_at" if archive else ""
    rows = db.execute(f"SELECT {columns}{extra} FROM {table} ORDER BY entry_id").fetchall()
    if not rows:
        return 0
    # Archive rows keep entry ids from the ledger's sequence, as a ledger entry does when it is archived.
    ids = dst._next_ids(conn, "drift_ledger", len(rows), "entry_id")
    target = "drift_archive" if archive else "drift_ledger"
    with conn.cursor().copy(f"COPY {target} (repo_id, entry_id, {columns}{extra}) FROM STDIN") as copy:
        for entry_id, row in zip(ids, rows, strict=True):
            nodes = [chunk_map[n] for n in json.loads(row[7]) if n in chunk_map]
            copy.write_row((dst.repo_id, entry_id, *row[:7], json.dumps(nodes), row[8], *row[9:]))
    return len(rows)


def _copy_vectors(
    db: Any,
    dst: PostgresStore,
    conn: psycopg.Connection,
    chunk_map: dict[int, int],
    say: Callable[[str], None],
) -> int:
    """Vectors per model, as stored: the embeddings are copied, never recomputed."""
    copied = 0
    for model, dim, count in db.execute(
        "SELECT model, dim, count(*) FROM vectors GROUP BY model, dim"
    ).fetchall():
        say(f"copying {count} vectors of {model}")
        model_id = None
        cursor = db.execute("SELECT chunk_id, vec FROM vectors WHERE model = ? AND dim = ?", (model, dim))
        for rows in _batches(cursor, 5000):
            items = [(chunk_map[chunk_id], bytes(vec)) for chunk_id, vec in rows if chunk_id in chunk_map]
            if items:
                model_id = dst._insert_vectors(conn, model, items, dim)
                copied += len(items)
        if model_id is not None:
            # One graph build after the bulk insert, rather than one insert at a time into it.
            dst._ensure_vector_index(conn, model_id, dim)
    return copied


def register(main: click.Group) -> None:
    """Add `ragraf migrate --from sqlite --to postgres` to the CLI group."""
    import click

    from ragraf.config import load_settings
    from ragraf.errors import RagrafError

    @main.command("migrate")
    @click.option("--from", "source", type=click.Choice(["sqlite"]), default="sqlite", show_default=True)
    @click.option("--to", "target", type=click.Choice(["postgres"]), default="postgres", show_default=True)
    @click.option(
        "--root",
        type=click.Path(file_okay=False, path_type=Path),
        default=".",
        show_default=True,
        help="Folder whose index to copy.",
    )
    @click.option("--dsn", default=None, help="PostgreSQL connection string (default: RAGRAF_PG_DSN).")
    @click.option(
        "--repo-key",
        default=None,
        help="Name of the repository in PostgreSQL (default: pg_repo, else the root path).",
    )
    @click.option(
        "--replace", is_flag=True, help="Drop what PostgreSQL already holds for this repository first."
    )
    @click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
    def migrate_cmd(
        source: str,
        target: str,
        root: Path,
        dsn: str | None,
        repo_key: str | None,
        replace: bool,
        as_json: bool,
    ) -> None:
        """Copy this folder's SQLite index to PostgreSQL: revisions, facts, ledger and vectors (no re-embedding).

        \b
        Examples:
          ragraf migrate --dsn postgresql://ragraf@db/ragraf      # this folder's index
          ragraf migrate --root ~/src/app --json                  # DSN from RAGRAF_PG_DSN
          ragraf migrate --repo-key team/app --replace            # copy again over what is there
        """
        quiet = as_json
        try:
            settings = load_settings(root)
            key = repo_key or settings.pg_repo or default_repo_key(settings.root)
            src = SqliteStore(settings.db_path)
            checkout = checkout_name(settings.root)
            dst = PostgresStore(dsn or settings.pg_dsn, key, create=True, checkout=checkout)
            try:
                if replace and dst.current_revision() is not None:
                    dst.drop_repository()
                    dst.close()
                    dst = PostgresStore(dsn or settings.pg_dsn, key, create=True, checkout=checkout)
                with dst.writer_lock(wait=False):
                    report = copy_sqlite_to_postgres(
                        src, dst, None if quiet else lambda m: click.echo(m, err=True)
                    )
            finally:
                src.close()
                dst.close()
        except RagrafError as exc:
            if as_json:
                click.echo(json.dumps({"op": "migrate", "error": exc.as_dict()}))
            click.echo(
                f"ragraf migrate: {exc.message}" + (f"\n  → {exc.suggest}" if exc.suggest else ""), err=True
            )
            raise SystemExit(exc.exit_code) from None
        if as_json:
            click.echo(json.dumps({"op": "migrate", **report.to_dict()}))
        else:
            click.echo(
                f"copied {report.revisions} revisions, {report.contents} contents, {report.chunks} chunks, "
                f"{report.vectors} vectors and {report.ledger_entries + report.archived_entries} ledger entries "
                f"of {settings.root} to {dst.where} as {key!r} in {report.duration_s:.1f} s"
            )
