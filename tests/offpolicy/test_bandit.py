"""The bandit estimators against independent references.

* vw-estimators (installed, run live) for ips and snips, and its published values;
* obp's round-reward code transcribed into numpy (``_obp_reference.py``, citing
  ``obp/ope/estimators.py`` lines) for every estimator, on generated logs with several target
  policies, clipping, segments, propensities near 0, weights above the clip, 0/1 and real
  (negative) rewards, in both input forms;
* the DM term of the candidate form by brute force over the candidates (plain Python);
* standard errors from a plain-Python delta method written here.
"""

from __future__ import annotations

import math
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from polars_rankeval.errors import (
    ColumnNotFoundError,
    ColumnTypeError,
    ColumnValueError,
    EmptyEvaluationWarning,
    InvalidOptionError,
    UnknownMetricError,
    WeightWarning,
)
from polars_rankeval.offpolicy._bandit import off_policy
from tests.offpolicy import _obp_reference as obp

ALL = ["ips", "snips", "dm", "dr", "sndr", "switch_dr", "dr_os"]
TUNED: dict[str, Any] = {"clip": 2.5, "switch_threshold": 3.0, "shrinkage": 1.5}


# -- generated logs ---------------------------------------------------------------------------


def generate(seed: int = 7, n: int = 400, n_actions: int = 4) -> dict[str, Any]:
    """A bandit log with its full arrays: behaviour and target distributions, reward model.

    Targets: ``soft`` and ``sharp`` (stochastic; ``sharp`` favours the actions the logging
    policy rarely takes, so weights exceed the clip) and ``greedy`` (deterministic, for replay).
    Some logging probabilities are near 0 (1e-3) and rewards are 0/1 on segment 'a', real and
    negative on 'b' and 'c'.
    """
    rng = np.random.default_rng(seed)
    pi_b = rng.dirichlet(np.ones(n_actions), size=n)
    rare = rng.random(n) < 0.1
    pi_b[rare, 0] = 1e-3  # propensity near 0 for action 0 in some contexts
    pi_b /= pi_b.sum(axis=1, keepdims=True)
    action = np.array([rng.choice(n_actions, p=p) for p in pi_b])
    pscore = pi_b[np.arange(n), action]
    soft = rng.dirichlet(np.ones(n_actions) * 2, size=n)
    sharp = (1 / pi_b) ** 1.5
    sharp /= sharp.sum(axis=1, keepdims=True)
    greedy = np.zeros((n, n_actions))
    greedy[np.arange(n), rng.integers(0, n_actions, size=n)] = 1.0
    q_hat = rng.normal(0.3, 1.0, size=(n, n_actions))
    segment = rng.choice(["a", "b", "c"], size=n)
    reward = np.where(
        segment == "a",
        (rng.random(n) < 0.4).astype(float),
        rng.normal(0.2, 2.0, size=n),
    )
    return {
        "pi_b": pi_b,
        "action": action,
        "pscore": pscore,
        "targets": {"soft": soft, "sharp": sharp, "greedy": greedy},
        "q_hat": q_hat,
        "reward": reward,
        "segment": segment,
        "n": n,
        "n_actions": n_actions,
    }


def event_frame(g: dict[str, Any]) -> pl.DataFrame:
    """One row per logged decision; the DM term per target computed with numpy."""
    n, a = g["n"], g["action"]
    columns: dict[str, Any] = {
        "query": [f"e{i}" for i in range(n)],
        "segment": g["segment"],
        "propensity": g["pscore"],
        "reward": g["reward"],
        "q": g["q_hat"][np.arange(n), a],
    }
    for name, dist in g["targets"].items():
        columns[name] = dist[np.arange(n), a]
        columns[f"dm_{name}"] = (dist * g["q_hat"]).sum(axis=1)
    return pl.DataFrame(columns)


def candidate_frame(g: dict[str, Any]) -> pl.DataFrame:
    """One row per (context, candidate action); propensity and reward on the logged row."""
    rows = []
    for i in range(g["n"]):
        for k in range(g["n_actions"]):
            logged = bool(g["action"][i] == k)
            rows.append(
                {
                    "query": f"e{i}",
                    "item": k,
                    "segment": g["segment"][i],
                    "logged": logged,
                    "propensity": g["pi_b"][i, k],
                    "reward": g["reward"][i] if logged else None,
                    "q": g["q_hat"][i, k],
                    **{name: dist[i, k] for name, dist in g["targets"].items()},
                }
            )
    return pl.DataFrame(rows)


