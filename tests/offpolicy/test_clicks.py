"""Propensity-weighted click metrics against brute force in plain Python.

The reference below is a dict-of-lists loop written from the formula (Joachims, Swaminathan &
Schnabel, WSDM 2017, eq. 5; Agarwal et al., WSDM 2019, sec. 2):
``value(q) = sum over clicked d of lambda(rank_new(d)) * min(1 / p(position(d)), clip)``,
averaged over impressions, with the new rank from sorting (score, str(item)) descending (the
trec_eval rule the project ranks by). Nothing expected is computed with the library.
"""

from __future__ import annotations

import math
import random
import re
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_rankeval as rke
from polars_rankeval.errors import (
    ColumnNotFoundError,
    ColumnTypeError,
    ColumnValueError,
    InvalidOptionError,
    UnknownMetricError,
)
from polars_rankeval.offpolicy._clicks import (
    click_metrics,
    click_parts,
    examination_from_randomized,
    power_law_examination,
)

METRICS = ["dcg@3", "dcg", "rr", "rr@2", "ctr@3", "ctr"]
EXAM = {1: 1.0, 2: 0.6, 3: 0.45, 4: 0.3, 5: 0.2, 6: 0.12, 7: 0.05, 8: 0.01}


def _log(seed: int = 7, n: int = 60) -> pl.DataFrame:
    """Impressions in two segments (the same ids in both), ties and nulls in the scores."""
    rng = random.Random(seed)
    rows: dict[str, list[object]] = defaultdict(list)
    for device in ("mobile", "desktop"):
        for q in range(n):
            size = rng.randint(1, 8)
            items = rng.sample(range(1, 25), size)  # ints: "9" > "10" as strings
            positions = rng.sample(range(1, size + 1), size)
            no_click = rng.random() < 0.3
            for it, pos in zip(items, positions, strict=True):
                rows["device"].append(device)
                rows["query"].append(q)
                rows["item"].append(it)
                rows["position"].append(pos)
                rows["click"].append(0 if no_click else int(rng.random() < 0.35))
                # few distinct values: many ties; a null = the ranker does not rank it
                rows["new"].append(rng.choice([0.5, 1.0, 1.5, 2.0, None]))
                rows["old"].append(float(rng.randint(1, 50)))
    frame = pl.DataFrame(rows)
    return frame.sample(fraction=1.0, shuffle=True, seed=seed)  # unsorted rows


def _gain(metric: str, rank: int) -> float:
    name, _, cut = metric.partition("@")
    if cut and rank > int(cut):
        return 0.0
    return {"dcg": 1 / math.log2(rank + 1), "rr": 1 / rank, "ctr": 1.0}[name]


def _brute_per_impression(
    frame: pl.DataFrame,
    metric: str,
    score: str,
    exam: dict[int, float],
    by: list[str],
    clip: float | None = None,
) -> dict[tuple[object, ...], float]:
    impressions: dict[tuple[object, ...], list[dict[str, Any]]] = defaultdict(list)
    for row in frame.iter_rows(named=True):
        impressions[tuple(row[b] for b in [*by, "query"])].append(row)
    values = {}
    for key, rows in impressions.items():
        ranked = [r for r in rows if r[score] is not None]
        ranked.sort(key=lambda r: (r[score], str(r["item"])), reverse=True)
        total = 0.0
        for rank, r in enumerate(ranked, start=1):
            if r["click"]:
                weight = 1 / exam[r["position"]]
                if clip is not None:
                    weight = min(weight, clip)
                total += _gain(metric, rank) * weight
        values[key] = total
    return values


