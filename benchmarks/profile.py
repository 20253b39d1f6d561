"""Where the time of one evaluation goes, stage by stage (benchmark only, never a test).

    python benchmarks/profile.py                       # the suite's 10M log, standard suite
    python benchmarks/profile.py --rows 1e6 --metrics map,kendall_tau --repeat 5
    python benchmarks/profile.py --alone --metrics map,kendall_tau,spearman   # per metric

Each stage is a query that runs everything before it plus one more step, timed in this warm
process (best of ``--repeat``); the increment is what that step adds:

* scan: read the four columns;
* order window: the flags and the one full-size window, the per-list rank in trec_eval's order;
* sparse windows: the running counts / ideal order the metrics read, over their own rows only;
* group-by: the metrics' partial aggregations per ranked list;
* checks: the full per-query plan, i.e. plus the value checks (duplicates, null ids, NaN
  scores) and the query selection;
* mean: ``evaluate`` in one pass; passes: ``evaluate`` with its default bounded passes (which
  spill the input into hash buckets above ``ROWS_PER_PASS`` rows).

The Polars floor (one scan, one float rank window, one group-by sum) is printed for scale.
With ``--alone``, each metric is timed on its own instead: ``evaluate`` in one pass, and the
expression namespace (``group_by("query").agg(pl.col("relevance").rank_eval.metric(...))``
on the collected frame, which runs the same plan per group).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

import polars as pl

import polars_rankeval as rke
from polars_rankeval._engine.columns import make_columns
from polars_rankeval._engine.context import ranked_frame
from polars_rankeval._engine.plan import metric_plan, per_query_plan
from polars_rankeval._engine.settings import settings_for
from polars_rankeval._names.registry import resolve_metrics

HERE = Path(__file__).resolve().parent
SUITE = "ndcg@10,map,mrr,p@10,recall@100"


def floor(lf: pl.LazyFrame) -> pl.LazyFrame:
    """The suite's Polars floor: one scan, one rank window, one group-by sum."""
    return (
        lf.select("query", "score", "relevance")
        .with_columns(pl.col("score").rank().over("query").alias("rank"))
        .group_by("query")
        .agg(pl.col("rank").sum(), pl.col("relevance").sum())
        .select(pl.col("rank").sum(), pl.col("relevance").sum())
    )


def stages(lf: pl.LazyFrame, metrics: list[str]) -> dict[str, Callable[[], object]]:
    """Cumulative plans, one per stage, built from the library's own plan builders."""
    columns = make_columns(
        query="query", item="item", score="score", relevance="relevance", by=None
    )
    preset, settings = settings_for("trec_eval", {})
    resolved = resolve_metrics(metrics, preset)
    ranked = ranked_frame(lf, columns, settings.relevance_level)
    ctx = ranked.trec
    pending = [(label, metric, ctx, "") for label, metric in resolved]
    built = metric_plan(ranked, pending, [])
    sparse_sums = [pl.col(name).sum() for name in built.sparse_columns] or [ctx.rank.sum()]
    grouped = built.frame.group_by(columns.partition).agg(**built.partials)
    plan = per_query_plan(lf, columns, resolved, settings)
    return {
        "scan": lf.select(pl.all().null_count()).collect,
        "order window": ranked.frame.select(ctx.rank.sum()).collect,
        "sparse windows": built.sparse.select(sparse_sums).collect,
        "group-by": grouped.select(pl.exclude(columns.partition).sum()).collect,
        "checks": plan.select(pl.exclude(columns.partition).sum()).collect,
        "mean (one pass)": rke.evaluate(lf, metrics, n_buckets=1).collect,
        "passes (default)": rke.evaluate(lf, metrics).collect,
    }


def alone(lf: pl.LazyFrame, metrics: list[str], repeat: int) -> None:
    """Each metric on its own: the frame path in one pass and the expression namespace."""
    frame = lf.collect()
    print(f"{'metric':<20} {'evaluate':>10} {'expression':>10}")
    for metric in metrics:
        framed = best_of(rke.evaluate(lf, [metric], n_buckets=1).collect, repeat)
        expression = pl.col("relevance").rank_eval.metric(metric)
        grouped = best_of(lambda e=expression: frame.group_by("query").agg(e), repeat)
        print(f"{metric:<20} {framed:10.3f} {grouped:10.3f}")


def best_of(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", default="1e7", help="rows of the suite's generated log")
    parser.add_argument("--path", help="a Parquet log instead (query, item, score, relevance)")
    parser.add_argument("--metrics", default=SUITE, help="comma-separated metric names")
    parser.add_argument("--repeat", type=int, default=3, help="runs per stage (best is kept)")
    parser.add_argument("--alone", action="store_true", help="time each metric on its own")
    args = parser.parse_args()
    if args.path:
        path = Path(args.path)
    else:
        import sys

        sys.path.insert(0, str(HERE))
        from suite import data_file

        path = data_file(int(float(args.rows)))
    lf = pl.scan_parquet(path)
    metrics = args.metrics.split(",")
    rows = lf.select(pl.len()).collect().item()
    print(f"{path.name}: {rows:,} rows; metrics {', '.join(metrics)}; best of {args.repeat}")
    print(f"{'Polars floor':<20} {best_of(floor(lf).collect, args.repeat):8.3f} s")
    if args.alone:
        alone(lf, metrics, args.repeat)
        return
    print(f"{'stage':<20} {'cumulative':>10} {'step':>8}")
    previous = 0.0
    for name, run in stages(lf, metrics).items():
        seconds = best_of(run, args.repeat)
        # the last two are whole evaluations, not increments over the stage before
        step = (
            f"{seconds - previous:8.3f}"
            if name in ("order window", "sparse windows", "group-by", "checks")
            else " " * 8
        )
        print(f"{name:<20} {seconds:10.3f} {step}")
        previous = seconds if not name.startswith(("mean", "passes")) else previous


if __name__ == "__main__":
    main()
