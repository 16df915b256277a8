"""The quality harness against a fake index of the same shape as ragraf.Index (tests only)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from benchmarks import quality
from benchmarks.metric import Target


@dataclass
class FakeResult:
    path: str
    start_line: int
    end_line: int
    score: float = 1.0
    kind: str = "code"
    symbol: str | None = None


@dataclass
class FakeEnvelope:
    results: list[FakeResult]
    degraded: bool = False

    def to_dict(self) -> dict[str, object]:
        return {"op": "search", "capability": {"degraded": self.degraded}, "results": []}


@dataclass
class FakeReport:
    def to_dict(self) -> dict[str, object]:
        return {
            "index_rev": "rev-0001",
            "files": {"added": 3, "modified": 0, "unchanged": 0, "deleted": 0},
            "chunks": {"total": 7, "new": 7},
            "duration_s": 0.01,
        }


@dataclass
class FakeIndex:
    answers: dict[tuple[str, str], list[FakeResult]]
    calls: list[tuple[str, int, str]] = field(default_factory=list)
    closed: bool = False

    def index(self, full: bool = False, quiet: bool = False) -> FakeReport:
        return FakeReport()

    def search(self, query: str, k: int = 10, mode: str = "hybrid") -> FakeEnvelope:
        self.calls.append((query, k, mode))
        if mode == "vector" and query == "boom":
            raise RuntimeError("no vectors")
        return FakeEnvelope(self.answers.get((query, mode), []), degraded=mode == "vector")

    def close(self) -> None:
        self.closed = True


TASKS = (
    quality.Task("client session", (Target("aiohttp/client.py"),), (), "semantic"),
    quality.Task("TCPConnector", (Target("aiohttp/connector.py", 10, 20),), (), "symbol"),
    quality.Task("boom", (Target("aiohttp/web.py"),), (), "architecture"),
)
ANSWERS = {
    ("client session", "lexical"): [FakeResult("client.py", 1, 50)],
    ("client session", "vector"): [FakeResult("other.py", 1, 5), FakeResult("client.py", 1, 5)],
    ("TCPConnector", "lexical"): [FakeResult("connector.py", 1, 9), FakeResult("connector.py", 15, 30)],
    ("TCPConnector", "vector"): [FakeResult("connector.py", 12, 14)],
}


class Clock:
    """A fake clock: every call advances by 1 ms."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        self.t += 0.001
        return self.t


def test_evaluate_maps_paths_and_scores_each_mode() -> None:
    idx = FakeIndex(ANSWERS)
    corpus = quality.Corpus("aiohttp", Path("/x/aiohttp/aiohttp"), "aiohttp", TASKS)
    run = quality.evaluate(idx, corpus, ["lexical", "vector"], repeat=2, clock=Clock())
    assert run.index["files"] == 3 and run.index["chunks"] == 7 and run.index["index_rev"] == "rev-0001"
    by = {(r.mode, r.query): r for r in run.records}
    assert by["lexical", "client session"].score.ndcg10 == 1.0
    assert by["lexical", "client session"].top == ["aiohttp/client.py:1-50"]
    assert by["lexical", "TCPConnector"].score.ranks == (2,)  # first chunk misses the span
    assert by["vector", "client session"].score.mrr10 == 0.5
    assert by["vector", "TCPConnector"].degraded
    assert by["vector", "boom"].error == "RuntimeError: no vectors"
    assert by["vector", "boom"].score.ndcg10 == 0.0
    assert by["lexical", "boom"].latency_ms == pytest.approx(1.0)  # only the search call is timed
    assert all(k == 10 for _q, k, _m in idx.calls)


def test_summarize_groups_by_repo_category_and_mode() -> None:
    corpus = quality.Corpus("aiohttp", Path("/x"), "aiohttp", TASKS)
    run = quality.evaluate(FakeIndex(ANSWERS), corpus, ["lexical", "vector"], repeat=1, clock=Clock())
    s = quality.summarize([run], ["lexical", "vector"])
    lex = s["results"]["lexical"]
    assert lex["overall"]["n"] == 3
    assert lex["by_category"]["semantic"]["ndcg10"] == 1.0
    assert lex["by_category"]["architecture"]["ndcg10"] == 0.0
    assert lex["by_repo"]["aiohttp"]["recall1"] == pytest.approx(2 / 3)
    assert lex["latency"]["p50_ms"] == pytest.approx(1.0)
    assert s["results"]["vector"]["errors"] == 1
    assert len(s["queries"]) == 6
    json.dumps(s)  # JSON-ready


def test_load_tasks_reads_targets_and_infers_category(tmp_path: Path) -> None:
    f = tmp_path / "mine.json"
    f.write_text(
        json.dumps(
            [
                {
                    "query": "Foo",
                    "relevant": [{"path": "a.py", "start_line": 1, "end_line": 3}],
                    "secondary": ["b.py"],
                },
                {"query": "how does x work", "relevant": ["c.py"], "category": "architecture"},
                {"query": "parse the config", "relevant": ["c.py"]},
            ]
        )
    )
    tasks = quality.load_tasks(f)
    assert [t.category for t in tasks] == ["symbol", "architecture", "semantic"]
    assert tasks[0].relevant == (Target("a.py", 1, 3),) and tasks[0].secondary == (Target("b.py"),)


