"""Progress reporting for long work: a rich bar on a terminal, plain lines otherwise, or nothing."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """Silent progress; the base for the reporters below."""

    def start(self, phase: str, total: int) -> None: ...
    def advance(self, n: int = 1) -> None: ...
    def done(self) -> None: ...
    def note(self, message: str) -> None: ...


class LineProgress(Progress):
    """Plain lines on a non-terminal stream (a log, a pipe): at most one every `every` seconds per
    phase, and an ETA only once there is a rate (measured from the first advance, so a slow first
    batch, a model loading, does not make a wild first guess)."""

    def __init__(self, stream: TextIO = sys.stderr, every: float = 5.0) -> None:
        self.stream, self.every = stream, every
        self.phase, self.total, self.count, self.t0, self.last = "", 0, 0, 0.0, 0.0
        self.first: tuple[float, int] | None = None  # (time, count) of the first advance

    def start(self, phase: str, total: int) -> None:
        self.phase, self.total, self.count, self.first = phase, total, 0, None
        self.t0 = self.last = time.monotonic()
        print(f"{phase}: {total}", file=self.stream, flush=True)

    def advance(self, n: int = 1) -> None:
        self.count += n
        now = time.monotonic()
        if self.first is None:
            self.first = (now, self.count)
        if now - self.last < self.every or self.count >= self.total:
            return  # the last step is said by done()
        self.last = now
        since, counted = self.first
        line = f"{self.phase}: {self.count}/{self.total}"
        if now - since >= 1.0 and self.count > counted:
            rate = (self.count - counted) / (now - since)
            line += f" ({rate:,.0f}/s, eta {(self.total - self.count) / rate:.0f}s)"
        print(line, file=self.stream, flush=True)

    def done(self) -> None:
        if self.phase:
            took = time.monotonic() - self.t0
            print(
                f"{self.phase}: {self.count}/{self.total} done in {took:.1f}s", file=self.stream, flush=True
            )
            self.phase = ""

    def note(self, message: str) -> None:
        print(message, file=self.stream, flush=True)


class RichProgress(Progress):
    """A rich progress bar with count, rate and ETA, drawn on stderr."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            ProgressColumn,
            TextColumn,
            TimeRemainingColumn,
        )
        from rich.progress import Progress as Bar
        from rich.text import Text

        class RateColumn(ProgressColumn):
            def render(self, task) -> Text:  # type: ignore[no-untyped-def]
                return Text(f"{task.speed or 0:,.0f}/s")

        self.console = Console(stderr=True)
        self.bar = Bar(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            RateColumn(),
            TimeRemainingColumn(),
            console=self.console,
            transient=True,
            # Redrawn from advance(), not by rich's refresh thread: a process running one thread
            # may fork its parse worker (index/workers.py).
            auto_refresh=False,
        )
        self.task: int | None = None
        self.drawn = 0.0

    def start(self, phase: str, total: int) -> None:
        if self.task is None:
            self.bar.start()
        else:
            self.bar.remove_task(self.task)  # type: ignore[arg-type]
        self.task = self.bar.add_task(phase, total=total)  # type: ignore[assignment]
        self.bar.refresh()

    def advance(self, n: int = 1) -> None:
        if self.task is not None:
            self.bar.advance(self.task, n)  # type: ignore[arg-type]
            if time.monotonic() - self.drawn > 0.1:
                self.bar.refresh()
                self.drawn = time.monotonic()

    def done(self) -> None:
        if self.task is not None:
            self.bar.stop()
            self.task = None

    def note(self, message: str) -> None:
        self.console.print(message)


def make_progress(quiet: bool) -> Progress:
    """The reporter that fits stderr: none when quiet, a bar on a terminal, lines otherwise."""
    if quiet:
        return Progress()
    return RichProgress() if sys.stderr.isatty() else LineProgress()
