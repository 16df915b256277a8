"""Rust: functions, impl methods (contained by the impl's type), structs, enums, traits, modules, uses.

Macro arguments are a flat token tree, not expressions: a name just before a parenthesized token
tree (`println!("{}", target(1))`, `vec![f(x)]`) is read as a call. Items inside a braced macro
call where an item stands (`cfg_rt! { pub struct LocalSet .. }`) are parsed again (facts.macros).
"""

from __future__ import annotations

from tree_sitter import Node

from .base import LanguageRules, Named, text

QUERY = """
(function_item) @def.function
(function_signature_item) @def.function
(struct_item) @def.struct
(union_item) @def.struct
(enum_item) @def.enum
(trait_item) @def.trait
(mod_item) @def.module
(const_item) @def.constant
(static_item) @def.constant
(type_item) @def.type
(macro_definition) @def.function
(impl_item) @scope
(call_expression function: (identifier) @call)
(call_expression function: (field_expression field: (field_identifier) @call))
(call_expression function: (scoped_identifier name: (identifier) @call))
(call_expression function: (generic_function function: (identifier) @call))
(call_expression function: (generic_function function: (scoped_identifier name: (identifier) @call)))
(call_expression function: (generic_function function: (field_expression field: (field_identifier) @call)))
(macro_invocation macro: (identifier) @call)
(macro_invocation macro: (scoped_identifier name: (identifier) @call))
((token_tree (identifier) @call.adjacent . (token_tree) @_arguments) (#match? @_arguments "^[(]"))
(field_expression field: (field_identifier) @ref)
(scoped_identifier name: (identifier) @ref)
(type_identifier) @ref
(identifier) @name
(use_declaration) @import
(extern_crate_declaration) @import
"""


def _impl_type(node: Node) -> list[Named]:
    """An impl block names its type: `impl<T> Trait for List<T>` -> List."""
    target = node.child_by_field_name("type")
    while target is not None and target.type in ("generic_type", "scoped_type_identifier", "reference_type"):
        inner = target.child_by_field_name("type") or target.child_by_field_name("name")
        if inner is None:
            break
        target = inner
    return [(target, None, None)] if target is not None else []


def _imports(node: Node) -> list[tuple[str, str | None]]:
    if node.type == "extern_crate_declaration":
        return [(text(node.child_by_field_name("name")), None)]
    argument = node.child_by_field_name("argument")
    if argument is None:
        return []
    return _flatten_use(" ".join(text(argument).split()))


def _flatten_use(path: str) -> list[tuple[str, str | None]]:
    """`a::{b, c::d as e}` -> [("a", "b"), ("a::c", "d")], iteratively (no recursion)."""
    out: list[tuple[str, str | None]] = []
    pending = [("", path)]
    while pending:
        prefix, item = pending.pop()
        brace = item.find("{")
        if brace < 0:
            item = item.split(" as ")[0].strip()  # the alias is local; the path is the dependency
        if brace >= 0 and item.endswith("}"):
            head = _join(prefix, item[:brace].rstrip(":"))
            pending.extend((head, part) for part in reversed(_split_top(item[brace + 1 : -1])))
            continue
        full = _join(prefix, item)
        module, _, name = full.rpartition("::")
        if name in ("*", "self"):
            out.append((module or full, None))
        elif module:
            out.append((module, name))
        else:
            out.append((name, None))
    return out


def _join(prefix: str, item: str) -> str:
    return f"{prefix}::{item}" if prefix and item else prefix or item


def _split_top(inner: str) -> list[str]:
    """Split on commas outside braces."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(inner):
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(inner[start:index])
            start = index + 1
    parts.append(inner[start:])
    return [p.strip() for p in parts if p.strip()]


RULES = {
    "rust": LanguageRules(
        query=QUERY,
        names={"impl_item": _impl_type},
        imports=_imports,
        noise=frozenset({"self", "Self", "Some", "None", "Ok", "Err"}),
        macro_items=True,
    ),
}
