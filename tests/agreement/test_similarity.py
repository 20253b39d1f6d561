"""rke.similarity: RBO against Corsi & Urbano's table, set measures and τ against brute force."""

from __future__ import annotations

import importlib
import itertools
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_rankeval as rke
from polars_rankeval.agreement._similarity import Measure, Ties
from polars_rankeval.errors import (
    ColumnNotFoundError,
    ColumnValueError,
    DuplicateItemError,
    InvalidOptionError,
    UnknownMetricError,
)

DATA = Path(__file__).parents[1] / "data" / "rbo_corsi_urbano.csv"
VARIANTS: tuple[Ties, ...] = ("w", "a", "b")
OUTPUTS = ("ext", "min", "max", "res")


def _wide(long: pl.DataFrame) -> pl.DataFrame:
    """The long result with one column per metric again (the tests read values by metric)."""
    index = [name for name in long.columns if name not in {"metric", "value"}]
    return long.pivot(on="metric", index=index, values="value")


def _sim(*args: Any, **keywords: Any) -> pl.DataFrame:
    return _wide(rke.similarity(*args, **keywords))


def _table() -> pl.DataFrame:
    # julian-urbano/sigir2024-rbo, rbo/test.csv (MIT, tests/data/LICENSE-rbo.txt): first 2,000 rows
    return pl.read_csv(DATA, comment_prefix="#")


def _log_from_strings(rows: pl.DataFrame, query: str = "p") -> pl.DataFrame:
    """Systems x and y, one query per row; a tie group ``(i1 i2)`` shares one score."""
    records = []
    for row in rows.iter_rows(named=True):
        for system in ("x", "y"):
            group, depth = False, 0
            for token in row[system].split():
                group = group or token.startswith("(")
                records.append((system, row[query], token.strip("()"), -float(depth)))
                if not group or token.endswith(")"):
                    group, depth = False, depth + 1
    return pl.DataFrame(records, schema=["system", "query", "item", "score"], orient="row")


def test_rbo_reproduces_corsi_urbano_table() -> None:
    table = _table()
    assert table.height == 2000
    assert table["p"].n_unique() == table.height  # p names the query below
    log = _log_from_strings(table)
    # One persistence per query: p is read from the query column (each row has its own p).
    measures = [
        Measure(label=f"{v}.{o}", kind="rbo", p=pl.col("query"), output=o, ties=v)
        for v in VARIANTS
        for o in OUTPUTS
    ]
    got = _sim(log, measures, by="system", per_query=True)
    assert got.height == table.height
    joined = got.join(table.rename({"p": "query"}), on="query", suffix="_ref")
    assert joined.height == table.height
    for label in (m.label for m in measures):
        worst = (joined[label] - joined[f"{label}_ref"]).abs().max()
        assert isinstance(worst, float)
        assert worst < 1e-12, (label, worst)


def test_rbo_metric_strings_reproduce_table_rows() -> None:
    # The parsed path (p= from the string) on a few rows, one call per row.
    table = _table().head(6)
    for row in table.iter_rows(named=True):
        log = _log_from_strings(pl.DataFrame([row]))
        names = [f"rbo(p={row['p']!r},output={o},ties={v})" for v in VARIANTS for o in OUTPUTS]
        got = _sim(log, names, by="system")
        for name, (v, o) in zip(names, itertools.product(VARIANTS, OUTPUTS), strict=True):
            assert got[name][0] == pytest.approx(row[f"{v}.{o}"], abs=1e-12)
        # the keyword sets the variant of an rbo without ties=
        keyword = _sim(log, f"rbo(p={row['p']!r},output=min)", by="system", ties="b")
        assert keyword[f"rbo(p={row['p']!r},output=min)"][0] == pytest.approx(
            row["b.min"], abs=1e-12
        )


