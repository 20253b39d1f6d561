"""The tie check where the parts meet: tie_report's spellings, evaluate's warning on every path.

Expected values come from plain-Python brute force over the rows (which positions of the top k
sit in a group of equal scores; every order of each tie group), never from the package.
"""

from __future__ import annotations

import itertools
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest
from polars.io.plugins import register_io_source

import polars_rankeval as rke
from polars_rankeval._engine.columns import make_columns
from polars_rankeval._engine.tie_bounds import mixed_lists
from polars_rankeval.cli import main as cli_main
from polars_rankeval.errors import InvalidOptionError


def _tail_tied_log() -> pl.DataFrame:
    """Two systems, 6 queries of 40 rows: distinct scores at the top, one big tie below.

    The share of tied positions over the whole list (about 0.8) is far from the share in the
    top 5 or 10 (0.0 to 0.4), so a report that reads the wrong cutoff shows.
    """
    rows = []
    for system, top in (("a", 8), ("b", 4)):
        for q in range(6):
            for i in range(40):
                score = float(100 - i) if i < top else 1.0  # rows below `top` all tie
                rows.append(
                    {
                        "system": system,
                        "query": f"q{q}",
                        "item": f"d{i:02d}",
                        "score": score,
                        "relevance": int((i * 7 + q) % 5 == 0),
                    }
                )
    return pl.DataFrame(rows)


def _brute_tied_share(log: pl.DataFrame, k: int | None) -> dict[str, float]:
    """Mean over queries of the share of the top-k positions whose score another row has."""
    shares: dict[str, list[float]] = {}
    for (system, _query), rows in log.group_by("system", "query"):
        scores = rows["score"].to_list()
        top = sorted(scores, reverse=True)[: k or len(scores)]
        shares.setdefault(str(system), []).append(sum(scores.count(s) > 1 for s in top) / len(top))
    return {system: sum(v) / len(v) for system, v in shares.items()}


@pytest.mark.parametrize(
    ("spelling", "k"),
    [("P_10", 10), ("p@10", 10), ("ndcg_cut_10", 10), ("P_5", 5), ("map", None), ("rbp", None)],
)
def test_tied_share_reads_the_cutoff_whatever_the_spelling(spelling: str, k: int | None) -> None:
    log = _tail_tied_log()
    report = rke.tie_report(log, [spelling], by="system")
    expected = _brute_tied_share(log, k)
    for system, share in report.select("system", "tied_share").iter_rows():
        assert share == pytest.approx(expected[system], abs=1e-12), (spelling, system)


def test_tie_report_takes_two_spellings_of_one_metric() -> None:
    log = _tail_tied_log()
    report = rke.tie_report(log, ["P_10", "p@10", "mrr"], by="system")
    assert report.filter(pl.col("system") == "a")["metric"].to_list() == ["P_10", "p@10", "mrr"]
    trec = report.filter(pl.col("metric") == "P_10").drop("metric")
    assert trec.equals(report.filter(pl.col("metric") == "p@10").drop("metric"))
    assert trec["range"].to_list() != [0.0, 0.0]  # ties in the top 10 of system "b"


def test_tie_report_names_a_real_repeat_as_given() -> None:
    with pytest.raises(InvalidOptionError, match=r"repeat in the list: \['p@10'\]") as caught:
        rke.tie_report(_tail_tied_log(), ["p@10", "mrr", "p@10"], by="system")
    assert "\x1f" not in str(caught.value)


def _one_tie_at_the_top(queries: int) -> pl.DataFrame:
    """``queries`` lists; only the first has a tie at rank 1 between a relevant and a non-relevant
    row, so p@1 is 1 or 0 with the order there: the mean moves by exactly 1 / queries."""
    rows = []
    for q in range(queries):
        scores = [2.0, 2.0, 1.0] if q == 0 else [3.0, 2.0, 1.0]
        rows.extend(
            {"query": f"q{q}", "item": item, "score": score, "relevance": label}
            for item, score, label in zip("abc", scores, (1, 0, 0), strict=True)
        )
    return pl.DataFrame(rows)


@pytest.mark.parametrize("queries", [1, 2, 4])
def test_tie_warning_is_strictly_above_the_limit(queries: int) -> None:
    """A mean that moves by exactly tie_warning is not warned about; a hair less warns."""
    log = _one_tie_at_the_top(queries)
    moved = 1.0 / queries  # brute force: p@1 is 1 (relevant first) or 0, on one list of n
    with warnings.catch_warnings():
        warnings.simplefilter("error", rke.TieWarning)
        rke.evaluate(log, ["p@1"], tie_warning=moved)
        rke.evaluate(log.lazy(), ["p@1"], tie_warning=moved).collect()
    with pytest.warns(rke.TieWarning, match=rf"p@1 by up to {moved:.4f}"):
        rke.evaluate(log, ["p@1"], tie_warning=moved * (1 - 1e-9))


