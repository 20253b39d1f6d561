"""The fairness metrics on every surface: each layer reads the metric's declaration.

compare, bootstrap, the gate, the command line, the namespaces and the convention preset all
reach the same numbers as ``evaluate``, and judge "better" by each metric's own direction
(``ee_l`` lower, ``awrf`` higher); the measures themselves are checked against their anchors
in ``test_trec_fair.py`` and ``test_toolkit.py``/``test_geyik.py``.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_rankeval as rke
from polars_rankeval._engine.tables import MissingTableError
from polars_rankeval.cli import main
from polars_rankeval.errors import InvalidOptionError, UnknownMetricError

pytestmark = pytest.mark.filterwarnings("ignore::polars_rankeval.UndefinedMetricWarning")


def _log(seed: int = 0, n_queries: int = 30) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Two systems: "fair" alternates groups down the list, "skewed" puts group big first."""
    rng = random.Random(seed)
    items = [f"d{i}" for i in range(20)]
    groups = pl.DataFrame({"item": items, "size": ["big"] * 10 + ["small"] * 10})
    rows = []
    for query in range(n_queries):
        chosen = rng.sample(items[:10], 5) + rng.sample(items[10:], 5)
        relevance = {item: rng.choice([0, 1, 1, 2]) for item in chosen}
        fair = [x for pair in zip(chosen[:5], chosen[5:], strict=True) for x in pair]
        for system, order in (("fair", fair), ("skewed", chosen)):
            for rank, item in enumerate(order):
                rows.append((system, query, item, float(10 - rank), relevance[item]))
    log = pl.DataFrame(rows, schema=["system", "query", "item", "score", "relevance"], orient="row")
    return log, groups


METRICS = ["ndcg@10", "awrf", "ndcg_awrf", "ee_l", "ee_r"]


def test_per_system_values_are_the_means_of_the_per_query_values() -> None:
    log, groups = _log()
    summary = rke.evaluate(log, METRICS, groups=groups, by="system")
    per_query = rke.evaluate(log, METRICS, groups=groups, by="system", per_query=True)
    means = per_query.group_by("system").agg(pl.col(METRICS).mean()).sort("system")
    assert_frame_equal(summary.sort("system"), means, rel_tol=1e-12)


def test_eager_lazy_and_parquet_agree(tmp_path: Path) -> None:
    log, groups = _log(1)
    log.write_parquet(tmp_path / "log.parquet")
    groups.write_parquet(tmp_path / "groups.parquet")
    eager = rke.evaluate(log, METRICS, groups=groups, by="system")
    lazy = rke.evaluate(
        pl.scan_parquet(tmp_path / "log.parquet"),
        METRICS,
        groups=str(tmp_path / "groups.parquet"),
        by="system",
    )
    assert isinstance(lazy, pl.LazyFrame)
    assert_frame_equal(lazy.collect(), eager)
    shuffled = rke.evaluate(
        log.sample(fraction=1.0, shuffle=True, seed=3), METRICS, groups=groups, by="system"
    )
    assert_frame_equal(shuffled, eager)


def test_compare_reads_each_metrics_direction() -> None:
    log, groups = _log(2)
    result = rke.compare(log, ["awrf", "ee_l"], by="system", baseline="skewed", groups=groups)
    rows = {row["metric"]: row for row in result.iter_rows(named=True)}
    assert rows["awrf"]["higher_is_better"] is True
    assert rows["ee_l"]["higher_is_better"] is False
    # the fair system is fairer on both: awrf higher and ee_l lower, so both are wins
    assert rows["awrf"]["delta"] > 0
    assert rows["ee_l"]["delta"] < 0
    assert rows["awrf"]["wins"] > rows["awrf"]["losses"]
    assert rows["ee_l"]["wins"] > rows["ee_l"]["losses"]


def test_compare_per_query_knows_the_columns_of_expected_exposure() -> None:
    log, groups = _log(3)
    per_query = rke.expected_exposure(log, groups=groups, sample=None, by="system", per_query=True)
    result = rke.compare_per_query(per_query, by="system", baseline="skewed", metrics=["ee_l"])
    assert result["higher_is_better"].to_list() == [False]
    assert result["direction_source"].to_list() == ["metric"]


