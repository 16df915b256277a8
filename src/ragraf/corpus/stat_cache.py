"""The stat cache's rules, shared by index runs and the guard: when a cached hash can be trusted."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ragraf.corpus.discover import FileStat
    from ragraf.store.base import StatEntry

# A stat taken within this window of an mtime may miss a same-size rewrite, or a folder a file
# created, in the same clock tick (git's "racy" problem): such a file or folder is looked at again.
RACY_NS = 2_000_000_000
SKIPPED = ""  # the stat cache's sha256 for a file examined and found unindexable


def stat_matches(cached: StatEntry | None, st: FileStat) -> bool:
    """True when the cached hash can be trusted for this stat (nothing moved, not racy)."""
    return (
        cached is not None
        and cached.size == st.size
        and cached.mtime_ns == st.mtime_ns
        and cached.ctime_ns == st.ctime_ns
        and cached.inode == st.inode
        and cached.checked_ns - st.mtime_ns > RACY_NS
    )
