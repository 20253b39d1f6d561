"""``ties="optimistic"`` / ``"pessimistic"``: each metric's best and worst case over tie orders.

The reference is brute force: every order of every tie group of a list is written out as its
own list with distinct scores (so trec_eval's rule has nothing to break), evaluated under
``ties="trec"``, and the largest and smallest values per list are the expected bounds
(optimistic = best for the system: the largest value of a higher-is-better metric, the smallest
of a lower-is-better one). The published example is tie-aware-retrieval-metrics' README table
(Yang et al., ACL 2026); the package itself is checked live where it installs.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import polars_rankeval as rke
from polars_rankeval._names.registry import parse_metric
from polars_rankeval.cli import main as cli_main
from polars_rankeval.errors import InvalidOptionError
from tests.support.tie_orders import all_orders

# Every label-reading per-query metric whose value can depend on the order of tied rows.
BOUNDED = [
    "p@3",
    "recall@3",
    "success@2",
    "hits@3",
    "f1@3",
    "map",
    "map@3",
    "mrr",
    "mrr@3",
    "mar",
    "ndcg",
    "ndcg@3",
    "ndcg@3(gain=exp)",
    "dcg@4",
    "err@3",
    "frp",
    "mean_rank",
    "r_precision",
    "bpref",
    "infap",
    "rbp",
    "bing",
    "g",
    "ndcg_rel",
    "rndcg",
    "iprec_at_recall(level=0.5)",
    "11pt_avg",
    "relative_p@3",
    "rprec_mult",
    "fall_out@3",
    "mrr@3(tie_order=item_asc)",
    "set_p",
    "utility",
]


def _tied_log(seed: int, n_queries: int = 6) -> pl.DataFrame:
    """Short lists with tie groups of 1-3 rows; graded, negative and unjudged labels."""
    rng = np.random.default_rng(seed)
    rows: list[dict[str, object]] = []
    for q in range(n_queries):
        n = int(rng.integers(3, 8))
        scores = rng.integers(0, max(2, n // 2 + 1), size=n).astype(float)
        labels: list[int | None] = [
            None if rng.random() < 0.2 else int(rng.choice([-1, 0, 0, 1, 2, 3])) for _ in range(n)
        ]
        if q == 0:  # a list with nothing relevant
            labels = [0 if label is not None else None for label in labels]
        rows.extend(
            {"query": f"q{q}", "item": f"d{i}", "score": s, "relevance": lab}
            for i, (s, lab) in enumerate(zip(scores, labels, strict=True))
        )
        # a judged relevant row that was not retrieved
        rows.append({"query": f"q{q}", "item": "unret", "score": None, "relevance": 2})
    return pl.DataFrame(
        rows,
        schema={"query": pl.String, "item": pl.String, "score": pl.Float64, "relevance": pl.Int64},
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bounds_equal_brute_force_over_tie_orders(seed: int) -> None:
    log = _tied_log(seed)
    orders = all_orders(log)
    every = rke.evaluate(orders, BOUNDED, per_query=True).with_columns(
        pl.col("query").str.split("|").list.first()
    )
    best = {}
    worst = {}
    for name in BOUNDED:
        higher = parse_metric(name).direction == "higher"
        agg = every.group_by("query").agg(
            pl.col(name).max().alias("max"), pl.col(name).min().alias("min")
        )
        pairs = dict(zip(agg["query"], zip(agg["max"], agg["min"], strict=True), strict=True))
        best[name] = {q: (hi if higher else lo) for q, (hi, lo) in pairs.items()}
        worst[name] = {q: (lo if higher else hi) for q, (hi, lo) in pairs.items()}
    optimistic = rke.evaluate(log, BOUNDED, per_query=True, ties="optimistic")
    pessimistic = rke.evaluate(log, BOUNDED, per_query=True, ties="pessimistic")
    for name in BOUNDED:
        for row in optimistic.select("query", name).iter_rows():
            assert row[1] == pytest.approx(best[name][row[0]], abs=1e-12), (name, row)
        for row in pessimistic.select("query", name).iter_rows():
            assert row[1] == pytest.approx(worst[name][row[0]], abs=1e-12), (name, row)


def test_tie_aware_retrieval_metrics_readme_example() -> None:
    """TRM README: scores [0.99, 0.97, 0.97, 0.97, 0.95], relevant [F, T, F, T, F]."""
    log = pl.DataFrame(
        {
            "query": ["q"] * 5,
            "item": list("abcde"),
            "score": [0.99, 0.97, 0.97, 0.97, 0.95],
            "relevance": [0, 1, 0, 1, 0],
        }
    )
    names = [
        "ndcg@3",
        "ndcg@5",
        "mrr@3",
        "mrr@5",
        "recall@3",
        "recall@5",
        "map@3",
        "map@5",
        "p@3",
        "f1@3",
        "hits@3",
    ]
    # (E[M], M_max, M_min) from the README and the package's output for the same input
    published = {
        "ndcg@3": (0.4623, 0.6934, 0.3066),
        "ndcg@5": (0.6383, 0.6934, 0.5706),
        "mrr@3": (0.4444, 0.5000, 0.3333),
        "mrr@5": (0.4444, 0.5000, 0.3333),
        "recall@3": (0.6667, 1.0, 0.5),
        "recall@5": (1.0, 1.0, 1.0),
        "map@3": (0.3333, 0.5833, 0.1667),
        "map@5": (0.5, 0.5833, 0.4167),
        "p@3": (0.4444, 0.6667, 0.3333),
        "f1@3": (0.5333, 0.8, 0.4),
        "hits@3": (1.3333, 2.0, 1.0),
    }
    values = {
        mode: rke.evaluate(log, names, ties=mode).row(0, named=True)
        for mode in ("expected", "optimistic", "pessimistic")
    }
    for name, (mean, high, low) in published.items():
        assert values["expected"][name] == pytest.approx(mean, abs=5e-5), name
        assert values["optimistic"][name] == pytest.approx(high, abs=5e-5), name
        assert values["pessimistic"][name] == pytest.approx(low, abs=5e-5), name


_TRM_NAMES = {
    "ndcg": "ndcg",
    "mrr": "mrr",
    "map": "map",
    "recall": "recall",
    "precision": "p",
    "f1": "f1",
    "hits": "hits",
}


def test_live_against_tie_aware_retrieval_metrics() -> None:
    """Per query: E[M], M_max and M_min of the package equal expected/optimistic/pessimistic."""
    trm = pytest.importorskip("trm", reason="tie-aware-retrieval-metrics is not installed")
    rng = np.random.default_rng(7)
    rows = []
    for q in range(40):
        n = int(rng.integers(5, 25))
        scores = np.round(rng.random(n), 1)  # one decimal: many ties
        relevant = rng.random(n) < 0.3
        relevant[0] = True
        rows.extend(
            {"query": f"q{q:02d}", "item": f"d{i:02d}", "score": float(s), "relevance": int(r)}
            for i, (s, r) in enumerate(zip(scores, relevant, strict=True))
        )
    log = pl.DataFrame(rows)
    queries = log.partition_by("query", maintain_order=True)
    cutoffs = [1, 3, 5, 10, 20]
    result = trm.evaluate(
        [group["score"].to_list() for group in queries],
        [[bool(r) for r in group["relevance"]] for group in queries],
        metrics=list(_TRM_NAMES),
        k_list=cutoffs,
    )
    names = [f"{ours}@{k}" for ours in _TRM_NAMES.values() for k in cutoffs]
    ours = {
        mode: rke.evaluate(log, names, per_query=True, ties=mode)
        for mode in ("expected", "optimistic", "pessimistic")
    }
    checked = 0
    for theirs, our_name in _TRM_NAMES.items():
        for k in cutoffs:
            for index, cell in enumerate(result.per_query[theirs][k]):
                column = f"{our_name}@{k}"
                if theirs in {"precision", "f1"} and k > queries[index].height:
                    # TRM's best/worst precision and F1 divide by the list's length when it
                    # is shorter than k, its expectation (and trec_eval) by k: not comparable.
                    continue
                assert ours["expected"][column][index] == pytest.approx(cell.expected, abs=1e-9)
                assert ours["optimistic"][column][index] == pytest.approx(cell.maximum, abs=1e-9), (
                    column,
                    index,
                )
                assert ours["pessimistic"][column][index] == pytest.approx(cell.minimum, abs=1e-9)
                checked += 1
    assert checked > 0.9 * len(_TRM_NAMES) * len(cutoffs) * len(queries)


@pytest.mark.parametrize(
    ("metric", "reason"),
    [
        ("judged@3", "how much of the ranking is judged"),
        ("unj@3", "how much of the ranking is judged"),
        ("rbp_resid", "how much of the ranking is judged"),
        ("novelty@3", "reads no relevance label"),
    ],
)
def test_bounds_refused_where_no_best_case(metric: str, reason: str) -> None:
    log = _tied_log(0)
    # train= only where the metric reads it (a table no metric reads warns)
    train = log.select("query", "item") if metric.startswith("novelty") else None
    with pytest.raises(InvalidOptionError, match=reason):
        rke.evaluate(log, [metric], ties="optimistic", train=train)


def test_bounds_are_exact_without_ties() -> None:
    log = _tied_log(3).with_columns(
        pl.int_range(pl.len()).cast(pl.Float64).over("query").alias("score")
    )
    names = ["ndcg@3", "map", "mrr", "bpref"]
    trec = rke.evaluate(log, names, per_query=True)
    for mode in ("optimistic", "pessimistic"):
        assert rke.evaluate(log, names, per_query=True, ties=mode).equals(trec)


def test_bounds_stream_and_agree_lazily() -> None:
    log = _tied_log(4)
    eager = rke.evaluate(log, ["ndcg@3", "map"], ties="pessimistic", by=None)
    lazy = rke.evaluate(log.lazy(), ["ndcg@3", "map"], ties="pessimistic").collect()
    assert eager.equals(lazy)
    assert not math.isnan(eager.item(0, 0))


def _two_systems() -> pl.DataFrame:
    """System "coarse" rounds its scores to one decimal (ties); "fine" keeps them distinct."""
    rng = np.random.default_rng(11)
    rows = []
    for q in range(20):
        scores = rng.random(30)
        labels = (rng.random(30) < 0.3).astype(int)
        for system, values in (("coarse", np.round(scores, 1)), ("fine", scores)):
            rows.extend(
                {
                    "system": system,
                    "query": f"q{q}",
                    "item": f"d{i:02d}",
                    "score": float(s),
                    "relevance": int(r),
                }
                for i, (s, r) in enumerate(zip(values, labels, strict=True))
            )
    return pl.DataFrame(rows)


def _brute_tied_share(log: pl.DataFrame, k: int) -> dict[str, float]:
    """Mean over queries of the share of the top-k rows whose score another retrieved row has."""
    shares: dict[str, list[float]] = {}
    for (system, _query), rows in log.group_by("system", "query"):
        scores = sorted(rows["score"].to_list(), reverse=True)[:k]
        everything = rows["score"].to_list()
        tied = [everything.count(s) > 1 for s in scores]
        shares.setdefault(str(system), []).append(sum(tied) / len(tied))
    return {system: sum(v) / len(v) for system, v in shares.items()}


def test_tie_report_per_system() -> None:
    log = _two_systems()
    names = ["p@10", "ndcg@10", "map", "judged@10"]
    report = rke.tie_report(log, names, by="system")
    assert report.columns == [
        "metric",
        "system",
        "trec",
        "expected",
        "optimistic",
        "pessimistic",
        "range",
        "tied_share",
        "note",
    ]
    assert report.height == 8
    # one block of rows per metric, in the order asked (the shared long layout)
    assert report["metric"].to_list() == [name for name in names for _ in range(2)]
    for mode in ("trec", "expected", "optimistic", "pessimistic"):
        usable = [
            n for n in names if not (n == "judged@10" and mode in {"optimistic", "pessimistic"})
        ]
        direct = rke.evaluate(log, usable, by="system", ties=mode)
        for row in direct.iter_rows(named=True):
            for name in usable:
                cell = report.filter(
                    (pl.col("system") == row["system"]) & (pl.col("metric") == name)
                )[mode].item()
                assert cell == pytest.approx(row[name], abs=1e-12), (mode, name)
    fine = report.filter(pl.col("system") == "fine")
    assert fine["range"].drop_nulls().to_list() == [0.0, 0.0, 0.0]
    assert fine["tied_share"].to_list() == [0.0] * 4
    shares = _brute_tied_share(log, 10)
    coarse = report.filter((pl.col("system") == "coarse") & (pl.col("metric") == "p@10"))
    assert coarse["tied_share"].item() == pytest.approx(shares["coarse"], abs=1e-12)
    assert report.filter(pl.col("metric") == "judged@10")["optimistic"].null_count() == 2
    assert "judged" in report.filter(pl.col("metric") == "judged@10")["note"][0]


def test_tie_report_per_query_and_lazy() -> None:
    log = _two_systems()
    eager = rke.tie_report(log, ["p@5"], by="system", per_query=True)
    lazy = rke.tie_report(log.lazy(), ["p@5"], by="system", per_query=True)
    assert eager.equals(lazy)
    assert eager.height == 40
    assert eager.columns[:3] == ["metric", "system", "query"]


def test_evaluate_warns_when_ties_move_a_mean() -> None:
    log = _two_systems()
    with pytest.warns(rke.TieWarning, match=r"p@10 by up to 0\.\d+ \(system='coarse'\)") as record:
        rke.evaluate(log, ["p@10", "ndcg@10"], by="system")
    assert len(record) == 1
    assert "'fine'" not in str(record[0].message)
    moved = rke.tie_report(log, ["p@10"], by="system").filter(pl.col("system") == "coarse")
    shown = float(str(record[0].message).split("p@10 by up to ")[1].split()[0])
    assert shown == pytest.approx(moved["range"].item(), abs=1e-4)


@pytest.mark.filterwarnings("error::polars_rankeval.TieWarning")
def test_no_tie_warning_when_off_small_or_tie_free() -> None:
    log = _two_systems()
    rke.evaluate(log, ["p@10"], by="system", tie_warning=None)
    rke.evaluate(log, ["p@10"], by="system", tie_warning=1.0)
    rke.evaluate(log.lazy(), ["p@10"], by="system", tie_warning=None).collect()
    rke.evaluate(log.filter(pl.col("system") == "fine"), ["p@10", "map"])
    rke.evaluate(log.filter(pl.col("system") == "fine").lazy(), ["p@10", "map"]).collect()
    rke.evaluate(log, ["p@10"], by="system", ties="expected")
    rke.evaluate(log, ["p@10"], by="system", per_query=True, tie_warning=None)


def test_tie_warning_option_is_checked() -> None:
    with pytest.raises(InvalidOptionError, match="tie_warning="):
        rke.evaluate(_two_systems(), ["p@10"], tie_warning=-1)


def test_cli_tie_report(tmp_path: Path) -> None:
    log = _two_systems()
    path = tmp_path / "log.parquet"
    log.write_parquet(path)
    out = tmp_path / "ties.csv"
    code = cli_main([str(path), "--by", "system", "-m", "p@10,map", "--tie-report", "-o", str(out)])
    assert code == 0
    printed = pl.read_csv(out)
    expected = rke.tie_report(log, ["p@10", "map"], by="system")
    assert printed.select("system", "metric").rows() == expected.select("system", "metric").rows()
    assert printed["range"].to_list() == pytest.approx(expected["range"].to_list(), abs=1e-12)
    assert cli_main([str(path), "--tie-report", "-f", "trec"]) == 2
    assert cli_main([str(path), "--tie-report", "--ties", "expected"]) == 2


@pytest.mark.filterwarnings("default::polars_rankeval.errors.TieWarning")
def test_cli_warns_about_ties_in_a_trec_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run.txt"
    qrels = tmp_path / "qrels.txt"
    log = _two_systems().filter(pl.col("system") == "coarse")
    run.write_text(
        "".join(
            f"{q} Q0 {d} 0 {s} tag\n"
            for q, d, s in log.select("query", "item", "score").iter_rows()
        )
    )
    qrels.write_text(
        "".join(
            f"{q} 0 {d} {r}\n" for q, d, r in log.select("query", "item", "relevance").iter_rows()
        )
    )
    assert cli_main([str(run), "--qrels", str(qrels), "-m", "p@10,ndcg@10"]) == 0
    warned = capsys.readouterr().err
    assert "tied scores" in warned
    assert "p@10 by up to" in warned
    assert "--tie-report" in warned
    # --tie-warning off turns the check off (0 warns on any movement, as tie_warning=0)
    assert cli_main([str(run), "--qrels", str(qrels), "-m", "p@10", "--tie-warning", "off"]) == 0
    assert "tied scores" not in capsys.readouterr().err


@pytest.mark.filterwarnings("error::polars_rankeval.TieWarning")
def test_tie_flag_ignores_unretrieved_rows_and_sees_signed_zeros() -> None:
    """Two unretrieved (null-score) rows are no tie; -0.0 and 0.0 are one."""
    log = pl.DataFrame(
        {
            "query": ["q"] * 5,
            "item": ["a", "b", "c", "d", "e"],
            "score": [3.0, 2.0, 1.0, None, None],
            "relevance": [0, 1, 0, 1, 1],
        }
    )
    rke.evaluate(log, ["p@2", "map"])  # no warning
    zeros = log.with_columns(pl.Series("score", [3.0, -0.0, 0.0, None, None]))
    with pytest.warns(rke.TieWarning, match="p@2"):
        rke.evaluate(zeros, ["p@2"])
