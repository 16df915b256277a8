"""Rust items inside item-position macro calls (`cfg_rt! { .. }`) are definitions like any other."""

from __future__ import annotations

from ragraf.facts.extract import extract_facts

SOURCE = """\
use crate::runtime;

cfg_rt! {
    /// A set of tasks executed on the same thread.
    pub struct LocalSet {
        tick: u8,
    }

    impl LocalSet {
        pub fn new() -> LocalSet {
            spawn_inner(1);
            LocalSet { tick: 0 }
        }
    }

    cfg_unstable! {
        pub fn id() -> u64 { next_id() }
    }
}

mod driver {
    cfg_io! { pub(crate) fn park() { turn(); } }
}

impl Handle {
    cfg_time! {
        pub fn timer(&self) -> Timer { Timer::new() }
    }
}

fn main() {
    cfg_x! { let local = 1; }
}

html! { <div class="x">{ "not rust" }</div> }
"""


def _defs(source: str) -> set[tuple[str, str, str | None, int]]:
    return {(d.name, d.kind, d.container, d.line) for d in extract_facts(source, "rust").definitions}


def test_items_inside_macro_calls_are_defined_with_their_containers() -> None:
    defs = _defs(SOURCE)
    assert {
        ("LocalSet", "struct", None, 5),
        ("new", "method", "LocalSet", 10),
        ("id", "function", None, 17),
        ("driver", "module", None, 21),
        ("park", "function", "driver", 22),
        ("timer", "method", "Handle", 27),
        ("main", "function", None, 31),
    } <= defs
    # A statement-position macro holds no items, and a DSL's braces are left as the grammar reads them.
    assert not {name for name, *_ in defs} & {"local", "div"}


def test_calls_inside_macro_items_belong_to_their_function() -> None:
    facts = extract_facts(SOURCE, "rust")
    calls = {(r.name, r.line, r.container) for r in facts.references if r.is_call}
    assert {
        ("cfg_rt", 3, None),
        ("spawn_inner", 11, "LocalSet.new"),
        ("next_id", 17, "id"),
        ("turn", 22, "driver.park"),
        ("new", 27, "Handle.timer"),
    } <= calls
    # The token tree's guesses on those lines are gone: `park` is defined there, not called.
    assert ("park", 22, "driver") not in calls
    lines = SOURCE.split("\n")
    for fact in (*facts.definitions, *facts.references):
        assert fact.name in lines[fact.line - 1], fact


def test_a_file_without_macro_items_has_the_same_facts_as_before() -> None:
    plain = "pub struct A;\nimpl A { fn f(&self) { g(); } }\nmacro_rules! m { () => {} }\n"
    facts = extract_facts(plain, "rust")
    assert {(d.name, d.kind) for d in facts.definitions} == {
        ("A", "struct"),
        ("f", "method"),
        ("m", "function"),
    }


def test_code_beside_a_macro_call_on_its_lines_keeps_its_facts() -> None:
    source = (
        "fn x() { p(); } m! { fn a() { q(); } } fn b() { r(); }\n"
        "fn b() {} mod y { fn b() {} }\n"
        "baz! { fn semi_fn() {} };\n"
        'extern "C" { ext! { fn in_extern(); } }\n'
        "pin_project_lite::pin_project! { struct Pinned { f: u8 } }\n"
    )
    facts = extract_facts(source, "rust")
    defs = {(d.name, d.container, d.line) for d in facts.definitions}
    assert {
        ("a", None, 1),
        ("b", None, 2),
        ("b", "y", 2),
        ("semi_fn", None, 3),
        ("in_extern", None, 4),
    } <= defs
    assert ("Pinned", None, 5) in defs
    calls = {(r.name, r.line, r.container) for r in facts.references if r.is_call}
    assert {("p", 1, "x"), ("q", 1, "a"), ("r", 1, "b"), ("m", 1, None), ("pin_project", 5, None)} <= calls
    assert not {("a", 1, None), ("semi_fn", 3, None)} & calls  # definitions, not calls


def test_a_half_written_item_in_a_macro_keeps_the_other_definitions() -> None:
    source = (
        "cfg_rt! {\n"
        "    pub struct LocalSet;\n"
        "    impl LocalSet {\n"
        "        fn new() -> Self { LocalSet }\n"
        "        fn half_written(&self) { let x = self.tick +; }\n"
        "        fn spawn_local(&self) { spawn_inner(); }\n"
        "    }\n"
        "}\n"
    )
    facts = extract_facts(source, "rust")
    assert {(d.name, d.container) for d in facts.definitions} >= {
        ("LocalSet", None),
        ("new", "LocalSet"),
        ("spawn_local", "LocalSet"),
    }
    assert "new" not in {r.name for r in facts.references if r.is_call}


def test_a_file_of_thousands_of_macro_items_keeps_them_all() -> None:
    one = "m! { fn f0() { g0(); } }\n"
    many = "".join(one.replace("0", str(i)) for i in range(4000))
    facts = extract_facts(many, "rust")
    assert len(facts.definitions) == 4000
    assert not facts.partial