def test_expected_exposure_with_one_sample_equals_evaluate() -> None:
    log, groups = _log(4)
    names = ["ee_l", "ee_d", "ee_r"]
    inside = rke.evaluate(log, names, groups=groups, by="system", per_query=True)
    outside = rke.expected_exposure(log, groups=groups, sample=None, by="system", per_query=True)
    assert_frame_equal(inside.sort("system", "query"), outside.sort("system", "query"))


def test_expected_exposure_evaluates_the_queries_evaluate_does() -> None:
    # query 2 has no judgment: evaluate leaves it out of ee_l (a metric that reads labels)
    log = pl.DataFrame(
        {
            "query": [1, 1, 2, 2],
            "item": ["a", "b", "a", "b"],
            "score": [2.0, 1.0, 2.0, 1.0],
            "relevance": [1, 0, None, None],
        }
    )
    groups = pl.DataFrame({"item": ["a", "b"], "size": ["big", "small"]})
    names = ["ee_l", "ee_d", "ee_r"]
    inside = rke.evaluate(log, names, groups=groups, per_query=True)
    outside = rke.expected_exposure(log, groups=groups, sample=None, per_query=True)
    assert_frame_equal(inside, outside)
    assert_frame_equal(
        rke.evaluate(log, names, groups=groups),
        rke.expected_exposure(log, groups=groups, sample=None),
    )


def test_the_gate_fails_a_candidate_that_is_less_fair() -> None:
    log, groups = _log(5)
    reference = log.filter(pl.col("system") == "fair").drop("system")
    candidate = log.filter(pl.col("system") == "skewed").drop("system")
    result = rke.check(candidate, reference, ["awrf"], fail_if=["awrf < -0.01"], groups=groups)
    assert not result.passed


def test_bootstrap_intervals_for_a_fairness_metric() -> None:
    log, groups = _log(6)
    table = rke.bootstrap(log, ["awrf"], by="system", groups=groups, n_resamples=200)
    assert set(table["system"].to_list()) == {"fair", "skewed"}
    means = rke.evaluate(log, ["awrf"], by="system", groups=groups).sort("system")
    assert table.sort("system")["value"].to_list() == pytest.approx(means["awrf"].to_list())


def test_namespaces_call_the_same_metrics() -> None:
    log, groups = _log(7)
    direct = rke.evaluate(log, ["awrf"], groups=groups, by="system")
    assert_frame_equal(log.rank_eval.awrf(groups=groups, by="system"), direct)
    assert_frame_equal(
        log.lazy().rank_eval.evaluate(["awrf"], groups=groups, by="system").collect(), direct
    )


def test_missing_groups_and_bad_options_are_refused() -> None:
    log, groups = _log(8)
    log = log.filter(pl.col("system") == "fair")
    with pytest.raises(MissingTableError, match="needs the groups table"):
        rke.evaluate(log, ["awrf"])
    with pytest.raises(InvalidOptionError, match="combo="):
        rke.evaluate(log, ["exp@10"], groups=groups)
    with pytest.raises(InvalidOptionError, match="group="):
        rke.evaluate(log, ["skew@10"], groups=groups)
    with pytest.raises(InvalidOptionError, match="combo="):
        rke.evaluate(log, ["awrf(p=0.5)"], groups=groups)
    with pytest.raises(InvalidOptionError, match="belong to FairRankTune"):
        rke.evaluate(log, ["awrf(attention=trec,p=0.5)"], groups=groups)
    with pytest.raises(InvalidOptionError, match="dimensions are"):
        rke.evaluate(log, ["awrf(dimension=gender)"], groups=groups)
    with pytest.raises(InvalidOptionError, match="no closed form"):
        rke.evaluate(log, ["awrf"], groups=groups, ties="expected")
    with pytest.raises(InvalidOptionError, match="not defined for 'awrf'"):
        rke.evaluate(log, ["awrf"], groups=groups, ties="optimistic")
    with pytest.raises(UnknownMetricError):
        rke.evaluate(log, ["awfr"], groups=groups)


