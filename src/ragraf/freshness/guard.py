"""The guard: before any answer, compare the disk with the revision being answered from (DESIGN §6)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ragraf.config import Settings
from ragraf.corpus.stat_cache import RACY_NS, SKIPPED, settled, stat_matches
from ragraf.errors import StoreError
from ragraf.freshness import snapshot
from ragraf.freshness.snapshot import IGNORE_FILES, moved_files, stat_view
from ragraf.store import DriftEvent, ManifestEntry, Revision, StatEntry, Store

if TYPE_CHECKING:  # listing and hashing load when something moved: a read of an unchanged tree only stats
    from ragraf.corpus.discover import Relisting

RELIST_MAX_FILES = 100  # more files new to the changed folders than this: a full discovery decides


@dataclass(frozen=True)
class DriftSet:
    """Files whose disk content differs from the revision: created, modified, deleted."""

    created: tuple[str, ...] = ()
    modified: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    new_sha: tuple[tuple[str, str], ...] = ()  # (path, sha256 on disk) for created and modified

    @property
    def paths(self) -> set[str]:
        return set(self.created) | set(self.modified) | set(self.deleted)

    def change_of(self, path: str) -> str | None:
        if path in self.modified:
            return "modify"
        if path in self.deleted:
            return "delete"
        if path in self.created:
            return "create"
        return None

    def __bool__(self) -> bool:
        return bool(self.created or self.modified or self.deleted)


def compute_drift(
    settings: Settings,
    manifest: dict[str, ManifestEntry],
    cache: dict[str, StatEntry],
    seen: dict[str, StatEntry] | None = None,
) -> DriftSet:
    """Stat every file; re-hash only those whose size, mtime, ctime or inode moved; compare with the
    manifest. `seen` gets every listed file's stat entry (what a new snapshot needs)."""
    from ragraf.corpus.discover import discover
    from ragraf.corpus.extract import Unindexable, extract

    found = discover(settings.root, settings.max_file_bytes)
    created: list[str] = []
    modified: list[str] = []
    new_sha: list[tuple[str, str]] = []
    on_disk: set[str] = set()
    for st in found.files:
        cached = cache.get(st.path)
        entry = manifest.get(st.path)
        if stat_matches(cached, st):
            assert cached is not None
            sha = cached.sha256
        else:
            checked = time.time_ns()
            try:
                sha = extract(settings.root / st.path, st.path, settings.max_line_chars).sha256
            except (Unindexable, PermissionError):
                sha = SKIPPED  # as an index run records it: made readable, its ctime moves
            except OSError:
                continue  # vanished while we looked: counted as deleted below if it was indexed
            cached = StatEntry(st.size, st.mtime_ns, st.ctime_ns, st.inode, sha, checked)
        if seen is not None:
            seen[st.path] = cached
        if sha == SKIPPED:
            continue
        on_disk.add(st.path)
        if entry is None:
            created.append(st.path)
            new_sha.append((st.path, sha))
        elif entry.sha256 != sha:
            modified.append(st.path)
            new_sha.append((st.path, sha))
    if seen is not None:
        now = time.time_ns()
        seen.update(
            (st.path, StatEntry(st.size, st.mtime_ns, st.ctime_ns, st.inode, SKIPPED, now))
            for st in found.oversized
        )
    deleted = [p for p in manifest if p not in on_disk]
    return DriftSet(tuple(created), tuple(modified), tuple(sorted(deleted)), tuple(new_sha))


@dataclass(frozen=True)
class Learnt:
    """What a read hashed that the revision vouches for, so the next read need not hash it again:
    stat entries of files that moved but hold what was indexed (touched, checked out and back), or,
    after a listing without drift, of every file with the folder stamps of a whole new snapshot
    (a folder changed by a file the index leaves out, another machine's checkout)."""

    rev_no: int
    entries: dict[str, StatEntry]  # new to the stat cache
    stamps: dict[str, int] | None = None  # alone: the folders a read listed again, their new files
    listing: dict[str, StatEntry] | None = None  # with stamps: every file, for the new snapshot
    removed: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class GuardResult:
    """The drift set of one read, and the ledger's view of it."""

    drift: DriftSet
    open_entries: int
    affected_symbols: int
    learnt: Learnt | None = None


_GUARDED: set[str] = set()  # the roots this process has guarded: from the second guard on, watch.py


