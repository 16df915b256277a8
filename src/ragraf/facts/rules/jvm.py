"""Java, Kotlin and Scala: classes, interfaces, enums, objects, methods, constructors, imports."""

from __future__ import annotations

from tree_sitter import Node

from .base import LanguageRules, Named, constant_only, constant_or_variable, first_child, text

JAVA_QUERY = """
(class_declaration) @def.class
(record_declaration) @def.class
(interface_declaration) @def.interface
(annotation_type_declaration) @def.interface
(enum_declaration) @def.enum
(method_declaration) @def.method
(constructor_declaration) @def.method
(compact_constructor_declaration) @def.method
(field_declaration declarator: (variable_declarator) @def.field)
(constant_declaration declarator: (variable_declarator) @def.constant)
(method_invocation name: (identifier) @call)
(object_creation_expression type: (type_identifier) @call)
(object_creation_expression type: (generic_type (type_identifier) @call))
(object_creation_expression type: (scoped_type_identifier (type_identifier) @call .))
(field_access field: (identifier) @ref)
(method_reference (identifier) @ref)
(type_identifier) @ref
(identifier) @name
(import_declaration) @import
"""

KOTLIN_QUERY = """
(class_declaration) @def.kclass
(object_declaration) @def.class
(function_declaration) @def.function
(secondary_constructor) @def.method
(type_alias) @def.type
(source_file (property_declaration) @def.var)
(class_body (property_declaration) @def.classvar)
(call_expression . (simple_identifier) @call)
(call_expression . (navigation_expression (navigation_suffix (simple_identifier) @call) .))
(navigation_suffix (simple_identifier) @ref)
(type_identifier) @ref
(simple_identifier) @name
(import_header) @import
"""

SCALA_QUERY = """
(class_definition) @def.class
(object_definition) @def.class
(trait_definition) @def.trait
(enum_definition) @def.enum
(function_definition) @def.function
(function_declaration) @def.function
(type_definition) @def.type
(compilation_unit (val_definition pattern: (identifier)) @def.var)
(template_body (val_definition pattern: (identifier)) @def.classvar)
(call_expression function: (identifier) @call)
(call_expression function: (field_expression field: (identifier) @call))
(call_expression function: (generic_function function: (identifier) @call))
(instance_expression (type_identifier) @call)
(field_expression field: (identifier) @ref)
(type_identifier) @ref
(identifier) @name
(import_declaration) @import
"""


def _java_field(node: Node, name: str) -> str | None:
    return constant_only(node, name)


def _java_imports(node: Node) -> list[tuple[str, str | None]]:
    path = next((text(c) for c in node.named_children if c.type in ("scoped_identifier", "identifier")), "")
    if any(c.type == "asterisk" for c in node.named_children):
        return [(path, None)]
    module, _, name = path.rpartition(".")
    return [(module, name)] if module else [(path, None)]


def _kotlin_class_kind(node: Node, name: str) -> str | None:
    """`class_declaration` covers classes, interfaces and enum classes in the Kotlin grammar."""
    for child in node.children:
        if child.type == "interface":
            return "interface"
        if child.type == "enum_class_body" or (child.type == "modifiers" and "enum" in text(child).split()):
            return "enum"
    return "class"


def _kotlin_property(node: Node) -> list[Named]:
    for child in node.named_children:
        if child.type == "variable_declaration":
            return first_child("simple_identifier")(child)
    return []


def _kotlin_constructor(node: Node) -> list[Named]:
    # A secondary constructor has no name node; the `constructor` keyword stands for it.
    return [(child, None, None) for child in node.children if child.type == "constructor"][:1]


def _kotlin_var(node: Node, name: str) -> str | None:
    if any(c.type == "modifiers" and "const" in text(c).split() for c in node.children):
        return "constant"
    return constant_or_variable(node, name)


def _kotlin_classvar(node: Node, name: str) -> str | None:
    if any(c.type == "modifiers" and "const" in text(c).split() for c in node.children):
        return "constant"
    return constant_only(node, name)


def _kotlin_imports(node: Node) -> list[tuple[str, str | None]]:
    path = next((text(c) for c in node.named_children if c.type == "identifier"), "")
    if any(c.type == "wildcard_import" for c in node.named_children):
        return [(path, None)]
    module, _, name = path.rpartition(".")
    return [(module, name)] if module else [(path, None)]


def _scala_val(node: Node) -> list[Named]:
    return [(node.child_by_field_name("pattern"), None, None)]


def _scala_val_kind(node: Node, name: str) -> str | None:
    """Scala spells constants in UpperCamelCase (`val Max = 3`); other top-level vals are variables."""
    return "constant" if name[:1].isupper() else "variable"


def _scala_member_kind(node: Node, name: str) -> str | None:
    # As for Python and Kotlin class bodies: only constants, the rest would be noise.
    return "constant" if name[:1].isupper() else None


def _scala_imports(node: Node) -> list[tuple[str, str | None]]:
    path = ".".join(text(c) for c in node.children_by_field_name("path") if c.is_named)
    selectors = [c for c in node.named_children if c.type == "namespace_selectors"]
    if selectors:
        names = []
        for item in selectors[0].named_children:
            if item.type == "identifier":
                names.append(text(item))
            elif item.type in ("arrow_renamed_identifier", "as_renamed_identifier"):
                names.append(text(item.child_by_field_name("name")))
        return [(path, name) for name in names] or [(path, None)]
    if any(c.type == "namespace_wildcard" for c in node.named_children):
        return [(path, None)]
    module, _, name = path.rpartition(".")
    return [(module, name)] if module else [(path, None)]


_KOTLIN_NAME = first_child("simple_identifier", "type_identifier")

RULES = {
    "java": LanguageRules(
        query=JAVA_QUERY,
        kinds={"field": _java_field},
        imports=_java_imports,
        noise=frozenset({"String", "Object", "Override", "Integer", "Boolean", "Long"}),
    ),
    "kotlin": LanguageRules(
        query=KOTLIN_QUERY,
        names={
            "class_declaration": _KOTLIN_NAME,
            "object_declaration": _KOTLIN_NAME,
            "function_declaration": _KOTLIN_NAME,
            "type_alias": _KOTLIN_NAME,
            "property_declaration": _kotlin_property,
            "secondary_constructor": _kotlin_constructor,
        },
        kinds={"kclass": _kotlin_class_kind, "var": _kotlin_var, "classvar": _kotlin_classvar},
        imports=_kotlin_imports,
        noise=frozenset({"String", "Int", "Unit", "Any", "Boolean", "Long", "it"}),
    ),
    "scala": LanguageRules(
        query=SCALA_QUERY,
        names={"val_definition": _scala_val},
        kinds={"var": _scala_val_kind, "classvar": _scala_member_kind},
        imports=_scala_imports,
        noise=frozenset({"String", "Int", "Unit", "Any", "Boolean", "Long", "this"}),
    ),
}
