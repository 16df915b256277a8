"""The freshness contract (DESIGN §6): guard, ledger, stale marking, policies, live read, archive, report."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import SAMPLE, cli_json, run_cli, write

from ragraf import Index
from ragraf.errors import IndexMissingError, PathOutsideRootError, UsageError

SERVER = "src/app/server.py"


def edit(root: Path, rel: str, extra: str = "\n# edited\n") -> None:
    path = root / rel
    path.write_text(path.read_text() + extra)


def indexed(root: Path, **overrides: object) -> Index:
    idx = Index.open(root, **overrides)
    idx.index()
    return idx


def test_fresh_answers_say_so_in_every_envelope(sample: Path) -> None:
    idx = indexed(sample)
    for env in (
        idx.search("TCPConnector"),
        idx.find_symbol("TCPConnector"),
        idx.find_references("resolve_host"),
        idx.outline(SERVER),
        idx.status(),
        idx.drift(),
    ):
        d = env.to_dict()
        assert d["state"] == "fresh" and d["stale_warnings"] == []
        assert d["drift"] == {"files": 0, "symbols": 0, "entries": 0}


def test_guard_registers_each_event_once_and_counts_affected_symbols(sample: Path) -> None:
    idx = indexed(sample)
    edit(sample, SERVER)
    first = idx.search("TCPConnector")
    second = idx.find_symbol("TCPConnector")
    assert first.drift == second.drift == {"files": 1, "symbols": 4, "entries": 1}
    entries = idx.drift().results
    assert len(entries) == 1
    e = entries[0]
    assert (e["change"], e["path"], e["detected_by"], e["rev"]) == ("modify", SERVER, "guard", "rev-0001")
    assert {s["name"] for s in e["affected_symbols"]} == {
        "TCPConnector",
        "TCPConnector.__init__",
        "TCPConnector.connect",
        "resolve_host",
    }
    assert e["affected_nodes"] and e["old_sha256"] != e["new_sha256"]


def test_deleted_file_facts_are_stale_and_suggest_reindex(sample: Path) -> None:
    idx = indexed(sample)
    os.remove(sample / SERVER)
    env = idx.find_symbol("TCPConnector")
    assert env.state == "drifted"
    assert env.results and all(r["stale"] for r in env.results)
    warning = env.stale_warnings[0]
    assert (warning.path, warning.reason, warning.suggest) == (SERVER, "deleted after rev-0001", "reindex")


def test_mtime_restored_after_an_edit_still_counts_as_drift(sample: Path) -> None:
    idx = indexed(sample)
    path = sample / SERVER
    before = path.stat()
    text = path.read_text()
    path.write_text(text.replace("limit", "LIMIT"))  # same size
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert idx.search("TCPConnector").state == "drifted"
    future = time.time() + 3600
    os.utime(sample / "src/app/retry.py", (future, future))  # touched, content unchanged
    assert idx.status().stale_warnings[0].path == SERVER and len(idx.status().stale_warnings) == 1


def test_file_replaced_by_a_directory(sample: Path) -> None:
    idx = indexed(sample)
    os.remove(sample / SERVER)
    (sample / SERVER).mkdir()
    env = idx.search("TCPConnector")
    assert env.state == "drifted" and env.stale_warnings[0].reason == "deleted after rev-0001"
    with pytest.raises(UsageError):
        idx.read(SERVER)


def test_policy_fail_refuses_with_exit_3(sample: Path) -> None:
    cli_json("index", "--root", str(sample))
    edit(sample, SERVER)
    for cmd in (
        ["search", "TCPConnector"],
        ["def", "TCPConnector"],
        ["refs", "resolve_host"],
        ["status"],
        ["outline", SERVER],
        ["drift"],
    ):
        out = run_cli(*cmd, "--json", "--reindex-on-drift", "fail", "--root", str(sample))
        assert out.returncode == 3, (cmd, out.stderr)
        env = json.loads(out.stdout)
        assert env["state"] == "refused" and env["error"]["code"] == "drifted"
        assert env["error"]["message"] and "ragraf index" in env["error"]["suggest"]
    env_var = run_cli("search", "x", "--root", str(sample), env={"RAGRAF_REINDEX_ON_DRIFT": "fail"})
    assert env_var.returncode == 3


def test_policy_auto_reindexes_within_the_bound_and_warns_past_it(sample: Path) -> None:
    idx = indexed(sample, reindex_on_drift="auto", auto_reindex_max_files=1)
    edit(sample, SERVER)
    env = idx.search("TCPConnector")
    assert env.state == "fresh" and env.index_rev == "rev-0002"
    assert any("reindexed 1 drifted files" in n for n in env.notes)
    edit(sample, SERVER)
    edit(sample, "src/app/retry.py")
    env = idx.search("TCPConnector")
    assert env.state == "drifted" and env.index_rev == "rev-0002"
    assert any("over auto_reindex_max_files=1" in n for n in env.notes)


def test_live_read_is_confined_to_the_root(sample: Path, tmp_path: Path) -> None:
    idx = indexed(sample)
    outside = tmp_path / "outside.txt"
    outside.write_text("secret\n")
    os.symlink(outside, sample / "escape.txt")
    write(sample, {".env": "TOKEN=1\n"})
    for bad in ["../outside.txt", "/etc/passwd", "src/../../outside.txt", "escape.txt", "src\0x", ".env", ""]:
        with pytest.raises(PathOutsideRootError):
            idx.read(bad)
    with pytest.raises(UsageError):
        idx.read("src")  # a folder
    out = run_cli("read", "../../etc/passwd", "--root", str(sample))
    assert (
        out.returncode == 2 and "root" in out.stderr and "root:" not in out.stdout
    )  # usage, as a missing path


def test_live_read_numbers_lines_and_compares_with_the_index(sample: Path) -> None:
    idx = indexed(sample)
    env = idx.read(f"{SERVER}:4-5")
    r = env.results[0]
    assert (r["start_line"], r["end_line"], r["differs_from_index"]) == (4, 5, False)
    assert r["content"] == 'class TCPConnector:\n    """Pool of TCP connections with keep-alive."""'
    edit(sample, SERVER)
    env = idx.read(SERVER, 1, 2)
    assert env.results[0]["differs_from_index"] and env.stale_warnings[0].path == SERVER
    text = run_cli("read", f"{SERVER}:4-4", "--root", str(sample)).stdout
    assert "4  class TCPConnector:" in text
    with pytest.raises(UsageError):
        idx.read(SERVER, 500, 600)


def test_live_read_counts_lines_as_an_editor_and_reads_what_the_index_leaves_out(sample: Path) -> None:
    write(
        sample,
        {
            "two.py": "def hello():\n    return 1\n",
            "node_modules/x/i.js": "let y = 1;\n",
            "gen/.gitignore": "*.out.py\n",  # a nested .gitignore, in a folder that is no git work tree
            "gen/a.out.py": "x = 1\n",
        },
    )
    (sample / "big.log").write_text("".join(f"line {i}\n" for i in range(600_000)))  # over the read limit
    idx = indexed(sample)
    two = idx.read("two.py").results[0]
    assert (two["total_lines"], two["content"]) == (2, "def hello():\n    return 1")
    with pytest.raises(UsageError):
        idx.read("two.py", 3, 3)
    # Files no index run takes in read as they are, without a claim of drift or advice to reindex.
    for spec, why in (
        ("node_modules/x/i.js", "path rule"),
        ("big.log:3-4", "larger than"),
        ("gen/a.out.py", "an ignore file"),
    ):
        env = idx.read(spec)
        assert env.state == "fresh" and not env.stale_warnings and any(why in n for n in env.notes), env
    big = idx.read("big.log:3-4").results[0]
    assert (big["content"], big["total_lines"]) == ("line 2\nline 3", 600_000)
    end = idx.read("big.log:599999-600005").results[0]  # near the end: the lines before are counted, not kept
    assert (end["start_line"], end["end_line"], end["content"]) == (
        599_999,
        600_000,
        "line 599998\nline 599999",
    )
    text = run_cli("read", "node_modules/x/i.js", "--root", str(sample)).stdout
    assert "(not in the index)" in text


def test_archive_of_a_closed_revision_reconstructs_its_drift_T4(sample: Path) -> None:
    """T4: every change between R and R+1 is in the archive closed by R+1, with the guard's sightings."""
    idx = indexed(sample)
    edit(sample, SERVER)
    idx.search("x")  # the guard sees the first edit
    edit(sample, SERVER, "\n# second edit\n")
    os.remove(sample / "web/client.ts")
    write(sample, {"src/app/new.py": "def brand_new():\n    return 1\n"})
    idx.index()
    report = idx.changes("rev-0001", "rev-0002").results[0]
    ledger = report["ledger"]
    assert all(e["closed_by"] == "rev-0002" and e["rev"] == "rev-0001" for e in ledger)
    final = {(e["path"], e["change"]) for e in ledger if e["detected_by"] == "index"}
    assert final == {(SERVER, "modify"), ("web/client.ts", "delete"), ("src/app/new.py", "create")}
    server_shas = [e["new_sha256"] for e in ledger if e["path"] == SERVER]
    assert len(server_shas) == 2  # the guard's sighting of the first edit, and the indexed final content
    assert idx.drift().results == []  # nothing open against rev-0002
    counts = report["counts"]
    assert (counts["files_added"], counts["files_modified"], counts["files_deleted"]) == (1, 1, 1)
    assert {s["name"] for s in report["symbols"]["added"]} == {"brand_new"}
    assert {s["name"] for s in report["symbols"]["removed"]} == {"HttpClient", "HttpClient.request"}