def obp_value(
    g: dict[str, Any], name: str, target: str, mask: np.ndarray, **params: float
) -> float:
    """The transcribed obp estimate on the rows in ``mask``."""
    n = int(mask.sum())
    return obp.policy_value(
        name,
        reward=g["reward"][mask],
        action=g["action"][mask],
        pscore=g["pscore"][mask],
        action_dist=g["targets"][target][mask][:, :, None],
        q_hat=g["q_hat"][mask][:, :, None],
        position=np.zeros(n, dtype=int),
        **params,
    )


def quiet(**kwargs: Any) -> pl.DataFrame:
    """off_policy with the weight warnings of generated logs silenced (checked elsewhere)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WeightWarning)
        return off_policy(**kwargs)


def value(result: pl.DataFrame, metric: str, policy: str, **segment: str) -> float:
    rows = result.filter(
        pl.col("metric") == metric,
        pl.col("policy") == policy,
        *(pl.col(k) == v for k, v in segment.items()),
    )
    assert rows.height == 1, rows
    return float(rows["value"][0])


@pytest.fixture(scope="module")
def log() -> dict[str, Any]:
    return generate()


@pytest.fixture(scope="module")
def events(log: dict[str, Any]) -> pl.DataFrame:
    return event_frame(log)


@pytest.fixture(scope="module")
def candidates(log: dict[str, Any]) -> pl.DataFrame:
    return candidate_frame(log)


def _event_call(events: object, estimators: list[str], **options: Any) -> pl.DataFrame:
    return quiet(
        data=events,
        estimators=estimators,
        target=["soft", "sharp"],
        reward_model="q",
        target_reward_model={"soft": "dm_soft", "sharp": "dm_sharp"},
        **options,
    )


def _candidate_call(candidates: object, estimators: list[str], **options: Any) -> pl.DataFrame:
    return quiet(
        data=candidates,
        estimators=estimators,
        target={"soft": "soft", "sharp": "sharp"},
        reward_model="q",
        query="query",
        item="item",
        logged="logged",
        **options,
    )


# -- vw-estimators, live ----------------------------------------------------------------------


def _vw() -> tuple[Any, Any]:
    """vw-estimators' ips and snips Estimator classes (the test extra installs the package)."""
    ips = pytest.importorskip("estimators.bandits.ips")
    snips = pytest.importorskip("estimators.bandits.snips")
    return ips.Estimator, snips.Estimator


def test_ips_snips_on_the_vw_reference_log() -> None:
    vw_ips, vw_snips = _vw()
    rows = [(0.8, 0.1, 0.6), (0.25, 0.2, 0.4), (0.5, 0.0, 0.3), (0.2, 1.0, 0.9)]
    ips, snips = vw_ips(), vw_snips()
    for p_log, r, p_pred in rows:
        ips.add_example(p_log, r, p_pred)
        snips.add_example(p_log, r, p_pred)
    frame = pl.DataFrame(rows, schema=["propensity", "reward", "target"], orient="row")
    result = quiet(data=frame, estimators="ips,snips")
    # published: research Q1 (vw-estimators 0.2.2), hand-check 4.895/4 and 4.895/7.45
    assert value(result, "ips", "target") == pytest.approx(1.22375, abs=1e-12)
    assert value(result, "snips", "target") == pytest.approx(0.6570469798657719, abs=1e-12)
    assert value(result, "ips", "target") == pytest.approx(ips.get(), abs=1e-12)
    assert value(result, "snips", "target") == pytest.approx(snips.get(), abs=1e-12)


def test_vw_one_row_values() -> None:
    # vw-estimators tests/test_bandits_ips.py and test_bandits_snips.py: p_log .3, r 1, p_pred .6
    frame = pl.DataFrame({"propensity": [0.3], "reward": [1.0], "target": [0.6]})
    result = quiet(data=frame, estimators="ips,snips")
    assert value(result, "ips", "target") == pytest.approx(2.0)
    assert value(result, "snips", "target") == pytest.approx(1.0)