def _moved(settings: Settings, store: Store) -> list[str] | None:
    """The snapshot's files whose stat moved: the stat pass, skipped in a long-running process while
    the kernel reports nothing under the root (watch.py). A root's first guard in a process is the
    plain pass: a one-shot command guards once and loads no inotify (ctypes, libc lookup)."""
    if not settings.watch or str(settings.root) not in _GUARDED:
        _GUARDED.add(str(settings.root))
        return moved_files(settings.root, store.guard_snapshot())
    from ragraf.freshness import watch  # inotify through ctypes: only a long-running server watches

    digest_of = getattr(store, "guard_snapshot_digest", None)
    digest = digest_of() if digest_of is not None else None
    blob = None if digest is not None else store.guard_snapshot()
    if digest is None:
        if blob is None:
            return None
        digest = hashlib.sha1(blob).digest()

    def snapshot_blob() -> bytes | None:
        nonlocal blob
        if blob is None:
            blob = store.guard_snapshot()
        return blob

    def folders() -> list[str] | None:
        view = stat_view(settings.root, snapshot_blob())
        return [f"{view.root}/{f}" if f else view.root for f in view.folders] if view is not None else None

    def restat(paths: list[str]) -> list[str] | None:
        view = stat_view(settings.root, snapshot_blob())
        return view.moved_among(paths) if view is not None else None

    def delta() -> watch.Delta | None:
        # The SQLite store's digest is its base's sha1, then its delta's; the folder records must match too.
        found = snapshot.delta_rows(snapshot_blob()) if len(digest) == 40 else None
        return (digest[:20] + found[1], found[0]) if found is not None else None

    return watch.moved_since(
        str(settings.root),
        digest,
        lambda: moved_files(settings.root, snapshot_blob()),
        folders,
        restat,
        delta,
    )


def watched_moved(settings: Settings, store: Store) -> list[str] | None:
    """The files a guard of this process found moved a moment ago, when the kernel reported nothing
    under the root since (watch.py): an index run right after it needs no stat pass of its own.
    None in a process that does not watch the root (a one-shot command loads no inotify)."""
    digest_of = getattr(store, "guard_snapshot_digest", None)
    if not settings.watch or str(settings.root) not in _GUARDED or digest_of is None:
        return None
    from ragraf.freshness import watch

    digest = digest_of()
    return watch.kept(str(settings.root), digest) if digest is not None else None


def _relisted(settings: Settings, store: Store) -> tuple[list[str], list[str], Relisting] | None:
    """The moved files and the files new to the folders whose stamp moved (a file created, or a
    folder listed within the racy window of its last change), listing only those folders again as
    an index run does; None when a full discovery must decide (relist says when)."""
    from ragraf.corpus.discover import relist

    blob = store.guard_snapshot()
    changes = snapshot.changes_since(settings.root, blob)
    if changes is None or not changes.folders:
        return None
    known, folders = snapshot.listed_names(settings.root, blob)
    found = relist(settings.root, settings.max_file_bytes, known, folders, changes.folders, RELIST_MAX_FILES)
    if found is None:
        return None
    new = [st.path for st in (*found.added.files, *found.added.oversized)]
    return [*changes.moved, *new], new, found


def quick_drift(
    settings: Settings,
    store: Store,
    rev: Revision,
    seen: dict[str, StatEntry] | None = None,
    stamps: dict[str, int] | None = None,
) -> DriftSet | None:
    """The drift without listing every file: the stat pass, and the folders whose stamp moved
    listed again on their own; None when the file list itself must be taken again (a full
    discovery). `seen` gets the stat entries of moved files that still agree with the revision and
    were not written just now; `stamps` the new stamps of the folders listed again when the
    snapshot may take them (no drift, no folder gone or changed just now, every new file in
    `seen`), so the next read need not."""
    moved = _moved(settings, store)
    relisted = None
    if moved is None:
        relisted = _relisted(settings, store)
        if relisted is None:
            return None
        moved = relisted[0]
    if not moved and relisted is None:
        return DriftSet()
    # A few moved files (often just "racy" ones hashed in the same second they were written) must not
    # cost loading the whole manifest on every read.
    lookup = getattr(store, "manifest_entry", None)
    manifest = {} if lookup and len(moved) <= 100 else store.manifest(rev.rev_no)
    from ragraf.corpus.extract import Unindexable, extract

    modified, created, deleted, new_sha = [], [], [], []
    for path in moved:
        checked = time.time_ns()
        try:
            st = os.lstat(settings.root / path)
            if st.st_size > settings.max_file_bytes:
                raise Unindexable("too large")  # grown since: left out, as a listing leaves it
            sha = extract(settings.root / path, path, settings.max_line_chars).sha256
        except Unindexable:
            sha = SKIPPED
        except OSError:
            return None
        entry = manifest.get(path) if manifest else lookup(rev.rev_no, path)  # type: ignore[misc]
        if entry is None and sha != SKIPPED:
            created.append(path)
            new_sha.append((path, sha))
        elif entry is not None and sha == SKIPPED:
            deleted.append(path)
        elif entry is not None and entry.sha256 != sha:
            modified.append(path)
            new_sha.append((path, sha))
        elif seen is not None and settled(checked, st.st_mtime_ns):
            seen[path] = StatEntry(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, sha, checked)
    drift = DriftSet(tuple(created), tuple(modified), tuple(deleted), tuple(new_sha))
    if relisted is not None and stamps is not None and seen is not None and not drift:
        _moved_all, new, found = relisted
        if not found.gone and -1 not in found.stamps.values() and all(p in seen for p in new):
            stamps.update(found.stamps)
    return drift


