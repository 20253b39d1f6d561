"""Discriminative power and topic-set size (``rke.discriminative_power``, ``rke.queries_needed``).

``queries_needed`` is checked against statsmodels' ``TTestPower`` (the one-sample t-test on the
per-query differences, which is the paired t-test) and against a simulation of paired t-tests
at the number of queries it gives; ``discriminative_power`` against counting ``compare``'s
significant pairs.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

import polars_rankeval as rke
from polars_rankeval.errors import InvalidOptionError


def _per_query(seed: int, n_queries: int = 200, systems: int = 4) -> pl.DataFrame:
    """Per-query scores of systems whose true means differ by 0.02 steps."""
    rng = np.random.default_rng(seed)
    base = rng.beta(2, 3, size=n_queries)
    rows = []
    for s in range(systems):
        values = np.clip(base + 0.02 * s + rng.normal(0, 0.08, size=n_queries), 0, 1)
        rows.extend((f"s{s}", f"q{q}", float(v)) for q, v in enumerate(values))
    return pl.DataFrame(rows, schema=["system", "query", "ndcg@10"], orient="row")


@pytest.mark.parametrize(
    ("delta", "power", "alpha"), [(0.01, 0.8, 0.05), (0.02, 0.9, 0.01), (0.05, 0.5, 0.1)]
)
def test_queries_needed_equals_statsmodels(delta: float, power: float, alpha: float) -> None:
    stats_power = pytest.importorskip("statsmodels.stats.power")
    table = _per_query(1)
    out = rke.queries_needed(table, delta=delta, power=power, alpha=alpha, baseline="s0")
    assert out.height == 3
    solver = stats_power.TTestPower()
    for row in out.iter_rows(named=True):
        effect = delta / row["sd_difference"]
        wanted = math.ceil(solver.solve_power(effect, alpha=alpha, power=power))
        assert row["queries_needed"] == max(wanted, 2)
        assert row["power_now"] == pytest.approx(
            solver.power(effect, nobs=row["n_queries"], alpha=alpha), abs=1e-9
        )
        # its own differences' standard deviation, independently
        wide = table.pivot(on="system", index="query", values="ndcg@10")
        d = (wide[row["system"]] - wide[row["baseline_system"]]).to_numpy()
        assert row["sd_difference"] == pytest.approx(float(np.std(d, ddof=1)), abs=1e-12)


def test_queries_needed_reaches_its_power_in_simulation() -> None:
    stats = pytest.importorskip("scipy.stats")
    sigma, delta = 0.1, 0.02
    rng = np.random.default_rng(0)
    d = rng.normal(delta, sigma, size=50_000)
    d = (d - d.mean()) / d.std(ddof=1) * sigma + delta  # exactly sigma
    table = pl.DataFrame(
        {
            "system": ["a"] * len(d) + ["b"] * len(d),
            "query": [f"q{i}" for i in range(len(d))] * 2,
            "ndcg@10": np.concatenate([np.zeros(len(d)), d]),
        }
    )
    n = rke.queries_needed(table, delta=delta)["queries_needed"].item()
    trials = 4000

    def rejected(size: int) -> float:
        samples = rng.normal(delta, sigma, size=(trials, size))
        return float(np.mean(stats.ttest_1samp(samples, 0.0, axis=1).pvalue < 0.05))

    standard_error = math.sqrt(0.8 * 0.2 / trials)
    assert rejected(n) >= 0.8 - 3 * standard_error
    assert rejected(n - n // 10) < 0.8  # 10% fewer queries: the power is not reached


def test_queries_needed_from_a_compare_output_equals_the_per_query_table() -> None:
    pytest.importorskip("scipy")
    table = _per_query(2)
    compared = rke.compare_per_query(table, by="system", baseline="s0", test="t")
    from_compare = rke.queries_needed(compared, delta=0.01)
    direct = rke.queries_needed(table, delta=0.01, baseline="s0")
    assert from_compare["queries_needed"].to_list() == direct["queries_needed"].to_list()
    assert from_compare["sd_difference"].to_list() == pytest.approx(
        direct["sd_difference"].to_list(), rel=1e-9
    )
    with pytest.raises(InvalidOptionError, match="test='t'"):
        rke.queries_needed(
            rke.compare_per_query(table, by="system", test="randomization", n_resamples=100),
            delta=0.01,
        )


def test_queries_needed_options_are_checked() -> None:
    table = _per_query(3)
    for kwargs, option in [
        ({"delta": 0}, "delta="),
        ({"delta": -0.1}, "delta="),
        ({"delta": 0.01, "power": 1.5}, "power="),
        ({"delta": 0.01, "alpha": 0}, "alpha="),
        ({"delta": 0.01, "metric": "map"}, "map"),
        ({"delta": 0.01, "by": "model"}, "model"),
    ]:
        with pytest.raises(InvalidOptionError, match=option):
            rke.queries_needed(table, **kwargs)  # type: ignore[arg-type]


def _log(seed: int) -> pl.DataFrame:
    """Four systems over 60 queries with true differences in how many relevant rows they rank."""
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(60):
        labels = rng.random(30) < 0.3
        for s, skill in enumerate([0.0, 0.1, 0.6, 1.2]):
            scores = rng.random(30) + skill * labels
            rows.extend(
                (f"s{s}", f"q{q}", f"d{i}", float(score), int(label))
                for i, (score, label) in enumerate(zip(scores, labels, strict=True))
            )
    return pl.DataFrame(
        rows, schema=["system", "query", "item", "score", "relevance"], orient="row"
    )


def test_discriminative_power_counts_compares_significant_pairs() -> None:
    pytest.importorskip("scipy")
    log = _log(0)
    metrics = ["ndcg@10", "p@5", "map"]
    power = rke.discriminative_power(log, metrics, by="system", test="t", correction="holm")
    compared = rke.compare(log, metrics, by="system", test="t", correction="holm")
    assert power["metric"].to_list() == metrics
    for row in power.iter_rows(named=True):
        pairs = compared.filter(pl.col("metric") == row["metric"])
        assert row["pairs"] == 6
        assert row["systems"] == 4
        assert row["significant"] == int(pairs["significant"].sum())
        assert row["discriminative_power"] == pytest.approx(row["significant"] / 6)
        significant = pairs.filter("significant")["delta"].abs()
        assert row["min_significant_delta"] == (significant.min() if len(significant) else None)
    # the same summary from the compare output itself
    again = rke.discriminative_power(compared)
    assert again.drop("alpha").equals(power.drop("alpha"))
    assert 0 < power["discriminative_power"].max() <= 1


def test_discriminative_power_defaults_to_randomized_tukey() -> None:
    pytest.importorskip("scipy")
    power = rke.discriminative_power(_log(1), ["ndcg@10"], by="system", n_resamples=2000)
    assert power["test"].item() == "tukey"
    assert power["pairs"].item() == 6


def test_discriminative_power_refuses_a_baseline_only_compare() -> None:
    pytest.importorskip("scipy")
    compared = rke.compare(_log(2), ["ndcg@10"], by="system", baseline="s0", test="t")
    with pytest.raises(InvalidOptionError, match="baseline=None"):
        rke.discriminative_power(compared)
    with pytest.raises(InvalidOptionError, match="by="):
        rke.discriminative_power(_log(2), ["ndcg@10"])


def test_queries_needed_refuses_repeated_rows_and_text_columns() -> None:
    table = pl.DataFrame(
        {"system": ["a", "a", "b"], "query": ["q", "q", "q"], "ndcg@10": [0.1, 0.2, 0.3]}
    )
    with pytest.raises(rke.DuplicateItemError, match="more than once"):
        rke.queries_needed(table, delta=0.01)
    text = _per_query(5).with_columns(pl.col("ndcg@10").cast(pl.String))
    with pytest.raises(rke.ColumnTypeError, match="numeric"):
        rke.queries_needed(text, delta=0.01)


def test_queries_needed_columns_and_two_key_columns() -> None:
    pytest.importorskip("scipy")
    table = _per_query(4, systems=3)
    out = rke.queries_needed(table, delta=0.02, baseline="s0")
    assert out.columns == [
        "metric",
        "system",
        "baseline_system",
        "n_queries",
        "sd_difference",
        "delta",
        "power",
        "alpha",
        "queries_needed",
        "power_now",
    ]
    assert out.select("system", "baseline_system").rows() == [("s1", "s0"), ("s2", "s0")]
    # two key columns (model, size) stay two columns, in their own types
    split = table.with_columns(
        pl.col("system").str.slice(0, 1).alias("model"),
        pl.col("system").str.slice(1).cast(pl.Int16).alias("size"),
    ).drop("system")
    two = rke.queries_needed(split, delta=0.02, by=["model", "size"], baseline=("s", 0))
    assert two.columns[:5] == ["metric", "model", "size", "baseline_model", "baseline_size"]
    assert two.schema["size"] == two.schema["baseline_size"] == pl.Int16
    assert two.select("model", "size", "baseline_model", "baseline_size").rows() == [
        ("s", 1, "s", 0),
        ("s", 2, "s", 0),
    ]
    assert two["queries_needed"].to_list() == out["queries_needed"].to_list()
