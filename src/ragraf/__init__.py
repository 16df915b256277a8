"""ragraf: an honest, fast knowledge index of a code repository for AI coding agents."""

from typing import TYPE_CHECKING

from ragraf.errors import RagrafError
from ragraf.lazy import lazy_exports

if TYPE_CHECKING:
    from ragraf.api import Envelope, Index, SearchResult

__version__ = "0.1.0"
__all__ = ["Envelope", "Index", "RagrafError", "SearchResult", "__version__"]
__getattr__ = lazy_exports(
    __name__,
    {"Envelope": "ragraf.api.envelope", "Index": "ragraf.api.index", "SearchResult": "ragraf.api.envelope"},
)
