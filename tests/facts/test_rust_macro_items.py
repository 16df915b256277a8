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
