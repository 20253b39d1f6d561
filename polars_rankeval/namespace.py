"""The ``rank_eval`` namespaces: thin adapters over :func:`evaluate` and :func:`metric_expr`.

Registered on import of :mod:`polars_rankeval`. Every metric family has a method, generated at
import from the families table (``polars_rankeval/_names/families.py``): one named like its
string (``map``, ``mrr``, ``p``) and one like its builder (``average_precision``,
``precision``), so the methods, the strings and :mod:`polars_rankeval.metrics` are one
vocabulary. The methods are generated rather than written out because Polars namespaces cannot
be typed statically anyway (``df.rank_eval`` is an attribute Polars adds at runtime, which mypy
and IDEs do not see), so a stub would reach no user; the typed API is
:func:`polars_rankeval.evaluate` with :mod:`polars_rankeval.metrics`' builders, and
:func:`polars_rankeval.metric_expr`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

import polars as pl

from polars_rankeval._engine.evaluate import evaluate
from polars_rankeval._engine.summary import FrameT
from polars_rankeval._names.families import TABLE, Family, MetricRequest, family_options
from polars_rankeval.agreement._similarity import similarity
from polars_rankeval.attribution import Explanation, explain
from polars_rankeval.comparison import compare
from polars_rankeval.expr import _refuse_frame_options, metric_expr
from polars_rankeval.fairness import expected_exposure, group_exposure
from polars_rankeval.metrics._base import Metric
from polars_rankeval.offpolicy import click_metrics, interleaving, off_policy, slate_off_policy

ResultT = TypeVar("ResultT", pl.DataFrame, pl.LazyFrame, pl.Expr)


Cutoff = int | Sequence[int] | None


def _split(name: str, options: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Separate a method's keywords into the metric's own options and evaluate's options."""
    # ties= acts like evaluate's keyword (no rename), not like the metric-string option.
    own = set(family_options(name)) - {"ties"}
    return (
        {key: value for key, value in options.items() if key in own},
        {key: value for key, value in options.items() if key not in own},
    )


class _MetricMethods(Generic[ResultT]):
    """One method per metric, shared by the frame and expression namespaces.

    ``k`` may be a list of cutoffs (a sweep: one column per cutoff, one ranking pass). Keywords
    that are options of the metric (e.g. ``gain=`` for ``ndcg``) configure it; the others go
    to :func:`polars_rankeval.evaluate` (frames) or :func:`polars_rankeval.metric_expr`.

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
    >>> log.rank_eval.ndcg(k=[1, 2], gain="exp").columns
    ['ndcg@1(gain=exp)', 'ndcg@2(gain=exp)']
    >>> log.rank_eval.map().columns, log.rank_eval.average_precision().columns
    (['map'], ['map'])
    """

    def _metrics(self, request: MetricRequest, options: dict[str, Any]) -> ResultT:
        raise NotImplementedError

    def _one(self, name: str, k: Cutoff, options: dict[str, Any]) -> ResultT:
        own, rest = _split(name, options)
        return self._metrics(MetricRequest(name, k, own), rest)


def _with_argument(key: str, argument: str) -> Callable[..., Any]:
    """A method taking the option ``argument`` by position or keyword, then the others."""

    def method(self: _MetricMethods[Any], *value: Any, **options: Any) -> Any:
        if len(value) > 1:
            msg = f"{key}() takes one positional argument, {argument}"
            raise TypeError(msg)
        return self._one(key, None, {**dict(zip([argument], value, strict=False)), **options})

    # The signature users see (and the glossary test reads): (level, **options).
    kind = inspect.Parameter
    vars(method)["__signature__"] = inspect.Signature(
        [
            kind("self", kind.POSITIONAL_OR_KEYWORD),
            kind(argument, kind.POSITIONAL_OR_KEYWORD),
            kind("options", kind.VAR_KEYWORD),
        ]
    )
    return method


