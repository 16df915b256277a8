"""Ruby, PHP, Lua and Bash: functions, classes, modules, methods, requires, calls."""

from __future__ import annotations

from tree_sitter import Node

from .base import CLASS_LIKE, LanguageRules, Named, constant_only, text, unquote

RUBY_QUERY = """
(class) @def.class
(module) @def.module
(singleton_class) @scope
(method) @def.function
(singleton_method) @def.method
(assignment left: (constant)) @def.constant
(call method: (identifier) @call)
(call method: (constant) @call)
(scope_resolution name: (constant) @ref)
(constant) @ref
(identifier) @name
((call method: (identifier) @_require arguments: (argument_list . (string)))
  (#any-of? @_require "require" "require_relative" "load" "autoload")) @import
"""

PHP_QUERY = """
(function_definition) @def.function
(class_declaration) @def.class
(interface_declaration) @def.interface
(trait_declaration) @def.trait
(enum_declaration) @def.enum
(method_declaration) @def.method
(namespace_definition) @def.module
(const_element) @def.constant
(function_call_expression function: (name) @call)
(function_call_expression function: (qualified_name (name) @call .))
(member_call_expression name: (name) @call)
(nullsafe_member_call_expression name: (name) @call)
(scoped_call_expression name: (name) @call)
(object_creation_expression (name) @call)
(object_creation_expression (qualified_name (name) @call .))
(member_access_expression name: (name) @ref)
(named_type (name) @ref)
(name) @name
(namespace_use_declaration) @import
(require_expression) @import
(require_once_expression) @import
(include_expression) @import
(include_once_expression) @import
"""

LUA_QUERY = """
(function_declaration) @def.function
(assignment_statement
  (variable_list . name: [(identifier) (dot_index_expression)])
  (expression_list . value: (function_definition))) @def.function
(function_call name: (identifier) @call)
(function_call name: (dot_index_expression field: (identifier) @call))
(function_call name: (method_index_expression method: (identifier) @call))
(dot_index_expression field: (identifier) @ref)
(identifier) @name
((function_call name: (identifier) @_require arguments: (arguments . (string)))
  (#eq? @_require "require")) @import
"""

BASH_QUERY = """
(function_definition) @def.function
(command name: (command_name (word) @call))
((command name: (command_name (word) @_source) argument: (_))
  (#any-of? @_source "source" ".")) @import
"""


def _ruby_name(node: Node) -> list[Named]:
    """`class A::B` is B contained by A; `def self.x` is x."""
    name = node.child_by_field_name("name")
    if name is not None and name.type == "scope_resolution":
        scope = name.child_by_field_name("scope")
        return [(name.child_by_field_name("name"), text(scope) or None, None)]
    return [(name, None, None)]


def _ruby_constant(node: Node) -> list[Named]:
    return [(node.child_by_field_name("left"), None, None)]


def _ruby_require(node: Node) -> list[tuple[str, str | None]]:
    arguments = node.child_by_field_name("arguments")
    first = arguments.named_children[0] if arguments is not None and arguments.named_children else None
    return [(unquote(text(first)), None)]


def _php_const(node: Node) -> list[Named]:
    return [(next((c for c in node.named_children if c.type == "name"), None), None, None)]


def _php_imports(node: Node) -> list[tuple[str, str | None]]:
    if node.type != "namespace_use_declaration":
        strings = [c for c in node.named_children if c.type in ("string", "encapsed_string")]
        return [(unquote(text(strings[0])), None)] if strings else []
    prefix = next((text(c) for c in node.named_children if c.type == "namespace_name"), "")
    out: list[tuple[str, str | None]] = []
    for clause in _use_clauses(node):
        path = next((text(c) for c in clause.named_children if c.type in ("qualified_name", "name")), "")
        full = f"{prefix}\\{path}" if prefix else path
        module, _, name = full.rpartition("\\")
        out.append((module, name) if module else (full, None))
    return out


def _use_clauses(node: Node) -> list[Node]:
    found = []
    for child in node.named_children:
        if child.type == "namespace_use_clause":
            found.append(child)
        elif child.type == "namespace_use_group":
            found.extend(c for c in child.named_children if c.type == "namespace_use_clause")
    return found


def _lua_name(node: Node) -> list[Named]:
    """`function M.f` is f in M; `function M:f` is the method f of M."""
    name = node.child_by_field_name("name")
    if name is None and node.type == "assignment_statement":
        variables = node.named_children[0] if node.named_children else None
        name = variables.child_by_field_name("name") if variables is not None else None
    if name is None:
        return []
    if name.type == "dot_index_expression":
        return [(name.child_by_field_name("field"), text(name.child_by_field_name("table")) or None, None)]
    if name.type == "method_index_expression":
        return [
            (name.child_by_field_name("method"), text(name.child_by_field_name("table")) or None, "method")
        ]
    return [(name, None, None)]


def _lua_require(node: Node) -> list[tuple[str, str | None]]:
    arguments = node.child_by_field_name("arguments")
    first = arguments.named_children[0] if arguments is not None and arguments.named_children else None
    return [(unquote(text(first)), None)]


def _bash_source(node: Node) -> list[tuple[str, str | None]]:
    argument = node.child_by_field_name("argument")
    return [(unquote(text(argument)), None)]


RULES = {
    "ruby": LanguageRules(
        query=RUBY_QUERY,
        names={
            "class": _ruby_name,
            "module": _ruby_name,
            "method": _ruby_name,
            "singleton_method": _ruby_name,
            "assignment": _ruby_constant,
        },
        kinds={"constant": constant_only},
        imports=_ruby_require,
        noise=frozenset(
            {"require", "require_relative", "attr_reader", "attr_accessor", "attr_writer", "new"}
        ),
        # Ruby modules hold methods as classes do (mixins).
        method_scopes=CLASS_LIKE | {"module"},
    ),
    "php": LanguageRules(
        query=PHP_QUERY,
        names={"const_element": _php_const},
        imports=_php_imports,
        noise=frozenset({"this", "self", "parent", "static", "null", "true", "false"}),
        open_scopes=frozenset({"namespace_definition"}),
    ),
    "lua": LanguageRules(
        query=LUA_QUERY,
        names={"function_declaration": _lua_name, "assignment_statement": _lua_name},
        imports=_lua_require,
        noise=frozenset({"self", "require"}),
    ),
    "bash": LanguageRules(query=BASH_QUERY, imports=_bash_source),
}
