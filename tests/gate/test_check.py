"""rke.check and rank-eval check: the regression gate.

Expected values come from numpy/scipy on the per-query values (paired differences, t-tests,
Holm by hand), never from compare() itself.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import polars_rankeval as rke
from polars_rankeval.cli import main
from polars_rankeval.errors import (
    ColumnNotFoundError,
    ColumnTypeError,
    DuplicateItemError,
    InvalidOptionError,
)
from polars_rankeval.gate import Rule

DATA = Path(__file__).parents[1] / "data"
EXPECTED_AQC = DATA / "expected_v10"


def _tables(seed: int = 3, n: int = 40) -> tuple[pl.DataFrame, pl.DataFrame]:
    rng = np.random.default_rng(seed)
    queries = [f"q{i:02d}" for i in range(n)]
    base_ndcg = rng.uniform(0.2, 0.9, n)
    base_map = rng.uniform(0.1, 0.8, n)
    base = pl.DataFrame({"query": queries, "ndcg@10": base_ndcg, "map": base_map})
    cand = pl.DataFrame(
        {
            "query": queries,
            "ndcg@10": np.clip(base_ndcg - 0.03 + rng.normal(0, 0.02, n), 0, 1),
            "map": np.clip(base_map + rng.normal(0, 0.05, n), 0, 1),
        }
    )
    return cand, base


def test_rule_strings() -> None:
    assert Rule.parse("ndcg@10 < -0.005") == Rule("ndcg@10", "<", -0.005, False, "ndcg@10 < -0.005")
    assert Rule.parse("map<=-2%").threshold == pytest.approx(-0.02)
    assert Rule.parse("  fall_out@10   >  1e-3 ").op == ">"
    rule = Rule.parse("x < -0.01")
    assert not rule.broken(-0.01, 0.5)  # strict: equal is not beyond the margin
    assert Rule.parse("x <= -0.01").broken(-0.01, 0.5)
    assert rule.broken(math.nan, 0.5)  # an unknown change never passes
    assert Rule.parse("x < -10%").broken(-0.06, 0.5)  # -12%
    assert not Rule.parse("x < -10%").broken(-0.04, 0.5)  # -8%
    for bad in ["ndcg@10 << 1", "ndcg@10 < abc", "< 0.1", "ndcg@10", "", 3]:
        with pytest.raises(InvalidOptionError, match="fail_if"):
            Rule.parse(bad)


def test_delta_rules_equal_the_paired_differences() -> None:
    cand, base = _tables()
    diff = (cand["ndcg@10"] - base["ndcg@10"]).to_numpy()
    delta = float(diff.mean())
    assert delta < -0.02
    # A margin just beyond and just short of the measured change.
    failing = rke.check(cand, base, fail_if=f"ndcg@10 < {delta + 1e-9}")
    passing = rke.check(cand, base, fail_if=f"ndcg@10 < {delta - 1e-9}")
    assert not failing.passed
    assert passing.passed
    assert failing.reasons == [f"ndcg@10: Δ {delta:+.4f} breaks the rule ndcg@10 < {delta + 1e-9}"]
    row = failing.table.row(0, named=True)
    assert row["delta"] == pytest.approx(delta, abs=1e-12)
    assert row["baseline_value"] == pytest.approx(float(base["ndcg@10"].mean()), abs=1e-12)
    assert row["value"] == pytest.approx(float(cand["ndcg@10"].mean()), abs=1e-12)
    assert row["verdict"] == "fail"
    relative = delta / float(base["ndcg@10"].mean())
    assert not rke.check(cand, base, fail_if=f"ndcg@10 < {100 * relative + 1e-6}%").passed
    assert rke.check(cand, base, fail_if=f"ndcg@10 < {100 * relative - 1e-6}%").passed


def test_significant_loss_uses_the_paired_test_and_holm() -> None:
    stats = pytest.importorskip("scipy.stats")
    cand, base = _tables()
    result = rke.check(cand, base, ["ndcg@10", "map"], fail_if_significant=True)
    raw = [
        stats.ttest_rel(cand[name].to_numpy(), base[name].to_numpy()).pvalue
        for name in ["ndcg@10", "map"]
    ]
    # Holm over two p-values, by hand.
    order = np.argsort(raw)
    adjusted = np.empty(2)
    adjusted[order[0]] = min(1.0, 2 * raw[order[0]])
    adjusted[order[1]] = min(1.0, max(adjusted[order[0]], raw[order[1]]))
    table = result.table
    assert table["p_value"].to_list() == pytest.approx(raw, abs=1e-12)
    assert table["p_adjusted"].to_list() == pytest.approx(list(adjusted), abs=1e-12)
    interval = stats.ttest_rel(cand["ndcg@10"], base["ndcg@10"]).confidence_interval(0.95)
    assert table["ci_low"][0] == pytest.approx(interval.low, abs=1e-12)
    assert table["ci_high"][0] == pytest.approx(interval.high, abs=1e-12)
    assert adjusted[0] < 0.05  # ndcg@10 dropped by 0.03 with little noise
    assert not result.passed
    assert table["verdict"].to_list() == ["fail", "pass"]
    assert result.reasons[0].startswith("ndcg@10: significantly worse (t test, p (holm)")
    # The same change the other way round is an improvement: it passes.
    assert rke.check(base, cand, ["ndcg@10", "map"], fail_if_significant=True).passed


def test_direction_comes_from_the_metric() -> None:
    cand, base = _tables()
    # fall_out@10 is lower-is-better: a significant drop is a gain, a significant rise a loss.
    cand = cand.rename({"ndcg@10": "fall_out@10"})
    base = base.rename({"ndcg@10": "fall_out@10"})
    assert rke.check(cand, base, "fall_out@10", fail_if_significant=True).passed
    worse = rke.check(base, cand, "fall_out@10", fail_if_significant=True)
    assert not worse.passed
    assert worse.table["higher_is_better"].to_list() == [False]
    assert "lower is better" in worse.text()
    # A column we cannot read a direction from takes lower_is_better=, as compare does.
    renamed = (base.rename({"fall_out@10": "cost"}), cand.rename({"fall_out@10": "cost"}))
    assert not rke.check(
        *renamed, "cost", fail_if_significant=True, lower_is_better=["cost"]
    ).passed


def test_floors_and_ceilings_read_the_candidates_value() -> None:
    cand, base = _tables()
    value = float(cand["map"].mean())
    assert rke.check(cand, base, floors={"map": value - 1e-9}).passed
    low = rke.check(cand, base, floors={"map": value + 1e-9})
    assert low.reasons == [f"map: candidate {value:.4f} is below the floor {value + 1e-9}"]
    assert rke.check(cand, base, ceilings={"map": value + 1e-9}).passed
    assert not rke.check(cand, base, ceilings={"map": value - 1e-9}).passed
    with pytest.raises(InvalidOptionError, match="floors"):
        rke.check(cand, base, floors={"map": "high"})  # type: ignore[dict-item]


def test_geometric_mean_interval_is_a_ratio() -> None:
    stats = pytest.importorskip("scipy.stats")
    cand, base = _tables()
    cand, base = cand.rename({"map": "gm_map"}), base.rename({"map": "gm_map"})
    row = rke.check(cand, base, "gm_map", floors={"gm_map": 0}).table.row(0, named=True)
    logs = (
        np.log(np.maximum(cand["gm_map"].to_numpy(), 1e-5)),
        np.log(np.maximum(base["gm_map"].to_numpy(), 1e-5)),
    )
    interval = stats.ttest_rel(*logs).confidence_interval(0.95)
    assert row["interval_scale"] == "ratio"
    assert row["ci_low"] == pytest.approx(math.exp(interval.low), abs=1e-12)
    assert row["ci_high"] == pytest.approx(math.exp(interval.high), abs=1e-12)
    assert row["value"] == pytest.approx(math.exp(logs[0].mean()), abs=1e-12)


def test_missing_queries() -> None:
    cand, base = _tables()
    fewer = cand.filter(~pl.col("query").is_in(["q03", "q07"]))
    extra = pl.concat([cand, cand.head(1).with_columns(pl.lit("new").alias("query"))])
    lenient = rke.check(fewer, base, floors={"map": 0})
    assert lenient.passed
    assert lenient.queries == {
        "baseline": 40,
        "candidate": 38,
        "shared": 38,
        "only_baseline": 2,
        "only_candidate": 0,
    }
    strict = rke.check(fewer, base, floors={"map": 0}, fail_on_missing_queries=True)
    assert not strict.passed
    assert strict.reasons == [
        "missing queries: 2 baseline queries are not in the candidate ('q03', 'q07')"
    ]
    assert "missing queries" in strict.text().splitlines()[0]
    assert repr(strict) == strict.text()
    assert strict._repr_markdown_() == strict.markdown()
    assert rke.check(extra, base, fail_on_missing_queries=True).passed
    # Δ is over the shared queries.
    shared = base.filter(pl.col("query").is_in(fewer["query"].implode()))
    expected = float((fewer["map"] - shared["map"]).mean())
    assert lenient.table["delta"][0] == pytest.approx(expected, abs=1e-12)


def test_no_shared_query_fails() -> None:
    cand, base = _tables()
    other = cand.with_columns(pl.col("query") + "_x")
    result = rke.check(other, base, "map", floors={"map": 0})
    assert not result.passed
    assert "Δ is unknown" in result.reasons[0]


def test_logs_equal_per_query_tables_and_summary_rows_are_dropped(sample_log) -> None:
    log = sample_log
    metrics = ["ndcg@10", "recall@100", "gm_map"]
    per_query = rke.evaluate(log, metrics, by="system", per_query=True)
    summary = rke.evaluate(log, metrics, by="system").with_columns(pl.lit("all").alias("query"))
    stored = pl.concat([per_query, summary.select(per_query.columns)])
    rules = {"fail_if": ["ndcg@10 < -0.005"], "floors": {"recall@100": 0.5}}
    from_logs = rke.check(log, log, metrics, system="neural", baseline="bm25", **rules)
    from_tables = rke.check(
        stored.filter(pl.col("system") == "neural"),
        stored.filter(pl.col("system") == "bm25"),
        metrics,
        **rules,
    )
    # only logs have tie ranges (a per-query table has no ties to bound)
    ties = ["reasons", "tie_range", "tie_flip"]
    assert from_logs.table.drop(ties).equals(
        from_tables.table.drop(ties).select(from_logs.table.drop(ties).columns)
    )
    assert from_logs.table["metric"].to_list() == metrics
    # What the table shows under a metric's name is what evaluate gives.
    means = rke.evaluate(log, metrics, by="system").sort("system")
    # (to rounding: the two sum the per-query values in different orders)
    assert from_logs.table["baseline_value"].to_list() == pytest.approx(means.row(0)[1:], abs=1e-12)
    assert from_logs.table["value"].to_list() == pytest.approx(means.row(1)[1:], abs=1e-12)
    # A lazy log gives the same, and a sweep is two metrics.
    sweep = rke.check(
        log.lazy(),
        log.lazy(),
        "ndcg@5,10",
        system="neural",
        baseline="bm25",
        floors={"ndcg@5": 0},
    )
    assert sweep.table["metric"].to_list() == ["ndcg@5", "ndcg@10"]


def test_mistakes_are_named() -> None:
    cand, base = _tables()
    with pytest.raises(InvalidOptionError, match="no rule"):
        rke.check(cand, base)
    with pytest.raises(InvalidOptionError, match=r"names 'p@10', which is not among"):
        rke.check(cand, base, ["map"], fail_if="p@10 < 0")
    with pytest.raises(ColumnNotFoundError, match=r"no column for \['p@10'\]"):
        rke.check(cand, base, ["p@10"], fail_if="p@10 < 0")
    with pytest.raises(ColumnTypeError, match="numeric"):
        rke.check(cand, base.with_columns(pl.col("map").cast(pl.String)), "map", floors={"map": 0})
    two = pl.concat([base.with_columns(pl.lit(s).alias("system")) for s in ("a", "b")])
    with pytest.raises(InvalidOptionError, match="choose one with baseline="):
        rke.check(cand, two, "map", floors={"map": 0})
    with pytest.raises(InvalidOptionError, match="not in column 'system'"):
        rke.check(cand, two, "map", floors={"map": 0}, baseline="c")
    log = pl.read_parquet(Path(__file__).parents[2] / "data" / "sample.parquet")
    with pytest.raises(InvalidOptionError, match="name the metrics"):
        rke.check(base, log, fail_on_missing_queries=True, baseline="bm25")


def _trec_paths() -> tuple[str, str]:
    return str(DATA / "results.test"), str(DATA / "qrels.test")


def test_cli_exit_status_and_outputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cand, base = _tables()
    cand_path, base_path = tmp_path / "cand.parquet", tmp_path / "base.parquet"
    cand.write_parquet(cand_path)
    base.write_parquet(base_path)
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    args = ["check", str(cand_path), "--baseline", str(base_path)]
    assert main([*args, "--fail-if", "ndcg@10 < -0.005"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("rank-eval check: FAIL (1 of 1 metrics failed)")
    assert "ndcg@10: Δ" in out
    assert main([*args, "--fail-if", "map < -0.5", "--min", "map=0.1"]) == 0
    assert capsys.readouterr().out.startswith("rank-eval check: PASS")
    markdown = summary.read_text()
    assert markdown.startswith("earlier step\n### ❌ rank-eval check failed")
    assert "### ✅ rank-eval check passed" in markdown
    assert main([*args, "--fail-if-significant", "--format", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["passed"] is False
    assert [m["metric"] for m in report["metrics"]] == ["ndcg@10", "map"]
    # Mistakes: exit 2 and one line.
    for bad in (
        [*args, "--fail-if", "ndcg@10 <<"],
        [*args, "--min", "map"],
        [*args],
        ["check", str(cand_path)],
        ["check", str(tmp_path / "absent.parquet"), "--baseline", str(base_path), "--min", "map=0"],
        ["check", "run.txt", "--baseline", str(base_path), "--min", "map=0"],
    ):
        assert main(bad) == 2, bad
        err = capsys.readouterr().err
        assert (err.startswith("rank-eval") and err.count("\n") <= 1) or "usage" in err


def test_cli_trec_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    run, qrels = _trec_paths()
    # The same run against itself passes any margin; a truncated run (its top 5 per topic)
    # against the full run loses map.
    lines = Path(run).read_text().splitlines()
    kept: dict[str, int] = {}
    short = []
    for line in lines:
        topic = line.split()[0]
        kept[topic] = kept.get(topic, 0) + 1
        if kept[topic] <= 5:
            short.append(line)
    short_path = tmp_path / "short.run"
    short_path.write_text("\n".join(short) + "\n")
    same = ["check", run, "--baseline", run, "--qrels", qrels, "--fail-if", "map < 0"]
    status = main(same)
    out = capsys.readouterr()
    assert status == 0, out
    assert out.out.startswith("rank-eval check: PASS")
    worse = [
        "check",
        str(short_path),
        "--baseline",
        run,
        "--qrels",
        qrels,
        "--fail-if",
        "map < -0.001",
    ]
    assert main([*worse, "-o", str(tmp_path / "out.txt")]) == 1
    assert "map: Δ -" in (tmp_path / "out.txt").read_text()
    assert capsys.readouterr().out == ""


def test_cli_trec_options_and_a_trec_eval_output_baseline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    run, qrels = _trec_paths()
    trunc = str(DATA / "results.trunc")  # topic 302 has no line
    printed = tmp_path / "base.txt"
    assert (
        main([run, "--qrels", qrels, "-m", "map", "--per-query", "-f", "trec", "-o", str(printed)])
        == 0
    )
    assert (
        main(["check", trunc, "--baseline", str(printed), "--qrels", qrels, "--min", "map=0"]) == 2
    )
    assert "looks like trec_eval's output" in capsys.readouterr().err
    # Without -c the truncated run has two topics; with -c topic 302 scores 0 (trec_eval -c).
    args = ["check", trunc, "--baseline", run, "--qrels", qrels, "--format", "json"]
    assert main([*args, "--min", "map=0"]) == 0
    skipped = json.loads(capsys.readouterr().out)
    assert main([*args, "--min", "map=0", "-c"]) == 0
    complete = json.loads(capsys.readouterr().out)
    assert skipped["queries"]["candidate"] == 2
    assert complete["queries"]["candidate"] == 3
    expected = (EXPECTED_AQC / "out.test.aqc").read_text().splitlines()
    trec_map = next(line.split()[2] for line in expected if line.split()[:2] == ["map", "all"])
    assert f"{complete['metrics'][0]['value']:.4f}" == trec_map


def test_last_bit_noise_is_no_change() -> None:
    # The same ranking evaluated twice can differ in the last bit (sums in another order); a
    # "< 0" margin and the significance test must not see that as a loss.
    _, base = _tables()
    noisy = base.with_columns(pl.col("map") - pl.col("map") * 1e-13)
    assert (noisy["map"] < base["map"]).sum() > 30
    assert rke.check(noisy, base, "map", fail_if="map < 0", fail_if_significant=True).passed
    # A real change, however small, still counts.
    lower = base.with_columns(pl.col("map") - 1e-9)
    assert not rke.check(lower, base, "map", fail_if="map < 0").passed


def test_zero_baseline_and_repeated_queries() -> None:
    base = pl.DataFrame({"query": ["q1", "q2"], "map": [0.0, 0.0]})
    better = pl.DataFrame({"query": ["q1", "q2"], "map": [0.1, 0.2]})
    # From a zero mean any rise is +inf % and any drop -inf %: never a division error.
    assert rke.check(better, base, fail_if="map < -1%").passed
    assert not rke.check(base, better, fail_if="map < -1%").passed
    assert rke.check(base, base, fail_if="map < -1%").passed
    twice = pl.concat([base, base.head(1)])
    with pytest.raises(DuplicateItemError, match="baseline's per-query table has 1 query"):
        rke.check(better, twice, floors={"map": 0})


# Boundary tests that kill the gate's surviving mutants of the round-4 audit (section 2.7):
# M01 (relative change over a negative mean), M04 (Δ unknown with shared queries), M05 (a
# significant change with Δ exactly 0), M06 (a candidate exactly at its floor), M07 (p-values
# printed between 1e-4 and 1e-3). Expected values are worked out by hand in each comment.


def test_relative_rule_over_a_negative_baseline_mean() -> None:
    """M01: Δ is relative to |mean|: -0.05 from a mean of -0.5 is a 10% drop, not a 10% rise."""
    from polars_rankeval.gate._rules import relative_change

    assert relative_change(-0.05, -0.5) == pytest.approx(-0.1)
    assert Rule.parse("x < -5%").broken(-0.05, -0.5)
    assert not Rule.parse("x > 5%").broken(-0.05, -0.5)
    # through check: a per-query column whose values are negative (a score difference, say)
    base = pl.DataFrame({"query": ["q1", "q2"], "x": [-0.5, -0.5]})
    cand = pl.DataFrame({"query": ["q1", "q2"], "x": [-0.55, -0.55]})
    result = rke.check(cand, base, fail_if="x < -5%")
    assert not result.passed
    assert result.reasons == ["x: Δ -10.00% breaks the rule x < -5%"]


def test_unknown_delta_with_shared_queries_fails(recwarn: pytest.WarningsRecorder) -> None:
    """M04: queries are shared but the candidate has no value for x: Δ is NaN, x fails."""
    queries = [f"q{i}" for i in range(5)]
    base = pl.DataFrame({"query": queries, "map": [0.5] * 5, "x": [0.1, 0.2, 0.3, 0.4, 0.5]})
    cand = pl.DataFrame(
        {"query": queries, "map": [0.5] * 5, "x": [None] * 5},
        schema_overrides={"x": pl.Float64},
    )
    result = rke.check(cand, base, ["map", "x"], floors={"map": 0.0})
    assert result.queries["shared"] == 5
    assert not result.passed
    assert result.reasons == ["x: no query has a value on both sides, so Δ is unknown"]


def test_significant_change_with_zero_delta_is_not_worse() -> None:
    """M05: 8 queries lose 0.125 and one gains 1.0, so Δ = 0 exactly (dyadic values).

    The sign test finds 8 of 9 changes on one side significant (p = 2 * 10 / 512 = 0.039), but
    a mean change of 0 is no loss: fail_if_significant must pass.
    """
    queries = [f"q{i}" for i in range(9)]
    changes = [-0.125] * 8 + [1.0]
    base = pl.DataFrame({"query": queries, "map": [0.5] * 9})
    cand = pl.DataFrame({"query": queries, "map": [0.5 + c for c in changes]})
    result = rke.check(cand, base, fail_if_significant=True, test="sign")
    row = result.table.row(0, named=True)
    assert row["delta"] == 0.0
    assert row["p_value"] == pytest.approx(2 * 10 / 512)
    assert row["significant"]
    assert result.passed
    # the mirror image is a real loss and fails
    worse = pl.DataFrame({"query": queries, "map": [0.5 - c - 0.01 for c in changes]})
    assert not rke.check(worse, base, fail_if_significant=True, test="sign").passed


def test_candidate_exactly_at_its_floor_or_ceiling_passes() -> None:
    """M06: floors are 'at least', ceilings 'at most': the bound itself passes."""
    base = pl.DataFrame({"query": ["q1", "q2"], "map": [0.25, 0.75]})
    cand = pl.DataFrame({"query": ["q1", "q2"], "map": [0.5, 0.5]})  # mean exactly 0.5
    assert rke.check(cand, base, floors={"map": 0.5}).passed
    assert rke.check(cand, base, ceilings={"map": 0.5}).passed
    assert not rke.check(cand, base, floors={"map": 0.5000001}).passed
    assert not rke.check(cand, base, ceilings={"map": 0.4999999}).passed


@pytest.mark.parametrize(
    ("p", "shown"),
    [(0.0005, "0.0005"), (0.000999, "0.0010"), (1e-4, "0.0001"), (9.99e-5, "<0.0001")],
)
def test_p_values_below_a_thousandth_keep_their_digits(p: float, shown: str) -> None:
    """M07: only p < 1e-4 is written '<0.0001'; 0.0005 prints as itself."""
    from polars_rankeval.gate._result import _p

    assert _p(p) == shown


def _two_systems() -> pl.DataFrame:
    log = pl.read_parquet(Path(__file__).parents[2] / "data" / "sample.parquet")
    return log.filter(pl.col("query").is_in(log["query"].unique().sort().head(40).implode()))


@pytest.mark.parametrize(
    ("old", "new"),
    [("candidate", "data"), ("candidate_system", "system"), ("baseline_system", "baseline")],
)
def test_old_keywords_warn_and_still_work(old: str, new: str) -> None:
    log = _two_systems()
    given: dict[str, object] = {"data": log, "reference": log, "system": "neural"}
    given["baseline"] = "bm25"
    expected = rke.check(**given, metrics="map", fail_if="map < -1")  # type: ignore[arg-type]
    old_given = {(old if name == new else name): value for name, value in given.items()}
    with pytest.warns(rke.RankEvalDeprecationWarning, match=f"{old}= is renamed {new}="):
        got = rke.check(**old_given, metrics="map", fail_if="map < -1")  # type: ignore[arg-type]
    assert got.table.equals(expected.table)


def test_a_table_given_as_baseline_is_the_old_reference_keyword() -> None:
    """Before, baseline= was the second table; now it names the reference's system."""
    log = _two_systems()
    expected = rke.check(log, log, "map", system="neural", baseline="bm25", fail_if="map < -1")
    old = r"now reference=|baseline_system= is renamed|candidate_system= is renamed"
    with pytest.warns(rke.RankEvalDeprecationWarning, match=old) as seen:
        got = rke.check(
            log,
            baseline=log,
            candidate_system="neural",
            baseline_system="bm25",
            metrics="map",
            fail_if="map < -1",
        )
    assert any("now reference=" in str(warning.message) for warning in seen)
    assert got.table.equals(expected.table)


def test_baseline_names_the_references_system() -> None:
    log = _two_systems()
    means = rke.evaluate(log, ["map"], by="system").sort("system")
    got = rke.check(log, log, "map", system="neural", baseline="bm25", fail_if="map < -1")
    row = got.table.row(0, named=True)
    assert row["baseline_value"] == pytest.approx(means["map"][0], abs=1e-12)
    assert row["value"] == pytest.approx(means["map"][1], abs=1e-12)
    assert got.table.columns[:5] == [
        "metric",
        "higher_is_better",
        "value",
        "baseline_value",
        "delta",
    ]
