"""Line-window chunks for files without a syntax the chunker knows."""

from __future__ import annotations

from ragraf.chunking.base import Chunk, LineSizes, SymbolSpan, build_chunks, merge_spans, windows


def chunk_lines(
    text: str, max_chars: int, min_chars: int, symbols: list[SymbolSpan] | None = None
) -> list[Chunk]:
    """Consecutive windows of whole lines, each at most max_chars, broken at blank lines when possible."""
    lines = text.split("\n")
    sizes = LineSizes(lines)
    # Paragraphs first (blank-line separated), so windows prefer natural breaks.
    paragraphs: list[tuple[int, int]] = []
    start = 0
    for i, line in enumerate(lines):
        if not line.strip() and i > start:
            paragraphs.append((start, i))
            start = i + 1
    if start < len(lines):
        paragraphs.append((start, len(lines) - 1))
    spans: list[tuple[int, int]] = []
    for s, e in paragraphs:
        spans.extend(windows(s, e, sizes, max_chars) if sizes.size(s, e) > max_chars else [(s, e)])
    return build_chunks(lines, merge_spans(spans, sizes, max_chars, min_chars), symbols)
