"""Slate estimators against independent references.

* Open Bandit Pipeline (obp, st-tech/zr-obp at 8cbd5fa) does not install on Python >= 3.10:
  its slate estimators are transcribed below in numpy from ``obp/ope/estimators_slate.py``
  (line numbers cited at each) and run on generated slate logs, one segment and one target
  policy at a time, on rows sorted the way obp expects.
* vw-estimators' pseudo-inverse estimator runs live (``estimators.slates.pseudo_inverse``), and
  the values of research.md Q1 (a 3-slate log: 1.1666667; one slot: PI equals IPS) are checked.
* Joint, cascade and item-position probabilities of the generated logs are brute force in plain
  Python (running products as in obp ``obp/dataset/synthetic_slate.py`` L491-498; marginals by
  enumerating every ranking).
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from polars_rankeval.errors import (
    ColumnNotFoundError,
    ColumnTypeError,
    ColumnValueError,
    InvalidOptionError,
    UnknownMetricError,
    WeightWarning,
)
from polars_rankeval.offpolicy._slate import slate_off_policy, slate_parts

pytestmark = pytest.mark.filterwarnings("ignore::polars_rankeval.errors.WeightWarning")

N_ACTIONS = 5
LEN = 3
TARGETS = ("soft", "greedy")


# -- obp, transcribed (obp/ope/estimators_slate.py at 8cbd5fa) -----------------------------


def obp_ips(slate_id: np.ndarray, reward: np.ndarray, pscore: np.ndarray, e: np.ndarray) -> float:
    """SIPS / IIPS / RIPS: L85-87 (iw = e / b; r * iw) and L203-211 (sum / n_unique(slate))."""
    iw = e / pscore
    estimated_rewards = reward * iw
    return float(estimated_rewards.sum() / np.unique(slate_id).shape[0])


def obp_sn_per_position(
    slate_id: np.ndarray,
    reward: np.ndarray,
    position: np.ndarray,
    pscore: np.ndarray,
    e: np.ndarray,
    len_list: int,
) -> float:
    """SNIIPS / SNRIPS: the SN base class, L953-959, then sum / n_unique(slate) (L353-361)."""
    estimated_rewards = np.zeros_like(pscore)
    iw = np.zeros_like(pscore)
    for pos_ in range(len_list):
        idx = position == pos_
        iw[idx] = e[idx] / pscore[idx]
        estimated_rewards[idx] = reward[idx] * iw[idx] / iw[idx].mean()
    return float(estimated_rewards.sum() / np.unique(slate_id).shape[0])


def obp_snsips(
    slate_id: np.ndarray, reward: np.ndarray, pscore: np.ndarray, e: np.ndarray
) -> float:
    """SNSIPS: L1031-1034 (normalised by the mean weight over all rows), then L203-211."""
    iw = e / pscore
    estimated_rewards = reward * iw / iw.mean()
    return float(estimated_rewards.sum() / np.unique(slate_id).shape[0])


def obp_cascade_dr(
    slate_id: np.ndarray,
    action: np.ndarray,
    reward: np.ndarray,
    pscore_cascade: np.ndarray,
    evaluation_policy_pscore_cascade: np.ndarray,
    q_hat: np.ndarray,
    evaluation_policy_action_dist: np.ndarray,
    len_list: int,
    n_unique_action: int,
) -> float:
    """SlateCascadeDoublyRobust: _estimate_round_rewards L661-690, policy value L754-766."""
    n_rounds_ = np.unique(slate_id).shape[0]
    q_hat_3d = q_hat.reshape((-1, len_list, n_unique_action))
    q_hat_for_observed_action = []
    for i in range(n_rounds_):
        for pos_ in range(len_list):
            q_hat_for_observed_action.append(q_hat_3d[i, pos_, action[i * len_list + pos_]])
    q_hat_for_observed_action_ = np.array(q_hat_for_observed_action)
    expected_q_hat_under_eval_policy = (
        (evaluation_policy_action_dist * q_hat)
        .reshape((-1, len_list, n_unique_action))
        .sum(axis=2)
        .flatten()
    )
    iw = evaluation_policy_pscore_cascade / pscore_cascade
    iw_prev = np.roll(iw, 1)
    iw_prev[np.array([i * len_list for i in range(n_rounds_)])] = 1
    estimated_rewards = (
        iw * (reward - q_hat_for_observed_action_) + iw_prev * expected_q_hat_under_eval_policy
    )
    return float(estimated_rewards.sum() / n_rounds_)


# -- generated logs (brute force in plain Python) ------------------------------------------


def _conditional(scores: Sequence[float], ranking: Sequence[int], greedy: bool) -> list[float]:
    """Each position's probability of its item given the items above (Plackett-Luce)."""
    remaining = list(range(len(scores)))
    out = []
    for item in ranking:
        if greedy:  # the highest-scoring remaining item, surely
            out.append(1.0 if item == max(remaining, key=lambda a: scores[a]) else 0.0)
        else:
            total = sum(math.exp(scores[a]) for a in remaining)
            out.append(math.exp(scores[item]) / total)
        remaining.remove(item)
    return out