def test_ips_snips_match_vw_on_a_generated_log(log: dict[str, Any], events: pl.DataFrame) -> None:
    vw_ips, vw_snips = _vw()
    result = _event_call(events, ["ips", "snips"], by="segment")
    for target in ("soft", "sharp"):
        for segment in ("a", "b", "c"):
            ips, snips = vw_ips(), vw_snips()
            for p_log, r, p_pred in (
                events.filter(pl.col("segment") == segment)
                .select("propensity", "reward", target)
                .iter_rows()
            ):
                ips.add_example(p_log, r, p_pred)
                snips.add_example(p_log, r, p_pred)
            got_ips = value(result, "ips", target, segment=segment)
            got_snips = value(result, "snips", target, segment=segment)
            assert got_ips == pytest.approx(ips.get(), rel=1e-12)
            assert got_snips == pytest.approx(snips.get(), rel=1e-12)


@pytest.mark.parametrize("c", [1.0, 10.0, -1.0])
def test_constant_logs_give_the_constant(c: float) -> None:
    # vw-estimators tests/test_bandits.py: p_log = p_pred = 1, r = c -> every estimator c.
    frame = pl.DataFrame(
        {
            "query": [f"e{i}" for i in range(12)],
            "propensity": [1.0] * 12,
            "reward": [c] * 12,
            "target": [1.0] * 12,
            "q": [c] * 12,
            "dm": [c] * 12,
            "q_off": [0.7] * 12,  # a wrong reward model: the doubly robust ones still give c
            "dm_off": [0.7] * 12,
        }
    )
    result = off_policy(
        frame, [*ALL, "replay"], reward_model="q", target_reward_model="dm", **TUNED
    )
    assert result["value"].to_list() == pytest.approx([c] * 8)
    robust = off_policy(
        frame,
        "dr,sndr,switch_dr,dr_os",
        reward_model="q_off",
        target_reward_model="dm_off",
        switch_threshold=1.0,
        shrinkage=math.inf,
    )
    assert robust["value"].to_list() == pytest.approx([c] * 4)


# -- obp, transcribed -------------------------------------------------------------------------


@pytest.mark.parametrize("form", ["event", "candidate"])
@pytest.mark.parametrize(
    "params", [TUNED, {"clip": None, "switch_threshold": 0.5, "shrinkage": 20.0}]
)
def test_every_estimator_matches_obp(
    log: dict[str, Any],
    events: pl.DataFrame,
    candidates: pl.DataFrame,
    form: str,
    params: dict[str, Any],
) -> None:
    call = _event_call if form == "event" else _candidate_call
    result = call(events if form == "event" else candidates, ALL, by="segment", **params)
    assert result.height == len(ALL) * 2 * 3
    lambdas = {
        "ips": params["clip"],
        "dr": params["clip"],
        "switch_dr": params["switch_threshold"],
        "dr_os": params["shrinkage"],
    }
    for target in ("soft", "sharp"):
        weights = log["targets"][target][np.arange(log["n"]), log["action"]] / log["pscore"]
        assert weights.max() > TUNED["clip"]  # the clip bites
        for segment in ("a", "b", "c"):
            mask = log["segment"] == segment
            for name in ALL:
                lam = lambdas.get(name)
                extra = {} if lam is None else {"lambda_": lam}
                expected = obp_value(log, name, target, mask, **extra)
                got = value(result, name, target, segment=segment)
                assert got == pytest.approx(expected, rel=1e-9, abs=1e-12), (name, target, segment)


def test_every_estimator_matches_obp_without_segments(
    log: dict[str, Any], events: pl.DataFrame
) -> None:
    result = _event_call(events, ALL, **TUNED)
    mask = np.ones(log["n"], dtype=bool)
    for name, lam in [("ips", 2.5), ("snips", None), ("dm", None), ("dr", 2.5), ("sndr", None)]:
        extra = {} if lam is None else {"lambda_": lam}
        for target in ("soft", "sharp"):
            assert value(result, name, target) == pytest.approx(
                obp_value(log, name, target, mask, **extra), rel=1e-9
            )


