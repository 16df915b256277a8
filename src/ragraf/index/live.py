"""The live loop: the index kept within about a second of the disk while files change.

On Linux the kernel names what changed (freshness/watch.py's TreeWatch). A burst (a checkout, a save
through a temp file and a rename, an agent's batch of edits) is gathered until DEBOUNCE_S pass
without an event (and, in a git work tree, git's index.lock is gone: a checkout writes the tree
holding it), at most MAX_DELAY_S after its first, then one incremental run indexes it; what
arrives during a run makes the next one. Lost events (the kernel's queue overflowed) re-watch the
tree and run: an incremental run compares the whole disk with the index anyway, so nothing is lost.
Elsewhere, with RAGRAF_WATCH=0, or out of inotify watches: the guard's stat pass every POLL_S
seconds, and a run when it finds drift.

Runs never overlap (one loop, one thread). A manual `ragraf index` that holds the writer lock is
waited for, then followed by a run of ours (it may have listed the tree before the last change).
The slow embedding tier runs after the lexical revision committed and stops as soon as the kernel
reports a new change, or after EMBED_SLICE_S so that a waiting indexer gets the lock; the next quiet
moment resumes it (the vectors computed so far are cached).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragraf.corpus.rules import EXCLUDED_DIRS, excluded_reason
from ragraf.errors import LockHeldError, RagrafError
from ragraf.freshness.watch import TreeChanges, TreeWatch
from ragraf.index.progress import Progress

if TYPE_CHECKING:
    from ragraf.index.indexer import Named

# Quiet time that ends a burst: an editor's temp file and its rename come within a millisecond or
# two; a run that starts between them still loses nothing (the rename makes the next run).
DEBOUNCE_S = 0.05
MAX_DELAY_S = 0.5  # a burst that never goes quiet (continuous edits) is still indexed this soon
POLL_S = 1.0  # the stat pass's interval where the kernel cannot tell
QUIET_POLL_S = 0.02  # how often quiet_hint looks again at a busy loop
LOCK_POLL_S = 0.2  # how often to look whether a manual `ragraf index` released the lock
# The slow tier holds the writer lock this long at most, then lets go for a moment: a manual
# `ragraf index` waiting for the lock (it looks every 0.1 s) gets it before the tier goes on.
EMBED_SLICE_S = 30.0


@dataclass(frozen=True)
class LiveRun:
    """One run of the live loop: why it ran, what the index run reported, how long after the change."""

    number: int
    trigger: str  # start | change | overflow | poll | lock (after another indexer released it)
    paths: int  # paths the kernel named since the previous run (0 when polled)
    report: dict[str, Any]  # the index run's report (IndexReport.to_dict())
    lag_s: float  # from the first change seen to this run's commit
    mode: str  # inotify | poll

    def to_dict(self) -> dict[str, Any]:
        return {
            "op": "watch",
            "run": self.number,
            "trigger": self.trigger,
            "mode": self.mode,
            "changed_paths": self.paths,
            "lag_s": round(self.lag_s, 3),
            **{k: v for k, v in self.report.items() if k != "op"},
        }


@dataclass(frozen=True)
class LiveOps:
    """What the loop does, given by the operations layer above: `run` the incremental lexical run
    (LockHeldError when another indexer holds the lock) and return its report; `embed` the slow
    tier (None without an embedder), stopping when its progress raises; `drifted` the guard's verdict
    (polling); `lock_holder` who holds the writer lock, or None."""

    run: Callable[[], dict[str, Any]]
    embed: Callable[[Progress], object] | None
    drifted: Callable[[], bool]
    lock_holder: Callable[[], str | None]


class Superseded(Exception):
    """A change arrived while the slow embedding tier ran: it stops; the next quiet moment resumes it."""


class _YieldingProgress(Progress):
    """Silent progress that stops the embedding phase (not the lexical one) when told to yield."""

    def __init__(self, should_yield: Callable[[], bool]) -> None:
        self.should_yield = should_yield
        self.phase = ""
        self.until = time.monotonic() + EMBED_SLICE_S

    def start(self, phase: str, total: int) -> None:
        self.phase = phase
        self._check()

    def advance(self, n: int = 1) -> None:
        self._check()

    def _check(self) -> None:
        if self.phase == "embedding chunks" and (time.monotonic() > self.until or self.should_yield()):
            raise Superseded


def _indexable(changes: TreeChanges) -> bool:
    """Whether a burst names a path the index may hold: a folder (what it holds is not known yet),
    or a file no default rule leaves out (a lock file, a .pyc, a secret never cause a run)."""
    return bool(changes.folders) or any(excluded_reason(p) is None for p in changes.paths)


def git_index_lock(root: Path) -> Path | None:
    """Where git takes its index lock for the work tree at root (held while a checkout, a reset or
    a merge writes the tree), or None outside a git work tree."""
    dot = root / ".git"
    if dot.is_dir():
        return dot / "index.lock"
    try:
        first = dot.read_text(encoding="utf-8", errors="replace").split("\n", 1)[0]
    except OSError:
        return None
    if not first.startswith("gitdir:"):
        return None
    return (root / first[len("gitdir:") :].strip()) / "index.lock"  # a linked work tree's own git dir


def prune_for(root: Path, home: Path) -> Callable[[str], bool]:
    """The folders not to watch: VCS and dependency folders (the default excludes), the index home."""
    try:
        home_rel = home.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        home_rel = None  # outside the tree (a git repository's home is in .git): nothing to prune

    def prune(rel: str) -> bool:
        name = rel.rsplit("/", 1)[-1]
        return name in EXCLUDED_DIRS or name.endswith(".egg-info") or rel == home_rel

    return prune


_LOOPS: dict[str, LiveLoop] = {}  # the running loops of this process, by real root


def quiet_hint(root: Path | str, wait_s: float = 0.0) -> Named | None:
    """What the kernel named under root since the last run of this process's live loop, when the
    loop watches it, every event was seen and none waits to be read: another run in this process
    (a served `ragraf index`) may stat only that. None otherwise; with `wait_s`, a loop busy with
    a change (an `index` right after an edit) is given that long to index it and go quiet."""
    loop = _LOOPS.get(os.path.realpath(root))
    if loop is None:
        return None
    deadline = time.monotonic() + wait_s
    hint = loop.quiet_hint()
    # A loop that polls gives no hint ever: no wait for it.
    while (
        hint is None
        and loop.watch is not None
        and time.monotonic() < deadline
        and _LOOPS.get(loop.real) is loop
    ):
        time.sleep(QUIET_POLL_S)
        hint = loop.quiet_hint()
    return hint


class LiveLoop:
    """Keeps one root's index live until `stop` is set; `on_run` hears of every run, `on_note` of
    everything else worth a line (waiting for the lock, a failed run, polling instead of inotify)."""

    def __init__(
        self,
        root: Path,
        home: Path,
        ops: LiveOps,
        on_run: Callable[[LiveRun], None],
        on_note: Callable[[str], None],
        stop: threading.Event | None = None,
        use_inotify: bool = True,
    ) -> None:
        self.root, self.ops, self.on_run, self.on_note = root, ops, on_run, on_note
        self.stop = stop or threading.Event()
        self.watch: TreeWatch | None = TreeWatch(root, prune_for(root, home)) if use_inotify else None
        self.real = os.path.realpath(root)
        self.runs = 0
        self.mode = "poll"
        self._embed_owed = False
        # What the kernel named since the last run that committed after a full stat pass or after
        # a run of its own: the next run stats only that (index/indexer.py's named_changes_since).
        # Off until the first run, and again after lost events or a failed run.
        self._named: TreeChanges | None = None
        self._state = threading.Lock()  # guards _busy against quiet_hint from another thread
        self._busy = True  # reading events or running on them: no hint for another run meanwhile
        self._read_last = 0
        self._git_lock = git_index_lock(root) if use_inotify else None

    def run_forever(self) -> None:
        """Watch, then run once to catch up with what changed while nobody watched, then on changes."""
        if self.watch is not None:
            if self.watch.start():
                self.mode = "inotify"
                self.on_note(f"watching {len(self.watch.folders)} folders under {self.root} (inotify)")
            else:
                self.on_note(f"watching by a stat pass every {POLL_S:g}s: {self.watch.why_not}")
                self.watch.close()
                self.watch = None
        real = self.real
        _LOOPS[real] = self
        try:
            self._run("start", TreeChanges(), time.monotonic())
            while not self.stop.is_set():
                if self.watch is not None:
                    self._next_burst()
                else:
                    self._next_poll()
        finally:
            with self._state:
                self._busy = True
                if _LOOPS.get(real) is self:
                    del _LOOPS[real]
                if self.watch is not None:
                    self.watch.close()

    def quiet_hint(self) -> Named | None:
        with self._state:
            watch, named = self.watch, self._named
            if self._busy or watch is None or named is None or watch.pending():
                return None
            return self._hint(watch, named, self._read_last)

    def _hint(self, watch: TreeWatch, named: TreeChanges, read_last: int = 0) -> Named:
        from ragraf.index.indexer import Named

        return Named(
            self.real,
            frozenset(named.paths),
            frozenset(named.folders),
            frozenset(watch.folders.values()),
            read_last,
        )

    def _next_burst(self) -> None:
        with self._state:
            self._busy = False
        watch = self.watch
        assert watch is not None
        if not watch.wait(DEBOUNCE_S if self._embed_owed else 0.5):
            if self._embed_owed and not self.stop.is_set():
                self._embed()  # a quiet moment: the slow tier resumes
            return
        with self._state:
            self._busy = True
        first = time.monotonic()
        changes = watch.read()
        while not self.stop.is_set():
            left = min(DEBOUNCE_S, first + MAX_DELAY_S - time.monotonic())
            if left <= 0:
                break
            if not watch.wait(left):
                if self._git_lock is None or not self._git_lock.exists():
                    break
                continue  # quiet, but git is still writing the tree (a checkout): gather on
            changes.merge(watch.read())
        if changes.overflow or _indexable(changes):
            self._run("change", changes, first)
        elif self._named is not None:
            self._named.merge(changes)  # no run for these, but their folders' stamps moved

    def _next_poll(self) -> None:
        if self.stop.wait(DEBOUNCE_S if self._embed_owed else POLL_S):
            return
        first = time.monotonic()
        try:
            drifted = self.ops.drifted()
        except RagrafError as exc:
            self.on_note(f"the stat pass failed: {exc.message}")
            return
        if drifted:
            self._run("poll", TreeChanges(), first)
        elif self._embed_owed:
            self._embed()

    def _run(self, trigger: str, changes: TreeChanges, first: float) -> None:
        """One incremental run (after another indexer's, when it holds the lock); then the slow tier."""
        lost = changes.overflow
        while not self.stop.is_set():
            lost = self._drain(changes) or lost  # queued before the run: the run covers it
            if lost:
                self._resync()
                lost, trigger = False, "overflow" if trigger == "change" else trigger
                self._named = None
            try:
                report = self._index(changes)
            except LockHeldError:
                self._wait_for_lock()
                trigger = "lock"
                continue
            except RagrafError as exc:
                self._named = None
                self.on_note(
                    f"index run failed: {exc.message}" + (f" ({exc.suggest})" if exc.suggest else "")
                )
                return
            except Exception as exc:  # a long-running loop outlives one failed run; the next change retries
                self._named = None
                self.on_note(f"index run failed unexpectedly: {type(exc).__name__}: {exc}")
                return
            break
        else:
            return
        self.runs += 1
        lag = time.monotonic() - first
        self.on_run(LiveRun(self.runs, trigger, len(changes.paths), report, lag, self.mode))
        self._embed_owed = self.ops.embed is not None
        if self._embed_owed and not self._changed_since():
            self._embed()

    def _index(self, changes: TreeChanges) -> dict[str, Any]:
        """The run, with what the kernel named since the last one when every event was seen."""
        watch, named = self.watch, self._named
        if watch is None or named is None:
            report = self.ops.run()
        else:
            from ragraf.index.indexer import named_changes

            named.merge(changes)
            with named_changes(self._hint(watch, named)):
                report = self.ops.run()
        self._named = TreeChanges() if watch is not None else None
        self._read_last = int(report.get("files_read") or 0)
        return report

    def _drain(self, changes: TreeChanges) -> bool:
        """Add what the kernel queued to changes; True when it had dropped events."""
        if self.watch is None:
            return False
        new = self.watch.read()
        changes.merge(new)
        return new.overflow

    def _resync(self) -> None:
        """After lost events: watch the tree anew (folders made meanwhile went unwatched), or poll."""
        watch = self.watch
        if watch is None:
            return
        self.on_note("the kernel dropped events (queue overflow): watching the tree anew, a full pass")
        if not watch.resync():
            self.on_note(f"watching by a stat pass every {POLL_S:g}s: {watch.why_not}")
            watch.close()
            self.watch, self.mode = None, "poll"

    def _wait_for_lock(self) -> None:
        holder = self.ops.lock_holder()
        if holder:
            self.on_note(f"another indexer holds the lock ({holder}): waiting, then indexing after it")
        # At least one wait: a lock the holder cannot name (PostgreSQL's advisory lock) is not spun on.
        while not self.stop.wait(LOCK_POLL_S) and self.ops.lock_holder() is not None:
            pass

    def _changed_since(self) -> bool:
        return self.stop.is_set() or (self.watch is not None and self.watch.pending())

    def _embed(self) -> None:
        """The slow tier, until done or a change arrives (then it is owed to the next quiet moment)."""
        assert self.ops.embed is not None
        try:
            self.ops.embed(_YieldingProgress(self._changed_since))
        except Superseded:
            return
        except LockHeldError:
            self._wait_for_lock()  # another indexer runs: it embeds too, or the next quiet moment does
            return
        except Exception as exc:  # a provider or store failure: the lexical revision answers meanwhile
            self.on_note(
                f"embedding stopped: {getattr(exc, 'message', None) or f'{type(exc).__name__}: {exc}'}"
            )
        self._embed_owed = False