def _distribution(scores: Sequence[float], above: Sequence[int], greedy: bool) -> list[float]:
    """The policy's probabilities over all actions at a position, given the items above."""
    remaining = [a for a in range(len(scores)) if a not in above]
    if greedy:
        best = max(remaining, key=lambda a: scores[a])
        return [1.0 if a == best else 0.0 for a in range(len(scores))]
    total = sum(math.exp(scores[a]) for a in remaining)
    return [math.exp(scores[a]) / total if a in remaining else 0.0 for a in range(len(scores))]


def _running_product(values: Sequence[float]) -> list[float]:
    out, running = [], 1.0
    for value in values:
        running *= value
        out.append(running)
    return out


def _marginals(scores: Sequence[float], greedy: bool) -> dict[tuple[int, int], float]:
    """P(item at position) by enumerating every ranking of LEN items."""
    out: dict[tuple[int, int], float] = {}
    for ranking in itertools.permutations(range(len(scores)), LEN):
        prob = math.prod(_conditional(scores, ranking, greedy))
        for pos, item in enumerate(ranking):
            out[pos, item] = out.get((pos, item), 0.0) + prob
    return out


def make_log(
    n_slates: int = 60, *, seed: int = 0, incomplete: bool = False, real_reward: bool = False
) -> pl.DataFrame:
    """A slate log: a Plackett-Luce logging policy, targets 'soft' (PL) and 'greedy' (top-k).

    Columns: segment, query, position (1-based), action, reward, and per policy ``<x>_cond``,
    ``<x>_joint``, ``<x>_ip`` (item-position), ``<x>_cas`` (cascade) for x in b (logging),
    soft, greedy; ``q`` (a reward model of the logged item) and ``<t>_e`` (its mean under t).
    """
    rng = random.Random(seed)
    rows = []
    for slate in range(n_slates):
        # a wide spread of logging scores gives propensities near 0 (weights far above 1)
        scores = {
            "b": [rng.uniform(-3, 3) for _ in range(N_ACTIONS)],
            "soft": [rng.uniform(-1, 1) for _ in range(N_ACTIONS)],
            "greedy": [rng.uniform(-1, 1) for _ in range(N_ACTIONS)],
        }
        ranking: list[int] = []
        for _ in range(LEN):  # draw the logged slate from the logging policy
            dist = _distribution(scores["b"], ranking, greedy=False)
            ranking.append(rng.choices(range(N_ACTIONS), weights=dist)[0])
        length = rng.choice([1, 2, 3]) if incomplete else LEN
        probs = {}
        for x, s in scores.items():
            cond = _conditional(s, ranking, greedy=x == "greedy")
            marg = _marginals(s, greedy=x == "greedy")
            probs[x] = (cond, _running_product(cond), [marg[p, a] for p, a in enumerate(ranking)])
        q_all = [[rng.uniform(0, 1) for _ in range(N_ACTIONS)] for _ in range(LEN)]
        for pos in range(length):
            row: dict[str, Any] = {
                "segment": "ab"[slate % 2] if slate % 5 else "c",
                "query": slate,
                "position": pos + 1,
                "action": ranking[pos],
                "reward": rng.gauss(0, 2) if real_reward else float(rng.random() < 0.4),
                "q": q_all[pos][ranking[pos]],
            }
            for x, (cond, cas, at) in probs.items():
                row[f"{x}_cond"] = cond[pos]
                row[f"{x}_cas"] = cas[pos]
                row[f"{x}_joint"] = cas[LEN - 1]
                row[f"{x}_ip"] = at[pos]
            for t in TARGETS:
                dist = _distribution(scores[t], ranking[:pos], greedy=t == "greedy")
                row[f"{t}_e"] = sum(d * q for d, q in zip(dist, q_all[pos], strict=True))
                row[f"{t}_dist"] = dist
                row["q_all"] = q_all[pos]
            rows.append(row)
    log = pl.DataFrame(rows)
    return log.sample(fraction=1.0, shuffle=True, seed=seed)  # unsorted rows


OBP_KINDS = {"joint": "joint", "item_position": "ip", "cascade": "cas"}


def _obp_options() -> dict[str, Any]:
    return {
        "propensity": {k: f"b_{v}" for k, v in OBP_KINDS.items()},
        "target": {t: {k: f"{t}_{v}" for k, v in OBP_KINDS.items()} for t in TARGETS},
    }


