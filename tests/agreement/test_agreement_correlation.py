"""rke.rank_correlation: published values (ircor, TREC AutoJudge), scipy live, brute force."""

from __future__ import annotations

import itertools
import math

import numpy as np
import polars as pl
import pytest

import polars_rankeval as rke
from polars_rankeval.errors import (
    ColumnNotFoundError,
    ColumnValueError,
    DuplicateItemError,
    InvalidOptionError,
)

# julian-urbano/ircor tests/testthat/helper_data.R (R package ircor, Urbano & Marrero 2017).
IRCOR = {
    "set1": {
        "x": [0.897, 0.372, 0.908, 0.898, 0.661, 0.062, 0.177, 0.384, 0.498, 0.992],
        "y": [0.82, 0.406, 0.817, 0.953, 0.673, 0.073, 0.364, 0.547, 0.589, 0.988],
        "x.ties": [0.9, 0.4, 0.9, 0.9, 0.7, 0.1, 0.2, 0.4, 0.5, 1],
        "y.ties": [0.8, 0.4, 0.8, 1, 0.7, 0.1, 0.4, 0.5, 0.6, 1],
    },
    "set2": {
        "x": [0.266, 0.573, 0.202, 0.945, 0.629, 0.206, 0.687, 0.77, 0.718, 0.38],
        "y": [0.263, 0.843, 0.728, 0.928, 0.08, 0.114, 0.467, 0.641, 0.973, 0.644],
        "x.ties": [0.3, 0.6, 0.2, 0.9, 0.6, 0.2, 0.7, 0.8, 0.7, 0.4],
        "y.ties": [0.3, 0.8, 0.7, 0.9, 0.1, 0.1, 0.5, 0.6, 1, 0.6],
    },
    "set3": {
        "x": [0.185, 0.573, 0.944, 0.129, 0.468, 0.553, 0.761, 0.405, 0.976, 0.445],
        "y": [0.845, 0.272, 0.275, 0.924, 0.605, 0.334, 0.162, 0.872, 0.018, 0.25],
        "x.ties": [0.2, 0.6, 0.9, 0.1, 0.5, 0.6, 0.8, 0.4, 1, 0.4],
        "y.ties": [0.8, 0.3, 0.3, 0.9, 0.6, 0.3, 0.2, 0.9, 0, 0.2],
    },
}
# ircor tests/testthat/test_tau.R and test_tauAP.R (published to 4 decimals, tolerance 5e-5).
# tauAP(x, y) and tauAP_a(x, y): x the true (reference) scores, y the estimated ones.
IRCOR_EXPECTED = [
    ("kendall", "set1", "x", "y", 0.9111),
    ("kendall", "set2", "x", "y", 0.2889),
    ("kendall", "set3", "x", "y", -0.6889),
    ("kendall", "set1", "x.ties", "y.ties", 0.9398),
    ("kendall", "set2", "x.ties", "y.ties", 0.3765),
    ("kendall", "set3", "x.ties", "y.ties", -0.6510),
    ("tau_ap", "set1", "x", "y", 0.8519),
    ("tau_ap", "set2", "x", "y", 0.2504),
    ("tau_ap", "set3", "x", "y", -0.6971),
    ("tau_ap", "set1", "x", "y.ties", 0.7454),
    ("tau_ap", "set2", "x", "y.ties", 0.2692),
    ("tau_ap", "set3", "x", "y.ties", -0.5558),
    ("tau_ap_b", "set1", "x", "y", 0.8333),
    ("tau_ap_b", "set2", "x", "y", 0.2880),
    ("tau_ap_b", "set3", "x", "y", -0.668),
    ("tau_ap_b", "set1", "x.ties", "y.ties", 0.7321),
    ("tau_ap_b", "set2", "x.ties", "y.ties", 0.297),
    ("tau_ap_b", "set3", "x.ties", "y.ties", -0.7047),
]


