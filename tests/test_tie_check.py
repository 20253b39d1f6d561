"""The tie check where the parts meet: tie_report's spellings, evaluate's warning on every path.

Expected values come from plain-Python brute force over the rows (which positions of the top k
sit in a group of equal scores; every order of each tie group), never from the package.
"""

from __future__ import annotations

import warnings

import polars as pl
import pytest

import polars_rankeval as rke
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
