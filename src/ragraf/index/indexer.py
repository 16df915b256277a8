"""Incremental indexing: hash, compare with the current manifest, chunk what changed, commit a revision.

About 600 lines: one run's steps (discovery, hashing through the stat cache, the moved-files fast
path, preparing new contents, the revision and its report) read in order, each a function.
"""

from __future__ import annotations

import bisect
import os
import stat
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

from ragraf.config import Settings
from ragraf.corpus.discover import (
    BAD_NAME,
    UNREADABLE_FOLDER,
    Discovery,
    FileStat,
    Relisting,
    dir_stamps,
    discover,
    relist,
)
from ragraf.corpus.extract import Unindexable, extract
from ragraf.corpus.gitcmd import run_watched
from ragraf.corpus.rules import excluded_reason
from ragraf.corpus.stat_cache import RACY_NS, SKIPPED, stat_matches
from ragraf.freshness import snapshot
from ragraf.freshness.guard import watched_moved
from ragraf.index.corpus_hash import changed_corpus_hash, corpus_hash
from ragraf.index.progress import Progress
from ragraf.languages import language_of
from ragraf.store import (
    ChunkHit,
    ContentBundle,
    ContentKey,
    DriftEvent,
    ManifestEntry,
    NewRevision,
    Revision,
    StatEntry,
    Store,
    laid_over,
)

# New contents stored at a time... Each store writes a lexical segment the next ones merge: on the
# speed corpus the main process took 7.1-7.4 CPU-s at 600, 7.7-8.0 at 200 (1,200: no better).
_BATCH_FILES = 600
_BATCH_TEXT = 16 << 20  # ...or fewer, once their chunks hold this many characters (generated headers)
# Up to this many moved files a run commits a change to the current revision (index_moved);
# past it, the whole pass over the listing costs about the same.
CHANGE_MAX_FILES = 2000
UNCHANGED_UNINDEXABLE = "unindexable (unchanged since last checked)"
UNREADABLE = "permission denied"
SKIPPED_LISTED = 50  # files a report names among those skipped for what they are, not where


@dataclass(frozen=True)
class Named:
    """What the kernel named under a watched root since the previous run of the live loop, and
    the folders it watches (relative, "" for the root): a run of that loop stats only these paths,
    what is under the named folders and the files and folders the snapshot does not trust yet."""

    root: str
    paths: frozenset[str]
    folders: frozenset[str]
    watched: frozenset[str]
    read_last: int = 0  # files the loop's last run read: at most that many are still racy


_NAMED: ContextVar[Named | None] = ContextVar("ragraf_named_changes", default=None)


@dataclass
class PassTier:
    """The static tier whose vectors the workers compute for each new chunk in the pass that chunks
    it, beside the parse (the run need not read every chunk back to embed it after): (model id,
    dim) from `resolve`, asked when a run first has files to chunk (a run with nothing to do loads
    no table)."""

    resolve: Callable[[], tuple[str, int] | None]
    embedded: int = 0  # chunks stored with their vector
    _static: tuple[str, int] | None = None
    _asked: bool = False

    def get(self) -> tuple[str, int] | None:
        if not self._asked:
            self._static, self._asked = self.resolve(), True
        return self._static


_IN_PASS: ContextVar[PassTier | None] = ContextVar("ragraf_static_in_pass", default=None)


@contextmanager
def static_in_pass(resolve: Callable[[], tuple[str, int] | None]) -> Iterator[PassTier]:
    """Runs in this context embed each new chunk with the static table `resolve` names as they chunk it."""
    tier = PassTier(resolve)
    token = _IN_PASS.set(tier)
    try:
        yield tier
    finally:
        _IN_PASS.reset(token)


def _pass_settings(settings: Settings) -> Settings:
    """The settings the workers get: with the static model to embed with, in a static_in_pass run."""
    tier = _IN_PASS.get()
    static = tier.get() if tier else None
    return replace(settings, static_model=static[0]) if static else settings


@contextmanager
def named_changes(named: Named) -> Iterator[None]:
    """Runs in this context (the live loop's thread) take what the kernel named for the stat pass."""
    token = _NAMED.set(named)
    try:
        yield
    finally:
        _NAMED.reset(token)


def _under(sorted_names: list[str], folder: str) -> range:
    """The positions of the names under folder in a sorted list."""
    if not folder:
        return range(len(sorted_names))
    lo = bisect.bisect_left(sorted_names, folder + "/")
    return range(lo, bisect.bisect_left(sorted_names, folder + "0", lo))  # "0" follows "/"