def _table(values, name="m", systems=None):
    systems = systems or [f"s{i:02d}" for i in range(len(values))]
    return pl.DataFrame({"system": systems, name: [float(v) for v in values]})


@pytest.mark.parametrize(("method", "data", "ref", "est", "expected"), IRCOR_EXPECTED)
def test_ircor_published_values(method, data, ref, est, expected):
    if method == "kendall":
        pytest.importorskip("scipy")
    values = IRCOR[data]
    # ours: b is the reference, a the ranking evaluated against it
    found = rke.rank_correlation(_table(values[est]), _table(values[ref]), method=method)
    assert found.coefficient == pytest.approx(expected, abs=5e-5)
    if method != "tau_ap":  # the symmetric ones
        back = rke.rank_correlation(_table(values[ref]), _table(values[est]), method=method)
        assert back.coefficient == pytest.approx(found.coefficient, abs=1e-12)


# trec-auto-judge/auto-judge-evaluate tests/test_tau_ap_correlations.py (tauap_b).
AUTOJUDGE = [
    ([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], [10, 20, 30, 40, 50, 60, 70, 80, 90, 100], 1.0),
    ([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 1.0),
    ([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], [10, 20, 30, 40, 50, 60, 70, 80, 100, 90], 0.7777777777),
    ([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], [20, 10, 30, 40, 50, 60, 70, 80, 90, 100], 0.9753086),
    ([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], [-10, -20, -30, -40, -50, -60, -70, -80, -90, -100], -1.0),
    ([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], [-1, -2, -3, -4, -5, -6, -7, -8, -9, -10], -1.0),
]


@pytest.mark.parametrize(("a", "b", "expected"), AUTOJUDGE)
def test_autojudge_tau_ap_b(a, b, expected):
    for first, second in ((a, b), (b, a)):
        found = rke.rank_correlation(_table(first), _table(second), method="tau_ap_b")
        assert found.coefficient == pytest.approx(expected, abs=1e-7)


# --- brute force ------------------------------------------------------------------------------


def _yilmaz(evaluated, reference):
    """τ_AP as Yilmaz et al. define it (no ties): walk the evaluated list from the top."""
    order = sorted(range(len(evaluated)), key=lambda i: -evaluated[i])
    total = 0.0
    for position in range(1, len(order)):
        current = order[position]
        right = sum(reference[above] > reference[current] for above in order[:position])
        total += right / position
    return 2.0 / (len(order) - 1) * total - 1.0


def _expected_over_ties(evaluated, reference):
    """τ_AP,a: the mean of Yilmaz's τ_AP over every order of the evaluated list's ties."""
    groups = {}
    for index, value in enumerate(evaluated):
        groups.setdefault(value, []).append(index)
    orders = [list(itertools.permutations(members)) for _, members in sorted(groups.items())]
    found = []
    for choice in itertools.product(*orders):
        broken = [0.0] * len(evaluated)
        rank = 0
        for members in choice:  # ascending groups: later groups are better
            for index in members:
                broken[index] = rank
                rank += 1
        found.append(_yilmaz(broken, reference))
    return sum(found) / len(found)


def _ircor_tau_ap_b_ties(x, y):
    """ircor's tauAP_b_ties transcribed (R code, higher is better): y is walked."""
    n = len(x)
    total, walked = 0.0, 0
    for i in range(n):
        above = [j for j in range(n) if y[j] > y[i]]
        if not above:
            continue
        walked += 1
        total += sum(x[j] > x[i] for j in above) / len(above)
    return 2.0 / walked * total - 1.0


def _kendall_b(a, b):
    pairs = list(itertools.combinations(range(len(a)), 2))
    signs = [(np.sign(a[i] - a[j]), np.sign(b[i] - b[j])) for i, j in pairs]
    concordant = sum(sa * sb > 0 for sa, sb in signs)
    discordant = sum(sa * sb < 0 for sa, sb in signs)
    untied_a = sum(sa != 0 for sa, _ in signs)
    untied_b = sum(sb != 0 for _, sb in signs)
    return (concordant - discordant) / math.sqrt(untied_a * untied_b), concordant, discordant


@pytest.mark.parametrize("seed", range(12))
def test_brute_force_on_generated_rankings(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 8))
    reference = rng.permutation(n).astype(float)  # no ties: τ_AP's reference
    evaluated = rng.integers(0, 4, n).astype(float)  # ties
    a, b = _table(evaluated), _table(reference)
    found = rke.rank_correlation(a, b, method="tau_ap")
    assert found.coefficient == pytest.approx(_expected_over_ties(evaluated, reference), abs=1e-12)
    untied = rng.permutation(n).astype(float)
    found = rke.rank_correlation(_table(untied), b, method="tau_ap")
    assert found.coefficient == pytest.approx(_yilmaz(untied, reference), abs=1e-12)
    other = rng.integers(0, 3, n).astype(float)
    both = (_ircor_tau_ap_b_ties(evaluated, other) + _ircor_tau_ap_b_ties(other, evaluated)) / 2
    found = rke.rank_correlation(_table(evaluated), _table(other), method="tau_ap_b")
    if math.isnan(both):
        assert math.isnan(found.coefficient)
    else:
        assert found.coefficient == pytest.approx(both, abs=1e-12)
    # the pair counts and the swapped pairs, one by one
    tau, concordant, discordant = _kendall_b(evaluated, other)
    pytest.importorskip("scipy")
    found = rke.rank_correlation(_table(evaluated), _table(other))
    assert (found.concordant, found.discordant) == (concordant, discordant)
    if not math.isnan(tau):
        assert found.coefficient == pytest.approx(tau, abs=1e-12)
    names = [f"s{i:02d}" for i in range(n)]
    expected = set()
    for i, j in itertools.combinations(range(n), 2):
        if (evaluated[i] - evaluated[j]) * (other[i] - other[j]) < 0:
            first, second = (i, j) if evaluated[i] > evaluated[j] else (j, i)
            expected.add((names[first], names[second]))
    assert set(found.swapped.select("system_1", "system_2").rows()) == expected
    assert found.swapped.height == discordant


