"""``rke.explain``: its two numbers are ``evaluate``'s, its effects sum to the difference and are
the Shapley values of evaluations made here by hand, and it finds the setup behind a tool's numbers.

The expected values come from ``rke.evaluate`` with explicit keywords and metric options (the
engine checked against trec_eval and each tool elsewhere), combined by the Shapley formula written
out here; never from explain's own code.
"""

from __future__ import annotations

import math
import warnings
from itertools import permutations

import polars as pl
import pytest

import polars_rankeval as rke
from polars_rankeval.conventions import CONVENTIONS


def _log(seed: int = 3) -> pl.DataFrame:
    """Ties, graded, negative and unjudged labels, unretrieved judged rows, an all-zero query."""
    import random

    rng = random.Random(seed)
    rows = []
    for q in range(12):
        for i in range(rng.randint(3, 9)):
            score = None if rng.random() < 0.15 else float(rng.choice([1, 2, 2, 3, 4, 5, 5]))
            label = rng.choice([None, None, 0, 0, 1, 2, 3, -1])
            if q == 0:  # nothing relevant
                label = rng.choice([None, 0])
            rows.append((f"q{q:02d}", f"d{i}", score, label))
    rows.append(("q00", "dz", 9.0, 0))
    return pl.DataFrame(rows, schema=["query", "item", "score", "relevance"], orient="row")


LOG = _log()
METRICS = ["ndcg@5", "ndcg", "map", "p@3", "recall@5", "mrr", "r_precision"]


def _pairs() -> list[tuple[str, str]]:
    pairs = []
    for metric in METRICS:
        family = rke.parse_metric(metric).name.split("@")[0]
        for name, convention in CONVENTIONS.items():
            defines = convention.families is None or family in convention.families
            if defines and ("@" in metric or family not in convention.cutoff_only):
                pairs.append((metric, name))
    return pairs


def _evaluate(log: pl.DataFrame, metric: str, **keywords: object) -> pl.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rke.RankEvalWarning)
        return rke.evaluate(log, metric, tie_warning=None, **keywords)  # type: ignore[arg-type]


@pytest.mark.parametrize(("metric", "convention"), _pairs())
def test_each_side_is_what_evaluate_gives_under_that_preset(metric: str, convention: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rke.RankEvalWarning)
        why = rke.explain(LOG, metric, "trec_eval", convention)
    for value, preset in ((why.value_a, "trec_eval"), (why.value_b, convention)):
        expected = _evaluate(LOG, metric, convention=preset).item()
        assert value == pytest.approx(expected, abs=1e-12)
    per_query = _evaluate(LOG, metric, convention=convention, per_query=True)
    assert why.per_query is not None
    got = dict(why.per_query.select("query", "value_b").drop_nulls().iter_rows())
    assert got == pytest.approx(dict(per_query.iter_rows()), abs=1e-12)
    # the effects account for the whole difference, in the mean and in each query
    total = why.causes.get_column("effect").sum() if why.causes.height else 0.0
    assert total == pytest.approx(why.difference, abs=1e-12)
    both = why.per_query.drop_nulls("difference")
    if why.causes.height:
        summed = both.select(pl.sum_horizontal(why.causes.get_column("setting").to_list()))
        assert summed.to_series().to_list() == pytest.approx(
            both.get_column("difference").to_list(), abs=1e-12
        )


def _shapley(value: dict[frozenset[str], float], names: list[str]) -> dict[str, float]:
    """The Shapley value as the average over every order of switching (the definition)."""
    orders = list(permutations(names))
    shares = dict.fromkeys(names, 0.0)
    for order in orders:
        switched: frozenset[str] = frozenset()
        for name in order:
            shares[name] += (value[switched | {name}] - value[switched]) / len(orders)
            switched = switched | {name}
    return shares


