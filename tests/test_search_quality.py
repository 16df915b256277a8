"""Implementation-seeking queries get the implementation first; test-seeking queries still find tests.

The corpus is a slice of the Python standard library with its own test suite beside it: modules
and their tests share every identifier, which is exactly where a code search goes wrong.
"""

from __future__ import annotations

import shutil
import sysconfig
from pathlib import Path

import pytest

from ragraf import Index
from ragraf.search.engine import lexical_candidates, run_search

STDLIB = Path(sysconfig.get_paths()["stdlib"])
MODULES = ["json", "csv.py", "argparse.py", "heapq.py", "textwrap.py", "difflib.py", "shutil.py"]
TESTS = [
    "test/test_json",
    "test/test_csv.py",
    "test/test_argparse.py",
    "test/test_heapq.py",
    "test/test_textwrap.py",
    "test/test_difflib.py",
    "test/test_shutil.py",
]

IMPLEMENTATION = [
    ("decode a JSON document into Python objects", "json/decoder.py"),
    ("scanstring", "json/decoder.py"),
    ("JSONEncoder iterencode", "json/encoder.py"),
    ("csv DictReader", "csv.py"),
    ("Sniffer guess the dialect of a csv file", "csv.py"),
    ("ArgumentParser add_argument", "argparse.py"),
    ("how are mutually exclusive argument groups enforced", "argparse.py"),
    ("push an item onto a heap", "heapq.py"),
    ("nlargest", "heapq.py"),
    ("wrap text to a given width", "textwrap.py"),
    ("dedent", "textwrap.py"),
    ("SequenceMatcher ratio", "difflib.py"),
    ("unified diff of two sequences of lines", "difflib.py"),
    ("copy a directory tree recursively", "shutil.py"),
    ("rmtree error handling", "shutil.py"),
]
TESTS_SOUGHT = [
    ("tests for JSON decoding", "test/test_json/test_decode.py"),
    ("test csv DictReader", "test/test_csv.py"),
    ("unit tests for heapq", "test/test_heapq.py"),
    ("textwrap tests", "test/test_textwrap.py"),
    ("test rmtree", "test/test_shutil.py"),
]


