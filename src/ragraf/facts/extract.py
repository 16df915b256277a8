"""Extract definitions, references and imports from one file with a single tree-sitter query pass.

The query engine walks the tree in C and hands back only the nodes the rules capture, which
is several times cheaper than visiting every node from Python. Containers come from one
sweep over the captured definition ranges, so nothing here recurses.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable, Iterator
from dataclasses import replace

from tree_sitter import Node, Parser, Query, QueryCursor, Tree
from tree_sitter_language_pack import get_language, get_parser

from ragraf.grammar_input import grammar_safe

from .macros import with_macro_items
from .markdown import markdown_facts
from .model import (
    DEFINITION_KINDS,
    Definition,
    FileFacts,
    Import,
    Reference,
    new_reference,
    qualified_name,
    unsupported,
)
from .rules import rules_for
from .rules.base import SCOPE, ImportHook, LanguageRules, Named
from .salvage import Facts, salvaged

__all__ = [
    "Definition",
    "FileFacts",
    "Import",
    "Reference",
    "extract_facts",
    "extract_index_facts",
    "qualified_name",
]

log = logging.getLogger(__name__)

MAX_REFERENCES = 20_000
SIGNATURE_CHARS = 200

_MODULE_PARTS = re.compile(r"[./:\\\s\"'<>@-]+")
_queries: dict[str, Query | None] = {}
_query_lock = threading.Lock()
# Parsers hold mutable state, so each thread gets its own.
_local = threading.local()

# (end byte, qualified name, kind, index in scopes) of an open container during a sweep.
_Open = tuple[int, str, str, int]
# (start byte, end byte, qualified name) of a container, in document order.
_Scope = tuple[int, int, str]
# (start byte, name, line, is_call) of a reference before its container is known.
_Raw = tuple[int, bytes, int, bool]
# name -> (line, 1 for a call else 0, container) of each of its references, in file order: what
# the index stores.
Sites = dict[str, list[tuple[int, int, str | None]]]


def extract_facts(text: str, language: str, tree: Tree | None = None) -> FileFacts:
    """Definitions, references and imports of `text`; never raises.

    `tree`, when given, must come from parsing
    `grammar_safe(text.encode("utf-8", "surrogatepass"), language)` (chunking's parse does).
    """
    try:
        if language == "markdown":
            return markdown_facts(text)
        rules = rules_for(language)
        query = _query_for(language, rules) if rules is not None else None
        if rules is None or query is None:
            return unsupported(language)
        return _extract(text, language, rules, query, tree)[0]
    except Exception:  # a rule bug on one odd file must never stop an index run
        log.debug("facts extraction failed for a %s file", language, exc_info=True)
        return FileFacts(language, True, (), (), (), True)


def extract_index_facts(text: str, language: str, tree: Tree | None = None) -> tuple[FileFacts, Sites | None]:
    """extract_facts for the index: the references grouped by name as it stores them, built
    straight from the query's captures without a Reference per use (`FileFacts.references` then
    empty); None, with the references in the FileFacts, where a file's parts are parsed again
    (syntax errors salvaged, macro items), whose merge works on References. Never raises."""
    try:
        if language == "markdown":
            return markdown_facts(text), None
        rules = rules_for(language)
        query = _query_for(language, rules) if rules is not None else None
        if rules is None or query is None:
            return unsupported(language), None
        return _extract(text, language, rules, query, tree, grouped=True)
    except Exception:  # as in extract_facts
        log.debug("facts extraction failed for a %s file", language, exc_info=True)
        return FileFacts(language, True, (), (), (), True), None


def parser_for(language: str) -> Parser:
    """This thread's cached tree-sitter parser for `language`."""
    parsers: dict[str, Parser] | None = getattr(_local, "parsers", None)
    if parsers is None:
        parsers = _local.parsers = {}
    parser = parsers.get(language)
    if parser is None:
        parser = parsers[language] = get_parser(language)  # type: ignore[arg-type]
    return parser


def compile_queries(languages: Iterable[str]) -> None:
    """Compile the rules queries of these languages now (a process about to fork its workers)."""
    for language in languages:
        rules = rules_for(language)
        if rules is not None:
            _query_for(language, rules)


