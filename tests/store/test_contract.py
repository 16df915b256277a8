"""The Store contract, checked on every store: SQLite (the default) and PostgreSQL + pgvector."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from store.sample_index import CHUNKER, StoreFactory, bundle, commit_files, sha
from support import SAMPLE

from ragraf.config import Settings
from ragraf.errors import IndexMissingError
from ragraf.search.engine import lexical_candidates
from ragraf.store import DriftEvent, ManifestEntry, NewRevision, StatEntry

DIM = 16
MODEL = "test/model@1"


def unit(seed: str, dim: int = DIM) -> np.ndarray:
    """A deterministic unit vector per seed."""
    rng = np.random.default_rng(int(sha(seed)[:12], 16))
    v = rng.normal(size=dim).astype(np.float32)
    return v / np.linalg.norm(v)


def paths(hits: list) -> list[str]:
    return [h.path for h in hits]


# revisions and manifests ------------------------------------------------------------------------


def test_a_new_index_has_no_revision_and_opening_a_missing_one_says_run_index(
    store_factory: StoreFactory,
) -> None:
    with pytest.raises(IndexMissingError) as err:
        store_factory(create=False)
    assert "ragraf index" in err.value.suggest
    store = store_factory()
    assert store.current_revision() is None
    assert store.revisions() == []
    assert store.revision("rev-0001") is None
    assert store.stat_cache() == {}


def test_each_commit_makes_the_next_numbered_revision_with_its_manifest(
    store_factory: StoreFactory, settings: Settings
) -> None:
    store = store_factory()
    one = commit_files(store, settings, SAMPLE)
    assert (one.rev_no, one.rev, one.files, one.index_version) == (1, "rev-0001", len(SAMPLE), "test-version")
    assert one.chunks == store.count_chunks(1) > 0
    changed = {**SAMPLE, "src/app/extra.py": "def extra():\n    return 42\n"}
    two = commit_files(store, settings, changed)
    assert (two.rev, two.files) == ("rev-0002", len(SAMPLE) + 1)
    assert [r.rev for r in store.revisions()] == ["rev-0001", "rev-0002"]
    assert store.current_revision() == two
    assert store.revision("rev-0001") == one
    manifest = store.manifest(two.rev_no)
    assert sorted(manifest) == sorted(changed)
    entry = manifest["src/app/retry.py"]
    assert entry.sha256 == sha(SAMPLE["src/app/retry.py"])
    assert entry.size == len(SAMPLE["src/app/retry.py"])
    assert store.manifest(one.rev_no)["src/app/retry.py"].content_id == entry.content_id
    assert "src/app/extra.py" not in store.manifest(one.rev_no)
    assert store.manifest(99) == {}


def test_a_revision_committed_as_a_change_equals_the_same_revision_committed_whole(
    store_factory: StoreFactory, settings: Settings
) -> None:
    store = store_factory()
    first = commit_files(store, settings, SAMPLE)
    after = {k: v for k, v in SAMPLE.items() if k != "docs/guide.md"}
    after["src/app/retry.py"] = "def retry_forever():\n    while True:\n        pass\n"
    after["src/app/extra.py"] = "def extra():\n    return 42\n"
    changed = {p: bundle(settings, p, after[p]) for p in ("src/app/retry.py", "src/app/extra.py")}
    ids = store.add_contents(list(changed.values()))
    delta = [ManifestEntry(p, b.key[0], ids[b.key], len(after[p])) for p, b in sorted(changed.items())]
    new = NewRevision(
        "c", "test-version", None, None, delta, [], parent=first.rev_no, removed=("docs/guide.md",)
    )
    two = store.commit_revision(new)
    whole = commit_files(store, settings, after)  # the same files, committed whole
    assert (
        (two.files, two.chunks) == (whole.files, whole.chunks) == (len(after), store.count_chunks(two.rev_no))
    )
    assert store.manifest(two.rev_no) == store.manifest(whole.rev_no)
    assert "docs/guide.md" in store.manifest(first.rev_no)  # the parent is untouched
    assert paths(store.chunks_of(two.rev_no, "src/app/retry.py")) == ["src/app/retry.py"]
    # A change to an older revision than the newest applies to that revision.
    three = store.commit_revision(new)
    assert store.manifest(three.rev_no) == store.manifest(whole.rev_no)


def test_a_failed_commit_leaves_nothing_visible_and_burns_no_revision_number(
    store_factory: StoreFactory, settings: Settings
) -> None:
    store = store_factory()
    b = bundle(settings, "a.py", "def a():\n    return 1\n")
    ids = store.add_contents([b])
    twice = [ManifestEntry("a.py", b.key[0], ids[b.key], 1), ManifestEntry("a.py", b.key[0], ids[b.key], 1)]
    event = DriftEvent("rev-0000", "create", "a.py", "index", None, b.key[0])
    with pytest.raises(Exception):  # noqa: B017 - each store raises its own driver's integrity error
        store.commit_revision(NewRevision("h", "v", None, None, twice, [event]))
    assert store.current_revision() is None
    assert store.open_entries() == []
    rev = commit_files(store, settings, {"a.py": "def a():\n    return 1\n"})
    assert rev.rev == "rev-0001"


def test_another_handle_sees_the_last_committed_revision(
    store_factory: StoreFactory, settings: Settings
) -> None:
    writer, reader = store_factory(), store_factory()
    assert reader.current_revision() is None
    rev = commit_files(writer, settings, SAMPLE)
    assert reader.current_revision() == rev
    assert reader.manifest(rev.rev_no) == writer.manifest(rev.rev_no)
    again = store_factory(create=False)
    assert again.current_revision() == rev


# contents and chunks ----------------------------------------------------------------------------


def test_identical_content_is_stored_once_whatever_its_paths(
    store_factory: StoreFactory, settings: Settings
) -> None:
    store = store_factory()
    text = SAMPLE["src/app/retry.py"]
    first = store.add_contents([bundle(settings, "a.py", text)])
    again = store.add_contents([bundle(settings, "b.py", text), bundle(settings, "c.py", text)])
    key = (sha(text), "python", CHUNKER)
    assert first == again == {key: first[key]}
    assert store.content_ids([key, ("0" * 64, "python", CHUNKER)]) == first
    rev = commit_files(store, settings, {"a.py": text, "b.py": text})
    manifest = store.manifest(rev.rev_no)
    assert manifest["a.py"].content_id == manifest["b.py"].content_id
    a, b = store.chunks_of(rev.rev_no, "a.py"), store.chunks_of(rev.rev_no, "b.py")
    assert [c.chunk_id for c in a] == [c.chunk_id for c in b]
    assert rev.chunks == len(a)  # a chunk is counted once, not once per path
    assert [c.path for c in b] == ["b.py"] * len(b)
    assert a[0].sha256 == sha(text)
    assert "".join(c.text for c in a).count("retry_with_backoff") == 1
    assert store.chunks_of(rev.rev_no, "missing.py") == []


def test_chunks_of_a_path_come_in_file_order_with_true_lines(
    store_factory: StoreFactory, settings: Settings
) -> None:
    store = store_factory()
    text = "".join(f"def function_{i}(x):\n    y = x * {i}\n    return y + {i}\n\n\n" for i in range(120))
    rev = commit_files(store, settings, {"big.py": text})
    chunks = store.chunks_of(rev.rev_no, "big.py")
    assert len(chunks) > 2
    assert [c.start_line for c in chunks] == sorted(c.start_line for c in chunks)
    lines = text.split("\n")
    for c in chunks:
        assert c.text.split("\n")[0] == lines[c.start_line - 1]


def test_chunks_of_several_paths_answer_as_chunks_of_each(
    store_factory: StoreFactory, settings: Settings
) -> None:
    store = store_factory()
    files = {**SAMPLE, "copy/retry.py": SAMPLE["src/app/retry.py"]}
    rev = commit_files(store, settings, files)
    asked = ["src/app/server.py", "missing.py", "copy/retry.py", "src/app/retry.py"]
    got = store.chunks_of_paths(rev.rev_no, asked)
    assert list(got) == asked
    assert all(got[path] == store.chunks_of(rev.rev_no, path) for path in asked)
    assert got["missing.py"] == [] and got["copy/retry.py"] and got["src/app/server.py"]
    assert store.chunks_of_paths(rev.rev_no, []) == {}


# facts ------------------------------------------------------------------------------------------


def test_facts_are_found_by_name_path_and_kind(store_factory: StoreFactory, settings: Settings) -> None:
    store = store_factory()
    rev = commit_files(store, settings, SAMPLE).rev_no
    [hit] = store.find_facts(rev, "def", name="TCPConnector")
    assert (hit.path, hit.line, hit.kind, hit.signature) == (
        "src/app/server.py",
        4,
        "class",
        "class TCPConnector:",
    )
    assert hit.body_hash
    assert store.find_facts(rev, "def", name="tcpconnector") == []
    assert store.find_facts(rev, "def", name="tcpconnector", exact=False) == [hit]
    defs = store.find_facts(rev, "def", path="src/app/server.py")
    assert {d.name for d in defs} >= {"TCPConnector", "connect", "resolve_host", "__init__"}
    assert [d.line for d in defs] == sorted(d.line for d in defs)
    assert next(d for d in defs if d.name == "connect").container == "TCPConnector"
    calls = store.find_facts(rev, "ref", name="resolve_host")
    assert any(r.path == "src/app/server.py" and r.line == 11 and r.is_call for r in calls)
    imports = store.find_facts(rev, "import", path="tests/test_server.py")
    assert "TCPConnector" in {i.name for i in imports}
    assert len(store.find_facts(rev, "ref", limit=3)) == 3
    assert store.facts_status(rev, "src/app/server.py") == "supported"
    assert store.facts_status(rev, "missing.py") is None


def test_ref_counts_say_in_how_many_of_a_revisions_files_each_name_is_referenced(
    store_factory: StoreFactory, settings: Settings
) -> None:
    store = store_factory()
    one = commit_files(store, settings, SAMPLE).rev_no
    counts = store.ref_counts(one)
    refs = store.find_facts(one, "ref", limit=100_000)
    assert counts == {name: len({r.path for r in refs if r.name == name}) for name in {r.name for r in refs}}
    assert counts["resolve_host"] >= 1
    extra = "from app.server import resolve_host\n\n\ndef again():\n    return resolve_host('b')\n"
    two = commit_files(store, settings, {**SAMPLE, "src/again.py": extra}).rev_no
    assert store.ref_counts(two)["resolve_host"] == counts["resolve_host"] + 1
    assert store.ref_counts(one) == counts  # an older revision keeps its own counts


def test_map_facts_give_each_files_definitions_and_its_sites_of_each_name_as_columns(
    store_factory: StoreFactory, settings: Settings
) -> None:
    store = store_factory()
    one = commit_files(store, settings, SAMPLE).rev_no
    kinds = {"function", "method", "class"}

    def uses(rev_no: int) -> dict[tuple[str, str], int]:
        f = store.map_facts(rev_no, kinds)
        rows = zip(f.use_content, f.use_name, f.use_sites, strict=True)
        return {(p, f.names[n]): int(c) for content, n, c in rows for p in f.paths.get(int(content), [])}

    def defs(rev_no: int) -> set[tuple[str, str, str, int, bool, str]]:
        f = store.map_facts(rev_no, kinds)
        columns = (f.def_content, f.def_name, f.def_kind, f.def_line, f.def_top, f.def_signature)
        return {
            (p, f.names[n], k, int(line), bool(top), sig)
            for content, n, k, line, top, sig in zip(*columns, strict=True)
            for p in f.paths.get(int(content), [])
        }

    refs = store.find_facts(one, "ref", limit=100_000)
    expected: dict[tuple[str, str], int] = {}
    for r in refs:
        expected[(r.path, r.name)] = expected.get((r.path, r.name), 0) + 1
    assert uses(one) == expected
    hits = [d for d in store.find_facts(one, "def", limit=100_000) if d.kind in kinds]
    assert defs(one) == {
        (d.path, d.name, d.kind, d.line, d.container is None, d.signature or "") for d in hits
    }
    assert any(top for *_, top, _ in defs(one)) and not all(top for *_, top, _ in defs(one))
    # a second file with the same content counts for both paths; an older revision keeps its own
    extra = "from app.server import resolve_host\n\n\ndef again():\n    return resolve_host('b')\n"
    two = commit_files(store, settings, {**SAMPLE, "src/a.py": extra, "src/b.py": extra}).rev_no
    assert uses(two)[("src/a.py", "resolve_host")] == uses(two)[("src/b.py", "resolve_host")] == 1
    assert {("src/a.py", "again"), ("src/b.py", "again")} <= {(p, n) for p, n, *_ in defs(two)}
    assert uses(one) == expected
    assert not any(p in ("src/a.py", "src/b.py") for p, *_ in defs(one))


# the drift ledger -------------------------------------------------------------------------------


def test_the_ledger_dedupes_and_names_what_a_change_touches(
    store_factory: StoreFactory, settings: Settings
) -> None:
    store = store_factory()
    rev = commit_files(store, settings, SAMPLE)
    old = store.manifest(rev.rev_no)["src/app/server.py"]
    events = [
        DriftEvent(rev.rev, "modify", "src/app/server.py", "guard", old.sha256, "f" * 64, old.content_id),
        DriftEvent(rev.rev, "create", "src/app/new.py", "guard", None, "e" * 64),
    ]
    assert store.register_drift(events) == 2
    assert store.register_drift(events) == 0
    # Who saw it does not matter: the same change seen by git is the same entry.
    assert store.register_drift([DriftEvent(rev.rev, "create", "src/app/new.py", "git", None, "e" * 64)]) == 0
    entries = store.open_entries(rev.rev)
    assert [(e.change, e.path) for e in entries] == [
        ("modify", "src/app/server.py"),
        ("create", "src/app/new.py"),
    ]
    modify = entries[0]
    assert modify.affected_nodes == [c.chunk_id for c in store.chunks_of(rev.rev_no, "src/app/server.py")]
    names = {s["name"] for s in modify.affected_symbols}
    assert {"TCPConnector", "TCPConnector.connect", "resolve_host"} <= names
    assert entries[1].affected_nodes == [] and entries[1].affected_symbols == []
    assert len({e.dedupe_key for e in entries}) == 2
    assert entries[0].entry_id < entries[1].entry_id
    assert store.open_entries("rev-0042") == []
    assert store.open_summary(rev.rev, ["src/app/server.py", "src/app/new.py"]) == (
        2,
        len(modify.affected_symbols),
    )
    assert store.open_summary(rev.rev, []) == (2, 0)


def test_a_new_revision_archives_the_open_ledger_with_itself_as_closer(
    store_factory: StoreFactory, settings: Settings
) -> None:
    store = store_factory()
    one = commit_files(store, settings, SAMPLE)
    guard = DriftEvent(one.rev, "create", "src/app/new.py", "guard", None, sha("x = 1\n"))
    store.register_drift([guard])
    # The indexer reports the same creation; it must not make a second entry.
    index_events = [
        DriftEvent(one.rev, "create", "src/app/new.py", "index", None, sha("x = 1\n")),
        DriftEvent(one.rev, "delete", "web/client.ts", "index", sha(SAMPLE["web/client.ts"]), None),
    ]
    files = {**{k: v for k, v in SAMPLE.items() if k != "web/client.ts"}, "src/app/new.py": "x = 1\n"}
    two = commit_files(store, settings, files, index_events)
    assert store.open_entries() == []
    archived = store.archived_entries([two.rev])
    assert [(e.change, e.path, e.detected_by, e.closed_by) for e in archived] == [
        ("create", "src/app/new.py", "guard", two.rev),
        ("delete", "web/client.ts", "index", two.rev),
    ]
    assert archived[0].to_dict()["closed_by"] == two.rev
    assert store.archived_entries([one.rev]) == []
    assert store.archived_entries([]) == []
    three = commit_files(store, settings, SAMPLE)
    assert store.archived_entries([three.rev]) == []
    assert len(store.archived_entries([two.rev, three.rev])) == 2


def test_drift_reported_late_against_a_revision_since_closed_opens_nothing(
    store_factory: StoreFactory, settings: Settings
) -> None:
    store = store_factory()
    one = commit_files(store, settings, SAMPLE)
    created = DriftEvent(one.rev, "create", "src/app/new.py", "index", None, sha("x = 1\n"))
    two = commit_files(store, settings, {**SAMPLE, "src/app/new.py": "x = 1\n"}, [created])
    # A reader that began on `one` reports the creation after `two` took it in and archived it.
    late = DriftEvent(one.rev, "create", "src/app/new.py", "guard", None, sha("x = 1\n"))
    assert store.register_drift([late]) == 0
    assert store.open_entries() == [] and len(store.archived_entries([two.rev])) == 1
    now = DriftEvent(two.rev, "modify", "src/app/new.py", "guard", sha("x = 1\n"), sha("x = 2\n"))
    assert store.register_drift([late, now]) == 1
    assert [e.rev for e in store.open_entries()] == [two.rev]


def test_concurrent_registrations_of_one_change_make_one_entry(
    store_factory: StoreFactory, settings: Settings
) -> None:
    rev = commit_files(store_factory(), settings, SAMPLE)
    handles = [store_factory() for _ in range(4)]
    events = [DriftEvent(rev.rev, "modify", f"f{i}.py", "guard", "a" * 64, "b" * 64) for i in range(20)]
    added: list[int] = []
    errors: list[BaseException] = []

    def register(store) -> None:  # type: ignore[no-untyped-def]
        try:
            for e in events:
                added.append(store.register_drift([e]))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=register, args=(h,)) for h in handles]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sum(added) == 20
    assert len(handles[0].open_entries(rev.rev)) == 20


# stat cache -------------------------------------------------------------------------------------


def test_the_stat_cache_keeps_what_it_was_told(store_factory: StoreFactory) -> None:
    store = store_factory()
    a = StatEntry(10, 1_700_000_000_123_456_789, 1_700_000_000_987_654_321, 2**40 + 7, "a" * 64, 5)
    b = StatEntry(20, 2, 3, 4, "b" * 64, 6)
    store.update_stat_cache({"a.py": a, "dir/b.py": b}, [])
    assert store.stat_cache() == {"a.py": a, "dir/b.py": b}
    a2 = StatEntry(11, 3, 4, 5, "c" * 64, 7)
    store.update_stat_cache({"a.py": a2}, ["dir/b.py", "never-there.py"])
    assert store.stat_cache() == {"a.py": a2}
    store.update_stat_cache({}, [])
    assert store_factory().stat_cache() == {"a.py": a2}


def test_the_guard_snapshot_is_one_replaceable_blob(store_factory: StoreFactory) -> None:
    store = store_factory()
    assert store.guard_snapshot() is None
    store.set_guard_snapshot(b"\x00first\xff")
    store.set_guard_snapshot(b"\x00second\xff" * 1000)
    assert store_factory().guard_snapshot() == b"\x00second\xff" * 1000
    # A base and the changes after it: read back whole, whichever part the store kept.
    store.set_guard_snapshot(b"base" * 1000 + b"delta 1", 4000)
    store.set_guard_snapshot(b"base" * 1000 + b"delta 2", 4000)
    assert store_factory().guard_snapshot() == b"base" * 1000 + b"delta 2"
    store.set_guard_snapshot(b"other" * 10, 50)
    assert store_factory().guard_snapshot() == b"other" * 10


# retention --------------------------------------------------------------------------------------


def test_gc_keeps_the_last_revisions_and_what_they_reference(
    store_factory: StoreFactory, settings: Settings
) -> None:
    store = store_factory()
    stable = {"b.py": "def stable():\n    return 'kept'\n"}
    versions = [f"def changing():\n    return {i}\n" for i in range(4)]
    for text in versions:
        rev = commit_files(store, settings, {**stable, "a.py": text})
        missing = store.chunks_missing_vectors(rev.rev_no, MODEL, 100)
        store.add_vectors(MODEL, [(c.chunk_id, unit(c.text).tobytes()) for c in missing], DIM)
    assert store.gc(10) == {"revisions_removed": 0, "contents_removed": 0, "chunks_removed": 0}
    report = store.gc(2)
    assert report["revisions_removed"] == 2
    assert report["contents_removed"] == 2
    assert report["chunks_removed"] >= 2
    assert [r.rev for r in store.revisions()] == ["rev-0003", "rev-0004"]
    keys = [(sha(t), "python", CHUNKER) for t in versions]
    assert set(store.content_ids(keys)) == set(keys[2:])
    current = store.current_revision()
    assert current is not None and current.rev == "rev-0004"
    assert store.vector_coverage(current.rev_no, MODEL) == 1.0
    hits = lexical_candidates(store, current.rev_no, "stable kept", 5)
    assert paths(hits)[:1] == ["b.py"]
    assert commit_files(store, settings, stable).rev == "rev-0005"  # numbers are never reused
    assert store.gc(0)["revisions_removed"] == 2  # at least one revision always stays
    assert [r.rev for r in store.revisions()] == ["rev-0005"]
    assert store.consistency_problems(store.revisions()[0].rev_no, MODEL) == []


# vectors ----------------------------------------------------------------------------------------


def test_gc_keeps_the_newest_revision_of_another_branch_and_its_contents(
    store_factory: StoreFactory, settings: Settings
) -> None:
    store = store_factory()
    stable = {"b.py": "def stable():\n    return 'kept'\n"}
    on_main = "def changing():\n    return 'main'\n"
    main_tip = commit_files(store, settings, {**stable, "a.py": on_main}, branch="main")
    missing = store.chunks_missing_vectors(main_tip.rev_no, MODEL, 100)
    store.add_vectors(MODEL, [(c.chunk_id, unit(c.text).tobytes()) for c in missing], DIM)
    topic = [f"def changing():\n    return {i}\n" for i in range(4)]
    for text in topic:
        commit_files(store, settings, {**stable, "a.py": text}, branch="topic")
    report = store.gc(2)
    # rev-0002 and rev-0003 go; rev-0001 stays as main's newest, with what it names (and its vectors).
    assert report["revisions_removed"] == 2 and report["contents_removed"] == 2
    assert [r.rev for r in store.revisions()] == ["rev-0001", "rev-0004", "rev-0005"]
    keys = {t: (sha(t), "python", CHUNKER) for t in [on_main, *topic]}
    assert set(store.content_ids(list(keys.values()))) == {keys[on_main], keys[topic[2]], keys[topic[3]]}
    kept = store.revision("rev-0001")
    assert kept is not None and store.vector_coverage(kept.rev_no, MODEL) == 1.0
    assert store.consistency_problems(store.revisions()[-1].rev_no, MODEL) == []
    # Switching back to main finds a.py's content: nothing is chunked or embedded again.
    back = commit_files(store, settings, {**stable, "a.py": on_main}, branch="main")
    assert store.vector_coverage(back.rev_no, MODEL) == 1.0
    assert paths(lexical_candidates(store, back.rev_no, "changing main", 5))[:1] == ["a.py"]
    store.gc(1)  # the tip of topic (rev-0005) is kept, main's older revision goes
    assert [r.rev for r in store.revisions()] == ["rev-0005", "rev-0006"]
    assert store.consistency_problems(back.rev_no, MODEL) == []


def test_vectors_cover_a_revision_chunk_by_chunk(store_factory: StoreFactory, settings: Settings) -> None:
    store = store_factory()
    text = SAMPLE["src/app/server.py"]
    rev = commit_files(store, settings, {**SAMPLE, "copy/server.py": text})
    assert store.vector_coverage(rev.rev_no, MODEL) == 0.0
    missing = store.chunks_missing_vectors(rev.rev_no, MODEL, 1000)
    assert len(missing) == rev.chunks == len({c.chunk_id for c in missing})  # a shared chunk once
    half = missing[: len(missing) // 2]
    store.add_vectors(MODEL, [(c.chunk_id, unit(c.text).tobytes()) for c in half], DIM)
    assert store.vector_coverage(rev.rev_no, MODEL) == pytest.approx(len(half) / len(missing))
    rest = store.chunks_missing_vectors(rev.rev_no, MODEL, 1000)
    assert {c.chunk_id for c in rest} == {c.chunk_id for c in missing[len(half) :]}
    assert len(store.chunks_missing_vectors(rev.rev_no, MODEL, 2)) == 2
    later = store.chunks_missing_vectors(rev.rev_no, MODEL, 1000, after_id=rest[0].chunk_id)
    assert [c.chunk_id for c in later] == [c.chunk_id for c in rest[1:]]
    store.add_vectors(MODEL, [(c.chunk_id, unit(c.text).tobytes()) for c in rest], DIM)
    assert store.vector_coverage(rev.rev_no, MODEL) == 1.0
    assert store.chunks_missing_vectors(rev.rev_no, MODEL, 1000) == []
    assert store.vector_coverage(rev.rev_no, "other/model") == 0.0
    assert store.consistency_problems(rev.rev_no, MODEL) == []


def test_vector_search_ranks_by_cosine_within_a_revision(
    store_factory: StoreFactory, settings: Settings
) -> None:
    store = store_factory()
    text = SAMPLE["src/app/retry.py"]
    rev = commit_files(store, settings, {**SAMPLE, "copy/retry.py": text})
    chunks = store.chunks_missing_vectors(rev.rev_no, MODEL, 1000)
    store.add_vectors(MODEL, [(c.chunk_id, unit(c.text).tobytes()) for c in chunks], DIM)
    target = next(c for c in chunks if "retry_with_backoff" in c.text)
    query = unit(target.text)
    hits = store.vector_search(rev.rev_no, MODEL, query.tobytes(), DIM, 3)
    assert hits[0].chunk_id == target.chunk_id and hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert {h.path for h in hits[:2]} == {"src/app/retry.py", "copy/retry.py"}  # one chunk, two paths
    assert len({h.chunk_id for h in hits}) == 3
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    expected = sorted(chunks, key=lambda c: -float(unit(c.text) @ query))[:3]
    assert [h.chunk_id for h in hits if h.path != "copy/retry.py"] == [c.chunk_id for c in expected]
    assert hits[0].text == target.text and hits[0].sha256 == sha(text)
    assert store.vector_search(rev.rev_no, "other/model", query.tobytes(), DIM, 3) == []
    assert store.vector_search(rev.rev_no, MODEL, query.tobytes(), DIM, 0) == []
    # A second write for a chunk replaces its vector. (A fresh handle: SqliteStore caches the
    # matrix by vector count, which a replacement does not change.)
    store.add_vectors(MODEL, [(target.chunk_id, (-query).tobytes())], DIM)
    fresh = store_factory()
    again = fresh.vector_search(rev.rev_no, MODEL, query.tobytes(), DIM, 50)
    assert again[-1].chunk_id == target.chunk_id and again[-1].score == pytest.approx(-1.0, abs=1e-5)
    # Another dimension finds nothing (a new handle again: SqliteStore's cache key lacks the dim).
    assert store_factory().vector_search(rev.rev_no, MODEL, unit("x", 8).tobytes(), 8, 3) == []


def test_vector_search_sees_only_the_asked_revision(store_factory: StoreFactory, settings: Settings) -> None:
    store = store_factory()
    one = commit_files(store, settings, {"a.py": "def alpha():\n    return 1\n"})
    two = commit_files(store, settings, {"b.py": "def beta():\n    return 2\n"})
    for rev in (one, two):
        chunks = store.chunks_missing_vectors(rev.rev_no, MODEL, 10)
        store.add_vectors(MODEL, [(c.chunk_id, unit(c.text).tobytes()) for c in chunks], DIM)
    query = unit("anything").tobytes()
    assert paths(store.vector_search(one.rev_no, MODEL, query, DIM, 10)) == ["a.py"]
    assert paths(store.vector_search(two.rev_no, MODEL, query, DIM, 10)) == ["b.py"]


# lexical search ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "first"),
    [
        ("TCPConnector", "src/app/server.py"),
        ("retry_with_backoff", "src/app/retry.py"),
        ("retry with exponential backoff", "src/app/retry.py"),
        ("keep-alive connections", "src/app/server.py"),
        ("HttpClient request", "web/client.ts"),
        ("http client", "web/client.ts"),
        ("gethostbyname", "src/app/server.py"),
        ("Backoff doubles", "docs/guide.md"),
    ],
)
def test_lexical_search_puts_the_expected_file_first(
    store_factory: StoreFactory, settings: Settings, query: str, first: str
) -> None:
    store = store_factory()
    rev = commit_files(store, settings, SAMPLE)
    hits = lexical_candidates(store, rev.rev_no, query, 10)
    assert hits and hits[0].path == first
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert all(h.score >= 0 for h in hits)


def test_lexical_search_answers_from_the_asked_revision(
    store_factory: StoreFactory, settings: Settings
) -> None:
    store = store_factory()
    one = commit_files(store, settings, SAMPLE)
    renamed = {
        **SAMPLE,
        "src/app/server.py": SAMPLE["src/app/server.py"].replace("TCPConnector", "SocketPool"),
    }
    two = commit_files(store, settings, renamed)
    # An older revision's own rows are ranked by the statistics of the retained rows (the current
    # revision's by its own), so the contract there is which files answer, not their order.
    assert "src/app/server.py" in paths(lexical_candidates(store, one.rev_no, "TCPConnector", 10))
    assert "src/app/server.py" in paths(store.lexical_search('"tcpconnector"', one.rev_no, 10))
    assert "src/app/server.py" not in paths(store.lexical_search('"tcpconnector"', two.rev_no, 10))
    assert paths(lexical_candidates(store, two.rev_no, "SocketPool", 10)) == ["src/app/server.py"]
    assert lexical_candidates(store, two.rev_no, "zyxwvut", 10) == []
    assert store.lexical_search('"tcpconnector"', two.rev_no, 0) == []
    hits = store.lexical_search('"tcp" OR "connector"', one.rev_no, 2)
    assert len(hits) == 2


def test_readers_never_see_a_torn_revision_while_a_writer_commits(
    store_factory: StoreFactory, settings: Settings
) -> None:
    writer, reader = store_factory(), store_factory()
    commit_files(writer, settings, {"gen.py": "GENERATION_MARKER = 1\n"})
    problems: list[str] = []
    done = threading.Event()

    def read() -> None:
        seen = 0
        while not done.is_set() or seen == 0:
            rev = reader.current_revision()
            assert rev is not None
            manifest = reader.manifest(rev.rev_no)
            hits = reader.lexical_search('"generation" OR "marker"', rev.rev_no, 10)
            seen += 1
            if len(manifest) != rev.files or reader.count_chunks(rev.rev_no) != rev.chunks:
                problems.append(f"{rev.rev}: manifest or counts differ from the revision row")
            for h in hits:
                if h.path not in manifest or manifest[h.path].sha256 != h.sha256:
                    problems.append(f"{rev.rev}: hit {h.path} is not in its manifest")
                if h.path == "gen.py" and h.text.strip() != f"GENERATION_MARKER = {rev.rev_no}":
                    problems.append(f"{rev.rev}: gen.py of another revision: {h.text!r}")

    thread = threading.Thread(target=read)
    thread.start()
    try:
        for n in range(2, 12):
            files = {
                "gen.py": f"GENERATION_MARKER = {n}\n",
                **{f"f{i}.py": f"marker_{n}_{i} = {i}\n" for i in range(n)},
            }
            commit_files(writer, settings, files)
    finally:
        done.set()
        thread.join()
    assert problems == []
