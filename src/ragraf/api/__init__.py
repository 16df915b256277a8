"""The operations layer: `Index` and the envelope it returns."""

from typing import TYPE_CHECKING

from ragraf.lazy import lazy_exports

if TYPE_CHECKING:
    from ragraf.api.envelope import Capability, Envelope, SearchResult, StaleWarning
    from ragraf.api.index import Index, error_envelope

__all__ = ["Capability", "Envelope", "Index", "SearchResult", "StaleWarning", "error_envelope"]
__getattr__ = lazy_exports(
    __name__,
    {name: "ragraf.api.envelope" for name in ("Capability", "Envelope", "SearchResult", "StaleWarning")}
    | {"Index": "ragraf.api.index", "error_envelope": "ragraf.api.index"},
)