def test_fairranktune_convention_defaults_and_refusals() -> None:
    log, groups = _log(9)
    log = log.filter(pl.col("system") == "fair")
    with pytest.raises(InvalidOptionError, match="combo="):
        rke.evaluate(log, ["awrf"], groups=groups, convention="fairranktune")
    with pytest.raises(InvalidOptionError):
        rke.evaluate(log, ["ndcg@10"], groups=groups, convention="fairranktune")
    # the preset's awrf is FairRankTune's attention form, named as asked
    preset = rke.evaluate(
        log, ["awrf(p=0.5,combo=min_max_ratio)"], groups=groups, convention="fairranktune"
    )
    explicit = rke.evaluate(
        log, ["awrf(attention=geometric,p=0.5,combo=min_max_ratio)"], groups=groups
    )
    assert preset.item() == explicit.item()


def test_the_command_line_reads_groups_and_targets(tmp_path: Path, capsys) -> None:
    log, groups = _log(10)
    log.write_parquet(tmp_path / "log.parquet")
    groups.write_parquet(tmp_path / "groups.parquet")
    target = tmp_path / "target.csv"
    pl.DataFrame({"group": ["big", "small"], "share": [0.5, 0.5]}).write_csv(target)
    status = main(
        [
            str(tmp_path / "log.parquet"),
            "--by",
            "system",
            "-m",
            "awrf,ee_l",
            "--groups",
            str(tmp_path / "groups.parquet"),
            "--group-target",
            str(target),
            "-f",
            "json",
        ]
    )
    assert status == 0
    shown = json.loads(capsys.readouterr().out)
    want = rke.evaluate(
        log, ["awrf", "ee_l"], by="system", groups=groups, group_target={"big": 0.5, "small": 0.5}
    )
    got = {row["system"]: row for row in (shown if isinstance(shown, list) else shown["rows"])}
    for row in want.iter_rows(named=True):
        assert float(got[row["system"]]["awrf"]) == pytest.approx(row["awrf"], abs=5e-5)
    status = main([str(tmp_path / "log.parquet"), "-m", "awrf"])
    assert status == 2
    assert "needs the groups table" in capsys.readouterr().err


def test_plot_data_is_the_group_exposure_summary() -> None:
    log, groups = _log(11)
    table = rke.group_exposure(log, groups=groups, by="system", k=10)
    data = rke.plot.group_exposure_data(table, by="system")
    assert_frame_equal(
        data,
        table.select(
            "system", "group", "share", "ci_low", "ci_high", "target", "verdict", "n_queries"
        ),
    )
    pytest.importorskip("altair")
    chart = rke.plot.group_exposure(table, by="system")
    assert chart.to_dict()["title"]["text"] == "Share of attention per group"
    # the skewed system gives big more than its share at the top of the list
    skewed = table.filter(system="skewed").sort("group")
    assert skewed["verdict"].to_list() == ["over", "under"]


def test_the_expression_form_inside_group_by() -> None:
    log, groups = _log(12)
    direct = rke.evaluate(log, ["awrf", "ee_l"], by="system", groups=groups).sort("system")
    inside = (
        log.group_by("system")
        .agg(
            rke.metric_expr("awrf", groups=groups),
            pl.col("relevance").rank_eval.ee_l(groups=groups),
        )
        .sort("system")
    )
    assert_frame_equal(inside, direct, rel_tol=1e-12)


def test_a_lazy_evaluations_warning_points_at_the_users_line() -> None:
    log, groups = _log(13)
    log = log.with_columns(
        pl.when(pl.col("query") == 0).then(0).otherwise(pl.col("relevance")).alias("relevance")
    )
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lazy = rke.evaluate(log.lazy(), ["ndcg_awrf"], by="system", groups=groups)  # this line
        lazy.collect()
    found = [w for w in caught if issubclass(w.category, rke.UndefinedMetricWarning)]
    assert found, [str(w.message) for w in caught]
    assert found[0].filename == __file__
    source = Path(__file__).read_text(encoding="utf-8").splitlines()
    assert "# this line" in source[found[0].lineno - 1]
