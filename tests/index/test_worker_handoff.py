"""The pool's bundles reach the indexer a few submissions ahead of its writes, not all at once: what
the workers finish before the indexer takes it waits in the indexer's memory (issue 28)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support import write

from ragraf.config import load_settings
from ragraf.index import workers
from ragraf.languages import language_of


def test_the_pool_runs_only_a_few_submissions_ahead_of_the_caller(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {f"pkg/m{i:03d}.py": f"def f{i}(x):\n    return x + {i}\n" for i in range(600)}
    write(tmp_path, files)
    settings = load_settings(tmp_path, env={"RAGRAF_HOME": str(tmp_path / "home")})
    submitted: list[int] = []
    made = workers._pool

    def counted(n: int, method: str):  # type: ignore[no-untyped-def]
        pool = made(n, method)
        submit = pool.submit
        pool.submit = lambda *a, **k: (submitted.append(len(a[1])), submit(*a, **k))[1]  # type: ignore[method-assign]
        return pool

    monkeypatch.setattr(workers, "_pool", counted)
    jobs = [(("", language_of(p), settings.chunk_params()), p) for p in sorted(files)]
    bundles = workers.prepare_all(jobs, settings)
    first = next(bundles)
    assert first is not None and first.chunks
    ahead = sum(submitted)
    # Executor.map would have submitted all 600 jobs before the first bundle came back.
    assert 0 < ahead <= workers._CHUNK * 4 * min(os.cpu_count() or 1, 8) < len(files)
    rest = list(bundles)
    assert len(rest) == len(files) - 1 and all(b is not None for b in rest)
    assert sum(submitted) == len(files)
    # In order: each bundle is the job's file.
    assert [b.chunks[0].text for b in [first, *rest]] == [files[p].rstrip("\n") for p in sorted(files)]