def _brute(
    frame: pl.DataFrame,
    metric: str,
    score: str,
    exam: dict[int, float],
    by: list[str],
    clip: float | None = None,
) -> dict[tuple[object, ...], tuple[int, float, float | None]]:
    """(segment) -> (impressions, mean, standard error)."""
    per = _brute_per_impression(frame, metric, score, exam, by, clip)
    segments: dict[tuple[object, ...], list[float]] = defaultdict(list)
    for key, value in per.items():
        segments[key[:-1]].append(value)
    return {
        key: (
            len(vals),
            statistics.fmean(vals),
            statistics.stdev(vals) / math.sqrt(len(vals)) if len(vals) > 1 else None,
        )
        for key, vals in segments.items()
    }


def _check_against_brute(
    out: pl.DataFrame,
    frame: pl.DataFrame,
    targets: dict[str, str],
    by: list[str],
    clip: float | None = None,
    exam: dict[int, float] = EXAM,
) -> None:
    seen = 0
    for metric in METRICS:
        for policy, column in targets.items():
            expected = _brute(frame, metric, column, exam, by, clip)
            for key, (n, mean, se) in expected.items():
                condition = (pl.col("metric") == metric) & (pl.col("policy") == policy)
                for b, v in zip(by, key, strict=True):
                    condition &= pl.col(b) == v
                row = out.filter(condition)
                assert row.height == 1, (metric, policy, key)
                assert row["n_queries"].item() == n
                assert row["value"].item() == pytest.approx(mean, rel=1e-12, abs=1e-12)
                if se is None:
                    assert row["se"].item() is None
                else:
                    assert row["se"].item() == pytest.approx(se, rel=1e-9)
                seen += 1
    assert out.height == seen


def test_every_metric_equals_brute_force_by_segment_and_ranker() -> None:
    frame = _log()
    targets = {"new": "new", "old": "old"}
    out = click_metrics(
        frame, METRICS, examination=EXAM, score=["new", "old"], by="device", alpha=0.1
    )
    assert out.columns == [
        "metric",
        "policy",
        "device",
        "n_queries",
        "value",
        "se",
        "ci_low",
        "ci_high",
        "ess",
        "max_weight",
        "mean_weight",
    ]
    _check_against_brute(out, frame, targets, ["device"])
    z = statistics.NormalDist().inv_cdf(0.95)
    assert (out["ci_high"] - out["value"]).to_list() == pytest.approx((z * out["se"]).to_list())


def test_without_segments_and_with_clipping() -> None:
    # without by= the impression ids must be unique over the whole log
    frame = _log(seed=3).with_columns(pl.format("{}-{}", "device", "query").alias("query"))
    out = click_metrics(frame, METRICS, examination=EXAM, score={"b": "new"}, clip=20)
    _check_against_brute(out, frame, {"b": "new"}, [], clip=20)
    # position 8 (p = 0.01) has clicks: clipping changed something
    unclipped = click_metrics(frame, "dcg", examination=EXAM, score={"b": "new"})
    assert unclipped["value"].item() > out.filter(pl.col("metric") == "dcg")["value"].item()


def test_per_query_values_are_the_impressions_sums() -> None:
    frame = _log(seed=11)
    out = click_metrics(frame, METRICS, examination=EXAM, score="new", by="device", per_query=True)
    assert out.columns == ["policy", "device", "query", *METRICS]
    for metric in METRICS:
        expected = _brute_per_impression(frame, metric, "new", EXAM, ["device"])
        got: dict[tuple[object, ...], float] = {
            (r["device"], r["query"]): r[metric] for r in out.iter_rows(named=True)
        }
        assert got.keys() == expected.keys()
        for key, value in expected.items():
            assert got[key] == pytest.approx(value, rel=1e-12, abs=1e-12)


def test_ties_follow_the_engine_ranking_rule() -> None:
    # With every position examined, dcg@k and ctr@k are the engine's dcg@k and hits@k of the
    # clicks as labels: the tie order (item string descending) must be the same.
    frame = _log(seed=5).with_columns(pl.col("new").fill_null(1.0))
    ours = click_metrics(
        frame,
        ["dcg@3", "ctr@2"],
        examination=dict.fromkeys(range(1, 9), 1.0),
        score="new",
        by="device",
        per_query=True,
    ).sort("device", "query")
    engine = rke.evaluate(
        frame.rename({"click": "relevance", "new": "score"}),
        ["dcg@3", "hits@2"],
        by="device",
        per_query=True,
        missing_queries="zero",
    ).sort("device", "query")
    assert ours["dcg@3"].to_list() == pytest.approx(engine["dcg@3"].to_list())
    assert ours["ctr@2"].to_list() == pytest.approx(engine["hits@2"].cast(pl.Float64).to_list())


