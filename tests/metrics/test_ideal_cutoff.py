"""``ndcg@k(ideal_cutoff=none)``: dcg@k over the whole ideal list's DCG (LensKit before lkpy #309).

* LensKit's own numbers from https://github.com/lenskit/lkpy/issues/309: truth ``{1: 3, 2: 5,
  3: 4}``, recommendations ``[1, 2]``: 0.7344 with the whole ideal list, 0.8888 with the ideal
  cut at ``k = 2``. LensKit's ``_dcg`` (lkpy 0.14, ``lenskit/metrics/topn.py``) divides by
  ``max(log2(rank), 1)``: rank 1 and 2 undiscounted, Järvelin & Kekäläinen's discount, our
  ``discount="jarvelin"``; its transcription below gives the thread's numbers.
* Brute force: a plain-Python nDCG (sort, cut, sum) on generated logs, every combination of
  gain, discount and ideal, against ``evaluate``.
* The name, the uncut metric, a LazyFrame, bad values.
"""

from __future__ import annotations

import math
import random

import polars as pl
import pytest

import polars_rankeval as rke
from polars_rankeval.errors import InvalidOptionError


def _lenskit_dcg(gains: list[float]) -> float:
    """lkpy 0.14 ``_dcg``: ``Σ gain / max(log2(rank), 1)``, ranks from 1."""
    return sum(gain / max(math.log2(rank), 1.0) for rank, gain in enumerate(gains, start=1))


def _lenskit_ndcg(recs: list[int], truth: dict[int, float], k: int | None) -> float:
    """lkpy after PR #310: the recommendations and the ideal ratings both cut at ``k``;
    ``k=None`` is lkpy before the fix: the whole sorted truth list as the ideal."""
    achieved = _lenskit_dcg([truth.get(item, 0.0) for item in recs[:k]])
    ideal = sorted(truth.values(), reverse=True)
    return achieved / _lenskit_dcg(ideal[:k] if k is not None else ideal)


def _log_309() -> pl.DataFrame:
    # Item 3 is judged (rating 4) but not recommended: a null score.
    return pl.DataFrame(
        {"query": "u", "item": [1, 2, 3], "score": [2.0, 1.0, None], "relevance": [3, 5, 4]}
    )


def test_lenskit_transcription_gives_the_threads_numbers() -> None:
    truth = {1: 3.0, 2: 5.0, 3: 4.0}
    assert round(_lenskit_ndcg([1, 2], truth, None), 4) == 0.7344
    assert math.floor(_lenskit_ndcg([1, 2], truth, 2) * 10_000) == 8888  # "~0.8888": 8/9


def test_lenskit_309_numbers() -> None:
    out = rke.evaluate(
        _log_309(),
        ["ndcg@2(discount=jarvelin,ideal_cutoff=none)", "ndcg@2(discount=jarvelin)"],
    )
    whole, cut = out.row(0)
    truth = {1: 3.0, 2: 5.0, 3: 4.0}
    assert whole == pytest.approx(_lenskit_ndcg([1, 2], truth, None), abs=1e-12)
    assert cut == pytest.approx(_lenskit_ndcg([1, 2], truth, 2), abs=1e-12)
    assert round(whole, 4) == 0.7344
    assert math.floor(cut * 10_000) == 8888


def _brute_ndcg(
    rows: list[tuple[str, float | None, int]],
    k: int | None,
    *,
    gain: str,
    discount: str,
    ideal: str,
    whole_ideal: bool,
) -> float:
    """trec_eval's nDCG in plain Python: ties by item descending, ideal from the judged rows."""

    def g(label: int) -> float:
        positive = max(label, 0)
        return 2.0**positive - 1.0 if gain == "exp" else float(positive)

    def d(rank: int) -> float:
        if discount == "jarvelin":
            return 1.0 if rank <= 1 else 1.0 / math.log2(rank)
        return 1.0 / math.log2(rank + 1)

    retrieved = [row for row in rows if row[1] is not None]
    ranked = sorted(retrieved, key=lambda row: (row[1], row[0]), reverse=True)
    dcg = sum(g(label) * d(rank) for rank, (_, _, label) in enumerate(ranked[:k], start=1))
    pool = retrieved if ideal == "retrieved" else rows
    ideal_gains = sorted((g(label) for _, _, label in pool), reverse=True)
    if not whole_ideal:
        ideal_gains = ideal_gains[:k]
    idcg = sum(value * d(rank) for rank, value in enumerate(ideal_gains, start=1))
    return dcg / idcg if idcg > 0 else 0.0


def _random_log(seed: int) -> pl.DataFrame:
    rng = random.Random(seed)
    frames = []
    for q in range(12):
        n = rng.randint(1, 9)
        items = rng.sample(range(30), n)
        frames.append(
            pl.DataFrame(
                {
                    "query": f"q{q}",
                    "item": [f"d{i:02d}" for i in items],
                    # a few tied scores and a few judged-but-unretrieved rows
                    "score": [
                        None if rng.random() < 0.25 else float(rng.randint(0, 4)) for _ in items
                    ],
                    "relevance": [rng.choice([0, 0, 1, 2, 3]) for _ in items],
                },
                schema={
                    "query": pl.String,
                    "item": pl.String,
                    "score": pl.Float64,
                    "relevance": pl.Int64,
                },
            )
        )
    return pl.concat(frames)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("gain", ["linear", "exp"])
