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
    # In order: each bundle is the job's file (its records by position: ContentBundle).
    texts = [text for b in [first, *rest] for _, _, _, _, text, _ in b.chunks[:1]]
    assert texts == [files[p].rstrip("\n") for p in sorted(files)]


def test_a_submission_holds_fewer_files_when_they_are_big(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Generated headers of about 1 MB each: sixteen of them a submission come back as hundreds of
    # MB of chunks and facts, a few submissions of which wait in the indexer.
    monkeypatch.setattr(workers, "_CHUNK_BYTES", 10_000)
    files = {f"big/r{i:02d}.h": f"#define REG_{i} 0x1\n" * 500 for i in range(6)}  # ~9.5 kB each
    files |= {f"small/s{i:02d}.py": f"x = {i}\n" for i in range(40)}
    write(tmp_path, files)
    settings = load_settings(tmp_path, env={"RAGRAF_HOME": str(tmp_path / "home")})
    tasks = [(("", language_of(p), settings.chunk_params()), p, settings) for p in sorted(files)]
    slices = list(workers._submissions(tasks, range(len(tasks))))
    assert slices[0][0] == 0 and slices[-1][1] == len(tasks)
    assert all(a[1] == b[0] for a, b in zip(slices, slices[1:], strict=False))  # contiguous
    sizes = [last - first for first, last in slices]
    assert sizes[:3] == [2, 2, 2]  # two big files pass the cap
    assert sizes[3:] == [16, 16, 8]  # small files go _CHUNK at a time


def test_new_contents_are_stored_in_smaller_batches_when_their_chunks_are_big(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragraf import Index
    from ragraf.index import indexer
    from ragraf.store.sqlite import SqliteStore

    root = tmp_path / "repo"
    files = {f"gen/r{i:02d}.h": f"#define REG_{i}_VALUE 0x1\n" * 400 for i in range(8)}  # ~10 kB each
    files |= {f"src/m{i:03d}.py": f"def f{i}():\n    return {i}\n" for i in range(100)}
    write(root, files)
    batches: list[int] = []
    add = SqliteStore.add_contents

    def counted(self, items, *rest):  # type: ignore[no-untyped-def]
        if items:
            batches.append(len(items))
        return add(self, items, *rest)

    monkeypatch.setattr(SqliteStore, "add_contents", counted)
    monkeypatch.setattr(indexer, "_BATCH_TEXT", 25_000)
    monkeypatch.setattr(indexer, "_BATCH_FILES", 50)
    idx = Index.open(root, home=str(tmp_path / "home"))
    report = idx.index()
    assert report.files["added"] == len(files)
    assert sum(batches) == len(files)
    # Two or three ~10 kB headers pass 25,000 characters of chunk text (text and its index form);
    # the small files go 50 at a time.
    assert all(n <= 3 for n in batches[:3]) and max(batches) == 50
    hits = idx.search("REG_5_VALUE", mode="lexical", k=3)
    assert hits.results and hits.results[0].path == "gen/r05.h"
