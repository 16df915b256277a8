"""Swift: classes, structs, enums, actors, protocols, extensions (as containers), functions, imports."""

from __future__ import annotations

from tree_sitter import Node

from .base import SCOPE, LanguageRules, Named, constant_or_variable, text

QUERY = """
(class_declaration) @def.declaration
(protocol_declaration) @def.interface
(function_declaration) @def.function
(protocol_function_declaration) @def.method
(init_declaration) @def.method
(typealias_declaration) @def.type
(source_file (property_declaration) @def.var)
(call_expression . (simple_identifier) @call)
(call_expression . (navigation_expression suffix: (navigation_suffix suffix: (simple_identifier) @call)))
(navigation_suffix suffix: (simple_identifier) @ref)
(type_identifier) @ref
(simple_identifier) @name
(import_declaration) @import
"""

# `class_declaration` covers every nominal type; its first keyword says which.
_DECLARATION_KINDS = {
    "class": "class",
    "actor": "class",
    "struct": "struct",
    "enum": "enum",
    "extension": SCOPE,
}


def _declaration_kind(node: Node, name: str) -> str | None:
    keyword = node.child_by_field_name("declaration_kind")
    return _DECLARATION_KINDS.get(text(keyword), "class")


def _declaration_name(node: Node) -> list[Named]:
    """An extension's name is a type (`extension Array where ...`): use its last identifier."""
    name = node.child_by_field_name("name")
    while name is not None and name.type == "user_type" and name.named_children:
        name = name.named_children[-1]
    return [(name, None, None)]


def _init_name(node: Node) -> list[Named]:
    return [(child, None, None) for child in node.children if child.type == "init"][:1]


def _property_name(node: Node) -> list[Named]:
    pattern = node.child_by_field_name("name")
    bound = pattern.child_by_field_name("bound_identifier") if pattern is not None else None
    return [(bound or pattern, None, None)]


def _imports(node: Node) -> list[tuple[str, str | None]]:
    path = next((text(c) for c in node.named_children if c.type == "identifier"), "")
    return [(path, None)]


RULES = {
    "swift": LanguageRules(
        query=QUERY,
        names={
            "class_declaration": _declaration_name,
            "init_declaration": _init_name,
            "property_declaration": _property_name,
        },
        kinds={"declaration": _declaration_kind, "var": constant_or_variable},
        imports=_imports,
        noise=frozenset({"self", "Self", "String", "Int", "Bool", "Double", "Void"}),
    ),
}