def _method(family: Family, name: str) -> Callable[..., Any]:
    """The namespace method of one family, named ``name``, generated from its table row.

    ``k`` is typed where the family takes a cutoff (required or optional, as in its strings);
    a family without one takes its options by keyword (``rbp(p=0.8)``), and the one its row
    names also by position (``iprec_at_recall(0.5)``).
    """
    key = family.name
    method: Callable[..., Any]
    if family.cutoff == "required":

        def required(self: _MetricMethods[Any], k: Cutoff, **options: Any) -> Any:
            return self._one(key, k, options)

        method = required
    elif family.cutoff == "optional":

        def optional(self: _MetricMethods[Any], k: Cutoff = None, **options: Any) -> Any:
            return self._one(key, k, options)

        method = optional
    else:

        def uncut(self: _MetricMethods[Any], **options: Any) -> Any:
            return self._one(key, None, options)

        method = uncut
        if family.argument:  # iprec_at_recall(0.5): one option also taken by position
            method = _with_argument(key, family.argument)
    cut = {"required": "@k", "optional": "[@k]", "none": ""}[family.cutoff]
    method.__name__ = method.__qualname__ = name
    method.__doc__ = (
        f"``{key}{cut}``: {family.summary}\n\n"
        f"The metric family ``{key!r}``; options as :func:`polars_rankeval.metrics."
        f"{family.build.__name__}`, the others go to ``evaluate`` (or ``metric_expr``)."
    )
    vars(method)["family"] = key  # the family it stands for (tests/api/test_vocabulary.py)
    return method


def method_names(family: Family) -> list[str]:
    """A family's namespace methods: its string's spelling, and its builder's name.

    >>> from polars_rankeval._names.families import FAMILIES
    >>> method_names(FAMILIES["map"])
    ['map', 'average_precision']
    """
    return list(dict.fromkeys([family.ident, family.build.__name__]))


for _family in TABLE:  # one method per family and spelling, from the one table
    for _name in method_names(_family):
        setattr(_MetricMethods, _name, _method(_family, _name))


class _FrameNamespace(_MetricMethods[FrameT]):
    """``df.rank_eval`` / ``lf.rank_eval``: one method per metric plus :meth:`evaluate`.

    Every method takes the keyword options of :func:`polars_rankeval.evaluate`
    (``per_query``, ``by``, ``relevance_level``, ``missing_queries``, ``query``, ``item``,
    ``score``, ``relevance``) and returns the same frame type it was called on.
    """

    def __init__(self, frame: FrameT) -> None:
        self._frame: FrameT = frame

    def evaluate(
        self, metrics: Sequence[str | Metric | MetricRequest] | str | Metric, **options: Any
    ) -> FrameT:
        """Evaluate several metrics in one pass; see :func:`polars_rankeval.evaluate`."""
        return evaluate(self._frame, metrics, **options)

    def _metrics(self, request: MetricRequest, options: dict[str, Any]) -> FrameT:
        return self.evaluate([request], **options)

    def _like(self, result: pl.DataFrame) -> FrameT:
        """A computed result as the frame type the namespace was called on."""
        raise NotImplementedError

    def compare(
        self, metrics: Sequence[str | Metric | MetricRequest] | str | Metric, **options: Any
    ) -> FrameT:
        """Compare the systems of ``by=`` (inside each segment of ``within=``), paired by query.

        See :func:`polars_rankeval.compare`. On a LazyFrame it runs at the call (it pairs
        every system over all queries) and returns the result as a LazyFrame.
        """
        return self._like(compare(self._frame, metrics, **options))

    def similarity(self, metrics: str | Sequence[str], **options: Any) -> FrameT:
        """How different the systems of ``by=`` rank; see :func:`polars_rankeval.similarity`.

        On a LazyFrame it runs at the call and returns the result as a LazyFrame.
        """
        return self._like(similarity(self._frame, metrics, **options))

    def off_policy(self, estimators: str | Sequence[str] = "ips,snips", **options: Any) -> FrameT:
        """Target policies' values estimated from this log; see :func:`polars_rankeval.off_policy`.

        On a LazyFrame the log is read (streamed) at the call and the result handed back as a
        LazyFrame.
        """
        return self._like(off_policy(self._frame, estimators, **options))

    def slate_off_policy(
        self, estimators: str | Sequence[str] = "sips,rips", **options: Any
    ) -> FrameT:
        """Slate estimators on this log; see :func:`polars_rankeval.slate_off_policy`."""
        return self._like(slate_off_policy(self._frame, estimators, **options))

    def click_metrics(self, metrics: str | Sequence[str], **options: Any) -> FrameT:
        """A new ranking's click metrics; see :func:`polars_rankeval.click_metrics`."""
        return self._like(click_metrics(self._frame, metrics, **options))

    def interleaving(self, **options: Any) -> FrameT:
        """Interleaving credit per pair of rankers; see :func:`polars_rankeval.interleaving`."""
        return self._like(interleaving(self._frame, **options))

    def group_exposure(self, **options: Any) -> FrameT:
        """Each group's exposure, share and target; see :func:`polars_rankeval.group_exposure`.

        Lazy in, lazy out: nothing is read until the result is collected.
        """
        return group_exposure(self._frame, **options)

    def expected_exposure(self, **options: Any) -> FrameT:
        """Sampled rankings' expected exposure; see :func:`polars_rankeval.expected_exposure`."""
        return expected_exposure(self._frame, **options)

    def explain(
        self, metric: str, a: object = "trec_eval", b: object = None, **options: Any
    ) -> Explanation:
        """Why ``metric`` differs between two setups here; see :func:`polars_rankeval.explain`.

        A report (an :class:`~polars_rankeval.Explanation`), whatever the frame type: a LazyFrame
        is collected at the call.
        """
        return explain(self._frame, metric, a, b, **options)


