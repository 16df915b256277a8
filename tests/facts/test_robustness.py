"""extract_facts never raises: broken syntax, odd text, huge and deeply nested files, unknown languages."""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragraf.facts import FileFacts, extract_facts
from ragraf.facts.extract import MAX_REFERENCES
from ragraf.languages import TREE_SITTER_LANGUAGES

LANGUAGES = sorted(TREE_SITTER_LANGUAGES | {"markdown"})


def check_lines(text: str, facts: FileFacts) -> None:
    count = len(text.split("\n"))
    for d in facts.definitions:
        assert 1 <= d.start_line <= d.line <= d.end_line <= count, d
    for r in facts.references:
        assert 1 <= r.line <= count, r
    for i in facts.imports:
        assert 1 <= i.line <= count, i


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize(
    "text",
    [
        "",
        "\n\n\n",
        "\ufeffdef f(): pass\n",
        "def f(:\n  class {{{ ]] )) '''\n",
        "x\x00y = 1\x00\n",
        "a = '\udcff\ud800'\ndef g(): pass\n",
        "\r\n".join(["def h():", "    return 1", ""]),
        "\x0cclass K:\n\x0c    pass\n",
        "🙂" * 1000 + "\nfunction 🙂() {}\n",
    ],
)
def test_odd_text_gives_facts_not_errors(language: str, text: str) -> None:
    facts = extract_facts(text, language)
    assert facts.language == language
    check_lines(text, facts)


def test_a_syntax_error_gives_partial_facts() -> None:
    facts = extract_facts(
        "def ok():\n    pass\n\ndef broken(:\n    pass\n\nclass Fine:\n    pass\n", "python"
    )
    assert facts.partial
    assert {"ok", "Fine"} <= {d.name for d in facts.definitions}


HALF_WRITTEN = {
    # (text with one half-written line, definitions after it as (name, container), a call and its caller)
    "python": (
        "def good_one(x):\n    return x + 1\n\ndef broken(a, b:\n    return a +\n\n"
        "class Survivor:\n    def method(self):\n        return good_one(2)\n",
        {("Survivor", None), ("method", "Survivor")},
        ("good_one", "Survivor.method"),
    ),
    "typescript": (
        "export function alpha(x: number): number {\n  return x * 2;\n}\n\nexport const cfg = {a: 1,\n\n"
        "export function omega(): void {\n  alpha(1);\n}\n\nexport class Tail {\n  m(): void {}\n}\n",
        {("cfg", None), ("omega", None), ("Tail", None), ("m", "Tail")},
        ("alpha", "omega"),
    ),
    "javascript": (
        "const INVALID = 1;\n\nfunction gen(doc, ctx,\n\nfunction after(a) {\n  return helper(a);\n}\n\n"
        "export class Later {\n  run() { return after(1); }\n}\n",
        {("after", None), ("Later", None), ("run", "Later")},
        ("after", "Later.run"),
    ),
    "go": (
        "package p\n\nfunc ok() int { return 1 }\n\nfunc broken(a int {\n\nfunc later() int { return ok() }\n\n"
        "type T struct { A int }\n",
        {("later", None), ("T", None)},
        ("ok", "later"),
    ),
    "java": (
        "class A {\n  void ok() {}\n}\n\nclass B {\n  void broken( {\n}\n\n"
        "class C {\n  void later() { new A().ok(); }\n}\n",
        {("C", None), ("later", "C")},
        ("ok", "C.later"),
    ),
    "ruby": (
        "def ok\n  1\nend\n\ndef broken(a,\n\ndef later\n  ok\nend\n",
        {("broken", None), ("later", None)},
        ("ok", "later"),
    ),
}
# The broken line inside a class: the methods after it keep their class.
HALF_WRITTEN_IN_A_CLASS = {
    "python": (
        "class A:\n    def ok(self):\n        return 1\n\n    def broken(self, x:\n        return x +\n\n"
        "    def later(self):\n        return self.ok()\n\n    class Inner:\n        pass\n\n"
        "def after():\n    return A()\n",
        {("A", None), ("ok", "A"), ("later", "A"), ("Inner", "A"), ("after", None)},
        ("ok", "A.later"),
    ),
    "typescript": (
        "export class Store {\n  get(k: string): number {\n    return this.m[k];\n  }\n\n"
        "  put(k: string, v: number {\n    this.m[k] = v;\n  }\n\n  clear(): void {\n    this.reset();\n  }\n}\n",
        {("Store", None), ("get", "Store"), ("put", "Store"), ("clear", "Store")},
        ("reset", "Store.clear"),
    ),
}