def test_row_order_input_type_and_laziness_do_not_matter() -> None:
    frame = _log(seed=2)
    first = click_metrics(frame, METRICS, examination=EXAM, score="new", by="device")
    again = click_metrics(
        frame.sample(fraction=1.0, shuffle=True, seed=99).lazy(),
        METRICS,
        examination=EXAM,
        score="new",
        by="device",
    )
    assert_frame_equal(first, again)
    pandas = click_metrics(frame.to_pandas(), METRICS, examination=EXAM, score="new", by="device")
    assert_frame_equal(first, pandas)


def test_examination_forms_agree() -> None:
    frame = _log(seed=4)
    eta = 1.3
    law = {p: (1 / p) ** eta for p in range(1, 9)}
    expected = click_metrics(frame, METRICS, examination=law, score="new", by="device")
    as_list = click_metrics(
        frame, METRICS, examination=[law[p] for p in range(1, 9)], score="new", by="device"
    )
    as_expr = click_metrics(
        frame, METRICS, examination=power_law_examination(eta), score="new", by="device"
    )
    with_column = frame.with_columns(power_law_examination(eta).alias("p_exam"))
    as_column = click_metrics(with_column, METRICS, examination="p_exam", score="new", by="device")
    table = pl.DataFrame({"position": list(law), "examination": list(law.values())})
    as_table = click_metrics(frame, METRICS, examination=table, score="new", by="device")
    for other in (as_list, as_expr, as_column, as_table):
        assert_frame_equal(expected, other, check_exact=False, rel_tol=1e-12)
    _check_against_brute(expected, frame, {"new": "new"}, ["device"], exam=law)


def test_an_impression_without_clicks_counts_zero() -> None:
    log = pl.DataFrame(
        {
            "query": ["a", "a", "b", "b", "b"],
            "item": ["x", "y", "x", "y", "z"],
            "position": [1, 2, 3, 1, 2],
            "click": [0, 0, 1, 0, 0],
            "score": [1.0, 2.0, 3.0, 3.0, 1.0],  # b: x and y tie; y wins ("y" > "x")
        }
    )
    out = click_metrics(log, "rr,ctr@1,dcg", examination={1: 1.0, 2: 0.5, 3: 0.25})
    # impression a: no click -> 0; b: x clicked at position 3 (weight 4), new rank 2
    values = dict(zip(out["metric"], out["value"], strict=True))
    assert values["rr"] == pytest.approx((0 + 4 * 0.5) / 2)
    assert values["ctr@1"] == pytest.approx(0.0)
    assert values["dcg"] == pytest.approx((0 + 4 / math.log2(3)) / 2)
    assert out["n_queries"].to_list() == [2, 2, 2]


# --- examination from a randomised log ---------------------------------------------------


def _randomized(seed: int = 1) -> pl.DataFrame:
    rng = random.Random(seed)
    truth = {"mobile": [1.0, 0.7, 0.4, 0.2], "desktop": [1.0, 0.8, 0.6, 0.5]}
    rows: dict[str, list[object]] = defaultdict(list)
    for device, exam in truth.items():
        for _ in range(800):
            for pos, p in enumerate(exam, start=1):
                rows["device"].append(device)
                rows["position"].append(pos)
                rows["click"].append(int(rng.random() < p * 0.5))
    return pl.DataFrame(rows)