def test_the_effects_are_the_shapley_values_of_the_mixed_setups() -> None:
    # gain and ties interact (exp gain weighs the tied graded rows more); empty_queries moves
    # which queries are averaged. Every mix is evaluated here with evaluate's own keywords.
    b = {"gain": "exp", "ties": "expected", "empty_queries": "drop"}
    names = list(b)
    value: dict[frozenset[str], float] = {}
    for size in range(4):
        for subset in map(frozenset, __import__("itertools").combinations(names, size)):
            options = "(gain=exp)" if "gain" in subset else ""
            keywords = {name: b[name] for name in subset if name != "gain"}
            value[subset] = _evaluate(LOG, f"ndcg@5{options}", **keywords).item()
    expected = _shapley(value, names)
    with pytest.warns(rke.EmptyQueriesWarning):  # side b's own warning, at this line
        why = rke.explain(LOG, "ndcg@5", "trec_eval", b)
    got = dict(why.causes.select("setting", "effect").iter_rows())
    assert got == pytest.approx(expected, abs=1e-12)
    alone = dict(why.causes.select("setting", "alone").iter_rows())
    assert alone == pytest.approx(
        {name: value[frozenset({name})] - value[frozenset()] for name in names}, abs=1e-12
    )
    assert why.value_b == pytest.approx(value[frozenset(names)], abs=1e-12)
    # the all-zero query q00 leaves under empty_queries="drop": its effects are null there
    assert why.per_query is not None
    q00 = why.per_query.filter(pl.col("query") == "q00").row(0, named=True)
    assert q00["value_b"] is None
    assert q00["empty_queries"] is None
    queries = dict(why.causes.select("setting", "queries").iter_rows())
    assert queries["empty_queries"] == 1


def test_swapping_the_sides_negates_every_effect() -> None:
    with pytest.warns(rke.EmptyQueriesWarning):  # gdeval leaves out q00, with nothing relevant
        forward = rke.explain(LOG, "ndcg@5", "trec_eval", "gdeval")
    with pytest.warns(rke.EmptyQueriesWarning):
        backward = rke.explain(LOG, "ndcg@5", "gdeval", "trec_eval")
    assert backward.difference == pytest.approx(-forward.difference, abs=1e-15)
    effects = dict(forward.causes.select("setting", "effect").iter_rows())
    assert dict(backward.causes.select("setting", "effect").iter_rows()) == pytest.approx(
        {name: -effect for name, effect in effects.items()}, abs=1e-15
    )


def test_the_same_setup_on_both_sides_has_no_cause() -> None:
    why = rke.explain(LOG, "map", "trec_eval", {"convention": "trec_eval"})
    assert why.causes.height == 0
    assert why.difference == 0.0
    assert "No setting differs" in str(why)


@pytest.mark.parametrize(
    "hidden",
    [
        {"convention": "gdeval"},
        {"convention": "sklearn"},
        {"convention": "trec_eval", "gain": "exp", "ties": "expected"},
        {"convention": "trec_eval", "ideal_cutoff": "none"},
        {"convention": "trec_eval", "empty_queries": "drop"},
    ],
)
def test_a_tools_per_query_numbers_are_traced_to_the_setup_that_gives_them(
    hidden: dict[str, object],
) -> None:
    # the "other tool" is evaluate under settings explain is not told; explain finds them
    settings = {key: value for key, value in hidden.items() if key != "convention"}
    options = {k: v for k, v in settings.items() if k in ("gain", "ideal_cutoff")}
    spelled = ",".join(f"{key}={value}" for key, value in options.items())
    metric = "ndcg@2" + (f"({spelled})" if spelled else "")
    keywords = {k: v for k, v in settings.items() if k not in options}
    table = _evaluate(
        LOG, metric, convention=hidden["convention"], per_query=True, **keywords
    ).rename({metric: "their_ndcg"})
    why = rke.explain(LOG, "ndcg@2", "trec_eval", table)
    assert why.unmatched_b == 0, str(why)
    assert why.value_b == pytest.approx(table.get_column("their_ndcg").mean(), abs=1e-12)
    # the found setup holds the hidden settings' values
    for key, value in settings.items():
        assert why.setup_b.values[key] == value, str(why)


