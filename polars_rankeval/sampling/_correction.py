"""Krichene & Rendle's corrected sampled metrics.

The source: W. Krichene and S. Rendle, "On Sampled Metrics for Item Recommendation", KDD 2020,
Section 4 (and CACM 65(7), 2022). One relevant item per list, ranked ``r`` (1 = best) among
``n`` items in full evaluation. With ``m`` negatives drawn uniformly, each outranks it with
probability ``(r - 1) / (n - 1)``, so its sampled rank ``r~`` is
``1 + Binomial(m, (r - 1) / (n - 1))`` (the paper's ``p(r~ | r)``; drawing without replacement
makes it hypergeometric, a difference the paper calls negligible when ``m << n``). A corrected
metric credits each sampled rank a value ``x[r~]`` chosen so that its expectation tracks the
full metric ``M(r)``, with a uniform prior ``P(r) = 1 / n`` over full ranks (the paper's
choice):

* ``A[r, r~] = sqrt(P(r)) p(r~ | r)``, ``b[r] = sqrt(P(r)) M(r)``,
  ``c[r~] = sum_r P(r) p(r~ | r)``;
* ``"bv"`` (bias-variance trade-off): ``x = ((1 - gamma) A'A + gamma diag(c))^-1 A'b``, the
  minimiser of ``sum_r P(r) [(E[x | r] - M(r))^2 + gamma Var(x | r)]``; ``gamma = 0`` is the
  minimal-bias least squares, ``gamma = 1`` the posterior mean ``E[M(r) | r~]``; the paper's
  experiments favour ``gamma = 0.1``;
* ``"cls"`` (constrained least squares): the minimal-bias least squares with ``x``
  non-increasing in the sampled rank (a better sampled rank is never credited less).

``M(r)`` comes from :func:`~polars_rankeval.evaluate` itself: the metric of a list whose one
relevant item sits at rank ``r``, so the correction uses the very definition (and preset) the
sampled and full values use.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
import polars as pl

from polars_rankeval._engine.evaluate import evaluate
from polars_rankeval.conventions import ConventionName
from polars_rankeval.errors import InvalidOptionError

Correction = Literal["bv", "cls"]
CORRECTIONS: tuple[Correction, ...] = ("bv", "cls")
#: The paper's best-performing trade-off (Table 4: BV 0.1).
DEFAULT_GAMMA = 0.1
#: Full ranks per block of ``p(r~ | r)`` (bounds the memory for million-item catalogs).
_CHUNK = 20_000
#: Full ranks scored through evaluate one by one; past it, the metric must have reached its
#: floor (a cutoff metric), since a rank-r list costs r rows.
EXACT_RANKS = 1_000


def _scipy_nnls() -> Any:
    try:
        from scipy.optimize import nnls  # type: ignore[import-untyped]  # the stats extra
    except ImportError as error:
        msg = 'estimator="cls" needs scipy: pip install "polars-rankeval[stats]"'
        raise ImportError(msg) from error
    return nnls


def rank_probabilities(
    n_items: int, n_negatives: int, start: int = 0, stop: int | None = None
) -> np.ndarray:
    """``p(r~ | r)`` for the full ranks ``start + 1 .. stop`` (all by default).

    Row ``i`` is the Binomial(m, (r-1)/(n-1)) law of ``r~ - 1`` for ``r = start + i + 1``.
    """
    m = n_negatives
    j = np.arange(m + 1, dtype=np.float64)
    log_choose = np.array(
        [math.lgamma(m + 1) - math.lgamma(k + 1) - math.lgamma(m - k + 1) for k in range(m + 1)]
    )
    end = n_items if stop is None else stop
    p = np.arange(start, end, dtype=np.float64) / max(n_items - 1, 1)
    out = np.zeros((len(p), m + 1))
    inner = (p > 0) & (p < 1)
    pi = p[inner, None]
    out[inner] = np.exp(
        log_choose[None, :] + j[None, :] * np.log(pi) + (m - j)[None, :] * np.log1p(-pi)
    )
    out[p == 0, 0] = 1.0  # the best item: no negative outranks it
    out[p == 1, m] = 1.0  # the worst: every negative does
    return out


def _reduced(
    full_values: np.ndarray, n_negatives: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``R``, ``Q'b`` and ``c``: the least squares over ``n`` ranks in ``m + 1`` dimensions.

    ``A`` has a row per full rank (a million for a million-item catalog), so it is never held
    whole: the QR factorisation of ``[A | b]`` is built block by block (each block stacked on
    the ``R`` so far), and ``|Ax - b|^2 = |Rx - Q'b|^2 + constant`` for every ``x``.
    """
    n_items, m = len(full_values), n_negatives
    weight = math.sqrt(1.0 / n_items)  # sqrt(P(r)), the uniform prior
    stacked: np.ndarray = np.zeros((0, m + 2))
    spread = np.zeros(m + 1)
    for start in range(0, n_items, _CHUNK):
        stop = min(start + _CHUNK, n_items)
        probabilities = rank_probabilities(n_items, m, start, stop)
        spread += probabilities.sum(axis=0) / n_items
        block = np.hstack([weight * probabilities, weight * full_values[start:stop, None]])
        # mode="r" returns R alone (numpy's stubs type every mode as the pair)
        stacked = np.asarray(np.linalg.qr(np.vstack([stacked, block]), mode="r"))
    return stacked[: m + 1, : m + 1], stacked[: m + 1, m + 1], spread