def _value(out: pl.DataFrame, metric: str, policy: str, **keys: object) -> float:
    """The estimate; NaN where ours is null (obp's 0/0 when every weight is 0)."""
    row = out.filter(metric=metric, policy=policy, **keys)
    assert row.height == 1, (metric, policy, keys, out)
    value = row["value"][0]
    return math.nan if value is None else float(value)


def _close(got: float, expected: float) -> bool:
    if math.isnan(expected):
        return math.isnan(got)
    return bool(got == pytest.approx(expected, rel=1e-9, abs=1e-12))


def _reference(name: str, part: pl.DataFrame, t: str) -> float:
    """obp's value of estimator ``name`` on one segment's rows, sorted as obp expects."""
    part = part.sort("query", "position")
    sid, r = part["query"].to_numpy(), part["reward"].to_numpy()
    pos = part["position"].to_numpy() - 1  # obp's positions are 0-based
    kind = {"s": "joint", "i": "ip", "r": "cas"}[name.removeprefix("sn")[0]]
    b, e = part[f"b_{kind}"].to_numpy(), part[f"{t}_{kind}"].to_numpy()
    with np.errstate(invalid="ignore"):  # 0/0 where a target gives every slate weight 0
        if name == "snsips":
            return obp_snsips(sid, r, b, e)
        if name.startswith("sn"):
            return obp_sn_per_position(sid, r, pos, b, e, LEN)
        return obp_ips(sid, r, b, e)


IPS_FAMILY = ["sips", "iips", "rips", "snsips", "sniips", "snrips"]


@pytest.mark.parametrize("incomplete", [False, True])
@pytest.mark.parametrize("real_reward", [False, True])
def test_ips_family_equals_obp(incomplete: bool, real_reward: bool) -> None:
    log = make_log(incomplete=incomplete, real_reward=real_reward, seed=1 + incomplete)
    out = slate_off_policy(log, IPS_FAMILY, by="segment", **_obp_options())
    assert out.height == len(IPS_FAMILY) * len(TARGETS) * 3
    assert out["metric"].unique(maintain_order=True).to_list() == IPS_FAMILY
    for (segment,), part in log.group_by("segment"):
        for t in TARGETS:
            for name in IPS_FAMILY:
                expected = _reference(name, part, t)
                got = _value(out, name, t, segment=segment)
                assert _close(got, expected), (name, t, segment, got, expected)
            # n_queries counts the slates of the segment
            n = out.filter(metric="sips", policy=t, segment=segment)["n_queries"][0]
            assert n == part["query"].n_unique()


@pytest.mark.parametrize("incomplete", [False, True])
def test_conditional_probabilities_give_obp_joint_and_cascade(incomplete: bool) -> None:
    """From the conditional column: joint = product over the slate, cascade = running product.

    The reference reads the brute-force joint and cascade columns (plain-Python running
    products); a slate cut short keeps the full slate's joint probability in ``b_joint`` but
    the conditional ones only multiply the logged rows, so there the joint reference is the
    product of the rows present.
    """
    log = make_log(incomplete=incomplete, seed=3)
    if incomplete:
        log = log.with_columns(
            pl.col(f"{x}_cond").product().over("query").alias(f"{x}_joint") for x in ("b", *TARGETS)
        )
    names = ["sips", "rips", "snsips", "snrips"]
    out = slate_off_policy(
        log,
        names,
        propensity="b_cond",
        target={t: f"{t}_cond" for t in TARGETS},
        by="segment",
    )
    for (segment,), part in log.group_by("segment"):
        for t in TARGETS:
            for name in names:
                expected = _reference(name, part, t)
                got = _value(out, name, t, segment=segment)
                assert _close(got, expected), (name, t, segment, got, expected)


def test_cascade_weights_are_running_products_brute_force() -> None:
    """rips's per-row weight (its part with reward 1) is the plain-Python running product."""
    log = make_log(n_slates=20, seed=4).with_columns(reward=pl.lit(1.0))
    parts = (
        slate_parts(
            log.lazy(),
            estimators=["rips", "sips"],
            policy="soft",
            logging={"conditional": "b_cond"},
            target={"conditional": "soft_cond"},
            query="query",
            position="position",
            reward="reward",
            reward_model=None,
            target_reward_model=None,
            by=[],
        )
        .collect()
        .sort("query", "position")
    )
    rows = log.sort("query", "position")
    for slate in rows["query"].unique().to_list():
        mine = rows.filter(query=slate)
        got = parts.filter(query=slate)
        ratios = [e / b for e, b in zip(mine["soft_cond"], mine["b_cond"], strict=True)]
        running = _running_product(ratios)
        assert got["rips__m"].to_list() == pytest.approx(running, rel=1e-12)
        assert got["sips__m"].to_list() == pytest.approx([running[-1]] * len(running), rel=1e-12)


