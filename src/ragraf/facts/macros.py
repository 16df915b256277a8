"""Rust items written inside macro calls, parsed again as items.

Crates gate whole groups of items behind macros (`cfg_rt! { pub struct LocalSet { .. } impl
LocalSet { .. } }` in tokio; `cfg_if!`, `cfg_feature!`). The grammar reads a macro's argument as a
flat token tree, so those items had no definitions, and `def LocalSet` found nothing. A braced
macro call standing where an item stands (in a file, a `mod`, an `impl` or an `extern` block) is
parsed again over its inner bytes alone (tree-sitter's included ranges keep every line true).
Its definitions and imports join the file's; when that parse is clean, its references replace the
token tree's reading of the call's lines. A call whose argument is no items (a DSL such as
`html! { <div> }`) gives no definitions and, parsing with errors, keeps the first reading of its
references, as does an item half-written inside a cfg block.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from tree_sitter import Node, Parser, Point, Range

from .model import Definition, Import, Reference

Facts = tuple[tuple[Definition, ...], tuple[Reference, ...], tuple[Import, ...]]

_ITEM_LISTS = frozenset({"source_file", "declaration_list"})
_ITEM_HOLDERS = frozenset({"mod_item", "impl_item", "trait_item", "foreign_mod_item", "declaration_list"})
_METHOD_SCOPES = frozenset({"impl_item", "trait_item"})
_DEPTH = 16  # macro calls within macro calls: cfg gates nest two or three deep, a bound for the odd file


def with_macro_items(
    facts: Facts,
    root: Node,
    data: bytes,
    parser: Parser,
    facts_of: Callable[[Node], Facts],
    impl_name: Callable[[Node], str | None],
) -> Facts:
    """`facts` with the items of item-position macro calls in `root` (a parser of its own: its
    included ranges are set here)."""
    pending = [(body, 1, None, False) for body in _bodies(root)]
    if not pending:
        return facts
    definitions, imports = list(facts[0]), list(facts[2])
    by_line: dict[int, list[Reference]] = {}
    for r in facts[1]:
        by_line.setdefault(r.line, []).append(r)
    while pending:
        body, depth, outer, outer_in_impl = pending.pop()
        lo, hi = body.start_byte + 1, body.end_byte - 1
        if hi <= lo:
            continue
        parser.included_ranges = [Range(_after(body.start_point), _before(body.end_point), lo, hi)]
        sub = parser.parse(data).root_node
        defs, refs, imps = facts_of(sub)
        inner_container, in_impl = _container(body, impl_name)
        container = ".".join(c for c in (outer, inner_container) if c) or None
        in_impl = in_impl if inner_container else outer_in_impl
        definitions += [_placed(d, container, in_impl) for d in defs]
        imports += imps
        # A definition's name the token tree took for a call is no call.
        for d in defs:
            if d.line in by_line:
                by_line[d.line] = [r for r in by_line[d.line] if r.name != d.name]
        if not sub.has_error:
            first, last = body.start_point.row + 1, body.end_point.row + 1
            for line in range(first + 1, last):
                by_line.pop(line, None)
            # On the call's own first and last lines code outside it may stand too
            # (`fn a() { p(); } m! {`): only the names read anew there give way.
            for line in (first, last):
                anew = {r.name for r in refs if r.line == line}
                if anew and line in by_line:
                    by_line[line] = [r for r in by_line[line] if r.name not in anew]
            for r in refs:
                by_line.setdefault(r.line, []).append(replace(r, container=_join(container, r.container)))
        if depth < _DEPTH:
            pending += [(nested, depth + 1, container, in_impl) for nested in _bodies(sub)]
    return (
        tuple(sorted(dict.fromkeys(definitions), key=lambda d: d.line)),
        tuple(dict.fromkeys(r for line in sorted(by_line) for r in by_line[line])),
        tuple(sorted(dict.fromkeys(imports), key=lambda i: i.line)),
    )


def _bodies(root: Node) -> list[Node]:
    """The braced token trees of macro calls that stand where items stand."""
    out = []
    stack = [root]
    while stack:
        node = stack.pop()
        for child in node.children:
            call = child
            if child.type == "expression_statement" and node.type == "source_file" and child.named_children:
                call = child.named_children[0]  # `m! { .. };` at the top of a file
            if call.type == "macro_invocation" and node.type in _ITEM_LISTS:
                tree = next((c for c in call.children if c.type == "token_tree"), None)
                if tree is not None and tree.text and tree.text.startswith(b"{"):
                    out.append(tree)
            elif child.type in _ITEM_HOLDERS:
                stack.append(child)
    return out


def _container(body: Node, impl_name: Callable[[Node], str | None]) -> tuple[str | None, bool]:
    """The qualified name of the mods and impls around a macro call, and whether an impl or trait
    is the nearest (its functions are methods)."""
    names: list[str] = []
    nearest: str | None = None
    node = body.parent
    while node is not None:
        if node.type in ("mod_item", "trait_item", "impl_item"):
            nearest = nearest or node.type
            name = impl_name(node) if node.type == "impl_item" else _text(node.child_by_field_name("name"))
            if name:
                names.append(name)
        node = node.parent
    return (".".join(reversed(names)) or None), nearest in _METHOD_SCOPES


def _placed(d: Definition, container: str | None, in_impl: bool) -> Definition:
    if container is None:
        return d
    kind = "method" if in_impl and d.kind == "function" and d.container is None else d.kind
    return replace(d, container=_join(container, d.container), kind=kind)


def _join(outer: str | None, inner: str | None) -> str | None:
    return f"{outer}.{inner}" if outer and inner else outer or inner


def _text(node: Node | None) -> str | None:
    return node.text.decode("utf-8", "replace") if node is not None and node.text else None


def _after(point: Point) -> Point:
    return Point(point.row, point.column + 1)


def _before(point: Point) -> Point:
    return Point(point.row, max(0, point.column - 1))
