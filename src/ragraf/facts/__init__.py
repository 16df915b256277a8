"""Code facts: definitions, references and imports of a file, each with its line."""

from .extract import extract_facts
from .model import Definition, FileFacts, Import, Reference, qualified_name

__all__ = ["Definition", "FileFacts", "Import", "Reference", "extract_facts", "qualified_name"]
