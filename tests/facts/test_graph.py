"""The code graph: call sites resolved to definitions, callers to a depth, cycles, bad input."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import cli_json, run_cli, write

from ragraf.api import Index

PROJECT = {
    "pkg/__init__.py": "from .api import get, post\nfrom . import util\n",
    "pkg/api.py": (
        "from .sessions import Session\n"
        "from .util import reverse as rev\n\n\n"
        "def get(url):\n    return request('get', url)\n\n\n"
        "def post(url):\n    return request('post', url)\n\n\n"
        "def request(method, url):\n"
        "    s = Session()\n"
        "    items = [1, 2]\n"
        "    items.reverse()\n"
        "    rev(items)\n"
        "    len(items)\n"
        "    return s.send(method, url)\n"
    ),
    "pkg/sessions.py": (
        "class Session:\n"
        "    def send(self, method, url):\n        return self.prepare(method) + url\n\n"
        "    def prepare(self, method):\n        return method.upper()\n\n"
        "    def ping(self, n):\n        return self.pong(n - 1) if n else self.ping(n)\n\n"
        "    def pong(self, n):\n        return self.ping(n)\n"
    ),
    "pkg/util.py": "def reverse(xs):\n    return xs[::-1]\n",
    "tests/test_api.py": (
        "import pkg\nfrom pkg.sessions import Session\n\n\n"
        "def test_get():\n    assert pkg.get('x')\n\n\n"
        "def test_prepare():\n    assert Session().prepare('a') == 'A'\n"
    ),
}


def _indexed(root: Path, files: dict[str, str]) -> Path:
    write(root, files)
    with Index.open(root) as idx:
        idx.index()
    return root


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return _indexed(tmp_path / "proj", PROJECT)


def _sites(env) -> dict[tuple[str, int], dict]:
    return {(r["name"], r["line"]): r for r in env.results}


def test_callees_say_how_each_call_resolved_and_do_not_pass_off_a_method_of_a_list(project: Path) -> None:
    with Index.open(project) as idx:
        sites = _sites(idx.callees("request"))
    assert sites[("Session", 14)]["how"] == "import"
    assert sites[("Session", 14)]["targets"][0]["path"] == "pkg/sessions.py"
    # `items.reverse()` is a list's method, not the project's `reverse`
    assert sites[("reverse", 16)]["how"] == "unresolved" and sites[("reverse", 16)]["targets"] == []
    # through an alias: `from .util import reverse as rev`
    assert sites[("rev", 17)]["how"] == "import"
    assert sites[("rev", 17)]["targets"][0]["path"] == "pkg/util.py"
    assert sites[("len", 18)]["how"] == "unresolved"
    assert sites[("send", 19)]["targets"][0]["qualified"] == "Session.send"


def test_a_call_on_self_resolves_to_the_method_of_the_same_class(project: Path) -> None:
    with Index.open(project) as idx:
        sites = _sites(idx.callees("Session.send"))
    assert sites[("prepare", 3)]["how"] == "exact"
    assert sites[("prepare", 3)]["targets"][0]["line"] == 5


def test_callers_follow_calls_transitively_with_distance_and_chain(project: Path) -> None:
    with Index.open(project) as idx:
        one = idx.callers("Session.prepare", depth=1)
        three = idx.callers("Session.prepare", depth=4)
    assert {r["qualified"] for r in one.results} == {"Session.send", "test_prepare"}
    found = {r["qualified"]: r for r in three.results}
    assert found["request"]["distance"] == 2
    assert found["get"]["distance"] == 3
    assert [c["to"] for c in found["get"]["chain"]] == ["Session.send", "request", "get"]
    # `pkg.get(...)` in a test: through the package's re-export of .api.get
    assert found["test_get"]["distance"] == 4


def test_recursion_and_mutual_recursion_end(project: Path) -> None:
    with Index.open(project) as idx:
        env = idx.graph("Session.ping", depth=1000, direction="both")
    names = [r["qualified"] for r in env.results]
    assert sorted(names) == ["Session.ping", "Session.pong"]
    assert any("clamped" in n for n in env.notes)


def test_depth_zero_is_the_definition_alone(project: Path) -> None:
    with Index.open(project) as idx:
        env = idx.graph("request", depth=0)
    assert [r["qualified"] for r in env.results] == ["request"]


def test_the_budget_cuts_nodes_and_counts_them(project: Path) -> None:
    with Index.open(project) as idx:
        env = idx.callers("Session.prepare", depth=5, budget=2)
    assert len(env.results) == 1  # the root counts against the budget
    assert env.truncated["nodes"] >= 1


def test_an_unknown_name_says_so_and_suggests_search(project: Path) -> None:
    env = cli_json("callers", "no_such_function", cwd=project)
    assert env["results"] == []
    assert any("ragraf search" in n for n in env["notes"])


def test_a_negative_depth_is_a_usage_error_not_a_traceback(project: Path) -> None:
    out = run_cli("callers", "request", "--depth", "-1", cwd=project)
    assert out.returncode == 2
    assert "Traceback" not in out.stderr and "depth" in out.stderr


def test_callees_through_the_cli_carry_the_envelope(project: Path) -> None:
    env = cli_json("callees", "get", cwd=project)
    assert env["op"] == "callees" and env["index_rev"] == "rev-0001" and env["state"] == "fresh"
    assert env["results"][0]["targets"][0]["name"] == "request"


def test_a_constructor_and_a_nested_function_are_reached_through_what_runs_them(tmp_path: Path) -> None:
    root = tmp_path / "ctor"
    write(root, {
        "lib.py": (
            "class Box:\n    def __init__(self, x):\n        self.x = x\n\n\n"
            "def outer(xs):\n    def key(v):\n        return -v\n    return sorted(xs, key=key)\n"
        ),
        "tests/test_lib.py": (
            "from lib import Box, outer\n\n\n"
            "def test_box():\n    assert Box(1).x == 1\n\n\n"
            "def test_outer():\n    assert outer([1, 2]) == [2, 1]\n"
        ),
    })  # fmt: skip
    with Index.open(root) as idx:
        idx.index()
        init = {r["qualified"] for r in idx.callers("Box.__init__", depth=2).results}
        key = {r["qualified"] for r in idx.callers("outer.key", depth=2).results}
    assert "test_box" in init and "test_outer" not in init
    assert "test_outer" in key and "test_box" not in key


CLASSES = {
    "app/base.py": (
        "class Command:\n"  # 1
        "    def main(self, args):\n"  # 2
        "        return self.invoke(args)\n"  # 3
        "\n"
        "    def invoke(self, args):\n"  # 5
        "        return args\n"
        "\n"
        "    def close(self):\n"  # 8
        "        return None\n"
    ),
    "app/group.py": (
        "from .base import Command\n"  # 1
        "\n\n"
        "class Group(Command):\n"  # 4
        "    def invoke(self, args):\n"  # 5
        "        return super().invoke(args)\n"  # 6
        "\n"
        "    def run(self, args):\n"  # 8
        "        return self.main(args)\n"  # 9
        "\n\n"
        "class Runner:\n"  # 12
        "    def __init__(self):\n"  # 13
        "        self.cmd = Group()\n"  # 14
        "\n"
        "    def go(self, ctx: 'Command', f):\n"  # 16
        "        runner = Runner()\n"  # 17
        "        runner.start(ctx)\n"  # 18
        "        self.cmd.run([])\n"  # 19
        "        f.close()\n"  # 20
        "        return ctx.main([])\n"  # 21
        "\n"
        "    def start(self, ctx):\n"  # 23
        "        return ctx\n"
    ),
    "tests/conftest.py": "import pytest\nfrom app.group import Group\n\n\n@pytest.fixture\ndef group():\n    return Group()\n",
    "tests/test_group.py": "def test_run(group):\n    assert group.run([]) == []\n",
}


@pytest.fixture
def classes(tmp_path: Path) -> Path:
    return _indexed(tmp_path / "classes", CLASSES)


def _targets(site: dict) -> set[tuple[str, int]]:
    return {(t["path"], t["line"]) for t in site["targets"]}


def test_a_call_on_self_reaches_the_inherited_method_and_the_overrides_it_may_dispatch_to(
    classes: Path,
) -> None:
    with Index.open(classes) as idx:
        main = _sites(idx.callees("Command.main"))
        run = _sites(idx.callees("Group.run"))
        sup = _sites(idx.callees("Group.invoke"))
    # Command.main's self.invoke may run Command.invoke or, on a Group, Group.invoke
    assert _targets(main[("invoke", 3)]) == {("app/base.py", 5), ("app/group.py", 5)}
    # Group.run's self.main is inherited from Command, in another file
    assert _targets(run[("main", 9)]) == {("app/base.py", 2)}
    # super().invoke is the base's, never the override it is called from
    assert _targets(sup[("invoke", 6)]) == {("app/base.py", 5)}


def test_a_receiver_of_a_known_class_resolves_through_its_annotation_constructor_or_fixture(
    classes: Path,
) -> None:
    with Index.open(classes) as idx:
        go = _sites(idx.callees("Runner.go"))
        test = _sites(idx.callees("test_run"))
    assert _targets(go[("start", 18)]) == {("app/group.py", 23)}  # runner = Runner()
    assert _targets(go[("run", 19)]) == {("app/group.py", 8)}  # self.cmd = Group()
    assert _targets(go[("main", 21)]) == {("app/base.py", 2)}  # ctx: 'Command'
    # f is of no known type and close is a method of files: not passed off as Command.close
    assert go[("close", 20)]["how"] == "unresolved" and go[("close", 20)]["targets"] == []
    # a pytest fixture's argument is what the fixture returns
    assert _targets(test[("run", 2)]) == {("app/group.py", 8)}


def test_impact_of_an_override_reaches_the_test_through_the_base_class_call(classes: Path) -> None:
    with Index.open(classes) as idx:
        callers = idx.callers("Group.invoke", depth=4)
    reached = {r["qualified"] for r in callers.results}
    assert {"Command.main", "Group.run", "test_run"} <= reached
