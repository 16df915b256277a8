"""Markdown headings as definitions: ATX `#` headings and setext (underlined) headings outside fenced
code blocks."""

from __future__ import annotations

import re

from .model import Definition, FileFacts

_HEADING = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*\Z")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_UNDERLINE = re.compile(r" {0,3}(=+|-+)[ \t]*\Z")
# Lines that start no paragraph, so no setext title: list items, quotes, tables, HTML, indented code.
_NOT_TITLE = re.compile(r"(?: {0,3}(?:[-+*]|\d{1,9}[.)])(?:[ \t]|\Z)| {0,3}[>|<]| {4}|\t)")
_RULE = re.compile(r" {0,3}(?:[-*_][ \t]*){3,}\Z")
_SETEXT_LEVELS = {"=": 1, "-": 2}
SIGNATURE_CHARS = 200


def markdown_facts(text: str) -> FileFacts:
    """Headings with their parent heading as container and their section's last line."""
    # split("\n") rather than splitlines(): line numbers must match the ones tree-sitter gives.
    lines = text.split("\n")
    last_line = len(lines) - 1 if text.endswith("\n") else len(lines)
    headings = _headings(lines)
    ends = _section_ends(headings, last_line)
    definitions: list[Definition] = []
    parents: list[tuple[int, str]] = []  # (level, title) of the open ancestors
    for (line, level, title), end_line in zip(headings, ends, strict=True):
        while parents and parents[-1][0] >= level:
            parents.pop()
        container = parents[-1][1] if parents else None
        signature = lines[line - 1].strip()[:SIGNATURE_CHARS]
        definitions.append(Definition(title, "heading", container, line, end_line, line, signature))
        parents.append((level, title))
    return FileFacts("markdown", True, tuple(definitions), (), (), False)


def _headings(lines: list[str]) -> list[tuple[int, int, str]]:
    """(line, level, title) of each heading outside code fences and front matter."""
    found: list[tuple[int, int, str]] = []
    fence: str | None = None
    # A one-line paragraph a setext underline (`===`, `---`) makes a heading; a longer paragraph
    # is left alone, as `text\ntext\n---` is more often a rule under text than a two-line title.
    title: tuple[int, str] | None = None
    in_paragraph = False
    front_matter_end = _front_matter_end(lines)
    for number, raw in enumerate(lines, start=1):
        line = raw.rstrip("\r")
        if number <= front_matter_end:
            continue
        opening = _FENCE.match(line)
        if fence is not None:
            if opening and _closes(line, opening.group(1), fence):
                fence = None
            continue
        if opening:
            fence, title, in_paragraph = opening.group(1), None, False
            continue
        underline = _UNDERLINE.match(line) if title is not None else None
        if underline and title is not None:
            found.append((title[0], _SETEXT_LEVELS[underline.group(1)[0]], title[1]))
            title, in_paragraph = None, False
            continue
        match = _HEADING.match(line) if "#" in line[:4] else None
        if match and match.group(2):
            found.append((number, len(match.group(1)), match.group(2).strip()))
        if match or not line.strip() or _RULE.match(line):
            title, in_paragraph = None, False
        else:
            title = (number, line.strip()) if not in_paragraph and not _NOT_TITLE.match(line) else None
            in_paragraph = True
    return found


def _front_matter_end(lines: list[str]) -> int:
    """The line closing a leading YAML front matter block (`---` ... `---`), or 0."""
    if not lines or lines[0].rstrip() != "---":
        return 0
    for number, line in enumerate(lines[1:], start=2):
        if line.rstrip() in ("---", "..."):
            return number
    return 0


def _closes(line: str, marker: str, fence: str) -> bool:
    # A closing fence uses the opening character, is at least as long, and carries no info string.
    return marker[0] == fence[0] and len(marker) >= len(fence) and not line.strip().strip(fence[0])


def _section_ends(headings: list[tuple[int, int, str]], last_line: int) -> list[int]:
    """Each heading's section runs to the line before the next heading of its level or higher."""
    ends = [max(last_line, line) for line, _, _ in headings]
    open_: list[int] = []  # indexes of headings whose section has not ended
    for index, (line, level, _) in enumerate(headings):
        while open_ and headings[open_[-1]][1] >= level:
            closed = open_.pop()
            ends[closed] = max(line - 1, headings[closed][0])
        open_.append(index)
    return ends
