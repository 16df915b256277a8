"""The operations layer: one method per operation, each returning an envelope (DESIGN §4)."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from ragraf.api.envelope import Capability, Envelope, SearchResult, StaleWarning
from ragraf.config import Settings, load_settings
from ragraf.corpus import discover
from ragraf.corpus.discover import left_out
from ragraf.corpus.gitrepo import BaseRef, commits_between
from ragraf.embed import Embedder, make_embedder
from ragraf.errors import (
    EmbedderError,
    IndexCorruptError,
    IndexMissingError,
    LockHeldError,
    RagrafError,
    StoreError,
    UsageError,
)
from ragraf.facts.lookup import bare_name, find_definitions, find_references
from ragraf.freshness.changes import changes_report
from ragraf.freshness.guard import DriftSet, GuardResult, guard, remember
from ragraf.freshness.live_read import confine, parse_spec, read_live
from ragraf.index.embedding import embed_revision
from ragraf.index.indexer import IndexReport, dry_run, laid_over, run_index
from ragraf.index.lock import WriterLock
from ragraf.index.overlay import (
    Seed,
    base_ref,
    base_revision,
    open_base,
    plan_seed,
    seed_view,
    update_base,
)
from ragraf.index.progress import Progress
from ragraf.languages import kind_of, language_of
from ragraf.search.engine import run_search
from ragraf.store import DriftEvent, FactHit, Revision, Store, open_store, view_label
from ragraf.store.base import LEFTOVER_CONTENTS
from ragraf.store.sqlite import damage

MAX_K = 10
SNIPPET_MAX_CHARS = 4000
MAX_STALE_WARNINGS = 50
MAX_FACTS = 200
POLICIES = ("warn", "auto", "fail")
QUERY_TIMEOUT_S = 5.0


Op = TypeVar("Op", bound=Callable[..., Any])


def names_damage(op: Op) -> Op:
    """An operation that reaches a damaged page of the index file fails with index_corrupt (and
    `ragraf index --full` to rebuild), one that meets a full disk or a read-only home says so: not
    SQLite's error."""

    @functools.wraps(op)
    def checked(self: Index, *args: Any, **kwargs: Any) -> Any:
        try:
            return op(self, *args, **kwargs)
        except sqlite3.DatabaseError as exc:
            error = damage(exc, self.settings.db_path)
            if error is None:
                raise
            self.close()
            raise error from None

    return checked  # type: ignore[return-value]


