"""Helpers of corpora.py and speed.py that need no network and no index."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from benchmarks import corpora, speed


def make_tar(path: Path, files: dict[str, str]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("package/evil")
        link.type = tarfile.SYMTYPE
        link.linkname = "/etc/passwd"
        tar.addfile(link)
    return path


def test_unpack_strips_prefix_and_places_under_into(tmp_path: Path) -> None:
    tgz = make_tar(
        tmp_path / "p.tgz", {"package/src/a.ts": "a", "package/package.json": "{}", "other/x": "x"}
    )
    n = corpora.unpack(tgz, tmp_path / "out", strip="package/", into="packages/zod/")
    assert n == 2
    assert (tmp_path / "out/packages/zod/src/a.ts").read_text() == "a"
    assert (tmp_path / "out/packages/zod/package.json").exists()
    assert not (tmp_path / "out/packages/zod/evil").exists()  # links are not unpacked
    assert not (tmp_path / "out/other").exists()


def test_verify_reports_missing_and_outside_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(corpora, "DATA_DIR", tmp_path / "data")
    bench = tmp_path / "bench"
    (bench / "annotations").mkdir(parents=True)
    (bench / "annotations" / "r.json").write_text(
        json.dumps(
            [
                {
                    "query": "q",
                    "relevant": ["lib/a.js", {"path": "lib/b.js", "start_line": 1, "end_line": 2}],
                    "secondary": ["README.md"],
                    "category": "semantic",
                },
            ]
        )
    )
    spec = corpora.CorpusSpec("r", "javascript", "npm", "r@1", "package/", "", "lib")
    (spec.root).mkdir(parents=True)
    (spec.root / "a.js").write_text("")
    (spec.path / "README.md").write_text("")
    assert corpora.annotation_paths(bench / "annotations" / "r.json") == ["lib/a.js", "lib/b.js", "README.md"]
    problems = corpora.verify(spec, bench)
    assert problems == ["r: lib/b.js does not exist", "r: README.md is outside index_root lib"]


def test_figure_verdicts_and_query_files(tmp_path: Path) -> None:
    assert speed.Figure("a", "cold", 450, "files/s", "cold_files_per_s").verdict() == "ok"
    assert speed.Figure("b", "p50", 25, "ms", "search_p50_ms").verdict() == "MISS"
    assert speed.Figure("c", "info", 1, "s").verdict() == ""
    q = tmp_path / "q.txt"
    q.write_text("how are sessions stored\n\nQuerySet\n")
    assert speed.load_queries(q) == (["how are sessions stored"], ["QuerySet"])
    nl, ident = speed.load_queries(None)
    assert len(nl) + len(ident) >= 50 and len(ident) >= 10


def test_pick_file_and_edit_change_one_file(tmp_path: Path) -> None:
    for i, size in enumerate([10, 500, 2000]):
        (tmp_path / f"m{i}.py").write_text("x" * size)
    f = speed.pick_file(tmp_path)
    assert f.name == "m1.py"
    before = f.read_text()
    speed.edit(f, 1)
    assert f.read_text().startswith(before) and f.read_text() != before
    assert speed.files_total({"files": {"added": 2, "modified": 1, "unchanged": 7, "deleted": 3}}) == 10


def test_render_puts_targets_next_to_figures() -> None:
    figs = [
        speed.Figure("cold_files_per_s", "cold index", 512.0, "files/s", "cold_files_per_s"),
        speed.Figure("nl_p50", "nl p50 / p95", 3.0, "ms"),
        speed.Figure("nl_p95", "", 9.0, "ms"),
    ]
    out = io.StringIO()
    speed.render({"corpus": "c", "cpus": 2, "repeat": 3, "notes": ["n1"], "_figures": figs}, out)
    text = out.getvalue()
    assert "512 files/s" in text and ">= 300" in text and "ok" in text
    assert "3.0 / 9.0 ms" in text and "note: n1" in text
