"""Do two leaderboards rank systems alike: :func:`rank_correlation` (see the package docs)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import polars as pl

from polars_rankeval._engine.meaning import LowerIsBetter, meanings
from polars_rankeval._engine.vocabulary import BASELINE_VALUE, VALUE, renamed
from polars_rankeval.agreement._frames import collect
from polars_rankeval.comparison._pairing import system_columns, with_pair_names
from polars_rankeval.errors import (
    ColumnNotFoundError,
    ColumnTypeError,
    ColumnValueError,
    DuplicateItemError,
    InvalidOptionError,
)

Method = Literal["kendall", "tau_ap", "tau_ap_b", "spearman", "pearson"]
Missing = Literal["error", "drop"]

METHODS: tuple[Method, ...] = ("kendall", "tau_ap", "tau_ap_b", "spearman", "pearson")
_SEPARATOR = " / "  # several ``by`` columns name a system by their values joined (as compare)
# compare()'s output, by the columns rank_correlation reads from it (and its systems' by and
# baseline_<by> columns, read as names by with_pair_names).
_COMPARE_COLUMNS = frozenset({"metric", "higher_is_better"})


def _scipy_stats() -> Any:
    try:
        from scipy import stats  # type: ignore[import-untyped]  # the stats extra
    except ImportError as error:
        msg = (
            "rank_correlation() needs scipy for Kendall, Spearman and Pearson: "
            'pip install "polars-rankeval[stats]"'
        )
        raise ImportError(msg) from error
    return stats


# ---------------------------------------------------------------------------------------------
# Rank correlation
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RankCorrelation:
    """The correlation between two system rankings.

    Attributes
    ----------
    method
        ``"kendall"``, ``"tau_ap"``, ``"tau_ap_b"``, ``"spearman"`` or ``"pearson"``.
    coefficient
        The correlation, in [−1, 1] (NaN when a ranking is constant).
    n_systems
        The systems compared (after ``k=`` and ``missing_systems="drop"``).
    metric_a, metric_b
        The columns read from the first and the second table.
    p_value
        scipy's two-sided p-value for Kendall, Spearman and Pearson; None for τ_AP.
    concordant, discordant
        System pairs both rankings order alike / the other way round.
    tied_a, tied_b
        Pairs tied in the first / the second ranking (a pair tied in both counts in each).
    swapped
        The discordant pairs: ``system_1`` is ahead of ``system_2`` in the first ranking and
        behind it in the second; ``a_1``, ``a_2``, ``b_1``, ``b_2`` are their metric values.
    systems
        One row per system: ``system``, ``a``, ``b`` (the values), ``rank_a``, ``rank_b``
        (1 = best, ties share the lowest rank).
    """

    method: str
    coefficient: float
    n_systems: int
    metric_a: str
    metric_b: str
    p_value: float | None
    concordant: int
    discordant: int
    tied_a: int
    tied_b: int
    swapped: pl.DataFrame
    systems: pl.DataFrame

    def to_frame(self) -> pl.DataFrame:
        """One row: the method, the metrics, the coefficient, the counts and the p-value."""
        return pl.DataFrame(
            {
                "method": [self.method],
                "metric_a": [self.metric_a],
                "metric_b": [self.metric_b],
                "coefficient": [self.coefficient],
                "p_value": [self.p_value],
                "n_systems": [self.n_systems],
                "concordant": [self.concordant],
                "discordant": [self.discordant],
                "tied_a": [self.tied_a],
                "tied_b": [self.tied_b],
            },
            schema_overrides={"p_value": pl.Float64},
        )

    def __repr__(self) -> str:
        """Short: the coefficient, the systems and the swapped pairs."""
        return (
            f"RankCorrelation(method={self.method!r}, coefficient={self.coefficient:.6g}, "
            f"n_systems={self.n_systems}, discordant={self.discordant}, "
            f"metrics=({self.metric_a!r}, {self.metric_b!r}))"
        )


def _is_compare_output(frame: pl.DataFrame) -> bool:
    return set(frame.columns) >= _COMPARE_COLUMNS and bool(system_columns(frame.columns))


def _compare_values(frame: pl.DataFrame, metric: str | None, name: str) -> pl.DataFrame:
    """compare()'s pairs as one row per system: ``system``, the metric, and its direction."""
    metrics = frame["metric"].unique(maintain_order=True).to_list()
    if metric is None:
        if len(metrics) != 1:
            msg = f"{name} (a compare() output) holds metrics {metrics}: choose one with metric="
            raise InvalidOptionError(msg)
        metric = str(metrics[0])
    if metric not in metrics:
        msg = f"metric {metric!r} is not in {name} (a compare() output); its metrics: {metrics}"
        raise ColumnNotFoundError(msg)
    rows = with_pair_names(frame.filter(pl.col("metric") == metric))
    # The value evaluate() reports for each system (all its queries), else the paired value.
    overall = "system_overall" in frame.columns
    values_of = {
        "baseline": "baseline_overall" if overall else BASELINE_VALUE,
        "system": "system_overall" if overall else VALUE,
    }
    parts = [
        rows.select(
            pl.col(role).cast(pl.String).alias("system"),
            pl.col(column).cast(pl.Float64).alias(metric),
        )
        for role, column in values_of.items()
    ]
    values = pl.concat(parts).unique("system", keep="first", maintain_order=True)
    higher = rows["higher_is_better"].drop_nulls().unique().to_list()
    if len(higher) != 1:
        msg = f"{name}: metric {metric!r} has no direction (higher_is_better is null)"
        raise ColumnValueError(msg)
    return values.with_columns(pl.lit(bool(higher[0])).alias("_higher"))


