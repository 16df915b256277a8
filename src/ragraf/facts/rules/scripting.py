"""Ruby, PHP, Lua and Bash: functions, classes, modules, methods, constants and globals, requires, calls."""

from __future__ import annotations

from tree_sitter import Node

from .base import CLASS_LIKE, LanguageRules, Named, constant_only, constant_or_variable, text, unquote

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
((function_call_expression function: (name) @_define
  arguments: (arguments . (argument [(string (string_content)) (encapsed_string (string_content))])))
  (#eq? @_define "define")) @def.constant
(property_element) @def.variable
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
(chunk (assignment_statement (variable_list . name: (identifier))) @def.var)
(chunk (variable_declaration (assignment_statement) @def.var))
(chunk (variable_declaration (variable_list) @def.var))
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
(program (variable_assignment) @def.var)
(program (declaration_command (variable_assignment) @def.var))
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


def _php_define(node: Node) -> list[Named]:
    """`define("X", 1)` defines X."""
    arguments = node.child_by_field_name("arguments")
    first = arguments.named_children[0] if arguments is not None and arguments.named_children else None
    strings = first.named_children if first is not None else []
    contents = strings[0].named_children if strings else []
    return [(contents[0], None, None)] if contents and contents[0].type == "string_content" else []


def _php_property(node: Node) -> list[Named]:
    """`public static $count` defines count, the name `$this->count` and `self::$count` use."""
    variable = node.child_by_field_name("name")
    names = [c for c in variable.named_children if c.type == "name"] if variable is not None else []
    return [(names[0], None, None)] if names else []


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
    """`function M.f` is f in M; `function M:f` is the method f of M; `local a, b = 1, 2` is a and b."""
    if node.type == "variable_list":
        return _lua_variables(node)
    name = node.child_by_field_name("name")
    if node.type == "assignment_statement":
        variables = node.named_children[0] if node.named_children else None
        if variables is not None and not _assigns_function(node):
            return _lua_variables(variables)
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


def _lua_variables(variables: Node) -> list[Named]:
    return [
        (name, None, None) for name in variables.children_by_field_name("name") if name.type == "identifier"
    ]


def _assigns_function(node: Node) -> bool:
    values = next((c for c in node.named_children if c.type == "expression_list"), None)
    first = values.child_by_field_name("value") if values is not None else None
    return first is not None and first.type == "function_definition"


def _lua_variable(node: Node, name: str) -> str | None:
    # `local f = function() end` is captured as a function as well.
    if node.type == "assignment_statement" and _assigns_function(node):
        return None
    return constant_or_variable(node, name)


def _bash_variable(node: Node, name: str) -> str | None:
    """`readonly X=1` and `declare -r X=1` are constants; other top-level assignments variables.

    Shell scripts write globals and environment variables in UPPER_CASE, so case says nothing.
    """
    command = node.parent
    if command is not None and command.type == "declaration_command":
        words = [text(c) for c in command.children if c.type != "variable_assignment"]
        if "readonly" in words or any(w.startswith("-") and "r" in w for w in words):
            return "constant"
    return "variable"


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
        names={
            "const_element": _php_const,
            "function_call_expression": _php_define,
            "property_element": _php_property,
        },
        imports=_php_imports,
        noise=frozenset({"this", "self", "parent", "static", "null", "true", "false"}),
        open_scopes=frozenset({"namespace_definition"}),
    ),
    "lua": LanguageRules(
        query=LUA_QUERY,
        names={
            "function_declaration": _lua_name,
            "assignment_statement": _lua_name,
            "variable_list": _lua_name,
        },
        kinds={"var": _lua_variable},
        imports=_lua_require,
        noise=frozenset({"self", "require"}),
    ),
    "bash": LanguageRules(query=BASH_QUERY, kinds={"var": _bash_variable}, imports=_bash_source),
}
