"""The index's references, grouped by name straight from the captures, are the references
extract_facts gives, packed as the store reads them: clean files, salvaged syntax errors and
Rust macro items alike."""

from __future__ import annotations

import pytest

from ragraf.facts import extract_facts
from ragraf.facts.extract import extract_index_facts
from ragraf.index.workers import analyse
from ragraf.store import RefSites
from ragraf.store.base import pack_sites, unpack_sites


class _Chunking:
    chunk_max_chars = 1500
    chunk_min_chars = 250


SOURCES = {
    "python": (
        "from net import resolve_host as rh, Pool\n"
        "class Client:\n"
        '    """A "quoted" client, \u00e9t\u00e9."""\n'
        "    def request(self, url):\n"
        "        rh(url); rh(url)\n"
        "        return Pool(url).resolve_host(url)\n"
        "def main():\n"
        "    Client().request('x')\n"
        "main()\n"
    ),
    "typescript": (
        "import { parse } from './p';\n"
        "export class \u00c9t\u00e9 {\n"
        "  run(x: string) { return parse(x) + Helper.go(x); }\n"
        "}\n"
        "function go() { new \u00c9t\u00e9().run('a'); parse('b'); }\n"
    ),
    "go": 'package main\nfunc (c *Client) Request(u string) error {\n\treturn net.Resolve(u)\n}\nfunc main() { Request("x") }\n',
    "java": "class A {\n  void f() { B.g(); this.h(); }\n  void h() { f(); }\n}\n",
}

# Files whose facts go through a second parse of their parts.
REPARSED = {
    "python": "def ok():\n    helper(1)\n\ndef broken(:\n    helper(2)\n\nclass K:\n    def m(self):\n        Other.call()\n",
    "rust": (
        "macro_rules! items { ($($t:tt)*) => { $($t)* } }\n"
        "items! {\n    fn inside() { outside(); Thing::new(); }\n}\n"
        "fn outside() { inside(); }\n"
    ),
}


def _expected(text: str, language: str) -> list[RefSites]:
    sites: dict[str, list[tuple[int, bool, str | None]]] = {}
    for r in extract_facts(text, language).references:
        sites.setdefault(r.name, []).append((r.line, r.is_call, r.container))
    return [RefSites(name, pack_sites(uses)) for name, uses in sites.items()]


@pytest.mark.parametrize("language", sorted(SOURCES))
def test_grouped_references_are_extract_facts_references(language: str) -> None:
    text = SOURCES[language]
    facts, sites = extract_index_facts(text, language)
    assert sites is not None and facts.references == ()
    assert facts.definitions == extract_facts(text, language).definitions
    _, _, refs, status = analyse(text, language, _Chunking())  # type: ignore[arg-type]
    assert status == "supported"
    assert refs == _expected(text, language)
    assert refs  # the sources do call and name things
    assert {r.name: unpack_sites(r.sites) for r in refs} == sites


@pytest.mark.parametrize("language", sorted(REPARSED))
def test_reparsed_files_keep_their_references(language: str) -> None:
    text = REPARSED[language]
    facts, sites = extract_index_facts(text, language)
    assert sites is None  # salvage and macro items merge References
    assert facts == extract_facts(text, language)
    _, _, refs, _ = analyse(text, language, _Chunking())  # type: ignore[arg-type]
    assert refs == _expected(text, language)
    assert refs


def test_unsupported_and_failed_files_have_no_references() -> None:
    facts, sites = extract_index_facts("just words\n", "text")
    assert not facts.supported and sites is None
    assert analyse("just words\n", "text", _Chunking())[2:] == ([], "unsupported")  # type: ignore[arg-type]


def test_packing_survives_containers_that_look_like_list_boundaries() -> None:
    from ragraf.index.workers import _packed

    sites = {
        "a": [(1, 1, None), (2, 0, 'odd]],[["\u00e9')],
        "b": [(3, 0, "X.y")],
        "c\u00e9": [(4, 1, "\ud800")],
    }
    rows = _packed(sites)  # type: ignore[arg-type]
    assert rows == [RefSites(name, pack_sites(uses)) for name, uses in sites.items()]  # type: ignore[arg-type]
    del sites["a"]
    assert _packed(sites) == [RefSites(name, pack_sites(uses)) for name, uses in sites.items()]  # type: ignore[arg-type]


def test_malformed_names_keep_their_uses_in_file_order() -> None:
    # Two different malformed byte strings read as one name; their uses merge in file order.
    from ragraf.facts.extract import _sweep, _sweep_grouped

    found = [
        (0, b"A\xff", 1, 1),
        (5, b"A\xfe", 1, 0),
        (9, b"B", 2, 1),
        (12, b"A\xfe", 3, 1),
        (20, b"A\xff", 3, 0),
    ]
    scopes = [(8, 15, "f")]
    sites: dict[str, list[tuple[int, int, str | None]]] = {}
    _sweep_grouped(found, scopes, [], sites)  # type: ignore[arg-type]
    expected: dict[str, list[tuple[int, int, str | None]]] = {}
    for r in _sweep(found, scopes, []):  # type: ignore[arg-type]
        expected.setdefault(r.name, []).append((r.line, int(r.is_call), r.container))
    assert sites == expected
    assert sites["A\ufffd"] == [(1, 1, None), (1, 0, None), (3, 1, "f"), (3, 0, None)]
