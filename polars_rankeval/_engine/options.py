"""The one validator of option values: a "did you mean" error naming the option and its values."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import TypeVar

from polars_rankeval.errors import InvalidOptionError

ChoiceT = TypeVar("ChoiceT")


def check_choice(option: str, value: object, allowed: Sequence[ChoiceT]) -> ChoiceT:
    """Return ``value`` if it is one of ``allowed``; else raise naming the closest value.

    Examples
    --------
    >>> check_choice("ties", "trec", ["trec", "expected"])
    'trec'
    >>> check_choice("ties", "expectd", ["trec", "expected"])
    Traceback (most recent call last):
    ...
    polars_rankeval.errors.InvalidOptionError: option ties= must be one of ['trec', 'expected'], got 'expectd'; did you mean 'expected'?
    """  # noqa: E501
    for choice in allowed:
        # Identity of type too: True must not pass as 1, nor 1 as True.
        if type(value) is type(choice) and value == choice:
            return choice
    if isinstance(value, str):
        # Metric strings are lower-cased before parsing ("map(denominator=min_k_r)").
        folded = [c for c in allowed if isinstance(c, str) and c.lower() == value.lower()]
        if len(folded) == 1:
            return folded[0]
    words = [str(choice) for choice in allowed]
    close = difflib.get_close_matches(str(value), words, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    msg = f"option {option}= must be one of {list(allowed)}, got {value!r}{hint}"
    raise InvalidOptionError(msg)
