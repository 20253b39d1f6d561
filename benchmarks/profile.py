"""Where the time of one evaluation goes, stage by stage (benchmark only, never a test).

    python benchmarks/profile.py                       # the suite's 10M log, standard suite
    python benchmarks/profile.py --rows 1e6 --metrics map,kendall_tau --repeat 5
    python benchmarks/profile.py --alone --metrics map,kendall_tau,spearman   # per metric
    python benchmarks/profile.py --alternatives        # the plans tried for issue 29

Each stage is a query that runs everything before it plus one more step, timed in this warm
process (best of ``--repeat``); the increment is what that step adds:

* scan: read the four columns;
* order window: the flags and the one full-size window, the per-list rank in trec_eval's order;
* sparse windows: the running counts / ideal order the metrics read, over their own rows only;
* group-by: the metrics' partial aggregations per ranked list;
* checks: the full per-query plan, i.e. plus the value checks (duplicates, null ids, NaN
  scores) and the query selection;
* mean: ``evaluate`` in one pass; passes: ``evaluate`` with its default bounded passes (which
  spill the input into hash buckets above ``ROWS_PER_PASS`` rows). Both pass
  ``tie_warning=None``, as the suite's ``rke_lazy`` row does: the default tie check of a
  LazyFrame evaluates every tied list again and is timed by the eager benchmarks.

The Polars floor (one scan, one float rank window, one group-by sum) is printed for scale.
Every line gives the wall time and the CPU seconds of this process (all threads): on a shared
machine the wall time moves with the other processes' load, the CPU time much less.

With ``--alone``, each metric is timed on its own instead: ``evaluate`` in one pass, and the
expression namespace (``group_by("query").agg(pl.col("relevance").rank_eval.metric(...))``
on the collected frame, which runs the same plan per group).

With ``--alternatives``, the plans tried against today's window plan (issue 29), alternated
in this process, each checked to give the same values and to stream or not
(:func:`alternatives`).
"""

from __future__ import annotations

import argparse
import re
import resource
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import polars as pl
from polars.testing import assert_frame_equal

import polars_rankeval as rke
from polars_rankeval._engine.columns import make_columns
from polars_rankeval._engine.context import _context, _row_flags, ranked_frame, trec_key
from polars_rankeval._engine.plan import metric_plan, per_query_plan
from polars_rankeval._engine.settings import settings_for
from polars_rankeval._names.registry import resolve_metrics

HERE = Path(__file__).resolve().parent
SUITE = "ndcg@10,map,mrr,p@10,recall@100"
COLUMNS = make_columns(query="query", item="item", score="score", relevance="relevance", by=None)


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
    columns = COLUMNS
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
        "mean (one pass)": rke.evaluate(lf, metrics, n_buckets=1, tie_warning=None).collect,
        "passes (default)": rke.evaluate(lf, metrics, tie_warning=None).collect,
    }


def alone(lf: pl.LazyFrame, metrics: list[str], repeat: int) -> None:
    """Each metric on its own: the frame path in one pass and the expression namespace."""
    frame = lf.collect()
    print(f"{'metric':<20} {'evaluate':>10} {'expression':>10}")
    for metric in metrics:
        framed, _ = best_of(rke.evaluate(lf, [metric], n_buckets=1).collect, repeat)
        expression = pl.col("relevance").rank_eval.metric(metric)
        grouped, _ = best_of(lambda e=expression: frame.group_by("query").agg(e), repeat)
        print(f"{metric:<20} {framed:10.3f} {grouped:10.3f}")


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def best_of(run: Callable[[], object], repeat: int) -> tuple[float, float]:
    """The best wall time and the best CPU time (this process, all threads) of ``repeat`` runs."""
    walls, cpus = [], []
    for _ in range(repeat):
        start, cpu = time.perf_counter(), _cpu()
        run()
        walls.append(time.perf_counter() - start)
        cpus.append(_cpu() - cpu)
    return min(walls), min(cpus)


# ---- the plans tried for issue 29 ------------------------------------------------------------


