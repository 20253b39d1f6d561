"""Generate ``data/offpolicy/``: small synthetic logs whose true policy values are known.

Run ``python data/make_offpolicy.py`` to rebuild it (deterministic, seeded). Every log is drawn
from a simulator with a *finite* population of contexts (users, query topics), so each true
value in ``truth.json`` is an exact expectation over that population (a weighted sum, not a
Monte Carlo average): an estimate from a log differs from it by sampling noise and by the
estimator's bias only. The benchmarks import the simulators from this file
(``benchmarks/offpolicy_bench.py``, ``benchmarks/offpolicy_coverage.py``).

Files (integers are ids; probabilities are float64):

* ``bandit.parquet``: a contextual-bandit log, one row per logged decision (the *event form*
  of ``off_policy``). ``query`` (the decision's id), ``user`` (the context: one of 500 user
  types, drawn with unequal frequencies), ``device`` ("mobile"/"desktop", a segment for
  ``by=``), ``x0, x1, x2`` (the user's features), ``action`` (one of 6, drawn by the logging
  policy, a softmax of a noisy score), ``propensity`` (the logging policy's probability of
  ``action``), ``pi_new`` and ``pi_greedy`` (two target policies' probabilities of
  ``action``: ``pi_new`` a sharper softmax of a better score, ``pi_greedy`` deterministic,
  0 or 1, so that ``replay`` applies), ``reward`` (0/1, Bernoulli with the true mean
  ``q(user, action)``), ``q_hat`` (a reward model's prediction for ``action``: deliberately
  a little wrong, shrunk and shifted), ``dm_new`` and ``dm_greedy`` (the reward model averaged
  over each target's actions: ``sum_a pi(a | user) * q_hat(user, a)``).
* ``bandit_candidates.parquet``: the same decisions in the *candidate form*: one row per
  (``query``, candidate ``action``) with ``user``, ``device``, ``logged`` (True on the action
  the logging policy took), ``propensity`` (the logging policy's probability of that candidate,
  on every row), ``pi_new``, ``pi_greedy`` (each sums to 1 over a decision's rows), ``q_hat``
  and ``reward`` (null on the candidates not taken).
* ``slates.parquet``: a slate log, one row per shown position: ``query`` (the slate's id),
  ``user`` (one of 300 user types), ``device``, ``position`` (1 = top; 3 to 5 positions per
  slate, fixed per user type), ``item`` (position ``l`` shows one of the 4 items
  ``4(l-1) .. 4l-1``), ``reward`` (the click at that position under a cascade model: the user
  reads down the slate, clicks an item with its attraction probability and stops at the
  first click), ``propensity`` (the logging policy's probability of ``item`` at ``position``;
  the policy draws each position independently, so this conditional probability is also the
  item-position marginal: pass ``propensity={"conditional": "propensity", "item_position":
  "propensity"}``), ``pi_new``, ``pi_top`` (the targets' probabilities of the same item at
  that position, also drawn position by position), ``q_hat`` (a slightly wrong model of the
  expected click at this position given the logged items above) and ``dm_new``, ``dm_top``
  (that model averaged over the target's choice at this position, given the logged items
  above: Cascade-DR's ``target_reward_model``).
* ``clicks.parquet``: a click log under a position-based model: one row per shown document,
  ``query`` (the impression), ``topic`` (one of 300 query topics), ``item``, ``position``
  (1-8), ``click`` (0/1: examined with probability ``examination`` and then clicked with the
  document's relevance probability), ``randomized`` (True on the 25% of impressions shown in
  a uniformly random order, for ``examination_from_randomized``; the others follow a noisy
  logging ranker), ``examination`` (the true examination probability of ``position``,
  ``1 / position``), ``score_new`` and ``score_alt`` (two new rankers' scores: ``score_new``
  is close to the true relevance, ``score_alt`` noisier).
* ``interleaving.parquet``: a team-draft multileaving log of three rankers: one row per shown
  document, ``query`` (the impression), ``topic`` (one of 300), ``position`` (1-6), ``item``,
  ``team`` ("bm25", "dense" or "hybrid": the ranker that contributed the document, drawn as
  mpkato/interleaving's ``TeamDraft`` draws) and ``click`` (position-based model as above).
* ``truth.json``: the true values: per bandit and slate target policy (overall and per
  ``device``) its expected reward per decision (slate: expected clicks per slate), the logging
  policy's too; per click metric and new ranker its expected value per impression; the
  examination probabilities; per pair of rankers of the interleaving log the exact
  probabilities of a win, a loss and a tie, and ``delta = P(win) + P(tie)/2 - 1/2``
  (pairs oriented as ``interleaving`` orients them: the larger name is ``team``).
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

N_FEATURES = 3
N_ACTIONS = 6
SLATE_POOL = 4  # items per slate position
MAX_SLATE = 5
CLICK_DEPTH = 8  # documents per click-log impression
MULTILEAVE_DEPTH = 6  # documents shown per interleaved impression
INTERLEAVE_DOCS = 10  # documents each ranker ranks per topic
RANKERS = ("bm25", "dense", "hybrid")
CLICK_METRICS = ("dcg@5", "dcg", "rr", "ctr@3")


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return np.asarray(1.0 / (1.0 + np.exp(-x)))


def _softmax(scores: np.ndarray, temperature: float) -> np.ndarray:
    z = temperature * scores
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return np.asarray(e / e.sum(axis=-1, keepdims=True))


def _draw(probabilities: np.ndarray, u: np.ndarray) -> np.ndarray:
    """One category per row of ``probabilities`` by inverse CDF at the uniforms ``u``."""
    cumulative = probabilities.cumsum(axis=-1)
    index = (u[..., None] > cumulative).sum(axis=-1)
    return np.asarray(np.minimum(index, probabilities.shape[-1] - 1))


# --- bandit --------------------------------------------------------------------------------
@dataclass(frozen=True)
class BanditWorld:
    """A finite population of users; every policy is a table users x actions."""

    weight: np.ndarray  # (M,) probability of drawing each user type
    features: np.ndarray  # (M, N_FEATURES)
    mobile: np.ndarray  # (M,) bool
    reward: np.ndarray  # (M, K) true mean reward q(x, a)
    logging: np.ndarray  # (M, K)
    targets: dict[str, np.ndarray] = field(default_factory=dict)  # name -> (M, K)
    reward_model: np.ndarray = field(default_factory=lambda: np.zeros(0))  # (M, K) q_hat


def bandit_world(n_users: int = 500, seed: int = 3) -> BanditWorld:
    rng = np.random.default_rng(seed)
    features = rng.normal(size=(n_users, N_FEATURES))
    mobile = rng.random(n_users) < 0.6
    theta = rng.normal(size=(N_ACTIONS, N_FEATURES))
    bias = rng.normal(-1.0, 0.5, size=N_ACTIONS)
    mobile_effect = rng.normal(0.0, 0.7, size=N_ACTIONS)
    logit = features @ theta.T + bias + np.outer(mobile, mobile_effect)
    reward = _sigmoid(logit)
    # The logging policy scores with a noisy copy of the truth and a mild temperature, so
    # every action keeps a fair chance (the smallest propensity is printed by main()).
    logging_score = features @ (theta + rng.normal(0, 0.8, theta.shape)).T + bias
    logging = _softmax(logging_score, 0.7)
    new_score = logit + rng.normal(0, 0.5, logit.shape)
    greedy_score = logit + rng.normal(0, 1.5, logit.shape)
    greedy = np.zeros_like(reward)
    greedy[np.arange(n_users), greedy_score.argmax(axis=1)] = 1.0
    # A reward model that is a little wrong: shrunk towards 0.5 on the logit scale, shifted
    # and noisy, so DM is biased and DR's correction has something to correct.
    reward_model = _sigmoid(0.8 * logit + 0.2 + rng.normal(0, 0.3, logit.shape))
    weight = np.exp(rng.normal(0, 0.5, n_users))
    return BanditWorld(
        weight=weight / weight.sum(),
        features=features,
        mobile=mobile,
        reward=reward,
        logging=logging,
        targets={"pi_new": _softmax(new_score, 2.5), "pi_greedy": greedy},
        reward_model=reward_model,
    )


def bandit_truth(world: BanditWorld) -> dict[str, object]:
    """Each policy's expected reward per decision: sum_x p(x) sum_a pi(a|x) q(x,a)."""
    policies = {"logging": world.logging, **world.targets}

    def value(mask: np.ndarray) -> dict[str, float]:
        w = world.weight * mask
        return {
            name: float((w[:, None] * pi * world.reward).sum() / w.sum())
            for name, pi in policies.items()
        }

    return {
        "policy_value": value(np.ones_like(world.weight)),
        "by_device": {
            "mobile": value(world.mobile.astype(float)),
            "desktop": value((~world.mobile).astype(float)),
        },
    }


