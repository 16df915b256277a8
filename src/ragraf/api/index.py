"""The operations layer: one method per operation, each returning an envelope (DESIGN §4)."""

from __future__ import annotations

import contextlib
import dataclasses
import os
from pathlib import Path
from typing import Any

from ragraf.api.envelope import Capability, Envelope, SearchResult, StaleWarning
from ragraf.config import Settings, load_settings
from ragraf.errors import IndexCorruptError, IndexMissingError, RagrafError, UsageError
from ragraf.freshness.guard import DriftSet, compute_drift
from ragraf.index.indexer import IndexReport, dry_run, run_index
from ragraf.index.lock import WriterLock
from ragraf.index.progress import Progress
from ragraf.languages import kind_of, language_of
from ragraf.search.engine import run_search
from ragraf.store import Revision, Store, open_store

MAX_K = 10
SNIPPET_MAX_CHARS = 4000
MAX_STALE_WARNINGS = 50


class Index:
    """A repository's index: `Index.open(root)`, then `.index()`, `.search()`, `.status()` …"""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._store: Store | None = None

    @classmethod
    def open(cls, root: str | Path = ".", **overrides: Any) -> Index:
        """Settings for root (config files, RAGRAF_* env, then keyword overrides)."""
        home = overrides.pop("home", None)
        settings = load_settings(root, **overrides)
        if home is not None:
            settings = _with(settings, home=Path(home).expanduser().resolve())
        return cls(settings)

    # plumbing ------------------------------------------------------------------------------

    def store(self) -> Store:
        if self._store is None:
            self._store = open_store(self.settings)
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _current(self) -> Revision:
        rev = self.store().current_revision()
        if rev is None:
            raise IndexMissingError("the index has no revision yet", suggest="run `ragraf index`")
        return rev

    def _envelope(self, op: str, rev: Revision, drift: DriftSet) -> Envelope:
        env = Envelope(op=op, index_rev=rev.rev, corpus_hash=rev.corpus_hash, capability=Capability())
        if drift:
            env.state = "drifted"
            env.drift = {"files": len(drift.paths), "symbols": 0, "entries": len(drift.paths)}
            for path in sorted(drift.paths)[:MAX_STALE_WARNINGS]:
                change = drift.change_of(path)
                verb = {"modify": "modified", "delete": "deleted", "create": "created"}[change or "modify"]
                env.stale_warnings.append(
                    StaleWarning(
                        path, f"{verb} after {rev.rev}", "reindex" if change == "delete" else "live_read"
                    )
                )
            if len(drift.paths) > MAX_STALE_WARNINGS:
                env.notes.append(f"{len(drift.paths) - MAX_STALE_WARNINGS} more drifted files not listed")
        return env

    def _guard(self, rev: Revision) -> DriftSet:
        store = self.store()
        return compute_drift(self.settings, store.manifest(rev.rev_no), store.stat_cache())

    # operations ----------------------------------------------------------------------------

    def index(
        self,
        full: bool = False,
        dry_run_only: bool = False,
        quiet: bool = True,
        progress: Progress | None = None,
        wait: bool = True,
    ) -> IndexReport | dict[str, object]:
        """(Re)index the root: one writer at a time; the previous revision answers until this commits."""
        progress = progress or Progress()
        if dry_run_only:
            store = None
            with contextlib.suppress(IndexMissingError, IndexCorruptError):
                store = open_store(self.settings)
            try:
                return dry_run(store, self.settings, progress)
            finally:
                if store is not None:
                    store.close()
        lock = WriterLock(self.settings.home, wait=wait, timeout_s=self.settings.lock_timeout_s)
        lock.acquire(on_wait=lambda who: progress.note(f"waiting for the index lock held by {who}"))
        try:
            self.close()
            try:
                store = open_store(self.settings, create=True)
            except IndexCorruptError:
                if not full:
                    raise
                _remove_index_files(self.settings.db_path)
                store = open_store(self.settings, create=True)
            try:
                return run_index(store, self.settings, full=full, progress=progress)
            finally:
                store.close()
        finally:
            lock.release()

    def search(
        self,
        query: str,
        k: int = 5,
        mode: str = "hybrid",
        rules: dict[str, bool] | None = None,
    ) -> Envelope:
        """Hybrid search (lexical until embeddings exist): top k chunks with path:line."""
        if mode not in ("hybrid", "lexical", "vector"):
            raise UsageError(f"unknown search mode {mode!r}", suggest="use hybrid, lexical or vector")
        rev = self._current()
        drift = self._guard(rev)
        env = self._envelope("search", rev, drift)
        k_asked = k
        k = max(0, min(int(k), MAX_K))
        if k != k_asked:
            env.notes.append(f"k={k_asked} clamped to {k} (allowed 0..{MAX_K})")
        if not query or not query.strip():
            env.notes.append("empty query: nothing to search for")
            return env
        outcome = run_search(self.store(), rev.rev_no, query, k, mode=mode, rules=rules)
        env.notes.extend(outcome.notes)
        stale = drift.paths
        for cand in outcome.hits:
            hit = cand.hit
            language = language_of(hit.path)
            snippet = hit.text if len(hit.text) <= SNIPPET_MAX_CHARS else hit.text[:SNIPPET_MAX_CHARS] + "\n…"
            env.results.append(
                SearchResult(
                    path=hit.path,
                    start_line=hit.start_line,
                    end_line=hit.end_line,
                    score=round(cand.score, 6),
                    kind=kind_of(hit.path, language),
                    language=language,
                    symbol=hit.symbol,
                    stale=hit.path in stale,
                    snippet=snippet,
                )
            )
        if not env.results and not any(w.isalnum() for w in query):
            env.notes.append("the query has no searchable words")
        return env

    def status(self) -> Envelope:
        """The current revision, its counts, and what drifted on disk since."""
        rev = self._current()
        drift = self._guard(rev)
        env = self._envelope("status", rev, drift)
        env.results.append(
            {
                "revision": rev.to_dict(),
                "root": str(self.settings.root),
                "home": str(self.settings.home),
                "store": self.settings.store,
                "index_file": str(self.settings.db_path),
                "drift": {
                    "created": list(drift.created),
                    "modified": list(drift.modified),
                    "deleted": list(drift.deleted),
                },
            }
        )
        return env

    def revisions(self) -> Envelope:
        """Every retained revision, oldest first."""
        rev = self._current()
        env = self._envelope("revisions", rev, DriftSet())
        env.results.extend(r.to_dict() for r in self.store().revisions())
        return env

    def gc(self) -> dict[str, object]:
        """Apply retention: keep the last keep_revisions revisions and what they reference."""
        with WriterLock(self.settings.home, timeout_s=self.settings.lock_timeout_s):
            self._current()
            removed = self.store().gc(self.settings.keep_revisions)
        return {"op": "gc", "keep": self.settings.keep_revisions, **removed}


def _with(settings: Settings, **changes: Any) -> Settings:
    return dataclasses.replace(settings, **changes)


def _remove_index_files(db: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.remove(f"{db}{suffix}")


def error_envelope(op: str, exc: RagrafError) -> Envelope:
    """An envelope that carries an error (refusals exit 3, other errors 1)."""
    env = Envelope(op=op, state="refused")
    env.error = exc.as_dict()
    return env
