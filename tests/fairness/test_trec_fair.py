"""TREC Fair Ranking 2022 measures against the track's own code, run live.

``tests/fairness/reference/wptrec`` is a verbatim copy of the track's metric code
(fair-trec/trec2022-fair-public, MIT; see its README). Each test generates topics, pages,
alignments over 1 to 3 dimensions (some pages half in two groups of a dimension, some pages
unknown), targets and rankings, builds the track's inputs as its notebooks do (FairDim with
``page_align_df``/``page_align_xr``, targets as xarray with topic ids first) and our
:class:`FairInput` by hand, and compares the values.

The track computes its discounts in float32, so against the verbatim code the values agree
to float32's precision only (``F32``); the same code with its ``discount`` given in float64
(monkeypatched) agrees to ``F64``: that is the check of the formula itself.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import pandas as pd
import polars as pl
import pytest
import xarray as xr

from polars_rankeval.errors import ColumnValueError, InvalidOptionError, UndefinedMetricWarning
from polars_rankeval.fairness import _trec
from polars_rankeval.fairness._frame import (
    GROUP,
    GROUP_SEPARATOR,
    ITEM,
    LABEL,
    NUM_REL,
    RANK,
    RELEVANT,
    SAMPLE,
    SHARE,
    VALUE,
    WEIGHT,
    FairInput,
    N,
)
from tests.fairness.reference.wptrec.dimension import FairDim
from tests.fairness.reference.wptrec.metrics import awrf as track_awrf
from tests.fairness.reference.wptrec.metrics import eel as track_eel
from tests.fairness.reference.wptrec.metrics.awrf import AWRFMetric
from tests.fairness.reference.wptrec.metrics.eel import EELMetric

# the track's float32 discounts (and float32 nDCG sums) against our Float64
F32 = 2e-6
# the track's code with a float64 discount: the same formula, other summation orders
F64 = 1e-12

# the topic without any relevant page, and the one whose ranking holds only unknown pages
NO_REL = 107
ALL_UNKNOWN = 108
LEVELS = {"a": ["a1", "a2", "a3"], "b": ["b1", "b2"], "c": ["c1", "c2", "c3"]}
N_PAGES = 800


# --- generated data ---------------------------------------------------------------------


@dataclass
class World:
    """Pages, their alignments per dimension, relevance and targets per topic."""

    dims: list[str]
    align: dict[str, pd.DataFrame]  # per dimension: known pages x levels, rows sum to 1
    rel: dict[int, set[int]]  # topic -> relevant pages
    target: xr.DataArray  # topic x dims..., each topic's slice sums to 1

    @property
    def known(self) -> pd.Index:
        return self.align[self.dims[0]].index

    def cells(self) -> list[tuple[str, ...]]:
        return list(itertools.product(*(LEVELS[d] for d in self.dims)))


def make_world(rng: np.random.Generator, dims: list[str], topics: list[int]) -> World:
    pages = np.arange(1, N_PAGES + 1)
    # about 10% of the pages have no alignment at all (unknown to every dimension)
    known = np.sort(rng.choice(pages, size=int(N_PAGES * 0.9), replace=False))
    align = {}
    for d in dims:
        levels = LEVELS[d]
        weights = np.zeros((known.size, len(levels)))
        for i in range(known.size):
            kind = rng.random()
            first = rng.integers(len(levels))
            if kind < 0.2:  # half in two groups of this dimension
                other = (first + 1 + rng.integers(len(levels) - 1)) % len(levels)
                weights[i, first] = weights[i, other] = 0.5
            elif kind < 0.3:  # a fractional spread over every group
                weights[i] = rng.dirichlet(np.ones(len(levels)))
            else:
                weights[i, first] = 1.0
        frame = pd.DataFrame(weights, index=pd.Index(known, name="page_id"), columns=levels)
        frame.name = d
        align[d] = frame
    rel = {}
    for t in topics:
        count = 0 if t == NO_REL else int(rng.integers(1, 60))
        rel[t] = set(rng.choice(pages, size=count, replace=False).tolist())
    shape = [len(topics), *(len(LEVELS[d]) for d in dims)]
    shares = rng.dirichlet(np.ones(math.prod(shape[1:])), size=len(topics))
    # some cells have a zero target (as the track's targets do for empty combinations)
    shares[rng.random(shares.shape) < 0.15] = 0.0
    shares[:, 0] += 1e-3
    shares /= shares.sum(axis=1, keepdims=True)
    target = xr.DataArray(
        shares.reshape(shape),
        coords=[topics, *(LEVELS[d] for d in dims)],
        dims=["topic_id", *dims],
    )
    return World(dims, align, rel, target)


def fair_dims(world: World) -> list[FairDim]:
    """The track's dimensions, built as its MetricInputs notebook does."""
    out = []
    for d in world.dims:
        df = world.align[d]
        out.append(FairDim(df, xr.DataArray(df, dims=["page", d])))
    return out


