"""A revision's corpus hash (DESIGN §5), and the sorted lines it is made of kept for the next change.

The hash is sha1 of every `path NUL sha256 LF` line in path order, so a change of one file still
hashes every line. Reading them back from the store is most of a one-file run's hash (100,000 rows:
0.06 s, the hash 0.05 s); a long-running process (a server's live loop) keeps the last revision's
lines and edits them in place instead. They are keyed by the hash itself: the lines are what the
hash is of, so any view whose revision has that hash has those lines.
"""

from __future__ import annotations

import bisect
import hashlib
import threading
from collections.abc import Callable, Iterable, Mapping

_KEPT = 4  # revisions whose lines are kept (a server's views)
_LINES: dict[str, CorpusLines] = {}
_LOCK = threading.Lock()


def _line(path: str, sha256: str) -> bytes:
    return f"{path}\0{sha256}\n".encode("utf-8", errors="surrogateescape")


class CorpusLines:
    """The sorted lines of one revision."""

    def __init__(self, entries: Iterable[tuple[str, str]]) -> None:
        rows = sorted(entries)  # (path, sha256): paths are unique, so this is path order
        self.paths = [path for path, _ in rows]
        self.lines = [_line(path, sha256) for path, sha256 in rows]

    def digest(self) -> str:
        return hashlib.sha1(b"".join(self.lines)).hexdigest()

    def change(self, changed: Iterable[tuple[str, str]], removed: Iterable[str]) -> None:
        """These paths' lines replaced or inserted in order, the removed ones dropped."""
        for path, sha256 in changed:
            i = bisect.bisect_left(self.paths, path)
            if i < len(self.paths) and self.paths[i] == path:
                self.lines[i] = _line(path, sha256)
            else:
                self.paths.insert(i, path)
                self.lines.insert(i, _line(path, sha256))
        for path in removed:
            i = bisect.bisect_left(self.paths, path)
            if i < len(self.paths) and self.paths[i] == path:
                del self.paths[i], self.lines[i]


def corpus_hash(entries: Mapping[str, str]) -> str:
    """sha1 of the sorted `path NUL sha256 LF` lines of entries (path -> sha256), kept for a change."""
    lines = CorpusLines(entries.items())
    digest = lines.digest()
    _keep(digest, lines)
    return digest


def changed_corpus_hash(
    current: str,
    read: Callable[[], Iterable[tuple[str, str]]],
    changed: Iterable[tuple[str, str]],
    removed: Iterable[str],
) -> str:
    """The hash after a change to the revision whose hash is `current`: its kept lines edited, or
    `read()` (its path, sha256 pairs) when this process keeps none."""
    with _LOCK:
        lines = _LINES.pop(current, None)  # taken: two runs never edit the same lines
    if lines is None:
        lines = CorpusLines(read())
    lines.change(changed, removed)
    digest = lines.digest()
    _keep(digest, lines)
    return digest


def _keep(digest: str, lines: CorpusLines) -> None:
    with _LOCK:
        _LINES.pop(digest, None)
        while len(_LINES) >= _KEPT:
            del _LINES[next(iter(_LINES))]  # the oldest
        _LINES[digest] = lines
