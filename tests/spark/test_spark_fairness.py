"""``polars_rankeval.spark.evaluate`` computes the fairness metrics as the local ``evaluate``.

The workers rank each list and return its rows (the fairness metrics' partial); the driver
joins them to ``groups=`` and the target and finishes them with the local code, so the values
equal the local ones for every way the tables are given.
"""

from __future__ import annotations

import shutil

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_rankeval as rke

pytest.importorskip("pyspark")
if shutil.which("java") is None:  # pragma: no cover - depends on the machine
    pytest.skip("Spark needs a Java runtime: no `java` on the PATH", allow_module_level=True)

from polars_rankeval import spark as rke_spark

pytestmark = [
    pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning"),
    pytest.mark.filterwarnings("ignore::polars_rankeval.UndefinedMetricWarning"),
]

LOG = pl.DataFrame(
    {
        "system": ["a"] * 6 + ["b"] * 6,
        "query": [1, 1, 1, 2, 2, 2] * 2,
        "item": ["x", "y", "z", "x", "w", "v"] * 2,
        "score": [3.0, 2.0, 2.0, 1.0, 0.5, 0.2, 1.0, 2.0, 3.0, 0.1, 0.5, 0.9],
        "relevance": [1, 0, 2, 1, 1, 0] * 2,
    }
)
GROUPS = pl.DataFrame(
    {
        "item": ["x", "y", "z", "w", "v"],
        "size": ["big", "big", "small", "small", "big"],
        "region": [["eu"], ["us", "eu"], ["us"], ["eu"], ["asia"]],
    }
)
METRICS = ["ndcg@10", "awrf", "awrf(dimension=size)", "ndcg_awrf", "ee_l", "ee_r"]


@pytest.mark.parametrize("per_query", [False, True])
def test_fairness_metrics_equal_the_local_ones(spark, per_query: bool) -> None:
    target = pl.DataFrame(
        {"dimension": ["size", "size", "region", "region", "region"],
         "group": ["big", "small", "eu", "us", "asia"],
         "share": [0.5, 0.5, 0.4, 0.4, 0.2]}
    )  # fmt: skip
    options = {"by": "system", "per_query": per_query, "groups": GROUPS, "group_target": target}
    local = rke.evaluate(LOG, METRICS, **options)
    on_spark = rke_spark.evaluate(
        spark.createDataFrame(LOG.to_arrow()).repartition(2),
        METRICS,
        **{**options, "groups": spark.createDataFrame(GROUPS.to_arrow())},
    )
    got = pl.from_arrow(on_spark.toArrow())
    assert isinstance(got, pl.DataFrame)
    keys = ["system", "query"] if per_query else ["system"]
    assert_frame_equal(
        got.sort(keys), local.sort(keys), check_dtypes=False, rel_tol=1e-12, abs_tol=1e-15
    )