@pytest.mark.parametrize("discount", ["log", "jarvelin"])
@pytest.mark.parametrize("ideal", ["judged", "retrieved"])
def test_against_brute_force(seed: int, gain: str, discount: str, ideal: str) -> None:
    log = _random_log(seed)
    options = f"gain={gain},discount={discount},ideal={ideal}"
    cuts = ("k", "none")
    metrics = [f"ndcg@{k}({options},ideal_cutoff={cut})" for k in (1, 3, 5) for cut in cuts]
    out = rke.evaluate(log, metrics, per_query=True)
    groups = {
        query: list(zip(frame["item"], frame["score"], frame["relevance"], strict=True))
        for (query,), frame in log.group_by("query")
    }
    checked = 0
    for row in out.iter_rows(named=True):
        rows = groups[row["query"]]
        for k in (1, 3, 5):
            for cut in ("k", "none"):
                expected = _brute_ndcg(
                    rows, k, gain=gain, discount=discount, ideal=ideal, whole_ideal=cut == "none"
                )
                got = row[f"ndcg@{k}({options},ideal_cutoff={cut})"]
                assert got == pytest.approx(expected, abs=1e-12), (row["query"], k, cut)
                checked += 1
    assert checked > 0


def test_whole_ideal_is_never_above_the_cut_one() -> None:
    log = _random_log(7)
    out = rke.evaluate(log, ["ndcg@3", "ndcg@3(ideal_cutoff=none)"], per_query=True)
    assert (out["ndcg@3(ideal_cutoff=none)"] <= out["ndcg@3"] + 1e-15).all()


def test_name_shows_only_a_non_default_value() -> None:
    log = _log_309()
    out = rke.evaluate(log, ["ndcg@2(ideal_cutoff=k)", "ndcg@2(ideal_cutoff=none)"])
    assert out.columns == ["ndcg@2(ideal_cutoff=k)", "ndcg@2(ideal_cutoff=none)"]
    assert rke.metrics.ndcg(2, ideal_cutoff="none").name == "ndcg@2(ideal_cutoff=none)"
    assert rke.metrics.ndcg(2, ideal_cutoff="k").name == "ndcg@2"


def test_uncut_ndcg_reads_the_whole_ideal_list_either_way() -> None:
    # Without k there is nothing to cut: the option changes neither the value nor the name.
    assert rke.metrics.ndcg(ideal_cutoff="none").name == "ndcg"
    out = rke.evaluate(_log_309(), ["ndcg", "ndcg(ideal_cutoff=none)"])
    assert out.row(0)[0] == out.row(0)[1]


def test_lazy_frame_and_namespace_agree() -> None:
    log = _random_log(3)
    eager = rke.evaluate(log, ["ndcg@3(ideal_cutoff=none)"], per_query=True).sort("query")
    lazy = rke.evaluate(log.lazy(), ["ndcg@3(ideal_cutoff=none)"], per_query=True)
    assert isinstance(lazy, pl.LazyFrame)
    assert eager.equals(lazy.collect().sort("query"))
    method = log.rank_eval.ndcg(k=3, ideal_cutoff="none", per_query=True)  # type: ignore[attr-defined]
    method = method.sort("query")
    assert method.to_series(-1).to_list() == eager.to_series(-1).to_list()


def test_under_expected_ties_only_the_divisor_changes() -> None:
    # The ideal list has no ties to average: ties="expected" leaves idcg alone, so the ratio of
    # the two variants is the ratio of the two ideal DCGs, whatever the run's ties.
    log = _random_log(5)
    out = rke.evaluate(
        log,
        ["ndcg@3", "ndcg@3(ideal_cutoff=none)", "dcg@3"],
        per_query=True,
        ties="expected",
    )
    for row in out.iter_rows(named=True):
        if row["ndcg@3"] == 0.0:
            assert row["ndcg@3(ideal_cutoff=none)"] == 0.0
            continue
        idcg_cut = row["dcg@3"] / row["ndcg@3"]
        idcg_whole = row["dcg@3"] / row["ndcg@3(ideal_cutoff=none)"]
        labels = sorted(
            log.filter(pl.col("query") == row["query"])["relevance"].clip(0).to_list(),
            reverse=True,
        )
        expected_cut = sum(g / math.log2(r + 1) for r, g in enumerate(labels[:3], start=1))
        expected_whole = sum(g / math.log2(r + 1) for r, g in enumerate(labels, start=1))
        assert idcg_cut == pytest.approx(expected_cut, rel=1e-12)
        assert idcg_whole == pytest.approx(expected_whole, rel=1e-12)


@pytest.mark.parametrize("value", ["all", "K", 3, None, True])
def test_bad_values_are_named(value: object) -> None:
    if value == "K":  # metric strings are case-insensitive: "K" is "k"
        assert rke.metrics.ndcg(2, ideal_cutoff=value).name == "ndcg@2"  # type: ignore[arg-type]
        return
    with pytest.raises(InvalidOptionError, match="ideal_cutoff="):
        rke.metrics.ndcg(2, ideal_cutoff=value)  # type: ignore[arg-type]
    with pytest.raises(InvalidOptionError, match="ideal_cutoff="):
        rke.metrics.ndcg(ideal_cutoff=value)  # type: ignore[arg-type]


def test_a_misspelt_value_in_a_string_suggests_the_right_one() -> None:
    with pytest.raises(InvalidOptionError, match="did you mean 'none'"):
        rke.evaluate(_log_309(), ["ndcg@2(ideal_cutoff=nnoe)"])