def simulate_bandit(
    world: BanditWorld,
    n_rounds: int,
    seed: int,
    *,
    candidates: bool = False,
    features: bool = True,
    chunk: int = 1_000_000,
) -> pl.DataFrame:
    """A logged bandit log of ``n_rounds`` decisions (event form, or candidate form)."""
    rng = np.random.default_rng(seed)
    frames = []
    for start in range(0, n_rounds, chunk):
        n = min(chunk, n_rounds - start)
        user = rng.choice(world.weight.size, size=n, p=world.weight)
        action = _draw(world.logging[user], rng.random(n))
        reward = (rng.random(n) < world.reward[user, action]).astype(np.int8)
        query = np.arange(start, start + n, dtype=np.int64)
        if candidates:
            frames.append(_candidate_rows(world, query, user, action, reward))
            continue
        columns: dict[str, object] = {"query": query, "user": user.astype(np.int32)}
        columns["device"] = np.where(world.mobile[user], "mobile", "desktop")
        if features:
            columns |= {f"x{i}": world.features[user, i] for i in range(N_FEATURES)}
        columns |= {
            "action": action.astype(np.int32),
            "propensity": world.logging[user, action],
            **{name: pi[user, action] for name, pi in world.targets.items()},
            "reward": reward,
            "q_hat": world.reward_model[user, action],
            **{
                name.replace("pi_", "dm_"): (pi[user] * world.reward_model[user]).sum(axis=1)
                for name, pi in world.targets.items()
            },
        }
        frames.append(pl.DataFrame(columns))
    return pl.concat(frames)


