"""Rust items written inside macro calls, parsed again as items.

Crates gate whole groups of items behind macros (`cfg_rt! { pub struct LocalSet { .. } impl
LocalSet { .. } }` in tokio; `cfg_if!`, `cfg_feature!`). The grammar reads a macro's argument as a
flat token tree, so those items had no definitions, and `def LocalSet` found nothing. A braced
macro call standing where an item stands (in a file, a `mod` or an `impl`) is parsed again over its
inner bytes alone (tree-sitter's included ranges keep every line true); when that parse is clean,
its facts replace the token tree's on the call's inner lines. A call whose argument is not items (a
DSL) parses with errors and keeps what the first parse found.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from tree_sitter import Node, Parser, Point, Range

from .model import Definition, Import, Reference

Facts = tuple[tuple[Definition, ...], tuple[Reference, ...], tuple[Import, ...]]

_ITEM_LISTS = frozenset({"source_file", "declaration_list"})
_METHOD_SCOPES = frozenset({"impl_item", "trait_item"})
_DEPTH = 4  # macro calls within macro calls within ...: cfg gates nest two or three deep


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
    definitions, references, imports = (list(items) for items in facts)
    while pending:
        body, depth, outer, outer_in_impl = pending.pop()
        lo, hi = body.start_byte + 1, body.end_byte - 1
        if hi <= lo:
            continue
        parser.included_ranges = [Range(_after(body.start_point), _before(body.end_point), lo, hi)]
        sub = parser.parse(data).root_node
        if sub.has_error:
            continue
        new_defs, new_refs, new_imports = facts_of(sub)
        lines = range(body.start_point.row + 1, body.end_point.row + 2)
        call = _text(body.parent.child_by_field_name("macro")) if body.parent is not None else None
        inner_container, in_impl = _container(body, impl_name)
        container = ".".join(c for c in (outer, inner_container) if c) or None
        in_impl = in_impl if inner_container else outer_in_impl
        definitions += [_placed(d, container, in_impl) for d in new_defs]
        # The token tree's readings on the call's lines give way, but for the call of the macro itself.
        references = [r for r in references if r.line not in lines or (r.name == call and r.line == lines[0])]
        references += [replace(r, container=_join(container, r.container)) for r in new_refs]
        imports += new_imports
        if depth < _DEPTH:
            pending += [(nested, depth + 1, container, in_impl) for nested in _bodies(sub)]
    return (
        tuple(sorted(_distinct(definitions), key=lambda d: d.line)),
        tuple(sorted(dict.fromkeys(references), key=lambda r: r.line)),
        tuple(sorted(dict.fromkeys(imports), key=lambda i: i.line)),
    )


def _bodies(root: Node) -> list[Node]:
    """The braced token trees of macro calls that stand where items stand."""
    out = []
    stack = [root]
    while stack:
        node = stack.pop()
        for child in node.children:
            if child.type == "macro_invocation" and node.type in _ITEM_LISTS:
                tree = child.children[-1] if child.children else None
                if (
                    tree is not None
                    and tree.type == "token_tree"
                    and tree.text
                    and tree.text.startswith(b"{")
                ):
                    out.append(tree)
            elif child.type in ("mod_item", "impl_item", "trait_item", "declaration_list"):
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


def _distinct(definitions: list[Definition]) -> list[Definition]:
    """One definition per name and line: a macro's own parse wins over a token-tree reading."""
    seen: dict[tuple[str, int], Definition] = {}
    for d in definitions:
        seen[(d.name, d.line)] = d
    return list(seen.values())


def _text(node: Node | None) -> str | None:
    return node.text.decode("utf-8", "replace") if node is not None and node.text else None


def _after(point: Point) -> Point:
    return Point(point.row, point.column + 1)


def _before(point: Point) -> Point:
    return Point(point.row, max(0, point.column - 1))
