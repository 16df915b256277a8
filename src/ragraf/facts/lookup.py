"""Fact lookups over a revision: definitions by name (exact, case-insensitive, `$` variant, qualified), ranked.

Ranking is one sort key made of separate rules, strongest first, so each can be read and measured
alone: where the file sits (source before type stubs, examples and tests), whether a newer version
folder supersedes it, the kind of definition, whether the file is named after it, then depth.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import PurePosixPath

from ragraf.languages import is_test_path
from ragraf.store import FactHit, Store

_KIND_RANK = {
    "class": 0, "interface": 0, "struct": 0, "trait": 0, "enum": 0, "type": 1, "function": 1, "method": 1,
    "module": 2, "constant": 3, "variable": 4, "heading": 5,
}  # fmt: skip
_QUALIFIER = re.compile(r"(::|\.|#|->)")
# Folders of code that illustrates, measures, or is kept only for compatibility or from elsewhere.
_ASIDE_DIRS = frozenset({
    "example", "examples", "docs", "doc", "docs_src", "demo", "demos", "sample", "samples",
    "bench", "benches", "benchmark", "benchmarks", "deprecated", "legacy", "vendor", "vendored",
    "third_party", "node_modules",
})  # fmt: skip
_STUB_SUFFIXES = (".d.ts", ".d.mts", ".d.cts", ".pyi")
_VERSION_DIR = re.compile(r"v(\d+)\Z", re.IGNORECASE)
# A package's entry file stands for its folder (`errors/index.ts`, `auth/__init__.py`, `net/mod.rs`).
ENTRY_STEMS = frozenset({"index", "__init__", "mod"})
_RUST_ROOTS = frozenset({"crate", "self", "super"})
_IMPORT_SITES = 20_000  # import facts read for a name defined outside the index, before one per file
_MODULE_SEP = re.compile(r"::|[./\\]")
_NAME_NOISE = re.compile(r"[_\-.$]")
# JavaScript code marks some names with a leading `$` (zod's `$ZodType`, Svelte's `$state`).
_SIGIL = "$"


def path_role(path: str) -> int:
    """0 source, 1 type stub, 2 example/doc/benchmark/legacy/vendored, 3 test."""
    if is_test_path(path):
        return 3
    if any(part.lower() in _ASIDE_DIRS for part in path.split("/")[:-1]):
        return 2
    return 1 if path.lower().endswith(_STUB_SUFFIXES) else 0


def superseded_paths(paths: set[str]) -> set[str]:
    """Paths under a version folder (`v3/`) whose parent also holds a newer one (`v4/`) among `paths`.

    Repositories that keep several major versions side by side (zod's src/v3 and src/v4, an
    api/v1 beside api/v2) mean the newest when a name is asked for without a version.
    """
    newest: dict[str, int] = {}
    versioned: list[tuple[str, str, int]] = []
    for path in paths:
        parts = path.split("/")[:-1]
        for i, part in enumerate(parts):
            match = _VERSION_DIR.match(part)
            if match:
                parent, version = "/".join(parts[:i]), int(match.group(1))
                versioned.append((path, parent, version))
                newest[parent] = max(newest.get(parent, version), version)
                break
    return {path for path, parent, version in versioned if version < newest[parent]}


def named_after(path: str, name: str) -> bool:
    """True when the file (or, for an entry file like index.ts, its folder) is named like `name`."""
    p = PurePosixPath(path)
    stem = p.name.split(".", 1)[0]
    if stem.lower() in ENTRY_STEMS and p.parent.name:
        stem = p.parent.name
    return _NAME_NOISE.sub("", stem).lower() == _NAME_NOISE.sub("", name).lower()


_HEADERS = (".h", ".hh", ".hpp", ".hxx")


def declared_in_header(hit: FactHit) -> bool:
    """A C or C++ function or method in a header: mostly the prototype of one a source file defines
    (`UV_EXTERN int uv_run(...);` in uv.h, the body in core.c)."""
    return hit.kind in ("function", "method") and hit.path.lower().endswith(_HEADERS)


def rank_definitions(hits: list[FactHit]) -> list[FactHit]:
    """Definitions in source before stubs, examples and tests, in the newest version folder, a
    function's body before its header prototype, types and functions before variables, in a file
    named after them, then shallow paths."""
    superseded = superseded_paths({h.path for h in hits})
    return sorted(
        hits,
        key=lambda h: (
            path_role(h.path),
            h.path in superseded,
            declared_in_header(h),
            _KIND_RANK.get(h.kind or "", 6),
            not named_after(h.path, h.name),
            h.path.count("/"),
            h.path,
            h.line,
        ),
    )


def _qualified(store: Store, rev_no: int, name: str) -> list[FactHit]:
    parts = [p for p in _QUALIFIER.split(name) if p and not _QUALIFIER.fullmatch(p)]
    if len(parts) < 2:
        return []
    last, qualifier = parts[-1], ".".join(parts[:-1]).lower()
    found = []
    for hit in store.find_facts(rev_no, "def", name=last, exact=False):
        container = (hit.container or "").lower()
        module = PurePosixPath(hit.path).with_suffix("").as_posix().replace("/", ".").lower()
        if container == qualifier or container.endswith("." + qualifier) or module.endswith(qualifier):
            found.append(hit)
    return found


def _sigil_variant(store: Store, rev_no: int, name: str) -> list[FactHit]:
    """`ZodType` finds `$ZodType`, and `$ZodType` finds `ZodType`, when the name itself is not defined."""
    variant = name[len(_SIGIL) :] if name.startswith(_SIGIL) else _SIGIL + name
    return store.find_facts(rev_no, "def", name=variant, exact=False) if variant else []


def find_definitions(store: Store, rev_no: int, name: str) -> tuple[list[FactHit], str]:
    """Definitions of name and how they matched: exact; else, for a name defined outside the index,
    where it is imported ("imported"; after a module file named so); else case-insensitive, as
    $name, qualified, module file, or none. A Markdown heading of the very name does not hide the
    imports of a name the code uses."""
    name = name.strip()
    if not name:
        return [], "none"
    exact = rank_definitions(store.find_facts(rev_no, "def", name=name, exact=True))
    if any(h.kind != "heading" for h in exact):
        return exact, "exact"
    paths = _Paths(store, rev_no)
    imported = _imports(store, rev_no, name, paths)
    if imported:
        # A module of the project named so (model2vec's tokenizer/tokenizer.py for `Tokenizer`,
        # which its code imports from `tokenizers`) is the project's own answer: it leads.
        modules = rank_definitions(_modules(paths(), name))
        return modules + imported + exact, "module file" if modules else "imported"
    if exact:
        return exact, "exact"
    hits = store.find_facts(rev_no, "def", name=name, exact=False)
    if hits:
        return rank_definitions(hits), "case-insensitive"
    hits = rank_definitions(_sigil_variant(store, rev_no, name))
    if hits:
        return hits, f"as {hits[0].name}"
    hits = _qualified(store, rev_no, name)
    if hits:
        return rank_definitions(hits), "qualified"
    hits = _modules(paths(), name)
    return (rank_definitions(hits), "module file") if hits else ([], "none")


class _Paths:
    """The revision's paths, read once when first asked for."""

    def __init__(self, store: Store, rev_no: int) -> None:
        self.store, self.rev_no, self.paths = store, rev_no, None

    def __call__(self) -> list[str]:
        if self.paths is None:
            self.paths = [path for path, _ in self.store.manifest_hashes(self.rev_no)]
        return self.paths


