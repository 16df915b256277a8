"""Every read's first step: guard the disk, apply the reindex_on_drift policy, open the envelope (DESIGN §6)."""

from __future__ import annotations

import contextlib
import sqlite3

from ragraf.api.envelope import Capability, Envelope, StaleWarning
from ragraf.api.session import Session
from ragraf.api.tiers import tier_coverage
from ragraf.errors import RagrafError, UsageError
from ragraf.freshness.guard import DriftSet, GuardResult, guard, remember
from ragraf.index.lock import WriterLock
from ragraf.store import Revision

MAX_STALE_WARNINGS = 50
POLICIES = ("warn", "auto", "fail")


class Guarded(Session):
    """The guard, the policy and the envelope every read answers in."""

    def _capability(self, rev: Revision) -> Capability:
        """What this revision can answer with: semantic coverage is of the configured model."""
        cap = Capability(lexical=True, semantic=False, semantic_coverage=0.0, facts=True)
        if self.settings.embedder.strip().lower() == "none":
            return cap  # lexical on purpose: nothing to warn about
        # A chunk is covered by any tier's vector; the static tier is embedded first and whole.
        cap.tiers = tier_coverage(self.store(), rev)
        cap.semantic_coverage = max(cap.tiers.values())
        cap.semantic = cap.semantic_coverage > 0
        transformer = cap.tiers.get("transformer", 1.0)
        if cap.semantic_coverage < 1.0 or transformer < 1.0:
            busy = WriterLock(self.settings.home).busy() if self.settings.store == "sqlite" else None
            todo = (
                f"an index run is embedding now ({busy})"
                if busy
                else "run `ragraf index` to finish embedding"
            )
            if cap.semantic_coverage < 1.0:
                cap.reasons.append(f"semantic coverage {cap.semantic_coverage:.0%}: {todo}")
            else:
                cap.reasons.append(
                    f"transformer tier {transformer:.0%}: the static tier answers for the other chunks; {todo}"
                )
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
