"""Plain-Python transcriptions used as the independent references of tests/sampling/.

No numpy and nothing from polars_rankeval: the key recipe documented in
``polars_rankeval.sampling._negatives`` written out with Python ints, and Krichene & Rendle's
formulas (KDD 2020, Section 4) with exact fractions.
"""

from __future__ import annotations

import hashlib
import math
from fractions import Fraction

MASK = (1 << 64) - 1


def splitmix64(x: int) -> int:
    """Vigna's splitmix64 finaliser (the state already advanced by the golden gamma)."""
    z = (x + 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def id_hash(value: object) -> int:
    return int.from_bytes(
        hashlib.blake2b(str(value).encode("utf-8"), digest_size=8).digest(), "little"
    )


def item_keys(
    seed: int, query: object, items: list[int], positive: object = None
) -> dict[int, int]:
    list_key = splitmix64(id_hash(query) ^ splitmix64(seed))
    if positive is not None:
        list_key = splitmix64(list_key ^ id_hash(positive))
    return {i: splitmix64(list_key ^ id_hash(i)) for i in items}


def uniform_sample(
    seed: int, query: object, candidates: list[int], n: int, positive: object = None
) -> list[int]:
    keys = item_keys(seed, query, candidates, positive)
    return sorted(candidates, key=lambda i: keys[i])[:n]


def popularity_sample(
    seed: int, query: object, candidates: list[int], weights: dict[int, int], n: int
) -> list[int]:
    keys = item_keys(seed, query, candidates)
    drawable = [i for i in candidates if weights.get(i, 0) > 0]

    def es(i: int) -> float:
        u = ((keys[i] >> 11) + 0.5) / 2.0**53
        return -math.log(u) / weights[i]

    return sorted(drawable, key=es)[:n]


def binomial(n_items: int, m: int, r: int, j: int) -> Fraction:
    """p(r~ = j + 1 | r): Binomial(m, (r-1)/(n-1)) at j."""
    p = Fraction(r - 1, n_items - 1)
    return Fraction(math.comb(m, j)) * p**j * (1 - p) ** (m - j)


def _solve(matrix: list[list[Fraction]], rhs: list[Fraction]) -> list[Fraction]:
    """Gaussian elimination with exact fractions."""
    size = len(rhs)
    a = [[*row, rhs[i]] for i, row in enumerate(matrix)]
    for col in range(size):
        pivot = next(r for r in range(col, size) if a[r][col] != 0)
        a[col], a[pivot] = a[pivot], a[col]
        for r in range(size):
            if r != col and a[r][col] != 0:
                factor = a[r][col] / a[col][col]
                a[r] = [x - factor * y for x, y in zip(a[r], a[col], strict=True)]
    return [a[i][size] / a[i][i] for i in range(size)]


def normal_equations(
    full: list[Fraction], m: int
) -> tuple[list[list[Fraction]], list[Fraction], list[Fraction]]:
    """A'A, A'b and c with A[r, j] = sqrt(P(r)) p(j|r), b[r] = sqrt(P(r)) M(r), P(r) = 1/n."""
    n = len(full)
    prior = Fraction(1, n)
    p = [[binomial(n, m, r, j) for j in range(m + 1)] for r in range(1, n + 1)]
    ata = [
        [sum((prior * p[r][j] * p[r][k] for r in range(n)), Fraction(0)) for k in range(m + 1)]
        for j in range(m + 1)
    ]
    atb = [sum((prior * p[r][j] * full[r] for r in range(n)), Fraction(0)) for j in range(m + 1)]
    c = [sum((prior * p[r][j] for r in range(n)), Fraction(0)) for j in range(m + 1)]
    return ata, atb, c


def bias_variance(full: list[Fraction], m: int, gamma: Fraction) -> list[Fraction]:
    """((1 - gamma) A'A + gamma diag(c))^-1 A'b, exactly."""
    ata, atb, c = normal_equations(full, m)
    system = [
        [(1 - gamma) * ata[j][k] + (gamma * c[j] if j == k else Fraction(0)) for k in range(m + 1)]
        for j in range(m + 1)
    ]
    return _solve(system, atb)


def squared_bias(full: list[Fraction], m: int, x: list[Fraction]) -> Fraction:
    n = len(full)
    return sum(
        (
            Fraction(1, n)
            * (sum(binomial(n, m, r, j) * x[j] for j in range(m + 1)) - full[r - 1]) ** 2
            for r in range(1, n + 1)
        ),
        Fraction(0),
    )


def constrained_least_squares(full: list[Fraction], m: int) -> list[Fraction]:
    """min squared bias over non-increasing x, by brute force over the active constraints.

    Each subset of the m constraints x[j] >= x[j+1] held with equality merges neighbours into
    blocks; the least squares over the blocks' values is solved exactly; the feasible solution
    with the smallest objective is the constrained optimum (the problem is convex).
    """
    ata, atb, _ = normal_equations(full, m)
    best: tuple[Fraction, list[Fraction]] | None = None
    for mask in range(1 << m):
        blocks: list[list[int]] = [[0]]
        for j in range(m):
            if mask >> j & 1:
                blocks[-1].append(j + 1)
            else:
                blocks.append([j + 1])
        reduced = [
            [sum((ata[j][k] for j in bj for k in bk), Fraction(0)) for bk in blocks]
            for bj in blocks
        ]
        rhs = [sum((atb[j] for j in bj), Fraction(0)) for bj in blocks]
        try:
            values = _solve(reduced, rhs)
        except StopIteration:  # singular: that active set is not a unique optimum
            continue
        if any(values[i] < values[i + 1] for i in range(len(values) - 1)):
            continue
        x = [values[b] for b, bj in enumerate(blocks) for _ in bj]
        cost = squared_bias(full, m, x)
        if best is None or cost < best[0]:
            best = (cost, x)
    assert best is not None
    return best[1]
