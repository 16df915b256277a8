"""Chunks align to syntax, stay near the target size, name their symbol and cite real lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragraf.chunking import chunk_text, parse
from ragraf.facts import extract_facts

SNIPPETS = {
    "python": ("class Greeter:\n    def hello(self, name):\n        return name\n", "Greeter"),
    "javascript": ("class Greeter {\n  hello(name) {\n    return name;\n  }\n}\n", "Greeter"),
    "typescript": (
        "export class Greeter {\n  hello(name: string): string {\n    return name;\n  }\n}\n",
        "Greeter",
    ),
    "tsx": (
        "export function Greeter(props: {name: string}) {\n  return <b>{props.name}</b>;\n}\n",
        "Greeter",
    ),
    "go": ("package main\n\nfunc Greeter(name string) string {\n\treturn name\n}\n", "Greeter"),
    "rust": ("fn greeter(name: &str) -> &str {\n    name\n}\n", "greeter"),
    "java": ("class Greeter {\n  String hello(String n) { return n; }\n}\n", "Greeter"),
    "c": ("int greeter(int x) {\n  return x;\n}\n", None),
    "cpp": ("class Greeter {\n public:\n  int hello() { return 1; }\n};\n", "Greeter"),
    "csharp": ("class Greeter {\n  string Hello(string n) { return n; }\n}\n", "Greeter"),
    "ruby": ("class Greeter\n  def hello(name)\n    name\n  end\nend\n", "Greeter"),
    "php": ("<?php\nclass Greeter {\n  function hello($n) { return $n; }\n}\n", "Greeter"),
    "kotlin": ("class Greeter {\n  fun hello(n: String) = n\n}\n", None),
    "scala": ("class Greeter {\n  def hello(n: String) = n\n}\n", "Greeter"),
    "swift": ("class Greeter {\n  func hello(n: String) -> String { return n }\n}\n", None),
    "bash": ('greeter() {\n  echo "$1"\n}\n', None),
    "lua": ("function greeter(name)\n  return name\nend\n", None),
    "elixir": ("defmodule Greeter do\n  def hello(name), do: name\nend\n", None),
    "haskell": ("greeter :: String -> String\ngreeter name = name\n", None),
    "zig": ("fn greeter(x: i32) i32 {\n    return x;\n}\n", None),
}


@pytest.mark.parametrize("language", sorted(SNIPPETS))
def test_every_supported_language_chunks_with_real_lines(language: str) -> None:
    text, symbol = SNIPPETS[language]
    chunks = chunk_text(text, language)
    assert chunks, language
    lines = text.split("\n")
    for c in chunks:
        assert c.text == "\n".join(lines[c.start_line - 1 : c.end_line])
    if symbol:
        assert chunks[0].symbol and chunks[0].symbol.split(".")[0] == symbol


def _stdlib_file(name: str) -> str:
    import asyncio

    return (Path(asyncio.__file__).parent / name).read_text()


def test_big_python_file_chunks_cover_it_near_the_target_size() -> None:
    text = _stdlib_file("base_events.py")
    chunks = chunk_text(text, "python", max_chars=1500, min_chars=250)
    lines = text.split("\n")
    covered = set()
    for c in chunks:
        assert c.text == "\n".join(lines[c.start_line - 1 : c.end_line])
        covered.update(range(c.start_line, c.end_line + 1))
    nonblank = {i + 1 for i, line in enumerate(lines) if line.strip()}
    assert nonblank <= covered
    sizes = sorted(sum(len(line.strip()) + 1 for line in c.text.split("\n")) for c in chunks)
    assert sizes[len(sizes) // 2] <= 1500
    assert sum(s > 3000 for s in sizes) == 0
    # A method is not cut away from its own header: each chunk naming a method starts at/before its def.
    starts = {c.symbol: c for c in chunks if c.symbol}
    assert "BaseEventLoop.create_server" in starts or any(
        c.symbol and c.symbol.startswith("BaseEventLoop") for c in chunks
    )


def test_markdown_splits_by_heading_and_names_sections() -> None:
    body = "word " * 400
    text = f"# Title\nintro\n\n## Install\n{body}\n\n## Usage\n{body}\n```\n# not a heading\n```\n"
    chunks = chunk_text(text, "markdown", max_chars=1500, min_chars=250)
    symbols = [c.symbol for c in chunks]
    assert "Install" in symbols[0] or symbols[0] == "Title"
    assert "Usage" in symbols
    assert "not a heading" not in symbols


def test_unknown_language_falls_back_to_line_windows() -> None:
    text = "\n".join(f"key{i} = value{i}" for i in range(500))
    chunks = chunk_text(text, "ini", max_chars=1500, min_chars=250)
    assert len(chunks) > 3
    assert chunks[0].start_line == 1 and chunks[-1].end_line == 500
    for a, b in zip(chunks, chunks[1:], strict=False):
        assert b.start_line == a.end_line + 1


def test_syntax_errors_and_deep_nesting_never_crash() -> None:
    broken = "def f(:\n    return )\nclass\n" * 50
    assert chunk_text(broken, "python")
    deep = "x = " + "[" * 3000 + "]" * 3000 + "\n"
    assert chunk_text(deep, "python", max_chars=100)
    assert chunk_text("", "python") == []


def test_a_long_run_of_python_comments_keeps_every_line_true() -> None:
    # Parsed as blank lines (tree-sitter-python is quadratic in a comment run), at the same places.
    text = (
        "def before():\n    pass\n"
        + "    # commented out\n" * 5000
        + 'def after(x="#"):  # a comment\n    """# not a comment"""\n    return before()\n'
    )
    facts = extract_facts(text, "python", tree=parse(text, "python"))
    assert [(d.name, d.line, d.end_line) for d in facts.definitions] == [
        ("before", 1, 2),
        ("after", 5003, 5005),
    ]
    assert [(r.name, r.line, r.container) for r in facts.references if r.is_call] == [
        ("before", 5005, "after")
    ]
    chunks = chunk_text(text, "python", 1500, 200)
    assert chunks[-1].end_line == 5005 and "def after" in chunks[-1].text