def test_main_on_a_user_annotation_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "repo"
    (corpus / "src").mkdir(parents=True)
    ann = tmp_path / "mine.json"
    ann.write_text(
        json.dumps([{"query": "client session", "relevant": ["src/client.py"], "category": "semantic"}])
    )
    opened: list[tuple[Path, str, str | None]] = []

    def fake_open(root: Path, name: str, embedder: str | None, home_dir: Path, fresh: bool) -> FakeIndex:
        opened.append((root, name, embedder))
        return FakeIndex(ANSWERS)

    monkeypatch.setattr(quality, "open_index", fake_open)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", "")  # main() extends it; restored after the test
    rc = quality.main(
        [
            "--annotations",
            str(ann),
            "--corpus",
            str(corpus),
            "--index-root",
            "src",
            "--modes",
            "lexical",
            "--embedder",
            "none",
            "--json",
            "--homes",
            str(tmp_path / "h"),
        ]
    )
    assert rc == 0
    assert opened == [(corpus / "src", "mine", "none")]
    out = json.loads(capsys.readouterr().out)
    assert out["results"]["lexical"]["overall"]["ndcg10"] == 1.0
    assert out["embedder"] == "none"


def test_bad_flags_are_usage_errors() -> None:
    with pytest.raises(SystemExit) as e:
        quality.main(["--modes", "fuzzy"])
    assert e.value.code == 2
    with pytest.raises(SystemExit) as e:
        quality.main(["--annotations", "x.json"])
    assert e.value.code == 2


def test_harness_through_the_real_library(tmp_path: Path) -> None:
    pytest.importorskip("ragraf")
    try:
        from ragraf import Index  # noqa: F401
    except ImportError:
        pytest.skip("ragraf.Index is not available yet")
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "alpha.py").write_text("def parse_config(path):\n    return open(path).read()\n")
    (root / "pkg" / "beta.py").write_text("def render_html(page):\n    return '<p>' + page + '</p>'\n")
    corpus = quality.Corpus(
        "tiny", root / "pkg", "pkg", (quality.Task("parse_config", (Target("pkg/alpha.py"),), (), "symbol"),)
    )
    idx = quality.open_index(corpus.root, "tiny", "none", tmp_path / "homes", fresh=True)
    try:
        run = quality.evaluate(idx, corpus, ["lexical"], repeat=1)
    finally:
        idx.close()
    assert run.index["files"] == 2
    (rec,) = run.records
    assert rec.error is None
    assert rec.top[0].startswith("pkg/alpha.py:")
    assert rec.score.ndcg10 == 1.0
    assert (tmp_path / "homes" / "tiny-none").is_dir()


def test_spans_of_another_version_are_listed_and_widened_only_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "repo"
    (corpus / "pkg").mkdir(parents=True)
    # Router moved down the file since the annotation was written; Client's span is still right.
    (corpus / "pkg" / "routing.py").write_text(
        "import x\n\n\n\nclass Other:\n    pass\n\nclass Router:\n    pass\n"
    )
    (corpus / "pkg" / "client.py").write_text("class Client:\n    pass\n")
    ann = tmp_path / "mine.json"
    ann.write_text(
        json.dumps(
            [
                {"query": "Router", "relevant": [{"path": "pkg/routing.py", "start_line": 1, "end_line": 3}]},
                {
                    "query": "pkg.Client",
                    "relevant": [{"path": "pkg/client.py", "start_line": 1, "end_line": 2}],
                },
            ]
        )
    )
    answers = {
        ("Router", "lexical"): [FakeResult("routing.py", 8, 9)],
        ("pkg.Client", "lexical"): [FakeResult("client.py", 1, 2)],
    }
    monkeypatch.setattr(quality, "open_index", lambda *a, **kw: FakeIndex(answers))
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", "")
    args = ["--annotations", str(ann), "--corpus", str(corpus), "--index-root", "pkg", "--modes", "lexical"]

    def run(*extra: str) -> tuple[dict[str, object], str]:
        assert quality.main([*args, "--json", "--homes", str(tmp_path / "h"), *extra]) == 0
        out = capsys.readouterr()
        return json.loads(out.out), out.err

    strict, err = run()
    assert "'Router' gold pkg/routing.py:1-3 does not name it" in err and "Client" not in err
    assert strict["stale_spans"] == {
        "targets": [{"repo": "mine", "query": "Router", "target": "pkg/routing.py:1-3"}],
        "scored_as_files": False,
    }
    assert strict["results"]["lexical"]["overall"]["ndcg10"] == 0.5
    widened, err = run("--widen-stale-spans")
    assert "scored as the whole file" in err
    assert widened["results"]["lexical"]["overall"]["ndcg10"] == 1.0
