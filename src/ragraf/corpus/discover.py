"""File discovery: git ls-files in a git work tree, else a walk honouring .gitignore; then the rules."""

from __future__ import annotations

import bisect
import os
import stat
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ragraf.corpus.extract import Unindexable, extract, is_utf8
from ragraf.corpus.gitcmd import run_watched
from ragraf.corpus.rules import EXCLUDED_DIRS, excluded_reason, is_secret
from ragraf.corpus.stat_cache import settled

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec


@dataclass(frozen=True)
class FileStat:
    """A discovered regular file and the stat fields that tell whether it may have changed."""

    path: str  # relative to the root, posix separators
    size: int
    mtime_ns: int
    ctime_ns: int
    inode: int


@dataclass(frozen=True)
class Discovery:
    files: list[FileStat]
    skipped: list[tuple[str, str]]  # (path, reason)
    # Files over the size limit, with their stat: the snapshot keeps them, so one that shrinks
    # under the limit in place is seen.
    oversized: list[FileStat] = field(default_factory=list)
    # Ignore files not read, or lines of them skipped, each named with what to do.
    warnings: list[str] = field(default_factory=list)


# An ignore file larger than this is not read: real ones are a few KiB; /dev/zero is endless.
IGNORE_FILE_MAX_BYTES = 1 << 20
_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symlink"), (stat.S_ISDIR, "a folder"))  # fmt: skip


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _not_regular(shown: str, mode: int) -> str:
    return f"{shown} is {_kind(mode)}, not a regular file: not read (make it a plain file)"


def dangling_link(path: Path) -> str | None:
    """Where a symlink that leads nowhere points (its text), else None."""
    try:
        return os.readlink(path) if path.is_symlink() and not path.exists() else None
    except OSError:
        return None