def fair_input(world: World, runs: pd.DataFrame) -> FairInput:
    """Our FairInput from ``runs`` (topic_id, seq_no, page_id in rank order), by hand."""
    runs = runs.copy()
    runs["rank"] = runs.groupby(["topic_id", "seq_no"]).cumcount() + 1
    runs["n"] = runs.groupby(["topic_id", "seq_no"])["page_id"].transform("size")
    memberships = []
    for page in world.known:
        per_dim = [
            [(g, w) for g, w in world.align[d].loc[page].items() if w > 0] for d in world.dims
        ]
        for combo in itertools.product(*per_dim):
            memberships.append(
                {
                    "page_id": int(page),
                    GROUP: GROUP_SEPARATOR.join(g for g, _ in combo),
                    WEIGHT: math.prod(w for _, w in combo),
                }
            )
    groups = pl.DataFrame(
        memberships, schema={"page_id": pl.Int64, GROUP: pl.String, WEIGHT: pl.Float64}
    )
    num_rel = pl.DataFrame(
        {"query": list(world.rel), NUM_REL: [len(v) for v in world.rel.values()]},
        schema={"query": pl.Int64, NUM_REL: pl.Int64},
    )
    rel_pairs = pl.DataFrame(
        [(t, p) for t, pages in world.rel.items() for p in pages],
        schema={"query": pl.Int64, "page_id": pl.Int64},
        orient="row",
    ).with_columns(pl.lit(1.0).alias(LABEL))
    rows = (
        pl.from_pandas(runs)
        .select(
            pl.col("topic_id").cast(pl.Int64).alias("query"),
            pl.col("seq_no").cast(pl.Int64).alias(SAMPLE),
            pl.col("rank").cast(pl.Int64).alias(RANK),
            pl.col("n").cast(pl.Int64).alias(N),
            pl.col("page_id").cast(pl.Int64),
        )
        .join(rel_pairs, on=["query", "page_id"], how="left")
        .with_columns(pl.col(LABEL).is_not_null().alias(RELEVANT))
        .join(num_rel, on="query", how="left")
        .join(groups, on="page_id", how="left")
        .with_columns(pl.col("page_id").cast(pl.String).alias(ITEM))
        .drop("page_id")
    )
    universe = sorted(GROUP_SEPARATOR.join(c) for c in world.cells())
    target_rows = []
    for topic in world.rel:
        for cell in world.cells():
            share = float(world.target.loc[(topic, *cell)])
            target_rows.append((topic, GROUP_SEPARATOR.join(cell), share))
    target = pl.DataFrame(target_rows, schema=["query", GROUP, SHARE], orient="row")
    return FairInput(rows.lazy(), ["query"], universe, target.lazy(), pl.LazyFrame())


def marginal(world: World, dim: str) -> World:
    """The world seen through one dimension, with the marginal target (Task1Evaluation)."""
    others = [d for d in world.dims if d != dim]
    return World([dim], {dim: world.align[dim]}, world.rel, world.target.sum(others))


def task1_runs(rng: np.random.Generator, world: World, lengths: dict[int, int]) -> pd.DataFrame:
    """One ranking per topic: relevant pages ranked high more often, unknown pages too."""
    rows = []
    for topic, length in lengths.items():
        pages = np.arange(1, N_PAGES + 1)
        if topic == ALL_UNKNOWN:
            pages = pages[~np.isin(pages, world.known)]
        weight = np.where(np.isin(pages, list(world.rel[topic])), 6.0, 1.0)
        ranking = rng.choice(pages, size=length, replace=False, p=weight / weight.sum())
        rows += [(topic, 0, int(p)) for p in ranking]
    return pd.DataFrame(rows, columns=["topic_id", "seq_no", "page_id"])


# --- running the track ----------------------------------------------------------------