def _query_for(language: str, rules: LanguageRules) -> Query | None:
    """The compiled rules query, or None (remembered) when this grammar build rejects it."""
    if language in _queries:
        return _queries[language]
    with _query_lock:
        if language not in _queries:
            try:
                _queries[language] = Query(get_language(language), rules.query)  # type: ignore[arg-type]
            except Exception:  # a grammar that drifted from the rules: no facts, said once
                log.warning(
                    "facts rules for %s do not fit its grammar; no facts for it", language, exc_info=True
                )
                _queries[language] = None
    return _queries[language]


def _extract(
    text: str, language: str, rules: LanguageRules, query: Query, tree: Tree | None, grouped: bool = False
) -> tuple[FileFacts, Sites | None]:
    data = grammar_safe(text.encode("utf-8", "surrogatepass"), language)
    if tree is None:
        tree = parser_for(language).parse(data)
    root = tree.root_node
    if grouped and not (root.has_error and rules.salvage) and not rules.macro_items:
        sites: Sites = {}
        facts = _facts_of(root, data, rules, query, sites=sites)
        return FileFacts(language, True, *facts, root.has_error), sites
    facts = _facts_of(root, data, rules, query)
    if root.has_error and rules.salvage:
        known = frozenset(_known_names(facts[0], facts[2]))
        # A parser of its own (3 us): a shared one, its included ranges set and reset, crashed a
        # later parse once in about ten runs of the random-text test.
        parser = get_parser(language)  # type: ignore[arg-type]
        facts = salvaged(facts, root, data, parser, lambda part: _facts_of(part, data, rules, query, known))
    if rules.macro_items:
        known = frozenset(_known_names(facts[0], facts[2]))
        impl_hook = rules.names["impl_item"]

        def impl_name(node: Node) -> str | None:
            named = impl_hook(node)
            return _name_text(data, named[0][0]) if named else None

        facts = with_macro_items(
            facts,
            root,
            data,
            get_parser(language),  # type: ignore[arg-type]
            lambda part: _facts_of(part, data, rules, query, known),
            impl_name,
        )
    return FileFacts(language, True, *facts, root.has_error), None


def _facts_of(
    root: Node,
    data: bytes,
    rules: LanguageRules,
    query: Query,
    known: frozenset[bytes] = frozenset(),
    sites: Sites | None = None,
) -> Facts:
    """The facts of one parse; `known` adds names the rest of the file defines or imports. With
    `sites`, the references go there, grouped by name, and not into the facts."""
    captures = QueryCursor(query).captures(root)
    definitions, scopes, name_starts = _definitions(captures, rules, data)
    imports = _imports(captures.get("import", ()), rules)
    names = _known_names(definitions, imports) | known
    references = _references(captures, rules, data, scopes, names, name_starts, sites)
    return definitions, references, imports


def _definitions(
    captures: dict[str, list[Node]], rules: LanguageRules, data: bytes
) -> tuple[tuple[Definition, ...], list[_Scope], set[int]]:
    """Definitions in document order, the container ranges, and the start bytes of their names."""
    wrapped = _wrapper_starts(captures.get("wrapper", ()))
    stack: list[_Open] = []
    scopes: list[_Scope] = []
    name_starts: set[int] = set()
    found: list[Definition] = []
    # Index of the last definition directly inside each container (keyed by the container's start).
    last_at: dict[int, int] = {}
    modules: set[str] = set()  # qualified names of the modules (C++ namespaces) defined so far
    for start, end, tag, node in _definition_nodes(captures):
        end = _scope_end(node, end, rules, len(data))
        while stack and stack[-1][0] <= start:
            stack.pop()
        parent_qual, parent_kind, parent_start = _parent(stack, scopes)
        pushed = False
        for name_node, extra, kind_override in _names(node, rules):
            name = _name_text(data, name_node)
            kind = _kind(kind_override or tag, node, name, rules) if name else None
            if kind is None:
                continue
            container = _join(parent_qual, extra)
            kind = _method_or(kind, parent_kind, extra, container in modules, rules)
            if kind != SCOPE:
                name_starts.add(name_node.start_byte)
                first_row = wrapped.get(start, node.start_point[0])
                definition = _definition(data, node, name_node, name, kind, container, first_row)
                if not (rules.merge_clauses and _merged(found, last_at.get(parent_start), definition)):
                    last_at[parent_start] = len(found)
                    found.append(definition)
            if kind == "module":
                modules.add(f"{container}.{name}" if container else name)
            # A typedef is no container: `typedef struct s {...} s_t;` defines s at top level.
            if not pushed and kind != "type":
                stack.append((end, f"{container}.{name}" if container else name, kind, len(scopes)))
                scopes.append((start, end, stack[-1][1]))
                pushed = True
    return tuple(found), scopes, name_starts


