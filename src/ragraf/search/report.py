"""A pasted issue report read as one: its names, paths, traceback frames, exceptions, messages,
code and prose, each to be sent through the channel that fits it (search/localize.py)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from ragraf.tokens import STOPWORDS, split_identifier

# What is parsed of a report: enough for the longest real ones (tracebacks of a few hundred
# frames), bounded so a megabyte of pasted log costs milliseconds, not seconds.
MAX_PARSED_CHARS = 100_000

_FENCE = re.compile(r"```[^\n]*\n(.*?)(?:```|\Z)", re.S)
_INDENTED = re.compile(r"(?m)^(?: {4}|\t)\S.*$")
_PY_FRAME = re.compile(r'File "([^"\n]+)", line (\d+)(?:, in ([\w<>.]+))?')
# pytest's and compilers' `path/to/file.py:123: in name` / `file.go:12:5`; node's `at f (file.js:3:9)`
_COLON_FRAME = re.compile(
    r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.[A-Za-z]\w{0,5}):(\d+)(?::\d+)?(?::? in ([\w<>.]+))?"
)
_PATH = re.compile(
    r"(?<![\w.-])((?:~?/)?(?:[\w.-]+/)+[\w.-]+\.[A-Za-z]\w{0,5}|[\w-]+\.(?:py|pyi|js|jsx|ts|tsx|go|rs|java|kt|rb|php|c|cc|cpp|h|hpp|cs|swift|scala|ex|exs|lua|sh|toml|cfg|ini|yaml|yml|json|rst|md|txt))(?![\w/])"
)
_DOTTED = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?![\w(]*\.\w)")
_IDENT = re.compile(r"(?<!\w)[A-Za-z_]\w*")
_CALLED = re.compile(r"(?<!\w)([A-Za-z_]\w*)\(")
_EXCEPTION = re.compile(
    r"(?m)^\s*(?:[\w.]+\.)?([A-Z]\w*(?:Error|Exception|Warning|Exit|Interrupt|Failure|Fault))\b:?[ \t]*(.*)$"
)
_QUOTED = re.compile(r"`([^`\n]{2,200})`|\"([^\"\n]{3,200})\"|'([^'\n]{3,200})'")
_FLAG = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*(?:=\S+)?)")
_VERSION = re.compile(r"(?<![\w.])v?(\d+\.\d+(?:\.\d+)*(?:[-.]?(?:dev|rc|a|b|post)\d*)?)(?!\w|\.\w)")
_URL = re.compile(r"\bhttps?://\S+")
# A line of a pasted environment listing (`numpy: 1.19.2`, `attrs==19.3.0`, `python: 3.8.3 (default, …)`):
# it names the user's packages, not the code to change, and pulls version-printing files up.
_VERSION_LINE = re.compile(
    r"(?m)^[ \t]*[-*]?[ \t]*[\w.\-]+[ \t]*(?::|==|>=|=)[ \t]*v?\d+(?:\.\d+)+[^\n]*$\n?"
)
_NOT_TEXT = re.compile("[\ufffd\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_EXTENSIONS_NOT_NAMES = frozenset({"py", "js", "ts", "txt", "md", "rst", "json", "html", "org", "com", "io"})


@dataclass(frozen=True)
class Frame:
    """One traceback frame as the report gives it: the path as written, its line, its function."""

    path: str
    line: int
    function: str | None


@dataclass(frozen=True)
class Report:
    """The parts of a pasted report, each in the order first seen."""

    text: str
    names: tuple[str, ...]  # code names: CamelCase, snake_case, dotted, `Class.method`, most named first
    paths: tuple[str, ...]  # file paths as written (src/flask/app.py, conf.py)
    modules: tuple[str, ...]  # dotted names that may be modules (sphinx.ext.autodoc)
    frames: tuple[Frame, ...]  # traceback frames, outermost first
    exceptions: tuple[tuple[str, str], ...]  # (type, message)
    strings: tuple[str, ...]  # quoted strings and exception messages: text a line of code may hold
    flags: tuple[str, ...]  # CLI flags and config keys (--verbose, -k)
    versions: tuple[str, ...]
    code: str  # fenced and indented code blocks
    prose: str  # the text without code blocks, tracebacks and URLs

    @property
    def is_empty(self) -> bool:
        return not self.text.strip()

    @property
    def binary_share(self) -> float:
        """The share of the report's first characters that are no text (undecodable bytes, control
        characters): pasted binary data rather than a report."""
        head = self.text[:MAX_PARSED_CHARS]
        if not head:
            return 0.0
        return len(_NOT_TEXT.findall(head)) / len(head)

    @property
    def search_text(self) -> str:
        """The report as words to search for, without its environment listings; a long one's prose
        (its code and traces go through the names, paths and frames)."""
        text = _VERSION_LINE.sub("", self.text)
        return text if len(text) < 4000 else self.prose[:4000] or text[:4000]

    @property
    def title(self) -> str:
        """The report's first line of prose (its title, as an issue is filed), when it has a few words."""
        for line in self.prose.split("\n"):
            line = line.strip().lstrip("#").strip()
            if len(line.split()) >= 2:
                return line[:300]
            if line:
                return ""
        return ""

    @property
    def meaning_text(self) -> str:
        """What the embedder reads of the report: its prose (a traceback or code block says little
        about meaning, and costs a query's embedding three times as long)."""
        return self.prose.strip()[:4000] or self.text[:4000]


