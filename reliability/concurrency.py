"""Concurrency campaign: 2 writers + 8 readers on one index while files change, then two MCP
servers answering during a reindex.

- An editor thread changes files all the time (modify, create, delete); every version it
  writes is archived by sha256 first, so any answer can be checked against the exact text of
  the revision it names.
- Two writer threads loop `ragraf index` (the second waits on the lock, both must succeed).
- Eight reader processes loop every read operation through the library (search, def, refs,
  outline, status, drift, read) and check each envelope on the spot: no error, and every
  result verifies against the content of the revision the envelope names (index_rev).
- At the end: the ledger has no duplicate event (dedupe keys, and (rev, path, change, old, new)).
- MCP: two `ragraf serve` processes on the same index answer search/def/status while a large
  reindex runs; their answers verify the same way and their revision never goes backwards.

    python -m reliability.concurrency --seconds 60
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from reliability.common import (
    REPO,
    Editor,
    base_env,
    cli_json,
    copy_stdlib,
    index_db_path,
    loadavg,
    percentile,
    ragraf_cmd,
    read_db,
    save_result,
    use_test_helpers,
)

QUERIES = [
    "event loop",
    "transport close",
    "future result",
    "json decode",
    "parse header",
    "reliability edit",
    "ReliabilityCreated value",
    "lock acquire",
    "queue get nowait",
    "stream reader",
]
NAMES = ["BaseEventLoop", "Future", "loads", "Message", "reliability_edit_3", "get_event_loop", "sleep"]


# the archive of every file version --------------------------------------------------------------


class Archive:
    """Every text a file had on disk, by the sha256 ragraf computes for it (one file per version)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)

    def add_file(self, root: Path, path: Path) -> None:
        from ragraf.corpus.extract import Unindexable, extract

        rel = path.relative_to(root).as_posix()
        with contextlib.suppress(Unindexable, OSError):
            ex = extract(path, rel, 0)
            self._put(ex.sha256, ex.text)

    def add_text(self, rel: str, text: str) -> None:
        from ragraf.corpus.extract import sha256_text, strip_front_matter

        if rel.lower().endswith((".md", ".markdown", ".mdx")):
            text = strip_front_matter(text)
        self._put(sha256_text(text), text)

    def _put(self, sha: str, text: str) -> None:
        target = self.folder / sha
        if not target.exists():
            tmp = target.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
            tmp.write_text(text, encoding="utf-8", errors="surrogatepass")
            os.replace(tmp, target)

    def lines(self, sha: str) -> list[str] | None:
        try:
            return (self.folder / sha).read_text(encoding="utf-8", errors="surrogatepass").split("\n")
        except FileNotFoundError:
            return None


class ArchivingEditor(Editor):
    """The campaign's editor: every version is archived before it reaches the disk."""

    def __init__(self, root: Path, seed: int, archive: Archive) -> None:
        super().__init__(root, seed)
        self.archive = archive
        self.lock = threading.Lock()

    def modify(self, path: Path) -> None:
        # Write to a side file first, archive it, then move it into place (atomic for readers).
        side = self.archive.folder.parent / "side" / f"{self.serial}-{path.name}"
        side.parent.mkdir(exist_ok=True)
        shutil.copyfile(path, side)
        super().modify(side)
        self.archive.add_text(path.relative_to(self.root).as_posix(), side.read_text(encoding="utf-8"))
        os.replace(side, path)

    def create(self) -> Path:
        path = super().create()
        self.archive.add_file(self.root, path)
        return path


# checking one envelope --------------------------------------------------------------------------