def _candidate_rows(
    world: BanditWorld, query: np.ndarray, user: np.ndarray, action: np.ndarray, reward: np.ndarray
) -> pl.DataFrame:
    n = query.size
    rows_user = np.repeat(user, N_ACTIONS)
    candidate = np.tile(np.arange(N_ACTIONS), n)
    logged = candidate == np.repeat(action, N_ACTIONS)
    return pl.DataFrame(
        {
            "query": np.repeat(query, N_ACTIONS),
            "user": rows_user.astype(np.int32),
            "device": np.where(world.mobile[rows_user], "mobile", "desktop"),
            "action": candidate.astype(np.int32),
            "logged": logged,
            "propensity": world.logging[rows_user, candidate],
            **{name: pi[rows_user, candidate] for name, pi in world.targets.items()},
            "q_hat": world.reward_model[rows_user, candidate],
            "reward": pl.Series(np.repeat(reward, N_ACTIONS), dtype=pl.Int8),
        }
    ).with_columns(pl.when("logged").then(pl.col("reward")).alias("reward"))


# --- slates --------------------------------------------------------------------------------
@dataclass(frozen=True)
class SlateWorld:
    """Users x positions x pool items: attraction and per-position policies."""

    weight: np.ndarray  # (M,)
    mobile: np.ndarray  # (M,) bool
    length: np.ndarray  # (M,) slate length, 3..5
    attraction: np.ndarray  # (M, MAX_SLATE, SLATE_POOL) true click probability if read
    logging: np.ndarray  # (M, MAX_SLATE, SLATE_POOL), each position's distribution
    targets: dict[str, np.ndarray] = field(default_factory=dict)
    model: np.ndarray = field(default_factory=lambda: np.zeros(0))  # attraction estimate


