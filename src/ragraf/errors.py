"""The RagrafError hierarchy: every error a user can see says what happened and what to do."""

from __future__ import annotations


class RagrafError(Exception):
    """Base of every error ragraf raises on purpose."""

    code = "error"
    exit_code = 1

    def __init__(self, message: str, suggest: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.suggest = suggest

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message, "suggest": self.suggest}


class ConfigError(RagrafError):
    code = "config"


class UsageError(RagrafError):
    code = "usage"
    exit_code = 2


class IndexMissingError(RagrafError):
    code = "index_missing"


class IndexCorruptError(RagrafError):
    code = "index_corrupt"


class LockHeldError(RagrafError):
    code = "locked"


class RefusedError(RagrafError):
    """The freshness policy refused to answer (exit code 3)."""

    code = "refused"
    exit_code = 3


class PathOutsideRootError(RagrafError):
    code = "outside_root"


class EmbedderError(RagrafError):
    """The embedding provider failed; search can still answer lexically."""

    code = "embedder"


class StoreError(RagrafError):
    code = "store"