class Verifier:
    """Checks an envelope against the archived content of the revision it names."""

    def __init__(self, db_path: Path, archive: Archive) -> None:
        self.db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=60, check_same_thread=False)
        self.archive = archive
        self.counts: Counter[str] = Counter()

    def _manifest_sha(self, rev: str, path: str) -> str | None | bool:
        """The sha256 of path in rev; None when path is not in rev; False when rev is gone."""
        row = self.db.execute("SELECT rev_no FROM revisions WHERE rev = ?", (rev,)).fetchone()
        if row is None:
            return False
        found = self.db.execute(
            "SELECT sha256 FROM manifest WHERE rev_no = ? AND path = ?", (row[0], path)
        ).fetchone()
        return found[0] if found else None

    def check(self, op: str, env: dict[str, Any], name: str = "") -> list[str]:
        """Problems with this envelope (empty when every result verifies)."""
        problems: list[str] = []
        rev = env.get("index_rev")
        if not rev and op != "doctor":
            return [f"{op}: no index_rev"]
        for r in env.get("results", []):
            if op in ("search", "def", "refs", "outline"):
                path = r["path"]
                sha = self._manifest_sha(rev, path)
                if sha is False:
                    self.counts["revision retired before the check"] += 1
                    continue
                if sha is None:
                    problems.append(f"{op}: {path} is not in {rev}")
                    continue
                lines = self.archive.lines(sha)
                if lines is None:
                    problems.append(f"{op}: no archived text for {path}@{sha[:12]}")
                    continue
                if op == "search":
                    want = "\n".join(lines[r["start_line"] - 1 : r["end_line"]])
                    snippet = r["snippet"]
                    ok = want.startswith(snippet[:-2]) if snippet.endswith("\n…") else want == snippet
                    if not ok:
                        problems.append(
                            f"search: {path}:{r['start_line']}-{r['end_line']} differs from {rev}"
                        )
                    self.counts["search results verified"] += 1
                else:
                    line = r["line"]
                    text = lines[line - 1] if 0 < line <= len(lines) else None
                    if r["kind"] == "module":
                        # A file named like the query is its module: a definition at line 1.
                        ok = line == 1 and Path(path).stem.lower() == r["name"].lower()
                    else:
                        ok = text is not None and (r["kind"] == "chunk" or r["name"].split(".")[-1] in text)
                    if not ok:
                        problems.append(f"{op}: {r['name']} not at {path}:{line} in {rev}")
                    self.counts[f"{op} results verified"] += 1
            elif op == "status":
                if r["revision"]["rev"] != rev:
                    problems.append(f"status: body names {r['revision']['rev']}, envelope {rev}")
            elif op == "read":
                lines = self.archive.lines(r["sha256"])
                if lines is None:
                    problems.append(f"read: {r['path']} returned content that was never on disk")
                elif "\n".join(lines[r["start_line"] - 1 : r["end_line"]]) != r["content"]:
                    problems.append(f"read: {r['path']} content does not match its sha256")
                indexed = self._manifest_sha(rev, r["path"])
                if indexed is not False and indexed != r["indexed_sha256"]:
                    problems.append(f"read: indexed_sha256 of {r['path']} is not {rev}'s")
                self.counts["read results verified"] += 1
        if op == "drift":
            keys = [r["dedupe_key"] for r in env.get("results", [])]
            events = [
                (r["rev"], r["path"], r["change"], r["old_sha256"], r["new_sha256"]) for r in env["results"]
            ]
            if len(set(keys)) != len(keys) or len(set(events)) != len(events):
                problems.append("drift: duplicate ledger entries")
            if any(r["rev"] != rev for r in env.get("results", [])):
                problems.append("drift: an entry of another revision")
            self.counts["drift entries checked"] += len(keys)
        return problems


# a reader process ---------------------------------------------------------------------------------


