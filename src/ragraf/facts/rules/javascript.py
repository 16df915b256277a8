"""JavaScript, TypeScript and TSX: functions, classes, methods, function-valued variables, types."""

from __future__ import annotations

from tree_sitter import Node

from .base import LanguageRules, Named, constant_or_variable, text, unquote

_FUNCTION_VALUES = "[(arrow_function) (function_expression) (generator_function)]"

# Bare identifiers (@name) only where a global name is commonly used: every identifier would
# cost a fifth more time and yield mostly locals, which are filtered out anyway.
_BASE_QUERY = f"""
(function_declaration) @def.function
(generator_function_declaration) @def.function
(class_declaration) @def.class
(method_definition) @def.method
(variable_declarator name: (identifier) value: {_FUNCTION_VALUES}) @def.function
(variable_declarator name: (identifier) value: (class)) @def.class
(assignment_expression
  left: (member_expression property: (property_identifier))
  right: {_FUNCTION_VALUES}) @def.function
(pair key: (property_identifier) value: {_FUNCTION_VALUES}) @def.method
(program (lexical_declaration (variable_declarator name: (identifier)) @def.var))
(program (variable_declaration (variable_declarator name: (identifier)) @def.var))
(program (export_statement (lexical_declaration (variable_declarator name: (identifier)) @def.var)))
(program (export_statement (variable_declaration (variable_declarator name: (identifier)) @def.var)))
(call_expression function: (identifier) @call)
(call_expression function: (member_expression property: (_) @call))
(new_expression constructor: (identifier) @call)
(new_expression constructor: (member_expression property: (_) @call))
(member_expression property: (property_identifier) @ref)
(member_expression object: (identifier) @name)
(subscript_expression object: (identifier) @name)
(arguments (identifier) @name)
(assignment_expression right: (identifier) @name)
(variable_declarator value: (identifier) @name)
(return_statement (identifier) @name)
(binary_expression (identifier) @name)
(ternary_expression (identifier) @name)
(array (identifier) @name)
(pair value: (identifier) @name)
(spread_element (identifier) @name)
(template_substitution (identifier) @name)
(import_statement) @import
(export_statement source: (string)) @import
(call_expression function: (identifier) @_require (#eq? @_require "require")
  arguments: (arguments . (string))) @import
(call_expression function: (import) arguments: (arguments . (string))) @import
"""

# JSX components are references to the functions and classes that define them.
_JSX_QUERY = """
(jsx_opening_element name: (identifier) @name)
(jsx_self_closing_element name: (identifier) @name)
(jsx_expression (identifier) @name)
"""

# A class field holding a function (`handle = (e) => {}`) is a method of the class.
JS_QUERY = (
    _BASE_QUERY
    + _JSX_QUERY
    + f"""
(class_heritage (identifier) @name)
(field_definition property: (property_identifier) value: {_FUNCTION_VALUES}) @def.method
"""
)

# `declare const X: T` (type declarations, .d.ts files) and `export const` inside a namespace
# define values as much as a top-level `const` does.
_TS_DECLARED_VALUES = """
(program (ambient_declaration [(lexical_declaration (variable_declarator name: (identifier)) @def.var)
                               (variable_declaration (variable_declarator name: (identifier)) @def.var)]))
(program (export_statement (ambient_declaration
  [(lexical_declaration (variable_declarator name: (identifier)) @def.var)
   (variable_declaration (variable_declarator name: (identifier)) @def.var)])))
(internal_module body: (statement_block (export_statement
  (lexical_declaration (variable_declarator name: (identifier)) @def.var))))
"""

TS_QUERY = (
    _BASE_QUERY
    + f"""
(extends_clause value: (identifier) @name)
(abstract_class_declaration) @def.class
(interface_declaration) @def.interface
(type_alias_declaration) @def.type
(enum_declaration) @def.enum
(internal_module) @def.module
(method_signature) @def.method
(abstract_method_signature) @def.method
(function_signature) @def.function
(public_field_definition name: (property_identifier) value: {_FUNCTION_VALUES}) @def.method
(type_identifier) @ref
"""
    + _TS_DECLARED_VALUES
)


def _declarator_or_assignment(node: Node) -> list[Named]:
    """`Legacy.prototype.greet = function` is the method greet of Legacy; `a.b = function` is b."""
    if node.type == "assignment_expression":
        left = node.child_by_field_name("left")
        if left is None:
            return []
        owner = left.child_by_field_name("object")
        if owner is not None and owner.type == "member_expression" and _is_prototype(owner):
            return [
                (left.child_by_field_name("property"), text(owner.child_by_field_name("object")), "method")
            ]
        return [(left.child_by_field_name("property"), None, None)]
    return [(node.child_by_field_name("name"), None, None)]


def _is_prototype(node: Node) -> bool:
    prop = node.child_by_field_name("property")
    return text(prop) == "prototype" and node.child_by_field_name("object") is not None


def _key(node: Node) -> list[Named]:
    # `post: function () {}` is found as the shorthand `post() {}` is; not in an object passed to
    # a call (`Object.defineProperty(exports, "X", {get: function () {…}})`), which defines nothing.
    holder = node.parent.parent if node.parent is not None else None
    if holder is not None and holder.type == "arguments":
        return []
    return [(node.child_by_field_name("key"), None, None)]


def _field(node: Node) -> list[Named]:
    return [(node.child_by_field_name("property"), None, None)]


def _var_kind(node: Node, name: str) -> str | None:
    # Function- and class-valued declarators are captured as such; only plain values count here.
    value = node.child_by_field_name("value")
    if value is not None and value.type in (
        "arrow_function",
        "function_expression",
        "generator_function",
        "class",
    ):
        return None
    return constant_or_variable(node, name)


def _imports(node: Node) -> list[tuple[str, str | None]]:
    if node.type == "call_expression":
        arguments = node.child_by_field_name("arguments")
        first = arguments.named_children[0] if arguments is not None and arguments.named_children else None
        return [(unquote(text(first)), None)]
    module = unquote(text(node.child_by_field_name("source")))
    names = [text(n) for n in _imported_names(node)]
    return [(module, name) for name in names] or [(module, None)]


def _imported_names(node: Node) -> list[Node]:
    """The imported (not the local alias) names of an import or re-export clause."""
    found: list[Node] = []
    for clause in node.named_children:
        if clause.type in ("import_clause", "export_clause"):
            for child in clause.named_children:
                if child.type == "identifier":  # default import
                    found.append(child)
                elif child.type in ("named_imports", "export_clause"):
                    found.extend(_specifier_names(child))
                elif child.type in ("import_specifier", "export_specifier"):
                    found.extend(_specifier_names(clause))
                    break
    return found


def _specifier_names(node: Node) -> list[Node]:
    names = []
    for spec in node.named_children:
        name = spec.child_by_field_name("name")
        if name is not None:
            names.append(name)
    return names


def _rules(query: str) -> LanguageRules:
    return LanguageRules(
        query=query,
        names={
            "variable_declarator": _declarator_or_assignment,
            "assignment_expression": _declarator_or_assignment,
            "pair": _key,
            "field_definition": _field,
        },
        kinds={"var": _var_kind},
        imports=_imports,
        noise=frozenset({"undefined", "require", "exports", "module"}),
    )


RULES = {
    "javascript": _rules(JS_QUERY),
    "typescript": _rules(TS_QUERY),
    "tsx": _rules(TS_QUERY + _JSX_QUERY),
}