def streams(plan: pl.LazyFrame) -> bool:
    """Whether the streaming engine runs ``plan`` with no in-memory fallback node.

    The same reading of the physical graph as tests/engine/test_streaming.py.
    """
    dot = plan.show_graph(engine="streaming", plan_stage="physical", raw_output=True, show=False)
    assert dot is not None
    legend = re.search(r'COLOR="([^"]+)">⬤</FONT> in-memory engine fallback', dot)
    fallback = legend is not None and f'fillcolor="{legend[1]}"' in dot
    return "in-memory-map" not in dot and not fallback


def _trec_order(lf: pl.LazyFrame) -> pl.LazyFrame:
    """Today's order: one window ranking (retrieved, score, item string) per list."""
    key = trec_key(pl.col("score"), pl.col("item"))
    return lf.with_columns(key.rank("ordinal", descending=True).over("query").alias("order"))


def _sorted_keys() -> list[pl.Expr]:
    score = pl.col("score")
    return [score.is_not_null(), score, pl.col("item").cast(pl.String)]


def _order_by_window(lf: pl.LazyFrame) -> pl.LazyFrame:
    """Today's order as positions in a window sorted by the three keys (``over(order_by=)``)."""
    position = pl.int_range(1, pl.len() + 1, dtype=pl.get_index_type())
    order = position.over("query", order_by=_sorted_keys(), descending=True, nulls_last=True)
    return lf.with_columns(order.alias("order"))


def _arg_sort_order(lf: pl.LazyFrame) -> pl.LazyFrame:
    """Today's order as the inverse of a multi-column arg sort (column by column comparisons).

    The keys are compared one column after the other, so the item string is read only where
    scores tie, where the struct's rank encodes every row's string.
    """
    sorted_rows = pl.arg_sort_by(_sorted_keys(), descending=True, nulls_last=True)
    return lf.with_columns((sorted_rows.arg_sort() + 1).over("query").alias("order"))


def _float_ranks(lf: pl.LazyFrame) -> pl.LazyFrame:
    """The first window of a split order: the float score's first and last rank per list.

    Not the order by itself (tied rows share it): the cheapest start any split order has.
    """
    score = pl.col("score")
    return lf.with_columns(
        score.rank("min", descending=True).over("query").alias("first"),
        score.rank("max", descending=True).over("query").alias("last"),
        score.count().over("query").alias("n_retrieved"),
    )


def _split_order(lf: pl.LazyFrame) -> pl.LazyFrame:
    """Today's order from float ranks, with the item rule only where scores tie.

    A row with a score no other row of its list has sits at its float rank. Tied and
    unretrieved rows (about 9% of the suite's log) take their place inside their tie group
    from a second window over those rows only: their rank by the item string in (list, first
    rank), and the unretrieved rows follow the retrieved ones.
    """
    score, item = pl.col("score"), pl.col("item").cast(pl.String)
    ranks = _float_ranks(lf)
    tied = score.is_null() | (pl.col("last") > pl.col("first"))
    start = pl.when(score.is_not_null()).then(pl.col("first")).otherwise(pl.col("n_retrieved") + 1)
    inside = item.rank("ordinal", descending=True).over(["query", "first"])
    return pl.concat(
        [
            ranks.filter(tied).with_columns((start - 1 + inside).alias("order")),
            ranks.filter(~tied).with_columns(pl.col("first").alias("order")),
        ]
    )


