"""A linked work tree's reads (DESIGN §10): its changes laid over the base lazily, and how far the base is behind."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ragraf.api.session import Session
from ragraf.errors import IndexMissingError, LockHeldError, RagrafError
from ragraf.freshness.guard import DriftSet, GuardResult
from ragraf.store import Revision, laid_over, view_label

if TYPE_CHECKING:
    from ragraf.corpus.gitrepo import BaseRef


class WorkTreeViews(Session):
    """A work tree's view: refreshed before a read when few files moved, else answered marked."""

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
            from ragraf.index.overlay import plan_seed  # the indexer loads only when a view is laid

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
            assert not isinstance(report, dict)
            tree["refresh"] = "refreshed"
            tree["indexed"] = {"files_read": report.files_read, "chunks_new": report.chunks["new"]}

    def _touched_drift(self, base: Revision, changed: list[str]) -> DriftSet:
        """The drift of a work tree against the base, as git names it (nothing is read)."""
        from ragraf.corpus.discover import discover

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
        from ragraf.corpus.gitrepo import base_ref, commits_between

        ref = base_ref(self.settings)
        found = (ref, commits_between(self.settings.root, commit, ref.commit)) if ref else None
        self._behind_cache = (commit, now, found)
        return found
