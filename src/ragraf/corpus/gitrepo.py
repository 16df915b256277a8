"""What git knows about a work tree: its base branch, the files that differ from a commit, what
changed between two commits, and the base commit's files written out from git's object store to
index them (DESIGN §10). Every answer is asked of git anew."""

from __future__ import annotations

import os
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

from ragraf.corpus.gitcmd import run_watched
from ragraf.errors import ConfigError, RagrafError

if TYPE_CHECKING:  # a read asks for the base branch; the listing rules load where files are listed
    from ragraf.config import Settings


class GitError(RagrafError):
    code = "git_failed"


@dataclass(frozen=True)
class BaseRef:
    name: str  # as configured or found: origin/main, main, master …
    commit: str


def _git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    try:
        return run_watched(
            ["git", "-c", "core.quotepath=off", *args], cwd, env={**os.environ, **env} if env else None
        )
    except subprocess.TimeoutExpired as exc:
        raise GitError(
            f"git {args[0]} made no progress (no output, CPU or I/O) for {exc.timeout:g} s and was stopped",
            suggest="check for a lock, a FIFO or a hung network mount in the repository, or raise RAGRAF_GIT_STALL_S",
        ) from None
    except OSError as exc:
        raise GitError(
            f"git {args[0]} could not run: {exc}",
            suggest="install git or put it on PATH (or set RAGRAF_WORKTREES=0 to index without git)",
        ) from None


def _names(out: bytes) -> list[str]:
    return [p for p in out.decode("utf-8", errors="surrogateescape").split("\0") if p]


def resolve_base(root: Path, configured: str = "") -> BaseRef | None:
    """The base branch and its head commit: the configured one, else the remote HEAD, else main,
    else master; None when none exists (a repository without commits, or other branch names)."""
    if configured:
        out = _git(root, "rev-parse", "--verify", "-q", f"{configured}^{{commit}}")
        return BaseRef(configured, out.stdout.decode().strip()) if out.returncode == 0 else None
    # One question for all three: the remote HEAD (a symbolic ref), main, master.
    out = _git(
        root, "for-each-ref", "--format=%(refname:short)%00%(objectname)%00%(symref:short)",
        "refs/remotes/origin/HEAD", "refs/heads/main", "refs/heads/master",
    )  # fmt: skip
    refs = {}
    for line in out.stdout.decode(errors="replace").splitlines():
        name, commit, target = (line.split("\0") + ["", ""])[:3]
        refs[name] = (commit, target)
    remote = refs.get("origin/HEAD") or refs.get("origin")
    if remote is not None:
        return BaseRef(remote[1] or "origin/HEAD", remote[0])
    for name in ("main", "master"):
        if name in refs:
            return BaseRef(name, refs[name][0])
    return None


def base_ref(settings: Settings) -> BaseRef | None:
    """The configured base branch (an error when it does not exist), else the remote HEAD, main, master."""
    ref = resolve_base(settings.root, settings.base_branch)
    if ref is None and settings.base_branch:
        raise ConfigError(
            f"base branch {settings.base_branch!r} does not exist in this repository",
            suggest="set RAGRAF_BASE_BRANCH to an existing branch, or unset it to use the remote HEAD, main or master",
        )
    return ref


def touched(root: Path, commit: str) -> list[str]:
    """Paths whose content in the work tree may differ from commit: changed on the branch since,
    staged, modified or deleted, and untracked files git does not ignore."""
    diff = _git(
        root,
        "diff",
        "--name-only",
        "-z",
        "--no-renames",
        "--no-ext-diff",
        "--ignore-submodules",
        commit,
        "--",
    )
    if diff.returncode != 0:
        raise GitError(
            f"git diff against {commit[:12]} failed: {diff.stderr.decode(errors='replace').strip()}",
            suggest="run `ragraf index` (a shallow clone may lack the base commit: `git fetch --deepen`)",
        )
    # git blocks forever on an ignore file that is a FIFO or a device: looked at before it opens
    # one, and then the untracked files are found by the walk, whose ignore reader never blocks.
    from ragraf.corpus.discover import unsafe_ignore_file, untracked_by_walk

    tracked = _names(_git(root, "ls-files", "-z", "--cached").stdout)
    if unsafe_ignore_file(root, tracked):
        others = untracked_by_walk(root, tracked)
    else:
        others = _names(_git(root, "ls-files", "-z", "--others", "--exclude-standard").stdout)
    return sorted(set(_names(diff.stdout)) | set(others))


def commits_between(root: Path, old: str, new: str) -> int | None:
    """How many commits new has that old has not; None when git cannot tell (e.g. a shallow clone)."""
    if old == new:
        return 0
    out = _git(root, "rev-list", "--count", f"{old}..{new}")
    return int(out.stdout) if out.returncode == 0 and out.stdout.strip().isdigit() else None


def recently_changed(root: Path, commits: int = 100) -> list[str]:
    """Paths (relative to root) the last `commits` commits touched, newest first; [] outside git or
    when git cannot tell."""
    try:
        out = _git(
            root, "log", f"-n{commits}", "--name-only", "-z", "--format=", "--no-renames", "--relative"
        )
    except GitError:
        return []
    if out.returncode != 0:
        return []
    return list(dict.fromkeys(_names(out.stdout.replace(b"\n", b"\0"))))


def tree_paths(common_dir: Path, commit: str) -> list[str]:
    """Every path in the commit's tree."""
    out = _git(common_dir, "--git-dir", str(common_dir), "ls-tree", "-r", "-z", "--name-only", commit)
    if out.returncode != 0:
        raise GitError(f"git ls-tree {commit[:12]} failed: {out.stderr.decode(errors='replace').strip()}")
    return sorted(_names(out.stdout))


