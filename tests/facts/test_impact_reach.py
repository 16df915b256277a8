"""What impact reaches beyond calls: callbacks and properties, and which files count as test files."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest
from facts.test_graph import _indexed

from ragraf.api import Index

REACH = {
    "lib/__init__.py": "",
    "lib/core.py": (
        "class Context:\n"  # 1
        "    def __init__(self):\n"  # 2
        "        self._meta = {}\n"  # 3
        "\n"
        "    @property\n"  # 5
        "    def meta(self):\n"  # 6
        "        return self._meta\n"  # 7
        "\n"
        "    def handler(self):\n"  # 9
        "        return 1\n"  # 10
        "\n\n"
        "def on_done(value):\n"  # 13
        "    return value\n"  # 14
        "\n\n"
        "def run(callback, value):\n"  # 17
        "    return callback(value)\n"  # 18
        "\n\n"
        "def finish(value):\n"  # 21
        "    return run(on_done, value)\n"  # 22
        "\n\n"
        "def read_meta(ctx):\n"  # 25
        "    return ctx.meta\n"  # 26
        "\n\n"
        "def read_handler(obj):\n"  # 29
        "    return obj.handler\n"  # 30
    ),
    "tests/test_finish.py": "from lib.core import finish\n\n\ndef test_finish():\n    assert finish(2) == 2\n",
    "tests/test_meta.py": "from lib.core import read_meta\n\n\ndef test_meta(ctx):\n    assert read_meta(ctx) == {}\n",
    "tests/test_handler.py": (
        "from lib.core import read_handler\n\n\ndef test_handler(ctx):\n    assert read_handler(ctx)\n"
    ),
    # a sample for a type checker: it runs no test of its own
    "tests/typing/typing_finish.py": "from lib.core import finish\n\nfinish(1)\n",
    # nor does a file the test runners do not collect, whatever it defines
    "tests/example_finish.py": "from lib.core import finish\n\n\ndef test_sample():\n    finish(1)\n",
}


@pytest.fixture
def reach(tmp_path: Path) -> Path:
    return _indexed(tmp_path / "reach", REACH)


def _test_files(root: Path, rel: str, line: int) -> list[dict]:
    """impact's test files for a diff that makes the body at `line` of `rel` raise."""
    old = (root / rel).read_text()
    lines = old.split("\n")
    indent = len(lines[line - 1]) - len(lines[line - 1].lstrip())
    lines.insert(line - 1, " " * indent + "raise RuntimeError('broken')")
    new = "\n".join(lines)
    diff = "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{rel}", f"b/{rel}"))
    with Index.open(root) as idx:
        env = idx.impact(diff=diff)
    return [r for r in env.results if r["role"] == "test_file"]


def test_a_function_handed_on_as_a_callback_reaches_the_tests_of_who_hands_it_on(reach: Path) -> None:
    files = _test_files(reach, "lib/core.py", 14)
    assert [f["path"] for f in files] == ["tests/test_finish.py"]
    chain = files[0]["chain"]
    assert chain[0]["to"] == "finish" and chain[0]["kind"] == "reference" and chain[0]["line"] == 22


def test_a_property_is_reached_by_a_read_of_its_attribute(reach: Path) -> None:
    files = _test_files(reach, "lib/core.py", 7)
    assert [f["path"] for f in files if f["how"] == "calls"] == ["tests/test_meta.py"]
    read = files[0]["chain"][0]
    assert (read["from"], read["to"], read["kind"]) == ("Context.meta", "read_meta", "reference")
    assert read["line"] == 26


def test_a_plain_method_is_not_reached_by_an_attribute_read_on_an_object_of_unknown_type(
    reach: Path,
) -> None:
    # obj.handler names the method without running it, and obj's type is not known
    files = _test_files(reach, "lib/core.py", 10)
    assert [f["path"] for f in files if f["how"] == "calls"] == []