@pytest.fixture(scope="module")
def stdlib_slice(tmp_path_factory: pytest.TempPathFactory) -> Index:
    root = tmp_path_factory.mktemp("stdlib")
    for rel in MODULES + TESTS:
        src = STDLIB / rel
        if src.is_dir():
            shutil.copytree(src, root / rel, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(src, root / rel)
    idx = Index.open(root, embedder="none")
    idx.index()
    return idx


@pytest.mark.parametrize(("query", "expected"), IMPLEMENTATION)
def test_implementation_seeking_queries_put_the_implementation_first(
    stdlib_slice: Index, query: str, expected: str
) -> None:
    results = stdlib_slice.search(query, k=5).results
    assert results[0].path == expected, [r.path for r in results]
    assert results[0].kind == "code"


@pytest.mark.parametrize(("query", "expected"), TESTS_SOUGHT)
def test_test_seeking_queries_still_find_tests(stdlib_slice: Index, query: str, expected: str) -> None:
    results = stdlib_slice.search(query, k=5).results
    assert expected in [r.path for r in results[:3]], [r.path for r in results]
    assert next(r for r in results if r.path == expected).kind == "test"


BUG_REPORT = (
    """Crash when serialising a nested mapping with sort_keys after the upgrade

Steps: call dumps() on a dict whose values are dicts with mixed key types and sort_keys=True.

Traceback (most recent call last):
  File "app/export.py", line 88, in write_report
    payload = json.dumps(report, sort_keys=True, indent=2)
  File "/usr/lib/python3.11/json/__init__.py", line 238, in dumps
    **kw).encode(obj)
  File "/usr/lib/python3.11/json/encoder.py", line 202, in encode
    chunks = list(chunks)
  File "/usr/lib/python3.11/json/encoder.py", line 432, in _iterencode
    yield from _iterencode_dict(o, _current_indent_level)
  File "/usr/lib/python3.11/json/encoder.py", line 353, in _iterencode_dict
    items = sorted(dct.items())
TypeError: '<' not supported between instances of 'int' and 'str'

Expected: a clear error naming the key, or keys compared as strings. The tests in
test_json/test_dump.py only cover string keys. """
    * 3
)


def test_a_pasted_bug_report_uses_its_paths_and_identifiers(stdlib_slice: Index) -> None:
    assert len(BUG_REPORT.encode()) > 2000
    results = stdlib_slice.search(BUG_REPORT, k=5).results
    assert results[0].path == "json/encoder.py", [r.path for r in results]
    assert "_iterencode_dict" in (results[0].symbol or "") + results[0].snippet


def _index(root: Path, files: dict[str, str]) -> Index:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    idx = Index.open(root, embedder="none")
    idx.index()
    return idx


# Thirty clients talk about retries and backoff; the module named for it only computes the delay.
RETRY_CLIENTS = {
    f"pkg/client_{i}.py": (
        f"def call_{i}(send, attempts):\n"
        "    # retries wait for the backoff between attempts; the backoff grows with the retries\n"
        "    for attempt in range(attempts):\n"
        "        if send():\n"
        "            return True\n"
        "    return False\n"
    )
    for i in range(30)
}
BACKOFF = "def delay(attempt, base=0.1, cap=30.0):\n    return min(cap, base * 2 ** attempt)\n"


def test_a_file_named_for_the_query_joins_the_results_though_its_text_ranks_too_low(tmp_path: Path) -> None:
    idx = _index(tmp_path, {**RETRY_CLIENTS, "pkg/backoff.py": BACKOFF})
    query = "backoff between retries"
    on = [r.path for r in idx.search(query, k=5).results]
    off = [r.path for r in idx.search(query, k=5, rules={"path_candidates": False}).results]
    assert "pkg/backoff.py" in on, on
    assert "pkg/backoff.py" not in off, off


def test_files_named_for_the_query_join_the_candidates_of_both_retrievers(tmp_path: Path) -> None:
    idx = _index(tmp_path, {**RETRY_CLIENTS, "pkg/backoff.py": BACKOFF})
    store = idx.store()
    rev = store.current_revision()
    assert rev is not None
    query = "backoff between retries"
    # A stand-in vector side (any ranked list) puts the engine on reciprocal-rank fusion, where a
    # third list's file found by neither retriever is among the candidates, if not near the top.
    vectors = lambda limit: lexical_candidates(store, rev.rev_no, "send", limit)  # noqa: E731
    on = run_search(store, rev.rev_no, query, 40, vector_hits=vectors).hits
    off = run_search(store, rev.rev_no, query, 40, vector_hits=vectors, rules={"path_candidates": False}).hits
    assert "pkg/backoff.py" in [c.hit.path for c in on]
    assert "pkg/backoff.py" not in [c.hit.path for c in off]


FIELDS = "class Field:\n    '''A declared field of a model: its type, default and constraints.'''\n"


def test_the_unversioned_module_ranks_before_its_copy_in_a_version_folder(tmp_path: Path) -> None:
    # The copy in v1/ says more about fields than the current module does.
    idx = _index(
        tmp_path,
        {
            "pkg/fields.py": FIELDS,
            "pkg/v1/fields.py": FIELDS + "# fields are declared on the model; declared fields are checked\n",
            "pkg/v1/main.py": "def declared_fields(model):\n    return model.fields\n",
        },
    )
    query = "how are model fields declared"
    only = {"path_candidates": False}
    on = [r.path for r in idx.search(query, k=5, rules=only).results]
    off = [r.path for r in idx.search(query, k=5, rules={**only, "version_penalty": False}).results]
    assert on[0] == "pkg/fields.py", on
    assert off[0].startswith("pkg/v1/"), off
    named = [r.path for r in idx.search("how are model fields declared in v1", k=5, rules=only).results]
    assert named[0].startswith("pkg/v1/"), named


def test_a_result_is_named_for_the_definition_asked_for_not_its_chunks_first(tmp_path: Path) -> None:
    many = "".join(f"def handler_{i}(request):\n    return {i}\n\n\n" for i in range(200))
    (tmp_path / "handlers.py").write_text(many)
    idx = Index.open(tmp_path, embedder="none")
    idx.index()
    top = idx.search("handler_57", k=1).results[0]
    assert top.start_line <= 4 * 57 + 1 <= top.end_line and top.start_line < 4 * 57 + 1
    assert top.symbol == "handler_57"


def test_a_symbol_query_boosts_the_name_as_written_not_its_other_cases(tmp_path: Path) -> None:
    # serde's `Serialize` trait against the many `serialize` methods that implement it.
    (tmp_path / "ser").mkdir()
    (tmp_path / "ser" / "mod.rs").write_text(
        "pub trait Serialize {\n    fn serialize(&self);\n}\n\n" + "// padding\n" * 60
    )
    impls = "".join(
        f"impl Serialize for T{i} {{\n    fn serialize(&self) {{ Serialize::serialize(self) }}\n}}\n\n"
        for i in range(30)
    )
    (tmp_path / "content.rs").write_text(impls)
    idx = Index.open(tmp_path, home=tmp_path / ".home", embedder="none")
    idx.index()
    assert idx.search("Serialize", k=3).results[0].path == "ser/mod.rs"
    # Asked in another case than any definition, the name still finds them.
    assert idx.search("SERIALIZE", k=3).results[0].symbol.lower().endswith("serialize")
