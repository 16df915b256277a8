"""The `def` check of benchmarks/facts_quality.py on a user's annotation file, through the real library."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import facts_quality, quality


def test_def_check_on_a_user_annotation_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = tmp_path / "repo"
    (repo / "src" / "tests").mkdir(parents=True)
    (repo / "src" / "config.py").write_text(
        "class Settings:\n    pass\n\ndef load_settings(path):\n    return Settings()\n"
    )
    (repo / "src" / "tests" / "test_config.py").write_text("class Settings:\n    debug = True\n")
    (repo / "src" / "render.py").write_text("def render_page(page):\n    return page\n")
    ann = tmp_path / "mine.json"
    ann.write_text(
        json.dumps(
            [
                {"query": "Settings", "relevant": ["src/config.py"], "category": "symbol"},
                {"query": "render_page", "relevant": ["src/config.py"], "category": "symbol"},
                {"query": "how settings are loaded", "relevant": ["src/config.py"], "category": "semantic"},
            ]
        )
    )
    corpus = quality.custom_corpus(ann, repo, "src")
    hits = facts_quality.gold_first("none", [corpus], homes=tmp_path / "homes")
    out = capsys.readouterr().out
    # The definition outside the tests wins; the second query's gold is wrong on purpose.
    assert hits == 1
    assert "ok  mine      'Settings'                   -> src/config.py" in out
    assert "MISS mine      'render_page'" in out
    assert "1/2 symbol queries (50.0%" in out