def test_a_printed_mean_is_matched_to_its_digits() -> None:
    exact = _evaluate(LOG, "ndcg@5", convention="gdeval").item()
    printed = round(exact, 4)
    why = rke.explain(LOG, "ndcg@5", printed, "trec_eval")
    assert why.unmatched_a == 0
    assert why.tolerance_a == pytest.approx(5e-5)
    assert why.setup_a.values["gain"] == "exp"
    assert "the mean" in str(why)
    assert "reproduced by" in str(why)
    # a mean nothing reproduces is said, not hidden
    lost = rke.explain(LOG, "ndcg@5", 0.0123, "trec_eval")
    assert lost.unmatched_a == 1
    assert "NOT reproduced" in str(lost)


def test_flatten_ranks_the_batch_as_one_list() -> None:
    log = pl.DataFrame(
        {
            "query": ["q1", "q1", "q2", "q2"],
            "item": ["a", "b", "a", "b"],
            "score": [0.9, 0.1, 0.2, 0.8],
            "relevance": [0, 1, 0, 1],
        }
    )
    why = rke.explain(log, "mrr", "trec_eval", {"flatten": True})
    # per query: 1/2 and 1; flattened: 0.9 (q1/a, 0), 0.8 (q2/b, 1) -> RR 1/2
    assert why.value_a == pytest.approx(0.75)
    assert why.value_b == pytest.approx(0.5)
    assert dict(why.causes.select("setting", "effect").iter_rows()) == pytest.approx(
        {"flatten": -0.25}
    )


def test_score_precision_rounds_before_ranking() -> None:
    log = pl.DataFrame(
        {
            "query": ["q"] * 2,
            "item": ["a", "b"],
            "score": [0.50004, 0.50001],
            "relevance": [0, 1],
        }
    )
    # rounded to 4 decimals the scores tie; trec_eval's tie rule puts b (item descending) first
    why = rke.explain(log, "p@1", "trec_eval", {"score_precision": 4})
    assert (why.value_a, why.value_b) == (0.0, 1.0)
    float32 = rke.explain(log, "p@1", "trec_eval", {"score_precision": "float32"})
    assert float32.value_b == 0.0  # float32 still tells them apart


def test_the_report_reads_in_one_screen() -> None:
    why = rke.explain(LOG, "ndcg@5", "trec_eval", "sklearn", top=3)
    text = str(why)
    assert text.splitlines()[0].startswith("ndcg@5: ")
    assert "under trec_eval" in text
    assert "under sklearn" in text
    assert "Queries that move most (3 of" in text
    assert len(text.splitlines()) < 25
    assert repr(why) == text


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (lambda: rke.explain(LOG, "ndcg@5", "trec_eval"), rke.InvalidOptionError, "b="),
        (
            lambda: rke.explain(LOG, "ndcg@5", "trec_eval", {"gian": "exp"}),
            rke.InvalidOptionError,
            "'gian' is not a setting",
        ),
        (
            lambda: rke.explain(LOG, "ndcg@5", "trec_eval", "trec"),
            rke.InvalidOptionError,
            "convention",
        ),
        (
            lambda: rke.explain(LOG, "ndcg@5", "trec_eval", {"score_precision": -1}),
            rke.InvalidOptionError,
            "score_precision",
        ),
        (
            lambda: rke.explain(LOG, "ndcg@5", "trec_eval", "trec_eval", query="qid"),
            rke.ColumnNotFoundError,
            "'qid'",
        ),
        (
            lambda: rke.explain(
                LOG.with_columns(pl.col("score").cast(pl.String)), "ndcg@5", "trec_eval", 0.5
            ),
            rke.ColumnTypeError,
            "must be numeric",
        ),
        (
            lambda: rke.explain(LOG, "ndcg@5,10", "trec_eval", "gdeval"),
            rke.InvalidOptionError,
            "names 2 metrics",
        ),
        (
            lambda: rke.explain(LOG, "ndcg@5", "trec_eval", pl.DataFrame({"qid": ["q1"]})),
            rke.ColumnNotFoundError,
            "no 'query' column",
        ),
        (
            lambda: rke.explain(
                LOG, "ndcg@5", "trec_eval", pl.DataFrame({"query": ["q1"], "x": [1.0], "y": [2.0]})
            ),
            rke.InvalidOptionError,
            "one value column",
        ),
        (
            lambda: rke.explain(
                LOG, "ndcg@5", "trec_eval", pl.DataFrame({"query": ["q1"], "value": ["x"]})
            ),
            rke.ColumnTypeError,
            "numeric",
        ),
        (
            lambda: rke.explain(LOG, "ndcg@5", "trec_eval", math.nan),
            rke.InvalidOptionError,
            "finite",
        ),
        (
            lambda: rke.explain(LOG, "ndcg@5", "trec_eval", [0.5]),
            rke.InvalidOptionError,
            "a per-query table",
        ),
        (
            lambda: rke.explain(
                LOG,
                "ndcg@5",
                "trec_eval",
                {
                    "gain": "exp",
                    "discount": "jarvelin",
                    "log_base": 10,
                    "ideal": "retrieved",
                    "gain_level": True,
                    "ideal_cutoff": "none",
                    "relevance_level": 2,
                    "missing_queries": "zero",
                    "empty_queries": "drop",
                },
            ),
            rke.InvalidOptionError,
            "9 settings differ",
        ),
    ],
)
def test_bad_input_is_refused_with_what_was_expected(
    call: object, error: type[Exception], words: str
) -> None:
    with pytest.raises(error, match=words.replace("(", r"\(")):
        call()  # type: ignore[operator]