def _discount64(n_or_ranks: object) -> np.ndarray:
    """The track's discount in float64 (its own is float32)."""
    if isinstance(n_or_ranks, int):
        ranks = np.arange(1, n_or_ranks + 1, dtype="f8")
    else:
        ranks = np.require(n_or_ranks, "f8")
    return 1.0 / np.log2(np.maximum(ranks, 2))


@contextmanager
def track_precision(float64: bool) -> Iterator[None]:
    """Run the track's code quietly (its pandas/numpy warnings), in float64 if asked."""
    saved = track_awrf.discount, track_eel.discount
    if float64:
        track_awrf.discount = track_eel.discount = _discount64
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            yield
    finally:
        track_awrf.discount, track_eel.discount = saved


def track_task1(
    world: World, runs: pd.DataFrame, *, float64: bool, cutoff: int = 500
) -> pd.DataFrame:
    """The track's Task 1 per topic: nDCG, AWRF, Score (as Task1Evaluation.py calls it)."""
    qrels = pd.DataFrame(
        [(t, p) for t, pages in world.rel.items() for p in pages], columns=["topic_id", "page_id"]
    ).set_index("topic_id")
    metric = AWRFMetric(qrels, fair_dims(world), world.target, target_len=cutoff)
    known = set(world.known)
    special = [
        t
        for t in runs["topic_id"].unique()
        if not world.rel[t] or not known.intersection(runs.loc[runs["topic_id"] == t, "page_id"])
    ]
    with track_precision(float64):
        usual = runs[~runs["topic_id"].isin(special)]
        out = usual.groupby("topic_id")["page_id"].apply(metric).unstack()
        # the track's __call__ cannot score these: without relevant pages qrels.loc fails and
        # its nDCG is 0/0 = NaN (on which it asserts); without a known page its mean alignment
        # is 0/0, NaN with one dimension, ZeroDivisionError in sum_outer with several. Their
        # halves run alone, the failure read as NaN.
        for topic in special:
            qrun = runs.loc[runs["topic_id"] == topic, "page_id"]
            ndcg = metric.qr_ndcg(qrun, np.array(sorted(world.rel[topic]), dtype="i8"))
            try:
                awrf = metric.qr_awrf(qrun, world.target.loc[topic])
            except ZeroDivisionError:
                awrf = math.nan
            out.loc[topic] = [ndcg, awrf, ndcg * awrf]
    return out


def ours(frame: pl.LazyFrame) -> dict[int, float | None]:
    collected = frame.collect()
    return dict(zip(collected["query"].to_list(), collected[VALUE].to_list(), strict=True))


def assert_close(got: dict[int, float | None], want: pd.Series, tol: float) -> float:
    """Every topic's value within ``tol`` (NaN in the track = null here); the largest gap."""
    assert sorted(got) == sorted(want.index.tolist())
    worst = 0.0
    for topic, value in want.items():
        if math.isnan(value):
            assert got[topic] is None, topic
            continue
        assert got[topic] is not None, topic
        gap = abs(got[topic] - float(value))
        assert gap <= tol, (topic, got[topic], float(value))
        worst = max(worst, gap)
    return worst


# --- Task 1 ---------------------------------------------------------------------------

TOPICS = [101, 102, 103, 104, 105, 106, NO_REL, ALL_UNKNOWN]
# a 1-item ranking, exactly 500 (the cutoff), and some in between
LENGTHS = dict(zip(TOPICS, [1, 500, 37, 200, 2, 120, 60, 5], strict=True))


@pytest.mark.parametrize("dims", [["a"], ["a", "b"], ["a", "b", "c"]], ids=["1d", "2d", "3d"])
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("float64", [False, True], ids=["f32", "f64"])
def test_task1_matches_track(dims: list[str], seed: int, float64: bool) -> None:
    rng = np.random.default_rng(seed)
    world = make_world(rng, dims, TOPICS)
    runs = task1_runs(rng, world, LENGTHS)
    # the generated runs hold unknown pages and a ranking with no relevant page
    assert (~runs["page_id"].isin(world.known)).sum() > 0
    want = track_task1(world, runs, float64=float64)
    fair = fair_input(world, runs)
    tol = F64 if float64 else F32
    # undefined: nDCG without relevant pages, AWRF without a known page (NaN in the track)
    with pytest.warns(UndefinedMetricWarning, match=f"query={NO_REL}"):
        assert_close(ours(_trec.ndcg_values(fair)), want["nDCG"], tol)
    with pytest.warns(UndefinedMetricWarning, match=f"query={ALL_UNKNOWN}"):
        assert_close(ours(_trec.awrf_values(fair)), want["AWRF"], tol)
    both = rf"list\(s\): .*query={NO_REL}; query={ALL_UNKNOWN}"
    with pytest.warns(UndefinedMetricWarning, match=both):
        assert_close(ours(_trec.ndcg_awrf_values(fair)), want["Score"], tol)


