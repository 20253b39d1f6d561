"""rke.label_agreement: Cohen's κ (sklearn, statsmodels live), Krippendorff's α (krippendorff
live, published example, coincidence-matrix brute force), Jaccard and one-sided counts (sets)."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import polars as pl
import pytest

import polars_rankeval as rke
from polars_rankeval.cli._agreement import _run_agreement
from polars_rankeval.cli._errors import CliError
from polars_rankeval.errors import (
    ColumnNotFoundError,
    ColumnTypeError,
    ColumnValueError,
    DuplicateItemError,
)


def _qrels(seed, *, queries=6, items=30, share=0.8):
    """Two judges: the second copies the first's grade 0..3 most of the time."""
    rng = np.random.default_rng(seed)
    rows_a, rows_b = [], []
    for q in range(queries):
        for i in range(int(rng.integers(3, items))):
            grade = int(rng.integers(0, 4))
            other = grade if rng.random() < 0.6 else int(rng.integers(0, 4))
            if rng.random() < share or q == 0:
                rows_a.append((f"q{q}", f"d{i}", grade))
            if rng.random() < share or q == 0:
                rows_b.append((f"q{q}", f"d{i}", other))
    rows_b.append(("q_only_b", "d0", 1))  # a query one judge never saw
    schema = {"query": pl.String, "item": pl.String, "relevance": pl.Int64}
    return (
        pl.DataFrame(rows_a, schema=schema, orient="row"),
        pl.DataFrame(rows_b, schema=schema, orient="row"),
    )


def _pairs(a, b):
    return a.join(b, on=["query", "item"], suffix="_b")


def _krippendorff_brute(x, y, level):
    """Krippendorff (2011), "Computing Krippendorff's alpha-reliability": coincidences by hand."""
    values = sorted(set(x) | set(y))
    index = {v: k for k, v in enumerate(values)}
    size = len(values)
    coincidence = np.zeros((size, size))
    for first, second in zip(x, y, strict=True):  # m_u = 2: each pair both ways, weight 1
        coincidence[index[first], index[second]] += 1
        coincidence[index[second], index[first]] += 1
    n_c = coincidence.sum(axis=1)
    n = n_c.sum()

    def delta(c, k):
        if level == "nominal":
            return 0.0 if c == k else 1.0
        low, high = min(c, k), max(c, k)
        return (sum(n_c[g] for g in range(low, high + 1)) - (n_c[c] + n_c[k]) / 2) ** 2

    observed = sum(coincidence[c, k] * delta(c, k) for c in range(size) for k in range(size))
    expected = sum(n_c[c] * n_c[k] * delta(c, k) for c in range(size) for k in range(size))
    return math.nan if expected == 0 else 1 - (n - 1) * observed / expected


