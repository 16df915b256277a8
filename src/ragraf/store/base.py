"""The Store protocol and the records it holds: revisions, manifests, content-addressed chunks."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class Revision:
    """An immutable snapshot of the corpus (DESIGN §5)."""

    rev_no: int
    rev: str
    corpus_hash: str
    created_at: str
    index_version: str
    git_head: str | None
    git_branch: str | None
    files: int
    chunks: int

    def to_dict(self) -> dict[str, object]:
        return {
            "rev": self.rev,
            "corpus_hash": self.corpus_hash,
            "created_at": self.created_at,
            "index_version": self.index_version,
            "git_head": self.git_head,
            "git_branch": self.git_branch,
            "files": self.files,
            "chunks": self.chunks,
        }


@dataclass(frozen=True)
class ManifestEntry:
    path: str
    sha256: str
    content_id: int
    size: int


@dataclass(frozen=True)
class StatEntry:
    size: int
    mtime_ns: int
    ctime_ns: int
    inode: int
    sha256: str
    checked_ns: int


@dataclass(frozen=True)
class ChunkRecord:
    """A chunk to store for one content; embed_text is what the embedder sees."""

    ord: int
    start_line: int
    end_line: int
    symbol: str | None
    text: str
    index_text: str


@dataclass(frozen=True)
class ChunkHit:
    """A stored chunk at one path of a revision, with a retriever's score."""

    chunk_id: int
    path: str
    start_line: int
    end_line: int
    symbol: str | None
    text: str
    score: float
    sha256: str = ""
    extra: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class NewRevision:
    corpus_hash: str
    index_version: str
    git_head: str | None
    git_branch: str | None
    manifest: list[ManifestEntry]


class Store(Protocol):
    """Where an index lives; SQLite is the default, PostgreSQL serves teams (DESIGN §11)."""

    def current_revision(self) -> Revision | None: ...
    def revisions(self) -> list[Revision]: ...
    def revision(self, name: str) -> Revision | None: ...
    def manifest(self, rev_no: int) -> dict[str, ManifestEntry]: ...
    def stat_cache(self) -> dict[str, StatEntry]: ...
    def update_stat_cache(self, entries: dict[str, StatEntry], removed: list[str]) -> None: ...
    def content_ids(self, keys: list[tuple[str, str, str]]) -> dict[tuple[str, str, str], int]: ...
    def add_contents(
        self, items: list[tuple[tuple[str, str, str], list[ChunkRecord]]]
    ) -> dict[tuple[str, str, str], int]: ...
    def commit_revision(self, new: NewRevision) -> Revision: ...
    def count_chunks(self, rev_no: int) -> int: ...
    def lexical_search(self, match: str, rev_no: int, limit: int) -> list[ChunkHit]: ...
    def gc(self, keep: int) -> dict[str, int]: ...
    def close(self) -> None: ...
