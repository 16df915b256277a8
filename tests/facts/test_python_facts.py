"""Python facts: every definition's line holds its name, across the whole standard library."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ragraf.facts import extract_facts, qualified_name

STDLIB = Path(sys.base_prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}"


def stdlib_files() -> list[Path]:
    return sorted(p for p in STDLIB.rglob("*.py") if "site-packages" not in p.parts)


def lines_of(text: str) -> list[str]:
    # Lines are "\n"-separated, as tree-sitter, git and editors count them (not str.splitlines,
    # which also breaks on form feeds and other separators that stdlib files contain).
    return text.split("\n")


def by_qualified_name(text: str) -> dict[str, object]:
    return {qualified_name(d): d for d in extract_facts(text, "python").definitions}


@pytest.mark.skipif(not STDLIB.is_dir(), reason="no standard library sources on this machine")
def test_every_stdlib_definition_names_a_line_that_holds_its_name() -> None:
    files = stdlib_files()
    assert len(files) > 500
    checked = 0
    for path in files:
        text = path.read_bytes().decode("utf-8", "replace")
        facts = extract_facts(text, "python")
        lines = lines_of(text)
        for d in facts.definitions:
            assert d.name in lines[d.line - 1], (path, d)
            assert 1 <= d.start_line <= d.line <= d.end_line <= len(lines), (path, d)
            assert d.signature == lines[d.line - 1].strip()[:200], (path, d)
            checked += 1
        for r in facts.references:
            assert r.name in lines[r.line - 1], (path, r)
        for i in facts.imports:
            assert 1 <= i.line <= len(lines), (path, i)
            assert i.name is None or i.name in lines[i.line - 1], (path, i)
    assert checked > 50_000


def test_functions_classes_methods_and_nested_classes_have_containers() -> None:
    text = (
        "class Outer:\n"
        "    class Inner:\n"
        "        def deep(self):\n"
        "            def local():\n"
        "                pass\n"
        "    async def run(self):\n"
        "        pass\n"
        "def top():\n"
        "    pass\n"
    )
    defs = by_qualified_name(text)
    assert set(defs) == {
        "Outer",
        "Outer.Inner",
        "Outer.Inner.deep",
        "Outer.Inner.deep.local",
        "Outer.run",
        "top",
    }
    assert defs["Outer"].kind == "class" and (defs["Outer"].line, defs["Outer"].end_line) == (1, 7)
    assert defs["Outer.Inner.deep"].kind == "method"
    assert defs["Outer.Inner.deep.local"].kind == "function"
    assert defs["Outer.run"].kind == "method" and defs["Outer.run"].line == 6
    assert defs["top"].kind == "function" and defs["top"].container is None


def test_a_decorated_definition_starts_at_its_decorator_and_points_at_its_name() -> None:
    text = "import functools\n\n@functools.cache\n@other(1)\ndef cached(x):\n    return x\n"
    (d,) = [d for d in extract_facts(text, "python").definitions if d.name == "cached"]
    assert (d.start_line, d.line, d.end_line) == (3, 5, 6)
    assert d.signature == "def cached(x):"


def test_module_level_assignments_are_constants_or_variables() -> None:
    text = "MAX_SIZE = 10\nlogger = make()\ntimeout: float = 1.5\nclass C:\n    RED = 1\n    field = 2\ndef f():\n    LOCAL = 3\n"
    defs = by_qualified_name(text)
    assert defs["MAX_SIZE"].kind == "constant"
    assert defs["logger"].kind == "variable"
    assert defs["timeout"].kind == "variable"
    assert defs["C.RED"].kind == "constant"
    assert "C.field" not in defs and "f.LOCAL" not in defs


def test_each_name_a_tuple_or_list_assignment_binds_is_defined() -> None:
    text = (
        "A, b = 1, 2\n"
        "(C, (D, e)) = f()\n"
        "[F,\n *G] = g\n"
        "obj.attr, H = 1, 2\n"
        "class K:\n    P, q = 1, 2\n"
        "if T:\n    R, s = 1, 2\n"
        "def run():\n    x, y = 1, 2\n"
        "for i, j in pairs:\n    pass\n"
    )
    defs = [(qualified_name(d), d.kind, d.line) for d in extract_facts(text, "python").definitions]
    assert defs == [
        ("A", "constant", 1), ("b", "variable", 1), ("C", "constant", 2), ("D", "constant", 2),
        ("e", "variable", 2), ("F", "constant", 3), ("G", "constant", 4), ("H", "constant", 5),
        ("K", "class", 6), ("K.P", "constant", 7), ("R", "constant", 9), ("s", "variable", 9),
        ("run", "function", 10),
    ]  # fmt: skip


def test_assignments_under_if_try_and_with_blocks_count_at_the_level_the_blocks_sit() -> None:
    text = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    Alias = dict[str, int]\n"
        "else:\n"
        "    Alias = dict\n"
        "try:\n"
        "    import ujson as json\n"
        "    HAS_UJSON = True\n"
        "except ImportError:\n"
        "    if sys.version_info >= (3, 11):\n"
        "        fallback = None\n"
        "    elif PYPY:\n"
        "        fallback = 1\n"
        "finally:\n"
        "    CLEANED = True\n"
        "with open('x') as f:\n"
        "    DATA = f.read()\n"
        "class Settings:\n"
        "    if sys.platform == 'win32':\n"
        "        SEPARATOR = ';'\n"
        "        local_ish = 1\n"
        "def run():\n"
        "    if ready:\n"
        "        LOCAL = 1\n"
        "    try:\n"
        "        result = go()\n"
        "    except Error:\n"
        "        result = None\n"
        "for item in items:\n"
        "    LOOPED = item\n"
    )
    defs = [(qualified_name(d), d.kind, d.line) for d in extract_facts(text, "python").definitions]
    assert defs == [
        ("Alias", "variable", 3),
        ("Alias", "variable", 5),
        ("HAS_UJSON", "constant", 8),
        ("fallback", "variable", 11),
        ("fallback", "variable", 13),
        ("CLEANED", "constant", 15),
        ("DATA", "constant", 17),
        ("Settings", "class", 18),
        ("Settings.SEPARATOR", "constant", 20),
        ("run", "function", 22),
    ]


def test_imports_name_modules_and_imported_names() -> None:
    text = "import os.path\nimport json as j\nfrom . import util\nfrom ..pkg.mod import (\n    a,\n    b as c,\n)\nfrom x import *\n"
    imports = [(i.module, i.name, i.line) for i in extract_facts(text, "python").imports]
    assert imports == [
        ("os.path", None, 1),
        ("json", None, 2),
        (".", "util", 3),
        ("..pkg.mod", "a", 5),  # a statement over several lines cites the line holding the name
        ("..pkg.mod", "b", 6),
        ("x", None, 8),
    ]


def test_names_after_non_ascii_text_decode_whole() -> None:
    text = 'GREETING = "héllo wörld ✓ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢"; x = 1\ndef ünïcode_fn(): return café()\nclass Ωmega: pass\n'
    facts = extract_facts(text, "python")
    names = {d.name for d in facts.definitions}
    assert {"GREETING", "ünïcode_fn", "Ωmega"} <= names
    assert [r.name for r in facts.references if r.is_call] == ["café"]


def test_a_tree_from_the_caller_gives_the_same_facts() -> None:
    from ragraf.facts.extract import parser_for

    text = Path(__file__).read_text(encoding="utf-8")
    tree = parser_for("python").parse(text.encode("utf-8", "surrogatepass"))
    assert extract_facts(text, "python", tree=tree) == extract_facts(text, "python")
