"""Lexical search scoring only the rows of a query's rarer terms answers exactly as scoring them all."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import settled, write

from ragraf import Index
from ragraf.store.sqlite import contents
from ragraf.tokens import fts_match, query_terms

WORDS = ["device", "buffer", "inode", "dentry", "polynomial"]


def repository(root: Path) -> Path:
    """400 files: "device" in 30% of them, "buffer" in 25%, "inode" in 12% (long files), "dentry"
    in 5%, "polynomial" in one; each as often as its number allows, so scores spread, some tie
    (equal files), and short files saying "device" often outscore long ones saying "inode" once."""
    files: dict[str, str | bytes] = {}
    for i in range(400):
        words = []
        if i % 10 < 3:
            words += ["device"] * (1 + i % 5)
        if i % 4 == 1:
            words += ["buffer"] * (1 + i % 3)
        if i % 8 == 2:
            words += ["inode"] * (1 + (i // 8) % 3)
        if i % 20 == 3:
            words += ["dentry"] * (1 + i % 4)
        if i == 7:
            words.append("polynomial")
        length = 80 + i % 40 if i % 8 == 2 else i % 9
        filler = " ".join(f"word{(i * 7 + j) % 50}" for j in range(length))
        files[f"pkg{i % 6}/part_{i}.txt"] = f"{' '.join(words)} {filler}\n"
    write(root, files)
    settled(root)
    return root


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = repository(tmp_path_factory.mktemp("bounds") / "repo")
    with Index.open(root) as idx:
        idx.index(quiet=True)
    return root


QUERIES = [
    "inode device",
    "dentry device buffer",
    "device inode dentry",
    "buffer polynomial",
    "dentry inode",
    "device buffer",
    "polynomial",
    "inode dentry device buffer",
]


@pytest.mark.parametrize("limit", [1, 5, 12, 30, 60])
def test_scoring_the_rare_terms_rows_gives_the_same_hits_and_scores(
    indexed: Path, limit: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Index.open(indexed) as idx:
        store = idx.store()
        rev = store.current_revision()
        assert rev is not None
        proved = 0
        for query in QUERIES:
            match = fts_match(query_terms(query))
            monkeypatch.setattr(contents, "PRUNE_ROWS", 10**9)
            whole = store.lexical_search(match, rev.rev_no, limit)
            assert store._lexical_pruned(match, rev.rev_no, limit) is None  # the one statement answered
            monkeypatch.setattr(contents, "PRUNE_ROWS", 0)
            pruned = store._lexical_pruned(match, rev.rev_no, limit)
            assert store.lexical_search(match, rev.rev_no, limit) == whole
            if pruned is not None:
                proved += 1
                assert pruned == whole, query  # the same chunks, in order, with bit-equal scores
        # Rare terms that fill the pool prove it for a few of these; a pool wider than their rows
        # (limit 30 and 60 here) leaves every row scored. One term never prunes.
        assert proved >= 3 if limit <= 12 else proved == 0


def test_common_terms_that_could_outscore_the_pool_are_scored_in_full(
    indexed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(contents, "PRUNE_ROWS", 0)
    with Index.open(indexed) as idx:
        store = idx.store()
        rev = store.current_revision()
        assert rev is not None
        # "polynomial" is in one file: its rows cannot fill a pool, so every row is scored.
        assert store._lexical_pruned(fts_match(["polynomial", "device"]), rev.rev_no, 5) is None
        # Anything but OR-ed quoted terms (a phrase search of localize) goes to the one statement.
        assert store._lexical_pruned('"inode device"', rev.rev_no, 5) is None


def test_an_older_revision_is_scored_in_full(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(contents, "PRUNE_ROWS", 0)
    root = repository(tmp_path / "repo")
    with Index.open(root) as idx:
        idx.index(quiet=True)
        first = idx.store().current_revision()
        (root / "pkg0" / "part_0.txt").write_text("inode inode dentry\n", encoding="utf-8")
        idx.index(quiet=True)
        store = idx.store()
        match = fts_match(["device", "buffer"])
        assert first is not None and store.current_revision().rev_no != first.rev_no  # type: ignore[union-attr]
        assert store._lexical_pruned(match, first.rev_no, 5) is None  # it reads the retained rows too
        assert store._lexical_pruned(match, store.current_revision().rev_no, 5) is not None  # type: ignore[union-attr]


@pytest.fixture(scope="module")
def named_everywhere(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """120 files, nearly all saying the project's name ("zodlike"), 40 saying "device", one "polynomial"."""
    root = tmp_path_factory.mktemp("everywhere") / "repo"
    files: dict[str, str | bytes] = {}
    for i in range(120):
        words = ["zodlike"] * (1 + i % 4) if i % 10 else []
        words += ["device"] * (1 + i % 3) if i % 3 == 0 else []
        words += ["polynomial"] if i == 9 else []
        files[f"src/part_{i}.txt"] = (
            " ".join(words + [f"word{(i * 7 + j) % 30}" for j in range(i % 11)]) + "\n"
        )
    write(root, files)
    settled(root)
    with Index.open(root) as idx:
        idx.index(quiet=True)
    return root


def test_a_term_in_most_rows_is_left_out_only_when_the_others_fill_the_pool(
    named_everywhere: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Index.open(named_everywhere) as idx:
        store = idx.store()
        rev_no = store.current_revision().rev_no  # type: ignore[union-attr]
        both = fts_match(["zodlike", "device"])
        rare = fts_match(["zodlike", "polynomial"])
        counts = store._term_counts(both, rev_no)
        assert counts is not None and counts.without_idle_terms(35)[0] == fts_match(["device"])
        assert store._term_counts(rare, rev_no).without_idle_terms(35)[0] == rare  # type: ignore[union-attr]
        fewer = store.lexical_search(both, rev_no, 5)  # "device" alone fills a pool of 35
        lonely = store.lexical_search(rare, rev_no, 5)  # "polynomial" cannot: the name's rows stay
        monkeypatch.setattr(store, "_term_counts", lambda match, rev_no: None)
        every = store.lexical_search(both, rev_no, 40)
        lonely_every = store.lexical_search(rare, rev_no, 5)
    # The name gets FTS5's floor IDF (1e-6): the same hits, by the same scores give or take a millionth.
    by_id = {h.chunk_id: h.score for h in every}
    assert len(fewer) == 5 and all(abs(by_id[h.chunk_id] - h.score) < 1e-5 for h in fewer)
    assert sorted(round(h.score, 4) for h in fewer) == sorted(round(h.score, 4) for h in every[:5])
    assert [(h.chunk_id, h.score) for h in lonely] == [(h.chunk_id, h.score) for h in lonely_every]
    assert len(lonely) == 5 and "polynomial" in lonely[0].text
