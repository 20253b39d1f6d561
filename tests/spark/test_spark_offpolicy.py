"""``polars_rankeval.spark.off_policy`` and ``slate_off_policy`` equal the local functions.

The local functions are checked against obp, vw-estimators and brute force in
``tests/offpolicy/``; here the Spark route (parts summed per partition, merged on the driver)
must give the same values, standard errors, intervals and diagnostics on the logs of
``data/offpolicy/`` spread over several partitions, and a worker's check must reach the user
as the local error.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import polars_rankeval as rke

pytest.importorskip("pyspark")
if shutil.which("java") is None:  # pragma: no cover - depends on the machine
    pytest.skip("Spark needs a Java runtime: no `java` on the PATH", allow_module_level=True)

from polars_rankeval import spark as rke_spark

DATA = Path(__file__).resolve().parents[2] / "data" / "offpolicy"
# pyspark's check of pandas (which mapInArrow runs) warns about pandas 3, which the rest of the
# suite installs; the off-policy route does not use pandas.
pytestmark = pytest.mark.filterwarnings(
    "ignore:PySpark does not yet fully support pandas:FutureWarning"
)
NUMBERS = ["value", "se", "ci_low", "ci_high", "ess", "max_weight", "mean_weight"]


def _spark_frame(spark, frame: pl.DataFrame, partitions: int):
    return spark.createDataFrame(frame.to_arrow()).repartition(partitions)


def _same(local: pl.DataFrame, on_spark) -> None:
    got = pl.from_arrow(on_spark.toArrow())
    assert isinstance(got, pl.DataFrame)
    keys = [c for c in local.columns if c not in NUMBERS and c != "n_queries"]
    got = got.sort(keys)
    local = local.sort(keys)
    assert got.select(keys).equals(local.select(keys))
    assert got["n_queries"].to_list() == local["n_queries"].to_list()
    for column in NUMBERS:
        np.testing.assert_allclose(
            got[column].cast(pl.Float64).to_numpy(),
            local[column].cast(pl.Float64).to_numpy(),
            rtol=1e-9,
            atol=1e-12,
        )


def test_bandit_event_form_equals_the_local_estimates(spark) -> None:
    log = pl.read_parquet(DATA / "bandit.parquet")
    options = {
        "target": ["pi_new", "pi_greedy"],
        "reward_model": "q_hat",
        "target_reward_model": {"pi_new": "dm_new", "pi_greedy": "dm_greedy"},
        "by": "device",
        "clip": 30.0,
    }
    names = "ips,snips,dm,dr,sndr"
    local = rke.off_policy(log, names, **options)
    _same(local, rke_spark.off_policy(_spark_frame(spark, log, 3), names, **options))


def test_bandit_candidate_form_equals_the_local_estimates(spark) -> None:
    log = pl.read_parquet(DATA / "bandit_candidates.parquet")
    options = {
        "target": ["pi_new", "pi_greedy"],
        "reward_model": "q_hat",
        "logged": "logged",
        "query": "query",
        "item": "action",
    }
    local = rke.off_policy(log, "ips,dm,dr", **options)
    on_spark = rke_spark.off_policy(_spark_frame(spark, log, 4), "ips,dm,dr", **options)
    _same(local, on_spark)


def test_slates_equal_the_local_estimates(spark) -> None:
    log = pl.read_parquet(DATA / "slates.parquet")
    options = {
        "propensity": {"conditional": "propensity", "item_position": "propensity"},
        "target": ["pi_new", "pi_top"],
        "by": "device",
    }
    names = "sips,iips,rips,snsips,sniips,pi"
    local = rke.slate_off_policy(log, names, **options)
    _same(local, rke_spark.slate_off_policy(_spark_frame(spark, log, 3), names, **options))


def test_a_workers_check_is_raised_as_the_local_error(spark) -> None:
    log = pl.read_parquet(DATA / "bandit.parquet").with_columns(
        propensity=pl.when(pl.col("query") == 17).then(0.0).otherwise(pl.col("propensity"))
    )
    with pytest.raises(rke.ColumnValueError, match=r"propensity.*query=17"):
        rke_spark.off_policy(_spark_frame(spark, log, 2), target="pi_new", query="query").collect()


def test_options_are_checked_on_the_driver(spark) -> None:
    log = pl.read_parquet(DATA / "bandit.parquet").head(10)
    with pytest.raises(rke.UnknownMetricError, match="ipss"):
        rke_spark.off_policy(_spark_frame(spark, log, 1), "ipss", target="pi_new")
    with pytest.raises(rke.ColumnNotFoundError, match="nope"):
        rke_spark.off_policy(_spark_frame(spark, log, 1), target="nope")