@pytest.mark.parametrize("form", ["event", "candidate"])
def test_replay_matches_obp(
    log: dict[str, Any], events: pl.DataFrame, candidates: pl.DataFrame, form: str
) -> None:
    if form == "event":
        result = quiet(data=events, estimators="replay,ips", target="greedy", by="segment")
    else:
        result = quiet(
            data=candidates,
            estimators="replay,ips",
            target="greedy",
            query="query",
            logged="logged",
            by="segment",
        )
    for segment in ("a", "b", "c"):
        mask = log["segment"] == segment
        expected = obp_value(log, "replay", "greedy", mask)
        assert value(result, "replay", "greedy", segment=segment) == pytest.approx(expected)


def test_dr_os_shrinkage_zero_is_dm_where_obp_divides_zero_by_zero() -> None:
    frame = pl.DataFrame(
        {
            "propensity": [0.5, 0.5, 0.25] * 4,
            "target": [0.0, 1.0, 0.5] * 4,
            "reward": [1.0, 0.0, 2.0] * 4,
            "q": [0.3, 0.1, 0.9] * 4,
            "dm": [0.2, 0.4, 0.6] * 4,
        }
    )
    result = quiet(
        data=frame, estimators="dm,dr_os", reward_model="q", target_reward_model="dm", shrinkage=0
    )
    assert value(result, "dr_os", "target") == pytest.approx(0.4)
    assert value(result, "dm", "target") == pytest.approx(0.4)


def test_switch_dr_keeps_a_weight_equal_to_the_threshold() -> None:
    # obp L1465: iw <= lambda_ is kept; here w = 0.5/0.25 = 2 = the threshold on two rows
    reward = np.array([1.0, 0.0, 2.0] * 4)
    action = np.array([0, 1, 0] * 4)
    pscore = np.array([0.25, 0.5, 0.5] * 4)
    dist = np.array([[0.5, 0.5], [0.5, 0.5], [0.5, 0.5]] * 4)
    q_hat = np.array([[0.3, 0.8], [0.1, 0.2], [0.9, 0.4]] * 4)
    expected = obp.policy_value(
        "switch_dr",
        reward=reward,
        action=action,
        pscore=pscore,
        action_dist=dist[:, :, None],
        q_hat=q_hat[:, :, None],
        position=np.zeros(12, dtype=int),
        lambda_=2.0,
    )
    frame = pl.DataFrame(
        {
            "propensity": pscore,
            "target": dist[np.arange(12), action],
            "reward": reward,
            "q": q_hat[np.arange(12), action],
            "dm": (dist * q_hat).sum(axis=1),
        }
    )
    result = quiet(
        data=frame,
        estimators="switch_dr",
        reward_model="q",
        target_reward_model="dm",
        switch_threshold=2,
    )
    assert value(result, "switch_dr", "target") == pytest.approx(expected, rel=1e-12)


def test_unbiased_estimators_recover_a_known_value() -> None:
    """A simulation whose true value is known: the unbiased ones land within 4 se of it.

    Contexts and Bernoulli rewards with a known mean q(x, a); the target's true value is
    mean_x sum_a pi_e(a|x) q(x, a). The reward model is deliberately wrong (q + 0.3): dm is
    off by exactly that, while the weighted corrections of dr and sndr repair it. Seeded: the
    check is deterministic.
    """
    rng = np.random.default_rng(2024)
    n, k = 20_000, 3
    q = rng.uniform(0.1, 0.9, size=(n, k))
    pi_b = rng.dirichlet(np.ones(k) * 3, size=n)
    pi_e = rng.dirichlet(np.ones(k), size=n)
    action = (pi_b.cumsum(axis=1) > rng.random((n, 1))).argmax(axis=1)
    reward = (rng.random(n) < q[np.arange(n), action]).astype(float)
    truth = float((pi_e * q).sum(axis=1).mean())
    frame = pl.DataFrame(
        {
            "propensity": pi_b[np.arange(n), action],
            "target": pi_e[np.arange(n), action],
            "reward": reward,
            "q_wrong": q[np.arange(n), action] + 0.3,
            "dm_wrong": (pi_e * (q + 0.3)).sum(axis=1),
        }
    )
    result = off_policy(
        frame,
        "ips,snips,dr,sndr",
        reward_model="q_wrong",
        target_reward_model="dm_wrong",
    )
    for row in result.iter_rows(named=True):
        assert abs(row["value"] - truth) < 4 * row["se"], row
    # the wrong model alone is off by exactly its error
    dm = off_policy(frame, "dm", reward_model="q_wrong", target_reward_model="dm_wrong")
    assert dm["value"][0] - truth == pytest.approx(0.3, abs=1e-9)


