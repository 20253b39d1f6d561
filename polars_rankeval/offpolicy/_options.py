"""What every off-policy function reads the same way: the log, estimator names, columns.

One place decides how ``estimators=`` is spelled (case, ``-`` for ``_``, repeats), what a
column option must hold, and how an option with a column per target policy is matched to the
policies of ``target=``, so the bandit and slate functions (and their Spark twins) agree.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping, Sequence

import polars as pl

from polars_rankeval._engine.columns import as_polars
from polars_rankeval._engine.tables import _scan_path
from polars_rankeval.errors import InvalidOptionError, UnknownMetricError


def parse_names(estimators: object, known: Sequence[str], family: str) -> tuple[str, ...]:
    """The estimator names, lower-cased, in order, each once; an unknown one is an error.

    Examples
    --------
    >>> parse_names("ips, SNIPS,ips,dr-os", ["ips", "snips", "dr_os"], "bandit")
    ('ips', 'snips', 'dr_os')
    """
    if isinstance(estimators, str):
        names: list[object] = list(estimators.split(","))
    elif isinstance(estimators, Sequence):
        names = list(estimators)
    else:
        msg = f"estimators= must be names or one comma-separated string, got {estimators!r}"
        raise InvalidOptionError(msg)
    out: list[str] = []
    for name in names:
        if not isinstance(name, str):
            msg = f"estimators= must hold estimator names (str), got {name!r}"
            raise InvalidOptionError(msg)
        key = name.strip().lower().replace("-", "_")
        if key not in known:
            close = difflib.get_close_matches(key, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            msg = f"unknown estimator {name!r}: the {family} estimators are {list(known)}{hint}"
            raise UnknownMetricError(msg)
        if key not in out:
            out.append(key)
    if not out:
        msg = f"estimators= names no estimator; choose from {list(known)}"
        raise InvalidOptionError(msg)
    return tuple(out)


def column_name(option: str, value: object) -> str:
    """``value`` as a column name, or an error naming ``option``."""
    if not isinstance(value, str) or not value:
        msg = f"option {option}= must be a column name (str), got {value!r}"
        raise InvalidOptionError(msg)
    return value


def per_policy(option: str, value: object, policies: Sequence[str]) -> dict[str, str]:
    """An option holding one column per target policy, as {policy: column}.

    A column (one policy only), a list in the order of ``target=``, or a dict
    ``{policy: column}`` naming every policy.

    Examples
    --------
    >>> per_policy("target_reward_model", ["dm_a", "dm_b"], ["a", "b"])
    {'a': 'dm_a', 'b': 'dm_b'}
    """
    if value is None:
        return {}
    if isinstance(value, str):
        if len(policies) != 1:
            msg = (
                f"option {option}= must name one column per target policy ({list(policies)}): "
                f"pass a dict {{policy: column}} or a list in the order of target=, got {value!r}"
            )
            raise InvalidOptionError(msg)
        return {policies[0]: value}
    if isinstance(value, Mapping):
        out = {str(k): column_name(option, v) for k, v in value.items()}
    elif isinstance(value, Sequence):
        columns = [column_name(option, v) for v in value]
        if len(columns) != len(policies):
            msg = (
                f"option {option}= lists {len(columns)} column(s) for {len(policies)} target "
                f"policies {list(policies)}; give one per policy, in the order of target="
            )
            raise InvalidOptionError(msg)
        out = dict(zip(policies, columns, strict=True))
    else:
        msg = f"option {option}= must be a column, a list or a dict {{policy: column}}"
        raise InvalidOptionError(msg)
    if set(out) != set(policies):
        msg = (
            f"option {option}= must give a column for each target policy {list(policies)}, "
            f"got one for {sorted(out)}"
        )
        raise InvalidOptionError(msg)
    return out


def read_log(data: object) -> pl.LazyFrame:
    """The log as a LazyFrame: a Polars, pandas or Arrow frame, or a path read lazily.

    Examples
    --------
    >>> read_log(pl.DataFrame({"reward": [1.0]})).collect().height
    1
    """
    if isinstance(data, (str, os.PathLike)):
        return _scan_path(data, "data")
    return as_polars(data, "data").lazy()
