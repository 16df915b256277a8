"""The shape of a language's fact rules: one tree-sitter query plus small hooks for what it cannot say.

Capture names in a rules query:
  @def.<tag>  a definition node; <tag> is a kind, or a key of `kinds` whose hook decides the kind
  @scope      a node that only names a container (a Rust impl block, a Swift extension)
  @call       the name node of a callee
  @call.adjacent  a callee only when no token separates it from its next named sibling (calls in
              Rust macro arguments, a flat token tree whose punctuation is unnamed)
  @ref        a member, field or type name in use (`conn.timeout`, `: Config`)
  @name       a bare identifier, kept only when it looks global (see extract._references)
  @import     an import node, read by the `imports` hook
  @wrapper    a node whose last child is the definition it wraps, starting earlier (decorators, templates)
Captures starting with an underscore only feed predicates.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property

from tree_sitter import Node

# A resolved name: the name node, a container the name itself adds (Go receivers, C++ `A::b`,
# Lua `M.f`), and a kind that overrides the capture's tag.
Named = tuple[Node, str | None, str | None]
NameHook = Callable[[Node], list[Named]]
KindHook = Callable[[Node, str], str | None]
ImportHook = Callable[[Node], list[tuple[str, str | None]]]

# A kind hook returns this for a node that is a container but not itself a definition.
SCOPE = "scope"

# Kinds whose functions are methods.
CLASS_LIKE = frozenset({"class", "interface", "struct", "enum", "trait", SCOPE})

_UPPER = re.compile(r"_*[A-Z][A-Z0-9_]*\Z")


@dataclass(frozen=True)
class LanguageRules:
    """How to read definitions, references and imports out of one language's syntax tree."""

    query: str
    names: Mapping[str, NameHook] = field(default_factory=dict)
    kinds: Mapping[str, KindHook] = field(default_factory=dict)
    imports: ImportHook | None = None
    # Identifiers never worth recording as references (receivers, keywords the grammar calls identifiers).
    noise: frozenset[str] = frozenset()
    method_scopes: frozenset[str] = CLASS_LIKE
    # Body-less declarations that scope the rest of the file (`namespace X;`).
    open_scopes: frozenset[str] = frozenset()
    # A function named `A::b` outside any class is a method of A (C++ out-of-line members).
    qualified_methods: bool = False
    # Merge consecutive clauses of one function (Haskell equations, Elixir multi-clause defs).
    merge_clauses: bool = False
    # Parse the items of braced macro calls standing where items stand (facts.macros; Rust).
    macro_items: bool = False
    # Re-parse what a top-level syntax error swallowed (extract._salvaged). Not for C and C++: their
    # errors mostly come from macros, which no split mends (on /usr/include: +17-49% extraction
    # time for 0.2% more definitions).
    salvage: bool = True

    @cached_property
    def noise_bytes(self) -> frozenset[bytes]:
        """`noise` encoded, to compare with undecoded source slices."""
        return frozenset(n.encode() for n in self.noise)


def text(node: Node | None) -> str:
    """The node's source text, decoded leniently."""
    if node is None:
        return ""
    return (node.text or b"").decode("utf-8", "replace")


def first_child(*types: str) -> NameHook:
    """A name hook taking the first child of one of `types` (grammars without a name field)."""
    wanted = frozenset(types)

    def hook(node: Node) -> list[Named]:
        for child in node.children:
            if child.type in wanted:
                return [(child, None, None)]
        return []

    return hook


def itself(node: Node) -> list[Named]:
    """A name hook for definitions captured at their name node."""
    return [(node, None, None)]


def is_constant_name(name: str) -> bool:
    """UPPER_CASE names are constants by convention in most languages."""
    return bool(_UPPER.match(name))


def constant_or_variable(node: Node, name: str) -> str | None:
    """UPPER_CASE assignments are constants, others variables."""
    return "constant" if is_constant_name(name) else "variable"


def constant_only(node: Node, name: str) -> str | None:
    """Keep only UPPER_CASE assignments (class-level fields would be noise otherwise)."""
    return "constant" if is_constant_name(name) else None


def unquote(s: str) -> str:
    """A string literal's content without its quotes or angle brackets."""
    s = s.strip()
    for pair in ('"""', "'''", '"', "'", "`", "<>"):
        opening, closing = (pair[0], pair[1]) if pair == "<>" else (pair, pair)
        if len(s) >= 2 * len(opening) and s.startswith(opening) and s.endswith(closing):
            return s[len(opening) : len(s) - len(closing)]
    return s


def descendants(node: Node, types: frozenset[str]) -> list[Node]:
    """Nodes of `types` under `node`, in order, found with an explicit stack (no recursion)."""
    found: list[Node] = []
    stack = list(reversed(node.named_children))
    while stack:
        current = stack.pop()
        if current.type in types:
            found.append(current)
            continue
        stack.extend(reversed(current.named_children))
    return found