def _group_plan(lf: pl.LazyFrame, metrics: list[str]) -> pl.LazyFrame:
    """Plan (b): every rank inside ``group_by(list).agg(...)``, no window over the frame.

    The metrics' own partials over a context whose ranks are per-group expressions; only for
    the suite's defaults (trec ties, relevance level 1, trec_eval's query selection, no value
    checks), to time the ranking.
    """
    preset, settings = settings_for("trec_eval", {})
    resolved = resolve_metrics(metrics, preset)
    flags = _row_flags(pl.col("relevance"), pl.col("score"), settings.relevance_level)
    order = trec_key(pl.col("score"), pl.col("item")).rank("ordinal", descending=True)
    gain, unused = flags["gain"], pl.lit(None, dtype=pl.UInt32)
    hit = flags["relevant"] & flags["retrieved"]
    refs = {
        **flags,
        "rank": pl.when(flags["retrieved"]).then(order),
        "relevant_rank": pl.when(hit).then(order).rank("ordinal"),
        "judged_rank": unused,
        "labelled_rank": unused,
        "ideal_rank": pl.when(gain > 0).then(gain).rank("ordinal", descending=True),
        "num_rel": flags["relevant"].sum(),
        "num_judged_nonrel": unused,
        "max_label": unused,
    }
    ctx = _context(
        refs,
        rel_weight=flags["relevant"].cast(pl.Float64),
        judged_weight=flags["judged"].cast(pl.Float64),
        over=lambda expr: expr,
        running_sum=lambda expr: expr.cum_sum(),
    )
    partials: dict[str, pl.Expr] = {}
    for _, metric in resolved:
        partials.update(metric.partials(ctx))
    # trec_eval's query selection: the lists with a judgment and a retrieved row
    counts = {"n_labelled": flags["has_label"].sum(), "n_retrieved": flags["retrieved"].sum()}
    grouped = lf.group_by("query").agg(**partials, **counts)
    evaluated = grouped.filter((pl.col("n_labelled") > 0) & (pl.col("n_retrieved") > 0))
    values = [metric.value(pl.col).alias(label) for label, metric in resolved]
    return evaluated.select("query", *values).sort("query")


def _window_plan(lf: pl.LazyFrame, metrics: list[str]) -> pl.LazyFrame:
    """Today's per-query plan (windows, then one group-by), its metric columns."""
    preset, settings = settings_for("trec_eval", {})
    resolved = resolve_metrics(metrics, preset)
    plan = per_query_plan(lf, COLUMNS, resolved, settings)
    return plan.select("query", *(label for label, _ in resolved))


def _hits(ranked: pl.LazyFrame, k: int) -> pl.LazyFrame:
    relevant = (pl.col("relevance") >= 1).fill_null(value=False)
    in_top = (pl.col("order") <= k) & pl.col("score").is_not_null()
    return ranked.group_by("query").agg((relevant & in_top).sum().alias("hits")).sort("query")


def _top_k_threshold(lf: pl.LazyFrame, k: int) -> pl.LazyFrame:
    """Plan (a), streaming: keep the rows scored at least the list's k-th best, then rank.

    A row above the threshold has every row that precedes it in trec_eval's order above it
    too, so its rank among the kept rows is its rank; every other row ranks below k.
    """
    threshold = pl.col("score").top_k(k).min().over("query")
    return _hits(_trec_order(lf.filter(pl.col("score") >= threshold)), k)


def _rank_threshold(lf: pl.LazyFrame, k: int) -> pl.LazyFrame:
    """Plan (a), streaming: keep the rows with fewer than k higher scores, then rank them.

    The float score's first rank per list is a window the streaming engine runs (a
    ``top_k`` inside a window is not); a row it puts at most at k keeps every row that
    precedes it in trec_eval's order, and every other row ranks below k.
    """
    first = pl.col("score").rank("min", descending=True).over("query")
    return _hits(_trec_order(lf.filter(first <= k)), k)


def _top_k_by(lf: pl.LazyFrame, k: int) -> pl.LazyFrame:
    """Plan (a) as ``group_by(list).agg(top_k_by(key, k))``: each list's top k rows."""
    key = trec_key(pl.col("score"), pl.col("item"))
    relevant = (pl.col("relevance") >= 1).fill_null(value=False) & pl.col("score").is_not_null()
    top = relevant.top_k_by(key, k).sum().alias("hits")
    return lf.group_by("query").agg(top.cast(pl.UInt32)).sort("query")


