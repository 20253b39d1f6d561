"""psp@k and psndcg@k against pyxclib's code, transcribed below for dense numpy arrays.

pyxclib (kunaldahiya/pyxclib, ``xclib/evaluation/xc_metrics.py``) needs numba and a C build;
its functions ``compute_inv_propesity``, ``_get_topk_array``, ``_eval_flags``,
``psprecision``/``_precision`` and ``psndcg``/``_ndcg`` are copied here with the sparse
matrices replaced by dense arrays (the arithmetic, including ``_ndcg``'s float32 output and
``n = _cumsum[_total_pos - 1]``, is theirs). Nothing expected is computed with the library.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

import polars_rankeval as rke
from polars_rankeval.errors import InvalidOptionError
from polars_rankeval.metrics._base import Metric

# --- pyxclib, transcribed (xc_metrics.py) -------------------------------------------------


def compute_inv_propesity(labels: np.ndarray, A: float, B: float) -> np.ndarray:
    num_instances, _ = labels.shape
    freqs = np.ravel(np.sum(labels, axis=0))
    C = (np.log(num_instances) - 1) * np.power(B + 1, A)
    wts = 1.0 + C * np.power(freqs + B, -A)
    return np.ravel(wts)


def _get_topk_array(X: np.ndarray, k: int) -> np.ndarray:
    # values are given
    _indices = np.argpartition(X, -k)[:, -k:]
    _scores = np.take_along_axis(X, _indices, axis=-1)
    indices = np.argsort(-_scores, axis=-1)
    return np.asarray(np.take_along_axis(_indices, indices, axis=1))


def _eval_flags(indices: np.ndarray, true_labels: np.ndarray, inv_psp: np.ndarray) -> np.ndarray:
    eval_flags = np.take_along_axis(true_labels, indices, axis=-1)
    return np.asarray(np.multiply(inv_psp[indices], eval_flags))


def _setup_metric(
    X: np.ndarray,
    true_labels: np.ndarray,
    inv_psp: np.ndarray,
    k: int,
) -> tuple[np.ndarray, np.ndarray]:
    indices = _get_topk_array(X, k)
    _psp_wtd = true_labels * inv_psp[None, :]  # spdiags(inv_psp) . true_labels.T, transposed
    ps_indices = _get_topk_array(_psp_wtd, k)
    return indices, ps_indices


def _precision(eval_flags: np.ndarray, k: int) -> np.ndarray:
    deno = 1 / (np.arange(k) + 1)
    precision = np.mean(np.multiply(np.cumsum(eval_flags, axis=-1), deno), axis=0)
    return np.ravel(precision)


def psprecision(X: np.ndarray, true_labels: np.ndarray, inv_psp: np.ndarray, k: int) -> np.ndarray:
    indices, ps_indices = _setup_metric(X, true_labels, inv_psp, k)
    eval_flags = _eval_flags(indices, true_labels, inv_psp)
    ps_eval_flags = _eval_flags(ps_indices, true_labels, inv_psp)
    return np.asarray(_precision(eval_flags, k) / _precision(ps_eval_flags, k))


def _ndcg(eval_flags: np.ndarray, n: np.ndarray, k: int) -> np.ndarray:
    _cumsum = 0.0
    _dcg = np.cumsum(np.multiply(eval_flags, 1 / np.log2(np.arange(k) + 2)), axis=-1)
    ndcg = np.zeros((1, k), dtype=np.float32)
    for _k in range(k):
        _cumsum += 1 / np.log2(_k + 1 + 1)
        ndcg[0, _k] = np.mean(np.multiply(_dcg[:, _k].reshape(-1, 1), 1 / np.minimum(n, _cumsum)))
    return np.ravel(ndcg)


def psndcg(X: np.ndarray, true_labels: np.ndarray, inv_psp: np.ndarray, k: int) -> np.ndarray:
    indices, ps_indices = _setup_metric(X, true_labels, inv_psp, k)
    eval_flags = _eval_flags(indices, true_labels, inv_psp)
    ps_eval_flags = _eval_flags(ps_indices, true_labels, inv_psp)
    _total_pos = np.asarray(true_labels.sum(axis=1), dtype=np.int32).reshape(-1, 1)
    _max_pos = max(int(np.max(_total_pos)), k)
    _cumsum = np.cumsum(1 / np.log2(np.arange(1, _max_pos + 1) + 1))
    n = _cumsum[_total_pos - 1]
    return np.asarray(_ndcg(eval_flags, n, k) / _ndcg(ps_eval_flags, n, k))


# --- generated multi-label data -----------------------------------------------------------

N_LABELS = 40


def _data(seed: int) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """Train labels (every instance has one), test labels and two score matrices."""
    rng = np.random.default_rng(seed)
    popularity = 1 / np.arange(1, N_LABELS + 1) ** 1.1  # long tail
    popularity[-3:] = 0.0  # three labels never seen in train
    train = (rng.random((300, N_LABELS)) < 0.4 * popularity[None, :] / popularity.max()).astype(
        np.float64
    )
    train[train.sum(axis=1) == 0, 0] = 1.0  # pyxclib's N counts every instance
    test = (rng.random((60, N_LABELS)) < 0.12).astype(np.float64)
    test[:3] = 0.0  # test instances without a true label add nothing to either sum
    scores = {
        "good": test + rng.random(test.shape),  # distinct floats: no ties
        "noise": rng.random(test.shape),
    }
    return train, test, scores


def _frames(
    train: np.ndarray, test: np.ndarray, scores: dict[str, np.ndarray]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    rows = np.argwhere(train > 0)
    train_frame = pl.DataFrame({"query": rows[:, 0] + 10_000, "item": rows[:, 1]})
    parts = []
    n, labels = test.shape
    for system, matrix in scores.items():
        parts.append(
            pl.DataFrame(
                {
                    "system": system,
                    "query": np.repeat(np.arange(n), labels),
                    "item": np.tile(np.arange(labels), n),
                    "score": matrix.ravel(),
                    "relevance": test.ravel().astype(np.int64),
                }
            )
        )
    return pl.concat(parts).sample(fraction=1.0, shuffle=True, seed=1), train_frame


@pytest.mark.parametrize(
    ("seed", "preset", "a_b"),
    [(1, None, (0.55, 1.5)), (2, "amazon", (0.6, 2.6)), (3, "wikipedia", (0.5, 0.4))],
)
def test_equal_pyxclib_on_generated_multilabel_data(
    seed: int, preset: str | None, a_b: tuple[float, float]
) -> None:
    train, test, scores = _data(seed)
    log, train_frame = _frames(train, test, scores)
    inv_psp = compute_inv_propesity(train, *a_b)
    ks = (1, 3, 5)
    option = f"(preset={preset})" if preset else ""
    names = [f"{m}@{k}{option}" for m in ("psp", "psndcg") for k in ks]
    out = rke.evaluate(log, names, train=train_frame, by="system", missing_queries="zero").sort(
        "system"
    )
    for system, matrix in scores.items():
        row = out.filter(pl.col("system") == system).row(0, named=True)
        for k in ks:
            assert row[f"psp@{k}{option}"] == pytest.approx(
                psprecision(matrix, test, inv_psp, k)[k - 1], rel=1e-12
            )
            # pyxclib's _ndcg keeps float32
            assert row[f"psndcg@{k}{option}"] == pytest.approx(
                float(psndcg(matrix, test, inv_psp, k)[k - 1]), rel=1e-6
            )
    # the good run finds the rare labels better than noise, below the best ranking
    good = out.filter(pl.col("system") == "good").row(0, named=True)
    assert 0 < good[f"psp@3{option}"] <= 1


def test_explicit_a_b_equal_the_preset_and_unretrieved_relevant_rows_count_in_the_best() -> None:
    train, test, scores = _data(4)
    log, train_frame = _frames(train, test, {"good": scores["good"]})
    # keep each query's top 8 retrieved; relevant rows below stay as judged, unretrieved rows
    log = log.with_columns(
        pl.when(pl.col("score").rank(descending=True).over("query") <= 8).then(pl.col("score"))
    ).filter(pl.col("score").is_not_null() | (pl.col("relevance") > 0))
    inv_psp = compute_inv_propesity(train, 0.6, 2.6)
    out = rke.evaluate(
        log,
        ["psp@5(a=0.6,b=2.6)", "psndcg@5(preset=amazon)", rke.metrics.psp(5, preset="amazon")],
        train=train_frame,
        missing_queries="zero",
    ).row(0)
    assert out[0] == pytest.approx(psprecision(scores["good"], test, inv_psp, 5)[4], rel=1e-12)
    assert out[1] == pytest.approx(float(psndcg(scores["good"], test, inv_psp, 5)[4]), rel=1e-6)
    assert out[2] == out[0]


def test_hand_computed_weights() -> None:
    # train: 4 instances; a in all 4, b in 1. C = (ln 4 - 1) * 2.5^0.55;
    # w_a = 1 + C * 5.5^-0.55, w_b = 1 + C * 2.5^-0.55 = ln 4
    train = pl.DataFrame({"query": [1, 2, 3, 4, 4], "item": ["a", "a", "a", "a", "b"]})
    log = pl.DataFrame(
        {
            "query": [9, 9, 9],
            "item": ["a", "z", "b"],
            "score": [3.0, 2.0, 1.0],
            "relevance": [1, 0, 1],
        }
    )
    c = (math.log(4) - 1) * 2.5**0.55
    w_a, w_b = 1 + c * 5.5**-0.55, 1 + c * 2.5**-0.55
    assert w_b == pytest.approx(math.log(4))
    out = rke.evaluate(log, ["psp@1", "psp@3", "psndcg@2", "psndcg@3"], train=train).row(0)
    assert out[0] == pytest.approx(w_a / w_b)
    assert out[1] == pytest.approx(1.0)  # both relevant items in the top 3
    ideal2 = 1 + 1 / math.log2(3)
    assert out[2] == pytest.approx((w_a / ideal2) / ((w_b + w_a / math.log2(3)) / ideal2))
    assert out[3] == pytest.approx((w_a + w_b / 2) / (w_b + w_a / math.log2(3)))


def test_options_names_and_refusals() -> None:
    assert rke.metrics.psp(5).name == "psp@5"
    assert rke.metrics.psndcg(5, a=0.5).name == "psndcg@5(a=0.5)"
    assert rke.metrics.psp(5, preset="wikipedia").name == "psp@5(preset=wikipedia)"
    assert isinstance(rke.metrics.psp(3), Metric)
    with pytest.raises(InvalidOptionError, match="preset"):
        rke.metrics.psp(5, preset="imdb")  # type: ignore[arg-type]
    with pytest.raises(InvalidOptionError, match="a= of 'psp'"):
        rke.metrics.psp(5, a=-1)
    with pytest.raises(InvalidOptionError, match="cutoff"):
        rke.evaluate(
            pl.DataFrame({"query": [1], "item": [1], "score": [1.0], "relevance": [1]}), ["psp"]
        )
    log = pl.DataFrame({"query": [1], "item": [1], "score": [1.0], "relevance": [1]})
    with pytest.raises(InvalidOptionError, match="train"):
        rke.evaluate(log, ["psp@1"])
    with pytest.raises(InvalidOptionError, match="ties='expected'"):
        rke.evaluate(log, ["psp@1"], train=log.select("query", "item"), ties="expected")


def test_a_per_system_metric_with_no_tie_bounds() -> None:
    train = pl.DataFrame({"query": [1, 2, 2], "item": ["a", "a", "b"]})
    log = pl.DataFrame(
        {"query": [9, 9], "item": ["a", "b"], "score": [1.0, 1.0], "relevance": [1, 1]}
    )
    with pytest.raises(InvalidOptionError, match="not by propensity weight"):
        rke.evaluate(log, ["psp@1"], train=train, ties="optimistic")
    with pytest.warns(rke.PerSystemMetricWarning, match="psndcg@2"):
        per_query = rke.evaluate(log, ["p@1", "psndcg@2"], train=train, per_query=True)
    assert "psndcg@2" not in per_query.columns
