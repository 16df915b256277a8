"""def / refs / outline through the operations layer and the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import cli_json, run_cli, write

from ragraf import Index
from ragraf.errors import UsageError

GO = 'package net\n\nfunc ResolveHost(name string) string {\n\treturn name\n}\n\nfunc Dial() {\n\tResolveHost("x")\n}\n'
TS = "import { resolveHost } from './dns';\n\nexport class Agent {\n  connect() {\n    return resolveHost('a');\n  }\n}\n"


def test_def_exact_then_case_insensitive_then_qualified(sample: Path) -> None:
    cli_json("index", "--root", str(sample))
    exact = cli_json("def", "TCPConnector", "--root", str(sample))
    top = exact["results"][0]
    assert (top["path"], top["line"], top["kind"]) == ("src/app/server.py", 4, "class")
    assert set(top) >= {"name", "kind", "path", "line", "end_line", "container", "stale"}
    lower = cli_json("def", "tcpconnector", "--root", str(sample))
    assert lower["results"][0]["name"] == "TCPConnector" and "matched case-insensitive" in lower["notes"]
    qualified = cli_json("def", "TCPConnector.connect", "--root", str(sample))
    assert [(r["name"], r["container"], r["line"]) for r in qualified["results"]] == [
        ("connect", "TCPConnector", 10)
    ]
    module = cli_json("def", "app.server.resolve_host", "--root", str(sample))
    assert module["results"][0]["line"] == 14


def test_definitions_in_code_rank_before_tests(sample: Path) -> None:
    write(sample, {"tests/test_dup.py": "class TCPConnector:\n    pass\n"})
    cli_json("index", "--root", str(sample))
    paths = [r["path"] for r in cli_json("def", "TCPConnector", "--root", str(sample))["results"]]
    assert paths == ["src/app/server.py", "tests/test_dup.py"]


def test_refs_and_calls_across_languages_grouped_by_enclosing_definition(sample: Path) -> None:
    write(sample, {"net/dial.go": GO, "web/agent.ts": TS})
    cli_json("index", "--root", str(sample))
    calls = cli_json("refs", "resolve_host", "--calls", "--root", str(sample))["results"]
    assert [(r["path"], r["line"], r["container"]) for r in calls] == [
        ("src/app/server.py", 11, "TCPConnector.connect")
    ]
    go = cli_json("refs", "ResolveHost", "--calls", "--root", str(sample))["results"]
    assert [(r["path"], r["line"], r["container"]) for r in go] == [("net/dial.go", 8, "Dial")]
    ts = cli_json("refs", "resolveHost", "--root", str(sample))["results"]
    assert ("web/agent.ts", 5, "Agent.connect") in [(r["path"], r["line"], r["container"]) for r in ts]
    text = run_cli("refs", "ResolveHost", "--calls", "--root", str(sample)).stdout
    assert "net/dial.go · in Dial" in text and "net/dial.go:8" in text


def test_outline_is_a_tree_and_unknown_languages_fall_back_to_chunks(sample: Path) -> None:
    write(sample, {"conf/settings.ini": "[main]\nkey = value\n"})
    cli_json("index", "--root", str(sample))
    outline = cli_json("outline", "src/app/server.py", "--root", str(sample))["results"]
    assert [(r["name"], r["depth"]) for r in outline] == [
        ("TCPConnector", 0),
        ("__init__", 1),
        ("connect", 1),
        ("resolve_host", 0),
    ]
    other = cli_json("outline", "conf/settings.ini", "--root", str(sample))
    assert other["capability"]["facts"] is False and other["results"][0]["kind"] == "chunk"
    assert any("no fact rules" in n for n in other["notes"])
    missing = run_cli("outline", "nope.py", "--root", str(sample))
    assert missing.returncode == 2 and "not in rev-0001 and not on disk" in missing.stderr
    # A path with no outline says why, in the words that say what to do.
    write(sample, {"blob.py": b"x\x00y", "package-lock.json": "{}", "new.py": "def n():\n    pass\n"})
    for path, why in (
        ("src", "src is a folder"),
        (".", ". is a folder"),
        ("package-lock.json", "left out of the index by a path rule (lock file)"),
        ("new.py", "new.py is not in rev-0001: it is new since"),
    ):
        out = run_cli("outline", path, "--root", str(sample))
        assert out.returncode == 2 and why in out.stderr, (path, out.stderr)
    cli_json("index", "--root", str(sample))
    binary = run_cli("outline", "blob.py", "--root", str(sample))
    assert binary.returncode == 2 and "blob.py is left out of the index: binary" in binary.stderr


def test_odd_names_and_broken_files_never_crash(sample: Path) -> None:
    write(
        sample,
        {
            "broken.py": "def ok():\n    pass\n\ndef broken(:\n    return\n\nclass Half",
            "many.py": "".join(f"def f{i}():\n    return {i}\n" for i in range(3000)),
        },
    )
    idx = Index.open(sample)
    idx.index()
    for name in (".*", "a[b", "(x)", "\\", "%", "_", "名前"):
        assert idx.find_symbol(name).results == []
        assert idx.find_references(name).results == []
    assert idx.find_symbol("ok").results[0]["path"] == "broken.py"
    for empty in ("", "  "):
        for lookup in (idx.find_symbol, idx.find_references):
            with pytest.raises(UsageError):
                lookup(empty)
    qualified = idx.find_references("Nowhere.ok")
    assert any("matched by their last part, 'ok'" in n for n in qualified.notes)
    many = idx.find_symbol("f2999").results
    assert many[0]["line"] == 5999
    assert len(idx.outline("many.py").results) == 3000


def test_a_file_counts_as_a_module_definition_when_nothing_else_matches(sample: Path) -> None:
    write(sample, {"lib/response.js": "var res = Object.create(null);\nmodule.exports = res;\n"})
    cli_json("index", "--root", str(sample))
    env = cli_json("def", "response", "--root", str(sample))
    assert [(r["path"], r["kind"], r["line"]) for r in env["results"]] == [("lib/response.js", "module", 1)]
    assert "matched module file" in env["notes"]


def test_a_name_defined_outside_the_index_is_answered_with_where_it_is_imported(sample: Path) -> None:
    write(
        sample,
        {
            "crate/src/response/mod.rs": "pub use axum_core::response::{IntoResponse, Response};\n",
            "crate/src/handler.rs": "use crate::response::IntoResponse;\n\nfn h() -> impl IntoResponse { 1 }\n",
            "crate/tests/it.rs": "use axum_core::response::IntoResponse;\n",
            "web/views.py": "from framework.http import HttpResponse\n",
            "web/stale.py": "from app.server import Gone\n",
            "web/paths.py": "from pathlib import (\n    PurePath,\n    Path,\n)\n\n\ndef path():\n    return Path('.')\n",
            "crate/src/extract.rs": "use super::{IntoResponse};\n",
            "docs/session.md": "# Session\n\nHow sessions work.\n",
            "web/net.py": "from requests import Session\n",
            "web/tokenizer.py": "VOCAB = 3\n",
            "web/model.py": "from tokenizers import Tokenizer\n",
        },
    )
    cli_json("index", "--root", str(sample))
    env = cli_json("def", "IntoResponse", "--root", str(sample))
    # `use crate::response::IntoResponse` leads back into the project: not where it comes in.
    assert [(r["path"], r["kind"], r["line"]) for r in env["results"]] == [
        ("crate/src/response/mod.rs", "import", 1),
        ("crate/tests/it.rs", "import", 1),
    ]
    assert any("comes from outside the index" in n for n in env["notes"])
    # A name the index defines is answered by its definitions alone.
    defined = cli_json("def", "HttpClient", "--root", str(sample))
    assert {r["kind"] for r in defined["results"]} == {"class"}
    python = cli_json("def", "HttpResponse", "--root", str(sample))
    assert [(r["path"], r["kind"]) for r in python["results"]] == [("web/views.py", "import")]
    # An import of a project module that does not define the name dangles: no answer.
    assert cli_json("def", "Gone", "--root", str(sample))["results"] == []
    # An exact import outranks a definition of the name in another case, and a heading of the name;
    # the line cited is the one holding the name.
    imported = cli_json("def", "Path", "--root", str(sample))["results"]
    assert [(r["path"], r["kind"], r["line"]) for r in imported] == [("web/paths.py", "import", 3)]
    session = cli_json("def", "Session", "--root", str(sample))["results"]
    assert [(r["path"], r["kind"]) for r in session] == [
        ("web/net.py", "import"),
        ("docs/session.md", "heading"),
    ]
    # A module of the project named so leads what the code imports.
    tokenizer = cli_json("def", "Tokenizer", "--root", str(sample))["results"]
    assert [(r["path"], r["kind"]) for r in tokenizer] == [
        ("web/tokenizer.py", "module"),
        ("web/model.py", "import"),
    ]
    nothing = cli_json("def", "NoSuchThing", "--root", str(sample))
    assert nothing["results"] == [] and any("no definition" in n for n in nothing["notes"])