def special_kind(path: Path) -> str | None:
    """What a path that is there but not a regular file is ("a FIFO", "a socket", ...), else None."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return None
    return None if stat.S_ISREG(mode) else _kind(mode)


def read_ignore_file(path: Path, warnings: list[str] | None = None, shown: str = "") -> GitIgnoreSpec | None:
    """The patterns of a .gitignore or .ragrafignore: a regular file only (a FIFO, a device or a
    symlink is never opened: reading one hangs or never ends), at most IGNORE_FILE_MAX_BYTES, its
    invalid lines skipped as git skips them; what was left out goes to `warnings`, named `shown`."""
    shown = shown or path.name
    notes = warnings if warnings is not None else []
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        notes.append(_not_regular(shown, st.st_mode))
        return None
    if st.st_size > IGNORE_FILE_MAX_BYTES:
        notes.append(f"{shown} is larger than {IGNORE_FILE_MAX_BYTES} bytes: not read (shorten it)")
        return None
    try:
        # O_NONBLOCK and the second check: a file swapped for a FIFO since the lstat does not hang.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, IGNORE_FILE_MAX_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    lines = data[:IGNORE_FILE_MAX_BYTES].decode("utf-8", errors="replace").splitlines()
    if not lines:
        return None
    from pathspec import GitIgnoreSpec  # a fifth of a read's imports: only when an ignore file is read

    try:
        return GitIgnoreSpec.from_lines(lines)
    except Exception:  # noqa: BLE001 - pathspec raises ValueError or re.error; found line by line below
        pass
    kept = []
    for number, line in enumerate(lines, 1):
        try:
            GitIgnoreSpec.from_lines([line])
        except Exception:  # noqa: BLE001
            notes.append(
                f"{shown}:{number}: invalid pattern {line!r} skipped, as git skips it (fix or remove the line)"
            )
            kept.append("")  # a blank line keeps the numbering and matches nothing
        else:
            kept.append(line)
    return GitIgnoreSpec.from_lines(kept)


# Roots known not to be git work trees (or ignored by theirs), and when that was last checked: the
# answer rarely changes, and asking git costs two process spawns per query.
_WALKED: dict[Path, float] = {}
_WALK_RECHECK_S = 30.0


def _git_paths(root: Path, warnings: list[str]) -> list[str] | None:
    """Tracked plus untracked-not-ignored paths under root, or None when root is not in a work tree
    (or git could not be asked safely: the walk lists it then); `warnings` names odd ignore files."""
    checked = _WALKED.get(root)
    if checked is not None and time.monotonic() - checked < _WALK_RECHECK_S:
        return None
    paths = _ask_git(root, warnings)
    if paths is None:
        _WALKED[root] = time.monotonic()
    return paths


def _ls_files(root: Path, *args: str) -> list[str] | None:
    try:
        out = run_watched(["git", "-c", "core.quotepath=off", "ls-files", "-z", *args], root)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    return [p for p in out.stdout.decode("utf-8", errors="surrogateescape").split("\0") if p]


def unsafe_ignore_file(root: Path, paths: list[str], warnings: list[str] | None = None) -> bool:
    """Whether an ignore file git would open for these paths is a FIFO, a device or a socket: git
    blocks on it forever. The root's, those of the paths' folders, and .git/info/exclude; every one
    that is not a regular file is named in `warnings`."""
    unsafe = False
    folders = {p.rsplit("/", 1)[0] for p in paths if "/" in p}
    folders |= {f.rsplit("/", k)[0] for f in list(folders) for k in range(1, f.count("/") + 1)}
    candidates = [".gitignore", ".git/info/exclude", *(f"{f}/.gitignore" for f in sorted(folders))]
    for rel in candidates:
        try:
            mode = os.lstat(root / rel).st_mode
        except OSError:
            continue
        if stat.S_ISREG(mode):
            continue
        if warnings is not None:
            warnings.append(_not_regular(rel, mode))
        # git does not follow a symlinked .gitignore, nor read a folder; it blocks on the rest.
        unsafe = unsafe or not (stat.S_ISLNK(mode) or stat.S_ISDIR(mode))
    return unsafe


def _ask_git(root: Path, warnings: list[str]) -> list[str] | None:
    # Tracked files first (git reads no ignore file for them), so the ignore files it would read
    # for the untracked ones are looked at before it opens them.
    tracked = _ls_files(root, "--cached")
    if tracked is None or unsafe_ignore_file(root, tracked, warnings):
        return None
    untracked = _ls_files(root, "--others", "--exclude-standard")
    if untracked is None:
        return None
    paths = sorted({*tracked, *untracked})
    if not paths:
        # A folder git ignores (a vendored or downloaded tree inside a repository) is walked instead.
        try:
            ignored = run_watched(["git", "check-ignore", "-q", "."], root)
        except (OSError, subprocess.TimeoutExpired):
            return None
        if ignored.returncode == 0:
            return None
    return paths


class GitIgnores:
    """The .gitignore files of a folder tree, each read once when first needed; nested ones apply
    below their folder, and a later `!pattern` can re-include."""

    def __init__(self, root: Path, warnings: list[str] | None = None) -> None:
        self.root = root
        self.specs: dict[str, GitIgnoreSpec | None] = {}
        self.warnings = warnings if warnings is not None else []

    def _spec(self, folder: str) -> GitIgnoreSpec | None:
        if folder not in self.specs:
            shown = f"{folder}/.gitignore" if folder else ".gitignore"
            self.specs[folder] = read_ignore_file(self.root / folder / ".gitignore", self.warnings, shown)
        return self.specs[folder]

    def ignored(self, rel: str, is_dir: bool) -> bool:
        verdict = None
        parts = rel.split("/")
        for depth in range(len(parts)):
            spec = self._spec("/".join(parts[:depth]))
            if spec is None:
                continue
            check = spec.check_file("/".join(parts[depth:]) + ("/" if is_dir else ""))
            if check.include is not None:
                verdict = check.include
        return bool(verdict)

    def excludes(self, rel: str) -> bool:
        """Whether a walk leaves the file out: it, or a folder above it, is ignored."""
        parts = rel.split("/")
        folders = ("/".join(parts[:k]) for k in range(1, len(parts)))
        return any(self.ignored(f, True) for f in folders) or self.ignored(rel, False)


def _left_out_folder(rel: str, ragrafignore: GitIgnoreSpec | None) -> bool:
    """A default-excluded folder (node_modules, build, ...) that no `!pattern` takes back."""
    return rel.rsplit("/", 1)[-1] in EXCLUDED_DIRS and not (
        ragrafignore is not None and ragrafignore.check_file(f"{rel}/").include is False
    )


def _walk_paths(
    root: Path, ragrafignore: GitIgnoreSpec | None, unreadable: list[str], warnings: list[str]
) -> list[str]:
    """A walk that never follows symlinks and applies nested .gitignore files; the folders it may
    not list go to `unreadable`, what was wrong with an ignore file to `warnings`."""
    result: list[str] = []
    ignored = GitIgnores(root, warnings).ignored

    def refused(error: OSError) -> None:
        if isinstance(error, PermissionError) and error.filename:
            unreadable.append(Path(os.path.relpath(error.filename, root)).as_posix())

    for dirpath, dirnames, filenames in os.walk(root, followlinks=False, onerror=refused):
        rel_dir = os.path.relpath(dirpath, root)
        rel_dir = "" if rel_dir == "." else rel_dir.replace(os.sep, "/")
        prefix = f"{rel_dir}/" if rel_dir else ""
        keep = []
        for d in sorted(dirnames):
            if os.path.islink(os.path.join(dirpath, d)):
                continue
            if _left_out_folder(prefix + d, ragrafignore):
                continue
            if ignored(prefix + d, True):
                continue
            keep.append(d)
        dirnames[:] = keep
        for f in filenames:
            rel = prefix + f
            if not ignored(rel, False):
                result.append(rel)
    return sorted(result)


def untracked_by_walk(root: Path, tracked: list[str]) -> list[str]:
    """The files a walk finds that git does not track: git's untracked list when git cannot be asked."""
    known = set(tracked)
    ragrafignore = read_ignore_file(root / ".ragrafignore")
    return [p for p in _walk_paths(root, ragrafignore, [], []) if p not in known]


