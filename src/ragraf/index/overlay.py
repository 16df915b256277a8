"""Work trees over one base (DESIGN §10): the base index follows the base branch, reading from
git's object store the files that changed since the commit it reflects; a work tree's view starts
as the base's manifest with the files git says differ laid over it, and is then kept up to date
like any index, by its own stat cache."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path

from ragraf.config import Settings
from ragraf.corpus.discover import Discovery, FileStat, dir_stamps, discover
from ragraf.corpus.gitrepo import (
    BaseRef,
    TreeChange,
    changes_between,
    checkout,
    touched,
    tree_entries,
    tree_paths,
    write_blobs,
)
from ragraf.index.indexer import RACY_NS, IndexReport, current_version, run_index, unchanged_report
from ragraf.index.progress import Progress
from ragraf.store import Revision, StatEntry, Store, open_base

RAGRAFIGNORE = ".ragrafignore"  # read from the tree itself: the base's copy is written out with the changes


@dataclass(frozen=True)
class Seed:
    """What a new view starts from: the base revision and the paths that differ from it."""

    base: Revision
    changed: list[str]
    checked_ns: int  # when git was asked


def base_tree(settings: Settings) -> Path:
    """Where the base commit's files are written while the base is indexed, next to the index
    file; removed when the run ends (git's object store keeps them)."""
    return settings.db_path.with_suffix(".base")


def base_settings(settings: Settings) -> Settings:
    return dataclasses.replace(settings, root=base_tree(settings), view="")


def _remove_tree(tree: Path) -> None:
    import shutil  # it loads bz2 and lzma: only when a base checkout is removed

    shutil.rmtree(tree, ignore_errors=True)
    tree.with_name(tree.name + ".gitindex").unlink(missing_ok=True)


def update_base(
    store: Store,
    settings: Settings,
    ref: BaseRef,
    model_id: str,
    dim: int | None,
    full: bool,
    progress: Progress,
) -> IndexReport:
    """Bring the base view to the base branch's head (no new revision when it reflects it already).
    From the commit it reflects, only the files that changed are written out of git and read;
    otherwise (the first run, a rebuild, a new index version) the whole commit is."""
    current = store.current_revision()
    version = current_version(current, settings, model_id, dim)
    tree = base_tree(settings)
    _remove_tree(tree)  # a killed run's, or the whole checkout an older ragraf kept
    if (
        current is not None
        and current.git_head == ref.commit
        and current.index_version == version
        and not full
    ):
        return unchanged_report(current, time.monotonic())
    common = Path(settings.repo_key)
    moved = None
    if current is not None and current.git_head and current.index_version == version and not full:
        moved = changes_between(common, current.git_head, ref.commit)
    try:
        if moved is None or any(c.path == RAGRAFIGNORE for c in moved):
            progress.note(f"writing out {ref.name} ({ref.commit[:12]}) for the base index")
            checkout(common, tree, ref.commit)
            # Listed here, not by run_index: the last run's guard snapshot described another tree.
            listing = (
                dir_stamps(tree),
                discover(tree, settings.max_file_bytes, tree_paths(common, ref.commit)),
            )
            return run_index(
                store, base_settings(settings), model_id, dim, full=full, progress=progress, listed=listing,
                stamp=(ref.commit, ref.name),
            )  # fmt: skip
        assert current is not None
        return _index_changes(store, settings, current, ref, moved, model_id, dim, progress)
    finally:
        _remove_tree(tree)


def _index_changes(
    store: Store,
    settings: Settings,
    current: Revision,
    ref: BaseRef,
    moved: list[TreeChange],
    model_id: str,
    dim: int | None,
    progress: Progress,
) -> IndexReport:
    """The base's next revision from the files git says changed since the commit it reflects: only
    those are written out and read; every other file keeps its content (git vouches for it)."""
    common, tree = Path(settings.repo_key), base_tree(settings)
    progress.note(f"base {ref.name}: {len(moved)} paths changed since {current.git_head or '?':.12}")
    present = [c for c in moved if c.mode]
    write_blobs(common, [*present, *tree_entries(common, ref.commit, [RAGRAFIGNORE])], tree)
    found = discover(tree, settings.max_file_bytes, [c.path for c in present])
    touched = {c.path for c in moved}
    manifest = store.manifest(current.rev_no)
    # The stat fields of files that are not on disk: any values that match their vouched entries.
    kept = [e for path, e in manifest.items() if path not in touched]
    vouched = {e.path: StatEntry(e.size, 0, 0, 0, e.sha256, RACY_NS + 1) for e in kept}
    files = sorted([*found.files, *(FileStat(e.path, e.size, 0, 0, 0) for e in kept)], key=lambda f: f.path)
    listing = Discovery(files, found.skipped, found.oversized, found.warnings)
    return run_index(
        store, base_settings(settings), model_id, dim, progress=progress, seed=vouched, listed=({}, listing),
        stamp=(ref.commit, ref.name),
    )  # fmt: skip


def base_revision(settings: Settings) -> Revision | None:
    if not settings.db_path.exists():
        return None
    store = open_base(settings)
    try:
        return store.current_revision()
    finally:
        store.close()


def plan_seed(settings: Settings, base: Revision) -> Seed:
    """The files of the work tree that differ from the base's commit, as git says now."""
    assert base.git_head is not None
    checked = time.time_ns()
    return Seed(base, touched(settings.root, base.git_head), checked)


def seed_view(
    store: Store,
    settings: Settings,
    seed: Seed,
    model_id: str,
    dim: int | None,
    progress: Progress,
) -> IndexReport:
    """The view's first revision: base entries for every file git says is unchanged (stat only,
    never read), the touched files read, chunked and laid over them."""
    manifest = store.manifest(seed.base.rev_no)
    changed = set(seed.changed)
    progress.note(
        f"this work tree over the base {seed.base.rev}: {len(changed)} files differ from its commit"
    )
    # The base commit's files its index left out (symlinks, secrets, binaries) are listed again, so
    # the report names what this view leaves out as a plain folder's does.
    assert seed.base.git_head is not None
    committed = tree_paths(Path(settings.repo_key), seed.base.git_head)
    candidates = sorted(set(manifest) | changed | set(committed))
    stamps = dir_stamps(settings.root)  # before listing, so a file created meanwhile shows as drift
    found = discover(settings.root, settings.max_file_bytes, candidates)
    vouched: dict[str, StatEntry] = {}
    for st in found.files:
        entry = manifest.get(st.path)
        if entry is None or st.path in changed:
            continue
        # Git compared the file with the base commit after it was last written, at checked_ns.
        vouched[st.path] = StatEntry(
            st.size, st.mtime_ns, st.ctime_ns, st.inode, entry.sha256, seed.checked_ns
        )
    return run_index(
        store,
        settings,
        model_id,
        dim,
        progress=progress,
        seed=vouched,
        listed=(stamps, found),
        base_rev=seed.base.rev,
    )