# -- the candidate form's DM term, by brute force ----------------------------------------------


def test_candidate_dm_term_by_brute_force(candidates: pl.DataFrame) -> None:
    shuffled = candidates.sample(fraction=1.0, shuffle=True, seed=3)
    result = _candidate_call(shuffled, ["dm"], per_query=True)
    expected: dict[tuple[str, str], float] = {}
    for row in candidates.iter_rows(named=True):
        for policy in ("soft", "sharp"):
            key = (policy, row["query"])
            expected[key] = expected.get(key, 0.0) + row[policy] * row["q"]
    got = {(r["policy"], r["query"]): r["dm"] for r in result.iter_rows(named=True)}
    assert got.keys() == expected.keys()
    for key, want in expected.items():
        assert got[key] == pytest.approx(want, rel=1e-12, abs=1e-12)


def test_event_and_candidate_forms_agree(events: pl.DataFrame, candidates: pl.DataFrame) -> None:
    a = _event_call(events, ALL, by="segment", query="query", **TUNED)
    b = _candidate_call(candidates, ALL, by="segment", **TUNED)
    numbers = ["value", "se", "ess", "max_weight", "mean_weight"]
    assert a.select("metric", "policy", "segment", "n_queries").equals(
        b.select("metric", "policy", "segment", "n_queries")
    )
    for column in numbers:
        assert a[column].to_list() == pytest.approx(b[column].to_list(), rel=1e-9)


# -- standard errors, independently ------------------------------------------------------------


def _delta_se(m: list[float], a: list[float], b: list[float]) -> float:
    """Delta method for mean(m) + sum(a)/sum(b): psi_i = m_i + (a_i - R b_i)/mean(b) + R."""
    n = len(m)
    ratio = sum(a) / sum(b) if b else 0.0
    mean_b = sum(b) / n if b else 1.0
    psi = [m[i] + ((a[i] - ratio * b[i]) / mean_b + ratio if b else 0.0) for i in range(n)]
    mean = sum(psi) / n
    var = sum((x - mean) ** 2 for x in psi) / (n - 1)
    return math.sqrt(var / n)


def test_standard_errors(log: dict[str, Any], events: pl.DataFrame) -> None:
    result = _event_call(events, ALL, **TUNED)
    rows = events.to_dicts()
    for target in ("soft", "sharp"):
        w = [r[target] / r["propensity"] for r in rows]
        r_ = [r["reward"] for r in rows]
        q = [r["q"] for r in rows]
        dm = [r[f"dm_{target}"] for r in rows]
        clip = [min(x, 2.5) for x in w]
        corr = [r_[i] - q[i] for i in range(len(rows))]
        ips_rounds = [r_[i] * clip[i] for i in range(len(rows))]
        expected = {
            "ips": _delta_se(ips_rounds, [], []),
            "snips": _delta_se([0.0] * len(rows), [r_[i] * w[i] for i in range(len(rows))], w),
            "dm": _delta_se(dm, [], []),
            "dr": _delta_se([dm[i] + clip[i] * corr[i] for i in range(len(rows))], [], []),
            "sndr": _delta_se(dm, [w[i] * corr[i] for i in range(len(rows))], w),
            "switch_dr": _delta_se(
                [dm[i] + (w[i] if w[i] <= 3.0 else 0.0) * corr[i] for i in range(len(rows))], [], []
            ),
            "dr_os": _delta_se(
                [dm[i] + 1.5 * w[i] / (w[i] ** 2 + 1.5) * corr[i] for i in range(len(rows))], [], []
            ),
        }
        for name, se in expected.items():
            got = result.filter(pl.col("metric") == name, pl.col("policy") == target)["se"][0]
            assert got == pytest.approx(se, rel=1e-9), name
        # IPS: the plain standard error of the mean of the round rewards
        ips_se = np.std(ips_rounds, ddof=1) / np.sqrt(len(rows))
        got = result.filter(pl.col("metric") == "ips", pl.col("policy") == target)["se"][0]
        assert got == pytest.approx(ips_se, rel=1e-12)
        z = 1.959963984540054
        row = result.filter(pl.col("metric") == "ips", pl.col("policy") == target).row(
            0, named=True
        )
        assert row["ci_low"] == pytest.approx(row["value"] - z * ips_se, rel=1e-9)
        w_arr = np.asarray(w)
        assert row["ess"] == pytest.approx(w_arr.sum() ** 2 / (w_arr**2).sum(), rel=1e-12)
        assert row["max_weight"] == pytest.approx(w_arr.max())


