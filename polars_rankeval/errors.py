"""Exceptions raised by polars_rankeval.

Every error names the column, option or value at fault and says what was expected.
All of them derive from :class:`RankEvalError`, so ``except RankEvalError`` catches
everything this package raises on bad input.
"""

from __future__ import annotations

# What Polars appends to the message of an exception raised inside a plan.
_POLARS_CONTEXT = "\n\nThis error occurred"


class RankEvalError(ValueError):
    """Base class of every error raised on bad input or options.

    A check that runs inside a Polars plan raises at ``collect()``, and Polars re-raises it
    as a new instance of the same class whose message ends with a dump of the expression that
    failed; that dump is cut off here, so users see our message and only ours.
    """

    def __init__(self, message: str = "", *args: object) -> None:
        message = str(message).split(_POLARS_CONTEXT, 1)[0]
        super().__init__(message, *args)
        self.message = message

    def __str__(self) -> str:
        # Also keeps KeyError (ColumnNotFoundError) from quoting the message.
        return self.message


class ColumnNotFoundError(RankEvalError, KeyError):
    """A column named by an option is not in the input."""


class ColumnTypeError(RankEvalError, TypeError):
    """A column has a dtype the metric cannot use."""


class DuplicateItemError(RankEvalError):
    """The same (query, item) pair occurs more than once."""


class UnknownMetricError(RankEvalError):
    """A metric string is not recognised."""


class InvalidOptionError(RankEvalError):
    """An option has a value outside its allowed set or range."""


class ColumnValueError(RankEvalError):
    """A column holds values the evaluation cannot use (a null id, a NaN score)."""


class RankEvalWarning(UserWarning):
    """Base class of every warning polars_rankeval gives.

    ``warnings.filterwarnings("ignore", category=rke.RankEvalWarning)`` silences them all (or
    ``"error"`` turns them into exceptions, as a strict pipeline may want). Each subclass is a
    ``UserWarning`` too, so filters written for that keep working.
    """


class EmptyEvaluationWarning(RankEvalWarning):
    """No query was evaluated: the result is empty and the means are null."""


class QueryCoverageWarning(RankEvalWarning):
    """Some run queries have no judgments, or some judged queries have no run rows.

    Like trec_eval, polars_rankeval evaluates the queries it can (the others are skipped, or
    scored 0 with ``missing_queries="zero"``); unlike it, it says so, with both counts.
    """


class TieWarning(RankEvalWarning):
    """The order of tied scores can move a reported mean by more than ``tie_warning``."""


class SubtopicWarning(RankEvalWarning):
    """Diversity qrels in which no query has more than one subtopic."""


class EmptyQueriesWarning(RankEvalWarning):
    """``empty_queries="drop"`` left out queries (users) that have nothing relevant."""


class PerSystemMetricWarning(RankEvalWarning):
    """A per-system metric (coverage, Gini, GAUC ...) has no per-query value to show."""


class BootstrapBiasWarning(RankEvalWarning):
    """A bootstrap interval excludes its own estimate: the metric is biased under resampling."""


class UnusedTableWarning(RankEvalWarning):
    """A table was passed (``train=``, ``items=``, ``catalog=``) but no metric asked reads it.

    Usually a preset chose another definition (``ild`` under ``convention="recommenders"``
    measures similarity by train co-occurrence, not from ``items=``) or an option is missing.
    """


class UndefinedMetricWarning(RankEvalWarning):
    """A metric has no value for the input (e.g. personalization over fewer than two lists)."""


class GroupWarning(RankEvalWarning):
    """A fairness target names a group that no item of ``groups=`` belongs to.

    Often a misspelt group (``"Europe "``, ``"europe"``): the group is kept with exposure 0, so
    it counts against every system, and the groups of the items it was meant for get no target.
    """


class DepthWarning(RankEvalWarning):
    """Systems compared on a depth-sensitive metric (``frp``, ``mean_rank``) differ in list depth.

    Such a metric scores a relevant row that was not retrieved as ``n + 1``, so a run of 10
    documents per query can beat a run of 1,000 only because it is shorter.
    """


class WeightWarning(RankEvalWarning):
    """Importance weights make an off-policy estimate unreliable.

    Given when the weights' effective sample size is tiny (a few rows carry the estimate) or
    when their mean is far from 1 (the propensities are wrong, or the logging policy never
    shows actions the target policy would take), naming the policy, the segment and the
    numbers.
    """


class RankEvalDeprecationWarning(RankEvalWarning, FutureWarning):
    """An old name (a keyword, a column, a function) still works but goes in a later release.

    A ``FutureWarning`` as well, so Python shows it by default wherever the call is made.
    """


class ResourceError(RankEvalError, OSError):
    """A file or folder the evaluation reads or writes cannot be used (disk full, corrupt file).

    The message names the file or folder and says what to do.
    """


class TrecFormatError(ColumnValueError):
    """A line of a TREC run or qrels file is malformed (field count, a field's type, encoding).

    The message starts with ``file:line:`` (the 1-based line of the first bad line); the
    attributes ``path`` and ``line`` hold them (``line`` is None for an empty file).
    """

    def __init__(self, message: str = "", *, path: str = "", line: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.line = line
