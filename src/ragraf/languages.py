"""Which language a path is written in, and what kind of file it is (code, test, doc, config)."""

from __future__ import annotations

import functools
import re

# Extension -> tree-sitter-language-pack name. Markdown is handled by the heading chunker.
EXTENSIONS: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".hxx": "cpp",
    ".cs": "csharp",
    ".rb": "ruby",
    ".php": "php",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".scala": "scala",
    ".sc": "scala",
    ".swift": "swift",
    ".sh": "bash",
    ".bash": "bash",
    ".zsh": "bash",
    ".lua": "lua",
    ".ex": "elixir",
    ".exs": "elixir",
    ".hs": "haskell",
    ".zig": "zig",
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdx": "markdown",
    ".rst": "rst",
    ".txt": "text",
    ".adoc": "text",
    ".json": "json",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "toml",
    ".ini": "ini",
    ".cfg": "ini",
    ".xml": "xml",
    ".html": "html",
    ".css": "css",
    ".scss": "css",
    ".sql": "sql",
    ".proto": "proto",
    ".graphql": "graphql",
    ".vue": "vue",
    ".svelte": "svelte",
}
FILENAMES: dict[str, str] = {
    "Dockerfile": "dockerfile",
    "Makefile": "make",
    "CMakeLists.txt": "cmake",
    "Gemfile": "ruby",
    "Rakefile": "ruby",
}

# Languages whose syntax tree ragraf chunks and extracts facts from.
TREE_SITTER_LANGUAGES = frozenset(
    {
        "python",
        "javascript",
        "typescript",
        "tsx",
        "go",
        "rust",
        "java",
        "c",
        "cpp",
        "csharp",
        "ruby",
        "php",
        "kotlin",
        "scala",
        "swift",
        "bash",
        "lua",
        "elixir",
        "haskell",
        "zig",
    }
)
DOC_LANGUAGES = frozenset({"markdown", "rst", "text"})
CONFIG_LANGUAGES = frozenset({"json", "yaml", "toml", "ini", "xml"})

_TEST_DIRS = frozenset(
    {
        "test",
        "tests",
        "testing",
        "spec",
        "specs",
        "__tests__",
        "__mocks__",
        "fixtures",
        "__fixtures__",
        "testdata",
        "test_data",
        "mocks",
        "e2e",
    }
)
_TEST_FILE = re.compile(
    r"(^test_.+|.+_test\.[^.]+$|.+_tests\.[^.]+$|.+\.(test|spec)\.[^.]+$|^conftest\.py$"
    r"|.+Tests?\.(java|kt|cs|swift|scala)$)"
)


# Folders of code that shows how to use the project rather than being it. A leading `_` or `.` is
# not part of the name: Go keeps its examples in `_examples/` so that the go tool skips them.
_EXAMPLE_DIRS = frozenset({"example", "examples", "demo", "demos", "sample", "samples"})


def language_of(path: str) -> str:
    """The language of a path, by file name then extension ('text' when unknown)."""
    name = path.rsplit("/", 1)[-1]
    if name in FILENAMES:
        return FILENAMES[name]
    dot = name.rfind(".")
    # A leading dot is a hidden file's name, not an extension (as pathlib reads it).
    return EXTENSIONS.get(name[dot:].lower(), "text") if dot > 0 else "text"


@functools.lru_cache(maxsize=65_536)
def is_test_path(path: str) -> bool:
    """True when a path segment marks it as a test, fixture or mock (segment-exact)."""
    parts = _parts(path)
    if any(part.lower() in _TEST_DIRS for part in parts[:-1]):
        return True
    return bool(parts) and bool(_TEST_FILE.match(parts[-1]))


@functools.lru_cache(maxsize=65_536)
def is_example_path(path: str) -> bool:
    """True when a folder of the path holds examples, demos or samples (segment-exact)."""
    return any(part.lstrip("_.").lower() in _EXAMPLE_DIRS for part in _parts(path)[:-1])


# Folders of third-party code a project carries inside itself (requests' `packages/urllib3`, pip's
# `_vendor/`): a fix rarely lands there. `packages/` counts only below a package's own folder,
# since a monorepo's top-level `packages/` holds its own code.
_VENDOR_DIRS = frozenset(
    {"vendor", "vendored", "_vendor", "third_party", "thirdparty", "third-party", "extern"}
)


# A library copied in as released: its version or `.min` in the file name (`jquery-3.5.1.js`).
_RELEASED_COPY = re.compile(r"(?:[-_.]v?\d+(?:\.\d+)+(?:\.min)?|\.min)\.(?:js|mjs|css)$", re.IGNORECASE)


@functools.lru_cache(maxsize=65_536)
def is_vendored_path(path: str) -> bool:
    """True when a folder of the path holds third-party code the project carries (segment-exact),
    or the file is a released copy of a library (`static/jquery-3.5.1.js`, `bootstrap.min.css`)."""
    parts = _parts(path)
    folders = [part.lower() for part in parts[:-1]]
    if any(part in _VENDOR_DIRS for part in folders) or "packages" in folders[1:]:
        return True
    return bool(parts) and _RELEASED_COPY.search(parts[-1]) is not None


_WINDOWS_WORDS = frozenset({"win", "win32", "win64", "windows"})


@functools.lru_cache(maxsize=65_536)
def is_windows_path(path: str) -> bool:
    """True for code written for Windows alone: a `win/`, `win32/` or `windows/` folder, or a file
    named so (`windows.rs`, Go's `file_windows.go`, `util_win32.c`)."""
    parts = _parts(path.lower())
    if any(part in _WINDOWS_WORDS for part in parts[:-1]):
        return True
    name = parts[-1].split(".", 1)[0] if parts else ""
    return any(word in _WINDOWS_WORDS - {"win"} for word in re.split(r"[_\-]", name))


def _parts(path: str) -> list[str]:
    """A relative path's segments, as PurePosixPath reads them, at a tenth of the cost (every search
    asks for each candidate's)."""
    return [part for part in path.split("/") if part and part != "."]


def kind_of(path: str, language: str | None = None) -> str:
    """code | test | doc | config."""
    language = language or language_of(path)
    if is_test_path(path):
        return "test"
    if language in DOC_LANGUAGES:
        return "doc"
    if language in CONFIG_LANGUAGES:
        return "config"
    return "code"