def slate_world(n_users: int = 300, seed: int = 5) -> SlateWorld:
    rng = np.random.default_rng(seed)
    shape = (n_users, MAX_SLATE, SLATE_POOL)
    features = rng.normal(size=(n_users, N_FEATURES))
    item_vectors = rng.normal(size=(MAX_SLATE, SLATE_POOL, N_FEATURES))
    item_bias = rng.normal(-2.6, 0.6, size=(MAX_SLATE, SLATE_POOL))
    logit = np.einsum("uf,lpf->ulp", features, item_vectors) + item_bias
    attraction = _sigmoid(logit)
    logging = _softmax(logit + rng.normal(0, 1.5, shape), 0.5)
    weight = np.exp(rng.normal(0, 0.5, n_users))
    return SlateWorld(
        weight=weight / weight.sum(),
        mobile=rng.random(n_users) < 0.5,
        length=rng.integers(3, MAX_SLATE + 1, size=n_users),
        attraction=attraction,
        logging=logging,
        targets={
            "pi_new": _softmax(logit + rng.normal(0, 0.5, shape), 1.5),
            "pi_top": _softmax(logit + rng.normal(0, 0.5, shape), 3.0),
        },
        model=_sigmoid(0.85 * logit + 0.1 + rng.normal(0, 0.3, shape)),
    )


def _cascade_value(world: SlateWorld, policy: np.ndarray) -> np.ndarray:
    """Expected clicks per slate per user: sum_l prod_{k<l} (1 - e_k) e_l, e_l = E_pi[c]."""
    expected = (policy * world.attraction).sum(axis=2)  # (M, MAX_SLATE)
    shown = np.arange(MAX_SLATE)[None, :] < world.length[:, None]
    expected = np.where(shown, expected, 0.0)
    not_yet = np.cumprod(1.0 - expected, axis=1)
    reached = np.concatenate([np.ones((expected.shape[0], 1)), not_yet[:, :-1]], axis=1)
    return np.asarray((reached * expected).sum(axis=1))


def slate_truth(world: SlateWorld) -> dict[str, object]:
    """Each policy's expected clicks per slate (positions drawn independently, cascade)."""
    values = {
        name: _cascade_value(world, pi)
        for name, pi in {"logging": world.logging, **world.targets}.items()
    }

    def value(mask: np.ndarray) -> dict[str, float]:
        w = world.weight * mask
        return {name: float((w * v).sum() / w.sum()) for name, v in values.items()}

    return {
        "policy_value": value(np.ones_like(world.weight)),
        "by_device": {
            "mobile": value(world.mobile.astype(float)),
            "desktop": value((~world.mobile).astype(float)),
        },
    }


def simulate_slates(
    world: SlateWorld, n_slates: int, seed: int, *, chunk: int = 500_000
) -> pl.DataFrame:
    """A slate log: one row per shown position, cascade clicks, independent positions."""
    rng = np.random.default_rng(seed)
    frames = [
        _slate_chunk(world, rng, start, min(chunk, n_slates - start))
        for start in range(0, n_slates, chunk)
    ]
    return pl.concat(frames)


