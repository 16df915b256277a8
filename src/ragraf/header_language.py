"""Whether a `.h` header is C or C++: read as C, a C++ header's templates and classes come out as
garbage (fmt's `core.h`, abseil), so a header that says C++ is parsed as C++.

What counts is what only C++ says, at the start of a line, in code a C compiler reads: comments,
`#if 0` blocks and what a dual header keeps for C++ compilers (`#ifdef __cplusplus`, glibc's
math.h) are left out, and their `#else` branches kept.
"""

from __future__ import annotations

import re

_SCAN = 200_000  # characters of a header read: C++ shows long before that

_CPP = re.compile(
    r"^[ \t]*("
    r"template[ \t]*<"
    r"|namespace([ \t]+[\w:]+)?[ \t]*(\{|$)"
    r"|(class|struct)[ \t]+\w+[^;(]*:[ \t]*(public|private|protected)\b"
    r"|class[ \t]+\w+([ \t]+final)?[ \t]*(\{|$)"
    r"|enum[ \t]+(class|struct)\b"
    r"|(public|private|protected)[ \t]*:(?!:)"
    r"|using[ \t]+namespace\b"
    r"|#[ \t]*include[ \t]*<[a-z_]+>"  # a standard C++ header: C's all end in .h
    r")",
    re.MULTILINE,
)
_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.DOTALL)
_DIRECTIVE = re.compile(r"[ \t]*#[ \t]*(\w+)(.*)")
_NOT = re.compile(r"!\s*(defined\s*\(?\s*__cplusplus\b|__cplusplus\b)")


def content_language(language: str, path: str, text: str) -> str:
    """The language to parse a file as: a `.h` header written in C++ is C++."""
    if language != "c" or not path.lower().endswith(".h"):
        return language
    return "cpp" if _CPP.search(c_reads(text[:_SCAN])) else language


def c_reads(text: str) -> str:
    """The lines of a header a C compiler reads, without comments, `#if 0` blocks and the branches
    kept for C++ compilers; directives other than `#include` left out."""
    text = _COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text).replace("\\\n", " ")
    kept: list[str] = []
    # Per open #if: whether its branch is left out, and whether the condition decides that (`0`,
    # `__cplusplus`: its #else is then read), or, another condition, both branches are C.
    frames: list[tuple[bool, bool]] = []
    for line in text.split("\n"):
        directive = _DIRECTIVE.match(line)
        reading = not any(out for out, _ in frames)
        if directive is None:
            if reading:
                kept.append(line)
            continue
        word, condition = directive.group(1), directive.group(2)
        if word in ("if", "ifdef", "ifndef"):
            frames.append(_branch(word, condition))
        elif word == "elif" and frames:
            frames[-1] = _branch("if", condition)
        elif word == "else" and frames:
            out, decisive = frames[-1]
            frames[-1] = (decisive and not out, decisive)
        elif word == "endif" and frames:
            frames.pop()
        elif word == "include" and reading:
            kept.append(line)
    return "\n".join(kept)


def _branch(word: str, condition: str) -> tuple[bool, bool]:
    """(whether C leaves out the branch a condition opens, whether the condition decides it):
    `#if 0`, or one testing for C++, decides; any other condition is C's either way."""
    condition = condition.strip()
    if word == "if" and condition == "0":
        return True, True
    if "__cplusplus" not in condition:
        return False, False
    return (word != "ifndef" and not _NOT.search(condition)), True
