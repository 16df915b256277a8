"""Embedding failures, one class per thing a caller reacts to differently."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragraf.errors import EmbedderError

if TYPE_CHECKING:
    from ragraf.embed.pipeline import EmbedResult

_OFF = "or set RAGRAF_EMBEDDER=none for lexical-only search"


class ModelFileError(EmbedderError):
    """The local model's package is missing or its weight file is not the pinned one."""

    code = "embed_model_file"


class ProviderUnavailable(EmbedderError):
    """The endpoint cannot be reached or kept failing after the retries."""

    code = "embed_unavailable"


class ConnectionRefused(ProviderUnavailable):
    """Nothing listens at the endpoint; not retried, the fix is on the user's side."""

    code = "embed_refused"


class ProviderRejected(EmbedderError):
    """The endpoint answered 4xx for a reason the input cannot fix (auth, unknown model)."""

    code = "embed_rejected"

    def __init__(self, message: str, suggest: str = "", status: int = 0) -> None:
        super().__init__(message, suggest)
        self.status = status


class EmbedInputError(EmbedderError):
    """A failure tied to this batch's texts: splitting the batch isolates the culprit."""

    code = "embed_input"


class EmbedTimeout(EmbedInputError):
    """The request took longer than embed_timeout_s; never retried as is."""

    code = "embed_timeout"


class InputRejected(EmbedInputError, ProviderRejected):
    """The endpoint refused these texts (400/413/422), e.g. one is longer than its context."""

    code = "embed_input_rejected"


class BadResponse(EmbedderError):
    """The endpoint answered something that is not a valid embedding response."""

    code = "embed_bad_response"


class MalformedResponse(BadResponse):
    """Not JSON, or JSON without the fields the provider's API promises."""


class WrongVectorCount(BadResponse):
    """A different number of vectors than texts sent: never guessed at, never reshaped."""


class WrongDimension(BadResponse):
    """A vector whose length differs from the model's dimension."""


class NonFiniteVector(BadResponse, EmbedInputError):
    """NaN, infinity or an all-zero vector; may depend on one text, so batches split on it."""


class EmbedInterrupted(EmbedderError):
    """embed_with_cache stopped on a provider failure; `result` holds what was done before it."""

    code = "embed_interrupted"

    def __init__(self, cause: EmbedderError, result: EmbedResult) -> None:
        super().__init__(cause.message, cause.suggest)
        self.cause = cause
        self.result = result


def refused_message(url: str, server: str = "the embedding server") -> str:
    """The actionable text for a connection refused at url."""
    return f"embedding endpoint {url} refused the connection; start {server} {_OFF}"


def off_switch() -> str:
    """The standard way out, shared by every suggestion."""
    return _OFF