def _scope_end(node: Node, end: int, rules: LanguageRules, size: int) -> int:
    """`namespace X;` has no body: it scopes everything after it."""
    if rules.open_scopes and node.type in rules.open_scopes and node.child_by_field_name("body") is None:
        return size
    return end


def _parent(stack: list[_Open], scopes: list[_Scope]) -> tuple[str | None, str | None, int]:
    """Qualified name, kind and start byte of the innermost open container (start -1 at top level)."""
    if not stack:
        return None, None, -1
    end, qual, kind, index = stack[-1]
    return qual, kind, scopes[index][0]


def _method_or(
    kind: str, parent_kind: str | None, extra: str | None, in_module: bool, rules: LanguageRules
) -> str:
    """Functions directly inside a class-like container, or named `A::b` in C++, are methods.

    `a::f` is a free function when `a` is a namespace defined earlier in the file (C++ declares a
    namespace before qualifying with it); a namespace only a header defines still reads as a class.
    """
    if kind != "function":
        return kind
    if parent_kind in rules.method_scopes or (extra and rules.qualified_methods and not in_module):
        return "method"
    return kind


def _wrapper_starts(wrappers: list[Node]) -> dict[int, int]:
    """Start byte of a wrapped definition -> first row of its wrapper (decorators, templates)."""
    starts: dict[int, int] = {}
    for node in wrappers:
        children = node.named_children
        if children:
            starts[children[-1].start_byte] = node.start_point[0]
    return starts


def _definition_nodes(captures: dict[str, list[Node]]) -> list[tuple[int, int, str, Node]]:
    """(start, end, tag, node) for every definition or scope capture, outermost first."""
    entries: list[tuple[int, int, str, Node]] = []
    # A node may match two patterns under different tags (a declarator that is a function
    # and a module variable); each tag's hook decides, so both entries stay.
    seen: set[tuple[int, int, int, str]] = set()
    for capture, nodes in captures.items():
        if capture.startswith("def."):
            tag = capture[4:]
        elif capture == "scope":
            tag = SCOPE
        else:
            continue
        for node in nodes:
            start, end = node.start_byte, node.end_byte
            key = (start, end, node.kind_id, tag)
            if key not in seen:
                seen.add(key)
                entries.append((start, end, tag, node))
    entries.sort(key=_outermost_first)
    return entries


def _outermost_first(entry: tuple[int, int, str, Node]) -> tuple[int, int, int, str]:
    # Ties (one node under two tags) are broken by kind and tag, as capture order is not stable.
    return entry[0], -entry[1], entry[3].kind_id, entry[2]


def _names(node: Node, rules: LanguageRules) -> list[Named]:
    hook = rules.names.get(node.type)
    if hook is None:
        child = node.child_by_field_name("name")
        return [(child, None, None)] if child is not None else []
    try:
        return [named for named in hook(node) if named[0] is not None]
    except Exception:  # one odd node loses its definition, not the whole file's facts
        log.debug("name hook failed on a %s node", node.type, exc_info=True)
        return []


def _kind(tag: str, node: Node, name: str, rules: LanguageRules) -> str | None:
    if tag in DEFINITION_KINDS or tag == SCOPE:
        return tag
    hook = rules.kinds.get(tag)
    if hook is None:
        return None
    try:
        return hook(node, name)
    except Exception:  # as in _names: skip the node, keep the file
        log.debug("kind hook failed on a %s node", node.type, exc_info=True)
        return None


def _join(container: str | None, extra: str | None) -> str | None:
    if container and extra:
        return f"{container}.{extra}"
    return container or extra


def _name_text(data: bytes, node: Node) -> str:
    name = data[node.start_byte : node.end_byte].decode("utf-8", "replace")
    # A name split over lines is cited by its first line, which is where `line` points.
    if "\n" in name:
        name = name.split("\n", 1)[0]
    return name.strip()


def _definition(
    data: bytes, node: Node, name_node: Node, name: str, kind: str, container: str | None, first_row: int
) -> Definition:
    line = name_node.start_point[0] + 1
    end_row, end_column = node.end_point
    # A node ending at column 0 ends on the previous line (preprocessor lines keep their newline).
    end_line = max(end_row + 1 if end_column else end_row, line)
    signature = _line_text(data, name_node.start_byte)
    return Definition(name, kind, container, line, end_line, min(first_row + 1, line), signature)


