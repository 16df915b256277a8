"""References: who calls a function, from where, in the languages with reference rules."""

from __future__ import annotations

import pytest

from ragraf.facts import extract_facts

# language -> (source, expected (container, line) of each call to resolve_host)
CALLERS: dict[str, tuple[str, set[tuple[str | None, int]]]] = {
    "python": (
        "from net import resolve_host\n"
        "class Client:\n"
        "    def request(self, url):\n"
        "        return self.pool.resolve_host(url)\n"
        "def main():\n"
        "    resolve_host('x')\n"
        "resolve_host('top')\n",
        {("Client.request", 4), ("main", 6), (None, 7)},
    ),
    "go": (
        "package main\n"
        "type Client struct{}\n"
        "func (c *Client) Request(u string) error {\n"
        "\treturn net.resolve_host(u)\n"
        "}\n"
        "func main() {\n"
        '\tresolve_host("x")\n'
        "}\n",
        {("Client.Request", 4), ("main", 7)},
    ),
    "typescript": (
        "import { resolve_host } from './net';\n"
        "export class Client {\n"
        "  request(url: string) {\n"
        "    return this.pool.resolve_host(url);\n"
        "  }\n"
        "}\n"
        "export const main = () => {\n"
        "  resolve_host('x');\n"
        "};\n",
        {("Client.request", 4), ("main", 8)},
    ),
    "tsx": (
        "export function App() {\n  const ip = resolve_host('x');\n  return <div>{ip}</div>;\n}\n",
        {("App", 2)},
    ),
    "javascript": (
        "function main() {\n  resolve_host('x');\n  net.resolve_host('y');\n}\n",
        {("main", 2), ("main", 3)},
    ),
    "rust": (
        "struct Client;\n"
        "impl Client {\n"
        "    fn request(&self) {\n"
        '        self.pool.resolve_host("x");\n'
        '        net::resolve_host("y");\n'
        "    }\n"
        "}\n"
        'fn main() { resolve_host("z"); }\n',
        {("Client.request", 4), ("Client.request", 5), ("main", 8)},
    ),
    "java": (
        "class Client {\n"
        "    void request() {\n"
        '        pool.resolve_host("x");\n'
        '        resolve_host("y");\n'
        "    }\n"
        "}\n",
        {("Client.request", 3), ("Client.request", 4)},
    ),
    "c": (
        'int main(void) {\n  resolve_host("x");\n  ops->resolve_host("y");\n  return 0;\n}\n',
        {("main", 2), ("main", 3)},
    ),
    "cpp": (
        "namespace net {\n"
        "void Client::request() {\n"
        '  resolve_host("x");\n'
        '  pool.resolve_host("y");\n'
        '  dns::resolve_host("z");\n'
        "}\n"
        "}\n",
        {("net.Client.request", 3), ("net.Client.request", 4), ("net.Client.request", 5)},
    ),
    "csharp": (
        'class Client {\n  void Request() {\n    resolve_host("x");\n    pool.resolve_host("y");\n  }\n}\n',
        {("Client.Request", 3), ("Client.Request", 4)},
    ),
    "ruby": (
        "class Client\n  def request\n    resolve_host('x')\n    pool.resolve_host('y')\n  end\nend\n",
        {("Client.request", 3), ("Client.request", 4)},
    ),
    "php": (
        "<?php\nclass Client {\n  function request() {\n    resolve_host('x');\n    $this->resolve_host('y');\n  }\n}\n",
        {("Client.request", 4), ("Client.request", 5)},
    ),
    "kotlin": (
        'class Client {\n    fun request() {\n        resolve_host("x")\n        pool.resolve_host("y")\n    }\n}\n',
        {("Client.request", 3), ("Client.request", 4)},
    ),
    "scala": (
        'object Client {\n  def request(): Unit = {\n    resolve_host("x")\n    pool.resolve_host("y")\n  }\n}\n',
        {("Client.request", 3), ("Client.request", 4)},
    ),
    "swift": (
        'class Client {\n    func request() {\n        resolve_host("x")\n        pool.resolve_host("y")\n    }\n}\n',
        {("Client.request", 3), ("Client.request", 4)},
    ),
    "lua": (
        "function Client:request()\n  resolve_host('x')\n  pool:resolve_host('y')\n  net.resolve_host('z')\nend\n",
        {("Client.request", 2), ("Client.request", 3), ("Client.request", 4)},
    ),
    "bash": ("deploy() {\n  resolve_host x\n}\n", {("deploy", 2)}),
    "elixir": (
        "defmodule Client do\n  def request(u) do\n    resolve_host(u)\n    Net.resolve_host(u)\n  end\nend\n",
        {("Client.request", 3), ("Client.request", 4)},
    ),
    "haskell": ("request u = resolve_host u\n", {("request", 1)}),
    "zig": (
        'fn request() void {\n    resolve_host("x");\n    net.resolve_host("y");\n}\n',
        {("request", 2), ("request", 3)},
    ),
}