def test_examination_from_randomized_is_ctr_over_ctr_at_the_top() -> None:
    log = _randomized()
    out = examination_from_randomized(log, by="device")
    assert out.columns == ["device", "position", "impressions", "clicks", "ctr", "examination"]
    counts: dict[tuple[str, int], list[int]] = defaultdict(lambda: [0, 0])
    for row in log.iter_rows(named=True):
        counts[(row["device"], row["position"])][0] += 1
        counts[(row["device"], row["position"])][1] += row["click"]
    for row in out.iter_rows(named=True):
        shown, clicked = counts[(row["device"], row["position"])]
        top_shown, top_clicked = counts[(row["device"], 1)]
        assert row["impressions"] == shown
        assert row["examination"] == pytest.approx((clicked / shown) / (top_clicked / top_shown))
    # it feeds click_metrics, joined by position and the segment column it shares with the log
    frame = _log(seed=8).with_columns(pl.col("position").clip(upper_bound=4))
    frame = frame.unique(["device", "query", "position"], keep="first", maintain_order=True)
    got = click_metrics(frame, "dcg@3,rr", examination=out, score="new", by="device")
    table = {(r["device"], r["position"]): r["examination"] for r in out.iter_rows(named=True)}
    for device in ("mobile", "desktop"):
        part = frame.filter(pl.col("device") == device)
        exam = {p: table[(device, p)] for p in range(1, 5)}
        for metric in ("dcg@3", "rr"):
            [(_, mean, _)] = _brute(part, metric, "new", exam, []).values()
            found = got.filter((pl.col("metric") == metric) & (pl.col("device") == device))
            assert found["value"].item() == pytest.approx(mean)


def test_randomized_estimate_refuses_gaps_zeros_and_no_top_clicks() -> None:
    gap = pl.DataFrame({"position": [1, 1, 3], "click": [1, 0, 1]})
    with pytest.raises(ColumnValueError, match=r"position\(s\) \[2\] have no impressions"):
        examination_from_randomized(gap)
    zero = pl.DataFrame({"position": [1, 2, 2], "click": [1, 0, 0]})
    with pytest.raises(ColumnValueError, match="position 2 has no clicks in 2 impressions"):
        examination_from_randomized(zero)
    top = pl.DataFrame({"g": ["a", "b", "b"], "position": [1, 1, 2], "click": [1, 0, 1]})
    with pytest.raises(ColumnValueError, match="position 1 in segment g='b' has no clicks"):
        examination_from_randomized(top, by="g")
    above = pl.DataFrame({"position": [1, 1, 2], "click": [1, 0, 1]})
    with pytest.raises(ColumnValueError, match="higher CTR than position 1"):
        examination_from_randomized(above)
    with pytest.raises(ColumnValueError, match=r"position.*>= 1.*\(0, 1\)"):
        examination_from_randomized(pl.DataFrame({"position": [0, 1], "click": [1, 1]}))


# --- bad input --------------------------------------------------------------------------


def _small() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "query": ["q1", "q1", "q2", "q2"],
            "item": ["a", "b", "a", "c"],
            "position": [1, 2, 1, 2],
            "click": [1, 0, 0, 1],
            "score": [0.3, 0.2, 0.1, 0.4],
        }
    )


@pytest.mark.parametrize(
    ("change", "pattern"),
    [
        ({"position": [1, 0, 1, 2]}, r"position >= 1.*\('q1', 'b', 0, 0\)"),
        ({"position": [1, None, 1, 2]}, r"position >= 1.*\('q1', 'b', None, 0\)"),
        ({"click": [1, 0, 2, 1]}, r"must be 0 or 1.*\('q2', 'a', 1, 2\)"),
        ({"click": [1, None, 0, 1]}, r"must be 0 or 1.*\('q1', 'b', 2, None\)"),
        ({"position": [1, 1, 1, 2]}, r"repeat a position.*\('q1', '[ab]', 1\)"),
        ({"item": ["a", "a", "a", "c"]}, r"repeat an item.*\('q1', 'a', 1\)"),
        ({"score": [0.3, float("nan"), 0.1, 0.4]}, r"NaN.*\('q1', 'b', 2, nan\)"),
        ({"query": ["q1", None, "q2", "q2"]}, r"must not be null.*\(None, 'b', 2\)"),
    ],
)
def test_malformed_logs_name_their_rows(change: dict[str, list[object]], pattern: str) -> None:
    log = _small().with_columns(pl.Series(k, v, strict=False) for k, v in change.items())
    with pytest.raises(ColumnValueError, match=pattern):
        click_metrics(log, "rr", examination={1: 1.0, 2: 0.5})