def metric_by_rank(metric: str, n_items: int, evaluate_options: dict[str, Any]) -> np.ndarray:
    """``M(1) .. M(n)``: evaluate's value for a list whose one relevant item is at rank r.

    A rank-r list holds r rows (r - 1 negatives above the positive), so ranks past
    :data:`EXACT_RANKS` are taken from the last exact one, which must equal the values before
    it (a cutoff metric's floor); a metric that also reads the list's length (AUC) is refused.
    """
    exact = min(n_items, EXACT_RANKS)
    ranks = np.arange(1, exact + 1)
    lengths = ranks.copy()
    padded = np.array([1, 2, 3])  # the same ranks with 3 negatives below: must not change
    padded = padded[padded <= exact]
    queries = np.concatenate([np.repeat(ranks, lengths), np.repeat(-padded, padded + 3)])
    position = np.concatenate([np.arange(n) for n in lengths] + [np.arange(n + 3) for n in padded])
    target = np.concatenate([np.repeat(ranks, lengths), np.repeat(padded, padded + 3)])
    log = pl.DataFrame(
        {
            "query": queries,
            "item": position,
            "score": -position.astype(np.float64),  # distinct: no tie rule involved
            "relevance": (position == target - 1).astype(np.int8),
        }
    )
    values = evaluate(log, [metric], per_query=True, **evaluate_options).sort("query")
    by_query = dict(zip(values["query"].to_list(), values[metric].to_list(), strict=True))
    curve = np.array([by_query[int(r)] for r in ranks], dtype=np.float64)
    for r in padded:
        if not math.isclose(by_query[-int(r)], curve[r - 1], rel_tol=1e-12, abs_tol=1e-15):
            msg = (
                f"metric {metric!r} is not a function of the relevant item's rank alone (it "
                "changes with the list's length), so Krichene & Rendle's correction does not "
                "apply to it; use a rank metric (hits@k, recall@k, ndcg@k, recip_rank, map ...)"
            )
            raise InvalidOptionError(msg)
    if n_items > exact:
        tail = curve[-min(50, exact) :]
        if not np.all(tail == tail[-1]):
            msg = (
                f"metric {metric!r} still changes past rank {exact} and the lists have "
                f"{n_items} items; the correction needs a cutoff metric (e.g. {metric}@100) "
                f"for lists longer than {EXACT_RANKS}"
            )
            raise InvalidOptionError(msg)
        curve = np.concatenate([curve, np.full(n_items - exact, curve[-1])])
    return curve


def check_correction(estimator: object, gamma: object) -> tuple[Correction, float]:
    if estimator not in CORRECTIONS:
        msg = f"option estimator= must be one of {list(CORRECTIONS)} or None, got {estimator!r}"
        raise InvalidOptionError(msg)
    value = DEFAULT_GAMMA if gamma is None else gamma
    if estimator == "cls" and gamma is not None:
        msg = "option gamma= belongs to estimator='bv'; estimator='cls' has no trade-off"
        raise InvalidOptionError(msg)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        msg = f"option gamma= must be a number in [0, 1], got {gamma!r}"
        raise InvalidOptionError(msg)
    return estimator, float(value)