@pytest.mark.parametrize("language", sorted(CALLERS))
def test_calls_to_a_function_name_their_callers(language: str) -> None:
    source, expected = CALLERS[language]
    facts = extract_facts(source, language)
    calls = {(r.container, r.line) for r in facts.references if r.name == "resolve_host" and r.is_call}
    assert calls == expected
    lines = source.split("\n")
    for r in facts.references:
        assert r.name in lines[r.line - 1], r


def test_jsx_components_are_references_to_their_definitions() -> None:
    source = "import { Button } from './ui';\nexport const Page = () => (\n  <Layout>\n    <Button label={title} />\n  </Layout>\n);\n"
    refs = {(r.name, r.line, r.container) for r in extract_facts(source, "tsx").references}
    assert {("Layout", 3, "Page"), ("Button", 4, "Page")} <= refs


def test_new_reference_builds_the_same_object_as_the_class() -> None:
    from ragraf.facts.model import Reference, new_reference

    fast, slow = new_reference("f", 3, "A.b", True), Reference("f", 3, "A.b", True)
    assert fast == slow and hash(fast) == hash(slow) and repr(fast) == repr(slow)


def test_the_defining_name_is_not_a_reference_to_itself() -> None:
    source = "def resolve_host(h):\n    return resolve_host(h)\n"
    refs = [(r.name, r.line, r.is_call) for r in extract_facts(source, "python").references]
    assert refs == [("resolve_host", 2, True)]


def test_attribute_uses_and_global_names_are_references_but_locals_are_not() -> None:
    source = (
        "import os\n"
        "from cfg import settings\n"
        "LIMIT = 3\n"
        "def f(conn, Thing):\n"
        "    local = conn.timeout\n"
        "    if isinstance(local, Config) and local > LIMIT:\n"
        "        return os.sep, settings\n"
        "    return local\n"
    )
    refs = {(r.name, r.line) for r in extract_facts(source, "python").references if not r.is_call}
    assert {("timeout", 5), ("Config", 6), ("LIMIT", 6), ("os", 7), ("sep", 7), ("settings", 7)} <= refs
    assert not {name for name, _ in refs} & {"local", "conn", "self"}


def test_a_name_used_twice_on_a_line_is_one_reference_at_its_first_use() -> None:
    source = "def f():\n    g(g(1))\n"
    assert [(r.name, r.line) for r in extract_facts(source, "python").references] == [("g", 2)]


def test_references_are_in_file_order_and_the_same_on_every_run() -> None:
    source = (
        "\n".join(f"x{i} = Path(sys.a, sys.b).{i and 'q'}(Other.c, Other.d)" for i in range(50))
        + "\nimport sys\n"
    )
    runs = [extract_facts(source, "python").references for _ in range(3)]
    assert runs[0] == runs[1] == runs[2]
    assert [r.line for r in runs[0]] == sorted(r.line for r in runs[0])


def test_calls_inside_rust_macro_arguments_are_calls_of_their_function() -> None:
    source = (
        "fn main() {\n"
        '    println!("{}", target(1));\n'
        "    let v = vec![build(x), a, (b)];\n"
        "    assert_eq!(Conn::open(2), conn.send(3));\n"
        "}\n"
    )
    facts = extract_facts(source, "rust")
    calls = {(r.name, r.line, r.container) for r in facts.references if r.is_call}
    assert {
        ("println", 2, "main"),
        ("target", 2, "main"),
        ("build", 3, "main"),
        ("open", 4, "main"),
        ("send", 4, "main"),
    } <= calls
    # `a, (b)`: a name before a comma is no callee.
    assert "a" not in {name for name, _, _ in calls}
    lines = source.split("\n")
    for r in facts.references:
        assert r.name in lines[r.line - 1], r