@pytest.mark.parametrize(
    "language, case",
    [(language, HALF_WRITTEN[language]) for language in sorted(HALF_WRITTEN)]
    + [(language, HALF_WRITTEN_IN_A_CLASS[language]) for language in sorted(HALF_WRITTEN_IN_A_CLASS)],
)
def test_a_half_written_line_costs_only_its_own_facts(language: str, case: tuple) -> None:
    """Error recovery folds the code after a broken line into one node; the facts come back."""
    text, after, (callee, caller) = case
    facts = extract_facts(text, language)
    assert facts.partial
    check_lines(text, facts)
    found = [(d.name, d.container) for d in facts.definitions]
    assert after <= set(found), found
    assert len(found) == len({(d.name, d.line) for d in facts.definitions})  # nothing twice
    calls = {(r.name, r.container) for r in facts.references}
    assert (callee, caller) in calls, calls
    assert not any(r.name == d.name and r.line == d.line for r in facts.references for d in facts.definitions)


@pytest.mark.parametrize(
    "language, broken_line", [("python", "def f{}(a, b:\n"), ("javascript", "function f{}(a, {{\n")]
)
def test_a_file_of_broken_lines_still_gives_facts(language: str, broken_line: str) -> None:
    # Every line a restart point and every part broken: the re-parse budget ends the work.
    text = "".join(broken_line.format(i) for i in range(3000))
    facts = extract_facts(text, language)
    assert facts.partial
    check_lines(text, facts)


def test_threads_extracting_at_once_get_the_same_facts_as_one_thread() -> None:
    from concurrent.futures import ThreadPoolExecutor

    jobs = [(f"def f{i}():\n    g{i}()\n" * 50, "python") for i in range(8)]
    jobs += [(f"func f{i}() {{ g{i}() }}\n" * 50, "go") for i in range(8)]
    serial = [extract_facts(text, language) for text, language in jobs]
    with ThreadPoolExecutor(max_workers=4) as pool:
        parallel = list(pool.map(lambda job: extract_facts(*job), jobs))
    assert parallel == serial


