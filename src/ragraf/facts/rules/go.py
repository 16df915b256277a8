"""Go: functions, methods (contained by their receiver type), types, constants, imports, calls."""

from __future__ import annotations

from tree_sitter import Node

from .base import LanguageRules, Named, text, unquote

QUERY = """
(function_declaration) @def.function
(method_declaration) @def.method
(type_spec) @def.typespec
(type_alias) @def.type
(method_elem) @def.method
(source_file (const_declaration (const_spec) @def.constant))
(source_file (var_declaration (var_spec) @def.variable))
(source_file (var_declaration (var_spec_list (var_spec) @def.variable)))
(call_expression function: (identifier) @call)
(call_expression function: (selector_expression field: (field_identifier) @call))
(selector_expression field: (field_identifier) @ref)
(type_identifier) @ref
(identifier) @name
(import_spec) @import
"""

# Builtin types would otherwise be the most referenced names of every Go file.
_PREDECLARED_TYPES = frozenset({
    "any", "bool", "byte", "comparable", "complex64", "complex128", "error", "float32", "float64",
    "int", "int8", "int16", "int32", "int64", "rune", "string", "uint", "uint8", "uint16", "uint32",
    "uint64", "uintptr",
})  # fmt: skip
_TYPE_KINDS = {"struct_type": "struct", "interface_type": "interface"}


def _receiver(node: Node) -> list[Named]:
    """A method's name, contained by its receiver's type (`func (c *Conn) Dial()` -> Conn.Dial)."""
    receiver = node.child_by_field_name("receiver")
    owner = None
    if receiver is not None:
        for parameter in receiver.named_children:
            owner = _base_type(parameter.child_by_field_name("type"))
            break
    return [(node.child_by_field_name("name"), owner, None)]


def _base_type(node: Node | None) -> str | None:
    # Strip pointers and type arguments: `*List[T]` -> List.
    while node is not None and node.type in ("pointer_type", "generic_type", "parenthesized_type"):
        node = node.child_by_field_name("type") or (node.named_children[0] if node.named_children else None)
    return text(node) or None if node is not None else None


def _all_names(node: Node) -> list[Named]:
    """`const a, b = 1, 2` defines both names."""
    return [(child, None, None) for child in node.children_by_field_name("name")]


def _type_kind(node: Node, name: str) -> str | None:
    value = node.child_by_field_name("type")
    return _TYPE_KINDS.get(value.type, "type") if value is not None else "type"


def _imports(node: Node) -> list[tuple[str, str | None]]:
    alias = node.child_by_field_name("name")
    return [(unquote(text(node.child_by_field_name("path"))), text(alias) or None)]


RULES = {
    "go": LanguageRules(
        query=QUERY,
        names={
            "method_declaration": _receiver,
            "const_spec": _all_names,
            "var_spec": _all_names,
        },
        kinds={"typespec": _type_kind},
        imports=_imports,
        noise=frozenset({"nil", "true", "false", "iota", "err"}) | _PREDECLARED_TYPES,
    ),
}