def test_cascade_dr_equals_obp() -> None:
    log = make_log(n_slates=40, seed=5)
    out = slate_off_policy(
        log,
        "cascade_dr,rips",
        propensity={"cascade": "b_cas"},
        target={t: {"cascade": f"{t}_cas"} for t in TARGETS},
        reward_model="q",
        target_reward_model={t: f"{t}_e" for t in TARGETS},
        by="segment",
    )
    for (segment,), rows in log.group_by("segment"):
        part = rows.sort("query", "position")
        for t in TARGETS:
            # obp's inputs: q_hat and the target's action distribution for every action
            q_hat = np.array(part["q_all"].to_list()).reshape(-1)
            dist = np.array(part[f"{t}_dist"].to_list()).reshape(-1)
            expected = obp_cascade_dr(
                part["query"].to_numpy(),
                part["action"].to_numpy(),
                part["reward"].to_numpy(),
                part["b_cas"].to_numpy(),
                part[f"{t}_cas"].to_numpy(),
                q_hat,
                dist,
                LEN,
                N_ACTIONS,
            )
            got = _value(out, "cascade_dr", t, segment=segment)
            assert got == pytest.approx(expected, rel=1e-9, abs=1e-12)
    # from conditional probabilities: the same
    cond = slate_off_policy(
        log,
        "cascade_dr",
        propensity="b_cond",
        target={t: f"{t}_cond" for t in TARGETS},
        reward_model="q",
        target_reward_model=[f"{t}_e" for t in TARGETS],
        by="segment",
    )
    assert cond["value"].to_list() == pytest.approx(
        out.filter(metric="cascade_dr")["value"].to_list(), rel=1e-9
    )


def test_cascade_dr_with_a_perfect_model_is_the_model() -> None:
    """Zero residuals: Cascade-DR telescopes to sum_l E_pi_e[q] weighted by iw_prev."""
    log = make_log(n_slates=30, seed=6).with_columns(reward=pl.col("q"))
    out = slate_off_policy(
        log,
        "cascade_dr",
        propensity="b_cond",
        target="soft_cond",
        reward_model="q",
        target_reward_model="soft_e",
    )
    rows = log.sort("query", "position")
    total = 0.0
    for slate in rows["query"].unique().to_list():
        mine = rows.filter(query=slate)
        ratios = [e / b for e, b in zip(mine["soft_cond"], mine["b_cond"], strict=True)]
        prev = [1.0, *_running_product(ratios)[:-1]]
        total += sum(p * e for p, e in zip(prev, mine["soft_e"], strict=True))
    assert _value(out, "cascade_dr", "soft_cond") == pytest.approx(total / 30, rel=1e-12)


# -- pseudo-inverse ------------------------------------------------------------------------


def test_pi_research_values() -> None:
    """research.md Q1: 3 slates, weights 1.5, 2, 2, value 1.1666667 (refvals.py)."""
    slates = [([0.5, 0.25], 1.0, [0.25, 0.5]), ([0.5, 0.5], 0.0, [1.0, 0.5])]
    slates.append(([0.2, 0.4], 1.0, [0.4, 0.4]))
    rows = [
        # the slate's reward on its first row; pi sums the rows' rewards
        {"query": i, "position": k, "reward": r if k == 0 else 0.0, "b": b, "e": e}
        for i, (bs, r, es) in enumerate(slates)
        for k, (b, e) in enumerate(zip(bs, es, strict=True))
    ]
    out = slate_off_policy(
        pl.DataFrame(rows),
        "pi",
        propensity={"item_position": "b"},
        target={"new": {"item_position": "e"}},
    )
    assert _value(out, "pi", "new") == pytest.approx(1.1666667, abs=1e-7)
    assert _value(out, "pi", "new") == pytest.approx((1.5 * 1 + 2 * 0 + 2 * 1) / 3, rel=1e-12)


def test_pi_one_slot_equals_ips() -> None:
    """vw-estimators tests/test_slates_pseudo_inverse.py: one slot, PI == IPS, 1.22375."""
    log = pl.DataFrame(
        {
            "query": [0, 1, 2, 3],
            "position": [1, 1, 1, 1],
            "reward": [0.1, 0.2, 0.0, 1.0],
            "b": [0.8, 0.25, 0.5, 0.2],
            "e": [0.6, 0.4, 0.3, 0.9],
        }
    )
    out = slate_off_policy(
        log,
        "pi,sips,iips",
        propensity={"item_position": "b", "joint": "b"},
        target={"new": {"item_position": "e", "joint": "e"}},
    )
    assert out.filter(metric="pi")["value"][0] == pytest.approx(1.22375, rel=1e-12)
    assert out["value"].to_list() == pytest.approx([1.22375] * 3, rel=1e-12)


