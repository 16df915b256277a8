"""The read operation: a file as it is on disk now, confined to the root, and whether it differs from the index."""

from __future__ import annotations

import contextlib
import sqlite3

from ragraf.api.envelope import Envelope, StaleWarning
from ragraf.api.guarded import Guarded
from ragraf.api.session import names_damage
from ragraf.errors import StoreError, UsageError
from ragraf.freshness.live_read import parse_spec, read_live
from ragraf.store import DriftEvent


class ReadOps(Guarded):
    """`read()`."""

    @names_damage
    def read(self, path: str, start_line: int | None = None, end_line: int | None = None) -> Envelope:
        """The file as it is on disk now (confined to the root), and whether it differs from the index."""
        if start_line is None and end_line is None:
            path, start_line, end_line = parse_spec(path)
        rev = self._current()
        env = self._envelope("read", rev)
        live = read_live(self.settings.root, path, start_line, end_line)
        indexed = self.store().manifest_entry(rev.rev_no, live.path)
        total = live.total_lines
        start = max(1, start_line or 1)
        end = min(total, end_line or total)
        if start > end:
            raise UsageError(
                f"line range {start_line}-{end_line} is outside {live.path} (1-{total})",
                suggest=f"ask for lines within 1-{total}",
            )
        settings = self.settings
        from ragraf.corpus.discover import left_out  # the listing rules: only for a file not in the index

        why = (
            left_out(settings.root, live.path, settings.max_file_bytes, settings.max_line_chars)
            if indexed is None
            else None
        )
        if why:
            env.notes.append(f"{live.path} is {why}")
        differs = indexed is None or indexed.sha256 != live.sha256
        if indexed is not None and differs:
            event = DriftEvent(
                rev.rev, "modify", live.path, "guard", indexed.sha256, live.sha256, indexed.content_id
            )
            with contextlib.suppress(sqlite3.OperationalError, StoreError):
                self.store().register_drift([event])
        if differs and not why:
            env.state = "drifted"
            reason = f"not in {rev.rev}" if indexed is None else f"modified after {rev.rev}"
            env.stale_warnings.append(StaleWarning(live.path, reason, "reindex"))
            env.drift["files"] = 1
        env.results.append({
            "path": live.path, "start_line": start, "end_line": end, "total_lines": total,
            "sha256": live.sha256, "indexed_sha256": indexed.sha256 if indexed else None,
            "differs_from_index": differs, "stale": False,
            "content": "\n".join(live.lines[start - live.first_line : end - live.first_line + 1]),
        })  # fmt: skip
        return env