def test_per_query_mean_is_the_value(events: pl.DataFrame) -> None:
    summary = _event_call(events, ALL, by="segment", query="query", **TUNED)
    table = _event_call(events, ALL, by="segment", query="query", per_query=True, **TUNED)
    assert table.height == 2 * events.height
    means = table.group_by("policy", "segment").agg(pl.col(ALL).mean())
    for row in means.iter_rows(named=True):
        for name in ALL:
            want = value(summary, name, row["policy"], segment=row["segment"])
            assert row[name] == pytest.approx(want, rel=1e-9, abs=1e-12)


def test_baseline_and_bootstrap_are_forwarded(events: pl.DataFrame) -> None:
    paired = _event_call(events, ["ips", "dr"], query="query", baseline="soft")
    assert set(paired["policy"]) == {"sharp"}
    assert set(paired["metric"]) == {"ips", "dr"}
    boot = _event_call(events, ["ips", "snips"], interval="bootstrap", n_resamples=200, seed=1)
    assert (boot["ci_low"] <= boot["value"]).all()
    assert (boot["value"] <= boot["ci_high"]).all()
    with pytest.raises(InvalidOptionError, match="query="):
        _event_call(events, ["ips"], per_query=True)


# -- input types, row order, streaming --------------------------------------------------------


def test_input_types_and_row_order_do_not_matter(events: pl.DataFrame, tmp_path: Path) -> None:
    path = tmp_path / "log.parquet"
    events.write_parquet(path)
    shuffled = events.sample(fraction=1.0, shuffle=True, seed=11)
    inputs: list[object] = [
        events,
        events.lazy(),
        events.to_pandas(),
        events.to_arrow(),
        path,
        str(path),
        shuffled,
    ]
    results = [_event_call(data, ALL, by="segment", **TUNED) for data in inputs]
    streaming = _event_call(events, ALL, by="segment", engine="streaming", **TUNED)
    for other in [*results[1:], streaming]:
        assert other.select("metric", "policy", "segment", "n_queries").equals(
            results[0].select("metric", "policy", "segment", "n_queries")
        )
        for column in ("value", "se", "ess", "max_weight", "mean_weight"):
            assert other[column].to_list() == pytest.approx(results[0][column].to_list(), rel=1e-12)


def test_candidate_form_row_order_does_not_matter(candidates: pl.DataFrame) -> None:
    a = _candidate_call(candidates, ALL, by="segment", **TUNED)
    b = _candidate_call(
        candidates.sample(fraction=1.0, shuffle=True, seed=5).lazy(), ALL, by="segment", **TUNED
    )
    assert a["value"].to_list() == pytest.approx(b["value"].to_list(), rel=1e-12)


@pytest.mark.parametrize("form", ["event", "candidate"])
def test_parts_stream_from_parquet(
    events: pl.DataFrame, candidates: pl.DataFrame, form: str, tmp_path: Path
) -> None:
    from polars_rankeval.offpolicy._bandit import candidate_events, event_parts, tuning
    from polars_rankeval.offpolicy._bandit_log import Log
    from polars_rankeval.offpolicy._core import Parts, partial_sums
    from tests.engine.test_streaming import assert_streams

    path = tmp_path / "log.parquet"
    (events if form == "event" else candidates).write_parquet(path)
    log = Log(
        targets={"soft": "soft", "sharp": "sharp"},
        propensity="propensity",
        reward="reward",
        reward_model="q",
        target_reward_model={"soft": "dm_soft", "sharp": "dm_sharp"} if form == "event" else {},
        query="query",
        item=None,
        logged=None if form == "event" else "logged",
        by=("segment",),
    )
    lf = pl.scan_parquet(path)
    if form == "candidate":
        lf, log = candidate_events(lf, log)
    tune = tuning(tuple(ALL), **TUNED)
    parts = Parts(event_parts(lf, log, tune), ["policy", "segment"], ALL, unit="query")
    assert_streams(partial_sums(parts))


