"""The ``rank_eval`` namespaces: thin adapters over :func:`evaluate` and :func:`metric_expr`.

Registered on import of :mod:`polars_rankeval`. Namespaces cannot be typed statically in
Polars; the typed API is :func:`polars_rankeval.evaluate` and :func:`polars_rankeval.metric_expr`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Generic, TypeVar

import polars as pl

from polars_rankeval._engine.evaluate import evaluate
from polars_rankeval._engine.summary import FrameT
from polars_rankeval._names.registry import MetricRequest, family_options
from polars_rankeval.agreement._similarity import similarity
from polars_rankeval.comparison import compare
from polars_rankeval.expr import _refuse_frame_options, metric_expr
from polars_rankeval.metrics._base import Metric

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
    """

    def _metrics(self, request: MetricRequest, options: dict[str, Any]) -> ResultT:
        raise NotImplementedError

    def _one(self, name: str, k: Cutoff, options: dict[str, Any]) -> ResultT:
        own, rest = _split(name, options)
        return self._metrics(MetricRequest(name, k, own), rest)

    def precision(self, k: Cutoff, **options: Any) -> ResultT:
        """``p@k``."""
        return self._one("p", k, options)

    def recall(self, k: Cutoff, **options: Any) -> ResultT:
        """``recall@k``."""
        return self._one("recall", k, options)

    def success(self, k: Cutoff, **options: Any) -> ResultT:
        """``success@k``."""
        return self._one("success", k, options)

    def hit_rate(self, k: Cutoff, **options: Any) -> ResultT:
        """``hit_rate@k`` (same as ``success@k``)."""
        return self._one("hit_rate", k, options)

    def hits(self, k: Cutoff, **options: Any) -> ResultT:
        """``hits@k``."""
        return self._one("hits", k, options)

    def f1(self, k: Cutoff, **options: Any) -> ResultT:
        """``f1@k``."""
        return self._one("f1", k, options)

    def map(self, k: Cutoff = None, **options: Any) -> ResultT:
        """``map`` or ``map@k``."""
        return self._one("map", k, options)

    def mrr(self, k: Cutoff = None, **options: Any) -> ResultT:
        """``mrr`` or ``mrr@k``."""
        return self._one("mrr", k, options)

    def mar(self, k: Cutoff = None, **options: Any) -> ResultT:
        """``mar`` or ``mar@k`` (mean average recall)."""
        return self._one("mar", k, options)

    def r_precision(self, **options: Any) -> ResultT:
        """``r_precision``."""
        return self._one("r_precision", None, options)

    def ndcg(self, k: Cutoff = None, **options: Any) -> ResultT:
        """``ndcg`` or ``ndcg@k``; options ``gain``, ``log_base``, ``discount``, ``ideal``.

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
        """
        return self._one("ndcg", k, options)

    def dcg(self, k: Cutoff = None, **options: Any) -> ResultT:
        """``dcg`` or ``dcg@k``; options ``gain``, ``log_base``, ``discount``."""
        return self._one("dcg", k, options)

    def err(self, k: Cutoff = None, **options: Any) -> ResultT:
        """``err`` or ``err@k``; options ``transform``, ``max_grade``, ``alpha``, ``beta``."""
        return self._one("err", k, options)

    def rbp(self, **options: Any) -> ResultT:
        """``rbp``; options ``p`` (persistence, default 0.9) and ``gain``."""
        return self._one("rbp", None, options)

    def rbp_resid(self, **options: Any) -> ResultT:
        """``rbp_resid`` (trec_eval): RBP's residual; option ``p`` (default 0.9)."""
        return self._one("rbp_resid", None, options)

    def bin_g(self, **options: Any) -> ResultT:
        """``binG`` (trec_eval): binary gain over ``log2(2 + non-relevant rows above)``."""
        return self._one("bing", None, options)

    def g(self, **options: Any) -> ResultT:
        """``G`` (trec_eval): normalised gain against the ideal cost so far."""
        return self._one("g", None, options)

    def ndcg_rel(self, **options: Any) -> ResultT:
        """``ndcg_rel`` (trec_eval): ndcg averaged over the positive-gain rows."""
        return self._one("ndcg_rel", None, options)

    def rndcg(self, **options: Any) -> ResultT:
        """``Rndcg`` (trec_eval): ndcg averaged where the ideal gain changes."""
        return self._one("rndcg", None, options)

    def iprec_at_recall(self, level: float, **options: Any) -> ResultT:
        """``iprec_at_recall(level=...)`` (trec_eval): interpolated precision at a recall level."""
        return self._one("iprec_at_recall", None, {"level": level, **options})

    def eleven_pt_avg(self, **options: Any) -> ResultT:
        """``11pt_avg`` (trec_eval); option ``levels`` (default the 11 levels 0.0 ... 1.0)."""
        return self._one("11pt_avg", None, options)

    def gm_map(self, **options: Any) -> ResultT:
        """``gm_map`` (trec_eval): AP per query, geometric mean over queries."""
        return self._one("gm_map", None, options)

    def gm_bpref(self, **options: Any) -> ResultT:
        """``gm_bpref`` (trec_eval): bpref per query, geometric mean over queries."""
        return self._one("gm_bpref", None, options)

    def bpref(self, **options: Any) -> ResultT:
        """``bpref``."""
        return self._one("bpref", None, options)

    def infap(self, **options: Any) -> ResultT:
        """``infap`` (trec_eval ``infAP``)."""
        return self._one("infap", None, options)

    def judged(self, k: Cutoff, **options: Any) -> ResultT:
        """``judged@k``."""
        return self._one("judged", k, options)

    def mean_rank(self, k: Cutoff = None, **options: Any) -> ResultT:
        """``mean_rank`` or ``mean_rank@k`` (lower is better)."""
        return self._one("mean_rank", k, options)

    def frp(self, k: Cutoff = None, **options: Any) -> ResultT:
        """``frp`` or ``frp@k``: first relevant position (lower is better)."""
        return self._one("frp", k, options)

    def spearman(self, **options: Any) -> ResultT:
        """``spearman``: rank correlation of score and label per query."""
        return self._one("spearman", None, options)

    def kendall_tau(self, **options: Any) -> ResultT:
        """``kendall_tau``: Kendall's tau-b of score and label per query."""
        return self._one("kendall_tau", None, options)

    # trec_eval's set measures and their relatives (metrics/trec_sets.py)

    def set_p(self, **options: Any) -> ResultT:
        """``set_p`` (trec_eval ``set_P``): precision of the whole retrieved set."""
        return self._one("set_p", None, options)

    def set_recall(self, **options: Any) -> ResultT:
        """``set_recall``: recall of the whole retrieved set."""
        return self._one("set_recall", None, options)

    def set_map(self, **options: Any) -> ResultT:
        """``set_map``: ``set_p · set_recall``."""
        return self._one("set_map", None, options)

    def set_f(self, **options: Any) -> ResultT:
        """``set_f`` (trec_eval ``set_F``); option ``beta`` (default 1, not squared)."""
        return self._one("set_f", None, options)

    def set_relative_p(self, **options: Any) -> ResultT:
        """``set_relative_p``: ``num_rel_ret / min(num_ret, R)``."""
        return self._one("set_relative_p", None, options)

    def relative_p(self, k: Cutoff, **options: Any) -> ResultT:
        """``relative_p@k``: ``hits@k / min(k, R)``."""
        return self._one("relative_p", k, options)

    def rprec_mult(self, **options: Any) -> ResultT:
        """``rprec_mult``: precision at ``⌊mult·R + 0.9⌋``; option ``mult`` (default 1)."""
        return self._one("rprec_mult", None, options)

    def utility(self, **options: Any) -> ResultT:
        """``utility``; options ``a``, ``b``, ``c``, ``d`` (default 1, -1, 0, 0), ``num_docs``."""
        return self._one("utility", None, options)

    def num_nonrel_judged_ret(self, **options: Any) -> ResultT:
        """``num_nonrel_judged_ret``: retrieved rows judged non-relevant (summed)."""
        return self._one("num_nonrel_judged_ret", None, options)

    def unj(self, k: Cutoff, **options: Any) -> ResultT:
        """``unj@k``: fraction of the top ``k`` that is unjudged."""
        return self._one("unj", k, options)

    # Recommender beyond-accuracy metrics: they read train=, items= or catalog= (passed with
    # the other keywords), see docs/pages/guides/recommender.md.

    def novelty(self, k: Cutoff, **options: Any) -> ResultT:
        """``novelty@k``: mean self-information of the top ``k`` items (needs ``train=``)."""
        return self._one("novelty", k, options)

    def surprisal(self, k: Cutoff, **options: Any) -> ResultT:
        """``surprisal@k``: normalised self-information, RePlay's (needs ``train=``)."""
        return self._one("surprisal", k, options)

    def unseen(self, k: Cutoff, **options: Any) -> ResultT:
        """``unseen@k``: share of ``k`` the user has not seen in ``train=``."""
        return self._one("unseen", k, options)

    def arp(self, k: Cutoff, **options: Any) -> ResultT:
        """``arp@k``: average popularity of the top ``k`` items (needs ``train=``)."""
        return self._one("arp", k, options)

    def aplt(self, k: Cutoff, **options: Any) -> ResultT:
        """``aplt@k``: share of the top ``k`` in the long tail (needs ``train=``)."""
        return self._one("aplt", k, options)

    def aclt(self, k: Cutoff, **options: Any) -> ResultT:
        """``aclt@k``: number of the top ``k`` in the long tail (needs ``train=``)."""
        return self._one("aclt", k, options)

    def coverage(self, k: Cutoff, **options: Any) -> ResultT:
        """``coverage@k``: share of the catalog recommended (per system; ``catalog=``)."""
        return self._one("coverage", k, options)

    def entropy(self, k: Cutoff, **options: Any) -> ResultT:
        """``entropy@k``: distributional coverage of the recommended items (per system)."""
        return self._one("entropy", k, options)

    def gini(self, k: Cutoff, **options: Any) -> ResultT:
        """``gini@k``: inequality of the items' exposure (per system; lower is better)."""
        return self._one("gini", k, options)

    def personalization(self, k: Cutoff, **options: Any) -> ResultT:
        """``personalization@k``: how different the users' lists are (per system)."""
        return self._one("personalization", k, options)

    def auc(self, k: Cutoff = None, **options: Any) -> ResultT:
        """``auc`` or ``auc@k``: per-query ROC AUC of the judged rows."""
        return self._one("auc", k, options)

    def fall_out(self, k: Cutoff, **options: Any) -> ResultT:
        """``fall_out@k``: share of the non-relevant rows retrieved in the top ``k``."""
        return self._one("fall_out", k, options)

    def gauc(self, **options: Any) -> ResultT:
        """``gauc``: per-user AUC, weighted into one value per system."""
        return self._one("gauc", None, options)

    def ild(self, k: Cutoff, **options: Any) -> ResultT:
        """``ild@k``: intra-list diversity (``items=`` features or ``train=`` co-occurrence)."""
        return self._one("ild", k, options)

    def ils(self, k: Cutoff, **options: Any) -> ResultT:
        """``ils@k``: intra-list similarity, the mean similarity of the top ``k``'s pairs."""
        return self._one("ils", k, options)

    def categorical_diversity(self, k: Cutoff, **options: Any) -> ResultT:
        """``categorical_diversity@k``: distinct categories of the top ``k`` over ``k``."""
        return self._one("categorical_diversity", k, options)

    def serendipity(self, k: Cutoff, **options: Any) -> ResultT:
        """``serendipity@k``: relevant items unlike the user's train history."""
        return self._one("serendipity", k, options)

    def unexpectedness(self, k: Cutoff, **options: Any) -> ResultT:
        """``unexpectedness@k``: share of the top ``k`` not in the ``baseline=`` system's."""
        return self._one("unexpectedness", k, options)


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

    def compare(
        self, metrics: Sequence[str | Metric | MetricRequest] | str | Metric, **options: Any
    ) -> pl.DataFrame:
        """Compare the systems of ``by=`` (inside each segment of ``within=``), paired by query.

        See :func:`polars_rankeval.compare`.
        """
        return compare(self._frame, metrics, **options)

    def similarity(self, metrics: str | Sequence[str], **options: Any) -> pl.DataFrame:
        """How different the systems of ``by=`` rank; see :func:`polars_rankeval.similarity`."""
        return similarity(self._frame, metrics, **options)


@pl.api.register_dataframe_namespace("rank_eval")
class DataFrameRankEval(_FrameNamespace[pl.DataFrame]):
    """``df.rank_eval``: evaluates eagerly and returns a DataFrame."""


@pl.api.register_lazyframe_namespace("rank_eval")
class LazyFrameRankEval(_FrameNamespace[pl.LazyFrame]):
    """``lf.rank_eval``: returns a LazyFrame; nothing runs until you collect."""


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
