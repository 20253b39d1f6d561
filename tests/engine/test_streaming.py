"""Every metric plans onto the streaming engine, and evaluating a LazyFrame stays lazy.

For each metric family (and multi-metric evaluations with ``by=``, ``per_query=`` and
``missing_queries=``), the physical plan that the streaming engine would run over a
``pl.scan_parquet`` source must contain no in-memory fallback node: neither an
``in-memory-map`` nor any node drawn in the "in-memory engine fallback" colour.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_rankeval as rke
from polars_rankeval._engine.evaluate import evaluate_frame

# One metric string per family, with a cutoff where the family takes one.
METRICS = [
    "p@5",
    "recall@5",
    "success@5",
    "hit_rate@5",
    "hits@5",
    "f1@5",
    "judged@5",
    "map",
    "map@5",
    "mrr",
    "mrr@5",
    "ndcg",
    "ndcg@5",
    "dcg",
    "dcg@5",
    "r_precision",
    "bpref",
    "infap",
    "mar",
    "mar@5",
    "err",
    "err@5",
    "err@5(transform=sigmoid)",
    "rbp",
    "rbp(gain=binary)",
    "binG",
    "G",
    "ndcg_rel",
    "Rndcg",
    "rbp_resid",
    "iprec_at_recall(level=0.5)",
    "11pt_avg",
    "gm_map",
    "gm_bpref",
    "frp",
    "frp@5",
    "mean_rank",
    "mean_rank@5",
    "ndcg@5(gain=exp,ideal=retrieved)",
    "ndcg@5(gain={0:0,1:1,2:5})",
    "dcg@5(discount=jarvelin,log_base=10)",
    "spearman",
    "kendall_tau",
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "num_q",
    "set_p",
    "set_recall",
    "set_map",
    "set_f",
    "set_relative_p",
    "relative_p@5",
    "rprec_mult",
    "utility",
    "num_nonrel_judged_ret",
    "unj@5",
    # C/W/L (cwl_eval through ir_measures)
    "inst(max_rel=3)",
    "insq(t=2,max_rel=3)",
    "bpm@5(max_rel=3)",
    "sdcg@5(max_rel=3)",
    "nerr8@5(max_rel=3)",
    "nerr9@5(max_rel=3)",
    "nerr10(max_rel=3)",
    "nerr11(max_rel=3,output=ei)",
    # NTCIREVAL's graded family, Compat, Accuracy, NCG
    "q_measure",
    "ncu",
    "o_measure",
    "p_measure@5",
    "p_plus",
    "err_ntcir@5",
    "nerr_ntcir@5",
    "ndcg_orig@5",
    "msndcg@5",
    "compat",
    "accuracy@5",
    "ncg@5",
]

# Intent-aware (diversity) measures: they read each item's subtopic judgments
# (test_intent_aware_streams).
INTENT_AWARE = [
    "alpha_ndcg@5",
    "alpha_dcg@5",
    "err_ia@5",
    "nerr_ia@5",
    "nrbp",
    "nnrbp",
    "map_ia",
    "p_ia@5",
    "strec@5",
]

LOG = pl.DataFrame(
    {
        "system": ["A"] * 7 + ["B"] * 6,
        "query": ["q1", "q1", "q1", "q1", "q2", "q2", "q3", "q1", "q1", "q1", "q2", "q2", "q4"],
        "item": ["a", "b", "c", "z", "a", "d", "e", "a", "b", "c", "a", "d", "f"],
        # nulls: judged but not retrieved; ties within q1
        "score": [1.0, 1.0, 0.5, None, 2.0, None, 1.0, 0.1, 0.2, 0.3, None, None, 1.0],
        # nulls: retrieved but unjudged; -1: pooled but unjudged
        "relevance": [1, 0, None, 2, -1, 1, None, 1, 0, None, 3, 1, 2],
    }
)


def _family(name: str) -> str:
    if name in FAIRNESS_FAMILIES:  # options they cannot do without (combo=, group=)
        return name
    try:
        metric = rke.parse_metric(name)
    except rke.InvalidOptionError:  # a family that needs a cutoff, or a recall level
        try:
            metric = rke.parse_metric(f"{name}@5")
        except rke.InvalidOptionError:
            try:
                metric = rke.parse_metric(f"{name}(level=0.5)")
            except rke.InvalidOptionError:  # unexpectedness needs its baseline
                try:
                    metric = rke.parse_metric(f"{name}@5(baseline=A)")
                except rke.InvalidOptionError:  # the C/W/L measures need max_rel
                    try:
                        metric = rke.parse_metric(f"{name}(max_rel=1)")
                    except rke.InvalidOptionError:
                        metric = rke.parse_metric(f"{name}@5(max_rel=1)")
    return re.split(r"[@(]", metric.name)[0]


# Metrics that read extra tables (train=, items=, catalog=), checked in
# test_beyond_accuracy_streams; unexpectedness compares with system "A".
BEYOND_ACCURACY = [
    "novelty@5",
    "novelty@5(popularity=users)",
    "surprisal@5",
    "unseen@5",
    "arp@5",
    "arp@5(normalize=True)",
    "aplt@5",
    "aclt@5(tail=2)",
    "psp@5",
    "psndcg@5(preset=amazon)",
    "coverage@5",
    "coverage@5(of=train)",
    "entropy@5",
    "gini@5",
    "gini@5(over=catalog)",
    "personalization@5",
    "auc",
    "fall_out@5",
    "gauc",
    "ild@5",
    "ild@5(similarity=cooccurrence)",
    "categorical_diversity@5(category=genre)",
    "serendipity@5",
    "ils@5",
    "unexpectedness@5(baseline=A)",
]
TRAIN = pl.DataFrame({"query": ["q1", "q1", "q2", "q9"], "item": ["a", "b", "a", "e"]})
ITEMS = pl.DataFrame(
    {
        "item": ["a", "b", "c", "d", "e", "f", "z"],
        "embedding": [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.5, 0.2], [0.0, 0.0], [2, 1], [1, 3]],
        "genre": ["x", "y", "x", "z", "y", "x", "z"],
    }
)


# Fairness of exposure metrics (groups=, group_target=), checked in test_fairness_streams.
FAIRNESS = [
    "awrf",
    "awrf@3(dimension=size)",
    "ndcg_awrf",
    "ee_l",
    "ee_d",
    "ee_r(relevant_only=false)",
    "ndkl@3",
    "ndkl(distribution=list,epsilon=1e-7)",
    "skew@3(group=big,dimension=size)",
    "min_skew@3",
    "max_skew@3",
    "exp@3(combo=min_max_ratio)",
    "expu(combo=max_min_diff)",
    "expru@3(combo=max_min_ratio)",
    "awrf(p=0.5,combo=variance)",
]
FAIRNESS_FAMILIES = {re.split(r"[@(]", name)[0] for name in FAIRNESS}
# Every item of LOG has a group (the measures that refuse unknown items do not refuse here).
GROUPS = pl.DataFrame(
    {
        "item": ["a", "b", "c", "d", "e", "f", "z"],
        "size": ["big", "small", "big", "small", "big", "small", "big"],
        "region": [["eu"], ["us"], ["eu", "us"], ["asia"], ["eu"], ["us"], ["asia"]],
    }
)


def test_every_family_is_covered() -> None:
    covered = {_family(metric) for metric in METRICS + BEYOND_ACCURACY + INTENT_AWARE + FAIRNESS}
    assert {_family(name) for name in rke.known_metrics()} <= covered


@pytest.mark.parametrize("per_query", [False, True])
def test_beyond_accuracy_streams(log_path: Path, per_query: bool) -> None:
    """The ranking plan over the log streams; the rest runs on its per-query rows.

    Per-system metrics and finishing steps (diversity) need the per-query rows as a whole, so a
    LazyFrame result collects the streaming ranking plan once and finishes on its result
    (small: one row per list); ``raw=True`` exposes that ranking plan.
    """
    metrics = [
        name
        for name in BEYOND_ACCURACY
        if not (per_query and rke.parse_metric(name).level == "system")
    ]
    tables = {"train": TRAIN.lazy(), "items": ITEMS.lazy(), "catalog": 10}
    if per_query:  # only per-system metrics read the catalog (a table no metric reads warns)
        del tables["catalog"]
    scan = pl.scan_parquet(log_path)
    ranking = one_pass(scan, metrics, by="system", per_query=True, raw=True, **tables)
    assert isinstance(ranking, pl.LazyFrame)
    assert_streams(ranking)
    plan = one_pass(scan, metrics, by="system", per_query=per_query, **tables)
    assert isinstance(plan, pl.LazyFrame)
    eager = rke.evaluate(LOG, metrics, by="system", per_query=per_query, **tables)
    assert_frame_equal(plan.collect(engine="streaming"), eager, rel_tol=1e-12, abs_tol=1e-15)


@pytest.mark.filterwarnings("ignore::polars_rankeval.UndefinedMetricWarning")  # skew of q4
@pytest.mark.parametrize("per_query", [False, True])
def test_fairness_streams(log_path: Path, per_query: bool) -> None:
    """The ranking plan streams; the measures run on its per-query rows (the ranked lists)."""
    # expu and expru read labels in [0, 1] (FairRankTune's rule): LOG's labels are graded
    metrics = [name for name in FAIRNESS if not name.startswith(("expu", "expru"))]
    tables = {"groups": GROUPS.lazy(), "group_target": "uniform"}
    scan = pl.scan_parquet(log_path)
    ranking = one_pass(scan, metrics, by="system", per_query=True, raw=True, **tables)
    assert isinstance(ranking, pl.LazyFrame)
    assert_streams(ranking)
    plan = one_pass(scan, metrics, by="system", per_query=per_query, **tables)
    assert isinstance(plan, pl.LazyFrame)
    eager = rke.evaluate(LOG, metrics, by="system", per_query=per_query, **tables)
    assert_frame_equal(plan.collect(engine="streaming"), eager, rel_tol=1e-12, abs_tol=1e-15)


# LOG with each item's subtopic judgments, as join_run_qrels gives them from diversity qrels.
_JUDGMENTS = pl.List(pl.Struct({"subtopic": pl.String, "relevance": pl.Int64}))
DIVERSITY_LOG = LOG.with_columns(
    pl.Series(
        "subtopics",
        [
            [{"subtopic": "1", "relevance": 1}],
            [],
            None,
            [{"subtopic": "1", "relevance": 1}, {"subtopic": "2", "relevance": 2}],
            [],
            [{"subtopic": "2", "relevance": 1}],
            None,
            [{"subtopic": "1", "relevance": 1}],
            [],
            None,
            [{"subtopic": "1", "relevance": 3}],
            [{"subtopic": "2", "relevance": 1}],
            [{"subtopic": "3", "relevance": 2}],
        ],
        dtype=_JUDGMENTS,
    )
)


@pytest.mark.parametrize("per_query", [False, True])
def test_intent_aware_streams(tmp_path: Path, per_query: bool) -> None:
    """The ranking plan streams; the greedy ideal runs on its per-query rows."""
    path = tmp_path / "diversity.parquet"
    DIVERSITY_LOG.write_parquet(path)
    scan = pl.scan_parquet(path)
    ranking = one_pass(scan, INTENT_AWARE, by="system", per_query=True, raw=True)
    assert isinstance(ranking, pl.LazyFrame)
    assert_streams(ranking)
    plan = one_pass(scan, INTENT_AWARE, by="system", per_query=per_query)
    eager = rke.evaluate(DIVERSITY_LOG, INTENT_AWARE, by="system", per_query=per_query)
    assert_frame_equal(plan.collect(engine="streaming"), eager, rel_tol=1e-12, abs_tol=1e-15)


@pytest.fixture
def log_path(tmp_path: Path) -> Path:
    path = tmp_path / "log.parquet"
    LOG.write_parquet(path)
    return path


def _node_labels(dot: str) -> list[str]:
    """``(first label line, fill colour)`` of every node of a graphviz plan."""
    nodes = re.findall(r'^\s*\d+ \[label="((?:[^"\\]|\\.)*)"(.*?)\];\s*$', dot, flags=re.M)
    return [f"{label.split(chr(92) + 'n')[0]} {attrs.strip(',')}".strip() for label, attrs in nodes]


def one_pass(frame: pl.LazyFrame | pl.DataFrame, metrics: list[str], **options: object):
    """The single-pass plan, whose physical graph is the one to inspect.

    A LazyFrame's default (``n_buckets="auto"``) wraps the passes in ``pl.defer``, which shows
    as one ``streaming-python-scan`` node; each pass runs exactly this plan on one bucket.
    """
    return evaluate_frame(frame, metrics, n_buckets=1, **options)


def assert_streams(plan: pl.LazyFrame) -> None:
    dot = plan.show_graph(engine="streaming", plan_stage="physical", raw_output=True, show=False)
    assert isinstance(dot, str)
    labels = _node_labels(dot)
    assert labels, dot
    assert "in-memory-map" not in dot, f"in-memory-map in the streaming plan; nodes: {labels}"
    # the legend names the colour of in-memory fallback nodes; no node may carry it
    legend = re.search(r'COLOR="([^"]+)">⬤</FONT> in-memory engine fallback', dot)
    assert legend is not None, dot
    fallback = [label for label in labels if f'fillcolor="{legend[1]}"' in label]
    assert not fallback, f"in-memory fallback nodes {fallback}; all nodes: {labels}"


@pytest.mark.parametrize("per_query", [False, True])
@pytest.mark.parametrize("metric", METRICS)
def test_single_metric_streams(log_path: Path, metric: str, per_query: bool) -> None:
    plan = one_pass(pl.scan_parquet(log_path), [metric], per_query=per_query)
    assert isinstance(plan, pl.LazyFrame)
    assert_streams(plan)


@pytest.mark.parametrize("missing_queries", ["skip", "zero"])
@pytest.mark.parametrize("per_query", [False, True])
@pytest.mark.parametrize("by", [None, ["system"]])
def test_all_metrics_stream(
    log_path: Path, by: list[str] | None, per_query: bool, missing_queries: str
) -> None:
    options = {"by": by, "per_query": per_query, "missing_queries": missing_queries}
    plan = one_pass(pl.scan_parquet(log_path), METRICS, **options)
    assert isinstance(plan, pl.LazyFrame)
    assert_streams(plan)
    # and the streamed result equals the eager DataFrame path
    eager = rke.evaluate(LOG if by else LOG.filter(pl.col("system") == "A"), METRICS, **options)
    if not by:
        plan = one_pass(
            pl.scan_parquet(log_path).filter(pl.col("system") == "A"), METRICS, **options
        )
    assert_frame_equal(plan.collect(engine="streaming"), eager, rel_tol=1e-12, abs_tol=1e-15)


# Metrics with a closed-form expectation over tied scores.
EXPECTED_TIES = [
    "p@5",
    "recall@5",
    "success@5",
    "hits@5",
    "f1@5",
    "judged@5",
    "map",
    "map@5",
    "mrr",
    "mrr@5",
    "mar@5",
    "ndcg",
    "ndcg@5",
    "dcg@5",
    "r_precision",
    "rbp",
    "frp",
    "frp@5",
    "mean_rank@5",
]


@pytest.mark.parametrize("per_query", [False, True])
def test_expected_ties_stream(log_path: Path, per_query: bool) -> None:
    plan = one_pass(
        pl.scan_parquet(log_path), EXPECTED_TIES, ties="expected", by="system", per_query=per_query
    )
    assert_streams(plan)


def test_relevance_level_streams(log_path: Path) -> None:
    plan = one_pass(pl.scan_parquet(log_path), METRICS, by="system", relevance_level=2)
    assert_streams(plan)


def test_join_run_qrels_streams(tmp_path: Path) -> None:
    run_path, qrels_path = tmp_path / "run.parquet", tmp_path / "qrels.parquet"
    LOG.filter(pl.col("score").is_not_null()).select("query", "item", "score").unique(
        ["query", "item"]
    ).write_parquet(run_path)
    LOG.filter(pl.col("relevance").is_not_null()).select("query", "item", "relevance").unique(
        ["query", "item"]
    ).write_parquet(qrels_path)
    # LOG has queries with no judged row: the join says so before the plan is built.
    with pytest.warns(rke.QueryCoverageWarning):
        joined = rke.join_run_qrels(pl.scan_parquet(run_path), pl.scan_parquet(qrels_path))
    plan = one_pass(joined, METRICS, per_query=True)
    assert_streams(plan)


def test_lazy_input_reads_nothing_until_collect(log_path: Path) -> None:
    plan = rke.evaluate(pl.scan_parquet(log_path), METRICS, by="system", per_query=True)
    assert isinstance(plan, pl.LazyFrame)
    # building the plan read at most the schema: once the file is gone, only collect fails
    log_path.unlink()
    with pytest.raises(FileNotFoundError):
        plan.collect()


def test_lazy_result_equals_dataframe_result(log_path: Path) -> None:
    for per_query in (False, True):
        lazy = rke.evaluate(pl.scan_parquet(log_path), METRICS, by="system", per_query=per_query)
        eager = rke.evaluate(LOG, METRICS, by="system", per_query=per_query)
        assert isinstance(eager, pl.DataFrame)
        for engine in ("in-memory", "streaming"):
            assert_frame_equal(lazy.collect(engine=engine), eager, rel_tol=1e-12, abs_tol=1e-15)


def test_each_pass_of_a_bucketed_evaluation_streams(log_path: Path) -> None:
    # evaluate(n_buckets=3) runs this plan on each hash bucket of the query ids
    bucket = pl.col("query").hash(0x5EED) % 3 == 1
    plan = one_pass(pl.scan_parquet(log_path).filter(bucket), METRICS, by="system")
    assert_streams(plan)


def test_default_lazy_plan_defers_its_passes(log_path: Path) -> None:
    plan = rke.evaluate(pl.scan_parquet(log_path), METRICS, by="system", per_query=True)
    dot = plan.show_graph(engine="streaming", plan_stage="physical", raw_output=True, show=False)
    assert "streaming-python-scan" in dot
    assert "in-memory-map" not in dot
    assert_frame_equal(
        plan.collect(),
        one_pass(pl.scan_parquet(log_path), METRICS, by="system", per_query=True).collect(),
        rel_tol=1e-12,
        abs_tol=1e-15,
    )