def _imports(store: Store, rev_no: int, name: str, paths: _Paths) -> list[FactHit]:
    """Where a name defined outside the index comes in (axum's `pub use axum_core::extract::FromRequest`),
    a line per file. Only imports from modules outside the project count: one from `crate::`, `./`
    or a module the index holds that no longer defines the name is a dangling import, no answer.
    Source before tests, a package's entry file (where re-exports gather) first, then shallow paths."""
    hits = store.find_facts(rev_no, "import", name=name, exact=True, limit=_IMPORT_SITES)
    if not hits:
        return []
    ours = _project_modules({h.signature or "" for h in hits}, paths())
    first = {h.path: replace(h, kind="import") for h in reversed(hits) if (h.signature or "") not in ours}
    return sorted(
        first.values(), key=lambda h: (path_role(h.path), not _is_entry(h.path), h.path.count("/"), h.path)
    )


def _project_modules(modules: set[str], paths: list[str]) -> set[str]:
    """The modules that come from the project itself: relative ones (`./x`, `.models`), Rust's
    `crate`, `self` and `super`, and those naming a file or package the index holds (`app.server`
    for `src/app/server.py`; a single name only for one at the top, or under `src/` or `lib/`)."""
    ours = {m for m in modules if m.startswith(".") or _MODULE_SEP.split(m, 1)[0] in _RUST_ROOTS}
    for module in modules - ours:
        key = "/".join(p for p in _MODULE_SEP.split(module) if p)
        last = key.rsplit("/", 1)[-1]
        for path in (p for p in paths if last in p):  # a substring test first: most paths are not it
            folder, _, name = path.rpartition("/")
            stem = _split_name(name)[0]
            base = folder if stem in ENTRY_STEMS and folder else f"{folder}/{stem}" if folder else stem
            if base == key or (
                base.endswith("/" + key) if "/" in key else base in (f"src/{key}", f"lib/{key}")
            ):
                ours.add(module)
                break
    return ours


def _is_entry(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return name.split(".", 1)[0] in ENTRY_STEMS or name == "lib.rs"


def _modules(paths: list[str], name: str) -> list[FactHit]:
    """Files named like the query: in most languages a file is a module (express's lib/response.js)."""
    wanted = name.lower()
    found = []
    for path in paths:
        if wanted not in path.lower():
            continue
        stem, suffix = _split_name(path.rsplit("/", 1)[-1])
        if stem.lower() == wanted and suffix not in (".md", ".txt", ".json", ".rst"):
            found.append(FactHit("def", stem, "module", path, 1, 1, 1, None, None, False, None))
    return found


def _split_name(name: str) -> tuple[str, str]:
    """(stem, suffix) of a file name, as pathlib splits it, without building a path per file."""
    dot = name.rfind(".")
    return (name[:dot], name[dot:]) if 0 < dot < len(name) - 1 else (name, "")


def bare_name(name: str) -> str:
    """The last part of a qualified name (`Client.send`, `a::b`, `$x->y`): what a use records."""
    parts = [p for p in _QUALIFIER.split(name.strip()) if p and not _QUALIFIER.fullmatch(p)]
    return parts[-1] if parts else ""


def find_references(store: Store, rev_no: int, name: str, calls_only: bool) -> list[FactHit]:
    """References (or only calls) of a name, grouped by path and enclosing definition."""
    bare = bare_name(name)
    if not bare:
        return []
    hits = store.find_facts(rev_no, "ref", name=bare, exact=True, limit=5000)
    if calls_only:
        hits = [h for h in hits if h.is_call]
    return sorted(hits, key=lambda h: (is_test_path(h.path), h.path, h.container or "", h.line))
