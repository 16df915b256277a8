"""Incremental indexing, revisions, retention, locking and crash safety on real folders and SQLite."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from support import SAMPLE, cli_json, outliving, run_cli, settled, write

from ragraf import Index
from ragraf.api.ops import lifecycle as index_runs
from ragraf.corpus.discover import FileStat
from ragraf.errors import IndexCorruptError, IndexMissingError, LockHeldError, StoreError
from ragraf.index import indexer
from ragraf.index.indexer import UNCHANGED_UNINDEXABLE, skipped_files
from ragraf.index.lock import WriterLock


def test_first_index_then_no_change_then_one_change(sample: Path) -> None:
    idx = Index.open(sample)
    first = idx.index()
    assert first.index_rev == "rev-0001" and first.files["added"] == 5 and first.chunks["new"] > 0
    again = idx.index()
    assert again.index_rev == "rev-0001" and not again.new_revision
    assert again.files == {"added": 0, "modified": 0, "deleted": 0, "unchanged": 5}
    assert again.chunks["new"] == 0
    (sample / "src/app/retry.py").write_text("def retry():\n    pass\n")
    third = idx.index()
    assert third.index_rev == "rev-0002"
    assert third.files == {"added": 0, "modified": 1, "deleted": 0, "unchanged": 4}
    assert third.chunks["new"] == 1


def test_corpus_hash_is_sha1_of_sorted_path_nul_sha_lines(sample: Path) -> None:
    report = Index.open(sample).index()
    lines = []
    for rel in sorted(
        ["src/app/server.py", "src/app/retry.py", "tests/test_server.py", "docs/guide.md", "web/client.ts"]
    ):
        from ragraf.corpus.extract import extract

        lines.append(f"{rel}\0{extract(sample / rel, rel, 4000).sha256}\n")
    assert report.corpus_hash == hashlib.sha1("".join(lines).encode()).hexdigest()


def test_touching_a_file_without_changing_it_rechunks_nothing(sample: Path) -> None:
    idx = Index.open(sample)
    idx.index()
    future = time.time() + 5
    os.utime(sample / "src/app/server.py", (future, future))
    report = idx.index()
    assert not report.new_revision and report.chunks["new"] == 0
    assert report.files["unchanged"] == 5


def test_deleted_file_leaves_the_next_revision(sample: Path) -> None:
    idx = Index.open(sample)
    idx.index()
    os.remove(sample / "web/client.ts")
    report = idx.index()
    assert report.files["deleted"] == 1 and report.index_rev == "rev-0002"
    assert not [r for r in idx.search("HttpClient request").results if r.path == "web/client.ts"]


def test_identical_content_at_two_paths_is_stored_once(sample: Path) -> None:
    write(sample, {"copy/server.py": (sample / "src/app/server.py").read_text()})
    idx = Index.open(sample)
    idx.index()
    db = sqlite3.connect(idx.settings.db_path)
    assert db.execute("SELECT count(*) FROM contents").fetchone()[0] == 5
    paths = {r.path for r in idx.search("TCPConnector", k=10).results}
    assert {"src/app/server.py", "copy/server.py"} <= paths


def test_a_first_index_stores_what_a_later_run_would_for_the_same_files(sample: Path, tmp_path: Path) -> None:
    """A first index reads, hashes and chunks each file in one pass; a later run hashes first and
    chunks what is new. Both hold the same chunks and facts, and count the chunks as new."""
    later = tmp_path / "later"
    later.mkdir()
    (later / "README.txt").write_text("placeholder\n")
    second = Index.open(later)
    second.index()
    for path in sample.rglob("*"):
        if path.is_file() and ".ragraf" not in path.parts:
            write(later, {path.relative_to(sample).as_posix(): path.read_bytes()})
    (later / "README.txt").unlink()
    first, after = Index.open(sample), second
    reports = first.index(), after.index()
    assert reports[0].chunks["new"] == reports[1].chunks["new"] > 0
    assert reports[0].files["added"] == reports[1].files["added"] == 5

    def held(idx: Index) -> tuple[object, ...]:
        store = idx.store()
        rev = store.current_revision()
        assert rev is not None
        paths = sorted(store.manifest(rev.rev_no))
        chunks = [
            (c.path, c.start_line, c.end_line, c.symbol, c.text)
            for p in paths
            for c in store.chunks_of(rev.rev_no, p)
        ]
        db = sqlite3.connect(idx.settings.db_path)
        facts = sorted(
            db.execute(
                "SELECT m.path, f.kind, f.name, f.def_kind, f.container, f.line, f.end_line, f.body_hash "
                "FROM facts f JOIN manifest m ON m.content_id = f.content_id WHERE m.rev_no = ?",
                (rev.rev_no,),
            )
        )
        refs = sorted(
            db.execute(
                "SELECT m.path, r.name, r.sites FROM ref_sites r JOIN manifest m ON m.content_id = r.content_id "
                "WHERE m.rev_no = ?",
                (rev.rev_no,),
            )
        )
        return paths, chunks, facts, refs

    assert held(first) == held(after)
    assert held(first)[2], "the sample defines functions and classes"


def test_index_version_mismatch_forces_a_full_rebuild_and_says_so(sample: Path) -> None:
    Index.open(sample).index()
    report = Index.open(sample, chunk_max_chars=900).index()
    assert report.full_rebuild and "index version mismatch: full reindex" in (report.reason or "")
    assert report.index_rev == "rev-0002"


def test_retention_keeps_the_last_n_revisions_and_their_data(sample: Path) -> None:
    idx = Index.open(sample, keep_revisions=3)
    for i in range(6):
        (sample / "src/app/retry.py").write_text(f"def retry_{i}():\n    return {i}\n")
        idx.index()
    revs = [r["rev"] for r in idx.revisions().results]
    assert revs == ["rev-0004", "rev-0005", "rev-0006"]
    db = sqlite3.connect(idx.settings.db_path)
    # retry.py contents of revisions 1-3 are gone; the four unchanged files are shared.
    assert db.execute("SELECT count(*) FROM contents").fetchone()[0] == 4 + 3
    out = idx.gc()
    assert out["revisions_removed"] == 0


def test_reading_an_unindexed_folder_says_to_index(tmp_path: Path) -> None:
    with pytest.raises(IndexMissingError) as err:
        Index.open(tmp_path).search("x")
    assert "ragraf index" in err.value.suggest
    assert not (tmp_path / ".ragraf").exists()


def test_empty_folder_indexes_to_an_empty_revision(tmp_path: Path) -> None:
    report = Index.open(tmp_path).index()
    assert report.index_rev == "rev-0001" and report.chunks["total"] == 0
    assert Index.open(tmp_path).search("anything").results == []


@pytest.mark.parametrize("garbage", [b"not a database at all" * 100, "foreign", "pages", "fts"])
def test_corrupt_or_foreign_index_file_asks_for_full_reindex(sample: Path, garbage: object) -> None:
    idx = Index.open(sample)
    idx.index()
    idx.close()
    db_path = idx.settings.db_path
    for suffix in ("-wal", "-shm"):
        Path(f"{db_path}{suffix}").unlink(missing_ok=True)
    if garbage == "foreign":
        db_path.unlink()
        other = sqlite3.connect(db_path)
        other.execute("CREATE TABLE users (id INTEGER)")
        other.commit()
        other.close()
    elif garbage == "fts":  # the lexical index's own blocks scrambled: sound pages, a broken index
        with sqlite3.connect(db_path) as db:
            db.execute("UPDATE chunks_fts_data SET block = randomblob(length(block)) WHERE id > 10")
        db.close()
    elif garbage == "pages":  # the schema intact, the manifest's page overwritten: found only when read
        with sqlite3.connect(db_path) as db:
            page_size = db.execute("PRAGMA page_size").fetchone()[0]
            (root,) = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'manifest_rows'").fetchone()
        db.close()
        with db_path.open("r+b") as f:
            f.seek((root - 1) * page_size)
            f.write(b"\xab" * page_size)
    else:
        db_path.write_bytes(garbage)  # type: ignore[arg-type]
    with pytest.raises(IndexCorruptError) as err:
        Index.open(sample).search("TCPConnector")
    assert "ragraf index --full" in err.value.suggest
    out = run_cli("search", "TCPConnector", "--root", str(sample))
    assert out.returncode == 1 and "Traceback" not in out.stderr and "--full" in out.stderr
    if garbage == "pages":  # a lookup that needs no row of the damaged page answers; a run checks every page
        assert run_cli("index", "--root", str(sample)).returncode == 1
    elif garbage != "fts":  # facts and the manifest do not read the lexical index
        out = run_cli("def", "TCPConnector", "--root", str(sample), "--json")
        assert out.returncode == 1 and json.loads(out.stdout)["error"]["code"] == "index_corrupt"
        assert run_cli("index", "--root", str(sample)).returncode == 1
    else:
        doctor = run_cli("doctor", "--check", "--root", str(sample))
        assert doctor.returncode == 1 and "the file is damaged" in doctor.stdout, doctor
    rebuilt = cli_json("index", "--full", "--root", str(sample))
    assert rebuilt["index_rev"] == "rev-0001"
    assert Index.open(sample).search("TCPConnector").results[0].path == "src/app/server.py"


def test_second_writer_waits_or_names_the_holder(sample: Path) -> None:
    idx = Index.open(sample)
    idx.index()
    lock = WriterLock(idx.settings.home)
    lock.acquire()
    try:
        out = run_cli("index", "--no-wait", "--root", str(sample))
        assert (
            out.returncode == 1
            and "holds the index lock" in out.stderr
            and f"pid {os.getpid()}" in out.stderr
        )
        with pytest.raises(LockHeldError):
            idx.index(wait=False)
        waiter = subprocess.Popen(
            [sys.executable, "-m", "ragraf.cli", "index", "--root", str(sample), "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(1.0)
        assert waiter.poll() is None, "the second indexer must wait for the lock"
    finally:
        lock.release()
    stdout, _ = waiter.communicate(timeout=60)
    assert waiter.returncode == 0 and '"index_rev": "rev-0001"' in stdout


def test_two_indexers_at_once_produce_one_consistent_history(sample: Path) -> None:
    for i in range(30):
        write(sample, {f"gen/m{i}.py": f"def f{i}():\n    return {i}\n"})
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "ragraf.cli", "index", "--root", str(sample), "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    revs = [r["rev"] for r in Index.open(sample).revisions().results]
    assert revs == ["rev-0001"]


def test_readers_see_the_last_committed_revision_while_a_writer_works(sample: Path) -> None:
    idx = Index.open(sample)
    idx.index()
    for i in range(200):
        write(sample, {f"gen/m{i}.py": f"def generated_{i}():\n    return {i}\n" * 20})
    errors: list[Exception] = []
    revs: set[str] = set()

    def reader() -> None:
        r = Index.open(sample)
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            try:
                revs.add(r.search("TCPConnector").index_rev or "")
            except Exception as exc:  # noqa: BLE001
                errors.append(exc)

    t = threading.Thread(target=reader)
    t.start()
    Index.open(sample).index()
    t.join()
    assert not errors and revs <= {"rev-0001", "rev-0002"}


def test_killed_indexer_leaves_the_previous_revision_and_the_next_run_completes(tmp_path: Path) -> None:
    root = tmp_path / "big"
    for i in range(1500):
        write(
            root,
            {
                f"pkg{i % 30}/mod_{i}.py": f"def function_{i}(x):\n    '''Doc {i}.'''\n    return x + {i}\n"
                * 15
            },
        )
    first = cli_json("index", "--root", str(root))
    assert first["index_rev"] == "rev-0001"
    for i in range(1500):
        (root / f"pkg{i % 30}/mod_{i}.py").write_text(f"def changed_{i}(y):\n    return y * {i}\n" * 15)
    before = Index.open(root).search("function_7 doc", k=5).to_dict()
    for delay in (0.3, 0.8, 1.5):
        proc = subprocess.Popen([sys.executable, "-m", "ragraf.cli", "index", "--root", str(root), "-q"])
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        after = Index.open(root)
        rev = after.revisions().results[-1]["rev"]
        if rev == "rev-0001":
            assert after.search("function_7 doc", k=5).to_dict()["results"] == before["results"]
    final = cli_json("index", "--root", str(root))
    assert final["files"]["unchanged"] + final["files"]["modified"] == 1500
    hits = Index.open(root).search("changed_42", k=3).results
    assert hits and hits[0].path == "pkg12/mod_42.py"


def test_a_new_file_with_the_content_of_an_unchanged_one_is_listed_once_each(tmp_path: Path) -> None:
    write(tmp_path, {"a.py": "def same():\n    return 1\n", "b.py": "x = 1\n"})
    idx = Index.open(tmp_path)
    idx.index()
    write(tmp_path, {"copy_of_a.py": "def same():\n    return 1\n"})
    report = idx.index()
    assert report.files == {"added": 1, "modified": 0, "deleted": 0, "unchanged": 2}
    assert sorted(r["path"] for r in idx.find_symbol("same").results) == ["a.py", "copy_of_a.py"]


def test_a_few_moved_files_commit_a_change_that_equals_a_whole_rebuild(sample: Path, tmp_path: Path) -> None:
    from test_guard_speed import settled

    settled(sample)
    idx = Index.open(sample)
    idx.index()
    (sample / "src/app/retry.py").write_text("def retry_with_jitter():\n    return 'jitter'\n")
    (sample / "docs/guide.md").write_bytes(b"\x00\x01 now a binary file\x00")  # leaves the index
    future = time.time() + 5
    os.utime(sample / "src/app/server.py", (future, future))  # touched, not changed
    report = idx.index()
    assert report.files == {"added": 0, "modified": 1, "deleted": 1, "unchanged": 3}
    assert report.files_read == 2  # the guard named these three (the binary one is examined, not read)
    # The same tree indexed from scratch elsewhere: the same revision content in every respect.
    fresh = Index.open(sample, home=str(tmp_path / "other-home")).index()
    assert (report.corpus_hash, report.chunks["total"], report.skipped) == (
        fresh.corpus_hash,
        fresh.chunks["total"],
        fresh.skipped,
    )
    store = idx.store()
    rev = store.current_revision()
    assert rev is not None and rev.files == 4
    assert sorted(store.manifest(rev.rev_no)) == sorted(
        ["src/app/server.py", "src/app/retry.py", "tests/test_server.py", "web/client.ts"]
    )
    assert [r.path for r in idx.search("retry_with_jitter", mode="lexical").results][:1] == [
        "src/app/retry.py"
    ]
    check = idx.doctor(check=True).to_dict()
    assert next(c for c in check["results"] if c["check"] == "consistency")["ok"], check
    # Back to the first content: the change is committed again, and the old lexical rows return.
    (sample / "src/app/retry.py").write_text(SAMPLE["src/app/retry.py"])
    back = idx.index()
    assert back.files["modified"] == 1 and back.chunks["new"] == 0
    assert not [r for r in idx.search("retry_with_jitter", mode="lexical").results if "jitter" in r.snippet]
    check = idx.doctor(check=True).to_dict()
    assert next(c for c in check["results"] if c["check"] == "consistency")["ok"], check


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry.name))
    return out


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_a_killed_indexer_leaves_no_worker_process_behind(tmp_path: Path) -> None:
    root = tmp_path / "big"
    write(
        root,
        {f"pkg{i % 20}/mod_{i}.py": f"def function_{i}(x):\n    return x + {i}\n" * 40 for i in range(3000)},
    )
    proc = subprocess.Popen([sys.executable, "-m", "ragraf.cli", "index", "--root", str(root), "-q"])
    deadline = time.monotonic() + 60
    workers: list[int] = []
    while time.monotonic() < deadline and proc.poll() is None and len(workers) < 2:
        workers = _children(proc.pid)
        time.sleep(0.05)
    assert proc.poll() is None and len(workers) >= 2, "the indexer finished before its pool could be seen"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not outliving(workers), "pool workers outlived the killed indexer"


def test_files_skipped_for_their_content_are_named_with_the_reason(sample: Path) -> None:
    write(
        sample,
        {
            "src/app/bundle.py": "x = [" + "1, " * 5000 + "]\n",  # one 15,000-character line
            "src/app/blob.py": b"\x00\x01\x02 binary\x00",
            "package-lock.json": "{}\n",  # skipped by name: expected, not named
        },
    )
    settled(sample)  # not written just now: a run may trust what the last one read
    data = cli_json("index", "--root", str(sample))
    named = {s["path"]: s["reason"] for s in data["skipped_files"]}
    assert set(named) == {"src/app/bundle.py", "src/app/blob.py"}, data["skipped_files"]
    assert "minified" in named["src/app/bundle.py"] and "binary" in named["src/app/blob.py"]
    assert data["skipped"] >= 3
    text = run_cli("index", "--full", "--root", str(sample)).stdout
    assert "skipped for their content: src/app/blob.py (binary" in text, text
    # A preview names them too, reading them again for the reason the stat cache does not keep.
    preview = cli_json("index", "--dry-run", "--root", str(sample))
    assert {s["path"]: s["reason"] for s in preview["skipped_files"]} == named
    # Unchanged since, they are not read again, nor named again (whether the run lists the
    # folder or takes the guard's word for what changed).
    (sample / "src/app/retry.py").write_text("def retry():\n    return 2\n")
    assert cli_json("index", "--root", str(sample))["skipped_files"] == []
    stats = {p: FileStat(p, 1, 1, 1, 1) for p in ("a.py", "b.py")}
    listed = skipped_files([], [(stats["a.py"], UNCHANGED_UNINDEXABLE), (stats["b.py"], "binary")])
    assert listed == [{"path": "b.py", "reason": "binary"}]


@pytest.mark.parametrize("in_git", [False, True], ids=["a plain folder", "a git work tree"])
def test_a_file_name_that_is_not_utf8_is_skipped_and_named_escaped(tmp_path: Path, in_git: bool) -> None:
    root = tmp_path / "repo"
    write(root, {"ok.py": "def ok():\n    return 1\n"})
    (root / os.fsdecode(b"bad\xffname.py")).write_text("def hidden():\n    pass\n")
    if in_git:
        subprocess.run(["git", "init", "-q", str(root)], check=True)
    env = {"RAGRAF_EMBEDDER": "none"}
    data = cli_json("index", "--root", str(root), env=env)
    assert data["files"]["added"] == 1
    assert data["skipped_files"] == [
        {"path": "bad\\xffname.py", "reason": "file name is not valid UTF-8 (rename it to index it)"}
    ]
    assert [r["path"] for r in cli_json("def", "ok", "--root", str(root), env=env)["results"]] == ["ok.py"]


# 368 bytes on which tree-sitter's TSX error recovery runs for minutes (over 100 s measured),
# holding the GIL: found by parsing random text.
PARSER_TRAP_TSX = (
    '98"#;\n{9@`cé};\n;$ \\\'2[b@0 >@${1:#y(\\6(\n>ze1`:3`d[c(:<\n5)"=\n='
    "a`y(d{@1[}3éc=\u2028<7)dzd<y(:>x`#9z>x#;)71x{(\n0}7y>ad{>$/a;\\x\n\\'"
    '1)96/2@\\ \t\t=c:``}\\")0$/3]88\\3x"y5d6._/6\'c\n$))y:9 b@<bc1=#":7'
    ";0x'72#.f =5\t5\u202800]30`(#.8<\u2028[>}73x=c9#_éay@[.b4zy\t$($8<#\\:$c<"
    '3e\u20284">cé22ex.f4 =;$e84x_\u2028é>2ay\\bx3fx}\\}.7z8az.\n\u2028]d.2f=x3cé4@'
    'f9:"\u2028/3:]87}}/.) 2e]9.\tc.(e82}[}]7{`4@/}=z@7\u2028]8#e\\\\a8`_é\u2028[z$'
    ':)f[6./"'
)


@pytest.mark.parametrize("others", [80, 3], ids=["a pool on all cores", "one forked worker"])
def test_a_file_the_parser_cannot_finish_is_indexed_by_lines_and_named(tmp_path: Path, others: int) -> None:
    root = tmp_path / "repo"
    write(root, {f"src/m{i}.py": f"def f{i}():\n    return {i}\n" for i in range(others)})
    write(root, {"src/odd.tsx": PARSER_TRAP_TSX})
    env = {"RAGRAF_PARSE_TIMEOUT_S": "2", "RAGRAF_EMBEDDER": "none"}
    data = cli_json("index", "--root", str(root), env=env)
    assert data["files"]["added"] == others + 1
    assert [w for w in data["warnings"] if w.startswith("src/odd.tsx: parsing took longer than 2 s")], data
    outline = cli_json("outline", "src/odd.tsx", "--root", str(root), env=env)
    assert outline["results"] and any("gave up" in n for n in outline["notes"])
    # The files parsed beside it, in the pool it brought down, keep their facts.
    for i in (0, others // 2, others - 1):
        found = cli_json("def", f"f{i}", "--root", str(root), env=env)["results"]
        assert [r["path"] for r in found] == [f"src/m{i}.py"]


def test_a_threaded_caller_parses_small_batches_under_the_timeout_too(tmp_path: Path) -> None:
    # The MCP and HTTP servers index from a process that runs threads, which must not fork:
    # their small batches go to a worker forked from a fork server, still under the timer.
    root = tmp_path / "repo"
    write(root, {"src/a.py": "def kept():\n    return 1\n", "src/odd.tsx": PARSER_TRAP_TSX})
    stop = threading.Event()
    server_thread = threading.Thread(target=stop.wait)
    server_thread.start()
    try:
        idx = Index.open(root, home=tmp_path / "home", embedder="none", parse_timeout_s=2)
        report = idx.index()
        assert [w for w in report.warnings if w.startswith("src/odd.tsx: parsing took longer than 2 s")]
        assert [d["path"] for d in idx.find_symbol("kept").results] == ["src/a.py"]
        idx.close()
    finally:
        stop.set()
        server_thread.join()


def _written_after_hashing(monkeypatch: pytest.MonkeyPatch, root: Path, files: dict[str, str]) -> None:
    """Write files between the run's hashing and its chunking, as an editor saving mid-run does."""
    original = indexer.hash_files

    def hash_then_write(*args, **kwargs):  # type: ignore[no-untyped-def]
        out = original(*args, **kwargs)
        write(root, files)
        return out

    monkeypatch.setattr(indexer, "hash_files", hash_then_write)