# ---- evaluate's tie check: every path, one read, only lists whose tie groups mix labels ----


def _orders(rows: list[tuple[float, int | None]]) -> list[list[tuple[float, int | None]]]:
    """Every order of ``(score, label)`` rows consistent with the scores (ties permuted)."""
    groups: dict[float, list[tuple[float, int | None]]] = {}
    for row in rows:
        groups.setdefault(row[0] + 0.0, []).append(row)
    found: list[list[tuple[float, int | None]]] = [[]]
    for score in sorted(groups, reverse=True):
        found = [done + list(p) for done in found for p in itertools.permutations(groups[score])]
    return found


def _precision(order: list[tuple[float, int | None]], k: int) -> float:
    return sum(1 for _, label in order[:k] if (label or 0) >= 1) / k


def _reciprocal_rank(order: list[tuple[float, int | None]]) -> float:
    return next((1 / i for i, (_, label) in enumerate(order, 1) if (label or 0) >= 1), 0.0)


def _brute_moves(log: pl.DataFrame, by: str) -> dict[tuple[str, str], float]:
    """(system, metric) -> mean over its lists of (best - worst over every tie order)."""
    spans: dict[tuple[str, str], list[float]] = {}
    for (system, _query), rows in log.group_by(by, "query"):
        orders = _orders(list(rows.select("score", "relevance").iter_rows()))
        for name, value in (("p@3", lambda o: _precision(o, 3)), ("mrr", _reciprocal_rank)):
            values = [value(order) for order in orders]
            spans.setdefault((str(system), name), []).append(max(values) - min(values))
    return {key: sum(v) / len(v) for key, v in spans.items()}