def reader_main(spec: dict[str, Any]) -> None:
    """One reader: loop every read operation until the deadline has passed, the writers are done (the
    stop file exists) and it has tried at least spec['min_ops']; write what happened to spec['out']."""
    from ragraf import Index
    from ragraf.errors import UsageError

    root = Path(spec["root"])
    rng = random.Random(spec["seed"])
    verifier = Verifier(Path(spec["db"]), Archive(Path(spec["archive"])))
    ops: Counter[str] = Counter()
    errors: list[str] = []
    inconsistent: list[str] = []
    latencies: list[float] = []
    revs: list[str] = []
    idx = Index.open(root)
    deadline, stop, min_ops = spec["until"], Path(spec["stop"]), spec.get("min_ops", 0)
    attempts = 0
    while time.time() < deadline or attempts < min_ops or not stop.exists():
        if attempts == 1:
            Path(spec["out"] + ".started").touch()  # the writers go on at least until every reader tried
        attempts += 1
        op = rng.choice(["search", "search", "search", "def", "refs", "outline", "status", "drift", "read"])
        name = rng.choice(NAMES)
        t0 = time.perf_counter()
        try:
            if op == "search":
                env = idx.search(rng.choice(QUERIES), k=10, mode=spec["mode"]).to_dict()
            elif op == "def":
                env = idx.find_symbol(name).to_dict()
            elif op == "refs":
                env = idx.find_references(name, calls=rng.random() < 0.5).to_dict()
            elif op in ("outline", "read"):
                paths = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py"))
                path = rng.choice(paths)
                try:
                    env = idx.outline(path).to_dict() if op == "outline" else idx.read(path).to_dict()
                except UsageError as exc:
                    # The file was deleted (read) or is not in the revision yet (outline): a clean refusal.
                    ops[f"{op} refused (file created or deleted meanwhile)"] += 1
                    if "does not exist" not in exc.message and "is not in" not in exc.message:
                        errors.append(f"{op} {path}: {exc.message}")
                    continue
            elif op == "status":
                env = idx.status().to_dict()
            else:
                env = idx.drift().to_dict()
        except Exception as exc:  # noqa: BLE001 - any failure of a read is what we count
            errors.append(f"{op}: {type(exc).__name__}: {exc}")
            continue
        latencies.append(time.perf_counter() - t0)
        ops[op] += 1
        if env.get("error"):
            errors.append(f"{op}: error envelope {env['error']}")
            continue
        revs.append(env.get("index_rev") or "")
        inconsistent.extend(verifier.check(op, env, name))
    idx.close()
    Path(spec["out"]).write_text(
        json.dumps(
            {
                "ops": dict(ops),
                "attempts": attempts,
                "errors": errors,
                "inconsistent": inconsistent,
                "latencies": latencies,
                "revisions_seen": sorted(set(revs)),
                "checks": dict(verifier.counts),
            }
        )  # fmt: skip
    )


# writers and the editor ---------------------------------------------------------------------------


def writer_loop(
    name: str,
    root: Path,
    env: dict[str, str],
    until: float,
    min_runs: int,
    readers_started: Callable[[], bool],
    out: list[dict[str, Any]],
) -> None:
    """`ragraf index` again and again until the deadline has passed, this writer ran min_runs times and
    every reader has answered once (so the writers' runs meet the readers on any machine)."""
    runs = 0
    while time.time() < until or runs < min_runs or not readers_started():
        runs += 1
        t0 = time.monotonic()
        proc = subprocess.run(
            ragraf_cmd("index", "--root", str(root)), env=env, capture_output=True, text=True
        )
        out.append({
            "writer": name, "exit": proc.returncode, "duration_s": round(time.monotonic() - t0, 3),
            "waited": "waiting for the index lock" in proc.stderr, "stdout": proc.stdout.strip()[-300:],
            "stderr": proc.stderr[-500:] if proc.returncode else "",
        })  # fmt: skip


def editor_loop(
    editor: ArchivingEditor, writers_done: threading.Event, pause_s: float, out: Counter[str]
) -> None:
    """Edit until the writers are done."""
    while not writers_done.is_set():
        done = editor.round(
            editor.rng.randint(1, 3),
            create=int(editor.rng.random() < 0.3),
            delete=int(editor.rng.random() < 0.2),
        )
        out.update(done)
        out["rounds"] += 1
        time.sleep(pause_s)


