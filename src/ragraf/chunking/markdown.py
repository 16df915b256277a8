"""Markdown chunks by heading: a section per chunk, big sections windowed, tiny ones merged."""

from __future__ import annotations

import re

from ragraf.chunking.base import Chunk, LineSizes, SymbolSpan, build_chunks, merge_spans, windows

_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")


def headings(lines: list[str]) -> list[tuple[int, int, str]]:
    """(0-based line, level, text) of each ATX heading outside code fences."""
    found = []
    fence: str | None = None
    for i, line in enumerate(lines):
        m = _FENCE.match(line)
        if m:
            fence = None if fence == m.group(1) else (fence or m.group(1))
            continue
        if fence is None:
            h = _HEADING.match(line)
            if h and h.group(2):
                found.append((i, len(h.group(1)), h.group(2)))
    return found


def chunk_markdown(text: str, max_chars: int, min_chars: int) -> list[Chunk]:
    """One chunk per heading section where sizes allow; the chunk's symbol is its heading."""
    lines = text.split("\n")
    sizes = LineSizes(lines)
    marks = headings(lines)
    starts = [0] + [i for i, _, _ in marks if i > 0]
    sections = [
        (s, (starts[n + 1] - 1) if n + 1 < len(starts) else len(lines) - 1) for n, s in enumerate(starts)
    ]
    spans: list[tuple[int, int]] = []
    for s, e in sections:
        spans.extend(windows(s, e, sizes, max_chars) if sizes.size(s, e) > max_chars else [(s, e)])
    symbols = []
    for n, (i, _level, title) in enumerate(marks):
        end = marks[n + 1][0] - 1 if n + 1 < len(marks) else len(lines) - 1
        symbols.append(SymbolSpan(title[:120], i + 1, end + 1))
    return build_chunks(lines, merge_spans(spans, sizes, max_chars, min_chars), symbols)
