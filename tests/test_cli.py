"""The CLI contract: commands, --json shapes, batch mode, dry run, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from support import cli_json, run_cli, write

from ragraf import Index

ENVELOPE_KEYS = {
    "op",
    "index_rev",
    "corpus_hash",
    "state",
    "drift",
    "stale_warnings",
    "capability",
    "results",
    "truncated",
}
RESULT_KEYS = {"path", "start_line", "end_line", "score", "kind", "language", "symbol", "stale", "snippet"}


def test_index_json_shape(sample: Path) -> None:
    data = cli_json("index", "--root", str(sample))
    assert {"index_rev", "corpus_hash", "files", "chunks", "duration_s"} <= set(data)
    assert set(data["files"]) == {"added", "modified", "deleted", "unchanged"}
    assert set(data["chunks"]) == {"total", "new"}


def test_search_envelope_follows_the_design_exactly(sample: Path) -> None:
    cli_json("index", "--root", str(sample))
    env = cli_json("search", "TCPConnector", "--root", str(sample))
    assert set(env) >= ENVELOPE_KEYS
    assert env["state"] == "fresh" and env["drift"] == {"files": 0, "symbols": 0, "entries": 0}
    assert set(env["capability"]) >= {
        "lexical",
        "semantic",
        "semantic_coverage",
        "facts",
        "degraded",
        "reasons",
    }
    assert set(env["truncated"]) == {"results", "bytes"}
    top = env["results"][0]
    assert set(top) == RESULT_KEYS
    assert top["path"] == "src/app/server.py" and top["kind"] == "code" and top["language"] == "python"
    lines = (sample / top["path"]).read_text().split("\n")
    assert top["snippet"] == "\n".join(lines[top["start_line"] - 1 : top["end_line"]])


def test_tests_are_tagged_and_ranked_below_the_implementation(sample: Path) -> None:
    cli_json("index", "--root", str(sample))
    env = cli_json("search", "TCPConnector limit", "--root", str(sample))
    kinds = {r["path"]: r["kind"] for r in env["results"]}
    assert env["results"][0]["path"] == "src/app/server.py"
    assert kinds.get("tests/test_server.py") == "test"


def test_batch_mode_prints_one_envelope_per_line_in_order(sample: Path) -> None:
    cli_json("index", "--root", str(sample))
    queries = sample.parent / "queries.txt"
    queries.write_text('retry with backoff\n{"query": "TCPConnector"}\n\nHttpClient request\n')
    out = run_cli("search", "--queries", str(queries), "-k", "2", "--json", "--root", str(sample))
    assert out.returncode == 0, out.stderr
    envs = [json.loads(line) for line in out.stdout.splitlines()]
    assert [e["results"][0]["path"] for e in envs] == [
        "src/app/retry.py",
        "src/app/server.py",
        "web/client.ts",
    ]
    assert all(len(e["results"]) <= 2 for e in envs)
    # A JSON line without a string "query" is an error in its place, not a search for "None".
    queries.write_text('retry\n{"query": null}\n{"q": "x"}\n{not json but a query\n')
    out = run_cli("search", "--queries", str(queries), "--json", "--root", str(sample))
    envs = [json.loads(line) for line in out.stdout.splitlines()]
    assert out.returncode == 2 and [e.get("error", {}).get("code") for e in envs] == [
        None,
        "usage",
        "usage",
        None,
    ]
    assert "queries.txt line 2" in envs[1]["error"]["message"]
    # A QUERY and a file, or neither: a usage error, with its envelope under --json.
    for args in (["retry", "--queries", str(queries)], []):
        out = run_cli("search", *args, "--json", "--root", str(sample))
        assert out.returncode == 2 and json.loads(out.stdout)["error"]["code"] == "usage"


def test_dry_run_reports_by_folder_and_changes_nothing(sample: Path) -> None:
    data = cli_json("index", "--dry-run", "--root", str(sample))
    assert data["files"] == 5 and data["chunks"] > 0
    assert data["folders"]["src/app"]["files"] == 2
    assert not (sample / ".ragraf").exists()
    text = run_cli("index", "--dry-run", "--root", str(sample))
    assert "src/app" in text.stdout and text.returncode == 0


def test_status_revisions_gc_and_exit_codes(sample: Path) -> None:
    missing = run_cli("status", "--root", str(sample))
    assert missing.returncode == 1 and "ragraf index" in missing.stderr
    missing_json = run_cli("status", "--json", "--root", str(sample))
    assert json.loads(missing_json.stdout)["error"]["code"] == "index_missing"
    cli_json("index", "--root", str(sample))
    status = cli_json("status", "--root", str(sample))
    assert status["index_rev"] == "rev-0001" and status["results"][0]["revision"]["files"] == 5
    revs = cli_json("revisions", "--root", str(sample))
    assert [r["rev"] for r in revs["results"]] == ["rev-0001"]
    assert cli_json("gc", "--root", str(sample))["op"] == "gc"
    assert run_cli("search", "--root", str(sample)).returncode == 2
    assert run_cli("nonsense").returncode == 2


def test_drifted_files_are_marked_stale_in_search(sample: Path) -> None:
    cli_json("index", "--root", str(sample))
    write(sample, {"src/app/server.py": (sample / "src/app/server.py").read_text() + "\n# edited\n"})
    env = cli_json("search", "TCPConnector", "--root", str(sample))
    assert env["state"] == "drifted"
    assert env["stale_warnings"][0]["path"] == "src/app/server.py"
    assert env["stale_warnings"][0]["reason"] == "modified after rev-0001"
    assert all(r["stale"] == (r["path"] == "src/app/server.py") for r in env["results"])


def test_text_output_cites_path_and_lines(sample: Path) -> None:
    cli_json("index", "--root", str(sample))
    out = run_cli("search", "retry backoff", "--root", str(sample))
    assert out.returncode == 0
    assert "src/app/retry.py:1-11  retry_with_backoff  [code]" in out.stdout


def test_bad_queries_get_clear_answers(sample: Path) -> None:
    cli_json("index", "--root", str(sample))
    for q in [
        "",
        "the of and",
        "!!! ???",
        "🙂 ünïcode 日本語",
        "Wie funktioniert die Verbindung?",
        "x" * 100_000,
    ]:
        env = cli_json("search", q, "--root", str(sample))
        assert env["op"] == "search" and env["state"] == "fresh"
        # Queries nothing can match say so instead of answering silently.
        wordless = q in ("the of and", "!!! ???")
        assert any("no searchable words" in n for n in env["notes"]) == wordless, (q, env["notes"])
    assert "empty query: nothing to search for" in cli_json("search", "", "--root", str(sample))["notes"]
    huge = Index.open(sample).search("TCPConnector connect " * 50_000)  # a 1 MB query
    assert huge.results[0].path == "src/app/server.py"
    clamped = cli_json("search", "retry", "-k", "10000", "--root", str(sample))
    assert any("clamped" in n for n in clamped["notes"])
    zero = cli_json("search", "retry", "-k", "0", "--root", str(sample))
    assert zero["results"] == [] and any(n.startswith("k=0: no results asked for") for n in zero["notes"])
    negative = cli_json("search", "retry", "-k", "-3", "--root", str(sample))
    assert negative["results"] == [] and "k=-3 clamped to 0 (allowed 0..10)" in negative["notes"]
    # What click refuses (a bad option value, a missing argument) prints its envelope too.
    for args in (
        ["search", "-k", "abc", "x"],
        ["search", "--mode", "bogus", "x"],
        ["def"],
        ["search", "--budget", "-5", "x"],
    ):
        out = run_cli(*args, "--json", "--root", str(sample))
        error = json.loads(out.stdout)["error"]
        assert out.returncode == 2 and error["code"] == "usage" and out.stderr, out
    # Bytes that are not UTF-8 from the shell (b"\xff\xfe"): a usage error that names them.
    for args in (["def", "\udcff\udcfe"], ["outline", "src/\udcff.py"], ["search", "a\udcffb"]):
        out = run_cli(*args, "--json", "--root", str(sample))
        error = json.loads(out.stdout)["error"]
        assert out.returncode == 2 and error["code"] == "usage" and "\\xff" in error["message"], out


def test_the_cli_works_without_the_postgres_extra(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "for m in ('psycopg', 'psycopg_pool', 'pgvector'): sys.modules[m] = None  # not installed\n"
        "from ragraf.cli import main\n"
        "main(['index', '--root', sys.argv[1], '-q'])\n"
    )
    write(tmp_path, {"a.py": "def f():\n    return 1\n"})
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    migrate = subprocess.run(
        [
            sys.executable,
            "-c",
            code.replace("'index', '--root', sys.argv[1], '-q'", "'migrate'"),
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert migrate.returncode == 1 and "ragraf[postgres]" in migrate.stderr


def test_commands_other_than_migrate_do_not_load_the_postgres_driver(sample: Path) -> None:
    code = (
        "import sys\nfrom click.testing import CliRunner\nfrom ragraf.cli import main\n"
        "r = CliRunner().invoke(main, ['index', '--root', sys.argv[1], '-q'])\n"
        "assert r.exit_code == 0 and 'psycopg' not in sys.modules, r.output\n"
        "r = CliRunner().invoke(main, ['search', 'f', '--root', sys.argv[1]])\n"
        "assert r.exit_code == 0 and 'psycopg' not in sys.modules, r.output\n"
        "assert 'migrate' in CliRunner().invoke(main, ['--help']).output\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(sample)], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