def ledger_duplicates(db_path: Path) -> dict[str, int]:
    """Duplicate events across the open ledger and its archive (there must be none)."""
    with read_db(db_path) as db:
        rows = db.execute(
            "SELECT dedupe_key, rev, path, change, old_sha256, new_sha256 FROM drift_ledger "
            "UNION ALL SELECT dedupe_key, rev, path, change, old_sha256, new_sha256 FROM drift_archive"
        ).fetchall()
        archived_twice = db.execute(
            "SELECT count(*) FROM drift_ledger l JOIN drift_archive a ON a.entry_id = l.entry_id"
        ).fetchone()[0]
    keys = Counter(r[0] for r in rows)
    events = Counter(r[1:] for r in rows)
    return {
        "entries": len(rows),
        "duplicate_keys": sum(n - 1 for n in keys.values() if n > 1),
        "duplicate_events": sum(n - 1 for n in events.values() if n > 1),
        "open_and_archived": archived_twice,
    }


# MCP --------------------------------------------------------------------------------------------


async def _mcp_phase(
    root: Path, env: dict[str, str], archive: Archive, db_path: Path, editor: ArchivingEditor
) -> dict[str, Any]:
    import anyio

    use_test_helpers()
    from servers import mcp_client

    verifier = Verifier(db_path, archive)
    stats: dict[str, Any] = {
        "calls": Counter(),
        "errors": [],
        "inconsistent": [],
        "revisions": {"a": [], "b": []},
    }
    server_env = {k: v for k, v in env.items() if k.startswith("RAGRAF_")}
    async with mcp_client(root, server_env) as a, mcp_client(root, server_env) as b:
        # A big change, so the reindex takes a while; it runs as a separate `ragraf index`.
        editor.round(len(editor.files()) // 2, create=5, delete=0)
        proc = subprocess.Popen(
            ragraf_cmd("index", "--root", str(root)),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        calls = [("search", {"query": q, "top_k": 10}) for q in QUERIES[:4]] + [
            ("find_symbol", {"name": "Future"}), ("status", {}), ("find_references", {"name": "loads"})
        ]  # fmt: skip
        ops = {"search": "search", "find_symbol": "def", "status": "status", "find_references": "refs"}
        reindex_outcome: dict[str, Any] = {}  # see reindex_ok

        async def loop(client: Any, label: str) -> None:
            i = 0
            while proc.poll() is None or i < len(calls):
                tool, args = calls[i % len(calls)]
                i += 1
                try:
                    result = await client.call_tool(tool, args)
                except Exception as exc:  # noqa: BLE001
                    stats["errors"].append(f"{label} {tool}: {type(exc).__name__}: {exc}")
                    continue
                stats["calls"][label] += 1
                payload = result.structured_content or {}
                if result.is_error:
                    stats["errors"].append(f"{label} {tool}: {payload.get('error')}")
                    continue
                stats["revisions"][label].append(payload.get("index_rev"))
                stats["inconsistent"].extend(verifier.check(ops[tool], payload))

        async def reindex_via_mcp() -> None:
            await anyio.sleep(0.3)
            t0 = time.monotonic()
            result = await a.call_tool("reindex", {})
            reindex_outcome.update(
                is_error=result.is_error,
                seconds=round(time.monotonic() - t0, 2),
                text=(result.content[0].text if result.content else "")[:300],
            )

        async with anyio.create_task_group() as tg:
            tg.start_soon(loop, a, "a")
            tg.start_soon(loop, b, "b")
            tg.start_soon(reindex_via_mcp)
        proc.wait()
    backwards = 0
    for seen in stats["revisions"].values():
        numbers = [int(r.split("-")[1]) for r in seen if r]
        backwards += sum(1 for x, y in zip(numbers, numbers[1:], strict=False) if y < x)
    return {
        "calls": dict(stats["calls"]),
        "errors": stats["errors"],
        "inconsistent": stats["inconsistent"],
        "revisions_seen": {k: sorted(set(v)) for k, v in stats["revisions"].items()},
        "revision_went_backwards": backwards,
        "cli_reindex_exit": proc.returncode,
        "cli_reindex_stderr": proc.stderr.read()[-300:] if proc.returncode and proc.stderr else "",
        "mcp_reindex": reindex_outcome,
        "checks": dict(verifier.counts),
    }


# the campaign -------------------------------------------------------------------------------------


def reindex_ok(outcome: dict[str, Any]) -> bool:
    """The MCP reindex either ran, or, when the CLI's reindex took the lock first, was refused at once
    with the lock's holder (the tool does not queue behind another writer): both are right."""
    return not outcome.get("is_error") or str(outcome.get("text", "")).startswith("ERROR [locked]")


def run(
    seconds: float = 60,
    readers: int = 8,
    writers: int = 2,
    packages: tuple[str, ...] = ("asyncio", "json", "email"),
    mode: str = "lexical",
    embedder: str = "none",
    mcp: bool = True,
    seed: int = 3,
    workdir: Path | None = None,
    log: Callable[[str], None] = print,
    min_index_runs: int = 0,
    min_reader_ops: int = 0,
) -> dict[str, Any]:
    """The campaign runs for `seconds` and, whatever the machine's speed, until every writer ran
    `min_index_runs` times and every reader tried `min_reader_ops` operations; the readers and the
    editor keep going until the writers are done, so every writer run meets readers and edits."""
    tmp = Path(workdir or tempfile.mkdtemp(prefix="ragraf-concurrency-"))
    root, home, cache = tmp / "corpus", tmp / "home", tmp / "cache"
    root.mkdir(parents=True)
    files = copy_stdlib(root, packages)
    archive = Archive(tmp / "archive")
    for path in root.rglob("*"):
        if path.is_file():
            archive.add_file(root, path)
    fake = None
    if embedder == "fake":
        # Writers embed and readers embed their queries against a loopback server (8-dim vectors).
        use_test_helpers()
        from embed.fake_embed_server import FakeServer

        fake = FakeServer("openai")
        env = base_env(
            home, cache, "openai", RAGRAF_EMBED_URL=fake.url + "/v1", RAGRAF_EMBED_MODEL="concurrency-model"
        )
    else:
        env = base_env(home, cache, "none")
    code, first = cli_json("index", "--root", str(root), env=env)
    if code != 0:
        raise RuntimeError(f"initial index failed: {first}")
    db_path = index_db_path(root, env)
    editor = ArchivingEditor(root, seed, archive)
    # One round before the writers start, so the first run to take the lock makes a new revision.
    edits: Counter[str] = Counter(editor.round(2, create=1, delete=0))
    stop = tmp / "writers-done"
    until = time.time() + seconds
    t0 = time.monotonic()
    procs = []
    for i in range(readers):
        spec = {
            "root": str(root), "db": str(db_path), "archive": str(archive.folder), "seed": seed * 100 + i,
            "until": until, "mode": mode, "out": str(tmp / f"reader-{i}.json"), "stop": str(stop),
            "min_ops": min_reader_ops,
        }  # fmt: skip
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "reliability.concurrency", "--reader", json.dumps(spec)],
                env={**env, "PYTHONPATH": str(REPO) + os.pathsep + env.get("PYTHONPATH", "")},
                cwd=REPO,
            )
        )
    runs: list[dict[str, Any]] = []
    writers_done = threading.Event()
    editor_thread = threading.Thread(target=editor_loop, args=(editor, writers_done, 0.3, edits))
    outs = [tmp / f"reader-{i}.json" for i in range(readers)]

    def readers_started() -> bool:
        # A reader that died will not start: its exit ends the wait, and its report names it.
        return all(
            Path(f"{o}.started").exists() or p.poll() is not None for o, p in zip(outs, procs, strict=True)
        )

    threads = [
        threading.Thread(
            target=writer_loop, args=(f"w{i + 1}", root, env, until, min_index_runs, readers_started, runs)
        )
        for i in range(writers)
    ]
    editor_thread.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    writers_done.set()
    stop.touch()
    editor_thread.join()
    for p in procs:
        p.wait(timeout=900)  # only stops a hang: a reader ends after its minimum and the writers
    loop_s = time.monotonic() - t0
    reader_data = []
    for i, p in enumerate(procs):
        out = tmp / f"reader-{i}.json"
        if out.exists():
            reader_data.append(json.loads(out.read_text()))
        else:
            reader_data.append({"ops": {}, "errors": [f"reader {i} died with exit {p.returncode}"], "inconsistent": [], "latencies": [], "revisions_seen": [], "checks": {}})  # fmt: skip
    # Settle: one last index so the ledger and archive hold everything, then look for duplicates.
    cli_json("index", "--root", str(root), env=env)
    ledger = ledger_duplicates(db_path)
    _, drift_env = cli_json("drift", "--root", str(root), env=env)
    mcp_result = None
    if mcp:
        import anyio

        mcp_result = anyio.run(_mcp_phase, root, env, archive, db_path, editor)
    ops: Counter[str] = Counter()
    checks: Counter[str] = Counter()
    for d in reader_data:
        ops.update(d["ops"])
        checks.update(d["checks"])
    latencies = [x for d in reader_data for x in d["latencies"]]
    errors = [e for d in reader_data for e in d["errors"]]
    inconsistent = [e for d in reader_data for e in d["inconsistent"]]
    revs = sorted({r for d in reader_data for r in d["revisions_seen"]})
    result = {
        "campaign": "concurrency",
        "seconds": seconds,
        "loop_s": round(loop_s, 1),
        "duration_s": round(time.monotonic() - t0, 1),
        "readers": readers,
        "writers": writers,
        "corpus_files": files,
        "search_mode": mode,
        "embedder": embedder,
        "edits": dict(edits),
        "index_runs": len(runs),
        "index_runs_failed": [r for r in runs if r["exit"] != 0],
        "index_runs_that_waited": sum(r["waited"] for r in runs),
        "new_revisions": sum(1 for r in runs if r["stdout"].startswith("rev-")),
        "reader_ops": sum(ops.values()),
        "reader_attempts": [d.get("attempts", 0) for d in reader_data],
        "reader_ops_by_kind": dict(ops),
        "reader_errors": errors[:50],
        "reader_error_count": len(errors),
        "inconsistent_answers": inconsistent[:50],
        "inconsistent_count": len(inconsistent),
        "checks": dict(checks),
        "revisions_answered_from": len(revs),
        "read_latency_ms": {
            "p50": round(percentile(latencies, 50) * 1000, 1),
            "p95": round(percentile(latencies, 95) * 1000, 1),
            "max": round(max(latencies, default=0) * 1000, 1),
        },
        "ledger": ledger,
        "drift_cli_exit_entries": len(drift_env.get("results", [])),
        "mcp": mcp_result,
        "loadavg": loadavg(),
    }
    result["ok"] = (
        not result["index_runs_failed"]
        and not errors
        and not inconsistent
        and ledger["duplicate_keys"] == 0
        and ledger["duplicate_events"] == 0
        and (
            mcp_result is None
            or (
                not mcp_result["errors"]
                and not mcp_result["inconsistent"]
                and mcp_result["revision_went_backwards"] == 0
                and mcp_result["cli_reindex_exit"] == 0
                and reindex_ok(mcp_result["mcp_reindex"])
            )
        )
    )
    if fake is not None:
        fake.close()
    if workdir is None:
        shutil.rmtree(tmp, ignore_errors=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--readers", type=int, default=8)
    parser.add_argument("--writers", type=int, default=2)
    parser.add_argument("--mode", choices=["lexical", "hybrid"], default="lexical")
    parser.add_argument(
        "--embedder", choices=["none", "fake"], default="none", help="fake: a loopback server"
    )
    parser.add_argument("--no-mcp", action="store_true")
    parser.add_argument("--packages", default="asyncio,json,email", help="stdlib packages to copy")
    parser.add_argument("--reader", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.reader:
        reader_main(json.loads(args.reader))
        return
    result = run(
        args.seconds,
        args.readers,
        args.writers,
        tuple(args.packages.split(",")),
        mode=args.mode,
        embedder=args.embedder,
        mcp=not args.no_mcp,
    )
    print(save_result("concurrency", result))
    print(json.dumps({k: v for k, v in result.items()}, indent=2)[:5000])
    raise SystemExit(0 if result["ok"] else 1)


if __name__ == "__main__":
    main()