def test_changes_reports_changed_signatures_and_bodies(sample: Path) -> None:
    idx = indexed(sample)
    text = (sample / SERVER).read_text()
    text = text.replace("def connect(self, host, port):", "def connect(self, host, port, timeout=5):")
    text = text.replace("return socket.gethostbyname(name)", "return socket.gethostbyname(name.strip())")
    (sample / SERVER).write_text(text)
    idx.index()
    changed = {s["name"]: s for s in idx.changes("rev-0001").results[0]["symbols"]["changed"]}
    assert changed["TCPConnector.connect"]["signature_changed"] is True
    assert changed["resolve_host"]["signature_changed"] is False
    assert changed["resolve_host"]["line"] == 14 and changed["resolve_host"]["rev"] == "rev-0002"
    assert "TCPConnector" in changed  # the class body changed too
    for fmt, marker in (("text", "Symbols changed"), ("md", "## Symbols changed"), ("html", "<table>")):
        out = run_cli(
            "changes", "--from", "rev-0001", "--to", "rev-0002", "--format", fmt, "--root", str(sample)
        )
        assert out.returncode == 0 and marker in out.stdout
    as_json = run_cli("changes", "--from", "rev-0001", "--format", "json", "--root", str(sample))
    assert json.loads(as_json.stdout)["counts"]["symbols_changed"] >= 2
    # -o writes the report, the envelope too under --json; a folder that is not there is a usage error.
    report = sample.parent / "report.json"
    out = run_cli("changes", "--from", "rev-0001", "--json", "-o", str(report), "--root", str(sample))
    assert out.returncode == 0 and out.stdout == "" and json.loads(report.read_text())["op"] == "changes"
    out = run_cli(
        "changes", "--from", "rev-0001", "-o", str(sample.parent / "none" / "r.md"), "--root", str(sample)
    )
    assert out.returncode == 2 and "cannot write" in out.stderr and "Traceback" not in out.stderr