@pytest.mark.parametrize("seed", [2, 3])
def test_task1_each_dimension_with_its_marginal_target(seed: int) -> None:
    """Task1Evaluation.py's "individual dimensions" loop: one dimension, marginal target."""
    rng = np.random.default_rng(seed)
    world = make_world(rng, ["a", "b", "c"], TOPICS)
    runs = task1_runs(rng, world, LENGTHS)
    for dim in world.dims:
        one = marginal(world, dim)
        want = track_task1(one, runs, float64=True)
        with pytest.warns(UndefinedMetricWarning, match=f"query={ALL_UNKNOWN}"):
            got = ours(_trec.awrf_values(fair_input(one, runs)))
        assert_close(got, want["AWRF"], F64)


def test_task1_cut_at_k_is_the_track_on_the_cut_ranking() -> None:
    rng = np.random.default_rng(4)
    world = make_world(rng, ["a", "b"], TOPICS)
    runs = task1_runs(rng, world, LENGTHS)
    k = 25
    cut = runs.groupby("topic_id").head(k)
    want = track_task1(world, cut, float64=True, cutoff=k)
    fair = fair_input(world, runs)
    with pytest.warns(UndefinedMetricWarning, match=f"query={NO_REL}"):
        assert_close(ours(_trec.ndcg_values(fair, k=k)), want["nDCG"], F64)
    with pytest.warns(UndefinedMetricWarning, match=f"query={ALL_UNKNOWN}"):
        assert_close(ours(_trec.awrf_values(fair, k=k)), want["AWRF"], F64)


def test_task1_refuses_a_ranking_longer_than_the_cutoff() -> None:
    rng = np.random.default_rng(5)
    world = make_world(rng, ["a"], TOPICS)
    runs = task1_runs(rng, world, {**LENGTHS, 103: 501})
    qrels = pd.DataFrame(
        [(t, p) for t, pages in world.rel.items() for p in pages], columns=["topic_id", "page_id"]
    ).set_index("topic_id")
    metric = AWRFMetric(qrels, fair_dims(world), world.target)
    with pytest.raises(ValueError, match="too many documents"):  # the track refuses it too
        metric(runs.loc[runs["topic_id"] == 103, "page_id"].rename(103))
    fair = fair_input(world, runs)
    for measure in (_trec.ndcg_values, _trec.awrf_values, _trec.ndcg_awrf_values):
        with pytest.raises(ColumnValueError, match=r"cutoff=500 .*query=103 has 501 items"):
            measure(fair).collect()
    # cut at k first, it fits; a larger cutoff takes it whole
    with pytest.warns(UndefinedMetricWarning, match=f"query={ALL_UNKNOWN}"):
        assert _trec.awrf_values(fair, k=500).collect().height == len(TOPICS)
    with pytest.warns(UndefinedMetricWarning, match=f"query={ALL_UNKNOWN}"):
        assert _trec.awrf_values(fair, cutoff=501).collect().height == len(TOPICS)


# --- brute force on small lists -------------------------------------------------------


def _brute_awrf(ranking: list[tuple[dict[str, float] | None]], target: dict[str, float]) -> float:
    """AWRF from its definition, in plain Python (math.log2, fsum)."""
    exposure = dict.fromkeys(target, 0.0)
    for rank, groups in enumerate(ranking, start=1):
        if groups is None:
            continue
        for group, weight in groups.items():
            exposure[group] += weight / math.log2(max(rank, 2))
    total = math.fsum(exposure.values())
    p = {g: v / total for g, v in exposure.items()}
    js = 0.0
    for g, share in target.items():
        m = (p[g] + share) / 2
        js += sum(x * math.log(x / m) for x in (p[g], share) if x > 0)
    return 1 - js / 2