def test_pi_equals_vw_estimators_live() -> None:
    pseudo_inverse = pytest.importorskip("estimators.slates.pseudo_inverse")
    log = make_log(n_slates=50, seed=7, incomplete=True, real_reward=True)
    out = slate_off_policy(
        log,
        "pi",
        propensity={"item_position": "b_ip"},
        target={"soft": {"item_position": "soft_ip"}},
        by="segment",
    )
    for (segment,), part in log.group_by("segment"):
        vw = pseudo_inverse.Estimator()
        for (_,), slate in part.sort("position").group_by("query", maintain_order=True):
            vw.add_example(
                slate["b_ip"].to_list(), float(slate["reward"].sum()), slate["soft_ip"].to_list()
            )
        assert _value(out, "pi", "soft", segment=segment) == pytest.approx(vw.get(), rel=1e-9)


# -- per query, inputs, order, comparison ---------------------------------------------------


ALL = ["sips", "iips", "rips", "snsips", "sniips", "snrips", "pi", "cascade_dr"]


def _all_options() -> dict[str, Any]:
    options = _obp_options()
    options.update(reward_model="q", target_reward_model={t: f"{t}_e" for t in TARGETS})
    return options


def test_per_query_mean_is_the_value() -> None:
    log = make_log(n_slates=40, seed=8, incomplete=True)
    out = slate_off_policy(log, ALL, by="segment", **_all_options())
    table = slate_off_policy(log, ALL, by="segment", per_query=True, **_all_options())
    assert table.columns == ["policy", "segment", "query", *ALL]
    assert table.height == len(TARGETS) * log["query"].n_unique()
    means = table.group_by("policy", "segment").agg(pl.col(ALL).mean())
    for row in means.iter_rows(named=True):
        for name in ALL:
            value = _value(out, name, row["policy"], segment=row["segment"])
            mean = math.nan if row[name] is None else row[name]
            assert _close(mean, value), (name, row)


def test_result_does_not_depend_on_order_input_type_or_laziness(tmp_path: Path) -> None:
    log = make_log(n_slates=30, seed=9).drop("q_all", "soft_dist", "greedy_dist")
    options = _all_options()
    expected = slate_off_policy(log, ALL, by="segment", **options)
    path = tmp_path / "log.parquet"
    log.write_parquet(path)
    shuffled = log.sample(fraction=1.0, shuffle=True, seed=99)
    for data in (
        log.lazy(),
        shuffled,
        log.sort("position", descending=True),
        log.to_pandas(),
        log.to_arrow(),
        path,
        str(path),
        pl.scan_parquet(path),
    ):
        got = slate_off_policy(data, ALL, by="segment", **options)
        assert got.select("metric", "policy", "segment", "n_queries").equals(
            expected.select("metric", "policy", "segment", "n_queries")
        )
        for column in ("value", "se", "ess", "max_weight"):
            # null (a zero-weight SN estimate) on both sides; pytest >= 9.2's approx refuses None
            np.testing.assert_allclose(
                got[column].cast(pl.Float64).to_numpy(),
                expected[column].cast(pl.Float64).to_numpy(),
                rtol=1e-9,
            )


def test_engines_agree() -> None:
    log = make_log(n_slates=30, seed=10).drop("q_all", "soft_dist", "greedy_dist")
    results = [
        slate_off_policy(log.lazy(), ALL, engine=engine, **_all_options())
        for engine in ("auto", "in-memory", "streaming")
    ]
    for other in results[1:]:
        np.testing.assert_allclose(
            other["value"].cast(pl.Float64).to_numpy(),
            results[0]["value"].cast(pl.Float64).to_numpy(),
            rtol=1e-12,
        )


def test_diagnostics_read_the_joint_weight_once_per_slate() -> None:
    log = make_log(n_slates=30, seed=11)
    out = slate_off_policy(log, ["sips", "sniips"], **_obp_options())
    slates = log.group_by("query").agg(pl.col("b_joint", "soft_joint").first())
    w = (slates["soft_joint"] / slates["b_joint"]).to_numpy()
    for name in ("sips", "sniips"):
        row = out.filter(metric=name, policy="soft")
        assert row["max_weight"][0] == pytest.approx(w.max(), rel=1e-12)
        assert row["mean_weight"][0] == pytest.approx(w.mean(), rel=1e-12)
        assert row["ess"][0] == pytest.approx(w.sum() ** 2 / (w**2).sum(), rel=1e-12)


def test_greedy_target_warns_once() -> None:
    log = make_log(n_slates=60, seed=12)
    with pytest.warns(WeightWarning) as caught:
        slate_off_policy(log, ["sips", "snrips"], propensity="b_cond", target="greedy_cond")
    assert len([w for w in caught if issubclass(w.category, WeightWarning)]) >= 1
    # the two sets of parts (per-position terms or not) do not warn twice about one policy
    messages = [str(w.message) for w in caught if issubclass(w.category, WeightWarning)]
    assert len(messages) == len(set(messages))