def _declared_for(lower_is_better: LowerIsBetter, metric: str) -> LowerIsBetter:
    """The part of ``lower_is_better`` about ``metric`` (it may name the other table's)."""
    if lower_is_better is None:
        return None
    if isinstance(lower_is_better, str):
        return [metric] if lower_is_better == metric else None
    if isinstance(lower_is_better, Mapping):
        return {metric: lower_is_better[metric]} if metric in lower_is_better else None
    return [metric] if metric in list(lower_is_better) else None


def _evaluate_values(
    frame: pl.DataFrame,
    by: list[str],
    metric: str | None,
    name: str,
    lower_is_better: LowerIsBetter,
) -> pl.DataFrame:
    missing = [column for column in by if column not in frame.columns]
    if missing:
        msg = f"{name} has no column {missing} named by by=; its columns: {frame.columns}"
        raise ColumnNotFoundError(msg)
    candidates = [
        column
        for column, dtype in frame.schema.items()
        if column not in by and dtype.is_numeric() and dtype != pl.Boolean
    ]
    if metric is None:
        if len(candidates) != 1:
            msg = f"{name} has metric columns {candidates}: choose one with metric="
            raise InvalidOptionError(msg)
        metric = candidates[0]
    if metric not in frame.columns:
        msg = f"metric {metric!r} is not a column of {name}; its metric columns: {candidates}"
        raise ColumnNotFoundError(msg)
    if metric not in candidates:
        msg = f"metric {metric!r} of {name} must be numeric, got {frame.schema[metric]}"
        raise ColumnTypeError(msg)
    label = (
        pl.col(by[0]).cast(pl.String)
        if len(by) == 1
        else pl.concat_str([pl.col(c).cast(pl.String) for c in by], separator=_SEPARATOR)
    )
    values = frame.select(label.alias("system"), pl.col(metric).cast(pl.Float64))
    repeated = values.filter(pl.col("system").is_duplicated())["system"].unique().sort()
    if len(repeated):
        msg = (
            f"{name} has several rows for systems {repeated.head(5).to_list()}: pass one row "
            "per system (evaluate(..., by=...) without per_query=True)"
        )
        raise DuplicateItemError(msg)
    meaning = meanings([metric], lower_is_better=_declared_for(lower_is_better, metric))[metric]
    if meaning.higher_is_better is None:
        msg = f"metric {metric!r} has no direction (a count): it does not rank systems"
        raise InvalidOptionError(msg)
    return values.with_columns(pl.lit(meaning.higher_is_better).alias("_higher"))


def _values(
    frame: pl.DataFrame,
    by: list[str],
    metric: str | None,
    name: str,
    lower_is_better: LowerIsBetter,
) -> tuple[pl.DataFrame, str]:
    """``system``, the oriented value ``_good`` (higher is better) and the value; the metric."""
    if _is_compare_output(frame):
        values = _compare_values(frame, metric, name)
    else:
        values = _evaluate_values(frame, by, metric, name, lower_is_better)
    column = next(c for c in values.columns if c not in {"system", "_higher"})
    higher = bool(values["_higher"][0]) if values.height else True
    good = pl.col(column) if higher else -pl.col(column)
    out = values.select(
        "system",
        pl.col(column).fill_nan(None).alias("value"),
        good.fill_nan(None).alias("_good"),
    )
    return out, column


