"""`ragraf watch` and `ragraf serve --live`: the live loop (index/live.py) over an Index, its lines
and its signals (Ctrl-C exits 130, SIGTERM 0, each after the run in progress stopped cleanly)."""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from types import FrameType
from typing import Any

from ragraf.adapters.render import render_report
from ragraf.api import Index
from ragraf.errors import EXIT_INTERRUPTED, EXIT_OK, IndexMissingError, RagrafError
from ragraf.index.live import LiveLoop, LiveOps, LiveRun
from ragraf.index.lock import WriterLock
from ragraf.index.progress import Progress

log = logging.getLogger("ragraf.live")


def live_ops(idx: Index) -> LiveOps:
    """The loop's runs over idx: lexical first (queryable at once), the embeddings after it."""

    def run() -> dict[str, Any]:
        report = idx.index(lexical_only=True, wait=False)
        return report if isinstance(report, dict) else report.to_dict()

    def embed(progress: Progress) -> object:
        return idx.index(wait=False, progress=progress)

    # The stat pass's own Index: a work tree's read would refresh its view itself (lazily), and the
    # run that follows should be the loop's, reported like the others.
    guard = Index.open(idx.settings.root, lazy_refresh_max_files=0)

    def drifted() -> bool:
        try:
            return guard.status(reindex_on_drift="warn").drift.get("files", 0) > 0
        except IndexMissingError:
            return True

    def lock_holder() -> str | None:
        if idx.settings.store != "sqlite":
            return None
        return WriterLock(idx.settings.home).busy()

    try:
        embedder = idx.embedder()
    except RagrafError:
        embedder = None  # the run says why in its warnings; the loop indexes lexically
    return LiveOps(run, embed if embedder is not None else None, drifted, lock_holder)


def run_line(run: LiveRun) -> str:
    """One run as the watch command prints it: why and how soon, then the index report's line."""
    why = {"start": "catching up", "lock": "after another indexer", "poll": "the stat pass found drift"}
    cause = why.get(run.trigger) or (
        f"{run.paths} path{'s' if run.paths != 1 else ''} changed"
        if run.trigger == "change"
        else "events were lost: a full pass"
    )
    when = "" if run.trigger == "start" else f"; {run.lag_s:.2f} s after the first change"
    return f"[run {run.number}: {cause}{when}] {render_report(run.report)}"


class _Terminated(Exception):
    """SIGTERM: stop as cleanly as Ctrl-C, and exit 0."""


def _terminate(_signum: int, _frame: FrameType | None) -> None:
    raise _Terminated


def watch(root: Path, as_json: bool) -> int:
    """The live loop in the foreground: a line per run (a JSON object with as_json) until stopped."""
    idx = Index.open(root)

    def on_run(run: LiveRun) -> None:
        line = json.dumps(run.to_dict(), ensure_ascii=False, default=str) if as_json else run_line(run)
        print(line, flush=True)

    def on_note(message: str) -> None:
        print(f"ragraf watch: {message}", file=sys.stderr, flush=True)

    loop = LiveLoop(
        idx.settings.root, idx.settings.home, live_ops(idx), on_run, on_note, use_inotify=idx.settings.watch
    )
    signal.signal(signal.SIGTERM, _terminate)
    try:
        loop.run_forever()
    except KeyboardInterrupt:
        code, how = EXIT_INTERRUPTED, "interrupted"
    except _Terminated:
        code, how = EXIT_OK, "stopped"
    else:
        code, how = EXIT_OK, "stopped"
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        idx.close()
    runs = f"{loop.runs} run{'s' if loop.runs != 1 else ''}"
    print(f"ragraf watch: {how} after {runs}; {_answering(root)}", file=sys.stderr, flush=True)
    return code


def _answering(root: Path) -> str:
    try:
        with Index.open(root) as idx:
            rev = idx.store().current_revision()
    except (RagrafError, KeyboardInterrupt):
        rev = None
    return f"{rev.rev} answers" if rev is not None else "no revision was committed yet"


def start_live(roots: Iterable[Path]) -> Callable[[], None]:
    """The live loop of each root in a thread beside a server; returns what stops them. Runs are
    logged at info level, anything else worth saying at warning."""
    stop = threading.Event()
    threads: list[threading.Thread] = []

    def stop_all() -> None:
        stop.set()
        for thread in threads:
            thread.join(timeout=5)  # a run still going is abandoned: its transaction never commits

    def terminate(_signum: int, _frame: FrameType | None) -> None:
        # The MCP server waits for its client to close stdin, which a SIGTERM does not: the loops stop
        # between runs, then the process ends (exit 0). uvicorn (--http) installs its own handler.
        stop_all()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(EXIT_OK)

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, terminate)  # before a loop says it is watching
    for root in roots:
        idx = Index.open(root)

        def on_run(run: LiveRun) -> None:
            log.info("%s", run_line(run))

        loop = LiveLoop(
            idx.settings.root,
            idx.settings.home,
            live_ops(idx),
            on_run,
            lambda message: log.warning("%s", message),
            stop=stop,
            use_inotify=idx.settings.watch,
        )
        thread = threading.Thread(target=_keep_live, args=(loop, idx), name="ragraf-live", daemon=True)
        thread.start()
        threads.append(thread)
    return stop_all


def _keep_live(loop: LiveLoop, idx: Index) -> None:
    """A server's loop outlives any failure below it, as its tools do: logged, then watching again."""
    try:
        while not loop.stop.is_set():
            try:
                loop.run_forever()
            except Exception:  # the server must not lose its live index to a bug
                log.exception("the live index loop failed; starting it again")
                loop.stop.wait(1.0)
    finally:
        idx.close()