def test_trec_ties_equal_the_variants_on_the_broken_order() -> None:
    # ties="trec" breaks ties by item id descending (trec_eval); on that strict order every
    # variant of the table's reference agrees, so the w variant of the strict log is the oracle.
    table = _table().head(200)
    log = _log_from_strings(table)
    # trec_eval's order: score descending, then item id descending; the score is minus the rank
    strict = log.with_columns(
        pl.struct("score", "item")
        .rank("ordinal", descending=True)
        .over("system", "query")
        .cast(pl.Float64)
        .neg()
        .alias("score")
    )
    names = [f"rbo(p=0.9,output={o})" for o in OUTPUTS]
    trec = _sim(log, names, by="system", per_query=True)
    for variant in VARIANTS:
        other = _sim(strict, names, by="system", per_query=True, ties=variant)
        for name in names:
            assert (trec[name] - other[name]).abs().max() < 1e-12
    with_ties = _sim(log, names, by="system", per_query=True, ties="a")
    assert (trec[names[0]] - with_ties[names[0]]).abs().max() > 1e-3


def _generated(seed: int = 7) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    records = []
    for system in ("s1", "s2", "s3"):
        for query in range(25):
            if system == "s3" and query == 3:
                continue  # a query one system lacks
            length = int(rng.integers(1, 15))
            items = rng.choice(30, size=length, replace=False)
            scores = rng.integers(0, 5, size=length)  # many ties
            records += [
                (system, f"q{query}", f"d{item}", float(score))
                for item, score in zip(items, scores, strict=True)
            ]
    return pl.DataFrame(records, schema=["system", "query", "item", "score"], orient="row")


def _lists(log: pl.DataFrame) -> dict[tuple[str, str], list[tuple[str, float]]]:
    """trec_eval's order per (system, query): score descending, then item id descending."""
    out: dict[tuple[str, str], list[tuple[str, float]]] = {}
    for (system, query), rows in log.group_by(["system", "query"]):
        pairs = list(zip(rows["item"], rows["score"], strict=True))
        out[str(system), str(query)] = sorted(pairs, key=lambda r: (r[1], r[0]), reverse=True)
    return out


def _brute(
    ranked_a: list[tuple[str, float]], ranked_b: list[tuple[str, float]], k: int, ties: str
) -> tuple[float, float, float | None]:
    stats = pytest.importorskip("scipy.stats")
    top_a, top_b = ranked_a[:k], ranked_b[:k]
    set_a, set_b = {i for i, _ in top_a}, {i for i, _ in top_b}
    both = set_a & set_b
    jaccard = len(both) / len(set_a | set_b)
    overlap = len(both) / k
    if ties == "trec":
        rank_a = {item: float(r) for r, (item, _) in enumerate(top_a)}
        rank_b = {item: float(r) for r, (item, _) in enumerate(top_b)}
    else:
        rank_a = {item: -s for item, s in top_a}
        rank_b = {item: -s for item, s in top_b}
    common = sorted(both)
    tau = None
    if len(common) >= 2:
        value = stats.kendalltau([rank_a[i] for i in common], [rank_b[i] for i in common])[0]
        tau = None if math.isnan(value) else float(value)
    return jaccard, overlap, tau


@pytest.mark.parametrize("ties", ["trec", "a"])
def test_set_measures_and_kendall_match_brute_force(ties: str) -> None:
    log = _generated()
    k = 5
    names = [f"jaccard@{k}", f"overlap@{k}", f"kendall_tau@{k}", "jaccard"]
    got = _sim(log, names, by="system", per_query=True, ties=ties)  # type: ignore[arg-type]
    lists = _lists(log)
    expected_rows = 0
    for a, b in itertools.combinations(["s1", "s2", "s3"], 2):
        for query in range(25):
            q = f"q{query}"
            if (a, q) not in lists or (b, q) not in lists:
                continue
            expected_rows += 1
            row = got.filter(
                (pl.col("system") == b) & (pl.col("baseline_system") == a) & (pl.col("query") == q)
            )
            assert row.height == 1
            jaccard, overlap, tau = _brute(lists[a, q], lists[b, q], k, ties)
            assert row[f"jaccard@{k}"][0] == pytest.approx(jaccard, abs=1e-12)
            assert row[f"overlap@{k}"][0] == pytest.approx(overlap, abs=1e-12)
            if tau is None:
                assert row[f"kendall_tau@{k}"][0] is None
            else:
                assert row[f"kendall_tau@{k}"][0] == pytest.approx(tau, abs=1e-12)
            whole_a = {i for i, _ in lists[a, q]}
            whole_b = {i for i, _ in lists[b, q]}
            assert row["jaccard"][0] == pytest.approx(
                len(whole_a & whole_b) / len(whole_a | whole_b), abs=1e-12
            )
    assert got.height == expected_rows
    means = _sim(log, names, by="system", ties=ties)  # type: ignore[arg-type]
    assert means.columns == ["system", "baseline_system", "n_queries", "n_dropped", *names]
    for mean in means.iter_rows(named=True):
        mine = got.filter(
            (pl.col("system") == mean["system"])
            & (pl.col("baseline_system") == mean["baseline_system"])
        )
        assert mean["n_queries"] == mine.height
        assert mean["n_dropped"] == (1 if "s3" in (mean["system"], mean["baseline_system"]) else 0)
        for name in names:
            assert mean[name] == pytest.approx(mine[name].mean(), abs=1e-12)