def test_awrf_brute_force_small_lists() -> None:
    target = {"x": 0.5, "y": 0.3, "z": 0.2}
    cases = {
        1: [{"x": 1.0}],
        2: [None, {"y": 1.0}, {"x": 0.5, "z": 0.5}],  # the unknown item keeps rank 1's place
        3: [{"x": 1.0}, {"y": 1.0}, {"z": 1.0}, None, {"x": 0.25, "y": 0.75}],
    }
    rows = []
    for query, ranking in cases.items():
        for rank, groups in enumerate(ranking, start=1):
            for group, weight in (groups or {None: None}).items():
                rows.append((query, rank, len(ranking), group, weight))
    frame = pl.DataFrame(rows, schema=["query", RANK, N, GROUP, WEIGHT], orient="row").with_columns(
        pl.lit(0).alias(SAMPLE)
    )
    tgt = pl.DataFrame(
        [(q, g, s) for q in cases for g, s in target.items()],
        schema=["query", GROUP, SHARE],
        orient="row",
    )
    fair = FairInput(frame.lazy(), ["query"], sorted(target), tgt.lazy(), pl.LazyFrame())
    got = ours(_trec.awrf_values(fair))
    for query, ranking in cases.items():
        assert got[query] == pytest.approx(_brute_awrf(ranking, target), abs=1e-15)


# --- our nDCG and the engine's --------------------------------------------------------


def test_ndcg_is_the_engines_binary_jarvelin_ndcg_at_500() -> None:
    import polars_rankeval as rke

    rng = np.random.default_rng(6)
    # the engine's nDCG of a query without relevant rows is 0 (trec_eval), ours null
    topics = [t for t in TOPICS if t != NO_REL]
    world = make_world(rng, ["a"], topics)
    runs = task1_runs(rng, world, {t: LENGTHS[t] for t in topics})
    fair = fair_input(world, runs)
    got = ours(_trec.ndcg_values(fair))
    # the same rankings as a scored log, and the qrels (graded: any grade >= 1 is relevant)
    log = pl.from_pandas(runs).select(
        pl.col("topic_id").cast(pl.Int64).alias("query"),
        pl.col("page_id").cast(pl.String).alias("item"),
        (-pl.int_range(pl.len()).over("topic_id")).cast(pl.Float64).alias("score"),
    )
    qrels = pl.DataFrame(
        [(t, str(p), int(rng.integers(1, 4))) for t, pages in world.rel.items() for p in pages],
        schema=["query", "item", "relevance"],
        orient="row",
    )
    data = log.join(qrels, on=["query", "item"], how="full", coalesce=True)
    per_query = rke.evaluate(
        data,
        ["ndcg@500(gain=binary,discount=jarvelin)", "ndcg@500"],
        per_query=True,
    )
    same = dict(
        zip(per_query["query"], per_query["ndcg@500(gain=binary,discount=jarvelin)"], strict=True)
    )
    for topic, value in got.items():
        assert value == same[topic]
    # the default ndcg@500 is another discount (1/log2(r + 1)) and linear gain: not the track's
    plain = dict(zip(per_query["query"], per_query["ndcg@500"], strict=True))
    assert any(abs(plain[t] - got[t]) > 1e-3 for t in got)


# --- Task 2 ---------------------------------------------------------------------------


def task2_runs(rng: np.random.Generator, world: World, topics: list[int]) -> pd.DataFrame:
    """Several sampled rankings per topic, of different lengths."""
    rows = []
    for topic in topics:
        others = rng.choice(np.arange(1, N_PAGES + 1), size=30, replace=False).tolist()
        pool = list(dict.fromkeys(int(p) for p in [*world.rel[topic], *others]))
        for seq in range(1, int(rng.integers(1, 6)) + 1):
            length = int(rng.integers(1, min(len(pool), 25) + 1))
            for page in rng.choice(pool, size=length, replace=False):
                rows.append((topic, seq, int(page)))
    return pd.DataFrame(rows, columns=["topic_id", "seq_no", "page_id"])


def track_task2(
    world: World, runs: pd.DataFrame, *, float64: bool, only_rel: bool = True
) -> pd.DataFrame:
    """The track's Task 2 per topic (as Task2Evaluation.py calls it)."""
    # two sentinel pages per topic, in no ranking: qrels.loc[topic] is then always a frame
    # (with one row it is a Series, on which the track's qrels['page_id'] fails), and a topic
    # without relevant pages still has an entry
    pairs = [(t, p) for t, pages in world.rel.items() for p in [*pages, -1, -2]]
    qrels = pd.DataFrame(pairs, columns=["topic_id", "page_id"]).set_index("topic_id")
    metric = EELMetric(qrels, fair_dims(world), world.target, only_rel=only_rel)
    runs = runs.assign(run_name="r")
    with track_precision(float64):
        out = runs.groupby(["run_name", "topic_id"]).apply(metric)
    return out.reset_index(level="run_name", drop=True)