def test_baseline_pairs_targets_by_slate() -> None:
    log = make_log(n_slates=40, seed=13)
    options = _obp_options()
    kinds = {"joint": "b_joint", "cascade": "b_cas", "item_position": "b_ip"}
    options["target"] = {"soft": options["target"]["soft"], "logging": kinds}
    out = slate_off_policy(log, ["sips", "snrips"], baseline="logging", **options)
    assert set(out["metric"]) == {"sips", "snrips"}
    values = slate_off_policy(log, ["sips", "snrips"], **options)
    for name in ("sips", "snrips"):
        row = out.filter(metric=name)
        assert row.height == 1
        delta = _value(values, name, "soft") - _value(values, name, "logging")
        assert row["delta"][0] == pytest.approx(delta, rel=1e-9, abs=1e-12)
        # the logging policy evaluated on its own log: every weight 1, the mean slate reward
        mean = log.group_by("query").agg(pl.col("reward").sum())["reward"].mean()
        assert _value(values, name, "logging") == pytest.approx(mean, rel=1e-12)


def test_bootstrap_interval_surrounds_the_value() -> None:
    log = make_log(n_slates=50, seed=14)
    out = slate_off_policy(
        log, ["sips", "sniips"], interval="bootstrap", n_resamples=200, **_obp_options()
    )
    assert (out["ci_low"] <= out["value"]).all()
    assert (out["value"] <= out["ci_high"]).all()


# -- malformed logs ------------------------------------------------------------------------


def _small() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "query": [7, 7, 8, 8, 9],
            "position": [1, 2, 1, 2, 1],
            "reward": [1.0, 0.0, 0.0, 1.0, 1.0],
            "p": [0.5, 0.5, 0.4, 0.5, 0.9],
            "pe": [0.6, 0.5, 0.4, 0.5, 0.9],
        }
    )


def _raises(error: type[Exception], match: str, log: pl.DataFrame, **options: Any) -> str:
    options.setdefault("propensity", "p")
    options.setdefault("target", "pe")
    options.setdefault("estimators", "sips,rips")
    with pytest.raises(error, match=match) as info:
        slate_off_policy(log, **options)
    return str(info.value)


def test_duplicated_position_names_slate_and_position() -> None:
    log = _small().with_columns(position=pl.Series([1, 2, 1, 1, 1]))
    msg = _raises(ColumnValueError, "repeat a position", log)
    assert "e.g. (query, position) (8, 1) (2 rows)" in msg
    assert "2 row(s)" in msg


@pytest.mark.parametrize(
    ("value", "shown"), [(0.0, "0.0"), (1.5, "1.5"), (None, "None"), (float("nan"), "nan")]
)
def test_bad_propensity_names_rows(value: float | None, shown: str) -> None:
    p = [0.5, 0.5, 0.4, value, 0.9]
    log = _small().with_columns(p=pl.Series(p, dtype=pl.Float64))
    msg = _raises(ColumnValueError, r"propensity= probability \('p'\) outside \(0, 1\]", log)
    assert f"(8, 2): {shown}" in msg


def test_bad_target_names_rows() -> None:
    log = _small().with_columns(pe=pl.Series([0.6, 0.5, 0.4, -0.1, 0.9]))
    msg = _raises(ColumnValueError, r"target= probability \('pe'\) outside \[0, 1\]", log)
    assert "(8, 2): -0.1" in msg


def test_null_reward_and_ids() -> None:
    log = _small().with_columns(reward=pl.Series([1.0, None, 0.0, 1.0, 1.0]))
    assert "(7, 2)" in _raises(ColumnValueError, "reward= value", log)
    log = _small().with_columns(query=pl.Series([7, None, 8, 8, 9]))
    _raises(ColumnValueError, "null slate id", log)


def test_missing_and_mistyped_columns() -> None:
    _raises(ColumnNotFoundError, "'nope' .option propensity=", _small(), propensity="nope")
    _raises(ColumnNotFoundError, "option target=", _small(), target={"x": "nope"})
    _raises(ColumnNotFoundError, "option by=", _small(), by="nope")
    log = _small().with_columns(pl.col("position").cast(pl.Float64))
    _raises(ColumnTypeError, "position", log)
    log = _small().with_columns(pl.col("p").cast(pl.String))
    _raises(ColumnTypeError, "numbers", log)


def test_joint_probability_must_be_one_per_slate() -> None:
    log = _small().with_columns(pj=pl.Series([0.25, 0.3, 0.2, 0.2, 0.9]))
    msg = _raises(
        ColumnValueError,
        "joint probability .'pj'. differs",
        log,
        estimators="sips",
        propensity={"joint": "pj"},
        target={"new": {"joint": "pj"}},
    )
    assert "(7, 1): 0.25" in msg