def _pair_metrics(metric: object) -> tuple[str | None, str | None]:
    if metric is None or isinstance(metric, str):
        return metric, metric
    if (
        isinstance(metric, (tuple, list))
        and len(metric) == 2
        and all(isinstance(m, str) for m in metric)
    ):
        return str(metric[0]), str(metric[1])
    msg = f"option metric= must be a column name or a pair (metric_a, metric_b), got {metric!r}"
    raise InvalidOptionError(msg)


def _tau_ap_terms(evaluated: np.ndarray, reference: np.ndarray) -> float:
    """Urbano & Marrero's asymmetric τ_AP,b term (``tauAP_b_ties``): higher is better.

    Walk the evaluated ranking; for each system outside its top tie group count the systems
    strictly above it (``p − 1`` of them) that the reference also puts strictly above it.
    """
    above_e = evaluated[None, :] > evaluated[:, None]  # [i, j]: j strictly above i
    above_r = reference[None, :] > reference[:, None]
    p = above_e.sum(axis=1)
    not_top = p > 0
    if not not_top.any():
        return math.nan
    concordant = (above_e & above_r).sum(axis=1)
    return float(2.0 / not_top.sum() * (concordant[not_top] / p[not_top]).sum() - 1.0)


def tau_ap(evaluated: np.ndarray, reference: np.ndarray) -> float:
    """Yilmaz, Aslam & Robertson's τ_AP of ``evaluated`` against ``reference`` (higher = better).

    Ties in ``evaluated`` take the expectation over their orders (Urbano & Marrero's τ_AP,a,
    ICTIR 2017); the reference must have none.

    Examples
    --------
    >>> tau_ap(np.array([4.0, 3, 2, 1]), np.array([4.0, 3, 1, 2]))  # bottom two swapped
    0.7777777777777777
    """
    n = len(evaluated)
    # Urbano & Marrero's τ_AP,a (ircor's tauAP_a) with p = the minimum rank of each system.
    above_e = evaluated[None, :] > evaluated[:, None]
    above_r = reference[None, :] > reference[:, None]
    p = above_e.sum(axis=1) + 1  # 1-based minimum rank in the evaluated ranking
    t = (evaluated[None, :] == evaluated[:, None]).sum(axis=1)  # size of each tie group
    concordant = (above_e & above_r).sum(axis=1)
    total = 0.0
    for i in range(n):
        if p[i] > 1:
            s_above = float(np.sum(1.0 / (p[i] + np.arange(1, t[i] + 1) - 2))) / t[i]
            total += concordant[i] * s_above
        k = np.arange(1, t[i])
        total += float(np.sum(k / (p[i] + k - 1))) / 2.0 / t[i]
    return float(2.0 / (n - 1) * total - 1.0)


def tau_ap_b(a: np.ndarray, b: np.ndarray) -> float:
    """The symmetric tie-aware τ_AP,b (Urbano & Marrero, ICTIR 2017; higher = better).

    Examples
    --------
    >>> a = np.arange(10.0, 0, -1)
    >>> b = a.copy()
    >>> b[[0, 1]] = b[[1, 0]]  # the top two swapped
    >>> round(tau_ap_b(a, b), 10)
    0.7777777778
    """
    return (_tau_ap_terms(a, b) + _tau_ap_terms(b, a)) / 2.0


def _pair_counts(a: np.ndarray, b: np.ndarray) -> tuple[int, int, int, int, np.ndarray]:
    i, j = np.triu_indices(len(a), k=1)
    sa = np.sign(a[i] - a[j])
    sb = np.sign(b[i] - b[j])
    product = sa * sb
    discordant = product < 0
    return (
        int((product > 0).sum()),
        int(discordant.sum()),
        int((sa == 0).sum()),
        int((sb == 0).sum()),
        np.flatnonzero(discordant),
    )