def test_a_log_of_several_systems_is_refused_with_how_to_pick_one() -> None:
    two = pl.concat([LOG.with_columns(system=pl.lit(name)) for name in ("bm25", "neural")])
    with pytest.raises(rke.DuplicateItemError, match=r"explain takes one system's log") as caught:
        rke.explain(two, "ndcg@5", "trec_eval", "gdeval")
    assert "by='system'" not in str(caught.value)


def test_settings_that_only_exist_together_are_switched_together() -> None:
    # coverage's intersect= applies only with of=train: switching one alone is no definition
    log = pl.DataFrame(
        {
            "query": ["u1", "u1", "u2", "u2"],
            "item": [1, 2, 2, 9],
            "score": [2.0, 1.0, 2.0, 1.0],
            "relevance": [1, 0, 0, 1],
        }
    )
    train = pl.DataFrame({"query": ["u1", "u2", "u3"], "item": [1, 3, 4]})
    why = rke.explain(
        log,
        "coverage@2",
        "recommenders",
        "recbole",
        train=train,
        catalog=pl.DataFrame({"item": [1, 2, 3, 4, 9, 10]}),
    )
    # Recommenders: distinct recommended / distinct train items = 3/3; RecBole: / catalog = 3/6
    assert (why.value_a, why.value_b) == (pytest.approx(1.0), pytest.approx(0.5))
    assert why.causes.get_column("setting").to_list() == ["of+intersect"]
    assert why.causes.get_column("effect").to_list() == pytest.approx([-0.5])
    assert why.per_query is None  # a per-system metric: no per-query rows


def test_the_namespace_is_the_function() -> None:
    lazy = LOG.lazy().rank_eval.explain("ndcg@5", "trec_eval", "sklearn", top=2)
    assert str(lazy) == str(rke.explain(LOG, "ndcg@5", "trec_eval", "sklearn", top=2))
    quiet = LOG.rank_eval.explain("p@3", "trec_eval", "trec_eval")
    assert quiet.causes.height == 0


def test_settings_that_move_nothing_are_said_to() -> None:
    judged = LOG.filter(pl.col("relevance").is_not_null() & pl.col("score").is_not_null())
    why = rke.explain(judged, "p@3", "trec_eval", {"unretrieved": "drop"})
    assert why.causes.get_column("queries").to_list() == [0]
    assert "none changes a number on this log" in str(why)
