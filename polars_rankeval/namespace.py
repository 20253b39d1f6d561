"""The ``rank_eval`` namespaces: thin adapters over :func:`evaluate` and :func:`metric_expr`.

Registered on import of :mod:`polars_rankeval`. Namespaces cannot be typed statically in
Polars; the typed API is :func:`polars_rankeval.evaluate` and :func:`polars_rankeval.metric_expr`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Generic, TypeVar

import polars as pl

from polars_rankeval.evaluate import FrameT, evaluate
from polars_rankeval.expr import IntoExpr, metric_expr
from polars_rankeval.metrics._base import Metric

ResultT = TypeVar("ResultT", pl.DataFrame, pl.LazyFrame, pl.Expr)


def _spec(name: str, k: int | None) -> str | Metric:
    return name if k is None else f"{name}@{k}"


class _MetricMethods(Generic[ResultT]):
    """One method per metric, shared by the frame and expression namespaces."""

    def _one(self, name: str, k: int | None, options: dict[str, Any]) -> ResultT:
        raise NotImplementedError

    def precision(self, k: int, **options: Any) -> ResultT:
        """``p@k``."""
        return self._one("p", k, options)

    def recall(self, k: int, **options: Any) -> ResultT:
        """``recall@k``."""
        return self._one("recall", k, options)

    def success(self, k: int, **options: Any) -> ResultT:
        """``success@k``."""
        return self._one("success", k, options)

    def hit_rate(self, k: int, **options: Any) -> ResultT:
        """``hit_rate@k`` (same as ``success@k``)."""
        return self._one("hit_rate", k, options)

    def hits(self, k: int, **options: Any) -> ResultT:
        """``hits@k``."""
        return self._one("hits", k, options)

    def f1(self, k: int, **options: Any) -> ResultT:
        """``f1@k``."""
        return self._one("f1", k, options)

    def map(self, k: int | None = None, **options: Any) -> ResultT:
        """``map`` or ``map@k``."""
        return self._one("map", k, options)

    def mrr(self, k: int | None = None, **options: Any) -> ResultT:
        """``mrr`` or ``mrr@k``."""
        return self._one("mrr", k, options)

    def r_precision(self, **options: Any) -> ResultT:
        """``r_precision``."""
        return self._one("r_precision", None, options)

    def ndcg(self, k: int | None = None, **options: Any) -> ResultT:
        """``ndcg`` or ``ndcg@k``.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_rankeval
        >>> log = pl.DataFrame(
        ...     {"query": [1, 1], "item": ["a", "b"], "score": [2.0, 1.0], "relevance": [0, 1]}
        ... )
        >>> log.rank_eval.ndcg(k=10)
        shape: (1, 1)
        ┌─────────┐
        │ ndcg@10 │
        │ ---     │
        │ f64     │
        ╞═════════╡
        │ 0.63093 │
        └─────────┘
        """
        return self._one("ndcg", k, options)

    def dcg(self, k: int | None = None, **options: Any) -> ResultT:
        """``dcg`` or ``dcg@k``."""
        return self._one("dcg", k, options)

    def bpref(self, **options: Any) -> ResultT:
        """``bpref``."""
        return self._one("bpref", None, options)

    def judged(self, k: int, **options: Any) -> ResultT:
        """``judged@k``."""
        return self._one("judged", k, options)


class _FrameNamespace(_MetricMethods[FrameT]):
    """``df.rank_eval`` / ``lf.rank_eval``: one method per metric plus :meth:`evaluate`.

    Every method takes the keyword options of :func:`polars_rankeval.evaluate`
    (``per_query``, ``by``, ``relevance_level``, ``missing_queries``, ``query``, ``item``,
    ``score``, ``relevance``) and returns the same frame type it was called on.
    """

    def __init__(self, frame: FrameT) -> None:
        self._frame: FrameT = frame

    def evaluate(self, metrics: Sequence[str | Metric] | str | Metric, **options: Any) -> FrameT:
        """Evaluate several metrics in one pass; see :func:`polars_rankeval.evaluate`."""
        return evaluate(self._frame, metrics, **options)

    def _one(self, name: str, k: int | None, options: dict[str, Any]) -> FrameT:
        return self.evaluate([_spec(name, k)], **options)


@pl.api.register_dataframe_namespace("rank_eval")
class DataFrameRankEval(_FrameNamespace[pl.DataFrame]):
    """``df.rank_eval``: evaluates eagerly and returns a DataFrame."""


@pl.api.register_lazyframe_namespace("rank_eval")
class LazyFrameRankEval(_FrameNamespace[pl.LazyFrame]):
    """``lf.rank_eval``: returns a LazyFrame; nothing runs until you collect."""


@pl.api.register_expr_namespace("rank_eval")
class ExprRankEval(_MetricMethods[pl.Expr]):
    """``pl.col("relevance").rank_eval.<metric>(...)`` inside ``group_by(query).agg()``.

    The expression is the relevance column; ``score=`` and ``item=`` name the other two.
    """

    def __init__(self, expr: pl.Expr) -> None:
        self._expr = expr

    def metric(
        self,
        metric: str | Metric,
        *,
        score: IntoExpr = "score",
        item: IntoExpr = "item",
        relevance_level: int = 1,
    ) -> pl.Expr:
        """Any metric string, e.g. ``pl.col("rel").rank_eval.metric("ndcg@10")``."""
        return metric_expr(
            metric, relevance=self._expr, score=score, item=item, relevance_level=relevance_level
        )

    def _one(self, name: str, k: int | None, options: dict[str, Any]) -> pl.Expr:
        spec = _spec(name, k)
        return self.metric(spec, **options)