def test_cascade_probability_must_not_grow() -> None:
    log = _small().with_columns(pc=pl.Series([0.5, 0.6, 0.4, 0.2, 0.9]))
    with pytest.raises(ColumnValueError, match="must not grow") as info:
        slate_off_policy(log, "rips", propensity={"cascade": "pc"}, target="pc")
    assert "(7, 2): 0.6" in str(info.value)


def test_missing_kinds_name_estimator_and_option() -> None:
    with pytest.raises(InvalidOptionError, match=r"'iips' needs the logging policy's item_posi"):
        slate_off_policy(_small(), "iips", propensity="p", target="pe")
    with pytest.raises(InvalidOptionError, match=r"'sips' needs target policy 'new'.s joint"):
        slate_off_policy(
            _small(), "sips", propensity={"joint": "p"}, target={"new": {"cascade": "pe"}}
        )
    with pytest.raises(InvalidOptionError, match="reward_model="):
        slate_off_policy(_small(), "cascade_dr", propensity="p", target="pe")
    with pytest.raises(InvalidOptionError, match="several kinds"):
        slate_off_policy(_small(), "sips", propensity={"joint": "p", "cascade": "q"}, target="pe")
    with pytest.raises(InvalidOptionError, match="unknown kind 'jiont'"):
        slate_off_policy(_small(), "sips", propensity={"jiont": "p"}, target="pe")


def test_unknown_estimator_suggests() -> None:
    with pytest.raises(UnknownMetricError, match="did you mean 'snrips'"):
        slate_off_policy(_small(), "snrps", propensity="p", target="pe")


def test_streaming_plan_without_ordered_windows(tmp_path: Path) -> None:
    """sips/iips/snsips/pi parts need no ordered window: their plan streams from Parquet."""
    from tests.engine.test_streaming import assert_streams

    path = tmp_path / "log.parquet"
    make_log(n_slates=10, seed=15).drop("q_all", "soft_dist", "greedy_dist").write_parquet(path)
    plan = slate_parts(
        pl.scan_parquet(path),
        estimators=["sips", "iips", "snsips", "pi"],
        policy="soft",
        logging={"conditional": "b_cond", "item_position": "b_ip"},
        target={"conditional": "soft_cond", "item_position": "soft_ip"},
        query="query",
        position="position",
        reward="reward",
        reward_model=None,
        target_reward_model=None,
        by=["segment"],
    )
    assert_streams(plan)


def test_empty_log_gives_empty_results() -> None:
    options: dict[str, Any] = {
        "propensity": {"conditional": "p", "item_position": "p"},
        "target": {"new": {"conditional": "pe", "item_position": "pe"}},
    }
    out = slate_off_policy(_small().clear(), "sips,sniips", **options)
    assert out.height == 0
    assert out.columns[:3] == ["metric", "policy", "n_queries"]
    table = slate_off_policy(_small().clear(), "sips,sniips", per_query=True, **options)
    assert table.columns == ["policy", "query", "sips", "sniips"]
    assert table.height == 0


# -- simulation: the true value is known ---------------------------------------------------


def _pl_log(n: int, seed: int) -> tuple[pl.DataFrame, dict[str, float]]:
    """Slates drawn by a Plackett-Luce logging policy in one context, clicks by a
    position-based model; the targets' true values by enumerating every ranking."""
    rng = np.random.default_rng(seed)
    scores = {"b": [-0.5, 0.5, 0.0, 0.5, 0.0], "new": [1.5, -0.5, 0.0, 1.0, -1.0]}
    attract = np.array([0.9, 0.2, 0.5, 0.6, 0.1])
    exam = np.array([1.0, 0.6, 0.3])
    gumbel = np.array(scores["b"]) + rng.gumbel(size=(n, N_ACTIONS))
    ranking = np.argsort(-gumbel, axis=1)[:, :LEN]  # Gumbel top-k = Plackett-Luce
    truth = {}
    columns: dict[str, Any] = {
        "query": np.repeat(np.arange(n), LEN),
        "position": np.tile(np.arange(1, LEN + 1), n),
        "action": ranking.reshape(-1),
    }
    for x, s in scores.items():
        expo = np.exp(np.array(s))
        chosen = expo[ranking]  # (n, LEN)
        left = expo.sum() - np.concatenate([np.zeros((n, 1)), chosen.cumsum(axis=1)[:, :-1]], 1)
        columns[f"{x}_cond"] = (chosen / left).reshape(-1)
        marg = _marginals(s, greedy=False)
        columns[f"{x}_ip"] = np.array([marg[p, a] for a in ranking for p, a in enumerate(a)])
        truth[x] = sum(marg[p, a] * attract[a] * exam[p] for p in range(LEN) for a in range(5))
    clicks = rng.random((n, LEN)) < attract[ranking] * exam
    columns["reward"] = clicks.reshape(-1).astype(float)
    columns["q"] = 0.3  # a poor reward model: Cascade-DR stays unbiased
    columns["new_e"] = 0.3
    return pl.DataFrame(columns), truth