def test_scipy_live_on_an_evaluate_output():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(7)
    rows = 3000
    log = pl.DataFrame(
        {
            "system": rng.choice([f"run{i}" for i in range(9)], rows),
            "query": rng.integers(0, 25, rows).astype(str),
            "item": [f"d{i}" for i in range(rows)],
            "score": rng.random(rows),
            "relevance": rng.integers(0, 4, rows),
        }
    )
    out = rke.evaluate(log, ["p@10", "map", "ndcg@10"], by="system")
    p10, ap = out["p@10"].to_numpy(), out["map"].to_numpy()
    for method, function in (
        ("kendall", stats.kendalltau),
        ("spearman", stats.spearmanr),
        ("pearson", stats.pearsonr),
    ):
        found = rke.rank_correlation(out, out, metric=("p@10", "map"), method=method)
        expected = function(p10, ap)
        assert found.coefficient == pytest.approx(expected.statistic, abs=1e-12)
        assert found.p_value == pytest.approx(expected.pvalue, abs=1e-12)
        assert found.n_systems == 9
        assert (found.metric_a, found.metric_b) == ("p@10", "map")
    # one row, and LazyFrame input reads the same
    frame = rke.rank_correlation(out.lazy(), out.lazy(), metric=("p@10", "map")).to_frame()
    assert frame.height == 1
    assert frame["coefficient"][0] == pytest.approx(stats.kendalltau(p10, ap).statistic)