def named_changes_since(root: Path, blob: bytes | None, named: Named) -> snapshot.Changes | None:
    """snapshot.changes_since over what the kernel named alone; None for a full stat pass (a
    folder of the snapshot the kernel does not watch, unless named, or what changes_since says
    None to)."""
    view = snapshot.stat_view(root, blob)
    if view is None:
        return None
    folders = view.folders
    files = set(view.untrusted)  # hashed while racy: look again
    spots = {i for i, mtime in enumerate(view.folder_mtimes) if mtime == -1}
    where = {f: i for i, f in enumerate(folders)}
    for path in named.paths:
        i = bisect.bisect_left(view.paths, path)
        if i < len(view.paths) and view.paths[i] == path:
            files.add(i)
        parent = path.rsplit("/", 1)[0] if "/" in path else ""
        if parent in where:
            spots.add(where[parent])
        if path in where or path in named.folders:  # a folder (made, moved or removed): all below it
            files.update(_under(view.paths, path))
            spots.update(_under(folders, path))
            if path in where:
                spots.add(where[path])
    if any(
        f not in named.watched and i not in spots and excluded_reason(f"{f}/") is None
        for i, f in enumerate(folders)
    ):
        return None  # a folder the kernel does not watch, not named as gone, that may hold files
    moved_folders = []
    for i in sorted(spots):
        try:
            now = os.stat(root / folders[i]).st_mtime_ns
        except OSError:
            now = None
        if now != view.folder_mtimes[i]:
            moved_folders.append(folders[i])
    moved = []
    for i in sorted(files):
        try:
            st = os.lstat(root / view.paths[i])
            key: tuple[int, int, int, int] | None = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
        except OSError:
            key = None
        if key is None or key != view.key(i):
            moved.append(view.paths[i])
    if any(p.rsplit("/", 1)[-1] in snapshot.IGNORE_FILES for p in moved):
        return None  # the rules that pick files may have changed
    return snapshot.Changes(moved, moved_folders)


@dataclass(frozen=True, slots=True)  # one per file of the repository: no __dict__ each
class HashedFile:
    stat: FileStat
    sha256: str
    read: bool  # False when the hash came from the stat cache


@dataclass
class IndexReport:
    """What `ragraf index` did (its --json shape)."""

    index_rev: str | None
    corpus_hash: str | None
    files: dict[str, int]
    chunks: dict[str, int]
    duration_s: float
    full_rebuild: bool = False
    reason: str | None = None
    skipped: int = 0
    # Files this run examined and skipped for their size or content (or as symlinks), which
    # their path does not foretell, unlike a lock file or an excluded folder; the first
    # SKIPPED_LISTED by path. One skipped before and unchanged since is not read, nor named.
    skipped_files: list[dict[str, str]] = field(default_factory=list)
    new_revision: bool = False
    embeddings: dict[str, int] = field(default_factory=dict)
    static_embeddings: dict[str, int] | None = None  # the static tier beside a transformer, embedded first
    warnings: list[str] = field(default_factory=list)
    files_read: int = 0  # files whose content was read (the rest were known by their stat)
    base: dict[str, object] | None = None  # in a git work tree: what the base index did

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "op": "index",
            "index_rev": self.index_rev,
            "corpus_hash": self.corpus_hash,
            "files": self.files,
            "chunks": self.chunks,
            "duration_s": round(self.duration_s, 3),
            "new_revision": self.new_revision,
            "full_rebuild": self.full_rebuild,
            "reason": self.reason,
            "skipped": self.skipped,
            "skipped_files": self.skipped_files,
            "files_read": self.files_read,
        }
        if self.embeddings:
            out["embeddings"] = self.embeddings
        if self.base is not None:
            out["base"] = self.base
        if self.static_embeddings is not None:
            out["static_embeddings"] = self.static_embeddings
        out["warnings"] = self.warnings
        return out


def index_version(settings: Settings, model_id: str = "none", dim: int = 0, static: str = "") -> str:
    """Embedding model + dim + chunker version + chunk parameters (+ the static tier's model beside a
    transformer): a change forces a full rebuild, which reuses every stored content and its vectors."""
    version = f"{model_id}|dim={dim}|{settings.chunk_params()}"
    return f"{version}|static={static}" if static else version


