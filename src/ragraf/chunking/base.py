"""The Chunk and the span arithmetic every chunker shares: sizes, greedy merging, symbols."""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from itertools import accumulate


@dataclass(frozen=True)
class Chunk:
    """A run of whole lines of one file's content (1-based, inclusive)."""

    start_line: int
    end_line: int
    symbol: str | None
    text: str


@dataclass(frozen=True)
class SymbolSpan:
    """A definition's qualified name and its 1-based line span, used to name chunks."""

    name: str
    start_line: int
    end_line: int


class LineSizes:
    """Prefix sums of non-blank characters per line, so any span's size is O(1)."""

    def __init__(self, lines: list[str], stripped: list[int] | None = None) -> None:
        # Sizes summed in C, then one per line added for its newline. `stripped`: the lines'
        # lengths without surrounding blanks, when the caller has them already.
        sizes = accumulate(stripped if stripped is not None else map(len, map(str.strip, lines)), initial=0)
        self.prefix = [total + i for i, total in enumerate(sizes)]

    def size(self, start: int, end: int) -> int:
        """Size of 0-based inclusive lines start..end."""
        return self.prefix[end + 1] - self.prefix[start]


def merge_spans(
    spans: list[tuple[int, int]], sizes: LineSizes, max_chars: int, min_chars: int
) -> list[tuple[int, int]]:
    """Greedily join adjacent spans up to max_chars; then fold spans under min_chars into a neighbour."""
    # Sizes read from the prefix sums in line (sizes.size per span costs a call each, and a text
    # file has thousands of paragraphs).
    prefix = sizes.prefix
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and prefix[end + 1] - prefix[merged[-1][0]] <= max_chars:
            merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    result: list[tuple[int, int]] = []
    most = max_chars * 3 // 2
    for start, end in merged:
        if result:
            first, last = result[-1]
            small = min(prefix[end + 1] - prefix[start], prefix[last + 1] - prefix[first]) < min_chars
            if small and prefix[end + 1] - prefix[first] <= most:
                result[-1] = (first, end)
                continue
        result.append((start, end))
    return result


def windows(start: int, end: int, sizes: LineSizes, max_chars: int) -> list[tuple[int, int]]:
    """Cut 0-based lines start..end into consecutive windows of at most max_chars (a line never splits)."""
    out: list[tuple[int, int]] = []
    prefix = sizes.prefix
    s = start
    while s <= end:
        # The first line past s that would take the window over max_chars: sizes only grow, so
        # a binary search over the prefix sums finds it without a step per line.
        i = bisect_right(prefix, prefix[s] + max_chars, s + 2) - 1
        if i > end:
            break
        out.append((s, i - 1))
        s = i
    if s <= end:
        out.append((s, end))
    return out


def symbol_for(start: int, end: int, symbols: list[SymbolSpan]) -> str | None:
    """The first definition that starts inside the 1-based span, else the innermost one enclosing it."""
    best_enclosing: SymbolSpan | None = None
    for sym in symbols:
        if start <= sym.start_line <= end:
            return sym.name
        if (
            sym.start_line <= start
            and sym.end_line >= end
            and (best_enclosing is None or sym.start_line >= best_enclosing.start_line)
        ):
            best_enclosing = sym
    return best_enclosing.name if best_enclosing else None


def build_chunks(
    lines: list[str], spans: list[tuple[int, int]], symbols: list[SymbolSpan] | None
) -> list[Chunk]:
    """Chunks for 0-based spans, skipping blank-only spans."""
    chunks = []
    symbols = sorted(symbols or [], key=lambda s: (s.start_line, -s.end_line))
    for start, end in spans:
        while start < end and not lines[start].strip():
            start += 1
        while end > start and not lines[end].strip():
            end -= 1
        body = "\n".join(lines[start : end + 1])
        if not body.strip():
            continue
        chunks.append(Chunk(start + 1, end + 1, symbol_for(start + 1, end + 1, symbols), body))
    return chunks
