"""The facts a source file states about itself: definitions, references and imports, with lines."""

from __future__ import annotations

from dataclasses import dataclass, fields

# Every kind a Definition may carry; rules map their languages' constructs onto these.
DEFINITION_KINDS = frozenset({
    "function", "method", "class", "interface", "struct", "enum", "trait", "module",
    "constant", "type", "variable", "heading",
})  # fmt: skip


@dataclass(frozen=True, slots=True)
class Definition:
    """A named definition; `line` is the line holding the name, 1-based."""

    name: str
    kind: str
    container: str | None
    line: int
    end_line: int
    start_line: int
    signature: str


@dataclass(frozen=True, slots=True)
class Reference:
    """A use of a name; `is_call` when the name is the callee of a call."""

    name: str
    line: int
    container: str | None
    is_call: bool


@dataclass(frozen=True, slots=True)
class Import:
    """An imported module, and the imported name where the syntax has one."""

    module: str
    name: str | None
    line: int


@dataclass(frozen=True, slots=True)
class FileFacts:
    """Everything extracted from one file; `partial` when the parse had syntax errors."""

    language: str
    supported: bool
    definitions: tuple[Definition, ...]
    references: tuple[Reference, ...]
    imports: tuple[Import, ...]
    partial: bool


def _slot_setters(cls: type) -> tuple:
    return tuple(getattr(cls, f.name).__set__ for f in fields(cls))


_SET_REFERENCE = _slot_setters(Reference)


def new_reference(name: str, line: int, container: str | None, is_call: bool) -> Reference:
    """Build a Reference at half the cost of calling the class.

    A frozen dataclass's __init__ goes through object.__setattr__ once per field, and an index
    run builds hundreds of thousands of references; writing the slots directly is the same
    object (equal, same hash) without that detour.
    """
    reference = object.__new__(Reference)
    set_name, set_line, set_container, set_is_call = _SET_REFERENCE
    set_name(reference, name)
    set_line(reference, line)
    set_container(reference, container)
    set_is_call(reference, is_call)
    return reference


def qualified_name(d: Definition) -> str:
    """'Container.name', or the bare name at top level."""
    return f"{d.container}.{d.name}" if d.container else d.name


def unsupported(language: str) -> FileFacts:
    """The empty facts of a language without rules."""
    return FileFacts(language, False, (), (), (), False)
