"""One vocabulary: the parameter glossary, the output column names, the evaluation options.

Every public function names the same thing the same way. :data:`PARAMETERS` is the glossary
(``tests/api/test_glossary.py`` fails on a public parameter outside it; the API guide prints
it); the output constants name the columns every long result shares, so ``compare``,
``bootstrap``, ``similarity``, ``queries_needed`` and ``tie_report`` join and stack without
renames; :class:`EvaluateOptions` types the evaluation options that ``compare``, ``bootstrap``,
``check``, ``tie_report`` and ``discriminative_power`` forward to ``evaluate``, so mypy and IDEs
check them; :func:`renamed` keeps an old keyword working for one release, with a
:class:`~polars_rankeval.errors.RankEvalDeprecationWarning` at the user's line.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, TypedDict, TypeVar

from polars_rankeval._engine.warn import warn_at
from polars_rankeval.errors import InvalidOptionError, RankEvalDeprecationWarning

if TYPE_CHECKING:
    from polars_rankeval._engine.context import Ties
    from polars_rankeval._engine.settings import EmptyQueries, MissingQueries
    from polars_rankeval._engine.validation import Duplicates, NanScores
    from polars_rankeval.conventions import ConventionName, NegativeLabels, Unretrieved

# --- output columns ------------------------------------------------------------------------
#: The metric a long result's row is about; the first column of every long result.
METRIC = "metric"
#: How many queries a row's numbers are over (paired queries for a comparison).
N_QUERIES = "n_queries"
#: Queries only one system of a pair has, left out of the pair (compare, similarity).
N_DROPPED = "n_dropped"
#: A single estimate: the system's value of the metric (its summary over the queries).
VALUE = "value"
#: The baseline system's value beside ``value``.
BASELINE_VALUE = "baseline_value"
#: ``value - baseline_value`` (system minus baseline).
DELTA = "delta"
#: The interval of ``delta`` (of ``value`` where a row has no baseline).
CI_LOW, CI_HIGH = "ci_low", "ci_high"
#: Prefix of the baseline system's key columns: ``by="run"`` gives ``run`` and ``baseline_run``.
BASELINE_PREFIX = "baseline_"


def baseline_column(name: str) -> str:
    """The column holding the baseline's value of the ``by`` column ``name``.

    >>> baseline_column("run")
    'baseline_run'
    """
    return f"{BASELINE_PREFIX}{name}"


# --- parameters ---------------------------------------------------------------------------
#: The glossary: every parameter name of a public function, and what it means everywhere.
PARAMETERS: dict[str, str] = {
    # inputs
    "data": "the input table (DataFrame, LazyFrame, pandas, pyarrow; a path where stated): "
    "the log for evaluate and compare, a per-query table for compare_per_query, a compare "
    "result for report and plot.systems",
    "reference": "check: the table the candidate `data` is checked against",
    "other": "a second table of the same kind as `data`, for the symmetric functions "
    "(rank_correlation, label_agreement)",
    "run": "join_run_qrels: the run (query, item, score)",
    "qrels": "join_run_qrels: the relevance judgments (query, item, relevance)",
    "path": "a file to read or write",
    "text": "parse_metric: a metric's name",
    "tag": "read_trec_run: the run's name when the file has none",
    "subtopics": "read_trec_qrels: read a subtopic (ndeval) qrels file",
    "chart": "plot.save: the chart to save",
    # columns
    "query": "the query column's name",
    "item": "the item (document) column's name",
    "score": "the score column's name",
    "relevance": "the relevance label column's name",
    "by": "the column(s) whose values are the systems (one result row or group per value); "
    "off-policy and interleaving: segments of the log",
    "within": "segment column(s): each comparison is made inside each segment",
    "recommended": "from_lists: the column of recommended item lists",
    "relevant": "from_lists: the column of relevant item lists",
    "labels": "from_lists: the column of graded labels, parallel to `relevant`",
    "scores": "from_lists: the column of scores, parallel to `recommended`",
    # systems
    "baseline": "the value of `by` naming the baseline system (off-policy: a target policy's "
    "name; interleaving: a team)",
    "system": "the value of `by` naming the system compared with the baseline",
    # metrics
    "metrics": "the metrics: names, Metric objects, or one comma-separated string",
    "metric": "one metric, where exactly one makes sense",
    "positives": "sampled evaluation: the held-out relevant interactions (query, item)",
    "negatives": "sampled evaluation: the stored negative samples (sample_negatives' result)",
    "n_negatives": "sampled evaluation: negatives per list (per positive when per='pooled')",
    "strategy": "sample_negatives: how negatives are drawn ('uniform' or 'popularity')",
    "per": "sample_negatives: what one list is ('query', 'positive', or 'pooled': n per positive "
    "in the user's one list)",
    "protocol": "sample_negatives: a named sampling preset (RecBole's 'uni100', 'pop100'; 'ncf'; "
    "'one_plus_100')",
    "estimator": "sampled evaluation: Krichene & Rendle's estimate of the full metric from "
    "sampled ranks ('bv' or 'cls'; None: none)",
    "gamma": "estimator='bv': the weight of variance against squared bias, in [0, 1]",
    "n_items": "sampled_correction: how many items the positive is ranked among in full evaluation",
    "a": "explain: the first side: a convention, a mapping of settings, or a tool's numbers "
    "(a per-query table or a mean)",
    "b": "explain: the second side, of the same kinds as `a`",
    "top": "how many rows of the largest a report shows (the frames hold them all)",
    "tolerance": "how close two numbers must be to count as equal (default: half a unit of "
    "the last digit given)",
    "k": "a cutoff (an int, or several where stated)",
    "level": "iprec_at_recall: the recall level (a number in [0, 1])",
    "direction": "metric -> 'higher' or 'lower' is better, overriding or declaring a direction",
    "lower_is_better": "the list form of direction= for columns that are not our metrics",
    # evaluation options (EvaluateOptions)
    "per_query": "True: one row per (system, query) instead of one per system",
    "relevance_level": "the lowest label that counts as relevant",
    "missing_queries": "a judged query a system retrieved nothing for: 'skip' it or score it "
    "'zero' (trec_eval -c)",
    "unpaired_queries": "compare: a query only some systems have a value for: 'drop' it from the "
    "pair or score the others 'zero'",
    "ties": "how tied scores are ordered: 'trec', 'expected', 'optimistic', 'pessimistic'",
    "convention": "the preset whose definitions to reproduce (trec_eval, ir_measures, ranx, ...)",
    "negative_labels": "what a label below 0 means",
    "unretrieved": "whether judged but unretrieved rows count",
    "duplicates": "what to do with a repeated (query, item)",
    "nan_scores": "what to do with a NaN score",
    "empty_queries": "what to do with a query without a relevant item",
    "judged_only": "evaluate only the judged retrieved items (trec_eval -J)",
    "depth": "keep only each list's first `depth` retrieved items before evaluating (trec_eval -M)",
    "train": "the training interactions (novelty, popularity metrics)",
    "items": "the item attributes table (diversity metrics)",
    "catalog": "the catalog: its size or its items (coverage metrics)",
    "n_buckets": "evaluate in this many passes over query buckets (bounded memory)",
    "progress": "show progress",
    "spill_dir": "where passes spill partial results",
    "engine": "Polars' engine: 'auto', 'in-memory', 'streaming'",
    "tie_warning": "warn when the order of tied scores moves a mean by more than this; "
    "None: no check",
    "min_rows": "spark: the fewest rows a Spark partition is given",
    "n_partitions": "spark: the number of partitions",
    "route": "spark: how rows reach the workers",
    # statistics
    "test": "the paired test",
    "correction": "the multiple-comparison correction",
    "correction_scope": "which comparisons one correction covers",
    "alpha": "the significance level",
    "n_resamples": "resamples of a randomization or bootstrap test",
    "seed": "the random seed",
    "power": "queries_needed: the wanted power",
    "delta": "queries_needed: the difference to detect",
    "method": "rank_correlation: the correlation",
    "missing_systems": "rank_correlation: what to do with a system in only one ranking",
    # gate
    "fail_if": "check: rules that fail the check",
    "fail_if_significant": "check: fail on a significant loss",
    "floors": "check: metric -> the lowest allowed value",
    "ceilings": "check: metric -> the highest allowed value",
    "fail_on_missing_queries": "check: fail when the candidate lacks a query of the reference",
    # off-policy evaluation (logs another policy produced)
    "estimators": "the off-policy estimators: names or one comma-separated string",
    "target": "the target policy's probability column(s) of the logged action (several: a list "
    "or {name: column})",
    "propensity": "the logging policy's probability column of the logged action",
    "reward": "the reward column of the logged action",
    "reward_model": "the reward model's prediction column for the row's action",
    "target_reward_model": "per target policy, the reward model averaged over its actions (the "
    "DM term)",
    "logged": "candidate form: the boolean column marking each context's logged action",
    "position": "the position column: where the log showed the item (1 = top)",
    "clip": "the largest importance weight used (larger ones are cut to it)",
    "switch_threshold": "switch_dr: the largest weight whose correction is kept",
    "shrinkage": "dr_os: the shrinkage lambda of the weights",
    "interval": "how intervals are made: 'normal' (from the standard error) or 'bootstrap'",
    "examination": "click_metrics: the examination probability of each position",
    "click": "the click column (0/1)",
    "team": "interleaving: the column naming the ranker that contributed the row's item",
    # fairness of exposure
    "groups": "fairness: each item's groups (the item column plus one column per dimension, or "
    "the long layout item, dimension, group, weight)",
    "group_target": "fairness: each group's target share ('population', 'uniform', {group: "
    "share}, {dimension: {group: share}} or a table)",
    "dimension": "fairness: the dimension(s) of groups= to read ('region', 'region+gender'); "
    "None: all, intersected",
    "attention": "group_exposure: the attention each rank receives ('trec', 'log2', 'geometric', "
    "{rank: attention} or an expression over pl.col('rank'))",
    "p": "the geometric attention model's first-rank share of attention (0 < p < 1)",
    "sample": "the column of the sampled ranking's id: a stochastic ranker's several rankings per "
    "query",
    "relevant_only": "fairness: count only relevant items' exposure (TREC Fair 2022's Task 2 rule)",
    "target_len": "expected_exposure: the ranking length whose exposure scales the target (TREC "
    "Fair's 20)",
    # output
    "format": "the output format",
    "digits": "report: decimals shown",
    "sort": "report: the row order",
    "overwrite": "replace an existing file",
    "bins": "plot.distribution: histogram bins",
    "max_bars": "plot.per_query_delta: the most queries drawn",
    "recall_levels": "plot.precision_recall: the recall points",
    "warn_empty": "from_lists: warn about users without a recommended item",
    "options": "forwarded options (typed where they go to evaluate)",
}


# --- forwarded evaluation options -----------------------------------------------------------
class EvaluateOptions(TypedDict, total=False):
    """The options of :func:`~polars_rankeval.evaluate` that other functions forward to it.

    ``compare``, ``bootstrap``, ``check``, ``tie_report`` and ``discriminative_power`` take them
    as ``**options`` and hand them on; mypy and IDEs check the names and values.
    """

    relevance_level: int | None
    missing_queries: MissingQueries | None
    ties: Ties | None
    convention: ConventionName
    negative_labels: NegativeLabels | None
    unretrieved: Unretrieved | None
    duplicates: Duplicates | None
    nan_scores: NanScores | None
    empty_queries: EmptyQueries | None
    depth: int | None
    judged_only: bool
    train: object
    items: object
    catalog: object
    groups: object
    group_target: object
    n_buckets: int | Literal["auto"] | None
    progress: bool | None
    spill_dir: str | os.PathLike[str] | None
    query: str
    item: str
    score: str
    relevance: str
    engine: Literal["auto", "in-memory", "streaming"]
    tie_warning: float | None


FuncT = TypeVar("FuncT", bound=Callable[..., Any])


def renamed(**old_to_new: str) -> Callable[[FuncT], FuncT]:
    """Keep old keyword names working for one release, with a deprecation warning.

    The signature (and so the docs and the glossary test) shows only the new names.

    >>> @renamed(log="data")
    ... def f(data: int) -> int:
    ...     return data
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as seen:
    ...     warnings.simplefilter("always")
    ...     f(log=3)
    3
    >>> str(seen[0].message)
    'f(): log= is renamed data=; the old name is removed in 0.3.0'
    """

    def wrap(function: FuncT) -> FuncT:
        name = function.__name__

        @functools.wraps(function)
        def forward(*args: Any, **keywords: Any) -> Any:
            for old, new in old_to_new.items():
                if old not in keywords:
                    continue
                if new in keywords:
                    msg = f"{name}() got both {old}= and {new}=; {old}= is the old name of {new}="
                    raise InvalidOptionError(msg)
                warn_at(
                    f"{name}(): {old}= is renamed {new}=; the old name is removed in 0.3.0",
                    RankEvalDeprecationWarning,
                )
                keywords[new] = keywords.pop(old)
            return function(*args, **keywords)

        return forward  # type: ignore[return-value]

    return wrap