def git_stamp(root: Path) -> tuple[str | None, str | None]:
    """(HEAD commit, branch) of the work tree at root, or Nones outside git."""
    try:
        out = run_watched(["git", "rev-parse", "-q", "HEAD", "--abbrev-ref", "HEAD"], root)
    except (OSError, subprocess.TimeoutExpired):
        return None, None
    lines = out.stdout.decode(errors="replace").split()
    if out.returncode != 0 or len(lines) < 2:
        return None, None
    return lines[0], (None if lines[1] == "HEAD" else lines[1])


def current_version(current: Revision | None, settings: Settings, model_id: str, dim: int | None) -> str:
    """The index version this run builds; dim=None (the embedder cannot say now) keeps the previous
    revision's dimension for the same model rather than forcing a rebuild now and another later."""
    if dim is None and current is not None and current.index_version.startswith(f"{model_id}|dim="):
        return current.index_version
    static = ""
    if model_id != "none":
        from ragraf.embed.static import static_tier_id  # numpy: only with an embedder

        static = static_tier_id(settings)
    return index_version(settings, model_id, dim or 0, static)


def unchanged_report(current: Revision, t0: float, reason: str | None = None) -> IndexReport:
    """What a run that found nothing to do reports."""
    return IndexReport(
        index_rev=current.rev, corpus_hash=current.corpus_hash,
        files={"added": 0, "modified": 0, "deleted": 0, "unchanged": current.files},
        chunks={"total": current.chunks, "new": 0}, duration_s=time.monotonic() - t0, reason=reason,
    )  # fmt: skip


def hash_files(
    root: Path,
    files: list[FileStat],
    cache: dict[str, StatEntry],
    settings: Settings,
    trust_cache: bool,
    progress: Progress,
    taken: dict[str, str] | None = None,
) -> tuple[list[HashedFile], list[tuple[FileStat, str]]]:
    """sha256 of every file, reading only those whose stat moved and are not `taken` (read and
    hashed already: path -> sha256); also the unindexable ones and why."""
    hashed: list[HashedFile] = []
    skipped: list[tuple[FileStat, str]] = []
    taken = taken or {}
    progress.start("hashing files", len(files) - len(taken))
    for st in files:
        cached = cache.get(st.path)
        if st.path in taken:
            hashed.append(HashedFile(st, taken[st.path], True))
            continue
        if trust_cache and stat_matches(cached, st):
            assert cached is not None
            if cached.sha256 == SKIPPED:
                skipped.append((st, UNCHANGED_UNINDEXABLE))
            else:
                hashed.append(HashedFile(st, cached.sha256, False))
        elif st.size > settings.max_file_bytes:
            # Listed small, grown since (a moved file or the last listing): left out as a walk would.
            skipped.append((st, f"larger than {settings.max_file_bytes} bytes"))
        else:
            try:
                ex = extract(root / st.path, st.path, settings.max_line_chars)
            except Unindexable as why:
                skipped.append((st, str(why)))
            except PermissionError:
                # Named, and its stat remembered: once it is made readable, its ctime tells the guard.
                skipped.append((st, UNREADABLE))
            except OSError:
                pass  # vanished between listing and reading: not part of this revision
            else:
                hashed.append(HashedFile(st, ex.sha256, True))
        progress.advance()
    progress.done()
    return hashed, skipped


def read_new(
    files: list[FileStat],
    cache: dict[str, StatEntry],
    settings: Settings,
    store: Store,
    progress: Progress,
    warnings: list[str],
) -> tuple[dict[str, str], int]:
    """A first index's read of the files the cache does not vouch for, once each, in the workers:
    hashed, chunked and their facts extracted from that one read, and stored (orphans until the
    revision names them). The sha256 of each file taken and the chunks stored; a file not taken
    (unindexable, unreadable, vanished) is left to hash_files, which says why."""
    from ragraf.index.workers import prepare_all

    chunker = settings.chunk_params()
    jobs = [
        (("", language_of(st.path), chunker), st.path)
        for st in files
        if st.size <= settings.max_file_bytes and not stat_matches(cache.get(st.path), st)
    ]
    taken: dict[str, str] = {}
    new_chunks = 0
    batch = _Batch(store)
    progress.start("reading and chunking files", len(jobs))
    for (_key, path), bundle in zip(jobs, prepare_all(jobs, _pass_settings(settings)), strict=True):
        progress.advance()
        if bundle is None:
            continue
        _warn_failed(bundle, path, settings, warnings)
        taken[path] = bundle.key[0]
        new_chunks += len(bundle.chunks)
        batch.add(bundle)
    batch.flush()
    progress.done()
    return taken, new_chunks