def test_segments_present_only(events: pl.DataFrame) -> None:
    # a segment value with no rows gives no result row (nothing was logged there)
    only_ab = events.filter(pl.col("segment") != "c")
    result = _event_call(only_ab, ["ips"], by="segment")
    assert sorted(set(result["segment"])) == ["a", "b"]


def test_an_empty_log_warns() -> None:
    with pytest.warns(EmptyEvaluationWarning, match="no rows"):
        result = off_policy(_small().head(0), "ips,snips")
    assert result.height == 0


# -- malformed input ---------------------------------------------------------------------------


def _small() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "query": ["a", "b", "c", "d"],
            "propensity": [0.5, 0.5, 0.25, 0.5],
            "reward": [1.0, 0.0, 1.0, 0.0],
            "target": [0.5, 1.0, 0.0, 0.5],
        }
    )


@pytest.mark.parametrize(
    ("column", "bad", "expected"),
    [
        ("propensity", 0.0, "propensity=0.0"),
        ("propensity", 1.5, "propensity=1.5"),
        ("propensity", None, "propensity=None"),
        ("propensity", float("nan"), "propensity=nan"),
        ("target", 1.2, "target=1.2"),
        ("target", -0.1, "target=-0.1"),
        ("reward", None, "reward=None"),
        ("reward", float("inf"), "reward=inf"),
    ],
)
def test_bad_values_name_the_rows(column: str, bad: float | None, expected: str) -> None:
    frame = _small().with_columns(
        pl.when(pl.col("query") == "c")
        .then(pl.lit(bad, pl.Float64))
        .otherwise(pl.col(column))
        .alias(column)
    )
    with pytest.raises(ColumnValueError, match=rf"row 2, query='c' \({expected}\)") as info:
        off_policy(frame, "ips", query="query")
    assert repr(column) in str(info.value)
    # without an id column the row number alone names it
    with pytest.raises(ColumnValueError, match=rf"row 2 \({expected}\)"):
        off_policy(frame.drop("query"), "ips")


def test_missing_column_and_wrong_type() -> None:
    with pytest.raises(ColumnNotFoundError, match=r"'prop'.*propensity="):
        off_policy(_small(), "ips", propensity="prop")
    with pytest.raises(ColumnTypeError, match=r"'propensity'.*numeric"):
        off_policy(_small().with_columns(pl.col("propensity").cast(pl.String)), "ips")
    with pytest.raises(ColumnNotFoundError, match="'seg'"):
        off_policy(_small(), "ips", by="seg")


def test_options_are_checked() -> None:
    with pytest.raises(UnknownMetricError, match="did you mean 'snips'"):
        off_policy(_small(), "snip")
    with pytest.raises(InvalidOptionError, match="reward_model="):
        off_policy(_small(), "dr")
    with pytest.raises(InvalidOptionError, match="target_reward_model="):
        off_policy(_small(), "dr", reward_model="reward")
    with pytest.raises(InvalidOptionError, match="switch_threshold="):
        off_policy(_small(), "switch_dr", reward_model="reward", target_reward_model="reward")
    with pytest.raises(InvalidOptionError, match="shrinkage="):
        off_policy(_small(), "dr_os", reward_model="reward", target_reward_model="reward")
    with pytest.raises(InvalidOptionError, match=r"item=.*candidate form"):
        off_policy(_small(), "ips", item="query")
    with pytest.raises(InvalidOptionError, match="clip="):
        off_policy(_small(), "ips", clip=-1)
    with pytest.raises(InvalidOptionError, match="one column per target"):
        off_policy(
            _small().with_columns(t2=pl.col("target")),
            "dm",
            target=["target", "t2"],
            reward_model="reward",
            target_reward_model="reward",
        )


def test_replay_needs_a_deterministic_target() -> None:
    with pytest.raises(ColumnValueError, match=r"replay.*row 0, query='a' \(target=0.5\)"):
        off_policy(_small(), "replay", query="query")


