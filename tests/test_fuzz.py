"""Fuzz ``evaluate`` with random frames: nulls, NaN, infinities, odd dtypes, empty groups,
duplicates, bad metric strings and options. Each call must either return values in range or
raise one of the documented errors (subclasses of ``RankEvalError``), never a Polars panic or
any other exception.
"""

from __future__ import annotations

import math
import warnings

import polars as pl
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import polars_rankeval as rke

BOUNDED = {"p@3", "recall@5", "success@2", "f1@3", "judged@3", "map", "map@3", "mrr", "ndcg"}
BOUNDED |= {"ndcg@3", "r_precision", "bpref", "infap", "err@5", "rbp", "mar", "ndcg@3(gain=exp)"}
CORRELATIONS = {"spearman", "kendall_tau"}
COUNTS = {"num_ret", "num_rel", "num_rel_ret", "num_q", "hits@3"}
GOOD = sorted(BOUNDED | CORRELATIONS | COUNTS | {"dcg@3", "frp@3", "mean_rank"})
BAD = ["ndgc@3", "p@0", "p", "bpref@3", "ndcg@3(foo=1)", "map@x", ""]

ID_VALUES = {
    "int": st.integers(-3, 12),
    "str": st.sampled_from(["a", "b", "10", "9", "é", ""]),
}
# Odd values stay a minority, so most frames get evaluated and their values checked.
SCORES = st.one_of(
    *[st.sampled_from([0.0, -0.0, 1.0, 1.0, 2.5, 3.0])] * 6,
    st.none(),
    st.floats(allow_nan=True, allow_infinity=True, width=64),
)
LABELS = st.one_of(st.none(), st.integers(-2, 4))


@st.composite
def frames(draw: st.DrawFn) -> pl.DataFrame:
    n = draw(st.integers(0, 14))
    query_kind = draw(st.sampled_from(["int", "str"]))
    item_kind = draw(st.sampled_from(["int", "str"]))
    rare_null = draw(st.sampled_from([False] * 5 + [True]))

    def ids(kind: str) -> st.SearchStrategy[object]:
        return st.one_of(st.none(), ID_VALUES[kind]) if rare_null else ID_VALUES[kind]

    queries = draw(st.lists(ids(query_kind), min_size=n, max_size=n))
    items = draw(st.lists(ids(item_kind), min_size=n, max_size=n))
    scores = draw(st.lists(SCORES, min_size=n, max_size=n))
    labels = draw(st.lists(LABELS, min_size=n, max_size=n))
    frame = pl.DataFrame(
        {"query": queries, "item": items, "score": scores, "relevance": labels},
        schema={
            "query": pl.Int64 if query_kind == "int" else pl.String,
            "item": pl.Int64 if item_kind == "int" else pl.String,
            "score": pl.Float64,
            "relevance": pl.Int64,
        },
    )
    casts = {
        "query": draw(st.sampled_from([None, pl.Categorical, pl.String])),
        "score": draw(st.sampled_from([None, pl.Float32, pl.Int32, pl.String, pl.Boolean])),
        "relevance": draw(
            st.sampled_from([None, pl.Float64, pl.Int8, pl.UInt8, pl.String, pl.Boolean])
        ),
    }
    for column, dtype in casts.items():
        if dtype == pl.Categorical:  # categorical from strings only
            frame = frame.with_columns(pl.col(column).cast(pl.String).cast(pl.Categorical))
        elif dtype is not None:
            frame = frame.with_columns(pl.col(column).cast(dtype, strict=False))
    return frame


OPTIONS = st.fixed_dictionaries(
    {"duplicates": st.sampled_from(["first", "first", "max_score", "last", "error"])},
    optional={
        "ties": st.sampled_from(["trec", "expected", "random"]),
        "relevance_level": st.sampled_from([0, 1, 2, 1.5]),
        "missing_queries": st.sampled_from(["skip", "zero"]),
        "nan_scores": st.sampled_from(["error", "last"]),
        "per_query": st.booleans(),
        "n_buckets": st.sampled_from([1, 2, "auto"]),
    },
)


def _check_values(result: pl.DataFrame) -> None:
    for column in result.columns:
        if column == "query":
            continue
        for value in result[column].to_list():
            if value is None:
                continue
            if column in CORRELATIONS:
                assert math.isnan(value) or -1.0 - 1e-12 <= value <= 1.0 + 1e-12, (column, value)
            elif column in BOUNDED:
                assert 0.0 <= value <= 1.0 + 1e-12, (column, value)
            elif column in COUNTS:
                assert value >= 0, (column, value)
            else:
                assert not math.isnan(value), (column, value)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    frame=frames(),
    metrics=st.lists(st.sampled_from(GOOD), min_size=1, max_size=4, unique=True),
    bad_metric=st.one_of(st.none(), st.none(), st.none(), st.sampled_from(BAD)),
    options=OPTIONS,
    lazy=st.booleans(),
)
def test_evaluate_returns_values_in_range_or_a_documented_error(
    frame, metrics, bad_metric, options, lazy
):
    if bad_metric is not None:
        metrics = [*metrics, bad_metric]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rke.EmptyEvaluationWarning)
        try:
            result = rke.evaluate(frame.lazy() if lazy else frame, metrics, **options)
            if lazy:
                result = result.collect()
        except rke.RankEvalError as error:
            event(f"documented error: {type(error).__name__}")
            return
    event("result")
    _check_values(result)