def _small_tied_log() -> pl.DataFrame:
    """Three systems over 6 queries of 6 rows: "mixed" ties relevant and non-relevant rows,
    "same" ties only rows of equal label, "none" has no ties."""
    labels = [[1, 0, 0, 1, 0, 0], [0, 0, 1, 0, 1, 0], [1, 1, 0, 0, 0, 0]] * 2
    rows = []
    for q, row_labels in enumerate(labels):
        for i, label in enumerate(row_labels):
            scores = {
                "mixed": float(3 - i // 2),  # pairs (0,1), (2,3), (4,5) tie
                "same": float(6 - i) if row_labels[i] != row_labels[i ^ 1] else float(3 - i // 2),
                "none": float(6 - i),
            }
            rows.extend(
                {"system": s, "query": f"q{q}", "item": f"d{i}", "score": v, "relevance": label}
                for s, v in scores.items()
            )
    return pl.DataFrame(rows)


def _shown(message: str, metric: str, system: str) -> float:
    part = message.split(f"{metric} by up to ")[1]
    assert part.split(" (", 1)[1].startswith(f"system='{system}'")
    return float(part.split()[0])


def _paths(log: pl.DataFrame) -> dict[str, object]:
    """The ways a user runs the same evaluation; each returns its result (collected)."""
    keywords = {"by": "system", "tie_warning": 0.0}
    return {
        "DataFrame": lambda: rke.evaluate(log, ["p@3", "mrr"], **keywords),
        "LazyFrame": lambda: rke.evaluate(log.lazy(), ["p@3", "mrr"], **keywords).collect(),
        "namespace": lambda: log.lazy().rank_eval.evaluate(["p@3", "mrr"], **keywords).collect(),
        "per_query": lambda: rke.evaluate(log, ["p@3", "mrr"], per_query=True, **keywords),
        "rescan passes": lambda: rke.evaluate(
            log.lazy(), ["p@3", "mrr"], n_buckets=2, **keywords
        ).collect(),
        "spilled passes": lambda: rke.evaluate(log, ["p@3", "mrr"], n_buckets=5, **keywords),
        "finished per query": lambda: rke.evaluate(
            log.lazy(), ["p@3", "mrr", "num_q"], empty_queries="drop", **keywords
        ).collect(),
    }


@pytest.mark.parametrize(
    "path",
    [
        "DataFrame",
        "LazyFrame",
        "namespace",
        "per_query",
        "rescan passes",
        "spilled passes",
        "finished per query",
    ],
)
def test_every_path_warns_with_the_brute_force_range(path: str) -> None:
    log = _small_tied_log()
    expected = _brute_moves(log, "system")
    assert expected[("mixed", "mrr")] > 0
    assert expected[("same", "mrr")] == expected[("none", "p@3")] == 0
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        _paths(log)[path]()  # type: ignore[operator]
    tied = [w for w in record if issubclass(w.category, rke.TieWarning)]
    assert len(tied) == 1, [str(w.message) for w in record]
    message = str(tied[0].message)
    for metric in ("p@3", "mrr"):
        assert _shown(message, metric, "mixed") == pytest.approx(
            expected[("mixed", metric)], abs=5e-5
        )
    assert "'same'" not in message
    assert "'none'" not in message
    # the warning points at this file (the user's line), not at the package or Polars
    assert tied[0].filename == __file__


def test_lazy_warning_points_at_the_line_that_called_evaluate() -> None:
    log = _small_tied_log()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        lazy = rke.evaluate(log.lazy(), ["mrr"], by="system")  # the line warned about
        line = lazy_line = sys._getframe().f_lineno - 1
        lazy.collect()
    assert [(w.filename, w.lineno) for w in record] == [(__file__, lazy_line)]
    assert line == lazy_line


def _counting_source(log: pl.DataFrame, reads: list[int]) -> pl.LazyFrame:
    """A LazyFrame whose every read of the input is counted."""

    def source(
        with_columns: list[str] | None,
        predicate: pl.Expr | None,
        n_rows: int | None,
        batch_size: int | None,
    ) -> Iterator[pl.DataFrame]:
        reads.append(1)
        frame = log if with_columns is None else log.select(with_columns)
        if predicate is not None:
            frame = frame.filter(predicate)
        yield frame if n_rows is None else frame.head(n_rows)

    return register_io_source(source, schema=log.schema)


def test_the_lazy_check_reads_the_input_once() -> None:
    log = _small_tied_log()
    reads: list[int] = []
    with pytest.warns(rke.TieWarning, match="mrr by up to"):
        rke.evaluate(_counting_source(log, reads), ["mrr", "p@3"], by="system").collect()
    assert len(reads) == 1


@pytest.mark.filterwarnings("error::polars_rankeval.TieWarning")
def test_ties_of_equal_labels_are_no_warning() -> None:
    """Tie groups whose rows share a label cannot move a metric: no warning, even at 0."""
    log = _small_tied_log().filter(pl.col("system") != "mixed")
    rke.evaluate(log, ["p@3", "mrr", "map", "ndcg@3"], by="system", tie_warning=0.0)
    rke.evaluate(log.lazy(), ["p@3", "mrr"], by="system", tie_warning=0.0).collect()


def _brute_mixed(rows: list[tuple[float | None, int | None]]) -> bool:
    """Some group of tied retrieved scores holds rows that the bounds would order apart:
    positive labels by size, unjudged (null or negative) rows, judged zeros."""

    def preference(label: int | None) -> float:
        return 0.5 if label is None or label < 0 else float(max(label, 0))

    groups: dict[float, set[float]] = {}
    for score, label in rows:
        if score is not None:
            groups.setdefault(score + 0.0, set()).add(preference(label))
    return any(len(kinds) > 1 for kinds in groups.values())


def test_only_lists_whose_tie_groups_mix_labels_are_bounded() -> None:
    """The selection rule against brute force on every small case of scores and labels."""
    scores = [None, -0.0, 0.0, 1.0]
    labels = [None, -1, 0, 1, 2]
    rows = []
    cases = list(itertools.product(itertools.product(scores, labels), repeat=2))
    for index, case in enumerate(cases):
        rows.extend(
            {"query": f"q{index}", "item": f"d{i}", "score": s, "relevance": r}
            for i, (s, r) in enumerate(((3.0, 1), *case))
        )
    log = pl.DataFrame(rows, schema_overrides={"score": pl.Float64, "relevance": pl.Int64})
    columns = make_columns(
        query="query", item="item", score="score", relevance="relevance", by=None
    )
    flagged = set(mixed_lists(log.lazy(), columns, "unjudged").collect()["query"].to_list())
    expected = [_brute_mixed([(3.0, 1), *case]) for case in cases]
    assert [f"q{index}" in flagged for index in range(len(cases))] == expected
    assert 0 < sum(expected) < len(expected)


def test_a_tie_of_an_unjudged_row_and_a_judged_zero_can_move_fall_out() -> None:
    """Both rows have gain 0, yet their order moves fall_out@1: such a group counts as mixed.

    By hand: two judged non-relevant rows (b, d); fall_out@1 is 1/2 with b first, 0 with a.
    """
    log = pl.DataFrame(
        {
            "query": ["q"] * 4,
            "item": ["a", "b", "c", "d"],
            "score": [2.0, 2.0, 1.0, 0.0],
            "relevance": [None, 0, 1, 0],
        }
    )
    with pytest.warns(rke.TieWarning, match=r"fall_out@1 by up to 0\.5000"):
        rke.evaluate(log, ["fall_out@1"])
    with pytest.warns(rke.TieWarning, match=r"fall_out@1 by up to 0\.5000"):
        rke.evaluate(log.lazy(), ["fall_out@1"]).collect()


# ---- compare, check and the report say where a verdict could flip with the tie order ----


def test_compare_gives_each_delta_its_tie_range() -> None:
    log = _small_tied_log()
    expected = _brute_moves(log, "system")
    for baseline in ("mixed", "none"):
        compared = rke.compare(log, ["p@3", "mrr", "gm_map"], by="system", baseline=baseline)
        for row in compared.iter_rows(named=True):
            if row["metric"] == "gm_map":  # a geometric mean: no bounds, no range
                assert row["tie_range"] is None
                assert row["tie_flip"] is None
                continue
            # Δ = mean over the paired queries of system - baseline: both sides move
            metric = row["metric"]
            moved = expected[(row["system"], metric)] + expected[(baseline, metric)]
            assert row["tie_range"] == pytest.approx(moved, abs=1e-12), row
            nearer = min(abs(row["ci_low"]), abs(row["ci_high"]))
            reach = min(abs(row["delta"]), nearer) <= moved
            differ = row["wins"] + row["losses"] > 0
            assert row["tie_flip"] == (moved > 0 and differ and reach)
    out = rke.compare(log, ["p@3", "mrr", "gm_map"], by="system", baseline="none")
    mixed = out.filter((pl.col("system") == "mixed") & (pl.col("metric") == "mrr"))
    assert mixed["tie_flip"].item() is True
    same = out.filter(pl.col("system") == "same").drop_nulls("tie_range")
    assert same["tie_range"].to_list() == [0.0, 0.0]
    assert not same["tie_flip"].any()
    assert "tied scores could change" in rke.report(out)
    assert "mrr (mixed vs none)" in rke.report(out)
    quiet = rke.compare(log.filter(pl.col("system") != "mixed"), ["mrr"], by="system")
    assert "tied scores" not in rke.report(quiet)
    off = rke.compare(log, ["mrr"], by="system", tie_warning=None)
    assert off["tie_range"].null_count() == off.height


def test_check_notes_where_the_tie_order_could_flip_a_verdict() -> None:
    log = _small_tied_log()
    expected = _brute_moves(log, "system")
    candidate = log.filter(pl.col("system") == "mixed").drop("system")
    baseline = log.filter(pl.col("system") == "none").drop("system")
    result = rke.check(candidate, baseline, ["mrr", "p@3"], fail_if="mrr < -1")
    assert result.passed  # a note breaks no rule
    for row in result.table.iter_rows(named=True):
        assert row["tie_range"] == pytest.approx(expected[("mixed", row["metric"])], abs=1e-12)
    flipped = result.table.filter(pl.col("tie_flip"))["metric"].to_list()
    assert "mrr" in flipped
    assert any(note.startswith("tie order: mrr:") for note in result.notes)
    assert "- note: tie order: mrr:" in result.text()
    assert "note: tie order: mrr:" in result.markdown()
    assert result.to_dict()["notes"] == result.notes
    # a per-query table has no ties to bound: no range
    table = rke.evaluate(baseline, ["mrr"], per_query=True)
    same = rke.check(table, table, fail_if="mrr < -1")
    assert same.table["tie_range"].to_list() == [None]
    assert same.notes == []


def test_compare_warns_where_a_verdict_could_flip() -> None:
    log = _small_tied_log()
    with pytest.warns(rke.TieWarning, match=r"tie order: mrr \(mixed vs none\)") as record:
        rke.compare(log, ["mrr"], by="system", baseline="none")
    assert record[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error", rke.TieWarning)
        rke.compare(log.filter(pl.col("system") != "mixed"), ["mrr"], by="system")


def test_cli_tie_report_reads_the_cutoff_of_trec_spellings(tmp_path: Path) -> None:
    log = _tail_tied_log()
    path = tmp_path / "log.parquet"
    log.write_parquet(path)
    out = tmp_path / "ties.csv"
    arguments = [str(path), "--by", "system", "-m", "P_10,ndcg_cut_10,P_5", "--tie-report"]
    assert cli_main([*arguments, "-o", str(out)]) == 0
    printed = pl.read_csv(out)
    for metric, k in (("P_10", 10), ("ndcg_cut_10", 10), ("P_5", 5)):
        expected = _brute_tied_share(log, k)
        rows = printed.filter(pl.col("metric") == metric)
        for system, share in rows.select("system", "tied_share").iter_rows():
            assert share == pytest.approx(expected[system], abs=1e-12), (metric, system)


def test_a_run_gated_against_itself_gets_no_tie_note() -> None:
    """Both sides rank alike and break their ties alike: no comparison can flip."""
    run = _small_tied_log().filter(pl.col("system") == "mixed").drop("system")
    result = rke.check(run, run, ["mrr", "p@3"], fail_if="mrr < -0.01")
    assert result.passed
    assert result.table["tie_range"].to_list()[0] > 0
    assert result.notes == []
    assert not result.table["tie_flip"].any()