def _classic(method: str, a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    stats = _scipy_stats()
    with warnings.catch_warnings():
        # A constant ranking: scipy warns and returns NaN, which is what we report.
        warnings.simplefilter("ignore")
        if method == "kendall":
            found = stats.kendalltau(a, b, variant="b")
        elif method == "spearman":
            found = stats.spearmanr(a, b)
        else:
            found = stats.pearsonr(a, b)
    return float(found.statistic), float(found.pvalue)


def _aligned(
    left: pl.DataFrame, right: pl.DataFrame, missing: Missing
) -> tuple[pl.DataFrame, list[str]]:
    # which side holds a row for the system: a row whose value is NaN or null is not a
    # missing system, and the error says which it is
    joined = left.with_columns(_here=pl.lit(value=True)).join(
        right.with_columns(_here=pl.lit(value=True)),
        on="system",
        how="full",
        coalesce=True,
        suffix="_b",
    )
    lacking = joined.filter(pl.col("_good").is_null() | pl.col("_good_b").is_null())
    if lacking.height and missing == "error":
        raise ColumnValueError(_lacking_message(lacking))
    dropped = lacking["system"].drop_nulls().sort().to_list()
    return joined.drop_nulls(["_good", "_good_b"]).drop("_here", "_here_b"), dropped


def _lacking_message(lacking: pl.DataFrame) -> str:
    """Why systems cannot be paired: absent from one ranking, or there without a value."""
    here_a, here_b = (
        pl.col("_here").fill_null(value=False),
        pl.col("_here_b").fill_null(value=False),
    )

    def systems(condition: pl.Expr) -> list[str]:
        return [str(name) for name in lacking.filter(condition)["system"].sort().head(10)]

    parts = [
        f"only in {side}: {only}"
        for side, own, other in (("a", here_a, here_b), ("b", here_b, here_a))
        if (only := systems(own & ~other))
    ]
    absent = "; ".join(parts)
    valueless = [
        f"{without} in {side}"
        for side, here, value in (("a", here_a, "_good"), ("b", here_b, "_good_b"))
        if (without := systems(here & pl.col(value).is_null()))
    ]
    if valueless:
        what = "the value is NaN or null for systems " + " and ".join(valueless)
        if absent:
            what += f", and the rankings do not hold the same systems ({absent})"
        return f"{what}; pass missing_systems='drop' to correlate the systems both give a value"
    return (
        f"the two rankings do not hold the same systems ({absent}); pass missing_systems='drop' to "
        "correlate the systems both hold"
    )


@renamed(a="data", b="other", top="k", missing="missing_systems")
def rank_correlation(
    data: pl.DataFrame | pl.LazyFrame,
    other: pl.DataFrame | pl.LazyFrame,
    *,
    by: str | Sequence[str] = "system",
    metric: str | tuple[str, str] | None = None,
    method: Method = "kendall",
    k: int | None = None,
    missing_systems: Missing = "error",
    lower_is_better: LowerIsBetter = None,
) -> RankCorrelation:
    """The correlation between the system rankings of ``data`` and ``other``.

    The two rankings are called a (``data``) and b (``other``) below and in the result
    (``metric_a``, ``rank_b`` ...).

    Parameters
    ----------
    data, other
        :func:`~polars_rankeval.evaluate` outputs (one row per system: the ``by`` column(s) and
        metric columns) or :func:`~polars_rankeval.compare` outputs (their systems read from
        the ``by`` and ``baseline_<by>`` columns, several joined by ``" / "``, and their
        ``*_overall`` values; ``by`` is not used). The same table may be passed twice with
        two metrics.
    by
        The column(s) naming a system in an evaluate() output; systems are matched on them.
    metric
        The column to rank by, the same name in both; a pair ``(metric_a, metric_b)`` names
        one column of each (``rank_correlation(out, out, metric=("p@10", "map"))``). Needed
        when a table holds several metrics.
    method
        ``"kendall"`` (τ-b, ``scipy.stats.kendalltau``), ``"tau_ap"`` (Yilmaz et al.; not
        symmetric: ``b`` is the reference, which must have no ties; ties in ``a`` take the
        expectation over their orders, τ_AP,a), ``"tau_ap_b"`` (symmetric, ties allowed),
        ``"spearman"`` or ``"pearson"``.
    k
        The cutoff of the reference ranking: only the ``k`` best systems of ``other`` (b);
        systems tied with the last one kept are kept too.
    missing_systems
        A system in one table only (or without a value): ``"error"`` (the default, listing
        them) or ``"drop"`` (correlate the systems both hold).
    lower_is_better
        Columns that are not polars_rankeval metrics and whose lower values are better (as in
        :func:`~polars_rankeval.compare`). Our metrics' own direction is read from
        :mod:`polars_rankeval._engine.meaning`.

    Returns
    -------
    RankCorrelation
        The coefficient, the number of systems, the p-value (Kendall, Spearman, Pearson),
        the concordant and discordant pair counts and the swapped pairs; ``.to_frame()``
        gives one row. Rankings put better systems first: a lower-is-better metric is
        negated before correlating, Pearson included, so a positive coefficient always means
        the two agree on which systems are better.

    Examples
    --------
    >>> import polars as pl
    >>> out = pl.DataFrame(
    ...     {
    ...         "system": ["s1", "s2", "s3", "s4"],
    ...         "p@10": [0.50, 0.40, 0.45, 0.20],
    ...         "map": [0.30, 0.25, 0.20, 0.10],
    ...     }
    ... )
    >>> found = rank_correlation(out, out, metric=("p@10", "map"))
    >>> round(found.coefficient, 4), found.n_systems, found.discordant
    (0.6667, 4, 1)
    >>> found.swapped.select("system_1", "system_2").rows()
    [('s3', 's2')]
    """
    if method not in METHODS:
        msg = f"option method= must be one of {list(METHODS)}, got {method!r}"
        raise InvalidOptionError(msg)
    if missing_systems not in ("error", "drop"):
        msg = f"option missing_systems= must be 'error' or 'drop', got {missing_systems!r}"
        raise InvalidOptionError(msg)
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 2):
        msg = f"option k= must be an integer >= 2 (systems of other), got {k!r}"
        raise InvalidOptionError(msg)
    columns = [by] if isinstance(by, str) else list(by)
    if not columns:
        msg = "option by= must name at least one column"
        raise InvalidOptionError(msg)
    metric_a, metric_b = _pair_metrics(metric)
    left, name_a = _values(collect(data, "data"), columns, metric_a, "a", lower_is_better)
    right, name_b = _values(collect(other, "other"), columns, metric_b, "b", lower_is_better)
    joined, _ = _aligned(left, right, missing_systems)
    if k is not None and joined.height > k:
        cut = joined["_good_b"].sort(descending=True)[k - 1]
        joined = joined.filter(pl.col("_good_b") >= cut)
    joined = joined.sort(["_good", "_good_b", "system"], descending=[True, True, False])
    if joined.height < 2:
        msg = f"rank_correlation needs at least two systems in both rankings, got {joined.height}"
        raise ColumnValueError(msg)
    good_a = joined["_good"].to_numpy().astype(np.float64)
    good_b = joined["_good_b"].to_numpy().astype(np.float64)
    p_value: float | None = None
    if method == "tau_ap":
        if len(np.unique(good_b)) < len(good_b):
            msg = (
                "method='tau_ap' needs a reference ranking (b) without ties; use "
                "method='tau_ap_b', which allows ties on both sides"
            )
            raise ColumnValueError(msg)
        coefficient = tau_ap(good_a, good_b)
    elif method == "tau_ap_b":
        coefficient = tau_ap_b(good_a, good_b)
    else:
        coefficient, p_value = _classic(method, good_a, good_b)
    concordant, discordant, tied_a, tied_b, swapped_at = _pair_counts(good_a, good_b)
    i, j = np.triu_indices(len(good_a), k=1)
    names = joined["system"]
    values_a = joined["value"]
    values_b = joined["value_b"]
    first, second = i[swapped_at], j[swapped_at]  # sorted by a: the first is ahead in a
    swapped = pl.DataFrame(
        {
            "system_1": names.gather(first),
            "system_2": names.gather(second),
            "a_1": values_a.gather(first),
            "a_2": values_a.gather(second),
            "b_1": values_b.gather(first),
            "b_2": values_b.gather(second),
        }
    )
    systems = joined.select(
        "system",
        pl.col("value").alias("a"),
        pl.col("value_b").alias("b"),
        pl.col("_good").rank("min", descending=True).cast(pl.Int64).alias("rank_a"),
        pl.col("_good_b").rank("min", descending=True).cast(pl.Int64).alias("rank_b"),
    )
    return RankCorrelation(
        method=method,
        coefficient=coefficient,
        n_systems=joined.height,
        metric_a=name_a,
        metric_b=name_b,
        p_value=p_value,
        concordant=concordant,
        discordant=discordant,
        tied_a=tied_a,
        tied_b=tied_b,
        swapped=swapped,
        systems=systems,
    )


# ---------------------------------------------------------------------------------------------
# Label agreement
# ---------------------------------------------------------------------------------------------