@dataclass(frozen=True)
class TreeChange:
    """A path whose entry differs between two commits; mode and blob are the new side's ("" when
    the path is gone)."""

    path: str
    mode: str
    blob: str


def changes_between(common_dir: Path, old: str, new: str) -> list[TreeChange] | None:
    """The paths whose blob or mode differ between two commits; None when git cannot tell (the old
    commit is gone, e.g. after a forced push and gc, or a shallow clone lacks it)."""
    out = _git(
        common_dir, "--git-dir", str(common_dir), "diff-tree", "-r", "-z", "--no-renames", "--no-ext-diff", old, new
    )  # fmt: skip
    if out.returncode != 0:
        return None
    fields = out.stdout.split(b"\0")
    changes = []
    for i in range(0, len(fields) - 1, 2):
        meta, path = fields[i].split(), fields[i + 1].decode("utf-8", errors="surrogateescape")
        if len(meta) < 5:
            return None
        gone = meta[4].startswith(b"D")
        changes.append(TreeChange(path, "" if gone else meta[1].decode(), "" if gone else meta[3].decode()))
    return changes


def tree_entries(common_dir: Path, commit: str, paths: list[str]) -> list[TreeChange]:
    """The commit's entries (mode and blob) at these paths; a path it lacks is left out."""
    if not paths:
        return []
    out = _git(common_dir, "--git-dir", str(common_dir), "ls-tree", "-z", "--full-tree", commit, "--", *paths)
    entries = []
    for record in _names(out.stdout):
        meta, _, path = record.partition("\t")
        mode, _kind, blob = meta.split()
        entries.append(TreeChange(path, mode, blob))
    return entries


def write_blobs(common_dir: Path, entries: list[TreeChange], dest: Path) -> None:
    """Write these entries under dest from git's object store through one `git cat-file --batch`:
    regular files with their content and executable bit, symlinks as symlinks, submodules skipped."""
    wanted = [e for e in entries if e.mode in ("100644", "100755", "120000")]
    if not wanted:
        return
    try:
        proc = subprocess.Popen(
            ["git", "--git-dir", str(common_dir), "cat-file", "--batch"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )  # fmt: skip
    except OSError as exc:
        raise GitError(
            f"git cat-file could not run: {exc}", suggest="install git or put it on PATH"
        ) from None
    assert proc.stdin is not None and proc.stdout is not None
    feeder = threading.Thread(target=_feed, args=(proc.stdin, [e.blob for e in wanted]), daemon=True)
    feeder.start()
    try:
        for entry in wanted:
            header = proc.stdout.readline().split()
            if len(header) != 3 or header[1] != b"blob":
                raise GitError(
                    f"git cat-file could not read {entry.path} ({entry.blob[:12]}) of the base commit",
                    suggest="run `git fsck`, then `ragraf index --full`",
                )
            size = int(header[2])
            target = dest / entry.path
            target.parent.mkdir(parents=True, exist_ok=True)
            if entry.mode == "120000":
                os.symlink(os.fsdecode(proc.stdout.read(size)), target)
            else:
                _copy_blob(proc.stdout, size, target)
                if entry.mode == "100755":
                    target.chmod(0o755)
            proc.stdout.read(1)  # the newline after each blob
    finally:
        proc.stdout.close()
        proc.kill()
        proc.wait()
        feeder.join()


_BLOB_CHUNK = 1 << 20


def _copy_blob(out: IO[bytes], size: int, target: Path) -> None:
    """Stream size bytes of cat-file's output to target a chunk at a time: a blob of gigabytes
    (a committed disk image, a model) never sits in memory whole."""
    with open(target, "wb") as fh:
        left = size
        while left:
            chunk = out.read(min(left, _BLOB_CHUNK))
            if not chunk:
                raise GitError(
                    f"git cat-file stopped in the middle of {target.name}", suggest="run `ragraf index` again"
                )
            fh.write(chunk)
            left -= len(chunk)


def _feed(stdin: IO[bytes], blobs: list[str]) -> None:
    try:
        for blob in blobs:
            stdin.write(blob.encode() + b"\n")
        stdin.close()
    except OSError:  # the reader stopped early (an error above): nothing more to ask
        pass


def checkout(common_dir: Path, tree: Path, commit: str) -> None:
    """Make tree hold exactly the commit's files, rewriting only those that differ (a private index
    next to the tree remembers what is there, so the repository's own index and HEAD are untouched)."""
    from ragraf.corpus.discover import special_kind

    kind = special_kind(common_dir / "info" / "exclude")
    if kind is not None and kind not in ("a symlink", "a folder"):
        raise GitError(
            f"{common_dir / 'info' / 'exclude'} is {kind}: git would wait on it forever",
            suggest="make it a regular file (or remove it) and run `ragraf index` again",
        )
    tree.mkdir(parents=True, exist_ok=True)
    env = {
        "GIT_DIR": str(common_dir),
        "GIT_WORK_TREE": str(tree),
        "GIT_INDEX_FILE": str(tree.with_name(tree.name + ".gitindex")),
    }
    out = _git(tree, "read-tree", "--reset", "-u", commit, env=env)
    if out.returncode != 0:
        raise GitError(
            f"checking out {commit[:12]} for the base index failed: {out.stderr.decode(errors='replace').strip()}",
            suggest=f"remove {tree} and run `ragraf index` again",
        )