def test_a_file_under_the_tests_with_no_test_in_it_is_not_a_test_file(reach: Path) -> None:
    files = _test_files(reach, "lib/core.py", 22)
    assert [f["path"] for f in files] == ["tests/test_finish.py"]
    with Index.open(reach) as idx:
        callers = {r["path"] for r in idx.callers("finish", depth=1).results}
    # still callers, just not test files
    assert {"tests/typing/typing_finish.py", "tests/example_finish.py"} <= callers


RANKED = {
    "lib/__init__.py": "",
    "lib/alpha.py": (
        "def target():\n    return 1\n\n\n"
        "def l1():\n    return target()\n\n\n"
        "def l2():\n    return l1()\n\n\n"
        "def l3():\n    return l2()\n\n\n"
        "def show(page):\n    return page.render()\n"
    ),
    "lib/pages.py": (
        "class Page:\n    def render(self):\n        return 'page'\n\n\n"
        "class Post:\n    def render(self):\n        return 'post'\n"
    ),
    "tests/test_aardvark.py": "from lib.alpha import l1\n\n\ndef test_one():\n    assert l1()\n",
    "tests/test_alpha.py": "from lib.alpha import l1\n\n\ndef test_one():\n    assert l1()\n",
    "tests/test_deep.py": "from lib.alpha import l3\n\n\ndef test_deep():\n    assert l3()\n",
    "tests/test_named.py": "def test_named(api):\n    assert api.target()\n",
    "tests/test_fakes.py": "".join(
        f"class Fake{i}:\n    def render(self):\n        return {i}\n\n\n" for i in range(8)
    )
    + "def test_fakes():\n    assert Fake0().render() == 0\n",
}


@pytest.fixture
def ranked(tmp_path: Path) -> Path:
    return _indexed(tmp_path / "ranked", RANKED)


def test_test_files_rank_by_distance_the_one_named_after_the_changed_file_first(ranked: Path) -> None:
    files = [(f["path"], f["how"]) for f in _test_files(ranked, "lib/alpha.py", 2)]
    # test_alpha.py and test_aardvark.py both reach target in two hops: test_alpha.py is named for
    # alpha.py; test_named.py only uses the name, on an object of unknown type, and ranks as if two
    # hops further; test_deep.py reaches it in four
    assert files == [
        ("tests/test_alpha.py", "calls"),
        ("tests/test_aardvark.py", "calls"),
        ("tests/test_named.py", "name"),
        ("tests/test_deep.py", "calls"),
    ]


def test_a_call_in_the_library_on_an_object_of_unknown_type_is_not_a_call_of_a_test_class(
    ranked: Path,
) -> None:
    with Index.open(ranked) as idx:
        sites = {(r["name"], r["line"]): r for r in idx.callees("show").results}
    # ten classes define render, eight of them in a test file: the library's call means one of the two
    assert {t["qualified"] for t in sites[("render", 18)]["targets"]} == {"Page.render", "Post.render"}


def test_a_class_handed_on_as_a_value_is_made_where_it_is_handed_on_not_where_it_is_tested(
    tmp_path: Path,
) -> None:
    root = _indexed(tmp_path / "made", {
        "lib.py": (
            "class Widget:\n    def __init__(self):\n        self.x = 1\n\n\n"  # 1-3
            "def build(**attrs):\n    attrs.setdefault('cls', Widget)\n    return attrs['cls']()\n\n\n"  # 6-8
            "def check(x: Widget) -> bool:\n    return isinstance(x, Widget)\n"  # 11-12
        ),
        "tests/test_build.py": "from lib import build\n\n\ndef test_build():\n    assert build().x == 1\n",
        "tests/test_check.py": "from lib import check\n\n\ndef test_check():\n    assert not check(1)\n",
    })  # fmt: skip
    files = _test_files(root, "lib.py", 3)
    assert [f["path"] for f in files] == ["tests/test_build.py"]
    assert [c["to"] for c in files[0]["chain"]][:2] == ["Widget", "build"]
