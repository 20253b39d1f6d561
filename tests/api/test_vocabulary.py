"""One metric vocabulary: strings, builders, namespace methods and the docs list cover the same
families, all from the one families table (``polars_rankeval/_names/families.py``).

Expected spellings and values are written by hand here; the table is only what is checked.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import polars as pl
import pytest

import polars_rankeval as rke
from polars_rankeval import metrics
from polars_rankeval._names.families import FAMILIES, TABLE, docs_table
from polars_rankeval._names.registry import parse_metrics
from polars_rankeval.namespace import DataFrameRankEval, ExprRankEval, LazyFrameRankEval

ROOT = Path(__file__).resolve().parents[2]
#: Namespace methods that are not metric families.
NOT_FAMILIES = {"evaluate", "compare", "similarity", "metric"}
# the functions above evaluate (logs another policy produced), not metric families
NOT_FAMILIES |= {"off_policy", "slate_off_policy", "click_metrics", "interleaving"}
# tables of group exposure and the sampled-ranking evaluation (their columns are families)
NOT_FAMILIES |= {"group_exposure", "expected_exposure", "explain"}
#: Names in rke.metrics that are not one family's builder.
NOT_BUILDERS = {"Metric", "iprec_at_recall_levels"}  # iprec_at_recall_levels: 11 metrics


#: Options a family cannot do without.
REQUIRED_OPTIONS: dict[str, dict[str, object]] = {
    "iprec_at_recall": {"level": 0.5},
    "unexpectedness": {"baseline": "b"},
    "exp": {"combo": "min_max_ratio"},
    "expu": {"combo": "min_max_ratio"},
    "expru": {"combo": "min_max_ratio"},
    "skew": {"group": "a"},
    **{cwl: {"max_rel": 3} for cwl in ("inst", "insq", "bpm", "sdcg")},
    **{cwl: {"max_rel": 3} for cwl in ("nerr8", "nerr9", "nerr10", "nerr11")},
}


def _string(family_name: str) -> str:
    """A metric string of the family, with the parameters it needs."""
    cutoff = "@3" if FAMILIES[family_name].cutoff == "required" else ""
    options = ",".join(f"{k}={v}" for k, v in REQUIRED_OPTIONS.get(family_name, {}).items())
    return f"{family_name}{cutoff}({options})" if options else f"{family_name}{cutoff}"


def _methods(cls: type) -> dict[str, object]:
    return {
        name: member
        for name, member in inspect.getmembers(cls, inspect.isfunction)
        if not name.startswith("_") and name not in NOT_FAMILIES
    }


@pytest.mark.parametrize("family", TABLE, ids=lambda family: family.name)
def test_every_family_has_a_string_a_builder_and_methods(family):
    # the string: parsed, it builds the family's metric under the family's name
    [(label, metric)] = parse_metrics(_string(family.name))
    assert label == _string(family.name)
    cutoff = [3] if family.cutoff == "required" else []
    built = family.build(*cutoff, **REQUIRED_OPTIONS.get(family.name, {}))
    assert metric.name == built.name
    # the builder, under its own name and under the string's spelling
    assert getattr(metrics, family.build.__name__) is family.build
    assert getattr(metrics, family.ident) is family.build
    assert family.ident.isidentifier()
    # the namespace methods, on every namespace, under both names
    for cls in (DataFrameRankEval, LazyFrameRankEval, ExprRankEval):
        for name in {family.ident, family.build.__name__}:
            method = getattr(cls, name)
            assert method.family == family.name
            assert family.name in (method.__doc__ or "")
            # k where the family takes a cutoff, required exactly when the strings need one
            k = inspect.signature(method).parameters.get("k")
            if family.cutoff == "none":
                assert k is None
            else:
                assert k is not None
                assert (k.default is inspect.Parameter.empty) == (family.cutoff == "required")


def test_no_builder_and_no_method_without_a_family():
    builds = {family.build for family in TABLE}
    for name in metrics.__all__:
        if name not in NOT_BUILDERS:
            assert getattr(metrics, name) in builds, f"rke.metrics.{name} is no family's builder"
    for cls in (DataFrameRankEval, LazyFrameRankEval, ExprRankEval):
        for name, method in _methods(cls).items():
            assert getattr(method, "family", None) in FAMILIES, f"{cls.__name__}.{name}"
    # builders and methods are the same names: one vocabulary
    assert set(_methods(DataFrameRankEval)) == set(metrics.__all__) - NOT_BUILDERS
    assert set(_methods(ExprRankEval)) == set(metrics.__all__) - NOT_BUILDERS


def test_builder_aliases_are_spelled_like_the_strings():
    # written by hand: the string's spelling -> the builder users know
    assert metrics.map is metrics.average_precision
    assert metrics.mrr is metrics.reciprocal_rank
    assert metrics.p is metrics.precision
    assert metrics.mar is metrics.mean_average_recall
    assert metrics.infap is metrics.inferred_average_precision
    assert metrics.unj is metrics.unjudged
    assert metrics.set_p is metrics.set_precision
    assert metrics.hit_rate(10).name == "hit_rate@10"
    assert rke.metrics.map(10).name == "map@10"


def test_families_that_had_no_method_have_one():
    # q1: a(1) b(0) c(1), R = 2; q2: x(0) y(1), R = 1.
    log = pl.DataFrame(
        {
            "query": ["q1", "q1", "q1", "q2", "q2"],
            "item": ["a", "b", "c", "x", "y"],
            "score": [3.0, 2.0, 1.0, 2.0, 1.0],
            "relevance": [1, 0, 1, 0, 1],
        }
    )
    # set_p: q1 2/3, q2 1/2 -> mean 7/12; num_rel_ret: 2 + 1 = 3 (summed)
    assert log.rank_eval.set_p()["set_p"].item() == pytest.approx(7 / 12)
    assert log.rank_eval.num_rel_ret()["num_rel_ret"].item() == 3
    # hit_rate@1: q1 1, q2 0 -> 0.5; map by its string's name and by its builder's
    assert log.rank_eval.hit_rate(1)["hit_rate@1"].item() == pytest.approx(0.5)
    # AP q1 = (1/1 + 2/3) / 2 = 5/6, q2 = (1/2) / 1 -> mean 2/3
    assert log.rank_eval.average_precision()["map"].item() == pytest.approx(2 / 3)
    assert log.rank_eval.map()["map"].item() == pytest.approx(2 / 3)
    # iprec_at_recall keeps its positional level: at recall 0.5, q1 1.0, q2 0.5
    assert log.rank_eval.iprec_at_recall(0.5).item() == pytest.approx(0.75)
    # in an expression: mrr per query q1 1, q2 1/2
    out = log.group_by("query").agg(pl.col("relevance").rank_eval.mrr()).sort("query")
    assert out["mrr"].to_list() == pytest.approx([1.0, 0.5])


def test_docs_list_every_family_from_the_table():
    page = (ROOT / "docs" / "pages" / "metrics.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- families:[^\n]*-->\n(.*?)<!-- /families -->", page, re.S)
    assert block is not None, "docs/pages/metrics.md lost its families list"
    assert block[1] == docs_table(), "regenerate the list with families.docs_table()"
    listed = re.findall(r"^\| `([^`@]+)(?:@k)?`", block[1], re.M)
    assert listed == [family.name for family in TABLE]
    assert len(block[1].splitlines()) == len(TABLE) + 2  # a "|" in a summary would split a row


def test_lazy_namespace_is_lazy_in_lazy_out():
    log = pl.DataFrame(
        {
            "system": ["a", "a", "b", "b"],
            "query": ["q1", "q2", "q1", "q2"],
            "item": ["x", "y", "x", "y"],
            "score": [1.0, 1.0, 1.0, 1.0],
            "relevance": [1, 0, 0, 1],
        }
    ).lazy()
    assert isinstance(log.rank_eval.map(by="system"), pl.LazyFrame)
    compared = log.rank_eval.compare(["p@1"], by="system", baseline="a")
    assert isinstance(compared, pl.LazyFrame)
    # a 1 then 0, b 0 then 1: equal means, one paired row
    assert compared.collect().height == 1
    assert isinstance(log.rank_eval.similarity("jaccard@1", by="system"), pl.LazyFrame)
    eager = log.collect()
    assert isinstance(eager.rank_eval.compare(["p@1"], by="system", baseline="a"), pl.DataFrame)
