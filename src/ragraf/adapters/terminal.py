"""Colour for a person at a terminal: the CLI's text with its warnings, citations and states marked,
and search snippets, read and def --body lines highlighted and line-numbered. Only on a TTY (or
when asked: --color always, FORCE_COLOR); never with NO_COLOR, TERM=dumb or --color never. The
words are the same as without colour: escape codes are only added around them."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import IO, TYPE_CHECKING, Any

from ragraf.api.render import printable
from ragraf.languages import language_of

if TYPE_CHECKING:
    from ragraf.api import Envelope

CHOICES = ("auto", "always", "never")

RESET, BOLD, DIM = "\x1b[0m", "\x1b[1m", "\x1b[2m"
RED, GREEN, YELLOW, BLUE, CYAN = "\x1b[31m", "\x1b[32m", "\x1b[33m", "\x1b[34m", "\x1b[36m"
MARK, UNMARK = "\x1b[1;4m", "\x1b[22;24m"  # a query's term: bold underlined, keeping its colour
_ANSI = re.compile(r"(\x1b\[[0-9;]*m)")
_STATE = {"fresh": GREEN, "drifted": YELLOW, "refused": RED}
_HEADER = re.compile(r"^\[(\w+) @ (.*) · state (\w+)\]$")
# path:12 or path:12-40, a path with a folder or an extension, not inside a longer word.
_CITE = re.compile(
    r"(?<![\w/.\-])((?:[\w.\-]+/)*[\w\-][\w.\-]*\.[A-Za-z0-9]+|(?:[\w.\-]+/)+[\w.\-]+):(\d+)(?:-(\d+))?"
)
_NUMBERED = re.compile(r"^( *)(\d+)  (.*)$")  # read's and def --body's lines: `12  text`
_TERM = re.compile(r"[A-Za-z_][A-Za-z0-9_]+")


def colour_wanted(stream: IO[Any], choice: str = "auto", environ: Mapping[str, str] | None = None) -> bool:
    """Whether text for `stream` gets colour: --color always/never, else NO_COLOR (any value) says
    no, FORCE_COLOR (not 0) says yes, TERM=dumb says no, and otherwise only a terminal gets it."""
    env = os.environ if environ is None else environ
    if choice == "always":
        return True
    if choice == "never" or env.get("NO_COLOR"):
        return False
    if env.get("FORCE_COLOR", "") not in ("", "0"):
        return True
    if env.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _lexer(language: str | None) -> Any:
    if not language or language in ("text", "unknown"):
        return None
    try:
        from pygments.lexers import get_lexer_by_name
        from pygments.util import ClassNotFound
    except ImportError:  # pragma: no cover - pygments comes with rich
        return None
    try:
        return get_lexer_by_name(language, stripnl=False, stripall=False, ensurenl=False)
    except ClassNotFound:
        return None


def highlight(lines: list[str], language: str | None) -> list[str]:
    """Lines of code in a language's colours (pygments), one output line per input line."""
    lexer = _lexer(language)
    if lexer is None or not lines:
        return lines
    from pygments import highlight as pyg_highlight
    from pygments.formatters import TerminalFormatter

    out = pyg_highlight("\n".join(lines), lexer, TerminalFormatter()).split("\n")
    return out[: len(lines)] if len(out) >= len(lines) else lines


def mark_terms(line: str, terms: list[str]) -> str:
    """The query's terms in a line marked, outside the escape codes already there."""
    if not terms:
        return line
    # At word and identifier-part boundaries, as the index splits them: retry in retry_with_backoff.
    words = "|".join(re.escape(t) for t in terms)
    pattern = re.compile(rf"(?<![A-Za-z0-9])((?i:{words}))(?![a-z0-9])")
    parts = _ANSI.split(line)
    return "".join(p if _ANSI.fullmatch(p) else pattern.sub(rf"{MARK}\1{UNMARK}", p) for p in parts)