class Index:
    """A repository's index: `Index.open(root)`, then `.index()`, `.search()`, `.status()` …"""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._store: Store | None = None
        self._embedder: Embedder | None = None
        self._embedder_made = False
        self._query_embedder: Embedder | None = None
        self._base_store: Store | None = None
        self._seed: Seed | None = None  # what a read just asked git, for the refresh it starts
        self._behind_cache: tuple[str, float, tuple[BaseRef, int | None] | None] | None = None

    @classmethod
    def open(cls, root: str | Path = ".", **overrides: Any) -> Index:
        """Settings for root (config files, RAGRAF_* env, then keyword overrides)."""
        home = overrides.pop("home", None)
        settings = load_settings(root, **overrides)
        if home is not None:
            settings = dataclasses.replace(settings, home=Path(home).expanduser().resolve())
        return cls(settings)

    # plumbing ------------------------------------------------------------------------------

    def store(self) -> Store:
        if self._store is not None and self.settings.store == "sqlite" and not self.settings.db_path.exists():
            self.close()  # the index home was deleted under us: say so rather than answer from a ghost
        if self._store is None:
            self._store = open_store(self.settings)
        return self._store

    def embedder(self) -> Embedder | None:
        """The configured embedder (None for embedder = none); made once, loaded on first use."""
        if not self._embedder_made:
            self._embedder = make_embedder(self.settings)
            self._embedder_made = True
        return self._embedder

    def query_embedder(self) -> Embedder | None:
        """The embedder for queries: a remote one fails fast (one try, short timeout) so search
        answers degraded in seconds instead of retrying for the indexer's patience."""
        if self.settings.embedder.strip().lower() not in ("ollama", "openai"):
            return self.embedder()
        if self._query_embedder is None:
            from ragraf.embed.http import RetryPolicy  # httpx only for the HTTP providers

            timeout = min(QUERY_TIMEOUT_S, self.settings.embed_timeout_s)
            self._query_embedder = make_embedder(
                self.settings, timeout_s=timeout, retry=RetryPolicy(max_attempts=1)
            )
        return self._query_embedder

    def _model(self) -> tuple[str, int | None, str | None]:
        """(model id, dim or None when unknown, why not) of the configured embedder."""
        try:
            embedder = self.embedder()
        except RagrafError as exc:
            return f"{self.settings.embedder}:unavailable", None, exc.message
        if embedder is None:
            return "none", 0, None
        try:
            model_id = embedder.model_id
        except RagrafError as exc:
            return f"{self.settings.embedder}:unavailable", None, exc.message
        try:
            return model_id, embedder.dim, None
        except RagrafError as exc:
            return model_id, None, exc.message

    def close(self) -> None:
        for store in (self._store, self._base_store):
            if store is not None:
                store.close()
        self._store = self._base_store = None

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _current(self) -> Revision:
        rev = self.store().current_revision()
        if rev is None and self.settings.view:
            rev = self._base_revision()  # a new work tree: the base answers until its view exists
        if rev is None:
            raise IndexMissingError("the index has no revision yet", suggest="run `ragraf index`")
        return rev

    def _base_revision(self) -> Revision | None:
        if self._base_store is None:
            self._base_store = open_base(self.settings)
        return self._base_store.current_revision()

    def _capability(self, rev: Revision) -> Capability:
        """What this revision can answer with: semantic coverage is of the configured model."""
        cap = Capability(lexical=True, semantic=False, semantic_coverage=0.0, facts=True)
        if self.settings.embedder.strip().lower() == "none":
            return cap  # lexical on purpose: nothing to warn about
        model = rev.index_version.split("|", 1)[0]
        cap.semantic_coverage = round(self.store().vector_coverage(rev.rev_no, model), 4)
        cap.semantic = cap.semantic_coverage > 0
        if cap.semantic_coverage < 1.0:
            busy = WriterLock(self.settings.home).busy() if self.settings.store == "sqlite" else None
            todo = (
                f"an index run is embedding now ({busy})"
                if busy
                else "run `ragraf index` to finish embedding"
            )
            cap.reasons.append(f"semantic coverage {cap.semantic_coverage:.0%}: {todo}")
        return cap

    def _envelope(self, op: str, rev: Revision, guarded: GuardResult | None = None) -> Envelope:
        env = Envelope(
            op=op, index_rev=rev.rev, corpus_hash=rev.corpus_hash, capability=self._capability(rev)
        )
        if guarded is None:
            return env
        drift = guarded.drift
        env.drift["entries"] = guarded.open_entries
        if drift:
            env.state = "drifted"
            env.drift.update(files=len(drift.paths), symbols=guarded.affected_symbols)
            for path in sorted(drift.paths)[:MAX_STALE_WARNINGS]:
                change = drift.change_of(path)
                verb = {"modify": "modified", "delete": "deleted", "create": "created"}[change or "modify"]
                suggest = "reindex" if change == "delete" else "live_read"
                env.stale_warnings.append(StaleWarning(path, f"{verb} after {rev.rev}", suggest))
            if len(drift.paths) > MAX_STALE_WARNINGS:
                env.notes.append(f"{len(drift.paths) - MAX_STALE_WARNINGS} more drifted files not listed")
        return env

    def _guard(self, rev: Revision) -> GuardResult:
        """The guard's drift; what it hashed and found as indexed is kept, so the next read does
        not hash it again, when no index run is at work (a read never waits for the lock)."""
        guarded = guard(self.store(), self.settings, rev)
        if guarded.learnt is not None:
            with contextlib.suppress(RagrafError, sqlite3.Error, OSError, ValueError), self._writing():
                remember(self.store(), guarded.learnt)
        return guarded

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """The writer lock, now or LockHeldError."""
        store = self.store()
        if self.settings.store == "postgres":
            with store.writer_lock(wait=False):  # type: ignore[attr-defined]
                yield
        else:
            with WriterLock(self.settings.home, wait=False):
                yield

    def _begin(self, op: str, policy: str | None = None) -> tuple[Revision, DriftSet, Envelope]:
        """Guard, then apply the reindex_on_drift policy: answer marked, reindex first, or refuse."""
        policy = policy or self.settings.reindex_on_drift
        if policy not in POLICIES:
            raise UsageError(
                f"reindex_on_drift {policy!r} is not one of {', '.join(POLICIES)}",
                suggest="use warn, auto or fail",
            )
        if self.settings.view:
            rev, guarded, notes, tree = self._view_begin()
            env = self._envelope(op, rev, guarded)
            env.notes.extend(notes)
            env.worktree = tree
            return self._apply_fail(policy, rev, guarded, env)
        rev = self._current()
        guarded = self._guard(rev)
        notes: list[str] = []
        if guarded.drift and policy == "auto":
            n = len(guarded.drift.paths)
            if n <= self.settings.auto_reindex_max_files:
                self.index()
                rev = self._current()
                guarded = self._guard(rev)
                notes.append(f"reindexed {n} drifted files before answering ({rev.rev})")
            else:
                notes.append(
                    f"{n} files drifted, over auto_reindex_max_files={self.settings.auto_reindex_max_files}: "
                    "answering from the index, marked stale; run `ragraf index`"
                )
        env = self._envelope(op, rev, guarded)
        env.notes.extend(notes)
        return self._apply_fail(policy, rev, guarded, env)

    def _view_begin(self) -> tuple[Revision, GuardResult, list[str], dict[str, Any]]:
        """A work tree's read: lay its changes over the base lazily (bounded), then guard.

        A refresh that is declined (past the bound), busy (another writer) or failing never costs the
        answer: it comes from the view as it is, or from the base when the view does not exist yet,
        with the touched files marked."""
        settings = self.settings
        bound = settings.lazy_refresh_max_files
        tree: dict[str, Any] = {"name": view_label(settings.view), "refresh": "fresh"}
        notes: list[str] = []
        rev = self.store().current_revision()
        if rev is None:
            base = self._base_revision()
            if base is None or not base.git_head:
                raise IndexMissingError("the index has no revision yet", suggest="run `ragraf index`")
            seed = self._seed = plan_seed(settings, base)  # the refresh below lays this one
            if len(seed.changed) > bound:
                tree.update(refresh="declined", suggest="reindex", touched=len(seed.changed))
                notes.append(
                    f"{len(seed.changed)} files differ from the base index, over lazy_refresh_max_files={bound}: "
                    f"answering from the base {seed.base.rev}, those files marked stale; run `ragraf index`"
                )
            else:
                tree["touched"] = len(seed.changed)
                self._refresh(tree, notes)
            rev = self.store().current_revision()
            if rev is None:  # declined, busy or failed: the base answers, git names what differs
                rev = seed.base
                guarded = GuardResult(self._touched_drift(seed.base, seed.changed), 0, 0)
                return rev, guarded, notes, self._with_base(tree, rev, notes)
        guarded = self._guard(rev)
        if guarded.drift:
            n = len(guarded.drift.paths)
            if n > bound:
                tree.update(refresh="declined", suggest="reindex")
                notes.append(
                    f"{n} files changed, over lazy_refresh_max_files={bound}: answering from {rev.rev}, "
                    "marked stale; run `ragraf index`"
                )
            else:
                self._refresh(tree, notes)
                if tree["refresh"] == "refreshed":
                    rev = self._current()
                    guarded = self._guard(rev)
        return rev, guarded, notes, self._with_base(tree, rev, notes)

    def _refresh(self, tree: dict[str, Any], notes: list[str]) -> None:
        """Index the work tree's view now if no other writer is at it: refreshed, busy or failed."""
        try:
            report = self.index(wait=False, update_base=False)
        except LockHeldError as exc:
            notes.append(f"lazy refresh skipped: {exc.message}; answering marked")
            tree["refresh"] = "busy"
        except RagrafError as exc:
            notes.append(f"lazy refresh failed: {exc.message}; answering marked")
            tree["refresh"] = "failed"
        else:
            assert isinstance(report, IndexReport)
            tree["refresh"] = "refreshed"
            tree["indexed"] = {"files_read": report.files_read, "chunks_new": report.chunks["new"]}

    def _touched_drift(self, base: Revision, changed: list[str]) -> DriftSet:
        """The drift of a work tree against the base, as git names it (nothing is read)."""
        manifest = self.store().manifest(base.rev_no)
        present = {
            st.path for st in discover(self.settings.root, self.settings.max_file_bytes, changed).files
        }
        created = tuple(p for p in changed if p in present and p not in manifest)
        modified = tuple(p for p in changed if p in present and p in manifest)
        deleted = tuple(p for p in changed if p not in present and p in manifest)
        return DriftSet(created, modified, deleted)

    def _with_base(self, tree: dict[str, Any], rev: Revision, notes: list[str]) -> dict[str, Any]:
        """The base the answer stands on, and a warning when it is far behind the base branch."""
        base = self._base_revision()
        if base is None:
            return tree
        tree.update(
            laid_over=laid_over(rev) or rev.rev, base_rev=base.rev, base_commit=base.git_head,
            base_branch=base.git_branch, base_behind=0,
        )  # fmt: skip
        if base.git_head is None:
            return tree
        try:
            found = self._behind(base.git_head)
        except RagrafError as exc:  # a misconfigured base branch must not cost the answer
            notes.insert(0, f"{exc.message} ({exc.suggest})" if exc.suggest else exc.message)
            return tree
        if found is None:
            return tree
        ref, behind = found
        tree["base_behind"] = behind
        limit = self.settings.base_staleness_warn_commits
        if behind is None or behind > limit:
            how_far = f"{behind} commits" if behind is not None else "an unknown number of commits"
            notes.insert(
                0,
                f"the base index ({base.rev}, {base.git_head[:12]}) is {how_far} behind {ref.name} "
                f"(warns past {limit}): run `ragraf index` to update it",
            )
        return tree

    def _behind(self, commit: str) -> tuple[BaseRef, int | None] | None:
        """The base branch and how many commits it is ahead of commit; asked of git at most every
        few seconds (a long-running server answers many reads, and the warning is about dozens)."""
        now = time.monotonic()
        if (
            self._behind_cache is not None
            and self._behind_cache[0] == commit
            and now - self._behind_cache[1] < 5
        ):
            return self._behind_cache[2]
        ref = base_ref(self.settings)
        found = (ref, commits_between(self.settings.root, commit, ref.commit)) if ref else None
        self._behind_cache = (commit, now, found)
        return found

    def _apply_fail(
        self, policy: str, rev: Revision, guarded: GuardResult, env: Envelope
    ) -> tuple[Revision, DriftSet, Envelope]:
        if guarded.drift and policy == "fail":
            env.state = "refused"
            env.notes = [n for n in env.notes if "answering" not in n]  # no answer follows a refusal
            env.error = {
                "code": "drifted",
                "message": f"{len(guarded.drift.paths)} files changed on disk since {rev.rev} and the policy is fail",
                "suggest": "run `ragraf index`, or read the files live with `ragraf read`",
            }
        return rev, guarded.drift, env

    def _named_revision(self, name: str) -> Revision:
        found = self.store().revision(name.strip())
        if found is None:
            valid = [r.rev for r in self.store().revisions()]
            raise UsageError(
                f"no revision named {name!r}; retained revisions: {', '.join(valid)}",
                suggest="pick one of the listed revisions (`ragraf revisions`)",
            )
        return found

    # operations ----------------------------------------------------------------------------

    @names_damage
    def index(
        self,
        full: bool = False,
        dry_run_only: bool = False,
        quiet: bool = True,
        progress: Progress | None = None,
        wait: bool = True,
        lexical_only: bool = False,
        update_base: bool = True,
    ) -> IndexReport | dict[str, object]:
        """(Re)index the root: one writer at a time; the previous revision answers until this commits.
        In a git work tree the base follows the base branch first (unless update_base=False), then
        the work tree's view is laid over it."""
        progress = progress or Progress()
        if dry_run_only:
            store = None
            with contextlib.suppress(IndexMissingError, IndexCorruptError):
                store = open_store(self.settings)
            try:
                model_id, _dim, _why = self._model()
                return dry_run(store, self.settings, progress, model_id=model_id)
            finally:
                if store is not None:
                    store.close()
        self.close()
        if self.settings.store == "postgres":
            # One writer per repository across machines: the server's advisory lock, not a local flock.
            store = open_store(self.settings, create=True)
            try:
                with store.writer_lock(wait=wait, timeout_s=self.settings.lock_timeout_s):  # type: ignore[attr-defined]
                    return self._index_into(store, full, lexical_only, progress)
            finally:
                store.close()
        lock = WriterLock(self.settings.home, wait=wait, timeout_s=self.settings.lock_timeout_s)
        lock.acquire(on_wait=lambda who: progress.note(f"waiting for the index lock held by {who}"))
        try:
            store = self._open_to_write(full)
            try:
                return self._index_into(store, full, lexical_only, progress, update_base)
            finally:
                store.close()
        finally:
            lock.release()

    def _open_to_write(self, full: bool) -> Store:
        """The SQLite store to index into; with `full`, a damaged file (SQLite's quick_check reads
        every page) is removed and rebuilt from nothing: the embeddings come from the cache."""
        try:
            store = open_store(self.settings, create=True)
            if not full or store.damaged() is None:  # type: ignore[attr-defined]
                return store
            store.close()
        except IndexCorruptError:
            if not full:
                raise
        _remove_index_files(self.settings.db_path)
        return open_store(self.settings, create=True)

    def _index_into(
        self, store: Store, full: bool, lexical_only: bool, progress: Progress, with_base: bool = False
    ) -> IndexReport:
        """Both phases under the writer lock: the lexical revision, then its embeddings."""
        t0 = time.monotonic()
        model_id, dim, why = self._model()
        base = self._index_base(model_id, dim, why, full, lexical_only, progress) if with_base else None
        current = store.current_revision()
        under = base_revision(self.settings) if self.settings.view and not full else None
        # A new view, or an explicit run after the base moved: lay the work tree over the base anew.
        if under and under.git_head and (current is None or (with_base and laid_over(current) != under.rev)):
            seed = self._seed if self._seed is not None and self._seed.base == under else None
            self._seed = None
            seed = seed or plan_seed(self.settings, under)
            report = seed_view(store, self.settings, seed, model_id, dim, progress)
        else:
            report = run_index(store, self.settings, model_id, dim, full=full, progress=progress)
        self._embed_into(store, report, why, lexical_only, progress)
        report.base = base
        report.duration_s = time.monotonic() - t0  # both phases
        return report

    def _index_base(
        self,
        model_id: str,
        dim: int | None,
        why: str | None,
        full: bool,
        lexical_only: bool,
        progress: Progress,
    ) -> dict[str, object] | None:
        """A work tree's base: the base branch's head, indexed and embedded; None without a base branch."""
        if not self.settings.view or (ref := base_ref(self.settings)) is None:
            return None
        store = open_base(self.settings)
        try:
            report = update_base(store, self.settings, ref, model_id, dim, full, progress)
            self._embed_into(store, report, why, lexical_only, progress)
        finally:
            store.close()
        return {
            "branch": ref.name, "commit": ref.commit, "index_rev": report.index_rev,
            "new_revision": report.new_revision, "files": report.files, "files_read": report.files_read,
            "chunks": report.chunks,
            "embeddings": report.embeddings,
        }  # fmt: skip

    def _embed_into(
        self, store: Store, report: IndexReport, why: str | None, lexical_only: bool, progress: Progress
    ) -> None:
        embedder = self.embedder() if why is None else None
        if why is not None:
            report.embeddings = {"computed": 0, "cache_hits": 0, "failed": 0, "tokens": 0}
            report.warnings.append(f"embeddings unavailable: {why}; the index answers lexically")
        elif embedder is not None and not lexical_only:
            rev = store.current_revision()
            assert rev is not None
            report.embeddings, warning = embed_revision(store, self.settings, embedder, rev.rev_no, progress)
            if warning:
                report.warnings.append(warning)
            self._add_embedding_totals(embedder.model_id, report.embeddings)

    def _totals_path(self) -> Path:
        return self.settings.home / f"{self.settings.db_path.stem}.embedding-totals.json"

    def _add_embedding_totals(self, model: str, counts: dict[str, int]) -> None:
        """Running totals per model of what this index has asked embedders for (this machine)."""
        totals = self.embedding_totals()
        entry = totals.setdefault(model, {"computed": 0, "cache_hits": 0, "failed": 0, "tokens": 0})
        for key in entry:
            entry[key] += int(counts.get(key, 0))
        tmp = self._totals_path().with_suffix(".tmp")
        tmp.write_text(json.dumps(totals, indent=1))
        os.replace(tmp, self._totals_path())

    def embedding_totals(self) -> dict[str, dict[str, int]]:
        try:
            return json.loads(self._totals_path().read_text())
        except (OSError, ValueError):
            return {}

    @names_damage
    def search(
        self,
        query: str,
        k: int = 5,
        mode: str = "hybrid",
        rules: dict[str, bool] | None = None,
        reindex_on_drift: str | None = None,
    ) -> Envelope:
        """Hybrid search: the top k chunks for a query, with path:line."""
        if mode not in ("hybrid", "lexical", "vector"):
            raise UsageError(f"unknown search mode {mode!r}", suggest="use hybrid, lexical or vector")
        rev, drift, env = self._begin("search", reindex_on_drift)
        if env.state == "refused":
            return env
        k_asked = k
        k = max(0, min(int(k), MAX_K))
        if k != k_asked:
            env.notes.append(f"k={k_asked} clamped to {k} (allowed 0..{MAX_K})")
        if k == 0:
            env.notes.append("k=0: no results asked for; the envelope still reports freshness")
        if not query or not query.strip():
            env.notes.append("empty query: nothing to search for")
            return env
        vector_hits = self._vector_side(rev, query, mode, env)
        outcome = run_search(
            self.store(), rev.rev_no, query, k, mode=mode, vector_hits=vector_hits, rules=rules
        )
        env.notes.extend(outcome.notes)
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
                    stale=hit.path in drift.paths,
                    snippet=snippet,
                )
            )
        return env

    def _vector_side(self, rev: Revision, query: str, mode: str, env: Envelope) -> Any:
        """The vector retriever for this query, or None with the reason in the envelope (degraded)."""
        if mode == "lexical":
            return None
        cap = env.capability
        try:
            embedder = self.query_embedder()
            if embedder is None:
                if mode == "vector":
                    cap.degraded = True
                    cap.reasons.insert(
                        0, "no embedder configured (embedder = none): vector search answered lexically"
                    )
                return None
            model = rev.index_version.split("|", 1)[0]
            if embedder.model_id != model or cap.semantic_coverage == 0:
                cap.degraded = True
                cap.reasons.insert(
                    0,
                    f"no vectors for {embedder.model_id} in {rev.rev}: answered lexically; "
                    "run `ragraf index`",
                )
                return None
            query_vector = embedder.embed_query(query).astype("float32")
            dim = _indexed_dim(rev) or embedder.dim
            if query_vector.shape[-1] != dim:
                raise EmbedderError(
                    f"the embedder answered the query with a {query_vector.shape[-1]}-dimensional vector; "
                    f"{rev.rev} holds {dim}-dimensional ones",
                    suggest="check which model the embedding endpoint serves, or run `ragraf index --full`",
                )
        except RagrafError as exc:
            cap.degraded = True
            cap.semantic = False
            why = f"{exc.message}; search ran lexical-only"
            if exc.suggest and exc.suggest not in exc.message:
                why += f" ({exc.suggest})"
            cap.reasons.insert(0, why)
            return None
        store, vector = self.store(), query_vector.tobytes()
        return lambda limit: store.vector_search(rev.rev_no, model, vector, dim, limit)

    @names_damage
    def find_symbol(self, name: str, reindex_on_drift: str | None = None) -> Envelope:
        """Where NAME is defined: exact, then case-insensitive, then qualified (Class.method, pkg.Func)."""
        _require_name(name)
        rev, drift, env = self._begin("def", reindex_on_drift)
        if env.state == "refused":
            return env
        hits, how = find_definitions(self.store(), rev.rev_no, name)
        if how == "imported":
            env.notes.append(
                f"no definition of {name!r} in {rev.rev}: it comes from outside the index; "
                "the results are where it is imported (kind: import)"
            )
        elif how not in ("exact", "none"):
            env.notes.append(f"matched {how}")
        if not hits:
            env.notes.append(f"no definition of {name!r} in {rev.rev}; try `ragraf search`")
        env.results.extend(_fact(h, drift) for h in hits[:MAX_FACTS])
        env.truncated["results"] = max(0, len(hits) - MAX_FACTS)
        return env

    @names_damage
    def find_references(
        self, name: str, calls: bool = False, reindex_on_drift: str | None = None
    ) -> Envelope:
        """Who references (or with calls=True, calls) NAME, grouped by enclosing definition."""
        _require_name(name)
        rev, drift, env = self._begin("refs", reindex_on_drift)
        if env.state == "refused":
            return env
        hits = find_references(self.store(), rev.rev_no, name, calls)
        bare = bare_name(name)
        if bare != name.strip():
            # A use records the name used, not what it was called on: the qualifier cannot narrow.
            env.notes.append(
                f"uses are matched by their last part, {bare!r}: uses of any {bare!r} are listed"
            )
        if not hits:
            env.notes.append(f"no {'calls' if calls else 'references'} of {name!r} in {rev.rev}")
        env.results.extend(_fact(h, drift) for h in hits[:MAX_FACTS])
        env.truncated["results"] = max(0, len(hits) - MAX_FACTS)
        return env

    @names_damage
    def outline(self, path: str, reindex_on_drift: str | None = None) -> Envelope:
        """The definitions of one file as a tree (depth by containment), with lines."""
        rev, drift, env = self._begin("outline", reindex_on_drift)
        if env.state == "refused":
            return env
        rel, real = confine(self.settings.root, path)
        store = self.store()
        status = store.facts_status(rev.rev_no, rel)
        if status is None:
            raise _not_outlined(self.settings, rel or ".", real, rev.rev)
        hits = sorted(
            store.find_facts(rev.rev_no, "def", path=rel, limit=100_000),
            key=lambda h: (h.start_line, -h.end_line),
        )
        open_ends: list[int] = []
        for h in hits:
            while open_ends and open_ends[-1] < h.start_line:
                open_ends.pop()
            env.results.append({**_fact(h, drift), "depth": len(open_ends)})
            open_ends.append(h.end_line)
        if status in ("unsupported", "failed"):
            env.capability.facts = False
            env.notes.append(
                f"no fact rules for {language_of(rel)}; outline from the chunks instead"
                if status == "unsupported"
                else f"the parser gave up on {rel} when it was indexed; outline from the chunks instead"
            )
            for chunk in store.chunks_of(rev.rev_no, rel):
                env.results.append({
                    "name": chunk.symbol or f"lines {chunk.start_line}-{chunk.end_line}", "kind": "chunk",
                    "path": rel, "line": chunk.start_line, "end_line": chunk.end_line, "container": None,
                    "stale": rel in drift.paths, "depth": 0,
                })  # fmt: skip
        elif status == "partial":
            env.notes.append(f"{rel} has syntax errors: the outline may be incomplete")
        return env

    @names_damage
    def read(self, path: str, start_line: int | None = None, end_line: int | None = None) -> Envelope:
        """The file as it is on disk now (confined to the root), and whether it differs from the index."""
        if start_line is None and end_line is None:
            path, start_line, end_line = parse_spec(path)
        rev = self._current()
        env = self._envelope("read", rev)
        live = read_live(self.settings.root, path, start_line, end_line)
        indexed = self.store().manifest_entry(rev.rev_no, live.path)
        total = live.total_lines
        start = max(1, start_line or 1)
        end = min(total, end_line or total)
        if start > end:
            raise UsageError(
                f"line range {start_line}-{end_line} is outside {live.path} (1-{total})",
                suggest=f"ask for lines within 1-{total}",
            )
        settings = self.settings
        why = (
            left_out(settings.root, live.path, settings.max_file_bytes, settings.max_line_chars)
            if indexed is None
            else None
        )
        if why:
            env.notes.append(f"{live.path} is {why}")
        differs = indexed is None or indexed.sha256 != live.sha256
        if indexed is not None and differs:
            event = DriftEvent(
                rev.rev, "modify", live.path, "guard", indexed.sha256, live.sha256, indexed.content_id
            )
            with contextlib.suppress(sqlite3.OperationalError, StoreError):
                self.store().register_drift([event])
        if differs and not why:
            env.state = "drifted"
            reason = f"not in {rev.rev}" if indexed is None else f"modified after {rev.rev}"
            env.stale_warnings.append(StaleWarning(live.path, reason, "reindex"))
            env.drift["files"] = 1
        env.results.append({
            "path": live.path, "start_line": start, "end_line": end, "total_lines": total,
            "sha256": live.sha256, "indexed_sha256": indexed.sha256 if indexed else None,
            "differs_from_index": differs, "stale": False,
            "content": "\n".join(live.lines[start - live.first_line : end - live.first_line + 1]),
        })  # fmt: skip
        return env

    @names_damage
    def status(self, reindex_on_drift: str | None = None) -> Envelope:
        """The current revision, its counts, and what drifted on disk since."""
        rev, drift, env = self._begin("status", reindex_on_drift)
        env.results.append({
            "revision": rev.to_dict(), "root": str(self.settings.root), "home": str(self.settings.home),
            "store": self.settings.store, "index_file": str(self.settings.db_path),
            "embeddings": self.embedding_totals(),
            "drift": {"created": list(drift.created), "modified": list(drift.modified), "deleted": list(drift.deleted)},
        })  # fmt: skip
        return env

    @names_damage
    def drift(self, reindex_on_drift: str | None = None) -> Envelope:
        """The open drift-ledger entries of the current revision."""
        rev, _drift, env = self._begin("drift", reindex_on_drift)
        if env.state == "refused":
            return env
        env.results.extend(e.to_dict() for e in self.store().open_entries(rev.rev))
        return env

    @names_damage
    def changes(
        self, from_rev: str, to_rev: str | None = None, reindex_on_drift: str | None = None
    ) -> Envelope:
        """What changed in knowledge between two revisions (to_rev defaults to the current one)."""
        rev, _drift, env = self._begin("changes", reindex_on_drift)
        if env.state == "refused":
            return env
        a = self._named_revision(from_rev)
        b = self._named_revision(to_rev) if to_rev else rev
        if a.rev_no > b.rev_no:
            raise UsageError(
                f"--from {a.rev} is later than --to {b.rev}",
                suggest=f"swap them: --from {b.rev} --to {a.rev}",
            )
        env.results.append(changes_report(self.store(), a, b))
        return env

    @names_damage
    def revisions(self) -> Envelope:
        """Every retained revision, oldest first."""
        env = self._envelope("revisions", self._current())
        env.results.extend(r.to_dict() for r in self.store().revisions())
        return env

    @names_damage
    def doctor(self, pull: bool = False, check: bool = False) -> Envelope:
        """Health: the index opens, the embedder answers with the right dimension; --check verifies
        every invariant of the data; --pull fetches a missing Ollama model."""
        env = Envelope(op="doctor")
        checks: list[dict[str, Any]] = []

        def add(name: str, ok: bool, detail: str, suggest: str = "") -> None:
            checks.append({"check": name, "ok": ok, "detail": detail, "suggest": "" if ok else suggest})

        rev = None
        try:
            rev = self._current()
            env.index_rev, env.corpus_hash = rev.rev, rev.corpus_hash
            add(
                "index", True, f"{rev.rev}: {rev.files} files, {rev.chunks} chunks in {self.settings.db_path}"
            )
        except RagrafError as exc:
            add("index", False, exc.message, exc.suggest)
        self._doctor_embedder(rev, pull, add)
        if check and rev is not None:
            model = rev.index_version.split("|", 1)[0]
            problems = self.store().consistency_problems(rev.rev_no, None if model == "none" else model)
            leftovers = [p for p in problems if LEFTOVER_CONTENTS in p]
            problems = [p for p in problems if p not in leftovers]
            add(
                "consistency",
                not problems,
                "; ".join(problems)
                or "every manifest entry has its chunks, lexical rows, facts and vectors; no orphans",
                "run `ragraf index --full` to rebuild",
            )
            if leftovers:
                add("leftovers", True, f"{leftovers[0]}: the next index run or `ragraf gc` removes them")
        env.results.extend(checks)
        if not all(c["ok"] for c in checks):
            env.error = {
                "code": "unhealthy",
                "message": "; ".join(c["detail"] for c in checks if not c["ok"]),
                "suggest": next(c["suggest"] for c in checks if not c["ok"]),
            }
        return env

    def _doctor_embedder(self, rev: Revision | None, pull: bool, add: Any) -> None:
        try:
            embedder = self.embedder()
        except RagrafError as exc:
            add("embedder", False, exc.message, exc.suggest)
            return
        if embedder is None:
            add("embedder", True, "none: lexical search and facts only, on purpose")
            return
        pull_model = getattr(embedder, "pull", None)
        try:
            if pull_model is not None and hasattr(embedder, "installed_models"):
                names = embedder.installed_models()  # type: ignore[attr-defined]
                model = getattr(embedder, "model", "")
                if not any(n == model or n.split(":")[0] == model for n in names):
                    if not pull:
                        add("embedder", False, f"ollama has no model {model!r}", "run `ragraf doctor --pull`")
                        return
                    pull_model()
            vector = embedder.embed(["ragraf doctor probe"])
            model_id, dim = embedder.model_id, embedder.dim
        except RagrafError as exc:
            add("embedder", False, exc.message, exc.suggest)
            return
        add("embedder", True, f"{model_id} answers with {vector.shape[1]}-dimensional vectors")
        if rev is not None:
            indexed = rev.index_version.split("|", 2)
            same = indexed[0] == model_id and indexed[1] == f"dim={dim}"
            add(
                "index version",
                same,
                f"index built with {indexed[0]} ({indexed[1]}); configured {model_id} (dim={dim})",
                "run `ragraf index` (it rebuilds for the configured model)",
            )
            if same:
                coverage = self.store().vector_coverage(rev.rev_no, model_id)
                add(
                    "semantic coverage",
                    coverage >= 1.0,
                    f"{coverage:.0%} of chunks embedded",
                    "run `ragraf index` to finish embedding",
                )

    @names_damage
    def gc(self) -> dict[str, object]:
        """Apply retention: keep the last keep_revisions revisions and what they reference."""
        with WriterLock(self.settings.home, timeout_s=self.settings.lock_timeout_s):
            self._current()
            removed = self.store().gc(self.settings.keep_revisions)
        return {"op": "gc", "keep": self.settings.keep_revisions, **removed}