def test_lazy_equals_eager_and_baseline() -> None:
    log = _generated(3)
    names = ["rbo(p=0.8)", "rbo(p=0.95,output=res,ties=a)", "jaccard@3", "kendall_tau@10"]
    eager = _sim(log, names, by="system", baseline="s2")
    lazy = _sim(log.lazy(), names, by="system", baseline="s2")
    # Equal to rounding: the order in which Polars sums floats is not fixed.
    assert_frame_equal(eager, lazy, check_exact=False, rel_tol=0, abs_tol=1e-12)
    assert eager.columns[:2] == ["system", "baseline_system"]
    assert eager["baseline_system"].to_list() == ["s2", "s2"]
    assert eager["system"].to_list() == ["s1", "s3"]
    via_namespace = _wide(
        log.rank_eval.similarity(  # type: ignore[attr-defined]
            names, by="system", baseline="s2"
        )
    )
    assert_frame_equal(via_namespace, eager, check_exact=False, rel_tol=0, abs_tol=1e-12)
    lazy_namespace = log.lazy().rank_eval.similarity(  # type: ignore[attr-defined]
        names, by="system", baseline="s2"
    )
    assert isinstance(lazy_namespace, pl.LazyFrame)
    # lazy in, lazy out: the namespace hands a LazyFrame back
    assert_frame_equal(
        _wide(lazy_namespace.collect()), eager, check_exact=False, rel_tol=0, abs_tol=1e-12
    )


def test_by_two_columns_keeps_each_key_a_column_of_its_own_type() -> None:
    log = _generated(5)
    split = log.with_columns(
        pl.col("system").str.slice(0, 1).alias("family"),
        pl.col("system").str.slice(1).cast(pl.Int32).alias("version"),
    ).drop("system")
    names = ["rbo(p=0.9,ties=b)", "overlap@4"]
    one = _sim(log, names, by="system", per_query=True)
    two = rke.similarity(split, names, by=["family", "version"], per_query=True)
    assert two.columns == [
        "metric",
        "family",
        "version",
        "baseline_family",
        "baseline_version",
        "query",
        "value",
    ]
    assert two.schema["version"] == two.schema["baseline_version"] == pl.Int32
    expected = one.select(
        pl.col("system").str.slice(0, 1).alias("family"),
        pl.col("system").str.slice(1).cast(pl.Int32).alias("version"),
        pl.col("baseline_system").str.slice(0, 1).alias("baseline_family"),
        pl.col("baseline_system").str.slice(1).cast(pl.Int32).alias("baseline_version"),
        pl.exclude("system", "baseline_system"),
    )
    assert_frame_equal(_wide(two), expected, check_exact=False, rel_tol=0, abs_tol=1e-12)
    base = rke.similarity(split, names, by=["family", "version"], baseline=("s", "1"))
    assert base.select("baseline_family", "baseline_version").unique().rows() == [("s", 1)]
    assert sorted(set(base.select("family", "version").rows())) == [("s", 2), ("s", 3)]


def test_null_scores_are_left_out() -> None:
    log = _generated(2)
    extra = log.head(3).with_columns(pl.lit("dx").alias("item"), pl.lit(None).alias("score"))
    names = ["rbo(p=0.9)", "jaccard@5"]
    assert_frame_equal(
        _sim(pl.concat([log, extra]), names, by="system"),
        _sim(log, names, by="system"),
        check_exact=False,
        rel_tol=0,
        abs_tol=1e-12,
    )


