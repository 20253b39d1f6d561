"""One argument glossary: every public parameter name is one the glossary defines.

``polars_rankeval._engine.vocabulary.PARAMETERS`` says what each name means, everywhere; the API
guide prints it. A public function (``rke.__all__``, ``rke.plot``, ``rke.spark``, the namespace
methods) with a parameter outside it fails here, so a sixth name for the input table, or
``per_query`` meaning a table, cannot come back unnoticed. Old names kept for one release go
through ``renamed``, which leaves them out of the signature.
"""

from __future__ import annotations

import inspect
import re
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import polars_rankeval as rke
from polars_rankeval import namespace, plot
from polars_rankeval._engine.vocabulary import PARAMETERS, renamed
from polars_rankeval.errors import InvalidOptionError, RankEvalDeprecationWarning

ROOT = Path(__file__).resolve().parents[2]


def _public_callables() -> Iterator[tuple[str, Callable[..., Any]]]:
    for name in rke.__all__:
        value = getattr(rke, name)
        if inspect.isfunction(value):
            yield f"rke.{name}", value
    for name in plot.__all__:
        value = getattr(plot, name)
        if inspect.isfunction(value):
            yield f"rke.plot.{name}", value
    try:
        from polars_rankeval import spark
    except ImportError:  # pragma: no cover - the spark module imports pyspark lazily
        spark = None
    if spark is not None:
        for name in getattr(spark, "__all__", []):
            value = getattr(spark, name)
            if inspect.isfunction(value):
                yield f"rke.spark.{name}", value
    for cls in (namespace.DataFrameRankEval, namespace.LazyFrameRankEval, namespace.ExprRankEval):
        for name, value in inspect.getmembers(cls, inspect.isfunction):
            if not name.startswith("_"):
                yield f"{cls.__name__}.{name}", value


def test_every_public_parameter_is_in_the_glossary() -> None:
    outside = []
    for where, function in _public_callables():
        for parameter in inspect.signature(function).parameters.values():
            if parameter.name == "self":
                continue
            if parameter.name not in PARAMETERS:
                outside.append(f"{where}({parameter.name})")
    assert outside == [], f"parameters outside the glossary: {outside}"


def test_the_walk_sees_the_api() -> None:
    # a walk that found nothing would pass the test above without checking anything
    seen = dict(_public_callables())
    assert {"rke.evaluate", "rke.compare", "rke.check", "rke.plot.per_query_delta"} <= set(seen)
    assert "DataFrameRankEval.ndcg" in seen


def test_a_name_outside_the_glossary_is_caught() -> None:
    def odd(log: object, *, ks: int = 1) -> None:
        del log, ks

    names = [p for p in inspect.signature(odd).parameters if p not in PARAMETERS]
    assert names == ["log", "ks"]


def test_the_api_guide_prints_the_glossary() -> None:
    guide = (ROOT / "docs" / "pages" / "guides" / "api.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `([a-z_]+)` \| (.+?) \|$", guide, flags=re.MULTILINE))
    assert rows == PARAMETERS


def test_a_renamed_keyword_warns_at_the_callers_line_and_still_works() -> None:
    @renamed(log="data")
    def evaluate_like(data: pl.DataFrame) -> int:
        return data.height

    frame = pl.DataFrame({"a": [1, 2]})
    with pytest.warns(RankEvalDeprecationWarning, match="log= is renamed data=") as record:
        assert evaluate_like(log=frame) == 2
    assert record[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert evaluate_like(data=frame) == 2  # the new name says nothing
    with pytest.raises(InvalidOptionError, match="both log= and data="):
        evaluate_like(log=frame, data=frame)
    assert issubclass(RankEvalDeprecationWarning, rke.RankEvalWarning)
    assert issubclass(RankEvalDeprecationWarning, FutureWarning)  # shown by default
