"""The collector's threshold while a batch's bundles come in: raised, and put back by the last batch."""

import gc

from ragraf.index import workers


def test_the_threshold_is_raised_for_a_batch_and_put_back_after_the_last_of_two() -> None:
    before = gc.get_threshold()
    first, second = workers._fewer_collections(), workers._fewer_collections()
    first.__enter__()
    assert gc.get_threshold() == workers._FEWER_COLLECTIONS
    second.__enter__()
    first.__exit__(None, None, None)  # the first batch ends while the second still runs
    assert gc.get_threshold() == workers._FEWER_COLLECTIONS
    second.__exit__(None, None, None)
    assert gc.get_threshold() == before


def test_a_batch_that_stops_early_puts_the_threshold_back(tmp_path) -> None:
    before = gc.get_threshold()
    (tmp_path / "a.py").write_text("def a():\n    return 1\n")
    from ragraf.config import load_settings

    settings = load_settings(tmp_path, embedder="none")
    bundles = workers.prepare_all([(("", "python", settings.chunk_params()), "a.py")], settings)
    next(bundles)
    assert gc.get_threshold() == workers._FEWER_COLLECTIONS
    bundles.close()
    assert gc.get_threshold() == before
