"""ragraf: an honest, fast knowledge index of a code repository for AI coding agents."""

from ragraf.api import Envelope, Index, SearchResult
from ragraf.errors import RagrafError

__version__ = "0.1.0"
__all__ = ["Envelope", "Index", "RagrafError", "SearchResult", "__version__"]