def test_a_failing_rule_hook_loses_one_definition_not_the_file(monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import replace

    from ragraf.facts import extract
    from ragraf.facts.rules import rules_for

    def broken_hook(node: object) -> list:
        raise RuntimeError("a rule bug")

    rules = rules_for("go")
    assert rules is not None
    monkeypatch.setattr(
        extract, "rules_for", lambda _: replace(rules, names={"method_declaration": broken_hook})
    )
    facts = extract_facts("package p\nfunc (c *C) M() {}\nfunc F() { M() }\n", "go")
    assert [d.name for d in facts.definitions] == ["F"]
    assert [(r.name, r.container) for r in facts.references if r.is_call] == [("M", "F")]


def test_a_language_without_rules_is_unsupported_and_empty() -> None:
    for language in ("text", "yaml", "klingon", ""):
        facts = extract_facts("key: value\n", language)
        assert (facts.supported, facts.definitions, facts.references, facts.imports) == (False, (), (), ())


@pytest.mark.timeout(120)  # a quadratic walk would take hours; a linear one a fraction of a second
def test_five_thousand_definitions_are_all_found() -> None:
    text = "".join(f"def f{i}(x):\n    return g{i}(x)\n" for i in range(5000))
    facts = extract_facts(text, "python")
    assert len(facts.definitions) == 5000
    assert facts.definitions[4999].line == 9999
    assert sum(r.is_call for r in facts.references) == 5000


@pytest.mark.parametrize(
    ("language", "opening", "closing"),
    [
        ("python", "(", ")"),
        ("javascript", "[", "]"),
        ("go", "func() {", "}"),
        ("c", "{", "}"),
        ("rust", "(", ")"),
    ],
)
def test_nesting_five_thousand_levels_deep_does_not_recurse(
    language: str, opening: str, closing: str
) -> None:
    text = "x = " + opening * 5000 + "1" + closing * 5000 + "\n"
    facts = extract_facts(text, language)
    check_lines(text, facts)


def test_five_thousand_nested_functions_get_containers() -> None:
    depth = 5000
    text = "".join(" " * i + f"def f{i}():\n" for i in range(depth)) + " " * depth + "pass\n"
    facts = extract_facts(text, "python")
    check_lines(text, facts)
    if facts.definitions:  # tree-sitter may stop building so deep a tree; it must not raise
        assert facts.definitions[0].container is None


def test_references_are_capped() -> None:
    text = "".join(f"call_{i}()\n" for i in range(MAX_REFERENCES + 500))
    facts = extract_facts(text, "python")
    assert len(facts.references) == MAX_REFERENCES


def test_a_very_long_line_gives_a_bounded_signature() -> None:
    text = "var a = 1;" * 50_000 + "function last() {}\n"
    (d,) = [d for d in extract_facts(text, "javascript").definitions if d.name == "last"]
    assert d.line == 1 and len(d.signature) <= 200


class SpawnedParser:
    """extract_facts in a spawned child (a fresh interpreter, grammars loaded once), as the indexer's
    pool runs it. Not forked: under a full suite the test process has threads (servers, pools), and
    a fork copies whatever state they left a parser or the allocator in, which crashed children at
    random. A call that runs past `seconds` (a text tree-sitter's recovery cannot finish, which the
    indexer indexes by lines) kills the child and gives None; a crash fails the caller."""

    def __init__(self) -> None:
        self.pool: ProcessPoolExecutor | None = None

    def facts(self, text: str, language: str, seconds: float) -> FileFacts | None:
        if self.pool is None:
            self.pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
        future = self.pool.submit(extract_facts, text, language)
        try:
            return future.result(timeout=seconds)
        except FutureTimeout:
            self.stop()
            return None
        except BrokenProcessPool:
            self.stop()
            raise AssertionError(f"the parse crashed the child: {language} {text!r}") from None

    def stop(self) -> None:
        if self.pool is not None:
            for process in list(self.pool._processes.values()):  # a parse that never ends: kill it
                process.kill()
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None


PARSER = SpawnedParser()


@pytest.fixture(scope="module", autouse=True)
def _stop_parser() -> Iterator[None]:
    yield
    PARSER.stop()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=st.text(
        alphabet=st.characters(codec="utf-8") | st.sampled_from("{}()[];:=.\n\t #\"'`"), max_size=300
    )
)
def test_random_text_never_raises_in_any_language(text: str) -> None:
    for language in LANGUAGES:
        # A random text can trap the parser for minutes (one was found): that stops the child, not CI.
        facts = PARSER.facts(text, language, seconds=30)
        if facts is not None:
            check_lines(text, facts)


def test_far_plane_characters_after_a_brace_do_not_crash_the_bash_grammar() -> None:
    # tree-sitter-bash segfaulted at random on `{` and a code point past about U+51CA4 (found by the
    # random-text test above: 20 crashes in 30 fresh processes parsing it once).
    code = (
        "from ragraf.chunking import parse\n"
        "from ragraf.facts.extract import extract_facts\n"
        "for text in ('{\\U000ec77b', 'x={\\U0010ffff}; echo $x', '\\x11{\\x80\\U00078ed4ß{\\U000ec77b,i'):\n"
        "    for _ in range(100):\n"
        "        facts = extract_facts(text, 'bash', tree=parse(text, 'bash'))\n"
        "        assert facts.supported\n"
        "f = extract_facts('greet() {\\n  echo \\U000f0000\\n}\\n', 'bash')\n"
        "assert [d.name for d in f.definitions] == ['greet'], f.definitions\n"
    )
    for _ in range(3):
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
