"""Index runs: the writer lock, the lexical revision, its embeddings, a work tree's base, and retention."""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ragraf.api.session import Session, names_damage
from ragraf.api.tiers import static_model
from ragraf.errors import IndexCorruptError, IndexMissingError, RagrafError
from ragraf.index.lock import WriterLock
from ragraf.index.progress import Progress
from ragraf.store import Revision, Store, open_store
from ragraf.store.sqlite.integrity import check_pages, seal

if TYPE_CHECKING:  # the indexer and the embedders load when an index run starts, not with every read
    from ragraf.index.indexer import IndexReport


class IndexRuns(Session):
    """`index()` and `gc()`: the writes of an Index."""

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
            from ragraf.index.indexer import dry_run

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
                report = self._index_into(store, full, lexical_only, progress, update_base)
            finally:
                store.close()
            seal(self.settings.db_path)  # the next run skips the page check if nothing else wrote the file
            return report
        finally:
            lock.release()

    def _open_to_write(self, full: bool) -> Store:
        """The SQLite store to index into; with `full`, a damaged file (SQLite's quick_check reads
        every page) is removed and rebuilt from nothing: the embeddings come from the cache; without,
        a damaged file is refused (store/sqlite/integrity.py: checked when it changed since the last run)."""
        try:
            store = open_store(self.settings, create=True)
            if not full:
                # A page damaged mid-file is found here, not weeks later by the query that reaches it.
                try:
                    check_pages(store.db, self.settings.db_path)  # type: ignore[attr-defined]
                except IndexCorruptError:
                    store.close()
                    raise
                return store
            if store.damaged() is None:  # type: ignore[attr-defined]
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
        from ragraf.index.indexer import laid_over, run_index, static_in_pass
        from ragraf.index.overlay import base_revision, plan_seed, seed_view

        t0 = time.monotonic()
        model_id, dim, why = self._model()
        in_pass_cm = static_in_pass(self._static_in_pass) if not lexical_only and why is None else None
        with in_pass_cm or contextlib.nullcontext() as in_pass:
            base = self._index_base(model_id, dim, why, full, lexical_only, progress) if with_base else None
            current = store.current_revision()
            under = base_revision(self.settings) if self.settings.view and not full else None
            # A new view, or an explicit run after the base moved: lay the work tree over the base anew.
            if (
                under
                and under.git_head
                and (current is None or (with_base and laid_over(current) != under.rev))
            ):
                seed = self._seed if self._seed is not None and self._seed.base == under else None
                self._seed = None
                seed = seed or plan_seed(self.settings, under)
                report = seed_view(store, self.settings, seed, model_id, dim, progress)
            else:
                report = run_index(store, self.settings, model_id, dim, full=full, progress=progress)
        self._embed_into(store, report, why, lexical_only, progress, in_pass.embedded if in_pass else 0)
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
        from ragraf.corpus.gitrepo import base_ref
        from ragraf.index.overlay import update_base
        from ragraf.store import open_base

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
            **({"static_embeddings": report.static_embeddings} if report.static_embeddings is not None else {}),
        }  # fmt: skip

    def _embed_into(
        self,
        store: Store,
        report: IndexReport,
        why: str | None,
        lexical_only: bool,
        progress: Progress,
        in_pass: int = 0,
    ) -> None:
        """The embedding phase; `in_pass` chunks got their static vector beside the parse already
        (counted as computed by the static tier's phase)."""
        embedder = self.embedder() if why is None else None
        if why is not None:
            report.embeddings = {"computed": 0, "cache_hits": 0, "failed": 0, "tokens": 0}
            report.warnings.append(f"embeddings unavailable: {why}; the index answers lexically")
        elif embedder is not None and not lexical_only:
            from ragraf.index.embedding import embed_revision

            rev = store.current_revision()
            assert rev is not None
            self._embed_static_tier(store, report, rev, progress)
            report.embeddings, warning = embed_revision(store, self.settings, embedder, rev.rev_no, progress)
            if warning:
                report.warnings.append(warning)
            counts = report.static_embeddings if report.static_embeddings is not None else report.embeddings
            counts["computed"] = counts.get("computed", 0) + in_pass
            self._add_embedding_totals(embedder.model_id, report.embeddings)

    def _static_in_pass(self) -> tuple[str, int] | None:
        """(model, dim) of the static table this index embeds with, the embedder itself or the tier
        beside a transformer, for the workers to embed each new chunk with as they chunk it."""
        embedder = self.embedder()
        if embedder is None:
            return None  # a lexical index: no table, and no numpy for a one-file run
        from ragraf.embed.static import StaticEmbedder, static_tier

        tier = embedder if isinstance(embedder, StaticEmbedder) else static_tier(self.settings)
        if tier is None:
            return None
        try:
            return tier.model_id, tier.dim
        except RagrafError:
            return None  # the embedding phase says why

    def _embed_static_tier(
        self, store: Store, report: IndexReport, rev: Revision, progress: Progress
    ) -> None:
        """The static tier before the transformer's: seconds for the whole revision, so every chunk
        has a vector when the run moves on to the slow tier."""
        from ragraf.embed.static import static_tier
        from ragraf.index.embedding import embed_revision

        tier = static_tier(self.settings)
        if tier is None:
            return
        if not static_model(rev):  # the index version has no static tier: its table would not load
            try:
                tier.load()
            except RagrafError as exc:
                report.warnings.append(f"static tier unavailable: {exc.message} ({exc.suggest})")
            return
        report.static_embeddings, warning = embed_revision(store, self.settings, tier, rev.rev_no, progress)
        if warning:
            report.warnings.append(warning)

    def _totals_path(self) -> Path:
        return self.settings.home / f"{self.settings.db_path.stem}.embedding-totals.json"

    def _add_embedding_totals(self, model: str, counts: dict[str, int]) -> None:
        """Running totals per model of what this index has asked embedders for (this machine)."""
        totals = self.embedding_totals()
        entry = totals.setdefault(model, {"computed": 0, "cache_hits": 0, "failed": 0, "tokens": 0})
        for key in entry:
            entry[key] += int(counts.get(key, 0))
        tmp = self._totals_path().with_suffix(".tmp")
        # A PostgreSQL index keeps nothing else in its home, which may not exist yet.
        tmp.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(totals, indent=1))
        os.replace(tmp, self._totals_path())

    def embedding_totals(self) -> dict[str, dict[str, int]]:
        try:
            return json.loads(self._totals_path().read_text())
        except (OSError, ValueError):
            return {}

    @names_damage
    def gc(self) -> dict[str, object]:
        """Apply retention: keep the last keep_revisions revisions and what they reference."""
        with WriterLock(self.settings.home, timeout_s=self.settings.lock_timeout_s):
            self._current()
            removed = self.store().gc(self.settings.keep_revisions)
        return {"op": "gc", "keep": self.settings.keep_revisions, **removed}


def _remove_index_files(db: Path) -> None:
    for suffix in ("", "-wal", "-shm", ".checked"):
        with contextlib.suppress(FileNotFoundError):
            os.remove(f"{db}{suffix}")
