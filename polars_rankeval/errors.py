"""Exceptions raised by polars_rankeval.

Every error names the column, option or value at fault and says what was expected.
All of them derive from :class:`RankEvalError`, so ``except RankEvalError`` catches
everything this package raises on bad input.
"""

from __future__ import annotations


class RankEvalError(ValueError):
    """Base class of every error raised on bad input or options."""


class ColumnNotFoundError(RankEvalError, KeyError):
    """A column named by an option is not in the input."""

    def __str__(self) -> str:
        # KeyError would otherwise quote the whole message.
        return str(self.args[0]) if self.args else ""


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


class EmptyEvaluationWarning(UserWarning):
    """No query was evaluated: the result is empty and the means are null."""
