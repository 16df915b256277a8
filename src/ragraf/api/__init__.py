"""The operations layer: `Index` and the envelope it returns."""

from ragraf.api.envelope import Capability, Envelope, SearchResult, StaleWarning
from ragraf.api.index import Index, error_envelope

__all__ = ["Capability", "Envelope", "Index", "SearchResult", "StaleWarning", "error_envelope"]