def ours_ee(frame: pl.LazyFrame) -> pd.DataFrame:
    collected = frame.collect().to_pandas().set_index("query")
    return collected.rename(columns={"ee_l": "EE-L", "ee_d": "EE-D", "ee_r": "EE-R"})


def strip_unknown_relevant(world: World, runs: pd.DataFrame, *, only_rel: bool) -> pd.DataFrame:
    """The runs without the pages the track cannot look up (its .loc fails on them)."""
    unknown = ~runs["page_id"].isin(world.known)
    if only_rel:
        relevant = [
            p in world.rel[t] for t, p in zip(runs["topic_id"], runs["page_id"], strict=True)
        ]
        unknown &= np.array(relevant)
    return runs[~unknown]


@pytest.mark.parametrize("dims", [["a"], ["a", "b"], ["a", "b", "c"]], ids=["1d", "2d", "3d"])
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("float64", [False, True], ids=["f32", "f64"])
def test_task2_matches_track(dims: list[str], seed: int, float64: bool) -> None:
    rng = np.random.default_rng(100 + seed)
    world = make_world(rng, dims, TOPICS)
    runs = strip_unknown_relevant(world, task2_runs(rng, world, TOPICS), only_rel=True)
    # unknown pages remain, non-relevant: the track skips them (relevant_only), so do we
    assert (~runs["page_id"].isin(world.known)).sum() > 0
    want = track_task2(world, runs, float64=float64)
    got = ours_ee(_trec.expected_exposure_values(fair_input(world, runs)))
    tol = F64 if float64 else F32
    # the topic without relevant pages: zero exposure, so EE-D = EE-R = 0
    assert got.loc[NO_REL, ["EE-D", "EE-R"]].tolist() == [0.0, 0.0]
    for column in ["EE-L", "EE-D", "EE-R"]:
        scale = max(1.0, float(want[column].abs().max()))
        assert_close(got[column].to_dict(), want[column], tol * scale)


def test_task2_every_row_counts_without_relevant_only() -> None:
    """only_rel=False (the 2021 rule): every row's exposure, still zero without relevance."""
    rng = np.random.default_rng(7)
    world = make_world(rng, ["a", "b"], TOPICS)
    runs = strip_unknown_relevant(world, task2_runs(rng, world, TOPICS), only_rel=False)
    want = track_task2(world, runs, float64=True, only_rel=False)
    got = ours_ee(_trec.expected_exposure_values(fair_input(world, runs), relevant_only=False))
    for column in ["EE-L", "EE-D", "EE-R"]:
        assert_close(got[column].to_dict(), want[column], F64 * 100)


def test_task2_each_dimension_with_its_marginal_target() -> None:
    """Task2Evaluation.py's single-attribute loop: one dimension, its marginal target."""
    rng = np.random.default_rng(11)
    world = make_world(rng, ["a", "b", "c"], TOPICS)
    runs = strip_unknown_relevant(world, task2_runs(rng, world, TOPICS), only_rel=True)
    for dim in world.dims:
        one = marginal(world, dim)
        want = track_task2(one, runs, float64=True)
        got = ours_ee(_trec.expected_exposure_values(fair_input(one, runs)))
        for column in ["EE-L", "EE-D", "EE-R"]:
            assert_close(got[column].to_dict(), want[column], F64 * 100)


def _brute_ee(
    samples: list[list[tuple[dict[str, float] | None, bool]]],
    target: dict[str, float],
    target_len: int,
    relevant_only: bool,
) -> tuple[float, float, float]:
    """EE-L, EE-D, EE-R from their definition, in plain Python."""
    s = dict.fromkeys(target, 0.0)
    if any(rel for ranking in samples for _, rel in ranking):
        for ranking in samples:
            for rank, (groups, rel) in enumerate(ranking, start=1):
                if groups is None or (relevant_only and not rel):
                    continue
                for group, weight in groups.items():
                    s[group] += weight / math.log2(max(rank, 2)) / len(samples)
    scale = math.fsum(1 / math.log2(max(i, 2)) for i in range(1, target_len + 1))
    t = {g: share * scale for g, share in target.items()}
    return (
        math.fsum((s[g] - t[g]) ** 2 for g in target),
        math.fsum(s[g] ** 2 for g in target),
        math.fsum(s[g] * t[g] for g in target),
    )