def test_examination_probabilities_are_checked() -> None:
    log = _small()
    # the rows named are the first bad ones of the batch that is read first
    with pytest.raises(
        ColumnValueError, match=r"no examination probability.*\('q[12]', '[bc]', 2\)"
    ):
        click_metrics(log, "rr", examination={1: 1.0})  # position 2 missing
    with pytest.raises(InvalidOptionError, match=r"position 2 must be in \(0, 1\], got 0"):
        click_metrics(log, "rr", examination={1: 1.0, 2: 0})
    with pytest.raises(InvalidOptionError, match=r"position 1 must be in \(0, 1\], got 1.5"):
        click_metrics(log, "rr", examination=[1.5, 0.5])
    bad = log.with_columns(pl.Series("p", [1.0, 1.2, 0.0, 0.5]))
    with pytest.raises(
        ColumnValueError, match=r"\(0, 1\].*(\('q1', 'b', 2, 1.2\)|\('q2', 'a', 1, 0.0\))"
    ):
        click_metrics(bad, "rr", examination="p")
    with pytest.raises(ColumnValueError, match=r"no examination.*\('q[12]', '[bc]', 2\)"):
        click_metrics(log, "rr", examination=pl.DataFrame({"position": [1], "examination": [1.0]}))


def test_bad_options_and_columns() -> None:
    log = _small()
    exam = {1: 1.0, 2: 0.5}
    with pytest.raises(UnknownMetricError, match="did you mean 'dcg'"):
        click_metrics(log, "dgc@3", examination=exam)
    with pytest.raises(UnknownMetricError, match="'ndcg'"):
        click_metrics(log, "ndcg@3", examination=exam)
    with pytest.raises(InvalidOptionError, match="positive int"):
        click_metrics(log, "dcg@0", examination=exam)
    with pytest.raises(ColumnNotFoundError, match="'region'"):
        click_metrics(log, "rr", examination=exam, by=["region", "query"])
    with pytest.raises(ColumnNotFoundError, match="'clicked'"):
        click_metrics(log, "rr", examination=exam, click="clicked")
    with pytest.raises(ColumnTypeError, match="integer positions"):
        click_metrics(log.with_columns(pl.col("position").cast(pl.Float64)), "rr", examination=exam)
    with pytest.raises(InvalidOptionError, match="clip"):
        click_metrics(log, "rr", examination=exam, clip=0.5)
    with pytest.raises(InvalidOptionError, match="examination="):
        click_metrics(log, "rr", examination=3)  # type: ignore[arg-type]
    with pytest.raises(InvalidOptionError, match="eta"):
        power_law_examination(-1.0)


def assert_streams(plan: pl.LazyFrame) -> None:
    """No in-memory fallback node in the streaming engine's physical plan (as tests/engine)."""
    dot = plan.show_graph(engine="streaming", plan_stage="physical", raw_output=True, show=False)
    assert isinstance(dot, str)
    assert "in-memory-map" not in dot
    legend = re.search(r'COLOR="([^"]+)">⬤</FONT> in-memory engine fallback', dot)
    assert legend is not None, dot
    assert f'fillcolor="{legend[1]}"' not in dot, dot


