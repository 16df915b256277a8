"""The Store protocol and the records it holds: revisions, manifests, content-addressed chunks."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple, Protocol

from isal import isal_zlib  # zlib's format, decompressed 1.6x as fast

# What a killed index run stored and no revision names: reused by the next run or removed by its
# retention, so doctor names it without calling the index unhealthy.
LEFTOVER_CONTENTS = "contents no retained revision references (left by an interrupted run)"


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


class StatEntry(NamedTuple):
    """What the stat cache knows of a file (a tuple: loading 10,000 of them must stay cheap)."""

    size: int
    mtime_ns: int
    ctime_ns: int
    inode: int
    sha256: str
    checked_ns: int


# Records made by the hundred thousand in index workers and shipped back to the indexer are
# named tuples: a third of the cost of frozen dataclasses to build and to pickle.
class ChunkRecord(NamedTuple):
    """A chunk to store for one content. Its lexical row is its text, then `tail`: its symbol and
    the split forms of its identifiers (kept apart so the text does not cross the workers' pipe twice)."""

    ord: int
    start_line: int
    end_line: int
    symbol: str | None
    text: str
    tail: str

    @property
    def index_text(self) -> str:
        return self.text + "\n" + self.tail

    @classmethod
    def of(cls, ord: int, start_line: int, end_line: int, symbol: str | None, text: str) -> ChunkRecord:
        """The record of one chunk, its lexical row made here (the index workers make a file's at once)."""
        from ragraf.tokens import index_text

        return cls(
            ord, start_line, end_line, symbol, text, index_text(text + "\n" + (symbol or ""))[len(text) + 1 :]
        )


class FactRecord(NamedTuple):
    """One fact of a content: a definition (def), a reference (ref) or an import."""

    kind: str  # def | ref | import
    name: str
    def_kind: str | None  # function, class, … for defs; None otherwise
    container: str | None
    line: int
    start_line: int
    end_line: int
    signature: str | None  # the name line of a def; the module of an import
    is_call: bool = False
    body_hash: str | None = None


class RefSites(NamedTuple):
    """Every reference to one name in one content. A file uses most names it uses several times
    (six on average), so one row per name stores and indexes a sixth of the rows one per use would.
    `sites` is pack_sites() of (line, is_call, container) in line order."""

    name: str
    sites: str


_COMPACT_JSON = json.JSONEncoder(separators=(",", ":")).encode


def pack_sites(sites: list[tuple[int, bool, str | None]]) -> str:
    """[[line, 0|1, container], ...] as compact JSON, the form SQLite's json_array gives too."""
    return _COMPACT_JSON([(line, int(call), container) for line, call, container in sites])


def unpack_sites(packed: str) -> list[tuple[int, bool, str | None]]:
    return [(line, bool(call), container) for line, call, container in json.loads(packed)]


@dataclass(frozen=True)
class ContentBundle:
    """Everything stored for one new content: its chunks and facts. Its records are read by position
    (`for ord, start, end, symbol, text, tail in bundle.chunks`): a bundle from an index worker holds
    them as plain tuples in their fields' order (__reduce__)."""

    key: tuple[str, str, str]  # (sha256, language, chunker)
    chunks: list[ChunkRecord]
    facts: list[FactRecord]  # definitions and imports
    facts_status: str  # supported | partial | unsupported
    refs: list[RefSites] = field(default_factory=list)
    # The static tier's vector of each chunk (float32 rows, packed), when the run embeds in its pass.
    vectors: bytes = b""

    def __reduce__(self) -> tuple[Any, ...]:
        # Records cross the workers' pipe as plain tuples: unpickling a named tuple calls its Python
        # __new__, and the main process unpickled the cold index's ~10^6 records one call each (1,200
        # speed-corpus Python files: 0.37 against 0.05 CPU-s; the workers' dumps 0.21 against 0.12).
        plain = [tuple(c) for c in self.chunks], [tuple(f) for f in self.facts], [tuple(r) for r in self.refs]
        return ContentBundle, (self.key, plain[0], plain[1], self.facts_status, plain[2], self.vectors)


def vector_rows(bundle: ContentBundle, dim: int) -> list[bytes]:
    """The bundle's vectors, one float32 row of `dim` per chunk; none when they do not fit its chunks."""
    size = 4 * dim
    if not bundle.vectors or len(bundle.vectors) != size * len(bundle.chunks):
        return []
    return [bundle.vectors[i : i + size] for i in range(0, len(bundle.vectors), size)]


@dataclass(frozen=True)
class FactHit:
    """A fact at one path of a revision."""

    fact_kind: str
    name: str
    kind: str | None
    path: str
    line: int
    start_line: int
    end_line: int
    container: str | None
    signature: str | None
    is_call: bool
    body_hash: str | None


def ref_hits(rows: Iterable[tuple[str, str, str]], limit: int) -> list[FactHit]:
    """Each use of packed reference rows (name, path, sites; by path, then in the order written),
    by path and line, cut at `limit`: every use at a path before the cut is read, none after."""
    hits: list[FactHit] = []
    for name, path, sites in rows:
        if len(hits) >= limit and hits[-1].path != path:
            break
        hits.extend(
            FactHit("ref", name, None, path, line, line, line, container, None, call, None)
            for line, call, container in unpack_sites(sites)
        )
    hits.sort(key=lambda h: (h.path, h.line))
    return hits[:limit]


@dataclass(frozen=True)
class MapFacts:
    """What a repo map reads of a revision, as columns (numbers as numpy int64 arrays): its paths by
    content key; names, which the definitions and uses give as their places in it (-1: none; it
    may hold names no row gives); each definition's content, name, kind, line, 1 if top level,
    signature ('' if none) and place in the order the definitions were written (what breaks ties);
    each use row's content, name and number of sites. Rows of a content the revision does not hold
    may come too; a content held at several paths stands for each of them."""

    paths: dict[int, list[str]]
    names: Sequence[str]
    def_content: Sequence[int]
    def_name: Sequence[int]
    def_kind: list[str]
    def_line: Sequence[int]
    def_top: Sequence[int]
    def_signature: list[str]
    def_order: Sequence[int]
    use_content: Sequence[int]
    use_name: Sequence[int]
    use_sites: Sequence[int]


@dataclass(frozen=True)
class DriftEvent:
    """A change of one file against a revision, as detected by the guard, the indexer, git or a caller."""

    rev: str
    change: str  # create | modify | delete
    path: str
    detected_by: str  # guard | index | git | explicit
    old_sha256: str | None
    new_sha256: str | None
    old_content_id: int | None = None


@dataclass(frozen=True)
class DriftEntry:
    """A ledger row (DESIGN §6); closed_by is set once archived."""

    entry_id: int
    rev: str
    change: str
    path: str
    detected_by: str
    detected_at: str
    old_sha256: str | None
    new_sha256: str | None
    affected_nodes: list[int]
    affected_symbols: list[dict[str, object]]
    dedupe_key: str
    closed_by: str | None = None

    def to_dict(self) -> dict[str, object]:
        from dataclasses import asdict

        out = asdict(self)
        if self.closed_by is None:
            del out["closed_by"]
        return out


def unpack_text(stored: bytes | str) -> str:
    """A chunk text as a store may hold it (zlib-compressed UTF-8, or plain text) back as text."""
    return isal_zlib.decompress(stored).decode("utf-8") if isinstance(stored, bytes) else stored


class _UnpackedOnRead:
    """A chunk's text, given as stored and unpacked the first time it is read: a search draws
    hundreds of candidate chunks and shows ten, and decompressing every one was a fifth of its time."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = "_" + name

    def __get__(self, obj: object, owner: type | None = None) -> str:
        if obj is None:
            raise AttributeError(self.slot)  # tells dataclass the field has no default
        stored = obj.__dict__[self.slot]
        if isinstance(stored, bytes):
            stored = obj.__dict__[self.slot] = unpack_text(stored)
        return stored

    def __set__(self, obj: object, value: str | bytes) -> None:
        obj.__dict__[self.slot] = value


@dataclass(frozen=True)
class ChunkHit:
    """A stored chunk at one path of a revision, with a retriever's score. `text` may be given
    compressed, as the SQLite store holds it."""

    chunk_id: int
    path: str
    start_line: int
    end_line: int
    symbol: str | None
    text: str = _UnpackedOnRead()  # type: ignore[assignment]
    score: float
    sha256: str = ""
    extra: dict[str, object] = field(default_factory=dict)

    def replaced(self, **changes: object) -> ChunkHit:
        """dataclasses.replace keeping the text as given (replace reads every field, unpacking it)."""
        changes.setdefault("text", self.__dict__["_text"])
        return replace(self, **changes)  # type: ignore[arg-type]


ContentKey = tuple[str, str, str]  # (sha256, language, chunker): what content ids are stored under

# A manifest row holds for the revisions from its first_rev up to (not including) its until_rev;
# a row still current has this until_rev (both stores keep manifests this way).
LIVE_REV = 2**31 - 1
# Retention keeps the newest revision of each of the last few branches beyond the last N revisions:
# switching back to a branch then finds its files' contents (chunks, facts, vectors) and costs
# hashing, not chunking and embedding them again, however many revisions the other branch made.
BRANCH_TIPS_KEPT = 4


@dataclass(frozen=True)
class NewRevision:
    corpus_hash: str
    index_version: str
    git_head: str | None
    git_branch: str | None
    manifest: list[ManifestEntry]
    events: list[DriftEvent] = field(default_factory=list)
    base_rev: str | None = None  # the base revision a work tree's view lays its own files over
    # A change to the revision numbered `parent`: `manifest` then holds only the new or changed
    # entries and `removed` the paths that left, so a one-file change does not rewrite 100,000 rows.
    parent: int | None = None
    removed: tuple[str, ...] = ()

    def whole(self, parent_manifest: dict[str, ManifestEntry]) -> NewRevision:
        """The same revision with its whole manifest, for a store that writes manifests whole."""
        if self.parent is None:
            return self
        entries = {**parent_manifest, **{e.path: e for e in self.manifest}}
        for path in self.removed:
            entries.pop(path, None)
        return replace(self, manifest=sorted(entries.values(), key=lambda e: e.path), parent=None, removed=())


class Store(Protocol):
    """Where an index lives; SQLite is the default, PostgreSQL serves teams (DESIGN §11)."""

    def current_revision(self) -> Revision | None: ...
    def revisions(self) -> list[Revision]: ...
    def revision(self, name: str) -> Revision | None: ...
    def manifest(self, rev_no: int) -> dict[str, ManifestEntry]: ...
    def manifest_entry(self, rev_no: int, path: str) -> ManifestEntry | None: ...
    def manifest_hashes(self, rev_no: int) -> list[tuple[str, str]]: ...
    def stat_cache(self) -> dict[str, StatEntry]: ...
    def update_stat_cache(self, entries: dict[str, StatEntry], removed: list[str]) -> None: ...
    def guard_snapshot(self) -> bytes | None: ...
    def set_guard_snapshot(self, blob: bytes, base: int | None = None) -> None:
        """The snapshot; its first `base` bytes change seldom, so a store may write them only when
        they differ from what it holds."""

    def content_ids(self, keys: list[tuple[str, str, str]]) -> dict[tuple[str, str, str], int]: ...
    def add_contents(
        self, items: list[ContentBundle], static: tuple[str, int] | None = None
    ) -> dict[tuple[str, str, str], int]: ...
    def commit_revision(self, new: NewRevision) -> Revision: ...
    def count_chunks(self, rev_no: int) -> int: ...
    def lexical_search(self, match: str, rev_no: int, limit: int) -> list[ChunkHit]: ...
    def chunks_of(self, rev_no: int, path: str) -> list[ChunkHit]: ...
    def chunks_of_paths(self, rev_no: int, paths: list[str]) -> dict[str, list[ChunkHit]]: ...
    def find_facts(
        self,
        rev_no: int,
        fact_kind: str,
        name: str | None = None,
        path: str | None = None,
        exact: bool = True,
        limit: int = 1000,
    ) -> list[FactHit]: ...
    def ref_counts(self, rev_no: int) -> dict[str, int]: ...
    def map_facts(self, rev_no: int, kinds: Iterable[str]) -> MapFacts: ...
    def facts_status(self, rev_no: int, path: str) -> str | None: ...
    def register_drift(self, events: list[DriftEvent]) -> int: ...
    def open_entries(self, rev: str | None = None) -> list[DriftEntry]: ...
    def open_summary(self, rev: str, paths: list[str]) -> tuple[int, int]: ...
    def archived_entries(self, closed_by: list[str]) -> list[DriftEntry]: ...
    # vectors (DESIGN §8): keyed by (chunk, model), so revisions, paths and worktrees share them
    def chunks_missing_vectors(
        self, rev_no: int, model: str, limit: int, after_id: int = 0
    ) -> list[ChunkHit]: ...
    def add_vectors(self, model: str, items: list[tuple[int, bytes]], dim: int) -> None: ...
    def vector_coverage(self, rev_no: int, model: str) -> float: ...
    def chunks_with_vectors(self, model: str, chunk_ids: list[int]) -> set[int]: ...
    def vector_search(
        self, rev_no: int, model: str, query: bytes, dim: int, limit: int
    ) -> list[ChunkHit]: ...
    def consistency_problems(self, rev_no: int, model: str | None) -> list[str]: ...
    def gc(self, keep: int) -> dict[str, int]: ...
    def close(self) -> None: ...
