"""An index run after a change does work proportional to the change: files read, folders listed,
never a listing of the whole tree (issue 28), on real git repositories and plain folders."""

from __future__ import annotations

import importlib
import os
from pathlib import Path

import pytest
from support import git, init_git, settled, write

from ragraf import Index
from ragraf.index import indexer

discover_module = importlib.import_module(
    "ragraf.corpus.discover"
)  # the package exports a function of that name

FOLDERS = 30
PER_FOLDER = 10


def corpus() -> dict[str, str]:
    files = {
        f"pkg{d:02d}/mod{f:02d}.py": f"def fn_{d}_{f}(x):\n    return x + {d * 100 + f}\n"
        for d in range(FOLDERS)
        for f in range(PER_FOLDER)
    }
    files[".gitignore"] = "generated/\n*.log\n"
    files["README.md"] = "# sample\n"
    return files


class Work:
    """Counts what an index run does: folders listed, and whether the whole tree was listed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
        self.listed: list[str] = []
        self.full_listings = 0
        scandir = os.scandir

        def counting_scandir(path: str | int | os.PathLike[str] = ".") -> os.ScandirIterator[str]:
            if not isinstance(path, int) and (os.fspath(path) + "/").startswith(f"{root}/"):
                self.listed.append(os.fspath(path))  # the folders of the tree, not the index's own
            return scandir(path)  # type: ignore[arg-type,return-value]

        def counting(fn):  # type: ignore[no-untyped-def]
            def wrapper(*args, **kwargs):  # type: ignore[no-untyped-def]
                self.full_listings += 1
                return fn(*args, **kwargs)

            return wrapper

        monkeypatch.setattr(discover_module.os, "scandir", counting_scandir)
        monkeypatch.setattr(indexer, "discover", counting(indexer.discover))
        monkeypatch.setattr(indexer, "dir_stamps", counting(indexer.dir_stamps))

    def reset(self) -> None:
        self.listed.clear()
        self.full_listings = 0


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    write(root, corpus())
    init_git(root)
    settled(root)
    return root


def indexed(root: Path) -> Index:
    idx = Index.open(root, home=str(root.parent / "home"))
    report = idx.index()
    assert report.files["added"] == FOLDERS * PER_FOLDER + 2
    return idx


def fresh_hash(root: Path, tmp_path: Path) -> str | None:
    """The corpus hash a full index of the same tree gets, in an index of its own."""
    other = Index.open(root, home=str(tmp_path / "fresh-home"))
    try:
        return other.index(full=True).corpus_hash
    finally:
        other.close()


def test_a_one_file_edit_reads_one_file_and_lists_no_folder(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    idx = indexed(repo)
    work = Work(monkeypatch, repo)
    with (repo / "pkg07/mod03.py").open("a", encoding="utf-8") as fh:
        fh.write("\ndef edited():\n    return 1\n")
    report = idx.index()
    assert report.files["modified"] == 1 and report.files_read == 1
    assert work.listed == [] and work.full_listings == 0
    assert any(r.path == "pkg07/mod03.py" for r in idx.search("edited").results)


def test_a_new_file_lists_only_its_folder(
    repo: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    idx = indexed(repo)
    work = Work(monkeypatch, repo)
    (repo / "pkg12/added.py").write_text("def brand_new_function():\n    return 2\n")
    report = idx.index()
    assert report.files["added"] == 1 and report.files_read == 1 and report.new_revision
    assert work.listed == [str(repo / "pkg12")] and work.full_listings == 0
    assert [r.path for r in idx.search("brand_new_function").results][:1] == ["pkg12/added.py"]
    assert report.corpus_hash == fresh_hash(repo, tmp_path)
    # The next run finds nothing moved: the snapshot took in the new file and its folder's stamp.
    settled(repo)
    idx.index()  # trusts the now settled stats
    work.reset()
    again = idx.index()
    assert not again.new_revision and again.files_read == 0 and work.listed == []


def test_a_deleted_file_and_a_new_folder_list_only_their_folders(
    repo: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    idx = indexed(repo)
    work = Work(monkeypatch, repo)
    (repo / "pkg03/mod05.py").unlink()
    write(
        repo,
        {"pkg20/sub/one.py": "def sub_one():\n    pass\n", "pkg20/sub/two.py": "def sub_two():\n    pass\n"},
    )
    report = idx.index()
    assert report.files == {"added": 2, "modified": 0, "deleted": 1, "unchanged": FOLDERS * PER_FOLDER + 1}
    assert report.files_read == 2 and work.full_listings == 0
    assert sorted(work.listed) == sorted(str(repo / f) for f in ("pkg03", "pkg20", "pkg20/sub"))
    assert report.corpus_hash == fresh_hash(repo, tmp_path)


def test_new_files_go_through_the_ignore_files_and_the_rules(
    repo: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    idx = indexed(repo)
    work = Work(monkeypatch, repo)
    write(
        repo,
        {
            "pkg01/debug.log": "ignored by *.log\n",
            "generated/out.py": "def generated():\n    pass\n",  # a new folder git ignores
            "pkg01/.env": "API_KEY=abc\n",  # a secret
            "pkg01/poetry.lock": "# lock\n",  # a default exclude
            "pkg01/kept.py": "def kept_file():\n    pass\n",
        },
    )
    os.symlink("kept.py", repo / "pkg01/link.py")
    report = idx.index()
    assert report.files["added"] == 1 and report.files_read == 1 and work.full_listings == 0
    assert {"path": "pkg01/link.py", "reason": "symlink (not followed)"} in report.skipped_files
    assert str(repo / "generated") not in work.listed  # an ignored new folder is not walked
    assert report.corpus_hash == fresh_hash(repo, tmp_path)


def test_a_tracked_file_under_an_ignored_pattern_is_taken_in(repo: Path, tmp_path: Path) -> None:
    idx = indexed(repo)
    (repo / "pkg02/kept.log").write_text("tracked although *.log is ignored\n")
    git(repo, "add", "-f", "pkg02/kept.log")
    report = idx.index()
    assert report.files["added"] == 1
    assert report.corpus_hash == fresh_hash(repo, tmp_path)


def test_a_new_ignore_file_lists_the_whole_tree(
    repo: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    idx = indexed(repo)
    work = Work(monkeypatch, repo)
    (repo / "pkg04/.gitignore").write_text("mod0*.py\n")
    report = idx.index()
    assert work.full_listings > 0  # the rules changed: every file is looked at again
    assert report.corpus_hash == fresh_hash(repo, tmp_path)


def test_a_branch_switch_costs_about_the_files_it_touches(
    repo: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    git(repo, "checkout", "-q", "-b", "other")
    for d in range(0, FOLDERS, 2):  # 15 folders: one file modified in each, one deleted, new ones
        with (repo / f"pkg{d:02d}/mod01.py").open("a", encoding="utf-8") as fh:
            fh.write(f"\ndef switched_{d}():\n    return {d}\n")
    (repo / "pkg01/mod09.py").unlink()
    write(repo, {f"newpkg/file{i}.py": f"def fresh_{i}():\n    return {i}\n" for i in range(4)})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "other")
    git(repo, "checkout", "-q", "main")
    settled(repo)
    idx = indexed(repo)
    work = Work(monkeypatch, repo)
    git(repo, "checkout", "-q", "other")
    report = idx.index()
    touched = FOLDERS // 2 + 1 + 4
    assert report.files["modified"] == FOLDERS // 2 and report.files["added"] == 4
    assert report.files["deleted"] == 1
    assert report.files_read == touched - 1 and work.full_listings == 0
    assert len(work.listed) <= FOLDERS // 2 + 3  # the folders git wrote to, the root, the new folder
    assert report.corpus_hash == fresh_hash(repo, tmp_path)
    # And back: the same work the other way.
    settled(repo)  # the files git just wrote settle, as a minute later
    idx.index()
    work.reset()
    git(repo, "checkout", "-q", "main")
    report = idx.index()
    assert report.files["deleted"] == 4 and report.files["added"] == 1 and work.full_listings == 0
    assert report.corpus_hash == fresh_hash(repo, tmp_path)


def test_a_plain_folder_applies_its_gitignore_to_new_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "plain"
    root.mkdir()
    write(root, corpus())
    settled(root)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    idx = indexed(root)
    work = Work(monkeypatch, root)
    write(
        root,
        {"pkg05/trace.log": "ignored\n", "generated/x.py": "def g():\n    pass\n", "pkg05/ok.py": "x = 1\n"},
    )
    report = idx.index()
    assert report.files["added"] == 1 and work.full_listings == 0
    assert report.corpus_hash == fresh_hash(root, tmp_path)


def test_a_large_changed_folder_is_listed_again_on_its_own(repo: Path) -> None:
    """The bound is on names new to the listing, not on the entries of the folders listed."""
    known = sorted(p for p in corpus() if "/" in p or p == "README.md")
    folders = ["", *sorted({p.split("/")[0] for p in known if "/" in p})]
    (repo / "pkg09/extra.py").write_text("y = 2\n")
    relisted = discover_module.relist(repo, 1 << 20, known, folders, ["pkg09"], limit=3)
    assert relisted is not None and [f.path for f in relisted.added.files] == ["pkg09/extra.py"]
    write(repo, {f"pkg09/more{i}.py": "z = 3\n" for i in range(4)})
    assert discover_module.relist(repo, 1 << 20, known, folders, ["pkg09"], limit=3) is None


def test_a_file_replaced_by_a_folder_or_a_symlink_leaves_the_listing(repo: Path, tmp_path: Path) -> None:
    idx = indexed(repo)
    (repo / "pkg06/mod01.py").unlink()
    write(repo, {"pkg06/mod01.py/inner.py": "def inner_function():\n    pass\n"})
    (repo / "pkg06/mod02.py").unlink()
    os.symlink("mod03.py", repo / "pkg06/mod02.py")
    report = idx.index()
    assert report.files["deleted"] == 2 and report.files["added"] == 1
    assert report.corpus_hash == fresh_hash(repo, tmp_path)
    again = idx.index()  # the snapshot no longer lists them: nothing moved
    assert again.files_read <= 1 and not again.new_revision


def test_change_after_change_in_one_process_hashes_the_corpus_without_reading_the_manifest(
    repo: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A long-running process keeps the last revision's corpus lines: a one-file change edits them
    instead of reading every file's hash back from the store."""
    idx = indexed(repo)
    store_type = type(idx.store())
    reads: list[int] = []
    whole = store_type.manifest_hashes
    monkeypatch.setattr(
        store_type, "manifest_hashes", lambda self, rev_no: reads.append(rev_no) or whole(self, rev_no)
    )
    for n, (path, change) in enumerate(
        [
            ("pkg03/mod01.py", "edit"),
            ("pkg05/new.py", "add"),
            ("pkg09/mod09.py", "delete"),
            ("pkg03/mod01.py", "edit"),
        ]
    ):
        target = repo / path
        if change == "delete":
            target.unlink()
        else:
            with target.open("a", encoding="utf-8") as fh:
                fh.write(f"\ndef changed_{n}():\n    return {n}\n")
        report = idx.index()
        assert report.new_revision  # (an edit within the racy window of the last run is read again)
        assert report.corpus_hash == fresh_hash(repo, tmp_path / f"fresh-{n}")
    assert reads == []