def test_parts_plan_streams(tmp_path: Path) -> None:
    path = tmp_path / "log.parquet"
    _log().write_parquet(path)
    parts, parsed = click_parts(
        pl.scan_parquet(path), METRICS, examination=EXAM, score=["new", "old"], by="device"
    )
    plan = parts.group_by(["policy", "device", "query"]).agg(
        pl.col(f"{metric.name}__m").sum() for metric in parsed
    )
    assert_streams(plan)
    streamed = plan.collect(engine="streaming").sort("policy", "device", "query")
    eager = plan.collect(engine="in-memory").sort("policy", "device", "query")
    assert_frame_equal(streamed, eager)


def test_examination_table_with_repeated_positions_is_refused() -> None:
    table = pl.DataFrame({"position": [1, 2, 2], "examination": [1.0, 0.5, 0.4]})
    with pytest.raises(InvalidOptionError, match=r"several rows for the same position.*\(2\)"):
        click_metrics(_small(), "rr", examination=table)


def test_simulated_position_based_clicks_recover_the_true_dcg() -> None:
    # Clicks drawn from the position-based model: P(click) = exam(position) * rel(item). The
    # true value of the new ranking is the mean over impressions of sum rel(d) * lambda(rank);
    # the estimate must cover it (the seed is fixed: a 4-standard-error band, not luck).
    rng = random.Random(20)
    exam = {p: (1 / p) ** 1.0 for p in range(1, 6)}
    rows: dict[str, list[object]] = defaultdict(list)
    truth = {"dcg@3": 0.0, "rr": 0.0, "ctr@2": 0.0}
    n = 20_000
    for q in range(n):
        relevance = [rng.choice([0.05, 0.2, 0.6, 0.9]) for _ in range(5)]
        scores = [r + rng.gauss(0, 0.3) for r in relevance]  # the new ranker: noisy relevance
        shown = rng.sample(range(5), 5)  # the logging ranker's order
        order = sorted(range(5), key=lambda i: scores[i], reverse=True)
        for rank, i in enumerate(order, start=1):
            truth["dcg@3"] += relevance[i] / math.log2(rank + 1) * (rank <= 3) / n
            truth["rr"] += relevance[i] / rank / n
            truth["ctr@2"] += relevance[i] * (rank <= 2) / n
        for position, i in enumerate(shown, start=1):
            rows["query"].append(q)
            rows["item"].append(i)
            rows["position"].append(position)
            rows["click"].append(int(rng.random() < exam[position] * relevance[i]))
            rows["score"].append(scores[i])
    out = click_metrics(pl.DataFrame(rows), list(truth), examination=exam)
    for row in out.iter_rows(named=True):
        assert abs(row["value"] - truth[row["metric"]]) < 4 * row["se"], row
    # the naive click metric (no weighting) is biased low: the correction matters here
    naive = click_metrics(pl.DataFrame(rows), "dcg@3", examination=dict.fromkeys(exam, 1.0))
    assert naive["value"].item() < truth["dcg@3"] - 4 * naive["se"].item()


def test_baseline_pairs_rankers_by_impression() -> None:
    frame = _log(seed=6)
    out = click_metrics(
        frame, "dcg@3,rr", examination=EXAM, score=["new", "old"], by="device", baseline="old"
    )
    for metric in ("dcg@3", "rr"):
        new = _brute(frame, metric, "new", EXAM, ["device"])
        old = _brute(frame, metric, "old", EXAM, ["device"])
        for (device,), (_, value, _) in new.items():
            row = out.filter((pl.col("metric") == metric) & (pl.col("device") == device))
            assert row.height == 1
            assert row["delta"].item() == pytest.approx(value - old[(device,)][1])


def test_bootstrap_interval_brackets_the_estimate() -> None:
    frame = _log(seed=9)
    out = click_metrics(
        frame,
        "dcg",
        examination=EXAM,
        score="new",
        interval="bootstrap",
        n_resamples=200,
        by="device",
    )
    assert (out["ci_low"] <= out["value"]).all()
    assert (out["value"] <= out["ci_high"]).all()
