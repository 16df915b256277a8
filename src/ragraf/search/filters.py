"""Which paths an answer may cite: globs (`!` excludes), a kind (code|test|doc|config), languages.

One predicate for search, definitions, references and localize: `ResultFilter.keep(path)`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from ragraf.errors import UsageError
from ragraf.languages import CONFIG_LANGUAGES, DOC_LANGUAGES, EXTENSIONS, FILENAMES, kind_of, language_of

KINDS = ("code", "test", "doc", "config")
# What people type for a language, beside the names ragraf gives them (python, typescript, …).
LANGUAGE_ALIASES = {
    "py": "python", "js": "javascript", "jsx": "javascript", "ts": "typescript", "rs": "rust",
    "md": "markdown", "c++": "cpp", "cxx": "cpp", "cc": "cpp", "cs": "csharp", "c#": "csharp",
    "rb": "ruby", "sh": "bash", "shell": "bash", "kt": "kotlin", "yml": "yaml", "golang": "go",
    "ex": "elixir", "hs": "haskell",
}  # fmt: skip
KNOWN_LANGUAGES = frozenset({*EXTENSIONS.values(), *FILENAMES.values(), *DOC_LANGUAGES, *CONFIG_LANGUAGES})


@functools.lru_cache(maxsize=1024)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """A glob as ripgrep's -g reads it: without a `/` it matches a name at any depth (a file, or a
    folder and all below it); with one it is anchored at the root; `**` crosses folders, `*` and `?`
    do not; `{a,b}` is either."""
    pat = pattern.strip().removeprefix("./")
    anchored = "/" in pat.rstrip("/")
    pat = pat.strip("/")
    out, i = [], 0
    while i < len(pat):
        c = pat[i]
        if pat.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pat.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = pat.find("]", i + 1)
            if end < 0:
                out.append(re.escape(c))
            else:
                body = pat[i + 1 : end].replace("\\", "\\\\")
                out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
                i = end
        elif c == "{":
            end = pat.find("}", i + 1)
            if end < 0:
                out.append(re.escape(c))
            else:
                out.append("(?:" + "|".join(re.escape(a) for a in pat[i + 1 : end].split(",")) + ")")
                i = end
        else:
            out.append(re.escape(c))
        i += 1
    body = "".join(out)
    return re.compile(("^" if anchored else "^(?:.*/)?") + body + "(?:/.*)?$")


def _language(name: str) -> str:
    word = name.strip().lower().removeprefix(".")
    word = LANGUAGE_ALIASES.get(word, EXTENSIONS.get("." + word, word))
    if word not in KNOWN_LANGUAGES:
        raise UsageError(
            f"unknown language {name!r}",
            suggest="use one of: " + ", ".join(sorted(KNOWN_LANGUAGES)) + " (or py, ts, js, rs, md, …)",
        )
    return word


@dataclass(frozen=True)
class ResultFilter:
    """Paths kept by globs (any of `include`, none of `exclude`), kinds and languages."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    kinds: frozenset[str] = frozenset()
    languages: frozenset[str] = frozenset()

    def keep(self, path: str) -> bool:
        """Whether a result or fact at `path` may be shown."""
        return _keep(self, path)

    def describe(self) -> str:
        """The filter in words, for a note: `path src/** !*_test.go, kind code, language go`."""
        parts = []
        if self.include or self.exclude:
            parts.append("path " + " ".join([*self.include, *("!" + e for e in self.exclude)]))
        if self.kinds:
            parts.append("kind " + "|".join(sorted(self.kinds)))
        if self.languages:
            parts.append("language " + "|".join(sorted(self.languages)))
        return ", ".join(parts)


@functools.lru_cache(maxsize=65_536)
def _keep(f: ResultFilter, path: str) -> bool:
    if f.include and not any(glob_regex(g).match(path) for g in f.include):
        return False
    if any(glob_regex(g).match(path) for g in f.exclude):
        return False
    language = language_of(path)
    if f.languages and language not in f.languages:
        return False
    return not f.kinds or kind_of(path, language) in f.kinds


def _listed(value: str | Iterable[str] | None) -> list[str]:
    if value is None:
        return []
    items = [value] if isinstance(value, str) else list(value)
    return [p for item in items for p in item.split(",") if p.strip()] if items else []


def build_filter(
    path: str | Iterable[str] | None = None,
    kind: str | Iterable[str] | None = None,
    language: str | Iterable[str] | None = None,
) -> ResultFilter | None:
    """The filter for these arguments, or None when they ask for nothing (every path kept).
    Globs starting with `!` exclude; kinds and languages may be given as `a,b` or repeated."""
    globs = [g.strip() for g in ([path] if isinstance(path, str) else list(path or [])) if g and g.strip()]
    include = tuple(g for g in globs if not g.startswith("!"))
    exclude = tuple(g[1:].strip() for g in globs if g.startswith("!") and g[1:].strip())
    kinds = frozenset(k.strip().lower() for k in _listed(kind))
    unknown = sorted(kinds - set(KINDS))
    if unknown:
        raise UsageError(f"unknown kind {unknown[0]!r}", suggest="use code, test, doc or config")
    languages = frozenset(_language(name) for name in _listed(language))
    if not (include or exclude or kinds or languages):
        return None
    return ResultFilter(include, exclude, kinds, languages)