def _line_text(data: bytes, offset: int) -> str:
    # Search and decode a bounded window: minified code can put megabytes on one line.
    window = 8 * SIGNATURE_CHARS
    start = data.rfind(b"\n", max(0, offset - window), offset) + 1 or max(0, offset - window)
    end = data.find(b"\n", offset, offset + window)
    if end < 0:
        end = min(len(data), offset + window)
    return data[start:end].decode("utf-8", "replace").strip()[:SIGNATURE_CHARS]


def _merged(found: list[Definition], index: int | None, d: Definition) -> bool:
    """Fold another clause of the same function into the previous definition of its container."""
    if index is None:
        return False
    previous = found[index]
    if previous.name != d.name or previous.kind not in ("function", "method"):
        return False
    found[index] = replace(previous, end_line=max(previous.end_line, d.end_line))
    return True


def _references(
    captures: dict[str, list[Node]],
    rules: LanguageRules,
    data: bytes,
    scopes: list[_Scope],
    known: set[bytes],
    skip: set[int],
    sites: Sites | None = None,
) -> tuple[Reference, ...]:
    """Calls and name uses, one per (name, line, is_call), with their containers.

    Bare identifiers (@name) are mostly locals and parameters, so they count only when they
    look global: Capitalized, or a name this file defines at top level or imports.
    """
    noise = rules.noise_bytes
    found: list[_Raw] = []
    calls = captures.get("call", [])
    if "call.adjacent" in captures:
        calls = calls + [node for node in captures["call.adjacent"] if _adjacent(node)]
    # One loop for all three captures: this is the hottest code of an index run.
    # is_call as 1 or 0: the form the index stores (a Reference gets a bool).
    for nodes, is_call, bare in (
        (calls, 1, False),
        (captures.get("ref", ()), 0, False),
        (captures.get("name", ()), 0, True),
    ):
        for node in nodes:
            start = node.start_byte
            if start in skip:
                continue
            name = data[start : node.end_byte]
            if bare:
                if not name or not (65 <= name[0] <= 90 or name in known):
                    continue
            else:
                skip.add(start)
            # Error recovery inserts zero-width MISSING nodes.
            if name and name not in noise:
                found.append((start, name, node.start_point.row + 1, is_call))
    # Capture order is not document order, so sort before keeping the first use on each line.
    found.sort()
    if len(found) > MAX_REFERENCES:
        found = _capped(found)
    excluded = sorted((node.start_byte, node.end_byte) for node in captures.get("import", ()))
    if sites is not None:
        _sweep_grouped(found, scopes, excluded, sites)
        return ()
    return _sweep(found, scopes, excluded)


def _adjacent(node: Node) -> bool:
    """No token between the node and its next named sibling: `f(x)`, not `f, (x)`."""
    sibling = node.next_sibling
    return sibling is not None and sibling.is_named


def _capped(found: list[_Raw]) -> list[_Raw]:
    """At most MAX_REFERENCES distinct references, calls first: they answer "who calls X"."""
    distinct: dict[tuple[bytes, int, bool], _Raw] = {}
    for item in found:
        distinct.setdefault((item[1], item[2], item[3]), item)
    calls = [item for item in distinct.values() if item[3]][:MAX_REFERENCES]
    others = [item for item in distinct.values() if not item[3]][: MAX_REFERENCES - len(calls)]
    return sorted(calls + others)


def _kept(
    found: list[_Raw], scopes: list[_Scope], excluded: list[tuple[int, int]]
) -> Iterator[tuple[bytes, int, int, str | None]]:
    """One pass over references in file order: drop repeats on a line and those inside `excluded`
    ranges (import statements, recorded as imports); (name bytes, line, is_call, innermost container)
    of each one kept."""
    seen: set[tuple[bytes, int, int]] = set()
    stack: list[_Scope] = []
    index, count = 0, len(scopes)
    next_start = scopes[0][0] if scopes else -1
    top_end, top = _top(stack)  # the innermost open scope's end and name, cached
    gap, gaps = 0, len(excluded)
    for start, raw, line, is_call in found:
        key = (raw, line, is_call)
        if key in seen:
            continue
        if gaps:
            while gap < gaps and excluded[gap][1] <= start:
                gap += 1
            if gap < gaps and excluded[gap][0] <= start:
                continue
        seen.add(key)
        if 0 <= next_start <= start:
            while index < count and scopes[index][0] <= start:
                scope = scopes[index]
                while stack and stack[-1][1] <= scope[0]:
                    stack.pop()
                stack.append(scope)
                index += 1
            next_start = scopes[index][0] if index < count else -1
            top_end, top = _top(stack)
        if top_end <= start:
            while stack and stack[-1][1] <= start:
                stack.pop()
            top_end, top = _top(stack)
        yield raw, line, is_call, top