def test_changes_rejects_unknown_and_reversed_revisions(sample: Path) -> None:
    idx = indexed(sample)
    edit(sample, SERVER)
    idx.index()
    with pytest.raises(UsageError) as err:
        idx.changes("rev-0042")
    assert "rev-0001, rev-0002" in err.value.message
    with pytest.raises(UsageError) as err:
        idx.changes("rev-0002", "rev-0001")
    assert "swap" in err.value.suggest
    out = run_cli("changes", "--from", "nope", "--root", str(sample))
    assert out.returncode == 2 and "retained revisions" in out.stderr


def test_index_home_deleted_while_open_says_to_reindex(sample: Path) -> None:
    idx = indexed(sample)
    assert idx.search("TCPConnector").results
    shutil.rmtree(idx.settings.home)
    with pytest.raises(IndexMissingError) as err:
        idx.search("TCPConnector")
    assert "ragraf index" in err.value.suggest


@pytest.mark.skipif(not shutil.which("chromium"), reason="headless Chromium not installed (CI installs it)")
def test_html_report_renders_its_tables_in_a_real_browser(sample: Path, tmp_path: Path) -> None:
    idx = indexed(sample)
    edit(sample, SERVER)
    os.remove(sample / "web/client.ts")
    idx.index()
    page = tmp_path / "report.html"
    assert (
        run_cli(
            "changes", "--from", "rev-0001", "--format", "html", "-o", str(page), "--root", str(sample)
        ).returncode
        == 0
    )
    dom = subprocess.run(
        [
            "chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    assert dom.count("<table>") >= 2 and "web/client.ts" in dom and "HttpClient" in dom
    shot = tmp_path / "report.png"
    subprocess.run(
        [
            "chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            f"--user-data-dir={tmp_path / 'profile2'}",
            f"--screenshot={shot}",
            "--window-size=1200,900",
            page.as_uri(),
        ],
        capture_output=True,
        timeout=120,
    )
    assert shot.exists() and shot.stat().st_size > 5000


_T2_WORKER = """
import json, sys
from pathlib import Path
from ragraf import Index
root, worker, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
idx = Index.open(root)
seen = []
for i in range(rounds):
    with open(Path(root) / "src/app/server.py", "a") as fh:
        fh.write(f"# worker {worker} edit {i}\\n")
    seen.append(idx.read("src/app/server.py").results[0]["sha256"])
print(json.dumps(seen))
"""


def test_concurrent_edits_lose_no_event_and_duplicate_none_T2(sample: Path) -> None:
    """T2: real processes edit one file and read it concurrently; every sighting is in the ledger once."""
    indexed(sample)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _T2_WORKER, str(sample), str(w), "15"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(4)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    seen = {sha for out, _ in outs for sha in json.loads(out)}
    entries = [e for e in Index.open(sample).drift().results if e["path"] == SERVER]
    recorded = [e["new_sha256"] for e in entries]
    assert len(recorded) == len(set(recorded)), "duplicate ledger entries"
    assert seen <= set(recorded), "a sighting was lost"
    assert len(seen) > 4


OPS = ("search", "def", "refs", "outline", "status", "drift")


def _facts_and_results(idx: Index) -> list[tuple[str, dict]]:
    out = []
    for name in ("TCPConnector", "resolve_host", "retry_with_backoff", "HttpClient", "brand_new"):
        out += [("search", r.__dict__) for r in idx.search(name, k=10).results]
        out += [("def", f) for f in idx.find_symbol(name).results]
        out += [("refs", f) for f in idx.find_references(name).results]
    for path in SAMPLE:
        with contextlib.suppress(UsageError):  # deleted since indexing
            out += [("outline", f) for f in idx.outline(path).results]
    return out


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    steps=st.lists(
        st.tuples(
            st.sampled_from(["create", "modify", "delete", "rename", "reindex"]),
            st.sampled_from(sorted(SAMPLE)),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_no_read_operation_returns_a_drifted_fact_as_fresh_T3(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, str]]
) -> None:
    """T3: after random create/modify/delete/rename sequences, every result from a drifted path is stale."""
    root = tmp_path_factory.mktemp("t3")
    write(root, SAMPLE)
    idx = indexed(root)
    for action, rel in steps:
        path = root / rel
        if action == "modify" and path.exists():
            path.write_text(path.read_text() + "\ndef brand_new():\n    return 2\n")
        elif action == "delete" and path.exists():
            path.unlink()
        elif action == "create":
            write(root, {f"extra/{Path(rel).name}": "def brand_new():\n    return 1\n"})
        elif action == "rename" and path.exists():
            path.rename(path.with_name("renamed_" + path.name))
        elif action == "reindex":
            idx.index()
    status = idx.status()
    drifted = {w.path for w in status.stale_warnings}
    for op, item in _facts_and_results(idx):
        assert item["stale"] == (item["path"] in drifted), (op, item["path"])
    if drifted:
        assert status.state == "drifted"


def test_every_returned_path_line_verifies_against_the_revision_M6(tmp_path: Path) -> None:
    """M6: on a real corpus, every search snippet and every definition line matches the indexed content."""
    import asyncio

    root = tmp_path / "asyncio"
    shutil.copytree(Path(asyncio.__file__).parent, root, ignore=shutil.ignore_patterns("__pycache__"))
    idx = indexed(root)
    checked = 0
    for query in ("event loop", "create_task", "cancel a future", "subprocess pipes", "Semaphore", "timeout"):
        for r in idx.search(query, k=10).results:
            lines = (root / r.path).read_text().split("\n")
            assert r.snippet == "\n".join(lines[r.start_line - 1 : r.end_line])
            checked += 1
    for path in sorted(p.name for p in root.glob("*.py")):
        lines = (root / path).read_text().split("\n")
        for f in idx.outline(path).results:
            assert f["name"] in lines[f["line"] - 1], (path, f)
            checked += 1
    assert checked > 500
