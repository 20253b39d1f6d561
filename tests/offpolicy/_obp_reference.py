"""Open Bandit Pipeline's bandit estimators, transcribed into plain numpy for the tests.

obp does not install on Python >= 3.10 (``Requires-Python <3.10``, and it pulls torch), so its
round-reward code is copied here line for line from ``obp/ope/estimators.py`` at commit
8cbd5fa (st-tech/zr-obp), each function citing the lines it transcribes. obp's
``estimate_policy_value`` is the mean of the round rewards in every class (e.g. L401-407,
L1068-1075), which :func:`policy_value` does. Shapes follow obp: ``action_dist`` and
``q_hat`` are ``(n_rounds, n_actions, len_list)``; ``position`` is all zeros for bandit data.

Nothing here calls polars_rankeval: these are the independent expected values.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

Array = np.ndarray


def replay(reward: Array, action: Array, action_dist: Array, position: Array, **_: object) -> Array:
    """ReplayMethod._estimate_round_rewards, L105-114."""
    action_match = np.array(action_dist[np.arange(action.shape[0]), action, position] == 1)
    estimated_rewards = np.zeros_like(action_match)
    if action_match.sum() > 0.0:
        estimated_rewards = action_match * reward / action_match.mean()
    return estimated_rewards


def ipw(
    reward: Array,
    action: Array,
    pscore: Array,
    action_dist: Array,
    position: Array,
    lambda_: float = np.inf,
    **_: object,
) -> Array:
    """InverseProbabilityWeighting._estimate_round_rewards, L331-338."""
    iw = action_dist[np.arange(action.shape[0]), action, position] / pscore
    # weight clipping
    if isinstance(iw, np.ndarray):
        iw = np.minimum(iw, lambda_)
    return np.asarray(reward * iw)


def snipw(
    reward: Array, action: Array, pscore: Array, action_dist: Array, position: Array, **_: object
) -> Array:
    """SelfNormalizedInverseProbabilityWeighting._estimate_round_rewards, L652-656."""
    iw = action_dist[np.arange(action.shape[0]), action, position] / pscore
    return np.asarray(reward * iw / iw.mean())


def dm(action_dist: Array, q_hat: Array, position: Array, **_: object) -> Array:
    """DirectMethod._estimate_round_rewards, L731-741."""
    n = position.shape[0]
    q_hat_at_position = q_hat[np.arange(n), :, position]
    pi_e_at_position = action_dist[np.arange(n), :, position]
    return np.average(q_hat_at_position, weights=pi_e_at_position, axis=1)


def dr(
    reward: Array,
    action: Array,
    pscore: Array,
    action_dist: Array,
    q_hat: Array,
    position: Array,
    lambda_: float = np.inf,
    **_: object,
) -> Array:
    """DoublyRobust._estimate_round_rewards, L980-996."""
    n = action.shape[0]
    iw = action_dist[np.arange(n), action, position] / pscore
    # weight clipping
    if isinstance(iw, np.ndarray):
        iw = np.minimum(iw, lambda_)
    q_hat_at_position = q_hat[np.arange(n), :, position]
    q_hat_factual = q_hat[np.arange(n), action, position]
    pi_e_at_position = action_dist[np.arange(n), :, position]
    estimated_rewards = np.average(q_hat_at_position, weights=pi_e_at_position, axis=1)
    estimated_rewards += iw * (reward - q_hat_factual)
    return estimated_rewards


def sndr(
    reward: Array,
    action: Array,
    pscore: Array,
    action_dist: Array,
    q_hat: Array,
    position: Array,
    **_: object,
) -> Array:
    """SelfNormalizedDoublyRobust._estimate_round_rewards, L1343-1355."""
    n = action.shape[0]
    iw = action_dist[np.arange(n), action, position] / pscore
    q_hat_at_position = q_hat[np.arange(n), :, position]
    q_hat_factual = q_hat[np.arange(n), action, position]
    pi_e_at_position = action_dist[np.arange(n), :, position]
    estimated_rewards = np.average(q_hat_at_position, weights=pi_e_at_position, axis=1)
    estimated_rewards += iw * (reward - q_hat_factual) / iw.mean()
    return estimated_rewards


def switch_dr(
    reward: Array,
    action: Array,
    pscore: Array,
    action_dist: Array,
    q_hat: Array,
    position: Array,
    lambda_: float = np.inf,
    **_: object,
) -> Array:
    """SwitchDoublyRobust._estimate_round_rewards, L1463-1476."""
    n = action.shape[0]
    iw = action_dist[np.arange(n), action, position] / pscore
    switch_indicator = np.array(iw <= lambda_, dtype=int)
    q_hat_at_position = q_hat[np.arange(n), :, position]
    q_hat_factual = q_hat[np.arange(n), action, position]
    pi_e_at_position = action_dist[np.arange(n), :, position]
    estimated_rewards = np.average(q_hat_at_position, weights=pi_e_at_position, axis=1)
    estimated_rewards += switch_indicator * iw * (reward - q_hat_factual)
    return estimated_rewards


def dr_os(
    reward: Array,
    action: Array,
    pscore: Array,
    action_dist: Array,
    q_hat: Array,
    position: Array,
    lambda_: float = 0.0,
    **_: object,
) -> Array:
    """DoublyRobustWithShrinkage._estimate_round_rewards, L1668-1685."""
    n = action.shape[0]
    iw = action_dist[np.arange(n), action, position] / pscore
    if lambda_ < np.inf:  # noqa: SIM108 - obp's lines, as written there
        iw_hat = (lambda_ * iw) / (iw**2 + lambda_)
    else:
        iw_hat = iw
    q_hat_at_position = q_hat[np.arange(n), :, position]
    q_hat_factual = q_hat[np.arange(n), action, position]
    pi_e_at_position = action_dist[np.arange(n), :, position]
    estimated_rewards = np.average(q_hat_at_position, weights=pi_e_at_position, axis=1)
    estimated_rewards += iw_hat * (reward - q_hat_factual)
    return estimated_rewards


#: our estimator name -> obp's round-reward function
ROUND_REWARDS: dict[str, Callable[..., Array]] = {
    "ips": ipw,
    "snips": snipw,
    "dm": dm,
    "dr": dr,
    "sndr": sndr,
    "switch_dr": switch_dr,
    "dr_os": dr_os,
    "replay": replay,
}


def policy_value(name: str, **inputs: object) -> float:
    """obp's estimate_policy_value: the mean of the round rewards (e.g. L401-407)."""
    return float(ROUND_REWARDS[name](**inputs).mean())