def alternatives(lf: pl.LazyFrame, metrics: list[str], repeat: int) -> None:
    """Each plan tried for issue 29 against today's, alternated, its values checked equal."""
    k = 10

    def order_sums(ordered: pl.LazyFrame) -> pl.LazyFrame:
        order = pl.col("order").cast(pl.Float64)
        return ordered.select(order.sum().alias("sum"), (order * order).sum().alias("squares"))

    def first_sums(ranked: pl.LazyFrame) -> pl.LazyFrame:
        first = pl.col("first").cast(pl.Float64)
        return ranked.select(first.sum().alias("sum"), (first * first).sum().alias("squares"))

    groups = {
        "order (the one full-size window)": {
            "today: rank over (retrieved, score, item string)": order_sums(_trec_order(lf)),
            "float ranks only (first, last; not an order)": first_sums(_float_ranks(lf)),
            "split: float ranks, item rule on tied rows": order_sums(_split_order(lf)),
            "int_range over(list, order_by=three keys)": order_sums(_order_by_window(lf)),
            "arg_sort_by(three keys).arg_sort() over list": order_sums(_arg_sort_order(lf)),
        },
        f"hits@{k} per list (cutoff metrics: top k only)": {
            "today: window over every row": _hits(_trec_order(lf), k),
            "(a) threshold top_k(k).min().over(list), then window": _top_k_threshold(lf, k),
            "(a) float first rank <= k, then window": _rank_threshold(lf, k),
            "(a) group_by(list).agg(top_k_by(key, k))": _top_k_by(lf, k),
        },
        f"per-query plan ({', '.join(metrics)})": {
            "today: windows, then group_by": _window_plan(lf, metrics),
            "(b) ranks inside group_by(list).agg(...)": _group_plan(lf, metrics),
        },
    }
    for title, plans in groups.items():
        print(f"\n{title}")
        print(f"{'plan':<56} {'wall':>7} {'ratio':>6} {'CPU':>7} {'ratio':>6}  streams  same")
        results = {name: plan.collect(engine="streaming") for name, plan in plans.items()}
        reference = next(iter(results.values()))
        best = {name: (float("inf"), float("inf")) for name in plans}
        for _ in range(repeat):  # alternated: the machine's load moves all of them alike
            for name, plan in plans.items():
                wall, cpu = best_of(partial(plan.collect, engine="streaming"), 1)
                best[name] = (min(best[name][0], wall), min(best[name][1], cpu))
        base_wall, base_cpu = next(iter(best.values()))
        for name, plan in plans.items():
            wall, cpu = best[name]
            if name.startswith("float ranks only"):
                same = "n/a"
            else:
                try:
                    assert_frame_equal(results[name], reference, check_dtypes=False)
                    same = "yes"
                except AssertionError:
                    same = "NO"
            print(
                f"{name:<56} {wall:7.3f} {wall / base_wall:5.2f}x {cpu:7.3f} "
                f"{cpu / base_cpu:5.2f}x  {'yes' if streams(plan) else 'no':<7}  {same}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", default="1e7", help="rows of the suite's generated log")
    parser.add_argument("--path", help="a Parquet log instead (query, item, score, relevance)")
    parser.add_argument("--metrics", default=SUITE, help="comma-separated metric names")
    parser.add_argument("--repeat", type=int, default=3, help="runs per stage (best is kept)")
    parser.add_argument("--alone", action="store_true", help="time each metric on its own")
    parser.add_argument(
        "--alternatives", action="store_true", help="time the plans tried for issue 29"
    )
    args = parser.parse_args()
    if args.path:
        path = Path(args.path)
    else:
        import sys

        sys.path.insert(0, str(HERE))
        from suite import data_file, machine

        path = data_file(int(float(args.rows)))
        print(f"Machine: {machine()}")
    lf = pl.scan_parquet(path)
    metrics = args.metrics.split(",")
    rows = lf.select(pl.len()).collect().item()
    print(f"{path.name}: {rows:,} rows; metrics {', '.join(metrics)}; best of {args.repeat}")
    floor_wall, floor_cpu = best_of(floor(lf).collect, args.repeat)
    print(f"{'Polars floor':<20} {floor_wall:10.3f} s {floor_cpu:8.3f} s CPU")
    if args.alone:
        alone(lf, metrics, args.repeat)
        return
    if args.alternatives:
        alternatives(lf, metrics, args.repeat)
        return
    print(f"{'stage':<20} {'cumulative':>10} {'step':>8} {'CPU':>8}")
    previous = 0.0
    for name, run in stages(lf, metrics).items():
        seconds, cpu = best_of(run, args.repeat)
        # the last two are whole evaluations, not increments over the stage before
        step = (
            f"{seconds - previous:8.3f}"
            if name in ("order window", "sparse windows", "group-by", "checks")
            else " " * 8
        )
        print(f"{name:<20} {seconds:10.3f} {step} {cpu:8.3f}")
        previous = seconds if not name.startswith(("mean", "passes")) else previous


if __name__ == "__main__":
    main()