def test_event_ids_repeat() -> None:
    frame = _small().with_columns(pl.lit("same").alias("query"))
    with pytest.raises(ColumnValueError, match="query='same' \\(rows=4\\)"):
        off_policy(frame, "ips", query="query")


def _candidates() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "query": ["x", "x", "x", "y", "y"],
            "item": [1, 2, 3, 1, 2],
            "logged": [True, False, False, False, True],
            "propensity": [0.5, None, 0.3, 0.4, 0.6],
            "reward": [1.0, None, None, None, 0.0],
            "q": [0.2, 0.4, 0.6, 0.1, 0.9],
            "target": [0.25, 0.25, 0.5, 0.5, 0.5],
        }
    )


def _candidate_options() -> dict[str, Any]:
    return {"query": "query", "item": "item", "logged": "logged", "reward_model": "q"}


def test_candidate_form_small_by_hand() -> None:
    # x: w = .25/.5 = .5, r = 1, q = .2, dm = .25*.2 + .25*.4 + .5*.6 = .45
    # y: w = .5/.6,      r = 0, q = .9, dm = .5*.1 + .5*.9 = .5
    result = quiet(data=_candidates(), estimators="ips,dm,dr", **_candidate_options())
    assert value(result, "ips", "target") == pytest.approx((0.5 * 1 + 0) / 2)
    assert value(result, "dm", "target") == pytest.approx((0.45 + 0.5) / 2)
    dr = (0.45 + 0.5 * (1 - 0.2) + 0.5 + (0.5 / 0.6) * (0 - 0.9)) / 2
    assert value(result, "dr", "target") == pytest.approx(dr)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            pl.when(pl.col("item") == 2).then(None).otherwise(pl.col("logged")).alias("logged"),
            r"2 row\(s\) have a null 'query'.*or 'logged'.*row 1 \(query='x', logged=None\)",
        ),
        (pl.lit(True).alias("logged"), r"exactly one row.*query='x' \(n_logged=3\)"),
        (pl.lit(False).alias("logged"), r"exactly one row.*query='x' \(n_logged=0\)"),
        (
            pl.when(pl.col("item") == 3).then(0.4).otherwise(pl.col("target")).alias("target"),
            r"sum to 1.*query='x' \(sum\(target\)=0\.9",
        ),
        (pl.lit(1).alias("item"), r"once per context.*query='x' \(rows=3, items=1\)"),
        (
            pl.when(pl.col("logged") & (pl.col("query") == "y"))
            .then(0.0)
            .otherwise(pl.col("propensity"))
            .alias("propensity"),
            r"on logged rows.*row 4 \(query='y', propensity=0\.0\)",
        ),
        (
            pl.when(pl.col("item") == 2).then(None).otherwise(pl.col("q")).alias("q"),
            r"'q'.*row 1 \(query='x', q=None\)",
        ),
        (
            pl.when(pl.col("logged")).then(None).otherwise(pl.col("reward")).alias("reward"),
            r"reward.*row 0 \(query='x', reward=None\)",
        ),
    ],
)
def test_candidate_form_errors_name_the_contexts(change: pl.Expr, message: str) -> None:
    frame = _candidates().with_columns(change)
    with pytest.raises(ColumnValueError, match=message):
        off_policy(frame, "ips,dm", **_candidate_options())


def test_candidate_form_needs_boolean_logged_and_query() -> None:
    with pytest.raises(ColumnTypeError, match="Boolean"):
        off_policy(
            _candidates().with_columns(pl.col("logged").cast(pl.Int8)),
            "ips",
            **_candidate_options(),
        )
    with pytest.raises(InvalidOptionError, match="query="):
        off_policy(_candidates(), "ips", logged="logged")


def test_unsupported_candidate_warns() -> None:
    # y's action 1 has propensity 0 but target mass .5: the weighted estimates cannot see it
    frame = _candidates().with_columns(
        pl.when((pl.col("query") == "y") & (pl.col("item") == 1))
        .then(0.0)
        .otherwise(pl.col("propensity"))
        .alias("propensity")
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        off_policy(frame, "ips,dm", **_candidate_options())
    messages = [str(w.message) for w in caught if issubclass(w.category, WeightWarning)]
    assert any(re.search(r"never takes.*in 1 context.*query='y'", m) for m in messages), messages
    assert all(w.filename == __file__ for w in caught)  # at the user's line