def test_simulation_recovers_the_true_value() -> None:
    log, truth = _pl_log(20_000, seed=21)
    names = ["sips", "iips", "rips", "snsips", "sniips", "snrips", "cascade_dr"]
    out = slate_off_policy(
        log,
        names,
        propensity={"conditional": "b_cond", "item_position": "b_ip"},
        target={"new": {"conditional": "new_cond", "item_position": "new_ip"}},
        reward_model="q",
        target_reward_model="new_e",
    )
    assert abs(truth["new"] - truth["b"]) > 0.1  # the target differs from the logging policy
    for row in out.iter_rows(named=True):
        # within 4 standard errors of the truth (the draw is fixed by the seed)
        assert abs(row["value"] - truth["new"]) < 4 * row["se"], row
        assert row["se"] < 0.05, row


def test_simulation_pseudo_inverse_under_a_product_logging_policy() -> None:
    """PI is unbiased when positions are drawn independently and the reward is additive."""
    rng = np.random.default_rng(22)
    n, slots, items = 20_000, 3, 4
    log_p = rng.dirichlet(np.ones(items) * 2, size=slots)  # per slot
    new_p = rng.dirichlet(np.ones(items) * 2, size=slots)
    value = rng.normal(size=(slots, items))
    drawn = np.stack([rng.choice(items, size=n, p=log_p[k]) for k in range(slots)], axis=1)
    reward = value[np.arange(slots), drawn] + rng.normal(scale=0.5, size=(n, slots))
    log = pl.DataFrame(
        {
            "query": np.repeat(np.arange(n), slots),
            "position": np.tile(np.arange(slots), n),
            "reward": reward.reshape(-1),
            "b": log_p[np.arange(slots), drawn].reshape(-1),
            "e": new_p[np.arange(slots), drawn].reshape(-1),
        }
    )
    truth = float((new_p * value).sum())
    out = slate_off_policy(
        log, "pi,iips", propensity={"item_position": "b"}, target={"new": {"item_position": "e"}}
    )
    for row in out.iter_rows(named=True):
        assert abs(row["value"] - truth) < 4 * row["se"], (row, truth)


def test_a_bare_target_plays_the_kinds_of_propensitys_one_column() -> None:
    """propensity={"conditional": "p", "item_position": "p"} and target="pe": pe plays both."""
    both = {"conditional": "p", "item_position": "p"}
    short = slate_off_policy(_small(), "sips,iips", propensity=both, target="pe")
    spelled = slate_off_policy(
        _small(),
        "sips,iips",
        propensity=both,
        target={"pe": {"conditional": "pe", "item_position": "pe"}},
    )
    assert short.equals(spelled)


def test_passes_over_buckets_of_slates_give_the_one_pass_estimates() -> None:
    log = make_log(n_slates=40, seed=12).drop("q_all", "soft_dist", "greedy_dist")
    options = _all_options()
    one = slate_off_policy(log, ALL, by="segment", **options)
    for n_buckets in (1, 3, 7):
        got = slate_off_policy(log.lazy(), ALL, by="segment", n_buckets=n_buckets, **options)
        assert got.select("metric", "policy", "segment", "n_queries").equals(
            one.select("metric", "policy", "segment", "n_queries")
        )
        for column in ("value", "se", "ci_low", "ci_high", "ess", "max_weight", "mean_weight"):
            np.testing.assert_allclose(
                got[column].cast(pl.Float64).to_numpy(),
                one[column].cast(pl.Float64).to_numpy(),
                rtol=1e-12,
            )
    with pytest.raises(InvalidOptionError, match="n_buckets="):
        slate_off_policy(log, ALL, n_buckets=0, **options)
    with pytest.raises(InvalidOptionError, match="per_query"):
        slate_off_policy(log, ALL, n_buckets=2, per_query=True, **options)


def test_a_bad_slate_is_found_in_its_bucket() -> None:
    log = make_log(n_slates=40, seed=13).drop("q_all", "soft_dist", "greedy_dist")
    first = log.row(0, named=True)
    broken = log.with_columns(
        position=pl.when(
            (pl.col("query") == first["query"]) & (pl.col("position") != first["position"])
        )
        .then(first["position"])
        .otherwise(pl.col("position"))
    )
    with pytest.raises(ColumnValueError, match="repeat a position"):
        slate_off_policy(broken, ALL, n_buckets=4, **_all_options())
