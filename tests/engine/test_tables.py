"""The extra tables (train=, items=, catalog=), per-system metrics and empty_queries=.

Metrics here are small custom :class:`Metric` objects (the public way to add a metric), so
these tests check the plumbing every beyond-accuracy family relies on; expected values are
counted by hand from the tiny logs.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_rankeval as rke
from polars_rankeval._engine.tables import (
    CATALOG_N,
    POPULARITY,
    SEEN,
    SEEN_IN_TRAIN,
    TRAIN_USERS,
    Tables,
)
from polars_rankeval.metrics._base import Metric, per_group

LOG = pl.DataFrame(
    {
        "system": ["a", "a", "a", "a", "a", "b", "b", "b"],
        "query": [1, 1, 1, 2, 2, 1, 1, 2],
        "item": ["x", "y", "z", "x", "w", "x", "y", "x"],
        "score": [3.0, 2.0, 1.0, 2.0, 1.0, 2.0, 1.0, 1.0],
        "relevance": [1, 0, None, 0, 1, 1, 1, 0],
    }
)
# x: users 1, 2, 3 (4 rows: user 3 twice); y: user 3; z, w: never
TRAIN = pl.DataFrame({"query": [1, 2, 3, 3, 3], "item": ["x", "x", "y", "x", "x"]})


def mean_train_users(k: int) -> Metric:
    """Mean number of distinct train users of the top-k items (label-free)."""
    return Metric(
        f"mean_train_users@{k}",
        partials=lambda ctx: {"users": pl.col(TRAIN_USERS).filter(ctx.within(k)).mean()},
        value=lambda p: p("users"),
        needs=("train",),
        inputs=(POPULARITY,),
        reads_labels=False,
    )


def seen_share(k: int) -> Metric:
    return Metric(
        f"seen@{k}",
        partials=lambda ctx: {"seen": pl.col(SEEN).filter(ctx.within(k)).mean()},
        value=lambda p: p("seen"),
        needs=("train",),
        inputs=(SEEN_IN_TRAIN,),
        reads_labels=False,
    )


def distinct_items(k: int) -> Metric:
    """Distinct top-k items of a whole run over the catalog size: a per-system metric."""

    def reduce(frame: pl.LazyFrame, by: Sequence[str], label: str, tables: Tables) -> pl.LazyFrame:
        size = tables.catalog_items(label)
        exploded = frame.select(*by, pl.col(label)).explode(label)
        counted = per_group(exploded, by, pl.col(label).drop_nulls().n_unique().alias("d"))
        joined = counted.join(size, how="cross")
        return joined.select(*by, (pl.col("d") / pl.col(CATALOG_N)).alias(label))

    return Metric(
        f"distinct@{k}",
        partials=lambda ctx: {"items": ctx.item.filter(ctx.within(k)).unique().implode()},
        value=lambda p: p("items"),
        level="system",
        needs=("catalog",),
        reads_labels=False,
        reduce=reduce,
    )


def test_row_inputs_join_train_popularity_and_seen_pairs() -> None:
    out = rke.evaluate(LOG, [mean_train_users(2), seen_share(2)], by="system", train=TRAIN)
    # a/q1 top-2 x (3 users), y (1) -> 2; a/q2 x (3), w (0) -> 1.5; mean 1.75
    # b/q1 x, y -> 2; b/q2 x -> 3; mean 2.5
    # seen: a/q1 x seen by user 1 -> 1/2; a/q2 x seen by 2 -> 1/2; b: q1 1/2, q2 1
    expected = pl.DataFrame(
        {"system": ["a", "b"], "mean_train_users@2": [1.75, 2.5], "seen@2": [0.5, 0.75]}
    )
    assert_frame_equal(out, expected)


def test_per_system_metric_sits_beside_the_means() -> None:
    metrics = ["p@2", distinct_items(2)]
    out = rke.evaluate(LOG, metrics, by="system", catalog=8)
    # a: top-2 items {x, y} U {x, w} = 3 distinct; b: {x, y} U {x} = 2
    # p@2: a q1 1/2, q2 1/2 -> 0.5; b q1 2/2, q2 0 -> 0.5
    expected = pl.DataFrame({"system": ["a", "b"], "p@2": [0.5, 0.5], "distinct@2": [3 / 8, 2 / 8]})
    assert_frame_equal(out, expected)
    whole = rke.evaluate(LOG.filter(pl.col("system") == "a"), [distinct_items(2)], catalog=8)
    assert whole.to_dicts() == [{"distinct@2": 3 / 8}]


@pytest.mark.parametrize("n_buckets", [1, 2, 5])
def test_same_result_lazy_eager_and_in_passes(n_buckets: int) -> None:
    metrics = ["ndcg@2", mean_train_users(2), distinct_items(2)]
    eager = rke.evaluate(LOG, metrics, by="system", train=TRAIN, catalog=8)
    lazy = rke.evaluate(
        LOG.lazy(), metrics, by="system", train=TRAIN.lazy(), catalog=8, n_buckets=n_buckets
    )
    assert isinstance(lazy, pl.LazyFrame)
    assert_frame_equal(lazy.collect(), eager)


def test_tables_and_per_system_metrics_stream(tmp_path: Path) -> None:
    from tests.engine.test_streaming import assert_streams

    LOG.write_parquet(tmp_path / "log.parquet")
    TRAIN.write_parquet(tmp_path / "train.parquet")
    metrics = ["p@2", mean_train_users(2), seen_share(2), distinct_items(2)]
    for per_query in (False, True):
        if per_query:  # the per-system metric is left out of per-query rows
            metrics = metrics[:3]
        plan = rke.evaluate(
            pl.scan_parquet(tmp_path / "log.parquet"),
            metrics,
            by="system",
            train=pl.scan_parquet(tmp_path / "train.parquet"),
            # only the per-system metric reads the catalog (an unread table warns)
            catalog=None if per_query else 8,
            n_buckets=1,
            per_query=per_query,
        )
        assert isinstance(plan, pl.LazyFrame)
        assert_streams(plan)


def test_tables_from_paths(tmp_path: Path) -> None:
    train_path = tmp_path / "train.parquet"
    TRAIN.write_parquet(train_path)
    csv_path = tmp_path / "catalog.csv"
    pl.DataFrame({"item": ["x", "y", "z", "w", "v"]}).write_csv(csv_path)
    out = rke.evaluate(
        LOG,
        [mean_train_users(2), distinct_items(2)],
        by="system",
        train=train_path,
        catalog=str(csv_path),
    )
    assert out["mean_train_users@2"].to_list() == [1.75, 2.5]
    assert out["distinct@2"].to_list() == [3 / 5, 2 / 5]


def test_per_query_leaves_per_system_metrics_out_and_says_so() -> None:
    with pytest.warns(rke.PerSystemMetricWarning, match=r"'distinct@2' is a per-system metric"):
        out = rke.evaluate(LOG, ["p@2", distinct_items(2)], by="system", catalog=8, per_query=True)
    assert out.columns == ["system", "query", "p@2"]


def test_missing_table_is_named() -> None:
    with pytest.raises(
        rke.InvalidOptionError, match=r"'mean_train_users@2' needs the train table: pass train="
    ):
        rke.evaluate(LOG, [mean_train_users(2)], by="system")
    with pytest.raises(rke.InvalidOptionError, match=r"needs the catalog table"):
        rke.evaluate(LOG, [distinct_items(2)], by="system")


def test_bad_tables_are_refused_with_the_option() -> None:
    with pytest.raises(rke.ColumnNotFoundError, match=r"'query' .* not in the train= table"):
        rke.evaluate(
            LOG, [mean_train_users(2)], by="system", train=TRAIN.rename({"query": "customer"})
        )
    with pytest.raises(
        rke.ColumnTypeError,
        match=r"train= table is Int32 but the log's item column \('item'\) is String",
    ):
        rke.evaluate(
            LOG,
            [mean_train_users(2)],
            by="system",
            train=TRAIN.with_columns(pl.lit(1).alias("item")),
        )
    with pytest.raises(rke.InvalidOptionError, match=r"option train=: no file"):
        rke.evaluate(LOG, [mean_train_users(2)], by="system", train="/nonexistent/train.parquet")
    with pytest.raises(
        rke.InvalidOptionError, match=r"catalog= must be a table of items or a positive int"
    ):
        rke.evaluate(LOG, [distinct_items(2)], by="system", catalog=0)
    with pytest.raises(rke.InvalidOptionError, match=r"cannot tell the format"):
        rke.evaluate(LOG, [mean_train_users(2)], by="system", train=__file__)


def test_tables_may_use_the_usual_key_names() -> None:
    # a log made from lists names its item column after the list; the tables say "item"
    log = LOG.rename({"item": "recommended", "query": "user"})
    out = rke.evaluate(
        log, [mean_train_users(2)], by="system", query="user", item="recommended", train=TRAIN
    )
    assert out["mean_train_users@2"].to_list() == [1.75, 2.5]


def test_integer_ids_of_another_width_are_matched() -> None:
    log = LOG.with_columns(pl.col("item").replace_strict({"x": 1, "y": 2, "z": 3, "w": 4}))
    train = TRAIN.with_columns(
        pl.col("item").replace_strict({"x": 1, "y": 2}).cast(pl.Int32),
        pl.col("query").cast(pl.UInt8),
    )
    out = rke.evaluate(log, [mean_train_users(2), seen_share(2)], by="system", train=train)
    assert out["mean_train_users@2"].to_list() == [1.75, 2.5]
    assert out["seen@2"].to_list() == [0.5, 0.75]


def test_label_free_metrics_evaluate_every_list_and_need_no_relevance_column() -> None:
    unlabelled = LOG.drop("relevance")
    out = rke.evaluate(unlabelled, [mean_train_users(2)], by="system", train=TRAIN)
    assert out["mean_train_users@2"].to_list() == [1.75, 2.5]
    # Beside a label-reading metric each keeps its own rule: p@2 (trec's) skips a list without
    # judgments (null there), the label-free metric still evaluates it, as alone.
    log = LOG.with_columns(
        pl.when(pl.col("query") == 2).then(None).otherwise(pl.col("relevance")).alias("relevance")
    )
    both = rke.evaluate(log, ["p@2", mean_train_users(2)], by="system", train=TRAIN, per_query=True)
    assert both["query"].to_list() == [1, 2, 1, 2]
    assert both["p@2"].is_null().to_list() == [False, True, False, True]
    alone = rke.evaluate(log, [mean_train_users(2)], by="system", train=TRAIN, per_query=True)
    assert alone["query"].to_list() == [1, 2, 1, 2]
    assert_frame_equal(both.drop("p@2"), alone)


def test_empty_queries_drop_counts_what_it_drops() -> None:
    # a/q2 has a relevant row (w); make b/q2 (only x, label 0) the one with nothing relevant
    kept = rke.evaluate(LOG, ["p@2"], by="system", per_query=True)
    assert kept.height == 4
    with pytest.warns(rke.EmptyQueriesWarning, match=r"left out 1 of 4 evaluated queries"):
        dropped = rke.evaluate(LOG, ["p@2"], by="system", per_query=True, empty_queries="drop")
    assert dropped.select("system", "query").rows() == [("a", 1), ("a", 2), ("b", 1)]
    with pytest.warns(rke.EmptyQueriesWarning, match=r"left out 1 of 4"):
        means = rke.evaluate(LOG.lazy(), ["p@2"], by="system", empty_queries="drop").collect()
    assert means["p@2"].to_list() == [0.5, 1.0]
    zero = rke.evaluate(LOG, ["p@2"], by="system")
    assert zero["p@2"].to_list() == [0.5, 0.5]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rke.evaluate(LOG.filter(pl.col("query") == 1), ["p@2"], by="system", empty_queries="drop")
    with pytest.raises(rke.InvalidOptionError, match="empty_queries"):
        rke.evaluate(LOG, ["p@2"], by="system", empty_queries="skip")  # type: ignore[arg-type]


def test_expression_path_reads_tables_and_refuses_per_system_metrics() -> None:
    out = (
        LOG.group_by("system").agg(rke.metric_expr(mean_train_users(2), train=TRAIN)).sort("system")
    )
    assert out["mean_train_users@2"].to_list() == [1.75, 2.5]
    dropped = (
        LOG.group_by("system").agg(rke.metric_expr("p@2", empty_queries="drop")).sort("system")
    )
    assert dropped["p@2"].to_list() == [0.5, 1.0]
    with pytest.raises(rke.InvalidOptionError, match=r"per-system metric .* rke.evaluate"):
        rke.metric_expr(distinct_items(2), catalog=8)


def test_compare_passes_tables_and_refuses_per_system_metrics() -> None:
    out = rke.compare(LOG, [mean_train_users(2)], by="system", baseline="a", train=TRAIN)
    assert out["baseline_overall"].to_list() == [1.75]
    assert out["system_overall"].to_list() == [2.5]
    with pytest.raises(rke.InvalidOptionError, match=r"per-system value"):
        rke.compare(LOG, [distinct_items(2)], by="system", baseline="a", catalog=8)


def test_command_line_reads_tables_and_drops_empty_queries(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from polars_rankeval.cli import main

    log_path, train_path = tmp_path / "log.parquet", tmp_path / "train.parquet"
    LOG.write_parquet(log_path)
    TRAIN.write_parquet(train_path)
    code = main([str(log_path), "--by", "system", "-m", "p@2", "--empty-queries", "drop"])
    out, err = capsys.readouterr()
    assert code == 0
    assert "left out 1 of 4 evaluated queries" in err
    assert "│ b      ┆ 1.0000 │" in out
    code = main([str(log_path), "--by", "system", "-m", "p@2", "--train", str(tmp_path / "no")])
    assert code == 2
    assert "no file or directory" in capsys.readouterr().err