def _fact(hit: FactHit, drift: DriftSet) -> dict[str, Any]:
    """The fact shape of DESIGN §4, plus what an agent needs to act on it."""
    return {
        "name": hit.name, "kind": hit.kind or ("call" if hit.is_call else "reference"), "path": hit.path,
        "line": hit.line, "end_line": hit.end_line, "container": hit.container, "stale": hit.path in drift.paths,
        "start_line": hit.start_line, "signature": hit.signature,
    }  # fmt: skip


def _require_name(name: str) -> None:
    if not name.strip():
        raise UsageError("the name is empty", suggest="give a symbol name, e.g. TCPConnector or Client.send")


def _not_outlined(settings: Settings, rel: str, real: Path, rev: str) -> UsageError:
    """Why a path has no outline in the revision, in the words that say what to do."""
    if real.is_dir():
        return UsageError(
            f"{rel} is a folder", suggest="give a file, e.g. `ragraf outline src/app/server.py`"
        )
    if not real.is_file():
        return UsageError(f"{rel} is not in {rev} and not on disk", suggest="check the path")
    why = left_out(settings.root, rel, settings.max_file_bytes, settings.max_line_chars)
    if why:
        return UsageError(f"{rel} is {why}", suggest="read it yourself if you need it")
    return UsageError(
        f"{rel} is not in {rev}: it is new since",
        suggest="run `ragraf index`, or `ragraf read` it as it is now",
    )


def _indexed_dim(rev: Revision) -> int:
    """The dimension of a revision's vectors, from its index version (`model|dim=384|…`); 0 unknown."""
    field = rev.index_version.split("|")[1:2]
    return int(field[0].removeprefix("dim=")) if field and field[0].startswith("dim=") else 0


def _remove_index_files(db: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.remove(f"{db}{suffix}")


def error_envelope(op: str, exc: RagrafError) -> Envelope:
    """An envelope that carries an error (refusals exit 3, other errors 1)."""
    env = Envelope(op=op, state="refused")
    env.capability.lexical = False  # nothing was answered from the index
    env.error = exc.as_dict()
    return env