@pytest.mark.parametrize("relevant_only", [True, False])
def test_expected_exposure_brute_force_small_lists(relevant_only: bool) -> None:
    target = {"x": 0.6, "y": 0.4, "z": 0.0}
    x, y, xy = {"x": 1.0}, {"y": 1.0}, {"x": 0.5, "y": 0.5}
    cases = {
        1: [[(x, True)]],  # one sample of one item
        2: [[(y, True), (x, False), (xy, True)], [(xy, False)], [(x, True), (y, True)]],
        3: [[(x, False), (y, False)]],  # no relevant row: zero exposure
        4: [[(None, False), (x, True)], [(y, True)]],  # an unknown, not relevant, item
    }
    if not relevant_only:
        cases[4] = [[(x, False), (x, True)], [(y, True)]]
    rows = []
    for query, samples in cases.items():
        for sample, ranking in enumerate(samples):
            for rank, (groups, rel) in enumerate(ranking, start=1):
                for group, weight in (groups or {None: None}).items():
                    rows.append((query, sample, rank, len(ranking), f"i{rank}", rel, group, weight))
    frame = pl.DataFrame(
        rows, schema=["query", SAMPLE, RANK, N, ITEM, RELEVANT, GROUP, WEIGHT], orient="row"
    )
    tgt = pl.DataFrame(
        [(q, g, share) for q in cases for g, share in target.items()],
        schema=["query", GROUP, SHARE],
        orient="row",
    )
    fair = FairInput(frame.lazy(), ["query"], sorted(target), tgt.lazy(), pl.LazyFrame())
    got = _trec.expected_exposure_values(fair, target_len=5, relevant_only=relevant_only)
    got = got.collect()
    for query, samples in cases.items():
        row = got.filter(pl.col("query") == query).row(0, named=True)
        want = _brute_ee(samples, target, 5, relevant_only)
        assert [row["ee_l"], row["ee_d"], row["ee_r"]] == pytest.approx(want, abs=1e-14)


def test_task2_refuses_a_counted_item_without_group() -> None:
    rng = np.random.default_rng(8)
    world = make_world(rng, ["a"], TOPICS)
    runs = strip_unknown_relevant(world, task2_runs(rng, world, TOPICS), only_rel=True)
    topic = TOPICS[0]
    unknown = next(p for p in range(1, N_PAGES + 1) if p not in world.known)
    world.rel[topic].add(unknown)
    runs = pd.concat([runs, pd.DataFrame([(topic, 99, unknown)], columns=runs.columns)])
    qrels = pd.DataFrame(
        [(t, p) for t, pages in world.rel.items() for p in [*pages, -1, -2]],
        columns=["topic_id", "page_id"],
    ).set_index("topic_id")
    metric = EELMetric(qrels, fair_dims(world), world.target)
    with track_precision(float64=False), pytest.raises(KeyError):  # the track's .loc fails
        metric.qrs_exposure(runs[runs["topic_id"] == topic], qrels.loc[topic])
    fair = fair_input(world, runs)
    with pytest.raises(ColumnValueError, match=rf"item '{unknown}' of query={topic} has no group"):
        _trec.expected_exposure_values(fair).collect()


def test_options_are_checked() -> None:
    fair = FairInput(pl.LazyFrame(), ["query"], [], pl.LazyFrame(), pl.LazyFrame())
    with pytest.raises(InvalidOptionError, match="k= must be a positive int, got 0"):
        _trec.awrf_values(fair, k=0)
    with pytest.raises(InvalidOptionError, match="cutoff= must be a positive int"):
        _trec.ndcg_values(fair, cutoff=True)  # type: ignore[arg-type]
    with pytest.raises(InvalidOptionError, match="target_len="):
        _trec.expected_exposure_values(fair, target_len=-1)
    with pytest.raises(InvalidOptionError, match="relevant_only="):
        _trec.expected_exposure_values(fair, relevant_only="yes")  # type: ignore[arg-type]


# --- through evaluate and expected_exposure (the lead's input stage), tied scores -----------


