"""Zig: functions, container declarations (`const S = struct {...}`), constants, @import."""

from __future__ import annotations

from tree_sitter import Node

from .base import LanguageRules, Named, descendants, text, unquote

QUERY = """
(Decl (FnProto)) @def.function
(Decl (VarDecl)) @def.zigvar
(SuffixExpr (IDENTIFIER) @call . (FnCallArguments))
(FieldOrFnCall function_call: (IDENTIFIER) @call)
(FieldOrFnCall field_access: (IDENTIFIER) @ref)
(IDENTIFIER) @name
((SuffixExpr (BUILTINIDENTIFIER) @_import (FnCallArguments)) (#eq? @_import "@import")) @import
"""

_CONTAINER_KINDS = {"struct": "struct", "enum": "enum", "union": "struct", "opaque": "struct"}


def _decl_name(node: Node) -> list[Named]:
    for child in node.named_children:
        if child.type == "FnProto":
            return [(child.child_by_field_name("function"), None, None)]
        if child.type == "VarDecl":
            return [(child.child_by_field_name("variable_type_function"), None, None)]
    return []


def _var_kind(node: Node, name: str) -> str | None:
    declaration = next((c for c in node.named_children if c.type == "VarDecl"), None)
    if declaration is None:
        return None
    value = _container_of(declaration)
    if value is not None:
        for child in value.named_children:
            if child.type == "ContainerDeclType":
                keyword = text(child).split("(")[0].strip()
                return _CONTAINER_KINDS.get(keyword, "struct")
    is_const = any(c.type == "const" for c in declaration.children)
    return "constant" if is_const else "variable"


def _container_of(declaration: Node) -> Node | None:
    """The `struct {...}` that is a declaration's whole value (`const S = struct {...}`)."""
    for value in declaration.named_children:
        if value.type != "ErrorUnionExpr":
            continue
        for suffix in value.named_children:
            if suffix.type == "SuffixExpr":
                for inner in suffix.named_children:
                    if inner.type == "ContainerDecl":
                        return inner
    return None


def _imports(node: Node) -> list[tuple[str, str | None]]:
    arguments = next((c for c in node.named_children if c.type == "FnCallArguments"), None)
    strings = descendants(arguments, frozenset({"STRINGLITERALSINGLE"})) if arguments is not None else []
    return [(unquote(text(strings[0])), None)] if strings else []


RULES = {
    "zig": LanguageRules(
        query=QUERY,
        names={"Decl": _decl_name},
        kinds={"zigvar": _var_kind},
        imports=_imports,
        noise=frozenset({"self", "std"}),
    ),
}
