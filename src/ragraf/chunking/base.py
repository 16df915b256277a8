"""The Chunk and the span arithmetic every chunker shares: sizes, greedy merging, symbols."""

from __future__ import annotations

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

    def __init__(self, lines: list[str]) -> None:
        # Sizes summed in C, then one per line added for its newline.
        sizes = accumulate(map(len, map(str.strip, lines)), initial=0)
        self.prefix = [total + i for i, total in enumerate(sizes)]

    def size(self, start: int, end: int) -> int:
        """Size of 0-based inclusive lines start..end."""
        return self.prefix[end + 1] - self.prefix[start]


def merge_spans(
    spans: list[tuple[int, int]], sizes: LineSizes, max_chars: int, min_chars: int
) -> list[tuple[int, int]]:
    """Greedily join adjacent spans up to max_chars; then fold spans under min_chars into a neighbour."""
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and sizes.size(merged[-1][0], end) <= max_chars:
            merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    result: list[tuple[int, int]] = []
    for start, end in merged:
        small = result and min(sizes.size(start, end), sizes.size(*result[-1])) < min_chars
        if small and sizes.size(result[-1][0], end) <= max_chars * 3 // 2:
            result[-1] = (result[-1][0], end)
        else:
            result.append((start, end))
    return result


def windows(start: int, end: int, sizes: LineSizes, max_chars: int) -> list[tuple[int, int]]:
    """Cut 0-based lines start..end into consecutive windows of at most max_chars (a line never splits)."""
    out: list[tuple[int, int]] = []
    s = start
    for i in range(start, end + 1):
        if i > s and sizes.size(s, i) > max_chars:
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