@pytest.mark.parametrize(
    ("metric", "error", "words"),
    [
        ("rbp(p=0.9)", UnknownMetricError, "unknown similarity metric"),
        ("rbo(p=1.5)", InvalidOptionError, "p="),
        # RBO's p lies in the open interval: p = 1 gives every depth the same weight and the
        # sum (1 - p) * sum_d p^(d-1) * A_d no longer converges (0 * infinity); p = 0 weighs
        # nothing but depth 1 (audit mutant M08 accepted p=1)
        ("rbo(p=1)", InvalidOptionError, "must be a number in (0, 1), got '1'"),
        ("rbo(p=1.0)", InvalidOptionError, "must be a number in (0, 1), got '1.0'"),
        ("rbo(p=0)", InvalidOptionError, "must be a number in (0, 1), got '0'"),
        ("rbo(p=nan)", InvalidOptionError, "must be a number in (0, 1)"),
        ("rbo(output=mid)", InvalidOptionError, "output="),
        ("rbo(ties=x)", InvalidOptionError, "ties="),
        ("rbo(q=1)", InvalidOptionError, "q"),
        ("rbo@10", InvalidOptionError, "no @k"),
        ("overlap", InvalidOptionError, "cutoff"),
        ("kendall_tau@0", InvalidOptionError, "positive"),
        ("jaccard@5(x=1)", InvalidOptionError, "no options"),
    ],
)
def test_bad_metrics_name_the_option(metric: str, error: type[Exception], words: str) -> None:
    with pytest.raises(error, match=re.escape(words)):
        _sim(_generated(), [metric], by="system")


def test_bad_input_errors() -> None:
    log = _generated()
    with pytest.raises(ColumnNotFoundError, match="'model'"):
        _sim(log, "jaccard@5", by="model")
    with pytest.raises(ColumnNotFoundError, match=r"'rank' \(option score=\)"):
        _sim(log, "jaccard@5", by="system", score="rank")
    with pytest.raises(InvalidOptionError, match="baseline="):
        _sim(log, "jaccard@5", by="system", baseline="s9")
    with pytest.raises(InvalidOptionError, match="ties="):
        _sim(log, "jaccard@5", by="system", ties="expected")  # type: ignore[arg-type]
    with pytest.raises(InvalidOptionError, match="repeats"):
        _sim(log, ["jaccard@5", "jaccard@5"], by="system")
    with pytest.raises(DuplicateItemError, match="more than once"):
        _sim(pl.concat([log, log.head(1)]), "jaccard@5", by="system")
    nan = log.with_columns(
        pl.when(pl.int_range(pl.len()) == 0).then(float("nan")).otherwise("score").alias("score")
    )
    with pytest.raises(ColumnValueError, match="NaN"):
        _sim(nan, "jaccard@5", by="system")


def test_cli_similarity_writes_the_table(tmp_path: Path) -> None:
    from polars_rankeval.cli._errors import CliError
    from polars_rankeval.cli._similarity import _run_similarity

    log = _generated()
    path = tmp_path / "log.parquet"
    log.write_parquet(path)
    out = tmp_path / "out.csv"
    metrics = "rbo(p=0.9,output=min,ties=a),jaccard@5"
    _run_similarity(
        [str(path), "--by", "system", "--baseline", "s1", "-m", metrics, "-o", str(out)]
    )
    written = pl.read_csv(out)
    expected = rke.similarity(
        log, ["rbo(p=0.9,output=min,ties=a)", "jaccard@5"], by="system", baseline="s1"
    )
    assert_frame_equal(written, expected, check_dtypes=False, check_exact=False, abs_tol=1e-12)
    _run_similarity(
        [str(path), "--by", "system", "--per-query", "--format", "json", "-o", str(out)]
    )
    # long: one row per (metric, pair, query); s3 lacks one query of 25
    assert pl.read_json(out).height == 2 * (25 + 24 + 24)
    with pytest.raises(CliError, match="--by"):
        _run_similarity([str(path)])
    with pytest.raises(InvalidOptionError, match="baseline="):
        _run_similarity([str(path), "--by", "system", "--baseline", "zz"])