def _sweep(found: list[_Raw], scopes: list[_Scope], excluded: list[tuple[int, int]]) -> tuple[Reference, ...]:
    """The references _kept keeps, as References."""
    out: list[Reference] = []
    for raw, line, is_call, top in _kept(found, scopes, excluded):
        name = raw.decode("utf-8", "replace")
        if "\n" not in name:
            out.append(new_reference(name, line, top, is_call == 1))
    return tuple(out)


def _sweep_grouped(
    found: list[_Raw], scopes: list[_Scope], excluded: list[tuple[int, int]], sites: Sites
) -> None:
    """_sweep into `sites`: the same references (a name's in file order), kept by name as the index
    stores them, with no Reference built and each name decoded once."""
    by_raw: dict[bytes, list[tuple[int, int, str | None]]] = {}
    for raw, line, is_call, top in _kept(found, scopes, excluded):
        uses = by_raw.get(raw)
        if uses is None:
            by_raw[raw] = [(line, is_call, top)]
        else:
            uses.append((line, is_call, top))
    try:
        for raw, uses in by_raw.items():
            if b"\n" not in raw:  # decoding keeps a newline byte as it is
                sites[raw.decode("utf-8")] = uses
    except UnicodeDecodeError:
        # Malformed bytes: two such names may read as one ("\ufffd"), their uses then merged in
        # file order, as _sweep gives them.
        sites.clear()
        for r in _sweep(found, scopes, excluded):
            sites.setdefault(r.name, []).append((r.line, int(r.is_call), r.container))


def _top(stack: list[_Scope]) -> tuple[int, str | None]:
    # With no open scope the end is "never", so the pop check stays false.
    return (stack[-1][1], stack[-1][2]) if stack else (1 << 62, None)


def _known_names(definitions: tuple[Definition, ...], imports: tuple[Import, ...]) -> set[bytes]:
    """Names a bare identifier can refer to beyond the local scope: top-level and imported names."""
    known = {d.name.encode() for d in definitions if d.container is None or d.kind != "variable"}
    for item in imports:
        if item.name:
            known.add(item.name.encode())
        # `import os.path` binds `os`; `"./util"`, `"net/http"` and `a::b` bind their last part.
        for part in _MODULE_PARTS.split(item.module):
            if part:
                known.add(part.encode())
    return known


def _imports(nodes: list[Node], rules: LanguageRules) -> tuple[Import, ...]:
    if rules.imports is None:
        return ()
    out: list[Import] = []
    seen: set[int] = set()
    # Captures come grouped by pattern; a reader expects file order.
    for node in sorted(nodes, key=_start_byte):
        if node.start_byte in seen:
            continue
        seen.add(node.start_byte)
        line = node.start_point[0] + 1
        multiline = node.end_point[0] > node.start_point[0]
        for module, name in _imported(node, rules.imports):
            if module:
                at = _name_line(node, name, line) if multiline and name else line
                out.append(Import(module, name or None, at))
    return tuple(out)


def _name_line(node: Node, name: str, first: int) -> int:
    """The line of an import statement spread over several (`from x import (\n    a,\n)`) that
    holds the imported name, so a cited line shows it; the first line when it is not found."""
    text = node.text or b""
    word = name.encode("utf-8", "surrogatepass")
    # A find loop, not a regex: a pattern per imported name was compiled anew, past re's cache.
    at = text.find(word)
    while at >= 0:
        end = at + len(word)
        if not _word_byte(text[at - 1 : at]) and not _word_byte(text[end : end + 1]):
            return first + text.count(b"\n", 0, at)
        at = text.find(word, at + 1)
    return first


def _word_byte(byte: bytes) -> bool:
    """Whether a byte (b"" at either end) continues an identifier: ASCII letters, digits, _ and $."""
    return byte.isalnum() or byte in (b"_", b"$")


def _imported(node: Node, hook: ImportHook) -> list[tuple[str, str | None]]:
    try:
        return hook(node)
    except Exception:  # as in _names: skip the node, keep the file
        log.debug("import hook failed on a %s node", node.type, exc_info=True)
        return []


def _start_byte(node: Node) -> int:
    return node.start_byte