def test_compare_output_ranks_like_its_evaluate_output():
    pytest.importorskip("scipy")
    rng = np.random.default_rng(3)
    rows = 1500
    log = pl.DataFrame(
        {
            "system": rng.choice(["a", "b", "c", "d", "e"], rows),
            "query": rng.integers(0, 12, rows).astype(str),
            "item": [f"d{i}" for i in range(rows)],
            "score": rng.random(rows),
            "relevance": rng.integers(0, 3, rows),
        }
    )
    comparison = rke.compare(log, ["map", "p@5"], by="system", baseline="a")
    out = rke.evaluate(log, ["map", "p@5"], by="system")
    found = rke.rank_correlation(comparison, out, metric="map")
    assert found.coefficient == pytest.approx(1.0)
    assert found.n_systems == 5
    assert found.systems.sort("system")["a"].to_list() == pytest.approx(
        out.sort("system")["map"].to_list()
    )


def test_lower_is_better_metrics_rank_ascending():
    pytest.importorskip("scipy")
    table = pl.DataFrame(
        {
            "system": ["s1", "s2", "s3", "s4"],
            "map": [0.4, 0.3, 0.2, 0.1],
            "frp": [1.0, 2.0, 3.0, 4.0],  # polars_rankeval's first-relevant position: lower
            "latency": [10.0, 20.0, 30.0, 40.0],
        }
    )
    assert rke.rank_correlation(table, table, metric=("map", "frp")).coefficient == 1.0
    pearson = rke.rank_correlation(table, table, metric=("map", "frp"), method="pearson")
    assert pearson.coefficient == pytest.approx(1.0)
    # an unknown column is assumed higher-is-better unless declared
    assert rke.rank_correlation(table, table, metric=("map", "latency")).coefficient == -1.0
    declared = rke.rank_correlation(
        table, table, metric=("map", "latency"), lower_is_better=["latency"]
    )
    assert declared.coefficient == 1.0
    assert declared.systems["rank_b"].to_list() == [1, 2, 3, 4]


def test_top_keeps_the_references_best_systems():
    a = _table([10, 9, 8, 7, 6, 5, 4, 3, 2, 1])
    b = _table([10, 9, 8, 7, 6, 1, 2, 3, 4, 5])
    assert rke.rank_correlation(a, b, method="tau_ap_b", k=5).coefficient == 1.0
    found = rke.rank_correlation(a, b, method="tau_ap_b", k=7)
    assert found.n_systems == 7
    assert found.coefficient < 1.0
    # a tie at the cut keeps every system tied with the last one kept
    tied = _table([10, 9, 8, 8, 8, 1, 2, 3, 4, 5])
    assert rke.rank_correlation(a, tied, method="tau_ap_b", k=3).n_systems == 5


def test_systems_in_one_table_only():
    a = _table([3, 2, 1], systems=["x", "y", "z"])
    b = _table([3, 2, 1, 0], systems=["x", "y", "w", "v"])
    with pytest.raises(ColumnValueError, match=r"only in a: \['z'\]; only in b: \['v', 'w'\]"):
        rke.rank_correlation(a, b, method="tau_ap_b")
    found = rke.rank_correlation(a, b, method="tau_ap_b", missing_systems="drop")
    assert found.n_systems == 2
    assert found.coefficient == 1.0


@pytest.mark.parametrize("value", [float("nan"), None])
def test_a_system_without_a_value_is_named_as_such(value):
    """A NaN or null value was reported as a system missing from the other ranking (RC04/05)."""
    a = pl.DataFrame({"system": ["a", "b", "c"], "map": [0.1, value, 0.3]})
    b = pl.DataFrame({"system": ["a", "b", "c"], "map": [0.2, 0.1, 0.3]})
    with pytest.raises(ColumnValueError, match=r"value is NaN or null for systems \['b'\] in a;"):
        rke.rank_correlation(a, b, by="system")
    with pytest.raises(ColumnValueError, match=r"NaN or null for systems \['b'\] in b;") as caught:
        rke.rank_correlation(b, a, by="system")
    assert "only in" not in str(caught.value)
    # both causes at once are both named
    d = pl.DataFrame({"system": ["a", "c", "d"], "map": [0.2, 0.1, 0.3]})
    with pytest.raises(ColumnValueError, match=r"in a, and .*only in b: \['d'\]"):
        rke.rank_correlation(a, d, by="system")
    found = rke.rank_correlation(a, b, by="system", missing_systems="drop")
    assert found.n_systems == 2


