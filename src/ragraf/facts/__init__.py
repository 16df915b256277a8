"""Code facts: definitions, references and imports of a file, each with its line."""

from typing import TYPE_CHECKING

from ragraf.lazy import lazy_exports

if TYPE_CHECKING:
    from .extract import extract_facts
    from .model import Definition, FileFacts, Import, Reference, qualified_name

__all__ = ["Definition", "FileFacts", "Import", "Reference", "extract_facts", "qualified_name"]
# Extraction loads tree-sitter and every language's rules: only an index run needs it, not a lookup.
__getattr__ = lazy_exports(
    __name__,
    {"extract_facts": "ragraf.facts.extract"}
    | {n: "ragraf.facts.model" for n in ("Definition", "FileFacts", "Import", "Reference", "qualified_name")},
)