def _trusted_listing(stamps: dict[str, int], seen: dict[str, StatEntry]) -> bool:
    """Whether a snapshot of this listing would spare the next read a listing of its own: not with
    a folder it must list again (unreadable, or changed just now), nor with an ignore file written
    just now (or dated in the future), which sends it to list again."""
    if -1 in stamps.values():
        return False
    return not any(
        path.rsplit("/", 1)[-1] in IGNORE_FILES and not settled(entry.checked_ns, entry.mtime_ns)
        for path, entry in seen.items()
    )


def guard(store: Store, settings: Settings, rev: Revision) -> GuardResult:
    """Compute the drift against rev and append what is new to the ledger (detected_by guard)."""
    seen: dict[str, StatEntry] = {}
    relisted: dict[str, int] = {}
    drift = quick_drift(settings, store, rev, seen, relisted)
    learnt = Learnt(rev.rev_no, seen, relisted or None) if seen or relisted else None
    manifest: dict[str, ManifestEntry] | None = None
    if drift is None:
        from ragraf.corpus.discover import dir_stamps

        stamps = dir_stamps(settings.root)  # before listing, as an index run takes them
        manifest, cache = store.manifest(rev.rev_no), store.stat_cache()
        drift = compute_drift(settings, manifest, cache, seen)
        if not drift and _trusted_listing(stamps, seen):
            new = {p: e for p, e in seen.items() if cache.get(p) != e}
            learnt = Learnt(rev.rev_no, new, stamps, seen, [p for p in cache if p not in seen])
    if not drift:
        return GuardResult(drift, store.open_summary(rev.rev, [])[0], 0, learnt)
    if manifest is None:
        # A few drifted files look up their own entries rather than load the whole manifest.
        lookup = getattr(store, "manifest_entry", None)
        if lookup is not None and len(drift.paths) <= 100:
            changed = (*drift.modified, *drift.deleted)
            manifest = {p: e for p in changed if (e := lookup(rev.rev_no, p)) is not None}
        else:
            manifest = store.manifest(rev.rev_no)
    new_sha = dict(drift.new_sha)
    events = []
    for path in drift.created:
        events.append(DriftEvent(rev.rev, "create", path, "guard", None, new_sha[path]))
    for path in drift.modified:
        old = manifest[path]
        events.append(DriftEvent(rev.rev, "modify", path, "guard", old.sha256, new_sha[path], old.content_id))
    for path in drift.deleted:
        old = manifest[path]
        events.append(DriftEvent(rev.rev, "delete", path, "guard", old.sha256, None, old.content_id))
    with contextlib.suppress(sqlite3.OperationalError, StoreError):
        store.register_drift(events)  # a read-only or busy index still answers, marked
    entries, symbols = store.open_summary(rev.rev, sorted(drift.paths))
    return GuardResult(drift, entries, symbols, learnt)


def remember(store: Store, learnt: Learnt) -> bool:
    """Write what a read learnt, if the revision it checked against is still the current one; the
    caller holds the writer lock, so no index run changes the snapshot meanwhile."""
    current = store.current_revision()
    if current is None or current.rev_no != learnt.rev_no:
        return False
    if learnt.stamps is not None and learnt.listing is not None:
        blob = snapshot.pack(learnt.listing, learnt.stamps, RACY_NS)
    else:
        old = store.guard_snapshot()
        if old is None:
            return False
        if learnt.stamps is not None:  # folders listed again: their stamps, their new files
            blob = snapshot.revise(old, learnt.entries, [], learnt.stamps, [], RACY_NS)
        else:
            blob = snapshot.patch(old, learnt.entries, RACY_NS)
    store.update_stat_cache(learnt.entries, learnt.removed)
    store.set_guard_snapshot(blob, snapshot.base_length(blob))
    return True