def _slate_chunk(
    world: SlateWorld, rng: np.random.Generator, start: int, n_slates: int
) -> pl.DataFrame:
    user = rng.choice(world.weight.size, size=n_slates, p=world.weight)
    length = world.length[user]
    # every slate draws MAX_SLATE positions; rows beyond its length are dropped at the end
    item = _draw(world.logging[user], rng.random((n_slates, MAX_SLATE)))  # (n, MAX_SLATE)
    take = (np.arange(n_slates)[:, None], np.arange(MAX_SLATE)[None, :], item)
    attraction = world.attraction[user][take]
    shown = np.arange(MAX_SLATE)[None, :] < length[:, None]
    clicked = (rng.random((n_slates, MAX_SLATE)) < attraction) & shown
    first = np.where(clicked.any(axis=1), clicked.argmax(axis=1), MAX_SLATE)
    reward = (np.arange(MAX_SLATE)[None, :] == first[:, None]).astype(np.int8)
    model = world.model[user]  # (n, MAX_SLATE, POOL)
    model_logged = model[take]
    above = np.cumprod(1.0 - model_logged, axis=1)
    reached = np.concatenate([np.ones((n_slates, 1)), above[:, :-1]], axis=1)
    columns: dict[str, np.ndarray] = {
        "query": np.repeat(
            np.arange(start, start + n_slates, dtype=np.int64)[:, None], MAX_SLATE, axis=1
        ),
        "user": np.repeat(user[:, None], MAX_SLATE, axis=1).astype(np.int32),
        "position": np.repeat(np.arange(1, MAX_SLATE + 1)[None, :], n_slates, axis=0),
        "item": (np.arange(MAX_SLATE)[None, :] * SLATE_POOL + item).astype(np.int32),
        "reward": reward,
        "propensity": world.logging[user][take],
    }
    columns |= {name: pi[user][take] for name, pi in world.targets.items()}
    columns["q_hat"] = reached * model_logged
    for name, pi in world.targets.items():
        columns[name.replace("pi_", "dm_")] = reached * (pi[user] * model).sum(axis=2)
    flat = {name: values[shown] for name, values in columns.items()}
    device = np.where(world.mobile[flat["user"]], "mobile", "desktop")
    frame = pl.DataFrame({"query": flat.pop("query"), "user": flat.pop("user"), "device": device})
    return frame.hstack(pl.DataFrame(flat)).with_columns(pl.col("position").cast(pl.Int32))


# --- click log (position-based model) ------------------------------------------------------
def examination(position: np.ndarray) -> np.ndarray:
    """The position-based model's examination probability, ``1 / position``."""
    return np.asarray(1.0 / position)


@dataclass(frozen=True)
class ClickWorld:
    relevance: np.ndarray  # (T, D) click probability once examined
    logging_score: np.ndarray  # (T, D)
    scores: dict[str, np.ndarray]  # ranker -> (T, D)


def click_world(n_topics: int = 300, seed: int = 7) -> ClickWorld:
    rng = np.random.default_rng(seed)
    relevance = rng.beta(0.6, 1.6, size=(n_topics, CLICK_DEPTH))
    logit = np.log(relevance / (1 - relevance))
    return ClickWorld(
        relevance=relevance,
        logging_score=logit + rng.normal(0, 1.5, logit.shape),
        scores={
            "score_new": logit + rng.normal(0, 0.5, logit.shape),
            "score_alt": logit + rng.normal(0, 1.5, logit.shape),
        },
    )


def _gain(metric: str, rank: np.ndarray) -> np.ndarray:
    """``lambda(rank)`` of the click metrics (rank 1 = top)."""
    family, _, cutoff = metric.partition("@")
    depth = int(cutoff) if cutoff else rank.max()
    inside = rank <= depth
    if family == "dcg":
        return np.asarray(inside / np.log2(rank + 1))
    if family == "rr":
        return np.asarray(inside / rank)
    return np.asarray(inside * 1.0)  # ctr


def click_truth(world: ClickWorld) -> dict[str, object]:
    """Expected metric per impression of each new ranking: mean_topic sum_d lambda(rank) rel."""
    values: dict[str, dict[str, float]] = {}
    for metric in CLICK_METRICS:
        values[metric] = {}
        for name, score in world.scores.items():
            rank = (-score).argsort(axis=1).argsort(axis=1) + 1  # no ties: continuous scores
            values[metric][name] = float((_gain(metric, rank) * world.relevance).sum(axis=1).mean())
    positions = np.arange(1, CLICK_DEPTH + 1)
    return {
        "metric_value": values,
        "examination": {
            str(p): float(e) for p, e in zip(positions, examination(positions), strict=True)
        },
    }