def test_a_file_written_while_the_run_reads_it_keeps_its_last_entry(
    sample: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    idx = Index.open(sample, embedder="none")
    idx.index()
    write(
        sample,
        {
            "src/app/retry.py": "def retry_twice():\n    pass\n",
            "src/app/fresh.py": "def fresh():\n    pass\n",
        },
    )
    _written_after_hashing(
        monkeypatch,
        sample,
        {
            "src/app/retry.py": "def retry_thrice():\n    pass\n",
            "src/app/fresh.py": "def fresher():\n    pass\n",
        },
    )
    report = idx.index()
    assert sorted(report.warnings) == [
        "src/app/fresh.py: changed while being indexed; left out; run `ragraf index` again",
        "src/app/retry.py: changed while being indexed; kept as it was in the previous revision; "
        "run `ragraf index` again",
    ]
    assert report.files == {"added": 0, "modified": 0, "deleted": 0, "unchanged": 5}
    assert [r["path"] for r in idx.find_symbol("retry_with_backoff").results] == ["src/app/retry.py"]
    drifted = idx.status()
    assert {w.path for w in drifted.stale_warnings} == {"src/app/retry.py", "src/app/fresh.py"}
    monkeypatch.undo()
    again = idx.index()
    assert again.files["added"] == 1 and again.files["modified"] == 1 and not again.warnings
    assert [r["path"] for r in idx.find_symbol("retry_thrice").results] == ["src/app/retry.py"]
    assert [r["path"] for r in idx.find_symbol("fresher").results] == ["src/app/fresh.py"]


def test_a_content_whose_first_file_changed_mid_run_is_read_from_another(
    sample: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    idx = Index.open(sample, embedder="none")
    idx.index()
    twin = "def twin():\n    return 2\n"
    write(sample, {"src/a_twin.py": twin, "src/b_twin.py": twin})
    _written_after_hashing(monkeypatch, sample, {"src/a_twin.py": "def changed():\n    pass\n"})
    report = idx.index()
    assert report.files["added"] == 2 and not report.warnings, report
    assert [r["path"] for r in idx.find_symbol("twin").results] == ["src/a_twin.py", "src/b_twin.py"]
    assert {w.path for w in idx.status().stale_warnings} == {"src/a_twin.py"}  # the guard saw the edit


# Root reads and writes anything: the CLI runs without the capabilities that let it.
WITHOUT_ROOT_RIGHTS = (
    ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--inh-caps=-dac_override,-dac_read_search"]
    if os.geteuid() == 0
    else []
)


@pytest.mark.skipif(
    os.geteuid() == 0 and not shutil.which("setpriv"),
    reason="as root, only setpriv can take away the right to read",
)
def test_an_unreadable_file_is_named_and_read_once_it_is_readable(sample: Path) -> None:
    drop = WITHOUT_ROOT_RIGHTS
    locked = sample / "src/app/locked.py"
    locked.write_text("def behind_a_lock():\n    pass\n")
    locked.chmod(0)
    shut = sample / "src/shut"  # a folder it may not list
    write(sample, {"src/shut/inside.py": "def in_a_shut_folder():\n    pass\n"})
    shut.chmod(0)
    env = {**os.environ, "RAGRAF_EMBEDDER": "none"}
    out = subprocess.run(
        [*drop, sys.executable, "-m", "ragraf.cli", "index", "--json", "--root", str(sample)],
        capture_output=True, text=True, env=env, check=True,
    )  # fmt: skip
    named = json.loads(out.stdout)["skipped_files"]
    assert {"path": "src/app/locked.py", "reason": "permission denied"} in named
    assert {"path": "src/shut/", "reason": "folder not readable (permission denied)"} in named
    locked.chmod(0o644)
    shut.chmod(0o755)
    status = cli_json("status", "--root", str(sample), env={"RAGRAF_EMBEDDER": "none"})
    assert status["state"] == "drifted"  # its ctime moved: the guard sees it
    cli_json("index", "--root", str(sample), env={"RAGRAF_EMBEDDER": "none"})
    found = cli_json("def", "behind_a_lock", "--root", str(sample), env={"RAGRAF_EMBEDDER": "none"})
    assert [r["path"] for r in found["results"]] == ["src/app/locked.py"]
    inside = cli_json("def", "in_a_shut_folder", "--root", str(sample), env={"RAGRAF_EMBEDDER": "none"})
    assert [r["path"] for r in inside["results"]] == ["src/shut/inside.py"]


@pytest.mark.skipif(
    os.geteuid() == 0 and not shutil.which("setpriv"),
    reason="as root, only setpriv can take away the right to read",
)
def test_a_new_file_a_read_may_not_read_is_found_once_it_is_readable(sample: Path) -> None:
    env = {"RAGRAF_EMBEDDER": "none"}
    cli_json("index", "--root", str(sample), env=env)
    locked = sample / "src/app/locked.py"
    locked.write_text("def behind_a_lock():\n    pass\n")
    locked.chmod(0)
    settled(sample)  # nothing written just now: a read may keep what it listed
    read = subprocess.run(
        [*WITHOUT_ROOT_RIGHTS, sys.executable, "-m", "ragraf.cli", "status", "--json", "--root", str(sample)],
        capture_output=True, text=True, env={**os.environ, **env}, check=True,
    )  # fmt: skip
    assert json.loads(read.stdout)["state"] == "fresh"  # what it may not read is not in the index either
    locked.chmod(0o644)  # only its ctime moves, not its folder's mtime
    status = cli_json("status", "--root", str(sample), env=env)
    assert status["state"] == "drifted" and status["results"][0]["drift"]["created"] == ["src/app/locked.py"]


def test_a_full_disk_fails_the_run_and_the_last_revision_answers(
    sample: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    idx = Index.open(sample, embedder="none")
    idx.index()
    write(
        sample, {f"src/gen/m{i}.py": f"def generated_{i}():\n    return {'x' * 2000!r}\n" for i in range(50)}
    )
    real_open = index_runs.open_store

    def no_room(settings, create=False):  # type: ignore[no-untyped-def]
        store = real_open(settings, create)
        pages = store.db.execute("PRAGMA page_count").fetchone()[0]
        store.db.execute(f"PRAGMA max_page_count = {pages}")  # SQLite's own SQLITE_FULL, as on a full disk
        return store

    monkeypatch.setattr(index_runs, "open_store", no_room)
    with pytest.raises(StoreError) as err:
        idx.index()
    assert "is full" in err.value.message and "intact" in err.value.suggest
    monkeypatch.undo()
    assert idx.find_symbol("retry_with_backoff").index_rev == "rev-0001"
    assert idx.index().index_rev == "rev-0002"


@pytest.mark.skipif(
    os.geteuid() == 0 and not shutil.which("setpriv"),
    reason="as root, only setpriv can take away the right to write",
)
def test_a_read_only_index_home_is_named_not_called_damaged(sample: Path) -> None:
    drop = WITHOUT_ROOT_RIGHTS
    home = sample.parent / "home"
    env = {**os.environ, "RAGRAF_EMBEDDER": "none", "RAGRAF_HOME": str(home)}
    subprocess.run(
        [sys.executable, "-m", "ragraf.cli", "index", "-q", "--root", str(sample)], env=env, check=True
    )
    write(sample, {"src/app/more.py": "def more():\n    pass\n"})
    for folder in (home, *[p for p in home.rglob("*") if p.is_dir()]):
        folder.chmod(0o555)
    try:
        out = subprocess.run(
            [*drop, sys.executable, "-m", "ragraf.cli", "index", "--json", "--root", str(sample)],
            capture_output=True, text=True, env=env,
        )  # fmt: skip
    finally:
        for folder in (home, *[p for p in home.rglob("*") if p.is_dir()]):
            folder.chmod(0o755)
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    error = json.loads(out.stdout)["error"]
    assert error["code"] == "store" and "--full" not in error["suggest"], error


@pytest.mark.parametrize("in_git", [False, True])
def test_an_index_home_inside_the_root_is_not_indexed(tmp_path: Path, in_git: bool) -> None:
    root = tmp_path / "proj"
    write(root, {"src/a.py": "def alpha():\n    return 1\n"})
    if in_git:
        subprocess.run(["git", "init", "-q", str(root)], check=True)
    env = {**os.environ, "RAGRAF_EMBEDDER": "none", "RAGRAF_HOME": str(root / "idxhome")}
    cmd = [sys.executable, "-m", "ragraf.cli", "index", "--json", "--root", str(root)]
    runs = [json.loads(subprocess.run(cmd, capture_output=True, text=True, env=env).stdout) for _ in range(2)]
    assert runs[0]["files"]["added"] == 1 and not runs[0]["skipped_files"], runs[0]
    assert runs[1]["files"] == {"added": 0, "modified": 0, "deleted": 0, "unchanged": 1}, runs[1]
    if in_git:
        status = subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True)
        assert "idxhome" not in status.stdout, status.stdout


def test_doctor_says_facts_answer_where_they_do(sample: Path) -> None:
    idx = Index.open(sample)
    idx.index()
    assert idx.find_symbol("retry_with_jitter").to_dict()["capability"]["facts"] is True
    assert idx.doctor().to_dict()["capability"]["facts"] is True
    idx.close()
