"""Chunking: symbol-aligned chunks from tree-sitter, Markdown by headings, line windows otherwise."""

from __future__ import annotations

from ragraf.chunking.base import Chunk, SymbolSpan
from ragraf.chunking.lines import chunk_lines
from ragraf.chunking.markdown import chunk_markdown
from ragraf.chunking.syntax import chunk_syntax, parse
from ragraf.languages import TREE_SITTER_LANGUAGES


def chunk_text(
    text: str,
    language: str,
    max_chars: int = 1500,
    min_chars: int = 250,
    symbols: list[SymbolSpan] | None = None,
    tree: object | None = None,
) -> list[Chunk]:
    """Split a file's text into chunks near max_chars, aligned to syntax where the language allows."""
    if not text.strip():
        return []
    if language == "markdown":
        return chunk_markdown(text, max_chars, min_chars)
    if language in TREE_SITTER_LANGUAGES:
        chunks = chunk_syntax(text, language, max_chars, min_chars, symbols, tree)
        if chunks is not None:
            return chunks
    return chunk_lines(text, max_chars, min_chars, symbols)


__all__ = ["Chunk", "SymbolSpan", "chunk_text", "parse"]
