"""``rank-eval compare``'s compact table and ``--within``.

Every number of the table is checked against scipy/statsmodels/numpy on the per-query values
(not against our comparison frame), the verdict against the metric's declared direction on a
log built so that the answer is known, and the layout against the 100-column limit.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_rankeval as rke
from polars_rankeval.cli import main as cli_main
from polars_rankeval.cli._compact import compact

stats = pytest.importorskip("scipy.stats")
multitest = pytest.importorskip("statsmodels.stats.multitest")

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "sample.parquet"


def run_compare(capsys, *args: object) -> tuple[int, str, str]:
    code = cli_main(["compare", *(str(arg) for arg in args)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def parse(out: str) -> dict[tuple[str, str], list[str]]:
    """``{(block title, metric): cells}``: the blocks of the table, split on 2+ spaces."""
    rows: dict[tuple[str, str], list[str]] = {}
    title = ""
    lines = out.splitlines()
    for before, line in zip(["", *lines], lines, strict=False):
        if line.startswith("metric "):
            title = before
        elif title and line.strip():
            cells = re.split(r"\s{2,}", line.strip())
            rows[(title, cells[0])] = cells
        else:
            title = ""
    return rows


def number(text: str) -> float:
    return float(text.lstrip("<"))


@pytest.fixture(scope="module")
def sample_per_query() -> pl.DataFrame:
    log = pl.read_parquet(SAMPLE)
    return rke.evaluate(log, ["ndcg@10", "map", "frp"], by="system", per_query=True)


def test_every_number_against_scipy(capsys, sample_per_query):
    code, out, err = run_compare(
        capsys, SAMPLE, "--by", "system", "--baseline", "bm25", "-m", "ndcg@10,map,frp"
    )
    assert code == 0, err
    rows = parse(out)
    title = "neural vs bm25 (baseline), 2997–3000 paired queries"
    assert {key[0] for key in rows} == {title}
    wide = {
        metric: sample_per_query.pivot(on="system", index="query", values=metric)
        .select("bm25", "neural")
        .drop_nulls()
        for metric in ["ndcg@10", "map", "frp"]
    }
    raw = {m: stats.ttest_rel(w["neural"], w["bm25"]).pvalue for m, w in wide.items()}
    holm = dict(
        zip(raw, multitest.multipletests(list(raw.values()), method="holm")[1], strict=True)
    )
    for metric, label in [("ndcg@10", "ndcg@10"), ("map", "map"), ("frp", "frp ↓")]:
        cells = rows[(title, label)]
        x, y = wide[metric]["bm25"].to_numpy(), wide[metric]["neural"].to_numpy()
        d = y - x
        half = stats.t.ppf(0.975, d.size - 1) * d.std(ddof=1) / np.sqrt(d.size)
        delta, interval = cells[3].split(" ", 1)
        low, high = (float(v) for v in interval.strip("[]").split(", "))
        for shown, expected in [
            (float(cells[1]), x.mean()),
            (float(cells[2]), y.mean()),
            (float(delta), d.mean()),
            (low, d.mean() - half),
            (high, d.mean() + half),
        ]:
            assert shown == pytest.approx(expected, abs=0.5e-4 + 1e-12)
        assert cells[4] == "<0.0001"
        assert holm[metric] < 1e-4
        assert float(cells[5]) == pytest.approx(d.mean() / d.std(ddof=1), abs=0.005 + 1e-12)
        # wins: the system is better by the metric's direction (frp: a smaller value)
        better = -d if metric == "frp" else d
        assert cells[6] == f"{(better > 0).sum()}/{(d == 0).sum()}/{(better < 0).sum()}"
        assert cells[7] == "better"
    assert "frp ↓" in out
    assert "↓ lower is better" in out.replace("\n", " ")
    assert "Holm-adjusted over 3 comparisons" in out.replace("\n", " ")


def _ranked_log(good: str, bad: str, queries: int = 12) -> pl.DataFrame:
    """Each query: ``good`` ranks its relevant item 1st, ``bad`` 3rd (ties in 2 queries)."""
    rows = []
    for q in range(queries):
        for system in (good, bad):
            position = 1 if (system == good or q < 2) else 3
            for rank in range(1, 5):
                relevant = rank == position
                rows.append((system, f"q{q}", f"d{q}-{rank}", 10.0 - rank, int(relevant)))
    return pl.DataFrame(
        rows, schema=["system", "query", "item", "score", "relevance"], orient="row"
    )


@pytest.mark.parametrize(("baseline", "verdict"), [("b", "better"), ("a", "worse")])
def test_the_verdict_reads_the_direction(capsys, tmp_path, baseline, verdict):
    path = tmp_path / "log.parquet"
    _ranked_log("a", "b").write_parquet(path)
    args = [path, "--by", "system", "--baseline", baseline, "-m", "frp,mrr"]
    code, out, err = run_compare(capsys, *args)
    assert code == 0, err
    rows = {metric: cells for (_, metric), cells in parse(out).items()}
    # frp (rank of the first relevant item: lower is better) and mrr move opposite ways, and
    # both verdicts agree: 10 queries where a ranks it 1st and b 3rd, 2 ties.
    frp, mrr = rows["frp ↓"], rows["mrr"]
    assert (frp[7], mrr[7]) == (verdict, verdict)
    expected = (-2.0 if verdict == "better" else 2.0) * 10 / 12
    assert float(frp[3].split()[0]) == pytest.approx(expected, abs=0.5e-4)
    assert frp[6] == mrr[6] == ("10/2/0" if verdict == "better" else "0/2/10")


def test_not_significant_and_no_correction(capsys, tmp_path):
    path = tmp_path / "log.parquet"
    log = _ranked_log("a", "b", queries=3)  # 1 query differs of 3
    log.write_parquet(path)
    args = [path, "--by", "system", "--baseline", "b", "-m", "mrr", "--correction", "none"]
    code, out, err = run_compare(capsys, *args)
    assert code == 0, err
    (cells,) = parse(out).values()
    d = np.array([0.0, 0.0, 1 - 1 / 3])
    assert cells[-1] == "n.s."
    assert float(cells[4]) == pytest.approx(stats.ttest_1samp(d, 0).pvalue, abs=0.5e-4)
    header = next(line for line in out.splitlines() if line.startswith("metric"))
    assert re.split(r"\s{2,}", header)[4] == "p"
    assert "adjusted" not in out


def test_every_line_fits_100_columns_and_long_names_are_cut(capsys, tmp_path):
    log = pl.read_parquet(SAMPLE).with_columns(
        pl.col("system").replace({"bm25": "bm25-" + "x" * 30, "neural": "neural-" + "y" * 30})
    )
    path = tmp_path / "long.parquet"
    log.write_parquet(path)
    code, out, err = run_compare(capsys, path, "--by", "system")
    assert code == 0, err
    assert max(len(line) for line in out.splitlines()) <= 100
    header = next(line for line in out.splitlines() if line.startswith("metric"))
    assert "…" in header
    assert "neural-" + "y" * 30 in out  # whole in the block's title
    rows = parse(out)
    assert len(rows) == 5  # the default metrics


def test_within_on_the_command_line(capsys, tmp_path):
    log = pl.read_parquet(SAMPLE).with_columns(
        activity=pl.when(pl.col("query") < "q1000").then(pl.lit("heavy")).otherwise(pl.lit("light"))
    )
    path = tmp_path / "segments.parquet"
    log.write_parquet(path)
    args = [path, "--by", "system", "--within", "activity", "--baseline", "bm25", "-m", "map"]
    expected = rke.compare(log, ["map"], by="system", within="activity", baseline="bm25")
    code, out, err = run_compare(capsys, *args, "-f", "csv")
    assert code == 0, err
    assert_frame_equal(pl.read_csv(io.StringIO(out)), expected)
    code, out, err = run_compare(capsys, *args)
    assert code == 0, err
    assert out == compact(expected)
    titles = [line for line in out.splitlines() if line.startswith("activity=")]
    assert titles == [
        "activity=heavy: neural vs bm25 (baseline), 1000 paired queries",
        "activity=light: neural vs bm25 (baseline), 2000 paired queries",
    ]
    # Holm over both segments' comparisons
    assert "Holm-adjusted over 2 comparisons" in out.replace("\n", " ")


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--within", "activty"], "--within 'activty' is not a column of"),
        (["--within", "system"], "--within 'system' is --by"),
        (["--within", "query"], "--within 'query' is the query column"),
    ],
)
def test_within_refusals(capsys, args, fragment):
    code, out, err = run_compare(capsys, SAMPLE, "--by", "system", *args)
    assert (code, out) == (2, "")
    assert len(err.splitlines()) == 1
    assert fragment in err


def test_within_refused_for_trec_runs(capsys):
    data = ROOT / "tests" / "data"
    run = data / "results.test"
    code, _, err = run_compare(
        capsys, run, run, "--qrels", data / "qrels.test", "--within", "topic"
    )
    assert code == 2
    assert "TREC runs have no segment columns" in err


def test_the_paper_report_stays_behind_format(capsys):
    code, out, _ = run_compare(capsys, SAMPLE, "--by", "system", "-m", "map", "-f", "markdown")
    assert code == 0
    assert out.startswith("| system | map |")
