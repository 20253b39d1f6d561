"""``rke.report``: the paper table of a comparison, with marks decided by ``significant``."""

from __future__ import annotations

import polars as pl
import pytest

import polars_rankeval as rke


def _comparison(rows: list[tuple[str, str, str, float, float, bool]]) -> pl.DataFrame:
    """Hand-made compare() output: (metric, baseline, system, baseline_mean, system_mean, sig)."""
    return pl.DataFrame(
        [
            {
                "metric": metric,
                "baseline": baseline,
                "system": system,
                "baseline_mean": base,
                "system_mean": value,
                "delta": value - base,
                "significant": significant,
                "test": "randomization",
                "correction": "fdr_bh",
                "alpha": 0.01,
                "n_queries": 50,
            }
            for metric, baseline, system, base, value, significant in rows
        ]
    )


ALL_PAIRS = _comparison(
    [
        ("map", "x", "y", 0.30, 0.40, True),  # y beats x
        ("map", "x", "z", 0.30, 0.20, True),  # x beats z
        ("map", "y", "z", 0.40, 0.20, False),
        ("r_precision", "x", "y", 0.50, 0.45, False),
        ("r_precision", "x", "z", 0.50, 0.55, False),
        ("r_precision", "y", "z", 0.45, 0.55, True),  # z beats y
    ]
)


def test_markdown_marks_each_significant_win_with_the_losers_letter() -> None:
    text = str(rke.report(ALL_PAIRS, digits=2))
    assert text.splitlines()[:5] == [
        "| system | map | r_precision |",
        "| --- | ---: | ---: |",
        "| (a) x | 0.30<sup>c</sup> | 0.50 |",
        "| (b) y | **0.40**<sup>a</sup> | 0.45 |",
        "| (c) z | 0.20 | **0.55**<sup>b</sup> |",
    ]
    assert "paired randomization test, Benjamini-Hochberg-adjusted p-values, alpha = 0.01" in text
    assert "50 queries" in text


def test_latex_is_booktabs_and_escaped() -> None:
    text = str(rke.report(ALL_PAIRS, "latex", digits=3))
    assert r"\begin{tabular}{lrr}" in text
    assert r"system & map & r\_precision \\" in text
    assert r"(b) y & \textbf{0.400}$^{a}$ & 0.450 \\" in text
    assert text.strip().endswith(r"\end{table}")


def test_html_renders_in_notebooks() -> None:
    rendered = rke.report(ALL_PAIRS, "html")
    assert rendered._repr_html_() == str(rendered)
    assert rendered._repr_markdown_() is None
    assert "<b>0.4000</b><sup>a</sup>" in str(rendered)
    markdown = rke.report(ALL_PAIRS)
    assert markdown._repr_markdown_() == str(markdown)


def test_a_real_comparison_renders() -> None:
    pytest.importorskip("scipy")
    log = pl.read_parquet("data/sample.parquet")
    comparison = rke.compare(log, ["ndcg@10", "map"], by="system", baseline="bm25")
    lines = str(rke.report(comparison)).splitlines()
    assert lines[2] == "| (a) bm25 | 0.5293 | 0.4392 |"
    assert lines[3] == "| (b) neural | **0.7065**<sup>a</sup> | **0.5983**<sup>a</sup> |"


@pytest.mark.parametrize(
    ("call", "error", "pattern"),
    [
        (lambda: rke.report(ALL_PAIRS.drop("significant")), rke.ColumnNotFoundError, "significant"),
        (lambda: rke.report(ALL_PAIRS, "pdf"), rke.InvalidOptionError, "format="),
        (lambda: rke.report(ALL_PAIRS.head(0)), rke.InvalidOptionError, "empty"),
        (lambda: rke.report(ALL_PAIRS, digits=-1), rke.InvalidOptionError, "digits="),
    ],
)
def test_bad_input(call: object, error: type[Exception], pattern: str) -> None:
    with pytest.raises(error, match=pattern):
        call()  # type: ignore[operator]