def test_lines_starting_with_a_hash_inside_strings_are_not_taken_for_a_comment_run() -> None:
    docstring = (
        'def f():\n    """Docs:\n'
        + "".join(f"# item {i}\n" for i in range(120))
        + '# end """\n    return 1\n'
    )
    continued = (
        's = "start \\\n' + "".join(f"# part {i} \\\n" for i in range(120)) + 'end"\ndef after(): pass\n'
    )
    for text, expected in (
        (docstring, [("f", 1, 124)]),
        (continued, [("s", 1, 122), ("after", 123, 123)]),
    ):
        tree = parse(text, "python")
        assert not tree.root_node.has_error
        facts = extract_facts(text, "python", tree=tree)
        assert [(d.name, d.line, d.end_line) for d in facts.definitions] == expected


def test_a_line_of_one_huge_expression_is_one_span_without_splitting_its_nodes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ragraf.chunking import syntax

    expression = " + ".join(f"x{i}**{i % 7}*y{i}" for i in range(2_000))  # 30,000 characters
    text = "def f(x, y):\n    return 1\n\n\nbig = " + expression + "\n\n\ndef g():\n    return 2\n"
    calls = []
    split = syntax._split
    monkeypatch.setattr(syntax, "_split", lambda node, *rest: calls.append(node.type) or split(node, *rest))
    chunks = chunk_text(text, "python", 1500, 250)
    lines = text.split("\n")
    assert [c.text for c in chunks] == ["\n".join(lines[c.start_line - 1 : c.end_line]) for c in chunks]
    assert [c.text for c in chunks if expression in c.text] == ["big = " + expression]
    assert len(calls) <= 3  # the module, the line's statement: not each of its 10,000 nodes