BAD_NAME = "file name is not valid UTF-8 (rename it to index it)"
UNREADABLE_FOLDER = "folder not readable (permission denied)"


def discover(root: Path, max_file_bytes: int, paths: list[str] | None = None) -> Discovery:
    """List the files to index under root with their stat, and what was skipped and why; `paths`
    names the candidates when the caller knows them (a commit's tree), else git or a walk finds them."""
    warnings: list[str] = []
    ragrafignore = read_ignore_file(root / ".ragrafignore", warnings)
    unreadable: list[str] = []
    if paths is None:
        paths = _git_paths(root, warnings)
    else:
        unsafe_ignore_file(root, paths, warnings)  # git listed them: what it could not read is named
    if paths is None:
        paths = _walk_paths(root, ragrafignore, unreadable, warnings)
    found = classify(root, paths, max_file_bytes, ragrafignore)
    skipped = [(f"{folder}/", UNREADABLE_FOLDER) for folder in unreadable] + found.skipped
    return Discovery(found.files, skipped, found.oversized, list(dict.fromkeys(warnings)))


def classify(
    root: Path, paths: list[str], max_file_bytes: int, ragrafignore: GitIgnoreSpec | None
) -> Discovery:
    """The listed paths sorted by the rules: the files to index with their stat, the oversized,
    and what was skipped and why (a path rule, .ragrafignore, a symlink, a name not UTF-8)."""
    files: list[FileStat] = []
    oversized: list[FileStat] = []
    skipped: list[tuple[str, str]] = []
    for rel in paths:
        if not is_utf8(rel):
            # The index, its JSON and every path:line are UTF-8: name it escaped, index the rest.
            skipped.append(
                (rel.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace"), BAD_NAME)
            )
            continue
        reason = excluded_reason(rel)
        if ragrafignore is not None:
            verdict = ragrafignore.check_file(rel).include
            if verdict is True:
                reason = reason or ".ragrafignore"
            elif verdict is False and reason and reason not in ("secret", "binary"):
                # An explicit `!pattern` re-includes a default exclude, never a secret (one in an
                # excluded folder was named for its folder: asked again).
                reason = "secret" if is_secret(rel) else None
        if reason:
            skipped.append((rel, reason))
            continue
        try:
            st = os.lstat(root / rel)
        except OSError:
            continue  # vanished since listing: it is simply not part of this corpus
        if stat.S_ISLNK(st.st_mode):
            skipped.append((rel, "symlink (not followed)"))
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        found = FileStat(rel, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
        if st.st_size > max_file_bytes:
            skipped.append((rel, f"larger than {max_file_bytes} bytes"))
            oversized.append(found)
            continue
        files.append(found)
    return Discovery(files, skipped, oversized)


def dir_stamps(root: Path) -> dict[str, int]:
    """mtime_ns of every folder that could hold indexable files: creating, deleting or renaming a
    file changes its folder's mtime, so unchanged stamps mean an unchanged file list. A folder
    changed just now (stat_cache.settled) gets -1, a stamp no folder has: a file created in the
    same clock tick would leave its mtime as it is, so the guard lists it again until it has settled."""
    stamps: dict[str, int] = {}
    _stamp_tree(str(root), [""], read_ignore_file(root / ".ragrafignore"), stamps, None)
    return stamps


def _stamp(now: int, mtime: int) -> int:
    """A folder's stamp: its mtime, or -1 while a change in the same clock tick could hide. A date
    in the future is a stamp no later change repeats: kept as it is."""
    return mtime if mtime > now or settled(now, mtime) else -1


def _stamp_tree(
    base: str,
    stack: list[str],
    ragrafignore: GitIgnoreSpec | None,
    stamps: dict[str, int],
    files: list[str] | None,
    limit: int | None = None,
) -> bool:
    """Stamp the folders of `stack` and every folder below them (strings and os.scandir: no Path
    per folder); `files` gets the names of the files found when given. False when a folder could
    not be listed (permission denied) or more than `limit` entries were found."""
    now = time.time_ns()
    complete = True
    seen = 0
    while stack:
        rel = stack.pop()
        folder = f"{base}/{rel}" if rel else base
        try:
            mtime = os.stat(folder).st_mtime_ns  # before listing: a change while we list shows later
        except OSError:
            continue
        stamps[rel] = _stamp(now, mtime)
        prefix = f"{rel}/" if rel else ""
        try:
            with os.scandir(folder) as it:
                for entry in it:
                    seen += 1
                    if files is not None and entry.name == ".git":
                        return False  # a repository inside: what git lists of it, a full listing says
                    sub = prefix + entry.name
                    if entry.is_dir(follow_symlinks=False):
                        if not _left_out_folder(sub, ragrafignore):
                            stack.append(sub)
                    elif files is not None:
                        files.append(sub)
        except PermissionError:
            # Made readable, its mtime stays: a stamp no folder has makes the guard look again.
            stamps[rel] = -1
            complete = False
        except OSError:
            continue
        if limit is not None and seen > limit:
            return False
    return complete


@dataclass(frozen=True)
class Relisting:
    """What listing again only the folders whose stamp moved found: the files new to the listing
    (sorted by the rules as discover sorts them), the new stamps of the folders listed (new
    folders included), and the folders gone (vanished, or now a symlink or left out)."""

    added: Discovery
    stamps: dict[str, int]
    gone: list[str]


def relist(
    root: Path, max_file_bytes: int, known: list[str], folders: list[str], changed: list[str], limit: int
) -> Relisting | None:
    """The changed folders listed again, each on its own (a new folder with what is below it),
    against the last listing (`known` files and `folders`, both sorted); the names they hold that
    the listing does not know go through the ignore files and the rules. None when a full
    discovery must decide: a new ignore file, a folder not readable, more than `limit` names new
    to the listing (or entries in new folders), or an ignore file git would block on. Listing a
    changed folder, however large, costs less than listing them all."""
    base = str(root)
    ragrafignore = read_ignore_file(root / ".ragrafignore")
    stamps: dict[str, int] = {}
    gone: list[str] = []
    names: list[str] = []
    new_folders: list[str] = []
    for rel in changed:
        folder = f"{base}/{rel}" if rel else base
        try:
            st = os.lstat(folder)
        except OSError:
            gone.append(rel)
            continue
        if not stat.S_ISDIR(st.st_mode) or (rel and _left_out_folder(rel, ragrafignore)):
            gone.append(rel)
            continue
        stamps[rel] = _stamp(time.time_ns(), st.st_mtime_ns)
        prefix = f"{rel}/" if rel else ""
        try:
            with os.scandir(folder) as it:
                entries = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in it]
        except OSError:
            return None
        for name, is_dir in entries:
            if name == ".git":
                if rel:
                    return None  # a repository inside: what git lists of it, a full listing says
                continue  # the root's own (a folder, or a file in a linked work tree): never listed
            sub = prefix + name
            if not is_dir:
                if not _holds(known, sub):
                    names.append(sub)
            elif not _holds(folders, sub) and not _left_out_folder(sub, ragrafignore):
                new_folders.append(sub)
    if len(names) > limit:
        return None
    ignored = _ignored(root, new_folders, folder=True)
    if ignored is None:
        return None
    new_folders = [f for f in new_folders if f not in ignored]
    if new_folders and not _stamp_tree(base, new_folders, ragrafignore, stamps, names, limit - len(names)):
        return None
    if any(n.rsplit("/", 1)[-1] in (".gitignore", ".ragrafignore") for n in names):
        return None  # the rules that pick files may have changed
    ignored = _ignored(root, names)
    if ignored is None:
        return None
    kept = sorted(n for n in names if n not in ignored)
    return Relisting(classify(root, kept, max_file_bytes, ragrafignore), stamps, gone)


def _holds(sorted_names: list[str], name: str) -> bool:
    i = bisect.bisect_left(sorted_names, name)
    return i < len(sorted_names) and sorted_names[i] == name


def _ignored(root: Path, paths: list[str], folder: bool = False) -> set[str] | None:
    """Which of these paths an ignore file leaves out, as the listing decides: git's answer in a
    work tree (a tracked file is never ignored), the walk's outside one (or in a folder git
    ignores); None when git could not be asked safely."""
    if not paths:
        return set()
    if unsafe_ignore_file(root, paths):
        return None
    asked = [".", *(f"{p}/" if folder else p for p in paths)]
    try:
        out = run_watched(
            ["git", "-c", "core.quotepath=off", "check-ignore", "-z", "--stdin"],
            root,
            input="\0".join(asked).encode("utf-8", errors="surrogateescape") + b"\0",
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    said = set(out.stdout.decode("utf-8", errors="surrogateescape").split("\0")) - {""}
    if out.returncode in (0, 1) and "." not in said:
        return {p.rstrip("/") for p in said}
    if out.returncode not in (0, 1, 128):
        return None
    walk = GitIgnores(root)  # not a work tree (128), or one whose repository ignores the root
    if not folder:
        return {p for p in paths if walk.excludes(p)}
    parts = {p: p.split("/") for p in paths}
    return {
        p
        for p, ps in parts.items()
        if any(walk.ignored("/".join(ps[:k]), True) for k in range(1, len(ps) + 1))
    }


def left_out(root: Path, rel: str, max_file_bytes: int, max_line_chars: int) -> str | None:
    """Why an existing file is in no revision, or None when the next index run takes it in (it is
    new since): a path rule, its size or content, an ignore file."""
    rule = excluded_reason(rel)
    if rule:
        return f"left out of the index by a path rule ({rule})"
    if (root / rel).is_symlink():
        return "left out of the index: a symlink (never followed; its target is indexed at its own path)"
    try:
        if (root / rel).stat().st_size > max_file_bytes:
            return f"left out of the index: larger than {max_file_bytes} bytes"
        extract(root / rel, rel, max_line_chars)
    except Unindexable as exc:
        return f"left out of the index: {exc}"
    except OSError as exc:
        return f"not readable ({exc.strerror})"
    # git's own answer inside a work tree (it knows the global and info/exclude files too), the
    # .gitignore files as the walk reads them outside one (git check-ignore exits 128 there).
    if unsafe_ignore_file(root, [rel]):
        return "left out of the index: an ignore file on its path is not a regular file"
    try:
        in_git = run_watched(["git", "check-ignore", "-q", "--", rel], root)
    except (OSError, subprocess.TimeoutExpired):
        return None
    spec = read_ignore_file(root / ".ragrafignore")
    if (
        in_git.returncode == 0
        or (in_git.returncode == 128 and GitIgnores(root).excludes(rel))
        or (spec is not None and spec.match_file(rel))
    ):
        return "left out of the index by an ignore file"
    return None
