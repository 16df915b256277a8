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