class _Batch:
    """New contents stored _BATCH_FILES at a time, or fewer when they hold _BATCH_TEXT of chunks;
    `ids` gathers their content ids."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.static = _IN_PASS.get()
        self.bundles: list[ContentBundle] = []
        self.text = 0
        self.ids: dict[ContentKey, int] = {}

    def add(self, bundle: ContentBundle) -> None:
        self.bundles.append(bundle)
        # Its text and lexical row, the records read by position (ContentBundle).
        self.text += sum(2 * len(text) + len(tail) for *_, text, tail in bundle.chunks)
        if len(self.bundles) >= _BATCH_FILES or self.text >= _BATCH_TEXT:
            self.flush()

    def flush(self) -> None:
        tier = self.static
        static = tier.get() if tier and any(b.vectors for b in self.bundles) else None
        self.ids.update(self.store.add_contents(self.bundles, static))
        if tier and static:
            tier.embedded += sum(len(b.chunks) for b in self.bundles if b.vectors)
        self.bundles, self.text = [], 0


def _warn_failed(bundle: ContentBundle, path: str, settings: Settings, warnings: list[str]) -> None:
    from ragraf.index.workers import FAILED

    if bundle.facts_status == FAILED:
        warnings.append(
            f"{path}: parsing took longer than {settings.parse_timeout_s:g} s (or crashed the parser); "
            "indexed by lines, without facts"
        )


def store_contents(
    store: Store,
    settings: Settings,
    need: dict[ContentKey, list[str]],
    progress: Progress,
    warnings: list[str],
) -> tuple[dict[ContentKey, int], int]:
    """The content ids of these contents (each with the paths that hold it), chunking and storing
    what the index does not hold yet; also how many chunks were new. Content already stored
    (another path, an older revision, a killed run) is reused as is. A file the parser gave up on
    adds to `warnings`. A content whose file changed (or vanished) since it was hashed is read from
    another path that holds it; with none left it has no id: see `unsettled`."""
    from ragraf.index.workers import prepare_all  # chunking and tree-sitter: only with work to do

    ids = store.content_ids(list(need))
    missing = [key for key in need if key not in ids]
    new_chunks = 0
    progress.start("chunking files", len(missing))
    batch = _Batch(store)
    jobs = [(key, need[key][0]) for key in missing]
    tries = 1
    while jobs:
        failed = []
        for (key, path), bundle in zip(jobs, prepare_all(jobs, _pass_settings(settings)), strict=True):
            if tries == 1:
                progress.advance()
            if bundle is None:
                failed.append(key)
                continue
            _warn_failed(bundle, path, settings, warnings)
            new_chunks += len(bundle.chunks)
            batch.add(bundle)
        jobs = [(key, need[key][tries]) for key in failed if len(need[key]) > tries]
        tries += 1
    batch.flush()
    ids.update(batch.ids)
    progress.done()
    return ids, new_chunks


def unsettled(
    keyed: list[tuple[ContentKey, HashedFile]], ids: dict[ContentKey, int], old: dict[str, ManifestEntry]
) -> tuple[list[ManifestEntry], list[str], set[str]]:
    """The files written to while this run read them (an editor saving, a build): each keeps its
    entry of the previous revision, or stays out if it is new; the warnings that name them; and
    their paths, whose stat is recorded so that it never matches: the guard flags them and the
    next run reads them."""
    kept, warnings, paths = [], [], set()
    for key, hf in keyed:
        if key in ids:
            continue
        path = hf.stat.path
        paths.add(path)
        prior = old.get(path)
        if prior is not None:
            kept.append(prior)
        how = "kept as it was in the previous revision" if prior is not None else "left out"
        warnings.append(f"{path}: changed while being indexed; {how}; run `ragraf index` again")
    return kept, warnings, paths


def index_moved(
    store: Store,
    settings: Settings,
    current: Revision,
    moved: list[str],
    blob: bytes,
    stamp: tuple[str | None, str | None] | None,
    progress: Progress,
    t0: float,
    checked_ns: int,
    relisted: Relisting | None = None,
) -> IndexReport:
    """The common run: the stat pass named the few files whose stat moved (vanished ones
    included) and, when folders changed, `relisted` lists only those folders again and names the
    files new to them. Only these files are read, the revision is committed as a change to the
    current one and the snapshot is revised in place, so the cost follows the change, not the
    size of the repository."""
    root = settings.root
    files: list[FileStat] = []
    vanished: list[str] = []
    for path in moved:
        try:
            st = os.lstat(root / path)
        except OSError:
            vanished.append(path)  # not part of this revision
            continue
        if not stat.S_ISREG(st.st_mode):
            vanished.append(path)  # now a folder (listed as one) or a symlink (never followed)
            continue
        files.append(FileStat(path, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino))
    hashed, unindexable = hash_files(root, files, {}, settings, False, progress)
    old = {p: e for p in moved if (e := store.manifest_entry(current.rev_no, p)) is not None}
    chunker = settings.chunk_params()
    keyed = [((hf.sha256, language_of(hf.stat.path), chunker), hf) for hf in hashed]
    warnings: list[str] = []
    holding: dict[ContentKey, list[str]] = {}
    for key, hf in keyed:
        holding.setdefault(key, []).append(hf.stat.path)
    ids, new_chunks = store_contents(store, settings, holding, progress, warnings)
    kept, busy, in_flight = unsettled(keyed, ids, old)
    warnings += busy
    now_entries = [
        ManifestEntry(hf.stat.path, hf.sha256, ids[key], hf.stat.size) for key, hf in keyed if key in ids
    ] + kept
    changed = [e for e in now_entries if (o := old.get(e.path)) is None or o.sha256 != e.sha256]
    present = {e.path for e in now_entries}
    removed = sorted(p for p in old if p not in present)
    counts = Counter("modified" if e.path in old else "added" for e in changed)
    counts["deleted"] = len(removed)
    rev = current
    if changed or removed:
        chash = changed_corpus_hash(
            current.corpus_hash, lambda: store.manifest_hashes(current.rev_no),
            [(e.path, e.sha256) for e in changed], removed,
        )  # fmt: skip
        head, branch = stamp or git_stamp(root)
        events = index_events(current.rev, old, now_entries)
        rev = store.commit_revision(
            NewRevision(
                chash, current.index_version, head, branch, changed, events, laid_over(current),
                parent=current.rev_no, removed=tuple(removed),
            )
        )  # fmt: skip
    store.gc(settings.keep_revisions)
    fresh = {hf.stat.path: _stat_entry(hf, checked_ns, in_flight) for hf in hashed}
    fresh.update((st.path, StatEntry(*_stat_key(st), SKIPPED, checked_ns)) for st, _why in unindexable)
    store.update_stat_cache(fresh, vanished)
    stamps, gone = (relisted.stamps, relisted.gone) if relisted is not None else ({}, [])
    blob = snapshot.revise(blob, fresh, vanished, stamps, gone, RACY_NS)
    store.set_guard_snapshot(blob, snapshot.base_length(blob))
    counts["unchanged"] = rev.files - counts["added"] - counts["modified"]
    return IndexReport(
        index_rev=rev.rev,
        corpus_hash=rev.corpus_hash,
        files={k: counts[k] for k in ("added", "modified", "deleted", "unchanged")},
        files_read=len(hashed),
        chunks={"total": rev.chunks, "new": new_chunks},
        duration_s=time.monotonic() - t0,
        skipped=max(0, snapshot.file_count(blob) - rev.files)
        + len(relisted.added.skipped if relisted else []),
        skipped_files=skipped_files(relisted.added.skipped if relisted else [], unindexable),
        new_revision=rev is not current,
        warnings=warnings,
    )


def _stat_key(st: FileStat) -> tuple[int, int, int, int]:
    return st.size, st.mtime_ns, st.ctime_ns, st.inode


def _stat_entry(hf: HashedFile, now: int, in_flight: set[str]) -> StatEntry:
    """What the stat cache remembers of a file read this run; one written to meanwhile gets a
    size no file has, so the guard flags it and the next run reads it again."""
    size, mtime, ctime, inode = _stat_key(hf.stat)
    return StatEntry(-1 if hf.stat.path in in_flight else size, mtime, ctime, inode, hf.sha256, now)


def index_events(
    rev: str | None, old: dict[str, ManifestEntry], new: list[ManifestEntry]
) -> list[DriftEvent]:
    """The ledger entries a reindex contributes: every file that differs from the previous revision."""
    if rev is None:
        return []
    events = []
    new_by_path = {e.path: e for e in new}
    for path, entry in new_by_path.items():
        prior = old.get(path)
        if prior is None:
            events.append(DriftEvent(rev, "create", path, "index", None, entry.sha256))
        elif prior.sha256 != entry.sha256:
            events.append(
                DriftEvent(rev, "modify", path, "index", prior.sha256, entry.sha256, prior.content_id)
            )
    for path, prior in old.items():
        if path not in new_by_path:
            events.append(DriftEvent(rev, "delete", path, "index", prior.sha256, None, prior.content_id))
    return events


def run_index(
    store: Store,
    settings: Settings,
    model_id: str = "none",
    dim: int | None = 0,
    full: bool = False,
    progress: Progress | None = None,
    paths: list[str] | None = None,
    seed: dict[str, StatEntry] | None = None,
    listed: tuple[dict[str, int], Discovery] | None = None,
    stamp: tuple[str | None, str | None] | None = None,
    base_rev: str | None = None,
) -> IndexReport:
    """Bring the index up to date with the disk: one new revision, or none when nothing changed.

    dim=None means the embedder could not say (a remote endpoint is down): the previous revision's
    dimension for the same model stands, rather than forcing a rebuild now and another one later.
    The base passes the candidate `paths` (its commit's tree) and the git `stamp`; a work tree's new
    view passes the folder stamps and files it `listed`, the `seed` stat entries git vouched for
    (their content is the base's, so they are not read) and the `base_rev`.
    """
    t0 = time.monotonic()
    # What this run reads is vouched for as read from now on: a file counts as settled only when
    # its last write came a clock tick (or the racy window) before any of its reads.
    checked_ns = time.time_ns()
    progress = progress or Progress()
    root = settings.root
    current = store.current_revision()
    version = current_version(current, settings, model_id, dim)
    reason = None
    if current is not None and current.index_version != version:
        full = True
        reason = f"index version mismatch: full reindex ({current.index_version} -> {version})"
        progress.note(reason)
    blob = store.guard_snapshot() if current is not None and not full and listed is None else None
    named = _NAMED.get()
    changes = None
    if current is not None and blob is not None:
        if named is not None and named.root == os.path.realpath(root):
            changes = named_changes_since(root, blob, named)
        if changes is None and (kept := watched_moved(settings, store)) is not None:
            changes = snapshot.Changes(kept, [])  # a server's guard has just made the pass
        if changes is None:
            changes = snapshot.changes_since(root, blob)
    if changes is not None and not changes.moved and not changes.folders:
        assert current is not None  # no folder and no file moved since the last run: nothing to do
        return unchanged_report(current, t0, reason)
    moved = changes.moved if changes is not None else None
    relisted = None
    if changes is not None and changes.folders:
        # Only the folders whose stamp moved are listed again; a full discovery when they cannot say.
        known, folders = snapshot.listed_names(root, blob)
        relisted = relist(root, settings.max_file_bytes, known, folders, changes.folders, CHANGE_MAX_FILES)
        new = [st.path for st in (*relisted.added.files, *relisted.added.oversized)] if relisted else []
        moved = [*changes.moved, *new] if relisted is not None else None
    if moved is not None and len(moved) <= CHANGE_MAX_FILES:
        assert current is not None and blob is not None
        return index_moved(store, settings, current, moved, blob, stamp, progress, t0, checked_ns, relisted)
    snap = snapshot.unpack(blob) if relisted is None else None
    listing = snapshot.listing_after(root, snap, moved) if snap is not None and moved is not None else None
    old_manifest = store.manifest(current.rev_no) if current else {}
    if listed is not None:
        stamps, found = listed
    elif listing is not None and snap is not None:
        # Folders unchanged: the last listing stands; only moved files are read below.
        stamps = dict(zip(snap.folders, snap.folder_mtimes, strict=True))
        found = Discovery(listing[0], [])
    else:
        stamps = dir_stamps(root)  # before listing, so a file created meanwhile still shows as drift
        found = discover(root, settings.max_file_bytes, paths)
    stored = store.stat_cache()
    cache = {**stored, **seed} if seed else stored
    warnings: list[str] = list(found.warnings)
    # A first index reads, hashes and chunks each file at once; later runs hash first, to chunk
    # only contents the index lacks.
    taken, read_chunks = (
        read_new(found.files, {} if full else cache, settings, store, progress, warnings)
        if current is None
        else ({}, 0)
    )
    hashed, unindexable = hash_files(root, found.files, cache, settings, not full, progress, taken)
    chunker = settings.chunk_params()

    manifest: list[ManifestEntry] = []
    need: dict[ContentKey, list[str]] = {}  # each new content, with the paths that hold it
    fresh: list[HashedFile] = []  # the files whose content this run must find or store
    counts: Counter[str] = Counter()
    for hf in hashed:
        path = hf.stat.path
        language = language_of(path)
        old = old_manifest.get(path)
        if old is None:
            counts["added"] += 1
        elif old.sha256 != hf.sha256:
            counts["modified"] += 1
        else:
            counts["unchanged"] += 1
            if not full:
                manifest.append(ManifestEntry(path, hf.sha256, old.content_id, hf.stat.size))
                continue
        need.setdefault((hf.sha256, language, chunker), []).append(hf.stat.path)
        fresh.append(hf)
    seen_paths = {hf.stat.path for hf in hashed}
    counts["deleted"] = sum(1 for p in old_manifest if p not in seen_paths)

    ids, new_chunks = store_contents(store, settings, need, progress, warnings)
    new_chunks += read_chunks

    # Only the files above: an unchanged file whose content a new file shares is in the manifest already.
    keyed = [((hf.sha256, language_of(hf.stat.path), chunker), hf) for hf in fresh]
    manifest += [
        ManifestEntry(hf.stat.path, hf.sha256, ids[key], hf.stat.size) for key, hf in keyed if key in ids
    ]
    kept, busy, in_flight = unsettled(keyed, ids, old_manifest)
    manifest += kept
    warnings += busy
    for path in in_flight:  # count what the revision holds: the old content, or nothing
        counts["modified" if path in old_manifest else "added"] -= 1
        counts["unchanged"] += path in old_manifest
    manifest.sort(key=lambda e: e.path)
    chash = corpus_hash({e.path: e.sha256 for e in manifest})

    rev = current
    prior_base = laid_over(current) if current is not None else None
    rebased = base_rev is not None and base_rev != prior_base  # a view laid over a newer base
    changed = current is None or chash != current.corpus_hash or current.index_version != version or rebased
    if changed:
        head, branch = stamp or git_stamp(root)
        events = index_events(current.rev if current else None, old_manifest, manifest)
        base_rev = base_rev or prior_base  # a view keeps the base it was laid over
        rev = store.commit_revision(NewRevision(chash, version, head, branch, manifest, events, base_rev))
    # Every run applies retention: what a killed run stored and no revision names goes here.
    store.gc(settings.keep_revisions)
    fresh_stats = {hf.stat.path: _stat_entry(hf, checked_ns, in_flight) for hf in hashed if hf.read or full}
    if seed:  # what git vouched for is recorded as checked when git looked, not as read now
        fresh_stats.update(
            (hf.stat.path, seed[hf.stat.path]) for hf in hashed if not hf.read and hf.stat.path in seed
        )
    for st in (*(st for st, _why in unindexable), *found.oversized):
        fresh_stats[st.path] = StatEntry(*_stat_key(st), SKIPPED, checked_ns)
    listed = {st.path for st in (*found.files, *found.oversized)}
    removed = [p for p in stored if p not in listed]
    store.update_stat_cache(fresh_stats, removed)
    after = {**stored, **fresh_stats}  # what the stat cache now holds, without reading it back
    for path in removed:
        del after[path]
    store.set_guard_snapshot(snapshot.pack(after, stamps, RACY_NS))
    assert rev is not None
    return IndexReport(
        index_rev=rev.rev,
        corpus_hash=rev.corpus_hash,
        files={k: counts[k] for k in ("added", "modified", "deleted", "unchanged")},
        files_read=sum(1 for hf in hashed if hf.read),
        chunks={"total": rev.chunks, "new": new_chunks},
        duration_s=time.monotonic() - t0,
        full_rebuild=full and current is not None,
        reason=reason,
        skipped=len(found.skipped) + len(unindexable),
        skipped_files=skipped_files(found.skipped, unindexable),
        new_revision=changed,
        warnings=warnings,
    )


def skipped_files(
    by_path: list[tuple[str, str]], unindexable: list[tuple[FileStat, str]]
) -> list[dict[str, str]]:
    """The files skipped for what they are rather than where they are, with the reason."""
    surprising = [
        (path, why)
        for path, why in by_path
        if why.startswith(("symlink", "larger than", BAD_NAME, UNREADABLE_FOLDER))
    ]
    surprising += [(st.path, why) for st, why in unindexable if why != UNCHANGED_UNINDEXABLE]
    return [{"path": path, "reason": why} for path, why in sorted(surprising)[:SKIPPED_LISTED]]


def _read_again(settings: Settings, unindexable: list[tuple[FileStat, str]]) -> list[tuple[FileStat, str]]:
    """The reasons the stat cache does not keep, for the files a preview names: read again."""
    out = []
    for st, why in sorted(unindexable, key=lambda item: item[0].path)[:SKIPPED_LISTED]:
        if why == UNCHANGED_UNINDEXABLE:
            try:
                extract(settings.root / st.path, st.path, settings.max_line_chars)
            except Unindexable as exc:
                why = str(exc)
            except OSError:
                pass
        out.append((st, why))
    return out


def dry_run(
    store: Store | None, settings: Settings, progress: Progress | None = None, model_id: str | None = None
) -> dict[str, object]:
    """What `ragraf index` would index, by folder, with sizes and chunk counts, and what embedding it
    would cost (calls and tokens, cached texts excluded); writes nothing."""
    from ragraf.index.embedding import embed_text
    from ragraf.index.workers import prepare

    progress = progress or Progress()
    found = discover(settings.root, settings.max_file_bytes)
    cache = store.stat_cache() if store else {}
    hashed, unindexable = hash_files(settings.root, found.files, cache, settings, True, progress)
    current = store.current_revision() if store else None
    old = store.manifest(current.rev_no) if store and current else {}
    folders: dict[str, dict[str, int]] = {}
    total_chunks = changed = shared = 0
    to_embed: list[str] = []
    # The index stores a content once however many files hold it, and counts its chunks once: so
    # does the estimate, at the first path that holds it.
    seen: set[tuple[str, str | None]] = set()
    for hf in hashed:
        path = hf.stat.path
        folder = str(PurePosixPath(path).parent)
        row = folders.setdefault(folder, {"files": 0, "bytes": 0, "chunks": 0})
        row["files"] += 1
        row["bytes"] += hf.stat.size
        if (hf.sha256, language_of(path)) in seen:
            shared += 1
            continue
        seen.add((hf.sha256, language_of(path)))
        prior = old.get(path)
        if prior is not None and prior.sha256 == hf.sha256 and store is not None:
            n = len(store.chunks_of(current.rev_no, path)) if current else 0  # type: ignore[attr-defined]
        else:
            changed += 1
            bundle = prepare(((hf.sha256, language_of(path), settings.chunk_params()), path, settings))
            n = len(bundle.chunks) if bundle else 0
            if bundle and model_id:
                to_embed += [
                    embed_text(ChunkHit(0, path, start, end, symbol, text, 0.0))
                    for _, start, end, symbol, text, _ in bundle.chunks
                ]
        row["chunks"] += n
        total_chunks += n
    reasons = [reason for _, reason in found.skipped] + [reason for _, reason in unindexable]
    skipped = Counter(reason.split(" (")[0] for reason in reasons)
    return {
        "op": "index",
        "dry_run": True,
        "root": str(settings.root),
        "files": len(hashed),
        "bytes": sum(hf.stat.size for hf in hashed),
        "chunks": total_chunks,
        "files_to_process": changed,
        "files_sharing_content": shared,
        "folders": dict(sorted(folders.items())),
        "skipped": dict(skipped),
        "skipped_files": skipped_files(found.skipped, _read_again(settings, unindexable)),
        "home": str(settings.home),
        "embedding": _embedding_estimate(settings, model_id, to_embed),
        "warnings": found.warnings,
    }


def _embedding_estimate(settings: Settings, model_id: str | None, texts: list[str]) -> dict[str, object]:
    """Calls and tokens the new chunks would cost at the configured endpoint (cache hits are free)."""
    if not model_id or model_id == "none":
        return {"model": "none", "chunks": 0, "cached": 0, "calls": 0, "tokens_estimate": 0}
    from ragraf.embed import open_cache

    cache = open_cache(settings)
    misses = [t for t, v in zip(texts, cache.get_many(model_id, texts), strict=True) if v is None]
    unique = list(dict.fromkeys(misses))
    return {
        "model": model_id, "chunks": len(texts), "cached": len(texts) - len(misses),
        "calls": -(-len(unique) // max(1, settings.embed_batch_size)),
        # About four characters a token for code and English; the provider's count is what bills.
        "tokens_estimate": sum(len(t) // 4 + 1 for t in unique),
    }  # fmt: skip
