"""Sampled against full evaluation, side by side: values, leaderboard ranks, rank correlation."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from polars_rankeval._engine.columns import by_list
from polars_rankeval._engine.evaluate import evaluate
from polars_rankeval._engine.vocabulary import METRIC
from polars_rankeval.agreement.correlation import Method, rank_correlation
from polars_rankeval.conventions import ConventionName
from polars_rankeval.errors import ColumnValueError, InvalidOptionError
from polars_rankeval.sampling._correction import (
    Correction,
    check_correction,
    metric_by_rank,
    solve,
)
from polars_rankeval.sampling._frames import SHOWN, align, read, require
from polars_rankeval.sampling._log import RELEVANCE, full_log, sampled_log, scored_inputs
from polars_rankeval.sampling._negatives import POSITIVE

#: The system column of the results when ``by`` names several columns (joined by " / ").
SYSTEM = "system"


@dataclass(frozen=True)
class SampledVsFull:
    """Sampled and full evaluation of the same systems, side by side.

    Attributes
    ----------
    values
        One row per (metric, system): ``metric``, the ``by`` column(s), ``full``, ``sampled``
        (and ``corrected``), and each leaderboard's rank of the system, ``rank_full``,
        ``rank_sampled`` (and ``rank_corrected``): 1 = best, ties share the lowest rank.
    agreement
        One row per metric and compared leaderboard (``sampled``, ``corrected``): the rank
        correlation with the full leaderboard (``coefficient``, by
        :func:`~polars_rankeval.rank_correlation`'s ``method``), ``n_systems`` and
        ``discordant``, the system pairs the two leaderboards order the other way round.
    """

    values: pl.DataFrame
    agreement: pl.DataFrame


def _sampled_ranks(
    log: pl.DataFrame, by: list[str], query: str, convention: ConventionName
) -> pl.DataFrame:
    """Each list's sampled rank of its positive, read from evaluate's reciprocal rank."""
    per_list = evaluate(
        log,
        ["recip_rank"],
        per_query=True,
        by=by or None,
        query=query,
        convention=convention,
        tie_warning=None,  # the sampled evaluation itself has already warned about ties
    )
    counts = log.group_by([*by, query]).agg(
        (pl.col(RELEVANCE) == 0).sum().alias("_negatives"),
        (pl.col(RELEVANCE) == 1).sum().alias("_positives"),
    )
    several = counts.filter(pl.col("_positives") != 1)
    if several.height:
        shown = several.sort([*by, query]).head(SHOWN).select([*by, query]).rows()
        msg = (
            f"estimator= needs exactly one positive per list (Krichene & Rendle's setting), but "
            f"{several.height} list(s) have several, e.g. {shown}; draw the negatives with "
            "per='positive' (each positive its own list) or leave estimator=None"
        )
        raise InvalidOptionError(msg)
    return per_list.join(counts, on=[*by, query]).with_columns(
        (1.0 / pl.col("recip_rank")).round(0).cast(pl.Int64).alias("_sampled_rank")
    )


def _corrected(
    sampled: pl.DataFrame,
    full: pl.LazyFrame,
    *,
    metrics: list[str],
    by: list[str],
    query: str,
    estimator: Correction,
    gamma: float,
    convention: ConventionName,
) -> pl.DataFrame:
    """Each system's corrected value: the mean over its lists of the sampled rank's credit."""
    lists = _sampled_ranks(sampled, by, query, convention).join(
        full.group_by([*by, query]).len(name="_items").collect(engine="streaming"),
        on=[*by, query],
    )
    longest = int(lists["_items"].max())  # type: ignore[arg-type]
    shapes = lists.select("_items", "_negatives").unique().sort("_items", "_negatives").rows()
    columns = {}
    for metric in metrics:
        # the metric depends on the rank alone (checked), so one curve serves every length
        curve = metric_by_rank(metric, longest, {"convention": convention})
        credit = np.zeros(lists.height)
        n_items = lists["_items"].to_numpy()
        n_negatives = lists["_negatives"].to_numpy()
        rank = lists["_sampled_rank"].to_numpy()
        for items, negatives in shapes:
            table = solve(curve[:items], negatives, estimator, gamma)
            here = (n_items == items) & (n_negatives == negatives)
            credit[here] = table[rank[here] - 1]
        columns[metric] = credit
    credited = lists.select([*by, query]).with_columns(
        [pl.Series(name, values) for name, values in columns.items()]
    )
    if not by:
        return credited.select(pl.col(metrics).mean())
    return credited.group_by(by).agg(pl.col(metrics).mean())


def _long(values: pl.DataFrame, by: list[str], metrics: list[str], name: str) -> pl.DataFrame:
    long = values.unpivot(metrics, index=by, variable_name=METRIC, value_name=name)
    return long.select(METRIC, *by, name)


def sampled_vs_full(
    data: object,
    positives: object,
    metrics: Sequence[str] | str,
    *,
    negatives: object,
    train: object = None,
    by: str | Sequence[str] = "system",
    estimator: Correction | None = None,
    gamma: float | None = None,
    method: Method = "kendall",
    convention: ConventionName = "trec_eval",
    query: str = "query",
    item: str = "item",
    score: str = "score",
) -> SampledVsFull:
    """Each system evaluated on sampled negatives and on the full catalog, side by side.

    Parameters
    ----------
    data
        Every system's score for every item each user may be recommended (``by`` columns,
        ``query``, ``item``, ``score``); rows of items in ``train`` are left out.
    positives
        The relevant (held-out) items (``query``, ``item``).
    metrics
        Metric names, as :func:`~polars_rankeval.evaluate` reads them.
    negatives
        :func:`sample_negatives`' output; with its ``positive`` column each positive is ranked
        alone, in both evaluations (full: among every item its user has not interacted with,
        the user's other positives left out).
    train
        The training interactions (``query``, ``item``): left out of full evaluation; a
        negative among them is an error.
    by
        The column(s) naming the systems.
    estimator
        ``None`` (default), ``"bv"`` or ``"cls"``: add Krichene & Rendle's corrected value
        (:func:`sampled_correction`), which needs one positive per list. Each list is
        corrected for its own length (its full candidates) and number of negatives.
    gamma
        ``"bv"``'s trade-off in [0, 1] (default 0.1).
    method
        How the leaderboards are correlated (:func:`~polars_rankeval.rank_correlation`).
    convention
        The preset the metrics follow, in both evaluations.
    query, item, score
        The column names.

    Returns
    -------
    SampledVsFull
        ``values`` (per metric and system: both values and both ranks) and ``agreement`` (per
        metric: the rank correlation of the full leaderboard with the sampled one and the
        corrected one).

    Examples
    --------
    >>> import polars as pl
    >>> scores = pl.DataFrame(
    ...     {
    ...         "system": ["a"] * 4 + ["b"] * 4,
    ...         "query": [1] * 8,
    ...         "item": [0, 1, 2, 3] * 2,
    ...         "score": [4.0, 3.0, 2.0, 1.0, 1.0, 2.0, 3.0, 4.0],
    ...     }
    ... )
    >>> positives = pl.DataFrame({"query": [1], "item": [1]})
    >>> negatives = pl.DataFrame({"query": [1], "item": [3]})
    >>> out = sampled_vs_full(scores, positives, "recip_rank", negatives=negatives)
    >>> out.values.select("system", "full", "sampled").rows()
    [('a', 0.5, 1.0), ('b', 0.3333333333333333, 0.5)]
    """
    names, systems, weight = _options(metrics, by, estimator, gamma)
    scored, held = scored_inputs(data, positives, by=systems, query=query, item=item, score=score)
    drawn = read(negatives, "negatives")
    seen = None if train is None else _train(train, drawn, held, scored, query=query, item=item)
    sampled = sampled_log(scored, held, drawn, by=systems, query=query, item=item, score=score)
    full = full_log(
        scored, held, seen, per_positive=POSITIVE in drawn.columns, query=query, item=item
    )
    options = {"by": systems, "query": query, "convention": convention}
    boards = {
        # lazy: evaluated in bounded passes over buckets of lists
        "full": evaluate(full, names, **options).collect(),  # type: ignore[arg-type]
        "sampled": evaluate(sampled, names, **options),  # type: ignore[arg-type]
    }
    if estimator is not None:
        boards["corrected"] = _corrected(
            sampled,
            full,
            metrics=names,
            by=systems,
            query=query,
            estimator=estimator,
            gamma=weight,
            convention=convention,
        )
    return _side_by_side(boards, names, systems, method)


def _options(
    metrics: Sequence[str] | str,
    by: str | Sequence[str],
    estimator: object,
    gamma: object,
) -> tuple[list[str], list[str], float]:
    names = [metrics] if isinstance(metrics, str) else list(metrics)
    if not names:
        msg = "option metrics= must name at least one metric"
        raise InvalidOptionError(msg)
    systems = by_list(by)
    if not systems:
        msg = "option by= must name the column(s) of the systems to compare"
        raise InvalidOptionError(msg)
    if estimator is not None:
        return names, systems, check_correction(estimator, gamma)[1]
    if gamma is not None:
        msg = "option gamma= needs estimator='bv'"
        raise InvalidOptionError(msg)
    return names, systems, 0.0


def _train(
    train: object,
    drawn: pl.DataFrame,
    held: pl.DataFrame,
    scored: pl.DataFrame,
    *,
    query: str,
    item: str,
) -> pl.DataFrame:
    """The train interactions in the scores' dtypes, checked against the other tables.

    A negative or a positive among them is an error: the full lists leave train out, so
    either would silently change them.
    """
    seen = read(train, "train")
    require(seen, [query, item], "train")
    require(drawn, [query, item], "negatives")
    tables = {"train": seen.select(query, item), "negatives": drawn.select(query, item)}
    for name, table in tables.items():
        by_query = align(table, query, scored.schema[query], name)
        tables[name] = align(by_query, item, scored.schema[item], name)
    for name, rows in (("negative", tables["negatives"]), ("positive", held)):
        trained = rows.join(tables["train"], on=[query, item])
        if trained.height:
            shown = trained.sort(query, item).head(SHOWN).rows()
            msg = (
                f"{trained.height} {name}(s) are train interactions of their query, e.g. "
                f"(query, item) {shown}; held-out and sampled items must be items the user "
                "has not interacted with in train"
            )
            raise ColumnValueError(msg)
    return tables["train"]


def _side_by_side(
    boards: dict[str, pl.DataFrame], names: list[str], systems: list[str], method: Method
) -> SampledVsFull:
    """The leaderboards in one long table with their ranks, and their correlations."""
    values = _long(boards["full"], systems, names, "full")
    others = [name for name in boards if name != "full"]
    for name in others:
        values = values.join(_long(boards[name], systems, names, name), on=[METRIC, *systems])
    # rank_correlation names a system by its by values joined by " / " (as compare does)
    values = values.with_columns(
        pl.concat_str([pl.col(c).cast(pl.String) for c in systems], separator=" / ").alias("_key")
    )
    rows, ranks = [], []
    for metric in names:
        for name in others:
            found = rank_correlation(
                boards["full"], boards[name], by=systems, metric=metric, method=method
            )
            rows.append(
                (metric, name, method, found.coefficient, found.n_systems, found.discordant)
            )
            picked = [
                pl.col("system").alias("_key"),
                pl.col("rank_a").alias("rank_full"),
                pl.col("rank_b").alias(f"rank_{name}"),
            ]
            ranks.append(found.systems.select(picked).with_columns(pl.lit(metric).alias(METRIC)))
    for column in ["rank_full", *(f"rank_{name}" for name in others)]:
        parts = [frame.select(METRIC, "_key", column) for frame in ranks if column in frame.columns]
        values = values.join(
            pl.concat(parts).unique([METRIC, "_key"]), on=[METRIC, "_key"], how="left"
        )
    values = values.drop("_key").sort(METRIC, "rank_full", *systems)
    agreement = pl.DataFrame(
        rows,
        schema=[METRIC, "compared", "method", "coefficient", "n_systems", "discordant"],
        orient="row",
    )
    return SampledVsFull(values=values, agreement=agreement)