@pl.api.register_dataframe_namespace("rank_eval")
class DataFrameRankEval(_FrameNamespace[pl.DataFrame]):
    """``df.rank_eval``: evaluates eagerly and returns a DataFrame."""

    def _like(self, result: pl.DataFrame) -> pl.DataFrame:
        return result


@pl.api.register_lazyframe_namespace("rank_eval")
class LazyFrameRankEval(_FrameNamespace[pl.LazyFrame]):
    """``lf.rank_eval``: lazy in, lazy out.

    :meth:`evaluate` and the metric methods return a LazyFrame that runs when you collect.
    :meth:`compare` and :meth:`similarity` pair every system over all queries, so they collect
    at the call and hand the (small) result back as a LazyFrame: a lazy pipeline keeps one
    frame type, and nothing pretends to defer work it has done.
    """

    def _like(self, result: pl.DataFrame) -> pl.LazyFrame:
        return result.lazy()


@pl.api.register_expr_namespace("rank_eval")
class ExprRankEval(_MetricMethods[pl.Expr]):
    """``pl.col("relevance").rank_eval.<metric>(...)`` inside ``group_by(...).agg()``.

    The expression is the relevance column; ``score=``, ``item=`` and ``query=`` name the
    others. Each group is evaluated query by query and gives the mean over its evaluated
    queries (see :func:`polars_rankeval.metric_expr`); ``query=None`` makes each group one
    ranked list. The keywords of :func:`polars_rankeval.evaluate` that set how lists are
    evaluated (``relevance_level``, ``ties``, ``convention``, ...) apply as there.
    """

    def __init__(self, expr: pl.Expr) -> None:
        self._expr = expr

    def metric(self, metric: str | Metric, **options: Any) -> pl.Expr:
        """Any metric string, e.g. ``pl.col("rel").rank_eval.metric("ndcg@10")``."""
        return self._metrics(metric, options)

    def _metrics(self, request: str | Metric | MetricRequest, options: dict[str, Any]) -> pl.Expr:
        _refuse_frame_options(options)
        return metric_expr(request, relevance=self._expr, **options)