def test_krippendorff_published_two_coder_example():
    # Krippendorff (2011), section A: two observers, binary data, ten units; α = 0.095.
    a = [0, 1, 0, 0, 0, 0, 0, 0, 1, 0]
    b = [1, 1, 1, 0, 0, 1, 0, 0, 0, 0]
    items = [f"u{i}" for i in range(10)]
    out = rke.label_agreement(
        pl.DataFrame({"query": "q", "item": items, "relevance": a}),
        pl.DataFrame({"query": "q", "item": items, "relevance": b}),
    )
    assert out["alpha_nominal"][0] == pytest.approx(1 - 19 * 8 / (2 * 14 * 6), abs=1e-12)
    assert round(out["alpha_nominal"][0], 3) == 0.095
    # two values: the ordinal distance is a constant, so α ordinal = α nominal
    assert out["alpha_ordinal"][0] == pytest.approx(out["alpha_nominal"][0], abs=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_kappa_against_sklearn_and_statsmodels(seed):
    metrics = pytest.importorskip("sklearn.metrics")
    inter_rater = pytest.importorskip("statsmodels.stats.inter_rater")
    a, b = _qrels(seed)
    per_query = rke.label_agreement(a, b, per_query=True)
    overall = rke.label_agreement(a, b)
    pairs = _pairs(a, b)
    labels = np.arange(0, 4)  # every grade, so weights are distances between grades
    groups = [(row["query"], row) for row in per_query.iter_rows(named=True)]
    groups.append((None, overall.row(0, named=True)))
    for query, row in groups:
        chosen = pairs if query is None else pairs.filter(pl.col("query") == query)
        x, y = chosen["relevance"].to_numpy(), chosen["relevance_b"].to_numpy()
        assert row["judged_both"] == len(x)
        if len(x) == 0 or len(set(x) | set(y)) < 2:
            assert math.isnan(row["kappa"])
            continue
        for column, weights, wt in (
            ("kappa", None, None),
            ("kappa_linear", "linear", "linear"),
            ("kappa_quadratic", "quadratic", "quadratic"),
        ):
            expected = metrics.cohen_kappa_score(x, y, weights=weights, labels=labels)
            assert row[column] == pytest.approx(expected, abs=1e-12), (query, column)
            table = np.zeros((4, 4))
            np.add.at(table, (x, y), 1)
            with warnings.catch_warnings():
                # statsmodels' z statistic divides by a zero variance on small tables
                warnings.simplefilter("ignore", RuntimeWarning)
                expected = inter_rater.cohens_kappa(table, wt=wt).kappa
            assert row[column] == pytest.approx(expected, abs=1e-12), (query, column)
        assert row["agreement"] == pytest.approx(np.mean(x == y), abs=1e-15)


@pytest.mark.parametrize("seed", range(5))
def test_alpha_against_krippendorff_and_brute_force(seed):
    a, b = _qrels(seed + 10)
    per_query = rke.label_agreement(a, b, per_query=True)
    overall = rke.label_agreement(a, b)
    pairs = _pairs(a, b)
    groups = [(row["query"], row) for row in per_query.iter_rows(named=True)]
    groups.append((None, overall.row(0, named=True)))
    try:
        import krippendorff  # type: ignore[import-untyped]
    except ImportError:
        krippendorff = None
    for query, row in groups:
        chosen = pairs if query is None else pairs.filter(pl.col("query") == query)
        x, y = chosen["relevance"].to_list(), chosen["relevance_b"].to_list()
        for level in ("nominal", "ordinal"):
            brute = _krippendorff_brute(x, y, level) if x else math.nan
            found = row[f"alpha_{level}"]
            if math.isnan(brute):
                assert math.isnan(found)
                continue
            assert found == pytest.approx(brute, abs=1e-12), (query, level)
            if krippendorff is not None and len(set(x) | set(y)) > 1:
                expected = krippendorff.alpha(
                    reliability_data=np.array([x, y], dtype=float), level_of_measurement=level
                )
                assert found == pytest.approx(expected, abs=1e-12), (query, level)


def test_krippendorff_is_installed_for_the_live_check():
    pytest.importorskip("krippendorff", reason="krippendorff (PyPI) checks α live")


@pytest.mark.parametrize("level", [1, 2, 3])
def test_jaccard_and_one_sided_counts_against_sets(level):
    a, b = _qrels(4)
    out = rke.label_agreement(a, b, per_query=True, relevance_level=level)
    queries = sorted(set(a["query"]) | set(b["query"]))
    assert out["query"].to_list() == queries
    pooled = {"a": set(), "b": set(), "ja": set(), "jb": set()}
    for row in out.iter_rows(named=True):
        qa = a.filter(pl.col("query") == row["query"])
        qb = b.filter(pl.col("query") == row["query"])
        judged_a, judged_b = set(qa["item"]), set(qb["item"])
        rel_a = set(qa.filter(pl.col("relevance") >= level)["item"])
        rel_b = set(qb.filter(pl.col("relevance") >= level)["item"])
        assert row["only_a"] == len(judged_a - judged_b)
        assert row["only_b"] == len(judged_b - judged_a)
        assert row["judged_both"] == len(judged_a & judged_b)
        assert (row["relevant_a"], row["relevant_b"]) == (len(rel_a), len(rel_b))
        assert row["relevant_both"] == len(rel_a & rel_b)
        union = rel_a | rel_b
        if union:
            assert row["jaccard"] == pytest.approx(len(rel_a & rel_b) / len(union), abs=1e-15)
        else:
            assert math.isnan(row["jaccard"])
        for key, found in (("a", rel_a), ("b", rel_b), ("ja", judged_a), ("jb", judged_b)):
            pooled[key] |= {(row["query"], item) for item in found}
    overall = rke.label_agreement(a, b, relevance_level=level).row(0, named=True)
    both = pooled["a"] & pooled["b"]
    assert overall["jaccard"] == pytest.approx(len(both) / len(pooled["a"] | pooled["b"]))
    assert overall["only_a"] == len(pooled["ja"] - pooled["jb"])
    assert overall["only_b"] == len(pooled["jb"] - pooled["ja"])
    # the one-sided query: judged by b only, so nothing to agree on
    last = out.filter(pl.col("query") == "q_only_b").row(0, named=True)
    assert (last["judged_both"], last["only_b"]) == (0, 1)
    assert math.isnan(last["kappa"])
    assert math.isnan(last["alpha_nominal"])


def test_lazy_frames_and_trec_files(tmp_path):
    a, b = _qrels(1)
    eager = rke.label_agreement(a, b, per_query=True)
    assert rke.label_agreement(a.lazy(), b.lazy(), per_query=True).equals(eager)
    paths = []
    for name, frame in (("a", a), ("b", b)):
        path = tmp_path / f"{name}.qrels"
        lines = [f"{q} 0 {i} {r}" for q, i, r in frame.iter_rows()]
        path.write_text("\n".join(lines) + "\n")
        paths.append(path)
    from_files = rke.label_agreement(
        rke.read_trec_qrels(paths[0]), rke.read_trec_qrels(paths[1]), per_query=True
    )
    assert from_files.equals(eager)


def test_custom_column_names_and_integer_queries():
    a = pl.DataFrame({"qid": [1, 1, 2], "doc": ["x", "y", "x"], "grade": [1, 0, 2]})
    b = pl.DataFrame({"qid": [1, 1, 2], "doc": ["x", "y", "x"], "grade": [1, 1, 2]})
    out = rke.label_agreement(a, b, query="qid", item="doc", relevance="grade", per_query=True)
    assert out["qid"].to_list() == [1, 2]
    assert out["agreement"].to_list() == [0.5, 1.0]


def test_errors():
    a, b = _qrels(0)
    with pytest.raises(DuplicateItemError, match="more than once"):
        rke.label_agreement(pl.concat([a, a.head(1)]), b)
    with pytest.raises(ColumnNotFoundError, match="grade"):
        rke.label_agreement(a, b, relevance="grade")
    with pytest.raises(ColumnTypeError, match="numeric"):
        rke.label_agreement(a.with_columns(pl.col("relevance").cast(pl.String)), b)
    with pytest.raises(ColumnValueError, match="no label"):
        rke.label_agreement(a.with_columns(pl.lit(None, pl.Int64).alias("relevance")), b)


@pytest.mark.parametrize("level", [float("nan"), float("inf"), 1.5, 1.0, True, "1"])
def test_relevance_level_goes_through_the_one_validator(level):
    """relevance_level=nan was accepted: every relevant set empty, Jaccard NaN (audit LA10).

    label_agreement asks the validator evaluate and every metric's rel= ask, so each entry
    point refuses the same values with the same words.
    """
    a, b = _qrels(0)
    log = pl.DataFrame({"query": ["q"], "item": ["a"], "score": [1.0], "relevance": [1]})
    with pytest.raises(rke.InvalidOptionError, match="relevance_level= must be an int") as ours:
        rke.label_agreement(a, b, relevance_level=level)
    with pytest.raises(rke.InvalidOptionError) as engine:
        rke.evaluate(log, ["map"], relevance_level=level)
    assert str(ours.value) == str(engine.value)


# --- the CLI ----------------------------------------------------------------------------------


def _write_qrels(tmp_path):
    a, b = _qrels(2)
    paths = []
    for name, frame in (("a", a), ("b", b)):
        path = tmp_path / f"{name}.qrels"
        path.write_text("".join(f"{q} 0 {i} {r}\n" for q, i, r in frame.iter_rows()))
        paths.append(str(path))
    return a, b, paths


def test_cli_formats(tmp_path, capsys):
    a, b, paths = _write_qrels(tmp_path)
    _run_agreement([*paths, "--format", "json"])
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["kappa"] == pytest.approx(rke.label_agreement(a, b)["kappa"][0])
    _run_agreement([*paths, "--per-query", "--format", "csv"])
    table = pl.read_csv(capsys.readouterr().out.encode())
    assert table["query"].to_list()[-1] == "all"
    assert table.height == rke.label_agreement(a, b, per_query=True).height + 1
    _run_agreement(paths)
    assert "kappa_quadratic" in capsys.readouterr().out
    out = tmp_path / "agreement.csv"
    _run_agreement([*paths, "-o", str(out)])
    assert pl.read_csv(out).height == 1


@pytest.mark.parametrize(
    ("args", "pattern"),
    [
        (["missing.qrels", "{b}"], "does not exist"),
        (["{a}"], "required"),
        (["{a}", "{b}", "--format", "xml"], "invalid choice"),
        (["{a}", "{b}", "-o", "out.xyz"], "cannot tell the output format"),
        (["{a}", "{b}", "--format", "csv", "-o", "{a}"], "overwritten"),
    ],
)
def test_cli_errors(tmp_path, args, pattern):
    _, _, (path_a, path_b) = _write_qrels(tmp_path)
    argv = [arg.format(a=path_a, b=path_b) for arg in args]
    with pytest.raises(CliError, match=pattern):
        _run_agreement(argv)


def test_cli_bad_qrels_line_is_one_error(tmp_path):
    _, _, (_, path_b) = _write_qrels(tmp_path)
    bad = tmp_path / "bad.qrels"
    bad.write_text("q1 0 d1\n")
    with pytest.raises(rke.TrecFormatError, match=r"bad\.qrels:1"):
        _run_agreement([str(bad), path_b])


def test_the_old_qrels_keywords_warn_and_still_work() -> None:
    human = pl.DataFrame({"query": ["q1"] * 4, "item": list("abcd"), "relevance": [2, 1, 0, 0]})
    judge = pl.DataFrame({"query": ["q1"] * 4, "item": list("abce"), "relevance": [2, 0, 0, 1]})
    with pytest.warns(rke.RankEvalDeprecationWarning) as seen:
        old = rke.label_agreement(qrels_a=human, qrels_b=judge)
    assert sorted(str(w.message) for w in seen) == [
        "label_agreement(): qrels_a= is renamed data=; the old name is removed in 0.3.0",
        "label_agreement(): qrels_b= is renamed other=; the old name is removed in 0.3.0",
    ]
    assert old.equals(rke.label_agreement(data=human, other=judge))