def test_within_segments_equals_each_segment_alone() -> None:
    rng = np.random.default_rng(4)
    rows = []
    for segment in ("de", "fr"):
        for q in range(6):
            for system in ("a", "b", "c"):
                if segment == "fr" and system == "a":
                    continue  # the baseline is missing in one segment
                for _ in range(8):
                    rows.append(
                        (
                            segment,
                            system,
                            f"q{q}",
                            f"d{rng.integers(0, 12)}",
                            float(rng.integers(0, 4)),
                        )
                    )
    log = pl.DataFrame(
        rows, schema=["country", "system", "query", "item", "score"], orient="row"
    ).unique(["country", "system", "query", "item"])
    metrics = ["rbo(p=0.8)", "jaccard@3"]
    both = _sim(log, metrics, by="system", within="country")
    assert rke.similarity(log, metrics, by="system", within="country").columns[:4] == [
        "metric",
        "country",
        "system",
        "baseline_system",
    ]
    for country in ("de", "fr"):
        alone = _sim(log.filter(pl.col("country") == country), metrics, by="system")
        mine = both.filter(pl.col("country") == country).drop("country")
        assert mine.columns == alone.columns
        for name in metrics:
            assert mine[name].to_list() == pytest.approx(alone[name].to_list(), abs=1e-12)
    with pytest.warns(rke.EmptyEvaluationWarning, match="fr"):
        with_baseline = _sim(log, metrics, by="system", baseline="a", within="country")
    assert with_baseline["country"].unique().to_list() == ["de"]
    with pytest.raises(ColumnNotFoundError, match="within="):
        _sim(log, metrics, by="system", within="region")


@pytest.mark.parametrize("bucket_rows", [60, 400, 10**9])
def test_buckets_of_queries_give_the_same_rows(
    monkeypatch: pytest.MonkeyPatch, bucket_rows: int
) -> None:
    # Large logs are compared one bucket of queries at a time to bound memory; the number of
    # buckets must not change any value (60 rows: a dozen buckets, some with one query).
    # The package attribute `similarity` is the function; the module is in sys.modules.
    similarity_module = importlib.import_module("polars_rankeval.agreement._similarity")

    log = _generated(5)
    names = ["rbo(p=0.9)", "rbo(p=0.8,output=min,ties=b)", "jaccard@5", "kendall_tau@5"]
    whole = _sim(log, names, by="system", per_query=True)
    whole_means = _sim(log, names, by="system")
    monkeypatch.setattr(similarity_module, "BUCKET_ROWS", bucket_rows)
    split = _sim(log, names, by="system", per_query=True)
    split_means = _sim(log, names, by="system")
    assert_frame_equal(split, whole, check_exact=False, rel_tol=0, abs_tol=1e-12)
    assert_frame_equal(split_means, whole_means, check_exact=False, rel_tol=0, abs_tol=1e-12)
    assert whole.height > 40


def test_the_result_is_long_in_the_shared_columns() -> None:
    log = _generated(3)
    out = rke.similarity(log, ["jaccard@3", "overlap@2"], by="system", baseline="s2")
    assert out.columns == ["metric", "system", "baseline_system", "n_queries", "value", "n_dropped"]
    assert out.select("metric", "system").rows() == [
        ("jaccard@3", "s1"),
        ("jaccard@3", "s3"),
        ("overlap@2", "s1"),
        ("overlap@2", "s3"),
    ]
    per_query = rke.similarity(log, "jaccard@3", by="system", per_query=True)
    assert per_query.columns == ["metric", "system", "baseline_system", "query", "value"]


def test_relevance_is_accepted_and_only_checked_to_exist() -> None:
    # one set of column keywords serves every function (design review snippet 3)
    log = _generated(3).with_columns(pl.lit(1).alias("rel"))
    cols = {"query": "query", "item": "item", "score": "score", "relevance": "rel"}
    with_rel = rke.similarity(log, "jaccard@3", by="system", **cols)
    assert_frame_equal(with_rel, rke.similarity(log, "jaccard@3", by="system"))
    with pytest.raises(ColumnNotFoundError, match=r"'grade' \(option relevance=\)"):
        rke.similarity(log, "jaccard@3", by="system", relevance="grade")


def test_the_old_log_keyword_warns_and_still_works() -> None:
    log = _generated(3)
    with pytest.warns(rke.RankEvalDeprecationWarning, match="log= is renamed data="):
        old = rke.similarity(log=log, metrics="jaccard@3", by="system")
    assert_frame_equal(old, rke.similarity(log, "jaccard@3", by="system"))