def looks_like_report(text: str) -> bool:
    """A pasted report rather than a question: several lines, or long, or holding a traceback."""
    return text.count("\n") >= 2 or len(text) > 300 or "Traceback" in text


def parse_report(text: str) -> Report:
    """Split a report into its parts; bounded work whatever its size, never an error."""
    text = text.replace("\r\n", "\n").replace("\x00", " ")
    parsed = text[:MAX_PARSED_CHARS]
    code_blocks = [m.group(1) for m in _FENCE.finditer(parsed)]
    without_fences = _FENCE.sub("\n", parsed)
    indented = [m.group(0) for m in _INDENTED.finditer(without_fences)]
    code = "\n".join(code_blocks + indented)

    frames = _frames(parsed)
    frame_lines = {f.path for f in frames}
    paths = _distinct(
        m.group(1).removeprefix("./")
        for m in _PATH.finditer(_URL.sub(" ", parsed))
        if not _is_url_part(m.group(1))
    )
    paths = tuple(dict.fromkeys([*paths, *(p for p in (_relative(f) for f in frame_lines) if p)]))

    exceptions = _distinct_pairs((m.group(1), m.group(2).strip()[:300]) for m in _EXCEPTION.finditer(parsed))
    strings = _distinct(
        s.strip()
        for m in _QUOTED.finditer(parsed)
        for s in (m.group(1) or m.group(2) or m.group(3),)
        if s and len(s.strip()) >= 3 and not s.strip().startswith(("http://", "https://"))
    )
    strings = tuple(dict.fromkeys([*strings, *(msg for _, msg in exceptions if len(msg) >= 8)]))

    dotted = [d for d in _DOTTED.findall(_URL.sub(" ", parsed)) if not _is_path_or_version(d)]
    modules = _distinct(
        d for d in dotted if d.count(".") >= 1 and d.split(".")[-1] not in _EXTENSIONS_NOT_NAMES
    )
    names = _names(parsed, dotted)

    prose = _URL.sub(" ", _FENCE.sub("\n", _VERSION_LINE.sub("", parsed)))
    prose = "\n".join(
        line for line in prose.split("\n") if not _INDENTED.match(line) and not _PY_FRAME.search(line)
    )
    return Report(
        text=text,
        names=names,
        paths=paths,
        modules=modules,
        frames=frames,
        exceptions=exceptions,
        strings=strings[:30],
        flags=_distinct(m.group(1).split("=")[0] for m in _FLAG.finditer(parsed) if len(m.group(1)) > 2)[:20],
        versions=_distinct(_VERSION.findall(parsed))[:20],
        code=code,
        prose=prose,
    )


def _frames(text: str) -> tuple[Frame, ...]:
    found = [Frame(m.group(1), int(m.group(2)), m.group(3)) for m in _PY_FRAME.finditer(text)]
    if not found:
        found = [
            Frame(m.group(1), int(m.group(2)), m.group(3))
            for m in _COLON_FRAME.finditer(_URL.sub(" ", text))
            if not _is_version_like(m.group(1))
        ]
    return tuple(found[:500])


def _names(text: str, dotted: list[str]) -> tuple[str, ...]:
    """Identifiers that look like code (compound, capitalised inside prose, or dotted parts),
    most mentioned first."""
    counts: Counter[str] = Counter()
    text = _URL.sub(" ", text)
    called = set(_CALLED.findall(text))
    for word in _IDENT.findall(text):
        if word.lower() in STOPWORDS or len(word) < 3:
            continue
        # Compound names, capitalised words (classes; a sentence's first word rarely names a
        # definition, and those that do not are dropped when nothing defines them) and called ones.
        if len(split_identifier(word)) > 1 or "_" in word.strip("_") or word[0].isupper() or word in called:
            counts[word] += 1
    for d in dotted:
        parts = d.split(".")
        counts[d] += 1
        for part in parts[1:]:  # the module's name is a path, its attributes are names
            if len(part) >= 3 and part.lower() not in STOPWORDS:
                counts[part] += 1
    order = {w: i for i, w in enumerate(dict.fromkeys(counts))}
    return tuple(sorted(counts, key=lambda w: (-counts[w], order[w])))[:60]


def _relative(path: str) -> str | None:
    """A frame's path as a relative one: site-packages and absolute prefixes stripped later, against
    the index's paths; here only the obvious noise goes."""
    path = path.replace("\\", "/")
    return path if "<" not in path else None


def _is_url_part(path: str) -> bool:
    return path.startswith(("www.", "github.com/", "pypi.org/"))


def _is_path_or_version(dotted: str) -> bool:
    last = dotted.rsplit(".", 1)[-1]
    return last in {"py", "pyi", "js", "ts", "rst", "md", "txt", "cfg", "toml", "ini", "json", "yml", "yaml"}


def _is_version_like(path: str) -> bool:
    return bool(re.fullmatch(r"v?\d+(\.\d+)+", path))


def _distinct(items: object) -> tuple[str, ...]:
    return tuple(dict.fromkeys(i for i in items if i))  # type: ignore[attr-defined]


def _distinct_pairs(items: object) -> tuple[tuple[str, str], ...]:
    return tuple(dict.fromkeys(items))  # type: ignore[call-overload]
