"""C, C++ and C#: functions (named through their declarators), types, namespaces, globals and fields,
includes, calls."""

from __future__ import annotations

from tree_sitter import Node

from .base import LanguageRules, Named, constant_or_variable, text, unquote

# Variables at file scope (also inside `#ifdef` blocks, C++ namespaces and `extern "C"`); the
# kind hook drops the ones a preprocessor block inside a function holds.
_VARIABLE_DECLARATORS = (
    "[(init_declarator) (identifier) (pointer_declarator) (array_declarator) (function_declarator)]"
)
_VARIABLE_SCOPES = (
    "translation_unit", "declaration_list", "preproc_ifdef", "preproc_if", "preproc_else", "preproc_elif",
)  # fmt: skip
_VARIABLES = "\n".join(
    f"({scope} (declaration declarator: {_VARIABLE_DECLARATORS} @def.var))" for scope in _VARIABLE_SCOPES
)

C_QUERY = f"""
(function_definition) @def.function
(declaration declarator: [(function_declarator) (pointer_declarator)]) @def.prototype
(struct_specifier name: (_) body: (_)) @def.struct
(union_specifier name: (_) body: (_)) @def.struct
(enum_specifier name: (_) body: (_)) @def.enum
(type_definition) @def.type
(preproc_def) @def.constant
(preproc_function_def) @def.function
{_VARIABLES}
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
(declaration declarator: (reference_declarator)) @def.prototype
(field_declaration declarator: [(function_declarator) (pointer_declarator) (reference_declarator)]) @def.member
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
    return [_unqualified(current)] if current is not None else []


def _variable_name(node: Node) -> list[Named]:
    current = _innermost(node)
    return [_unqualified(current)] if current is not None else []


def _unqualified(current: Node) -> Named:
    """`a::B<T>::f` is f contained by a.B: scopes joined with `.`, template arguments dropped, so an
    out-of-line definition gets the container of its in-class declaration."""
    scopes: list[str] = []
    while current.type == "qualified_identifier":
        scope = current.child_by_field_name("scope")
        if scope is not None and scope.type == "template_type":
            scope = scope.child_by_field_name("name")
        if scope is not None and text(scope):
            scopes.append(text(scope))
        name = current.child_by_field_name("name")
        if name is None:
            break
        current = name
    if current.type == "template_function":
        current = current.child_by_field_name("name") or current
    return current, ".".join(scopes) or None, None


def _namespace_name(node: Node) -> list[Named]:
    """`namespace a::b` is b contained by a, the container `a::b::f` gets."""
    name = node.child_by_field_name("name")
    if name is None or name.type != "nested_namespace_specifier":
        return [(name, None, None)]
    parts = [child for child in name.named_children if child.type == "namespace_identifier"]
    if not parts:
        return []
    return [(parts[-1], ".".join(text(part) for part in parts[:-1]) or None, None)]


def _prototype(node: Node, name: str) -> str | None:
    """A declaration of a function (`int f(void);`, `char *f(void);`), not of a function pointer."""
    return "function" if _declares_function(node.child_by_field_name("declarator")) else None


def _member(node: Node, name: str) -> str | None:
    """A method declared in a class (`Foo *get();`, `Foo &ref();`), not a function pointer field."""
    return "method" if _declares_function(node.child_by_field_name("declarator")) else None


def _c_variable(node: Node, name: str) -> str | None:
    """File-scope `const` and `constexpr` variables (and UPPER_CASE ones) are constants, other
    file-scope variables are variables; a prototype `char *f(void);` (a function, `_prototype`) and
    locals are neither."""
    declaration = node.parent
    if declaration is None or _declares_function(node) or not _at_file_scope(declaration):
        return None
    # Error recovery around macros and C++ in .h files makes up variables: `GLAPI void APIENTRY
    # f(...);` gives a declaration `GLAPI void` of a variable named void, and a C++ template the C
    # grammar cannot read leaves its body's locals at file scope. Only files that parse cleanly count.
    if declaration.has_error or name in _C_TYPE_WORDS or _root(declaration).has_error:
        return None
    qualifiers = {text(child) for child in declaration.children if child.type == "type_qualifier"}
    if not qualifiers & {"const", "constexpr"}:
        return constant_or_variable(node, name)
    pointer = node.child_by_field_name("declarator") if node.type == "init_declarator" else node
    if pointer is not None and pointer.type == "pointer_declarator":
        # `const char *names[]` points at constants; only `char *const p` is a constant pointer.
        own = {text(child) for child in pointer.children if child.type == "type_qualifier"}
        return "constant" if "const" in own else "variable"
    return "constant"


def _root(node: Node) -> Node:
    while node.parent is not None:
        node = node.parent
    return node


def _declares_function(node: Node | None) -> bool:
    # `int (*fp)(int)` is a variable: its function declarator wraps a parenthesized one.
    current = node
    while current is not None and current.type in _DECLARATORS:
        inner = current.child_by_field_name("declarator")
        if inner is None and current.type == "reference_declarator" and current.named_children:
            inner = current.named_children[0]
        if current.type == "function_declarator" and (
            inner is None or inner.type != "parenthesized_declarator"
        ):
            return True
        current = inner
    return False


def _at_file_scope(declaration: Node) -> bool:
    parent = declaration.parent
    while parent is not None and parent.type.startswith("preproc_"):
        parent = parent.parent
    return parent is not None and parent.type in ("translation_unit", "declaration_list")


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
    """`const` and `static readonly` fields are constants, other fields variables.

    C# spells constants in PascalCase like everything else, so an UPPER_CASE name (`A`) says nothing.
    """
    declaration = node.parent.parent if node.parent is not None else None
    modifiers = (
        {text(c) for c in declaration.children if c.type == "modifier"} if declaration is not None else set()
    )
    return "constant" if "const" in modifiers or {"static", "readonly"} <= modifiers else "variable"


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


# Words a macro-confused parse can read as a declared name.
_C_TYPE_WORDS = frozenset({
    "void", "char", "short", "int", "long", "float", "double", "signed", "unsigned", "bool", "_Bool",
    "const", "volatile", "static", "extern", "inline", "auto", "register",
})  # fmt: skip

_C_NAMES = {
    "function_definition": _declarator_name,
    "declaration": _declarator_name,
    "field_declaration": _declarator_name,
    "type_definition": _type_definition,
    "init_declarator": _variable_name,
    "identifier": _variable_name,
    "pointer_declarator": _variable_name,
    "array_declarator": _variable_name,
    "function_declarator": _variable_name,
}
_C_KINDS = {"var": _c_variable, "prototype": _prototype, "member": _member}
_C_NOISE = frozenset({"NULL", "size_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t", "int32_t", "int64_t"})

RULES = {
    "c": LanguageRules(
        query=C_QUERY, names=_C_NAMES, kinds=_C_KINDS, imports=_c_includes, noise=_C_NOISE, salvage=False
    ),
    "cpp": LanguageRules(
        query=CPP_QUERY,
        names=_C_NAMES | {"namespace_definition": _namespace_name},
        kinds=_C_KINDS,
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
