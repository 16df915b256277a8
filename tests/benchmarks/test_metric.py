"""Hand-computed cases for the bench metric (benchmarks/metric.py)."""

import math

import pytest

from benchmarks.metric import Chunk, Target, mean, ndcg_at_k, parse_target, path_matches, score_query

A, B = Target("pkg/a.py"), Target("pkg/b.py")


def chunks(*spec: tuple[str, int, int]) -> list[Chunk]:
    return [Chunk(p, s, e) for p, s, e in spec]


def test_found_at_rank_1() -> None:
    s = score_query(chunks(("pkg/a.py", 1, 20), ("pkg/c.py", 1, 5)), [A])
    assert s.ranks == (1,)
    assert s.ndcg10 == pytest.approx(1.0)
    assert (s.recall1, s.recall5, s.recall10, s.mrr10) == (1.0, 1.0, 1.0, 1.0)


def test_found_at_rank_3() -> None:
    s = score_query(chunks(("x.py", 1, 2), ("y.py", 1, 2), ("pkg/a.py", 1, 2)), [A])
    assert s.ranks == (3,)
    assert s.ndcg10 == pytest.approx(0.5)  # 1/log2(4) over an ideal of 1/log2(2)
    assert s.recall1 == 0.0
    assert s.recall5 == 1.0
    assert s.mrr10 == pytest.approx(1 / 3)


def test_line_span_overlap_vs_no_overlap() -> None:
    t = Target("fastapi/params.py", 746, 749)
    miss = chunks(("fastapi/params.py", 700, 745), ("fastapi/other.py", 740, 760))
    s = score_query(miss, [t])
    assert s.ranks == (None,) and s.ndcg10 == 0.0
    assert s.mrr10 == 1.0  # file level ignores the span
    hit = chunks(("fastapi/params.py", 700, 745), ("fastapi/params.py", 749, 800))
    s = score_query(hit, [t])
    assert s.ranks == (2,)  # touching the last line is an overlap
    assert s.ndcg10 == pytest.approx(1 / math.log2(3))


def test_duplicate_chunks_of_one_file_count_once() -> None:
    res = chunks(("pkg/a.py", 1, 10), ("pkg/a.py", 20, 30), ("pkg/b.py", 1, 5))
    s = score_query(res, [A], [B])
    assert s.ranks == (1, 3)
    ideal = 1 + 1 / math.log2(3)
    assert s.ndcg10 == pytest.approx((1 + 0.5) / ideal)
    # the same file listed as relevant and secondary is one target
    s = score_query(res, [A], [A])
    assert s.n_targets == 1 and s.ndcg10 == pytest.approx(1.0)
    # file recall over two relevant files: a.py twice in the top 5 is still one file
    s = score_query(res, [A, B])
    assert s.recall1 == 0.5 and s.recall5 == 1.0 and s.mrr10 == 1.0


def test_nothing_relevant_found_is_zero() -> None:
    s = score_query(chunks(("x.py", 1, 2), ("y.py", 3, 4)), [A], [B])
    assert s.values() == {"ndcg10": 0.0, "recall1": 0.0, "recall5": 0.0, "recall10": 0.0, "mrr10": 0.0}
    assert score_query([], [A]).ndcg10 == 0.0


def test_only_top_10_counts() -> None:
    res = chunks(*[(f"f{i}.py", 1, 2) for i in range(10)], ("pkg/a.py", 1, 2))
    s = score_query(res, [A])
    assert s.ranks == (None,) and s.ndcg10 == 0.0 and s.recall10 == 0.0 and s.mrr10 == 0.0


def test_ideal_is_capped_at_10_targets() -> None:
    targets = [Target(f"t{i}.py") for i in range(12)]
    res = chunks(*[(f"t{i}.py", 1, 2) for i in range(10)])
    assert score_query(res, targets).ndcg10 == pytest.approx(1.0)
    assert ndcg_at_k([1], 2) == pytest.approx(1 / (1 + 1 / math.log2(3)))


def test_paths_and_parsing() -> None:
    assert path_matches("src/aiohttp/client.py", "aiohttp/client.py")
    assert not path_matches("xaiohttp/client.py", "aiohttp/client.py")
    assert parse_target("./a/b.py") == Target("a/b.py")
    assert parse_target({"path": "a.py", "start_line": 3, "end_line": 9}) == Target("a.py", 3, 9)


def test_mean_over_queries() -> None:
    one = score_query(chunks(("pkg/a.py", 1, 2)), [A])
    zero = score_query([], [A])
    m = mean([one, zero])
    assert m["ndcg10"] == 0.5 and m["mrr10"] == 0.5 and m["n"] == 2
    assert mean([])["n"] == 0
