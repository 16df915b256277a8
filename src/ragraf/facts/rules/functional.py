"""Elixir and Haskell: modules, functions (clauses merged), module attributes, types, classes, imports, calls."""

from __future__ import annotations

from tree_sitter import Node

from .base import LanguageRules, Named, itself, text

_ELIXIR_MODULES = ("defmodule", "defprotocol", "defimpl")
_ELIXIR_DEFS = '"def" "defp" "defmacro" "defmacrop" "defguard" "defguardp" "defdelegate" "defn" "defnp"'

ELIXIR_QUERY = f"""
((call target: (identifier) @_def (arguments)) (#any-of? @_def {_ELIXIR_DEFS})) @def.function
((call target: (identifier) @_mod (arguments)) (#any-of? @_mod "defmodule" "defprotocol" "defimpl")) @def.module
((call target: (identifier) @_mod
  (do_block (unary_operator operator: "@" operand: (call target: (identifier) (arguments))) @def.attribute))
  (#any-of? @_mod "defmodule" "defprotocol" "defimpl"))
(call target: (identifier) @call)
(call target: (dot right: (identifier) @call))
(alias) @ref
(identifier) @name
((call target: (identifier) @_use (arguments . (alias)))
  (#any-of? @_use "import" "alias" "require" "use")) @import
"""

HASKELL_QUERY = """
(header module: (module) @def.module)
(function name: (variable)) @def.function
(signature name: (variable)) @def.function
(declarations (bind name: (variable)) @def.function)
(data_type) @def.type
(newtype) @def.type
(type_synomym) @def.type
(type_family) @def.type
(class) @def.class
(instance) @scope
(apply function: (variable) @call)
(apply function: (qualified id: (variable) @call))
(constructor) @ref
(name) @ref
(variable) @name
(import) @import
"""

# Macros that read like calls in the tree but are definitions, imports or keywords.
_ELIXIR_NOISE = frozenset({
    "def", "defp", "defmacro", "defmacrop", "defguard", "defguardp", "defdelegate", "defmodule",
    "defprotocol", "defimpl", "defstruct", "defexception", "import", "alias", "require", "use",
    "when", "do", "end", "fn", "quote", "unquote",
})  # fmt: skip


# Module attributes the language reads (docs, specs, behaviours): no constant of the module.
_ELIXIR_RESERVED_ATTRIBUTES = frozenset({
    "moduledoc", "doc", "typedoc", "spec", "type", "typep", "opaque", "callback", "macrocallback",
    "optional_callbacks", "impl", "behaviour", "derive", "enforce_keys", "compile", "deprecated",
    "dialyzer", "external_resource", "file", "on_load", "on_definition", "before_compile",
    "after_compile", "after_verify", "vsn", "since", "nifs",
})  # fmt: skip


def _elixir_attribute_name(node: Node) -> list[Named]:
    """`@timeout 5000` defines timeout."""
    operand = node.child_by_field_name("operand")
    return [(operand.child_by_field_name("target") if operand is not None else None, None, None)]


def _elixir_attribute(node: Node, name: str) -> str | None:
    """A module attribute the module sets for itself is a compile-time constant."""
    return None if name in _ELIXIR_RESERVED_ATTRIBUTES else "constant"


def _elixir_def_name(node: Node) -> list[Named]:
    """`defmodule A.B` -> A.B; `def name(args) when guard` -> name; `def name, do:` -> name."""
    arguments = next((c for c in node.named_children if c.type == "arguments"), None)
    if arguments is None or not arguments.named_children:
        return []
    head = arguments.named_children[0]
    if text(node.child_by_field_name("target")) in _ELIXIR_MODULES:
        return [(head, None, None)]
    if head.type == "binary_operator":  # a guard: `name(x) when is_integer(x)`
        head = head.child_by_field_name("left") or head
    if head.type == "call":
        head = head.child_by_field_name("target") or head
    return [(head, None, None)] if head.type in ("identifier", "alias", "operator_identifier") else []


def _elixir_imports(node: Node) -> list[tuple[str, str | None]]:
    arguments = next((c for c in node.named_children if c.type == "arguments"), None)
    if arguments is None or not arguments.named_children:
        return []
    return [(text(arguments.named_children[0]), None)]


def _haskell_instance(node: Node) -> list[Named]:
    # Instance methods are contained by the class they implement: `instance Show T` -> Show.
    return [(node.child_by_field_name("name"), None, None)]


def _haskell_imports(node: Node) -> list[tuple[str, str | None]]:
    module = text(node.child_by_field_name("module"))
    names = node.child_by_field_name("names")
    if names is None:
        return [(module, None)]
    found = []
    for item in names.named_children:
        name = item.named_children[0] if item.named_children else item
        found.append((module, text(name)))
    return found or [(module, None)]


RULES = {
    "elixir": LanguageRules(
        query=ELIXIR_QUERY,
        names={"call": _elixir_def_name, "unary_operator": _elixir_attribute_name},
        kinds={"attribute": _elixir_attribute},
        imports=_elixir_imports,
        noise=_ELIXIR_NOISE,
        merge_clauses=True,
    ),
    "haskell": LanguageRules(
        query=HASKELL_QUERY,
        names={"module": itself, "instance": _haskell_instance},
        imports=_haskell_imports,
        merge_clauses=True,
    ),
}
