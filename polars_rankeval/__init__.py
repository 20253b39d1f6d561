"""polars_rankeval: trec_eval-exact ranking metrics as Polars expressions.

Importing the package registers the ``rank_eval`` namespace on ``pl.DataFrame``,
``pl.LazyFrame`` and ``pl.Expr``.
"""

from __future__ import annotations

from polars_rankeval import metrics, plot  # plot imports Altair only when drawing
from polars_rankeval import namespace as _namespace  # noqa: F401  (registers namespaces)
from polars_rankeval._engine.evaluate import evaluate
from polars_rankeval._names.registry import known_metrics, parse_metric
from polars_rankeval.agreement import RankCorrelation, label_agreement, rank_correlation
from polars_rankeval.agreement._similarity import similarity
from polars_rankeval.attribution import Explanation, explain
from polars_rankeval.comparison import (
    bootstrap,
    compare,
    compare_per_query,
    discriminative_power,
    queries_needed,
)
from polars_rankeval.comparison._report import Report, report
from polars_rankeval.errors import (
    BootstrapBiasWarning,
    ColumnNotFoundError,
    ColumnTypeError,
    ColumnValueError,
    DepthWarning,
    DuplicateItemError,
    EmptyEvaluationWarning,
    EmptyQueriesWarning,
    GroupWarning,
    InvalidOptionError,
    PerSystemMetricWarning,
    QueryCoverageWarning,
    RankEvalDeprecationWarning,
    RankEvalError,
    RankEvalWarning,
    ResourceError,
    SubtopicWarning,
    TieWarning,
    TrecFormatError,
    UndefinedMetricWarning,
    UnknownMetricError,
    UnusedTableWarning,
    WeightWarning,
)
from polars_rankeval.expr import metric_expr
from polars_rankeval.fairness import expected_exposure, group_exposure
from polars_rankeval.gate import CheckResult, check
from polars_rankeval.io import join_run_qrels, read_trec_qrels, read_trec_run
from polars_rankeval.lists import from_lists
from polars_rankeval.metrics import Metric
from polars_rankeval.offpolicy import (
    click_metrics,
    examination_from_randomized,
    interleaving,
    off_policy,
    slate_off_policy,
)
from polars_rankeval.sampling import (
    SampledVsFull,
    sample_negatives,
    sampled_correction,
    sampled_log,
    sampled_vs_full,
)
from polars_rankeval.ties import tie_report

__version__ = "0.1.0"

__all__ = [
    "BootstrapBiasWarning",
    "CheckResult",
    "ColumnNotFoundError",
    "ColumnTypeError",
    "ColumnValueError",
    "DepthWarning",
    "DuplicateItemError",
    "EmptyEvaluationWarning",
    "EmptyQueriesWarning",
    "Explanation",
    "GroupWarning",
    "InvalidOptionError",
    "Metric",
    "PerSystemMetricWarning",
    "QueryCoverageWarning",
    "RankCorrelation",
    "RankEvalDeprecationWarning",
    "RankEvalError",
    "RankEvalWarning",
    "Report",
    "ResourceError",
    "SampledVsFull",
    "SubtopicWarning",
    "TieWarning",
    "TrecFormatError",
    "UndefinedMetricWarning",
    "UnknownMetricError",
    "UnusedTableWarning",
    "WeightWarning",
    "__version__",
    "bootstrap",
    "check",
    "click_metrics",
    "compare",
    "compare_per_query",
    "discriminative_power",
    "evaluate",
    "examination_from_randomized",
    "expected_exposure",
    "explain",
    "from_lists",
    "group_exposure",
    "interleaving",
    "join_run_qrels",
    "known_metrics",
    "label_agreement",
    "metric_expr",
    "metrics",
    "off_policy",
    "parse_metric",
    "plot",
    "queries_needed",
    "rank_correlation",
    "read_trec_qrels",
    "read_trec_run",
    "report",
    "sample_negatives",
    "sampled_correction",
    "sampled_log",
    "sampled_vs_full",
    "similarity",
    "slate_off_policy",
    "tie_report",
]