def test_several_by_columns_match_systems_on_all():
    a = pl.DataFrame({"team": ["t", "t", "u"], "run": ["1", "2", "1"], "m": [3.0, 2.0, 1.0]})
    b = a.reverse().with_columns(pl.col("m") * 2)
    found = rke.rank_correlation(a, b, by=["team", "run"], method="tau_ap_b")
    assert found.coefficient == 1.0
    assert found.systems["system"].to_list() == ["t / 1", "t / 2", "u / 1"]


def test_errors():
    table = pl.DataFrame({"system": ["a", "b", "c"], "x": [1.0, 2, 3], "y": [3.0, 1, 2]})
    with pytest.raises(InvalidOptionError, match=r"metric columns \['x', 'y'\]"):
        rke.rank_correlation(table, table)
    with pytest.raises(ColumnNotFoundError, match="'z'"):
        rke.rank_correlation(table, table, metric="z")
    with pytest.raises(InvalidOptionError, match="method="):
        rke.rank_correlation(table, table, metric="x", method="tau")  # type: ignore[arg-type]
    with pytest.raises(InvalidOptionError, match="k="):
        rke.rank_correlation(table, table, metric="x", k=1)
    with pytest.raises(InvalidOptionError, match="missing_systems="):
        rke.rank_correlation(table, table, metric="x", missing_systems="skip")  # type: ignore[arg-type]
    with pytest.raises(InvalidOptionError, match="metric="):
        rke.rank_correlation(table, table, metric=("x", "y", "x"))  # type: ignore[arg-type]
    with pytest.raises(ColumnNotFoundError, match="by="):
        rke.rank_correlation(table, table, metric="x", by="run")
    tied = pl.DataFrame({"system": ["a", "b", "c"], "x": [1.0, 1, 3]})
    with pytest.raises(ColumnValueError, match="tau_ap_b"):
        rke.rank_correlation(table, tied, metric="x", method="tau_ap")
    twice = pl.concat([table, table])
    with pytest.raises(DuplicateItemError, match="one row per system"):
        rke.rank_correlation(twice, table, metric="x")
    one = table.head(1)
    with pytest.raises(ColumnValueError, match="at least two systems"):
        rke.rank_correlation(one, one, metric="x", method="tau_ap_b")


def test_constant_ranking_is_nan_without_a_warning():
    pytest.importorskip("scipy")
    table = pl.DataFrame({"system": ["a", "b", "c"], "x": [1.0, 2, 3], "y": [1.0, 1, 1]})
    for method in ("kendall", "spearman", "pearson", "tau_ap_b"):
        found = rke.rank_correlation(table, table, metric=("x", "y"), method=method)
        assert math.isnan(found.coefficient)


def test_old_keywords_warn_and_still_work() -> None:
    a = pl.DataFrame({"system": list("abcde"), "x": [5.0, 4.0, 3.0, 1.0, 2.0]})
    b = pl.DataFrame({"system": list("abcdf"), "x": [5.0, 3.0, 4.0, 2.0, 1.0]})
    new = rke.rank_correlation(
        a, b, metric="x", method="tau_ap_b", k=3, missing_systems="drop"
    ).to_frame()
    olds: list[dict[str, object]] = [
        {"a": a, "b": b, "k": 3, "missing_systems": "drop"},
        {"data": a, "other": b, "top": 3, "missing_systems": "drop"},
        {"data": a, "other": b, "k": 3, "missing": "drop"},
    ]
    for old in olds:
        names = sorted(key for key in old if key in {"a", "b", "top", "missing"})
        with pytest.warns(rke.RankEvalDeprecationWarning) as seen:
            found = rke.rank_correlation(metric="x", method="tau_ap_b", **old)  # type: ignore[arg-type]
        said = sorted(str(w.message).split("(): ")[1].split("=")[0] for w in seen)
        assert said == names
        assert found.to_frame().equals(new)
