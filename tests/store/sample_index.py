"""A small real index for store tests: contents chunked and fact-extracted by the real pipeline."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from ragraf.config import Settings
from ragraf.index.workers import analyse
from ragraf.languages import language_of
from ragraf.store import ContentBundle, DriftEvent, ManifestEntry, NewRevision, Revision, Store

CHUNKER = "chunker-test"
StoreFactory = Callable[..., Store]


def bundle(settings: Settings, path: str, text: str) -> ContentBundle:
    """Chunks and facts of one file, made by the real pipeline."""
    language = language_of(path)
    chunks, facts, refs, status = analyse(text, language, settings)
    return ContentBundle((sha(text), language, CHUNKER), chunks, facts, status, refs)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def commit_files(
    store: Store,
    settings: Settings,
    files: dict[str, str],
    events: list[DriftEvent] | None = None,
    branch: str | None = None,
) -> Revision:
    """Store the files' contents and commit them as the next revision (made on `branch`)."""
    bundles = {path: bundle(settings, path, text) for path, text in files.items()}
    ids = store.add_contents(list(bundles.values()))
    manifest = [
        ManifestEntry(path, b.key[0], ids[b.key], len(files[path])) for path, b in sorted(bundles.items())
    ]
    corpus = hashlib.sha1("".join(f"{e.path}\0{e.sha256}\n" for e in manifest).encode()).hexdigest()
    return store.commit_revision(NewRevision(corpus, "test-version", None, branch, manifest, events or []))


# Before schema 12 (SQLite), each revision had every row of its manifest: what undoes schema 12 in
# an index, for the tests of migrating older ones.
SQLITE_MANIFEST_PER_REVISION = (
    "DROP VIEW manifest",
    "CREATE TABLE manifest_old (rev_no INTEGER NOT NULL, path TEXT NOT NULL, sha256 TEXT NOT NULL, "
    "content_id INTEGER NOT NULL, size INTEGER NOT NULL, PRIMARY KEY (rev_no, path)) WITHOUT ROWID",
    "INSERT INTO manifest_old SELECT r.rev_no, m.path, m.sha256, m.content_id, m.size FROM revisions r "
    "JOIN manifest_rows m ON m.view = r.view AND m.first_rev <= r.rev_no AND m.until_rev > r.rev_no",
    "DROP TABLE manifest_rows",
    "ALTER TABLE manifest_old RENAME TO manifest",
    "CREATE INDEX manifest_by_revision ON manifest (rev_no, content_id)",
)


# Before schema 16 (SQLite), names were not numbered: what undoes schema 16 in an index (its two
# indexes as schema 15 made them), for the tests of migrating older ones.
SQLITE_NAMES_NUMBERED = (
    "DROP INDEX facts_for_map",
    "CREATE INDEX facts_for_map ON facts (def_kind, content_id, line, name, container, signature, kind) "
    "WHERE def_kind IS NOT NULL",
    "DROP INDEX ref_sites_by_content",
    "CREATE INDEX ref_sites_by_content ON ref_sites (content_id, name, uses)",
    "ALTER TABLE facts DROP COLUMN name_id",
    "ALTER TABLE ref_sites DROP COLUMN name_id",
    "DROP TABLE names",
)


# Before schema 7 (PostgreSQL), each revision had every row of its manifest.
PG_MANIFEST_PER_REVISION = (
    "CREATE TABLE ragraf.manifest_old (repo_id integer NOT NULL, rev_no integer NOT NULL, path text NOT NULL, "
    "sha256 text NOT NULL, content_id bigint NOT NULL, size bigint NOT NULL, PRIMARY KEY (repo_id, rev_no, path))",
    "INSERT INTO ragraf.manifest_old SELECT repo_id, rev_no, path, sha256, content_id, size FROM ragraf.manifest",
    "DROP VIEW ragraf.manifest",
    "DROP TABLE ragraf.manifest_rows",
    "ALTER TABLE ragraf.manifest_old RENAME TO manifest",
)
