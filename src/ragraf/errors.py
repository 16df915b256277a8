"""The RagrafError hierarchy: every error a user can see says what happened and what to do."""

from __future__ import annotations

# The exit codes of every `ragraf` command (README "Exit codes"): one table, nothing else exits.
EXIT_OK = 0  # answered (an empty answer too)
EXIT_ERROR = 1  # an error: the message says what happened and what to do
EXIT_USAGE = 2  # a bad argument, option or path (missing, or outside the root)
EXIT_REFUSED = 3  # the freshness policy refused to answer
EXIT_INTERRUPTED = 130  # Ctrl-C (SIGINT): what was kept is printed


class RagrafError(Exception):
    """Base of every error ragraf raises on purpose."""

    code = "error"
    exit_code = EXIT_ERROR

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
    exit_code = EXIT_USAGE


class IndexMissingError(RagrafError):
    code = "index_missing"


class IndexCorruptError(RagrafError):
    code = "index_corrupt"


class LockHeldError(RagrafError):
    code = "locked"


class RefusedError(RagrafError):
    """The freshness policy refused to answer (exit code 3)."""

    code = "refused"
    exit_code = EXIT_REFUSED


class PathOutsideRootError(RagrafError):
    """A path outside the indexed root: a usage error, like a path that does not exist."""

    code = "outside_root"
    exit_code = EXIT_USAGE


class EmbedderError(RagrafError):
    """The embedding provider failed; search can still answer lexically."""

    code = "embedder"


class StoreError(RagrafError):
    code = "store"