def _line(line: str) -> str:
    """A line that is not code: its lead word, its citations, its STALE marks."""
    if m := _HEADER.match(line):
        state = m.group(3)
        return f"{DIM}[{m.group(1)} @ {m.group(2)} · state {RESET}{_STATE.get(state, '')}{state}{RESET}{DIM}]{RESET}"
    for lead, colour in (("ERROR", RED + BOLD), ("WARNING:", YELLOW + BOLD), ("NOTE:", CYAN), ("→", GREEN)):
        if line.startswith(lead):
            cut = line.index("]:") + 2 if lead == "ERROR" and "]:" in line else len(lead)
            return f"{colour}{line[:cut]}{RESET}{_cites(line[cut:])}"
    if line.startswith("…"):
        return f"{DIM}{line}{RESET}"
    return _cites(line)


def _cites(text: str) -> str:
    text = _CITE.sub(
        lambda m: (
            f"{BOLD}{BLUE}{m.group(1)}{RESET}:{CYAN}{m.group(2)}{RESET}"
            + (f"-{CYAN}{m.group(3)}{RESET}" if m.group(3) else "")
        ),
        text,
    )
    return text.replace("STALE", f"{RED}{BOLD}STALE{RESET}").replace(
        "[differs from the index]", f"{YELLOW}[differs from the index]{RESET}"
    )


def paint(text: str, env: Envelope | None = None, query: str = "") -> str:
    """The CLI's text for `env` with colour: search snippets highlighted in their language, with
    line numbers and the query's terms marked; read and def --body lines highlighted; every other
    line by what it is (ERROR red, WARNING yellow, NOTE cyan, path:line blue, STALE red)."""
    terms = sorted({t for t in _TERM.findall(query) if len(t) > 1}, key=len, reverse=True)
    heads: dict[str, tuple[str, int, list[str]]] = {}
    if env is not None and env.op == "search":
        for r in env.results:
            heads[f"{printable(r.path)}:{r.start_line}-{r.end_line}"] = (
                r.language,
                r.start_line,
                r.snippet.split("\n"),
            )
    lines, out, i = text.split("\n"), [], 0
    language: str | None = None
    while i < len(lines):
        line = lines[i]
        head = next((h for h in heads if line.startswith(h) and line[len(h) : len(h) + 1] in ("", " ")), None)
        if head is not None:  # a search result: its head, then as much of its snippet as is shown
            lang, start, snippet = heads[head]
            out.append(_line(line))
            j = i + 1
            while j < len(lines) and j - i - 1 < len(snippet) and lines[j] == snippet[j - i - 1]:
                j += 1
            body = highlight(lines[i + 1 : j], lang)
            width = len(str(start + max(len(body) - 1, 0)))
            out += [f"{DIM}{n:>{width}} │{RESET} {mark_terms(b, terms)}" for n, b in enumerate(body, start)]
            i = j
            continue
        if env is not None and env.op in ("read", "def") and _NUMBERED.match(line):
            run = []  # read's and def --body's numbered lines, highlighted together
            while i < len(lines) and (m := _NUMBERED.match(lines[i])):
                run.append(m)
                i += 1
            code = highlight([m.group(3) for m in run], language)
            out += [f"{m.group(1)}{DIM}{m.group(2)}{RESET}  {c}" for m, c in zip(run, code, strict=True)]
            continue
        cited = _CITE.search(line)
        if cited:
            language = language_of(cited.group(1))
        out.append(_line(line))
        i += 1
    return "\n".join(out)


def paint_error(message: str) -> str:
    """`ragraf op: what happened` and its `→ what to do` line, for stderr on a terminal."""
    head, _, rest = message.partition("\n")
    name, sep, what = head.partition(": ")
    lines = [f"{RED}{BOLD}{name}{sep}{RESET}{what}" if sep else head]
    lines += [
        f"  {GREEN}→{RESET}{x.strip()[1:]}" if x.strip().startswith("→") else x
        for x in rest.split("\n")
        if rest
    ]
    return "\n".join(lines)
