"""The doctor: the index opens, the embedder answers with the indexed dimension, every invariant of the data holds."""

from __future__ import annotations

from typing import Any

from ragraf.api.envelope import Envelope
from ragraf.api.session import Session, names_damage
from ragraf.errors import RagrafError
from ragraf.index.lock import WriterLock
from ragraf.store import Revision
from ragraf.store.base import LEFTOVER_CONTENTS


class HealthOps(Session):
    """`doctor()`."""

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
            env.capability.facts = True  # every revision holds its facts (def, refs, outline answer)
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
                busy = WriterLock(self.settings.home).busy() if self.settings.store == "sqlite" else None
                # An index run at work is no fault: it is what finishes the embedding.
                add(
                    "semantic coverage",
                    coverage >= 1.0 or bool(busy),
                    f"{coverage:.1%} of chunks embedded"
                    + (f"; an index run is embedding now ({busy})" if busy and coverage < 1.0 else ""),
                    "run `ragraf index` to finish embedding",
                )