def _log_tables(world: World, runs: pd.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """groups= in the long layout (item, dimension, group, weight); a joint per-query target."""
    groups = pl.DataFrame(
        [
            (str(page), d, group, float(weight))
            for d in world.dims
            for page, row in world.align[d].iterrows()
            for group, weight in row.items()
            if weight > 0
        ],
        schema=["item", "dimension", "group", "weight"],
        orient="row",
    )
    target = pl.DataFrame(
        [
            (topic, *cell, float(world.target.loc[(topic, *cell)]))
            for topic in world.rel
            for cell in world.cells()
        ],
        schema=["query", *world.dims, "share"],
        orient="row",
    )
    return groups, target


def _engine_order(runs: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """The runs in the engine's order: score descending, ties by the item's string descending."""
    ordered = runs.assign(item=runs["page_id"].astype(str)).sort_values(
        [*keys, "score", "item"], ascending=[True] * len(keys) + [False, False]
    )
    return ordered.drop(columns=["item", "score"])


@pytest.mark.parametrize("dims", [["a", "b"], ["a", "b", "c"]], ids=["2d", "3d"])
def test_evaluate_awrf_and_ndcg_awrf_with_tied_scores(dims: list[str]) -> None:
    import polars_rankeval as rke

    rng = np.random.default_rng(9)
    world = make_world(rng, dims, TOPICS)
    runs = task1_runs(rng, world, LENGTHS)
    runs["score"] = rng.integers(0, 15, size=len(runs)).astype(float)  # many ties
    log = pl.from_pandas(runs).select(
        pl.col("topic_id").alias("query"), pl.col("page_id").cast(pl.String).alias("item"), "score"
    )
    qrels = pl.DataFrame(
        [(t, str(p), 1) for t, pages in world.rel.items() for p in pages],
        schema=["query", "item", "relevance"],
        orient="row",
    )
    data = log.join(qrels, on=["query", "item"], how="full", coalesce=True)
    groups, target = _log_tables(world, runs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        got = rke.evaluate(
            data, ["awrf", "ndcg_awrf"], groups=groups, group_target=target, per_query=True
        )
    want = track_task1(world, _engine_order(runs, ["topic_id"]), float64=True)
    for column, track_column in [("awrf", "AWRF"), ("ndcg_awrf", "Score")]:
        values = dict(zip(got["query"].to_list(), got[column].to_list(), strict=True))
        assert_close(values, want[track_column], F64)


def test_expected_exposure_of_sampled_rankings_with_tied_scores() -> None:
    import polars_rankeval as rke

    rng = np.random.default_rng(10)
    world = make_world(rng, ["a", "b"], TOPICS)
    runs = strip_unknown_relevant(world, task2_runs(rng, world, TOPICS), only_rel=True)
    runs["score"] = rng.integers(0, 6, size=len(runs)).astype(float)
    log = pl.from_pandas(runs).select(
        pl.col("topic_id").alias("query"),
        pl.col("seq_no").alias("sample"),
        pl.col("page_id").cast(pl.String).alias("item"),
        "score",
    )
    qrels = pl.DataFrame(
        [(t, str(p), 1) for t, pages in world.rel.items() for p in pages],
        schema=["query", "item", "relevance"],
        orient="row",
    )
    # the track judges every topic it evaluates (a page not in its qrels is not relevant), so
    # the log labels the other retrieved pages 0, and the judgments of relevant pages no sample
    # retrieved stay in it, unretrieved (as join_run_qrels keeps them)
    data = log.join(qrels, on=["query", "item"], how="left").with_columns(
        pl.col("relevance").fill_null(0)
    )
    unretrieved = qrels.join(log, on=["query", "item"], how="anti").with_columns(
        pl.lit(None, pl.Int64).alias("sample"), pl.lit(None, pl.Float64).alias("score")
    )
    data = pl.concat([data, unretrieved.select(data.columns)], how="vertical_relaxed")
    groups, target = _log_tables(world, runs)
    got = rke.expected_exposure(data, groups=groups, group_target=target, per_query=True)
    got = got.to_pandas().set_index("query")
    want = track_task2(world, _engine_order(runs, ["topic_id", "seq_no"]), float64=True)
    for column, track_column in [("ee_l", "EE-L"), ("ee_d", "EE-D"), ("ee_r", "EE-R")]:
        assert_close(got[column].to_dict(), want[track_column], F64 * 100)
