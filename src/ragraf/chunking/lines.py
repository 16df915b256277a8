"""Line-window chunks for files without a syntax the chunker knows."""

from __future__ import annotations

from itertools import compress, count
from operator import not_

from ragraf.chunking.base import Chunk, LineSizes, SymbolSpan, build_chunks, merge_spans, windows


def chunk_lines(
    text: str, max_chars: int, min_chars: int, symbols: list[SymbolSpan] | None = None
) -> list[Chunk]:
    """Consecutive windows of whole lines, each at most max_chars, broken at blank lines when possible."""
    lines = text.split("\n")
    stripped = list(map(len, map(str.strip, lines)))
    sizes = LineSizes(lines, stripped)
    # Paragraphs first (blank-line separated), so windows prefer natural breaks; the blank lines
    # are found in C, so only they cost a Python step (a text file has tens of thousands of lines).
    paragraphs: list[tuple[int, int]] = []
    start = 0
    for i in compress(count(), map(not_, stripped)):
        if i > start:
            paragraphs.append((start, i))
            start = i + 1
    if start < len(lines):
        paragraphs.append((start, len(lines) - 1))
    spans: list[tuple[int, int]] = []
    prefix = sizes.prefix
    for s, e in paragraphs:
        if prefix[e + 1] - prefix[s] > max_chars:
            spans.extend(windows(s, e, sizes, max_chars))
        else:
            spans.append((s, e))
    return build_chunks(lines, merge_spans(spans, sizes, max_chars, min_chars), symbols)
