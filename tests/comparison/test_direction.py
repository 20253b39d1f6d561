"""A call's ``direction=`` overrides a metric's declared direction, in every layer.

``arp@k`` (average recommendation popularity) is the case from the field: an analyst who wants
popularity reads it higher-is-better, one who audits popularity bias lower-is-better. The tests
pass the direction explicitly both ways (they do not depend on the registry's default) and
check that compare, report (bold, superscripts, caption), the systems chart (panel title,
colours), check (the worse direction) and the CLI (``--direction``) all follow it.

The expected values come from the log itself: each system's ARP is worked out here in plain
Python from the train counts, and the log is built so that every user's popular list beats
every user's niche list (a significance no test can miss).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import polars as pl
import pytest

import polars_rankeval as rke
from polars_rankeval._engine.meaning import meanings

N_USERS = 16
# Item i was interacted with 20 - i times in train: item 0 is the most popular.
POPULARITY = {item: 20 - item for item in range(20)}
LISTS = {
    "popular": lambda user: [user % 3, 3 + user % 2],
    "mid": lambda user: [6 + user % 3, 9 + user % 2],
    "niche": lambda user: [15 + user % 4, 12 + user % 3],
}


@pytest.fixture(scope="module")
def train() -> pl.DataFrame:
    rows = [(n % 30, item) for item, count in POPULARITY.items() for n in range(count)]
    return pl.DataFrame(rows, schema={"query": pl.Int64, "item": pl.Int64}, orient="row")


@pytest.fixture(scope="module")
def log() -> pl.DataFrame:
    rows = [
        (system, user, item, float(2 - rank))
        for system, items in LISTS.items()
        for user in range(N_USERS)
        for rank, item in enumerate(items(user))
    ]
    schema = {"system": pl.String, "query": pl.Int64, "item": pl.Int64, "score": pl.Float64}
    return pl.DataFrame(rows, schema=schema, orient="row")


def cli_main(argv: list[str]) -> int:
    from polars_rankeval.cli import main

    return main(argv)


def brute_arp(system: str) -> float:
    """Mean over users of the mean train count of the two recommended items."""
    per_user = [sum(POPULARITY[i] for i in LISTS[system](u)) / 2 for u in range(N_USERS)]
    return sum(per_user) / N_USERS


def compared(log: pl.DataFrame, train: pl.DataFrame, direction: str) -> pl.DataFrame:
    return rke.compare(log, ["arp@2"], by="system", train=train, direction={"arp@2": direction})


# ---- meaning.py: the one place that decides ------------------------------------------------


def test_direction_overrides_a_builtin_metric_and_records_the_option() -> None:
    for wanted in ("higher", "lower", "none"):
        found = meanings(["arp@10", "map"], direction={"arp@10": wanted})
        assert found["arp@10"].direction == wanted
        assert found["arp@10"].source == "option"
        assert found["arp@10"].summary == "mean"
        assert found["map"].source == "metric"
    # overriding our own metric the other way round, too
    assert meanings(["frp"], direction={"frp": "higher"})["frp"].direction == "higher"


def test_direction_refuses_unknown_columns_and_directions() -> None:
    with pytest.raises(rke.InvalidOptionError, match=r"direction= names \['arp@1'\]"):
        meanings(["arp@10"], direction={"arp@1": "lower"})
    with pytest.raises(rke.InvalidOptionError, match="'down'; each direction must be one of"):
        meanings(["arp@10"], direction={"arp@10": "down"})
    with pytest.raises(rke.InvalidOptionError, match="must be a mapping"):
        meanings(["arp@10"], direction=["arp@10"])  # type: ignore[arg-type]
    with pytest.raises(rke.InvalidOptionError, match="disagree on 'latency'"):
        meanings(["latency"], direction={"latency": "higher"}, lower_is_better=["latency"])


def test_lower_is_better_stays_the_list_shorthand_and_points_at_direction() -> None:
    # the list shorthand declares other tools' columns, as before
    assert meanings(["latency"], lower_is_better=["latency"])["latency"].direction == "lower"
    # a blanket list may not flip one of our metrics: the error says how to override it
    with pytest.raises(rke.InvalidOptionError, match=r"direction=\{'map': 'lower'\}"):
        meanings(["map"], lower_is_better=["map"])
    # agreeing declarations in both are fine
    found = meanings(["frp"], direction={"frp": "lower"}, lower_is_better=["frp"])
    assert found["frp"].direction == "lower"


# ---- compare, report, plot and check follow the override -----------------------------------


@pytest.mark.parametrize("direction", ["higher", "lower"])
def test_compare_records_the_override_on_every_row(
    log: pl.DataFrame, train: pl.DataFrame, direction: str
) -> None:
    out = compared(log, train, direction)
    higher = direction == "higher"
    assert out["higher_is_better"].to_list() == [higher] * 3
    assert out["direction_source"].to_list() == ["option"] * 3
    for row in out.iter_rows(named=True):
        assert row["system_overall"] == pytest.approx(brute_arp(row["system"]), rel=1e-12)
        assert row["baseline_overall"] == pytest.approx(
            brute_arp(row["baseline_system"]), rel=1e-12
        )
        # every user's list of the more popular system has the higher ARP
        more_popular = brute_arp(row["system"]) > brute_arp(row["baseline_system"])
        system_wins = more_popular == higher
        assert (row["wins"], row["losses"]) == ((N_USERS, 0) if system_wins else (0, N_USERS))
        assert row["significant"]


@pytest.mark.parametrize(
    ("direction", "best", "marks"),
    [
        # higher: popular is bold and beats both others; mid beats niche
        ("higher", "popular", {"popular": "<sup>ab</sup>", "mid": "<sup>b</sup>", "niche": ""}),
        # lower: niche is bold and beats both others; mid beats popular
        ("lower", "niche", {"niche": "<sup>ac</sup>", "mid": "<sup>c</sup>", "popular": ""}),
    ],
)
def test_report_bolds_and_marks_by_the_override(
    log: pl.DataFrame, train: pl.DataFrame, direction: str, best: str, marks: dict[str, str]
) -> None:
    text = rke.report(compared(log, train, direction)).text
    rows = {
        line.split("|")[1].strip()[4:]: line.split("|")[2].strip()
        for line in text.splitlines()
        if line.startswith("| (")
    }
    # letters by the report's order: (a) mid, (b) niche, (c) popular
    assert list(rows) == ["mid", "niche", "popular"]
    for system, cell in rows.items():
        value = f"{brute_arp(system):.4f}"
        shown = f"**{value}**" if system == best else value
        assert cell == shown + marks[system], (system, cell)
    assert ("Lower is better for arp@2." in text) == (direction == "lower")


@pytest.mark.parametrize("direction", ["higher", "lower"])
def test_systems_chart_titles_and_colours_follow_the_override(
    log: pl.DataFrame, train: pl.DataFrame, direction: str
) -> None:
    out = compared(log, train, direction).filter(pl.col("baseline_system") == "mid")
    data = rke.plot.systems_data(out)
    assert set(data["panel"].to_list()) == {f"arp@2 ({direction} is better; mid = 11.7812)"}
    verdicts = dict(zip(data["system"], data["verdict"], strict=True))
    # popular has a higher ARP than mid on every user, niche a lower one
    higher = direction == "higher"
    assert verdicts == {
        "popular": "better" if higher else "worse",
        "niche": "worse" if higher else "better",
    }


@pytest.mark.parametrize("direction", ["higher", "lower"])
def test_check_fails_in_the_overridden_worse_direction(
    log: pl.DataFrame, train: pl.DataFrame, direction: str
) -> None:
    base = log.filter(pl.col("system") == "niche").drop("system")
    cand = log.filter(pl.col("system") == "popular").drop("system")
    result = rke.check(
        cand,
        base,
        "arp@2",
        fail_if_significant=True,
        train=train,
        direction={"arp@2": direction},
    )
    # the candidate's ARP is far higher: worse only when lower is better
    assert result.passed == (direction == "higher")
    assert result.table["higher_is_better"].to_list() == [direction == "higher"]
    if direction == "lower":
        assert result.reasons[0].startswith("arp@2: significantly worse")


# ---- the command line: --direction on compare and check --------------------------------------


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory, log: pl.DataFrame, train: pl.DataFrame):
    folder = tmp_path_factory.mktemp("direction")
    log.write_parquet(folder / "log.parquet")
    train.write_parquet(folder / "train.parquet")
    for system in ("niche", "popular"):
        per_query = rke.evaluate(
            log.filter(pl.col("system") == system), ["arp@2"], train=train, per_query=True
        )
        per_query.write_parquet(folder / f"{system}.parquet")
    return folder


@pytest.mark.parametrize("direction", ["higher", "lower"])
def test_cli_compare_direction(capsys, files: Path, direction: str) -> None:
    code = cli_main(
        [
            "compare",
            str(files / "log.parquet"),
            "--by",
            "system",
            "--baseline",
            "mid",
            "-m",
            "arp@2",
            "--train",
            str(files / "train.parquet"),
            "--direction",
            f"arp@2={direction}",
            "--format",
            "json",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    rows = {row["system"]: row for row in json.loads(out)}
    assert {row["higher_is_better"] for row in rows.values()} == {direction == "higher"}
    assert {row["direction_source"] for row in rows.values()} == {"option"}
    assert rows["popular"]["wins"] == (N_USERS if direction == "higher" else 0)


def test_cli_direction_errors_are_one_line(capsys, files: Path) -> None:
    base = ["compare", str(files / "log.parquet"), "--by", "system", "-m", "arp@2"]
    for bad, message in [
        ("arp@2=down", "expected METRIC=higher, METRIC=lower or METRIC=none"),
        ("arp@3=lower", "--direction names 'arp@3', which is not a compared metric"),
    ]:
        code = cli_main([*base, "--train", str(files / "train.parquet"), "--direction", bad])
        err = capsys.readouterr().err
        assert code == 2
        assert message in err
        assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("direction", ["higher", "lower"])
def test_cli_check_direction(capsys, files: Path, direction: str) -> None:
    code = cli_main(
        [
            "check",
            str(files / "popular.parquet"),
            "--baseline",
            str(files / "niche.parquet"),
            "--fail-if-significant",
            "--direction",
            f"arp@2={direction}",
        ]
    )
    out = capsys.readouterr().out
    assert code == (0 if direction == "higher" else 1), out
    assert ("significantly worse" in out) == (direction == "lower")


def test_cli_check_direction_on_a_metric_not_checked(capsys, files: Path) -> None:
    # the library's Python spelling ("direction=") leaked into the command line's error
    code = cli_main(
        [
            "check",
            str(files / "popular.parquet"),
            "--baseline",
            str(files / "niche.parquet"),
            "--fail-if-significant",
            "--direction",
            "arp@3=lower",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert "option --direction names ['arp@3']" in err
    assert "direction=" not in err


# ---- the depth warning ----------------------------------------------------------------------


def depth_log() -> pl.DataFrame:
    """Two systems with the same top 10 per query; "long" retrieves 90 more rows.

    Odd queries have relevant rows at ranks 3 and 41, even ones only at rank 51. A relevant
    row a system did not retrieve is in its log with a null score (judged, not retrieved).
    """
    rows = []
    for query in range(8):
        relevant = {2, 40} if query % 2 else {50}  # 0-based ranks
        for system, depth in (("short", 10), ("long", 100)):
            rows.extend(
                (
                    system,
                    query,
                    f"d{rank}",
                    float(depth - rank) if rank < depth else None,
                    int(rank in relevant),
                )
                for rank in sorted(set(range(depth)) | relevant)
            )
    schema = ["system", "query", "item", "score", "relevance"]
    return pl.DataFrame(rows, schema=schema, orient="row")


def test_compare_warns_when_depth_sensitive_metrics_meet_other_depths() -> None:
    log = depth_log()
    with pytest.warns(rke.DepthWarning, match="'frp', 'mean_rank' count a relevant row") as got:
        out = rke.compare(log, ["map", "frp", "mean_rank"], by="system", baseline="long")
    message = str(got[0].message)
    assert "'short' 10, 'long' 100" in message
    assert got[0].filename == __file__  # points at the user's line
    # the numbers stay the metrics' own: on even queries short's frp is 11 (n + 1) where
    # long's is 51, so short "wins" four queries by being short
    frp = out.filter(pl.col("metric") == "frp").row(0, named=True)
    assert frp["system_overall"] == pytest.approx((3 * 4 + 11 * 4) / 8)
    assert frp["baseline_overall"] == pytest.approx((3 * 4 + 51 * 4) / 8)
    assert (frp["wins"], frp["ties"], frp["losses"]) == (4, 4, 0)
    assert "__list_depth" not in out["metric"].to_list()


def test_no_depth_warning_for_equal_depths_or_cut_metrics() -> None:
    log = depth_log()
    with warnings.catch_warnings():
        warnings.simplefilter("error", rke.DepthWarning)
        # a cutoff makes the "not found" value k + 1 for every system
        rke.compare(log, ["frp@10", "mean_rank@10", "map"], by="system", baseline="long")
        # the same depth everywhere
        cut = log.filter(pl.col("score") > pl.col("score").max().over("system", "query") - 10)
        rke.compare(cut, ["frp", "mean_rank"], by="system", baseline="long")


def test_compare_per_query_reads_num_ret_for_the_depths() -> None:
    per_query = rke.evaluate(depth_log(), ["frp", "num_ret"], by="system", per_query=True)
    with pytest.warns(rke.DepthWarning, match="'short' 10, 'long' 100"):
        rke.compare_per_query(per_query, by="system", metrics=["frp"], baseline="long")


@pytest.mark.filterwarnings("default::polars_rankeval.errors.DepthWarning")
def test_cli_compare_warns_on_depths(capsys, tmp_path: Path) -> None:
    path = tmp_path / "log.parquet"
    depth_log().write_parquet(path)
    code = cli_main(["compare", str(path), "--by", "system", "-m", "frp,map"])
    captured = capsys.readouterr()
    assert code == 0
    assert "rank-eval: warning: 'frp' counts a relevant row" in captured.err
    assert "'short' 10, 'long' 100" in captured.err
    assert "__list_depth" not in captured.out


@pytest.mark.parametrize("direction", ["higher", "lower"])
def test_bootstrap_reports_the_overridden_direction(
    log: pl.DataFrame, train: pl.DataFrame, direction: str
) -> None:
    out = rke.bootstrap(
        log, ["arp@2"], by="system", train=train, n_resamples=20, direction={"arp@2": direction}
    )
    assert out["higher_is_better"].to_list() == [direction == "higher"] * 3
    with pytest.raises(rke.InvalidOptionError, match=r"direction= names \['gini@2'\]"):
        rke.bootstrap(log, ["arp@2"], by="system", train=train, direction={"gini@2": "lower"})


def test_check_warns_when_the_sides_differ_in_depth() -> None:
    log = depth_log()
    short = log.filter(pl.col("system") == "short").drop("system")
    long = log.filter(pl.col("system") == "long").drop("system")
    with pytest.warns(rke.DepthWarning, match="'candidate' 10, 'baseline' 100") as got:
        result = rke.check(short, long, "frp,map", fail_if_significant=True)
    assert got[0].filename == __file__
    assert result.table["metric"].to_list() == ["frp", "map"]  # the depth is no metric
    # a stored per-query baseline has no depths: nothing to compare, no warning, no error
    stored = rke.evaluate(long, ["frp", "map"], per_query=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", rke.DepthWarning)
        again = rke.check(short, stored, fail_if_significant=True)
    assert again.table["metric"].to_list() == ["frp", "map"]