def solve(
    full_values: np.ndarray, n_negatives: int, estimator: Correction, gamma: float
) -> np.ndarray:
    """The corrected value of each sampled rank 1 .. m+1 (see the module's formulas)."""
    r, qb, spread = _reduced(np.asarray(full_values, dtype=np.float64), n_negatives)
    if estimator == "cls":
        # x[j] = t + sum_{k >= j} d[k] (d >= 0: non-increasing), t = t+ - t-: non-negative
        # least squares over (d, t+, t-), on R in place of A
        steps = np.cumsum(r[:, :-1], axis=1)  # column k: R's columns 0..k summed
        total = r.sum(axis=1, keepdims=True)
        design = np.hstack([steps, total, -total])
        coefficients, _ = _scipy_nnls()(design, qb, maxiter=50 * design.shape[1])
        d, shift = coefficients[:-2], coefficients[-2] - coefficients[-1]
        out: np.ndarray = shift + np.concatenate([np.cumsum(d[::-1])[::-1], [0.0]])
        return out
    if gamma == 0:
        least: np.ndarray = np.linalg.lstsq(r, qb, rcond=None)[0]
        return least
    # A'A = R'R and A'b = R'Q'b
    system = (1 - gamma) * (r.T @ r) + gamma * np.diag(spread)
    solved: np.ndarray = np.linalg.solve(system, r.T @ qb)
    return solved


def sampled_correction(
    metric: str,
    *,
    n_items: int,
    n_negatives: int,
    estimator: Correction = "bv",
    gamma: float | None = None,
    convention: ConventionName = "trec_eval",
) -> pl.DataFrame:
    """Krichene & Rendle's corrected value of ``metric`` for each sampled rank.

    Parameters
    ----------
    metric
        A metric of the relevant item's rank (``"hits@10"``, ``"ndcg@10"``, ``"recip_rank"``,
        ``"map"`` ...); its values per full rank are evaluate's, under ``convention``.
    n_items
        The items the positive is ranked among in full evaluation (itself included).
    n_negatives
        The sampled negatives in its list (``m``; the sampled rank runs 1 .. m + 1).
    estimator
        ``"bv"`` (the bias-variance trade-off, default) or ``"cls"`` (least squares
        constrained non-increasing); see :mod:`polars_rankeval.sampling._correction`.
    gamma
        ``"bv"``'s weight of the variance against the squared bias, in [0, 1]; default 0.1
        (the paper's best). 0: minimal bias; 1: the posterior mean.
    convention
        The preset whose metric definitions to correct (as in :func:`~polars_rankeval.evaluate`).

    Returns
    -------
    pl.DataFrame
        ``sampled_rank`` (1 .. m+1) and ``value``: what a list whose positive has that sampled
        rank is credited instead of the metric's plain value. The corrected metric of a system
        is the mean of its lists' credits. It assumes one positive per list and uniformly
        drawn negatives; lists of several lengths need one table per length.

    Examples
    --------
    >>> table = sampled_correction("hits@1", n_items=3, n_negatives=1, gamma=0.0)
    >>> [round(v, 6) for v in table["value"]]  # minimal bias: 5/6 and -1/6
    [0.833333, -0.166667]
    """
    estimator, weight = check_correction(estimator, gamma)
    for name, value in (("n_items", n_items), ("n_negatives", n_negatives)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            msg = f"option {name}= must be an integer >= 1, got {value!r}"
            raise InvalidOptionError(msg)
    if n_negatives > n_items - 1:
        msg = f"option n_negatives= ({n_negatives}) must be at most n_items - 1 ({n_items - 1})"
        raise InvalidOptionError(msg)
    curve = metric_by_rank(metric, n_items, {"convention": convention})
    values = solve(curve, n_negatives, estimator, weight)
    return pl.DataFrame({"sampled_rank": np.arange(1, n_negatives + 2), "value": values})
