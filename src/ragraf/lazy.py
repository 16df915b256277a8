"""Names a package exports, loaded on first use (PEP 562), so a command imports only what it runs:
`ragraf --version` or a `def` lookup never loads numpy, tree-sitter or the indexer."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable


def lazy_exports(package: str, exports: dict[str, str]) -> Callable[[str], object]:
    """A package's module `__getattr__`: each exported name imported from its module when first read."""

    def __getattr__(name: str) -> object:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)  # the next read is a plain attribute
        return value

    return __getattr__
