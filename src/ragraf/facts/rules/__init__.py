"""Fact rules per language: which syntax means a definition, a call, a reference or an import."""

from __future__ import annotations

from .base import LanguageRules
from .c_family import RULES as _C_FAMILY
from .functional import RULES as _FUNCTIONAL
from .go import RULES as _GO
from .javascript import RULES as _JAVASCRIPT
from .jvm import RULES as _JVM
from .python import RULES as _PYTHON
from .rust import RULES as _RUST
from .scripting import RULES as _SCRIPTING
from .swift import RULES as _SWIFT
from .zig import RULES as _ZIG

_RULES: dict[str, LanguageRules] = {}
for _family in (_PYTHON, _JAVASCRIPT, _GO, _RUST, _JVM, _C_FAMILY, _SCRIPTING, _SWIFT, _ZIG, _FUNCTIONAL):
    _RULES.update(_family)


def rules_for(language: str) -> LanguageRules | None:
    """The rules for a tree-sitter language name, or None when facts are not supported."""
    return _RULES.get(language)


def supported_languages() -> frozenset[str]:
    """Languages with fact rules (Markdown headings are handled apart)."""
    return frozenset(_RULES)
