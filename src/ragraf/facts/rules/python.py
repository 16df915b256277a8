"""Python: functions, classes, methods, module constants and variables, imports, calls."""

from __future__ import annotations

from tree_sitter import Node

from .base import LanguageRules, constant_only, constant_or_variable, text

# What an assignment defines names in: `A = ...`, and each name of `A, B = ...`, `(A, B) = ...`
# and `[A, *B] = ...`.
_TARGETS = "[(identifier) (pattern_list) (tuple_pattern) (list_pattern)]"
_PATTERNS = frozenset({"pattern_list", "tuple_pattern", "list_pattern", "list_splat_pattern"})

# Bare identifiers (@name) only where a global name is commonly used: capturing every
# identifier costs a third more time and yields mostly locals, which are filtered out anyway.
QUERY = rf"""
(function_definition) @def.function
(decorated_definition) @wrapper
(class_definition) @def.class
(module (assignment left: {_TARGETS}) @def.var)
(class_definition body: (block (assignment left: {_TARGETS}) @def.classvar))
(if_statement consequence: (block (assignment left: {_TARGETS}) @def.blockvar))
(elif_clause consequence: (block (assignment left: {_TARGETS}) @def.blockvar))
(else_clause body: (block (assignment left: {_TARGETS}) @def.blockvar))
(try_statement body: (block (assignment left: {_TARGETS}) @def.blockvar))
(except_clause (block (assignment left: {_TARGETS}) @def.blockvar))
(finally_clause (block (assignment left: {_TARGETS}) @def.blockvar))
(with_statement body: (block (assignment left: {_TARGETS}) @def.blockvar))
(type_alias_statement) @def.type
(call function: (identifier) @call)
(call function: (attribute attribute: (identifier) @call))
(attribute attribute: (identifier) @ref)
(type (identifier) @ref)
(attribute object: (identifier) @name)
(argument_list (identifier) @name)
(keyword_argument value: (identifier) @name)
(assignment right: (identifier) @name)
(comparison_operator (identifier) @name)
(except_clause (identifier) @name)
(subscript value: (identifier) @name)
(tuple (identifier) @name)
(expression_list (identifier) @name)
(list (identifier) @name)
(pair value: (identifier) @name)
(binary_operator (identifier) @name)
(boolean_operator (identifier) @name)
(for_statement right: (identifier) @name)
(return_statement (identifier) @name)
(raise_statement (identifier) @name)
(decorator (identifier) @name)
(default_parameter value: (identifier) @name)
(import_statement) @import
(import_from_statement) @import
"""


def _assignment_name(node: Node) -> list:
    left = node.child_by_field_name("left")
    if left is None or left.type not in _PATTERNS:
        return [(left, None, None)]
    names, todo = [], [left]
    while todo:  # nested patterns, in source order; `obj.x, y = ...` defines only y here
        part = todo.pop()
        if part.type == "identifier":
            names.append((part, None, None))
        elif part.type in _PATTERNS:
            todo.extend(reversed(part.named_children))
    return names


# Statements whose blocks still run at the level they sit at: `if TYPE_CHECKING:`, `try:` /
# `except ImportError:`, `if sys.version_info >= ...:` and `with` define module (or class) names.
_TRANSPARENT = frozenset({
    "block", "if_statement", "elif_clause", "else_clause", "try_statement", "except_clause",
    "finally_clause", "with_statement",
})  # fmt: skip


def _block_assignment_kind(node: Node, name: str) -> str | None:
    """An assignment inside if/try/with blocks counts where those blocks sit: module or class level."""
    parent = node.parent
    while parent is not None and parent.type in _TRANSPARENT:
        parent = parent.parent
    if parent is None:
        return None
    if parent.type == "module":
        return constant_or_variable(node, name)
    if parent.type == "class_definition":
        return constant_only(node, name)
    return None


def _type_alias_name(node: Node) -> list:
    left = node.child_by_field_name("left")
    # `type X[T] = ...`: the name is the first identifier of the generic type.
    while left is not None and left.type != "identifier" and left.named_child_count:
        left = left.named_children[0]
    return [(left, None, None)] if left is not None else []


def _imports(node: Node) -> list[tuple[str, str | None]]:
    if node.type == "import_statement":
        return [(_dotted(child), None) for child in node.children_by_field_name("name")]
    module = text(node.child_by_field_name("module_name"))
    names = [_dotted(child) for child in node.children_by_field_name("name")]
    return [(module, name) for name in names] or [(module, None)]


def _dotted(node: Node) -> str:
    # `import a.b as c` -> "a.b": the alias is local, the module is what the code depends on.
    if node.type == "aliased_import":
        return text(node.child_by_field_name("name"))
    return text(node)


RULES = {
    "python": LanguageRules(
        query=QUERY,
        names={"assignment": _assignment_name, "type_alias_statement": _type_alias_name},
        kinds={"var": constant_or_variable, "classvar": constant_only, "blockvar": _block_assignment_kind},
        imports=_imports,
        noise=frozenset({"self", "cls"}),
    ),
}
