"""Syntax-aligned chunks: split oversized nodes into their children, merge small siblings (cAST-style)."""

from __future__ import annotations

import functools
import re
from typing import Any

from ragraf.chunking.base import Chunk, LineSizes, SymbolSpan, build_chunks, merge_spans, windows
from ragraf.grammar_input import grammar_safe

# Generic definition-node shapes, used to name chunks when the caller has no facts to offer.
_DEFINITION_TYPE = re.compile(
    r"(function|method|class|struct|interface|enum|trait|impl|module|namespace|constructor|object)"
    r"(_definition|_declaration|_item|_specifier|_signature)?$"
)


@functools.cache
def _parser(language: str) -> Any:
    from tree_sitter_language_pack import get_parser

    return get_parser(language)  # type: ignore[arg-type]


# tree-sitter-python's scanner looks past every comment line for the next line's indent, which
# makes a run of comment lines quadratic (20,000 took 10 s). Such a run is parsed as blank lines
# of the same length: bytes, lines and columns stay true, and no fact or chunk comes from comments.
_COMMENT_RUN_LINES = 100
_COMMENT_RUN = re.compile(rb"(?:^[ \t]*#[^\n]*\n){%d,}" % _COMMENT_RUN_LINES, re.MULTILINE)
# Comments and strings of Python, to tell a comment line from a line inside a string that starts
# with "#": each character is taken by one branch only, so the scan is linear.
_PY_COMMENT_OR_STRING = re.compile(
    rb"""(?P<comment>\#[^\n]*)"""
    rb"""|[rRbBuUfF]{0,2}(?:"{3}(?:[^"\\]|\\.|"(?!""))*(?:"{3}|\Z)|'{3}(?:[^'\\]|\\.|'(?!''))*(?:'{3}|\Z)"""
    rb"""|"(?:[^"\\\n]|\\.)*(?:"|\n|\Z)|'(?:[^'\\\n]|\\.)*(?:'|\n|\Z))""",
    re.DOTALL,
)


def _blank_comment_runs(data: bytes) -> bytes:
    """Python source with each line of a long comment run (not inside a string) made blanks."""
    runs = [m.span() for m in _COMMENT_RUN.finditer(data)]
    if not runs:
        return data
    out = bytearray(data)
    for token in _PY_COMMENT_OR_STRING.finditer(data):
        start, end = token.span("comment")
        if start < 0 or not any(a <= start < b for a, b in runs):
            continue
        line_start = data.rfind(b"\n", 0, start) + 1
        if data[line_start:start].strip(b" \t"):
            continue  # code before the comment on its line
        out[line_start:end] = b" " * (end - line_start)
    return bytes(out)


def parse(text: str, language: str) -> Any | None:
    """A tree-sitter tree for the text, or None when the grammar is unavailable."""
    data = grammar_safe(text.encode("utf-8", errors="surrogatepass"), language)
    if language == "python" and data.count(b"#") >= _COMMENT_RUN_LINES:  # fewer: no run to find
        data = _blank_comment_runs(data)
    try:
        return _parser(language).parse(data)
    except (LookupError, ValueError, RuntimeError, ImportError):
        return None


def _end_row(node: Any) -> int:
    row, col = node.end_point
    return row - 1 if col == 0 and row > node.start_point[0] else row


def _split(node: Any, sizes: LineSizes, max_chars: int, min_chars: int) -> list[tuple[int, int]]:
    """Spans of one node: itself when it fits, else its children's spans merged among themselves."""
    start, end = node.start_point[0], _end_row(node)
    # A line never splits: a node on one line is that line, however long (below it, every node of a
    # 10,000-character line of one expression was split in turn, each to the same line).
    if start == end or sizes.size(start, end) <= max_chars:
        return [(start, end)]
    if node.child_count == 0:
        return windows(start, end, sizes, max_chars)
    pieces: list[tuple[int, int]] = []
    prefix = sizes.prefix
    for child in node.children:
        # Most children fit: their span is taken here, without a call (a file has thousands).
        first = child.start_point[0]
        row, column = child.end_point
        last = row - 1 if column == 0 and row > first else row
        if first == last or prefix[last + 1] - prefix[first] <= max_chars:
            pieces.append((first, last))
        else:
            pieces.extend(_split(child, sizes, max_chars, min_chars))
    # Siblings merge only with siblings, so a function's header stays with its body.
    return merge_spans(_contiguous(pieces, start, end), sizes, max_chars, min_chars)


def _contiguous(spans: list[tuple[int, int]], first: int, last: int) -> list[tuple[int, int]]:
    """Non-overlapping spans covering first..last; gap lines (comments, blanks) join the next span."""
    out: list[tuple[int, int]] = []
    next_free = first
    for _start, end in sorted(spans):
        end = min(end, last)
        if end < next_free:
            continue
        out.append((next_free, end))
        next_free = end + 1
    if next_free <= last:
        if out:
            out[-1] = (out[-1][0], last)
        else:
            out.append((first, last))
    return out


def _spans(
    root: Any, sizes: LineSizes, max_chars: int, min_chars: int, last_line: int
) -> list[tuple[int, int]]:
    """Line spans covering the file, each a whole node or a run of siblings, none far over max_chars."""
    try:
        spans = _split(root, sizes, max_chars, min_chars)
    except RecursionError:
        return windows(0, last_line, sizes, max_chars)  # absurdly deep nesting: plain windows
    spans = _contiguous(spans, 0, last_line)
    # A span grown by gap lines may now be oversized (a long comment block): window it.
    final: list[tuple[int, int]] = []
    for start, end in spans:
        oversized = sizes.size(start, end) > max_chars * 2
        final.extend(windows(start, end, sizes, max_chars) if oversized else [(start, end)])
    return final


def generic_symbols(root: Any) -> list[SymbolSpan]:
    """Definition-looking nodes with a `name` field, qualified by their enclosing definitions."""
    found: list[SymbolSpan] = []
    stack: list[tuple[Any, str]] = [(root, "")]
    while stack:
        node, prefix = stack.pop()
        qual = prefix
        if _DEFINITION_TYPE.search(node.type):
            name_node = node.child_by_field_name("name")
            if name_node is not None and name_node.text:
                name = name_node.text.decode("utf-8", errors="replace")[:100]
                qual = f"{prefix}.{name}" if prefix else name
                found.append(SymbolSpan(qual, node.start_point[0] + 1, _end_row(node) + 1))
        if len(stack) < 100_000:
            stack.extend((child, qual) for child in node.children if child.child_count)
    return found


def chunk_syntax(
    text: str,
    language: str,
    max_chars: int,
    min_chars: int,
    symbols: list[SymbolSpan] | None = None,
    tree: Any | None = None,
) -> list[Chunk] | None:
    """Syntax-aligned chunks, or None when the text cannot be parsed (the caller falls back)."""
    tree = tree if tree is not None else parse(text, language)
    if tree is None:
        return None
    lines = text.split("\n")
    sizes = LineSizes(lines)
    spans = _spans(tree.root_node, sizes, max_chars, min_chars, len(lines) - 1)
    if symbols is None:
        symbols = generic_symbols(tree.root_node)
    return build_chunks(lines, spans, symbols)
