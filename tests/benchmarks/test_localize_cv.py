"""benchmarks/localize_cv.py: the offline fusion is localize's own, and its cross-validation holds a
repository out of the fit that scores it."""

from __future__ import annotations

from pathlib import Path

from benchmarks import localize_cv
from benchmarks.localize import Task

REPORT = """Parsing a config with an empty section fails

    Traceback (most recent call last):
      File "/home/me/run.py", line 3, in <module>
        load_config("app.cfg")
      File "/usr/lib/python3/site-packages/demo/config.py", line 12, in load_config
        return parse_sections(text)
    ValueError: section name must not be empty

load_config should skip an empty section; parse_sections raises instead.
"""


def write_tree(root: Path) -> None:
    files = {
        "demo/config.py": "def load_config(path):\n    text = open(path).read()\n"
        + "\n" * 8
        + "    return parse_sections(text)\n\n\ndef parse_sections(text):\n"
        + "    raise ValueError('section name must not be empty')\n",
        "demo/cli.py": "from demo.config import load_config\n\n\ndef main():\n    load_config('app.cfg')\n",
        "demo/render.py": "def render(page):\n    return page.title\n",
        "tests/test_config.py": "from demo.config import load_config\n\n\ndef test_empty():\n"
        + "    load_config('empty.cfg')\n",
        "README.md": "# demo\n\nReads a config file with sections.\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_the_offline_fusion_ranks_files_as_localize_does(tmp_path: Path) -> None:
    task = Task("demo-1", "demo", tmp_path / "unused.bundle", "demo-1", REPORT, ["demo/config.py"])
    write_tree(tmp_path / "trees" / "demo-1")
    [record] = localize_cv.capture([task], tmp_path, "none")
    assert record["shown"][0] == "demo/config.py"
    assert localize_cv.ranked_files(record, localize_cv.product_params())[:10] == record["shown"]
    assert "traceback" in record["ranks"]["demo/config.py"]
    assert record["ranks"]["demo/cli.py"].get("callers") == 0  # it calls load_config, defined elsewhere
    callers_only = {k: 0.0 for k in localize_cv.product_params()} | {"K": 4.0, "w_callers": 1.0}
    assert localize_cv.ranked_files(record, callers_only)[0] == "demo/cli.py"


def synthetic(repo: str, n: int, helps: bool) -> list[localize_cv.Record]:
    """Tasks where the candidate `callers` channel points at the file the text channel ranked
    second: the gold file (helps=True, the text put a wrong file first) or a wrong one (the text
    put the gold file first)."""
    first, second = ("src/wrong.py", "src/gold.py") if helps else ("src/gold.py", "src/wrong.py")
    return [
        {
            "id": f"{repo}-{i}", "repo": repo, "gold": ["src/gold.py"],
            "ranks": {first: {"text": 0}, second: {"text": 1, "callers": 0}},
            "files": {p: {"kind": "code", "example": False, "vendored": False} for p in (first, second)},
        }
        for i in range(n)
    ]  # fmt: skip


def test_a_parameter_fitted_on_the_other_repositories_scores_the_held_out_one() -> None:
    records = synthetic("a", 3, True) + synthetic("b", 3, True) + synthetic("c", 3, False)
    product = localize_cv.product_params()
    assert round(localize_cv.accuracy(records, lambda r: localize_cv.ranked_files(r, product))[1]) == 33
    fitted = localize_cv.fit(records, product, ["w_callers"])
    assert round(localize_cv.accuracy(records, lambda r: localize_cv.ranked_files(r, fitted))[1]) == 67
    cv, chosen = localize_cv.cross_validated(records, ["w_callers"])
    assert chosen["c"].get("w_callers", 0) > 0  # fitted on a and b, where callers helps
    assert chosen["a"] == chosen["b"] == {}  # one repository helped, c hurt as much: left unchanged
    assert cv[1] == 0.0  # a and b as before, c now wrong: the fit does not carry over
