"""C, C++ and C#: functions (named through their declarators), types, namespaces, includes, calls."""

from __future__ import annotations

from tree_sitter import Node

from .base import LanguageRules, Named, constant_only, text, unquote

C_QUERY = """
(function_definition) @def.function
(declaration declarator: (function_declarator)) @def.function
(struct_specifier name: (_) body: (_)) @def.struct
(union_specifier name: (_) body: (_)) @def.struct
(enum_specifier name: (_) body: (_)) @def.enum
(type_definition) @def.type
(preproc_def) @def.constant
(preproc_function_def) @def.function
(call_expression function: (identifier) @call)
(call_expression function: (field_expression field: (field_identifier) @call))
(field_expression field: (field_identifier) @ref)
(type_identifier) @ref
(identifier) @name
(preproc_include) @import
"""

CPP_QUERY = (
    C_QUERY
    + """
(field_declaration declarator: (function_declarator)) @def.method
(class_specifier name: (_) body: (_)) @def.class
(namespace_definition name: (_)) @def.module
(alias_declaration) @def.type
(concept_definition) @def.type
(template_declaration) @wrapper
(call_expression function: (qualified_identifier name: (identifier) @call))
(call_expression function: (template_function name: (identifier) @call))
(call_expression function: (qualified_identifier name: (template_function name: (identifier) @call)))
(call_expression function: (field_expression field: (template_method name: (field_identifier) @call)))
(new_expression type: (type_identifier) @call)
(namespace_identifier) @ref
"""
)

CSHARP_QUERY = """
(class_declaration) @def.class
(record_declaration) @def.class
(interface_declaration) @def.interface
(struct_declaration) @def.struct
(enum_declaration) @def.enum
(delegate_declaration) @def.type
(method_declaration) @def.method
(constructor_declaration) @def.method
(local_function_statement) @def.function
(property_declaration) @def.variable
(namespace_declaration) @def.module
(file_scoped_namespace_declaration) @def.module
(field_declaration (variable_declaration (variable_declarator) @def.field))
(invocation_expression function: (identifier) @call)
(invocation_expression function: (generic_name . (identifier) @call))
(invocation_expression function: (member_access_expression name: (identifier) @call))
(invocation_expression function: (member_access_expression name: (generic_name . (identifier) @call)))
(object_creation_expression type: (identifier) @call)
(object_creation_expression type: (generic_name . (identifier) @call))
(member_access_expression name: (identifier) @ref)
(identifier) @name
(using_directive) @import
"""

# Declarator wrappers between a function definition and its name.
_DECLARATORS = frozenset({
    "function_declarator", "pointer_declarator", "reference_declarator", "array_declarator",
    "parenthesized_declarator", "attributed_declarator", "init_declarator",
})  # fmt: skip


def _declarator_name(node: Node) -> list[Named]:
    """The name inside nested declarators; `A::B::f` gives f, contained by A.B."""
    current = _innermost(node.child_by_field_name("declarator"))
    if current is None:
        return []
    scopes: list[str] = []
    while current.type == "qualified_identifier":
        scope = current.child_by_field_name("scope")
        if scope is not None and text(scope):
            scopes.append(text(scope))
        name = current.child_by_field_name("name")
        if name is None:
            break
        current = name
    if current.type == "template_function":
        current = current.child_by_field_name("name") or current
    return [(current, ".".join(scopes) or None, None)]


def _type_definition(node: Node) -> list[Named]:
    # `typedef struct x {...} x_t, *x_p;` names x_t and x_p.
    names = []
    for declarator in node.children_by_field_name("declarator"):
        name = _innermost(declarator)
        if name is not None:
            names.append((name, None, None))
    return names


def _innermost(node: Node | None) -> Node | None:
    """Unwrap pointer, array, function and parenthesized declarators down to the declared name."""
    current = node
    while current is not None and current.type in _DECLARATORS:
        inner = current.child_by_field_name("declarator")
        if inner is None:  # parenthesized_declarator has no field
            inner = current.named_children[0] if current.named_children else None
        current = inner
    return current


def _c_includes(node: Node) -> list[tuple[str, str | None]]:
    return [(unquote(text(node.child_by_field_name("path"))), None)]


def _csharp_field(node: Node, name: str) -> str | None:
    """UPPER_CASE fields and `const` fields are constants; other fields are not definitions here."""
    declaration = node.parent.parent if node.parent is not None else None
    modifiers = (
        [text(c) for c in declaration.children if c.type == "modifier"] if declaration is not None else []
    )
    return "constant" if "const" in modifiers else constant_only(node, name)


def _csharp_field_name(node: Node) -> list[Named]:
    return [
        (
            node.child_by_field_name("name") or (node.named_children[0] if node.named_children else None),
            None,
            None,
        )
    ]


def _csharp_using(node: Node) -> list[tuple[str, str | None]]:
    for child in node.named_children:
        if child.type in ("qualified_name", "identifier") and node.child_by_field_name("name") is not child:
            return [(text(child), None)]
    return []


_C_NAMES = {
    "function_definition": _declarator_name,
    "declaration": _declarator_name,
    "field_declaration": _declarator_name,
    "type_definition": _type_definition,
}
_C_NOISE = frozenset({"NULL", "size_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t", "int32_t", "int64_t"})

RULES = {
    "c": LanguageRules(query=C_QUERY, names=_C_NAMES, imports=_c_includes, noise=_C_NOISE, salvage=False),
    "cpp": LanguageRules(
        query=CPP_QUERY,
        names=_C_NAMES,
        imports=_c_includes,
        noise=_C_NOISE | {"std", "string"},
        qualified_methods=True,
        salvage=False,
    ),
    "csharp": LanguageRules(
        query=CSHARP_QUERY,
        names={"variable_declarator": _csharp_field_name},
        kinds={"field": _csharp_field},
        imports=_csharp_using,
        noise=frozenset({"var", "string", "String", "Task", "nameof"}),
        open_scopes=frozenset({"file_scoped_namespace_declaration"}),
    ),
}