def simulate_clicks(world: ClickWorld, n_impressions: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    n_topics = world.relevance.shape[0]
    topic = rng.integers(0, n_topics, size=n_impressions)
    randomized = rng.random(n_impressions) < 0.25
    # Plackett-Luce over the logging scores (Gumbel trick); uniform order when randomised.
    noisy = world.logging_score[topic] + rng.gumbel(size=(n_impressions, CLICK_DEPTH))
    noisy[randomized] = rng.random((int(randomized.sum()), CLICK_DEPTH))
    order = (-noisy).argsort(axis=1)  # order[i, j] = the document shown at position j + 1
    position = np.broadcast_to(np.arange(1, CLICK_DEPTH + 1), order.shape)
    relevance = np.take_along_axis(world.relevance[topic], order, axis=1)
    click = rng.random(order.shape) < examination(position) * relevance
    rows = {
        "query": np.repeat(np.arange(n_impressions, dtype=np.int64), CLICK_DEPTH),
        "topic": np.repeat(topic, CLICK_DEPTH).astype(np.int32),
        "item": (topic[:, None] * CLICK_DEPTH + order).ravel().astype(np.int32),
        "position": position.ravel().astype(np.int32),
        "click": click.ravel().astype(np.int8),
        "randomized": np.repeat(randomized, CLICK_DEPTH),
        "examination": examination(position.ravel()),
    }
    for name, score in world.scores.items():
        rows[name] = np.take_along_axis(score[topic], order, axis=1).ravel()
    return pl.DataFrame(rows)


# --- interleaving (team-draft multileaving, position-based clicks) -----------------------
@dataclass(frozen=True)
class InterleavingWorld:
    relevance: np.ndarray  # (T, D)
    rankings: dict[str, np.ndarray]  # ranker -> (T, D) documents best first


def interleaving_world(n_topics: int = 300, seed: int = 9) -> InterleavingWorld:
    rng = np.random.default_rng(seed)
    relevance = rng.beta(0.6, 1.6, size=(n_topics, INTERLEAVE_DOCS))
    logit = np.log(relevance / (1 - relevance))
    noise = {"bm25": 2.0, "dense": 1.2, "hybrid": 0.8}
    rankings = {
        name: (-(logit + rng.normal(0, sd, logit.shape))).argsort(axis=1)
        for name, sd in noise.items()
    }
    return InterleavingWorld(relevance=relevance, rankings=rankings)


def _team_draft(
    lists: list[list[int]], order: list[int], depth: int
) -> tuple[list[int], list[int]]:
    """mpkato's ``TeamDraft._sample`` with its team choices fixed by ``order``.

    Each round every team picks once, in the round's order (mpkato draws uniformly among
    the teams with the fewest picks, which is a uniformly random order per round), taking
    its best document not shown yet. Returns the shown documents and their teams.
    """
    shown: list[int] = []
    teams: list[int] = []
    for team in order:
        if len(shown) == depth:
            break
        doc = next(d for d in lists[team] if d not in shown)
        shown.append(doc)
        teams.append(team)
    return shown, teams


def _round_orders(n_teams: int, depth: int) -> list[list[int]]:
    """Every sequence of team choices, equally likely: one permutation per round."""
    rounds = -(-depth // n_teams)
    perms = list(itertools.permutations(range(n_teams)))
    return [[t for p in combo for t in p] for combo in itertools.product(perms, repeat=rounds)]


def interleaving_truth(world: InterleavingWorld) -> dict[str, object]:
    """Exact P(win), P(loss), P(tie) per pair: every team-choice sequence, every click pattern."""
    names = sorted(world.rankings)
    n_teams = len(names)
    orders = _round_orders(n_teams, MULTILEAVE_DEPTH)
    patterns = np.array(list(itertools.product([0, 1], repeat=MULTILEAVE_DEPTH)), dtype=float)
    exam = examination(np.arange(1, MULTILEAVE_DEPTH + 1))
    pairs = [(j, i) for i, j in itertools.combinations(range(n_teams), 2)]  # (team, baseline)
    totals = {pair: np.zeros(3) for pair in pairs}  # win, loss, tie
    n_topics = world.relevance.shape[0]
    for topic in range(n_topics):
        lists = [world.rankings[name][topic].tolist() for name in names]
        for order in orders:
            shown, teams = _team_draft(lists, order, MULTILEAVE_DEPTH)
            p_click = exam * world.relevance[topic, shown]
            p_pattern = np.prod(np.where(patterns == 1, p_click, 1 - p_click), axis=1)
            member = np.zeros((MULTILEAVE_DEPTH, n_teams))
            member[np.arange(MULTILEAVE_DEPTH), teams] = 1.0
            credit = patterns @ member  # (patterns, teams)
            for team, base in pairs:
                diff = credit[:, team] - credit[:, base]
                totals[(team, base)] += [
                    p_pattern[diff > 0].sum(),
                    p_pattern[diff < 0].sum(),
                    p_pattern[diff == 0].sum(),
                ]
    out = []
    share = len(orders) * n_topics  # every (topic, choice sequence) is equally likely
    for (team, base), total in totals.items():
        win, loss, tie = (float(x) for x in total / share)
        out.append(
            {
                "team": names[team],
                "baseline_team": names[base],
                "p_win": win,
                "p_loss": loss,
                "p_tie": tie,
                "delta": win + tie / 2 - 0.5,
            }
        )
    return {"pairs": sorted(out, key=lambda row: (row["baseline_team"], row["team"]))}


def simulate_interleaving(world: InterleavingWorld, n_impressions: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    names = sorted(world.rankings)
    orders = _round_orders(len(names), MULTILEAVE_DEPTH)
    n_topics = world.relevance.shape[0]
    exam = examination(np.arange(1, MULTILEAVE_DEPTH + 1))
    rows: dict[str, list[object]] = {
        k: [] for k in ("query", "topic", "position", "item", "team", "click")
    }
    for query in range(n_impressions):
        topic = int(rng.integers(0, n_topics))
        order = orders[int(rng.integers(0, len(orders)))]
        lists = [world.rankings[name][topic].tolist() for name in names]
        shown, teams = _team_draft(lists, order, MULTILEAVE_DEPTH)
        clicks = rng.random(MULTILEAVE_DEPTH) < exam * world.relevance[topic, shown]
        for position, (doc, team, click) in enumerate(zip(shown, teams, clicks, strict=True), 1):
            rows["query"].append(query)
            rows["topic"].append(topic)
            rows["position"].append(position)
            rows["item"].append(topic * INTERLEAVE_DOCS + doc)
            rows["team"].append(names[team])
            rows["click"].append(int(click))
    return pl.DataFrame(
        rows,
        schema={
            "query": pl.Int64,
            "topic": pl.Int32,
            "position": pl.Int32,
            "item": pl.Int32,
            "team": pl.String,
            "click": pl.Int8,
        },
    )


# --- the files -----------------------------------------------------------------------------
SIZES = {"bandit": 5_000, "slates": 3_000, "clicks": 3_000, "interleaving": 3_000}


def make_offpolicy(
    seed: int = 2026,
) -> tuple[dict[str, pl.DataFrame], dict[str, dict[str, object]]]:
    """Every log of ``data/offpolicy/`` and the truth, from the default worlds."""
    bandit, slates = bandit_world(), slate_world()
    clicks, interleaved = click_world(), interleaving_world()
    frames = {
        "bandit": simulate_bandit(bandit, SIZES["bandit"], seed),
        "bandit_candidates": simulate_bandit(bandit, SIZES["bandit"], seed, candidates=True),
        "slates": simulate_slates(slates, SIZES["slates"], seed + 1),
        "clicks": simulate_clicks(clicks, SIZES["clicks"], seed + 2),
        "interleaving": simulate_interleaving(interleaved, SIZES["interleaving"], seed + 3),
    }
    truth = {
        "bandit": bandit_truth(bandit),
        "slates": slate_truth(slates),
        "clicks": click_truth(clicks),
        "interleaving": interleaving_truth(interleaved),
    }
    return frames, truth


if __name__ == "__main__":
    folder = Path(__file__).resolve().parent / "offpolicy"
    folder.mkdir(exist_ok=True)
    frames, truth = make_offpolicy()
    for name, frame in frames.items():
        frame.write_parquet(folder / f"{name}.parquet")
        print(f"{name}: {frame.shape}")
    (folder / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
    print(json.dumps(truth, indent=2))
