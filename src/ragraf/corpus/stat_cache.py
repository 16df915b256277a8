"""The stat cache's rules, shared by index runs and the guard: when a cached hash can be trusted."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ragraf.corpus.discover import FileStat
    from ragraf.store.base import StatEntry

# A stat taken within this window of an mtime may miss a same-size rewrite, or a folder a file
# created, in the same clock tick (git's "racy" problem): such a file or folder is looked at again.
RACY_NS = 2_000_000_000
# ... where timestamps are whole seconds (FAT, HFS+, some network file systems). Finer ones tick
# every 1-10 ms (Linux stamps files from its coarse clock; APFS and NTFS are finer still): once a
# tick has passed since the mtime, any later write shows a later one.
FINE_MARGIN_NS = 20_000_000
SKIPPED = ""  # the stat cache's sha256 for a file examined and found unindexable


def stat_matches(cached: StatEntry | None, st: FileStat) -> bool:
    """True when the cached hash can be trusted for this stat (nothing moved, not racy)."""
    return (
        cached is not None
        and cached.size == st.size
        and cached.mtime_ns == st.mtime_ns
        and cached.ctime_ns == st.ctime_ns
        and cached.inode == st.inode
        and settled(cached.checked_ns, st.mtime_ns)
    )


def settled(checked_ns: int, mtime_ns: int, racy_ns: int = RACY_NS) -> bool:
    """Whether what was seen at checked_ns of a file or folder last changed at mtime_ns holds
    until its mtime moves: a change in the same clock tick as mtime_ns would leave it as it is. A
    fine timestamp (not a whole second) settles a tick after; a whole-second one after racy_ns."""
    age = checked_ns - mtime_ns
    return age > racy_ns or (age > FINE_MARGIN_NS and mtime_ns % 1_000_000_000 != 0)
