"""The JSON envelope every read operation returns (DESIGN §4)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class StaleWarning:
    path: str
    reason: str
    suggest: str  # live_read | reindex


@dataclass
class Capability:
    lexical: bool = True
    semantic: bool = False
    semantic_coverage: float = 0.0
    facts: bool = False
    degraded: bool = False
    reasons: list[str] = field(default_factory=list)
    tiers: dict[str, float] = field(default_factory=dict)  # each vector tier's coverage: static, transformer


@dataclass
class SearchResult:
    path: str
    start_line: int
    end_line: int
    score: float
    kind: str
    language: str
    symbol: str | None
    stale: bool
    snippet: str


@dataclass
class Envelope:
    op: str
    index_rev: str | None = None
    corpus_hash: str | None = None
    state: str = "fresh"
    drift: dict[str, int] = field(default_factory=lambda: {"files": 0, "symbols": 0, "entries": 0})
    stale_warnings: list[StaleWarning] = field(default_factory=list)
    capability: Capability = field(default_factory=Capability)
    results: list[Any] = field(default_factory=list)
    truncated: dict[str, int] = field(default_factory=lambda: {"results": 0, "bytes": 0})
    notes: list[str] = field(default_factory=list)
    error: dict[str, str] | None = None
    worktree: dict[str, Any] | None = None  # in a git work tree: its view, the base, the lazy refresh
    # A paged answer: {"offset", "total", "next_offset"} (next_offset None on the last page).
    page: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        from ragraf.corpus.secrets import count_redacted  # its patterns compile only for JSON out

        out = asdict(self)
        # Secrets replaced by `[redacted:KIND]` in what this answer returns (corpus/secrets.py).
        out["redacted"] = count_redacted(out["results"])
        for key in ("error", "worktree", "page"):
            if out[key] is None:
                del out[key]
        return out
