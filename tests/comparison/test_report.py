"""``rke.report``: the paper table of a comparison.

Marks and bold follow each metric's direction (``higher_is_better``); values are each
system's own summary over all its queries (``*_overall``), never one pair's subset; every
format escapes names from the data.
"""

from __future__ import annotations

import math
import pickle
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import polars_rankeval as rke

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "sample.parquet"


def _comparison(
    rows: list[tuple[str, str, str, float, float, bool]],
    *,
    lower: tuple[str, ...] = (),
    queries: int = 50,
) -> pl.DataFrame:
    """Hand-made compare() output: (metric, baseline, system, baseline_value, value, sig).

    The overall values equal the pair means here (every system has the same queries).
    """
    return pl.DataFrame(
        [
            {
                "metric": metric,
                "system": system,
                "baseline_system": baseline,
                "higher_is_better": metric not in lower,
                "summary": "gm" if metric.startswith("gm_") else "mean",
                "baseline_value": base,
                "value": value,
                "delta": value - base,
                "significant": significant,
                "test": "randomization",
                "correction": "fdr_bh",
                "alpha": 0.01,
                "n_queries": queries,
                "direction_source": "metric",
                "baseline_overall": base,
                "system_overall": value,
                "baseline_queries": queries,
                "system_queries": queries,
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
    assert "paired randomization test" in text
    assert "Benjamini-Hochberg-adjusted p-values, alpha = 0.01" in text
    assert "over all the queries it has a value for (50 queries)" in text


def test_lower_is_better_bolds_the_minimum_and_marks_the_lower_system() -> None:
    # frp: y (1.5) is better than x (2.0), significantly; z (3.0) is worse than x.
    rows = [
        ("frp", "x", "y", 2.0, 1.5, True),
        ("frp", "x", "z", 2.0, 3.0, True),
        ("map", "x", "y", 0.3, 0.4, True),
    ]
    text = str(rke.report(_comparison(rows, lower=("frp",)), digits=1))
    assert text.splitlines()[2:5] == [
        "| (a) x | 2.0<sup>c</sup> | 0.3 |",
        "| (b) y | **1.5**<sup>a</sup> | **0.4**<sup>a</sup> |",
        "| (c) z | 3.0 |  |",  # no map row for z: an empty cell
    ]
    assert "Lower is better for frp." in text


def test_frp_on_the_sample_reads_neural_as_better() -> None:
    """Trial F3: neural frp 1.63 vs bm25 2.19; neural must be bold, marked, and win."""
    pytest.importorskip("scipy")
    log = pl.read_parquet(SAMPLE)
    comparison = rke.compare(log, ["frp", "mean_rank"], by="system", baseline="bm25")
    lines = str(rke.report(comparison)).splitlines()
    assert lines[2] == "| (a) bm25 | 2.1939 | 2.1939 |" or lines[2].startswith(
        "| (a) bm25 | 2.1939"
    )
    assert lines[3].startswith("| (b) neural | **1.6296**<sup>a</sup>")
    assert "**" not in lines[2]
    assert "<sup>" not in lines[2]
    # wins count the queries where neural's frp is lower (better), by a plain Python count
    per_query = rke.evaluate(log, ["frp"], by="system", per_query=True)
    bm25 = dict(per_query.filter(system="bm25").select("query", "frp").iter_rows())
    neural = dict(per_query.filter(system="neural").select("query", "frp").iter_rows())
    better = sum(
        1
        for q, v in neural.items()
        if v is not None and bm25.get(q) is not None and v < bm25[q] - 1e-12
    )
    assert comparison.filter(metric="frp")["wins"].item() == better


def test_values_are_each_systems_overall_not_a_pairs_subset() -> None:
    """Audit R08: A is 0.5 over its 10 queries, not 0.1 over the 5 it shares with B."""
    pytest.importorskip("scipy")
    per_query = pl.DataFrame(
        {
            "system": ["A"] * 10 + ["B"] * 5 + ["C"] * 10,
            "query": list(range(10)) + list(range(5)) + list(range(10)),
            "map": [0.1] * 5 + [0.9] * 5 + [0.5] * 5 + [0.4] * 10,
        }
    )
    text = str(rke.report(rke.compare_per_query(per_query, by="system")))
    lines = text.splitlines()
    assert lines[2].startswith("| (a) A | **0.5000**")
    assert lines[3].startswith("| (b) B | **0.5000**")
    assert lines[4].startswith("| (c) C | 0.4000")
    assert "(5 to 10 queries)" in text


def test_gm_metric_shows_the_geometric_mean_and_says_so() -> None:
    pytest.importorskip("scipy")
    per_query = pl.DataFrame(
        {"system": ["a"] * 2 + ["b"] * 2, "query": [1, 2] * 2, "gm_map": [0.04, 1.0, 0.5, 0.5]}
    )
    text = str(rke.report(rke.compare_per_query(per_query, by="system", baseline="a")))
    # sqrt(0.04 * 1.0) = 0.2, by hand; the arithmetic mean would be 0.52
    assert "| (a) a | 0.2000 |" in text
    assert "| (b) b | **0.5000** |" in text
    assert "geometric mean for gm_map" in text


def test_sort_options() -> None:
    rows = [
        ("map", "Base", "beta", 0.3, 0.1, False),
        ("map", "Base", "Alpha", 0.3, 0.2, False),
        ("map", "Base", "gamma", 0.3, 0.5, False),
        ("frp", "Base", "beta", 3.0, 1.0, False),
        ("frp", "Base", "Alpha", 3.0, 2.0, False),
        ("frp", "Base", "gamma", 3.0, 4.0, False),
    ]
    comparison = _comparison(rows, lower=("frp",))

    def order(**options: Any) -> list[str]:
        lines = str(rke.report(comparison, **options)).splitlines()[2:6]
        return [line.split(" | ")[0].split(") ")[1] for line in lines]

    # baseline first, then by name ignoring case
    assert order() == ["Base", "Alpha", "beta", "gamma"]
    assert order(sort="map") == ["gamma", "Base", "Alpha", "beta"]
    assert order(sort="frp") == ["beta", "Alpha", "Base", "gamma"]  # lower first
    assert order(sort=["gamma", "beta", "Base", "Alpha"]) == ["gamma", "beta", "Base", "Alpha"]
    # letters follow the rows
    assert str(rke.report(comparison, sort="map")).splitlines()[2].startswith("| (a) gamma")
    for bad, pattern in [
        ("ndcg", "metrics: "),
        (["gamma", "beta"], r"missing \['Base', 'Alpha'\]"),
        (["gamma", "beta", "Base", "Alpha", "x"], r"unknown \['x'\]"),
        (["gamma", "gamma", "beta", "Base", "Alpha"], r"repeated \['gamma'\]"),
    ]:
        with pytest.raises(rke.InvalidOptionError, match=pattern):
            rke.report(comparison, sort=bad)  # type: ignore[arg-type]


def test_more_than_26_systems_get_numbers_separated_by_commas() -> None:
    systems = [f"s{i:02d}" for i in range(30)]
    # s00 is the baseline; every other system is significantly better than it
    rows = [("map", "s00", s, 0.1, 0.1 + i / 100, True) for i, s in enumerate(systems[1:], 1)]
    # and s29 also significantly beats s11 and s02
    rows += [("map", "s11", "s29", 0.21, 0.39, True), ("map", "s02", "s29", 0.12, 0.39, True)]
    overall = {"s00": 0.1, **{s: 0.1 + i / 100 for i, s in enumerate(systems[1:], 1)}}
    comparison = _comparison(rows).with_columns(
        pl.col("baseline_system").replace_strict(overall).alias("baseline_overall"),
        pl.col("system").replace_strict(overall).alias("system_overall"),
    )
    text = str(rke.report(comparison))
    lines = text.splitlines()
    assert lines[2] == "| (1) s00 | 0.1000 |"
    assert lines[31] == "| (30) s29 | **0.3900**<sup>1,3,12</sup> |"
    assert "A superscript number marks" in text


def test_null_and_nan_values_render_as_a_dash() -> None:
    """Audit R05/R06: a null or NaN overall value is a dash, never a TypeError or "nan"."""
    comparison = ALL_PAIRS.with_columns(
        pl.when(pl.col("system") == "y")
        .then(None)
        .otherwise(pl.col("system_overall"))
        .alias("system_overall"),
        pl.when(pl.col("baseline_system") == "y")
        .then(None)
        .otherwise(pl.col("baseline_overall"))
        .alias("baseline_overall"),
    )
    text = str(rke.report(comparison, digits=2))
    assert text.splitlines()[3] == "| (b) y | –<sup>a</sup> | – |"
    nan = ALL_PAIRS.with_columns(
        pl.lit(math.nan).alias("system_overall"), pl.lit(math.nan).alias("baseline_overall")
    )
    latex = str(rke.report(nan, "latex"))
    assert "nan" not in latex
    assert "--" in latex
    nulls = ALL_PAIRS.with_columns(pl.lit(None, dtype=pl.Boolean).alias("significant"))
    assert "<sup>" not in str(rke.report(nulls))


def test_inconsistent_overall_values_are_refused() -> None:
    doubled = pl.concat([ALL_PAIRS, ALL_PAIRS.head(1).with_columns(system_overall=pl.lit(0.9))])
    with pytest.raises(rke.ColumnValueError, match=r"system 'y' has two values"):
        rke.report(doubled)


def test_latex_is_booktabs_and_escaped() -> None:
    text = str(rke.report(ALL_PAIRS, "latex", digits=3))
    assert (
        text.splitlines()[0] == r"% needs \usepackage{booktabs} (\toprule, \midrule, \bottomrule)"
    )
    assert r"\begin{tabular}{lrr}" in text
    assert r"system & map & r\_precision \\" in text
    assert r"(b) y & \textbf{0.400}$^{a}$ & 0.450 \\" in text
    assert text.strip().endswith(r"\end{table}")


def test_report_is_a_str_and_saves_without_overwriting(tmp_path: Path) -> None:
    rendered = rke.report(ALL_PAIRS, "latex")
    assert isinstance(rendered, str)
    assert rendered.text == str(rendered)
    assert rendered.format == "latex"
    path = tmp_path / "t.tex"
    with path.open("w") as out:
        out.write(rke.report(ALL_PAIRS, "latex"))  # the trial's F11
    assert path.read_text() == rendered.text
    with pytest.raises(rke.RankEvalError, match=r"t\.tex.*exists.*overwrite=True"):
        rendered.save(path)
    assert path.read_text() == rendered.text  # untouched
    other = tmp_path / "new.md"
    markdown = rke.report(ALL_PAIRS)
    assert markdown.save(other) == other
    assert other.read_text() == markdown.text + "\n"
    assert rendered.save(path, overwrite=True) == path
    assert path.read_text() == rendered.text + "\n"
    with pytest.raises(rke.RankEvalError, match="missing"):
        markdown.save(tmp_path / "missing" / "x.md")
    again = pickle.loads(pickle.dumps(rendered))
    assert (again.text, again.format) == (rendered.text, "latex")


def test_html_renders_in_notebooks() -> None:
    rendered = rke.report(ALL_PAIRS, "html")
    assert rendered._repr_html_() == str(rendered)
    assert rendered._repr_markdown_() is None
    assert "<b>0.4000</b><sup>a</sup>" in str(rendered)
    markdown = rke.report(ALL_PAIRS)
    assert markdown._repr_markdown_() == str(markdown)
    assert markdown._repr_latex_() is None


def test_a_real_comparison_renders() -> None:
    pytest.importorskip("scipy")
    log = pl.read_parquet(SAMPLE)
    comparison = rke.compare(log, ["ndcg@10", "map"], by="system", baseline="bm25")
    lines = str(rke.report(comparison)).splitlines()
    assert lines[2] == "| (a) bm25 | 0.5293 | 0.4392 |"
    assert lines[3] == "| (b) neural | **0.7065**<sup>a</sup> | **0.5983**<sup>a</sup> |"


# ---------------------------------------------------------------------------------------------
# Hostile names (audit section 4)
# ---------------------------------------------------------------------------------------------

HOSTILE = [
    "<script>alert(1)</script>",
    "</script><img src=x onerror=alert(2)>",
    "a|b",
    "x^y~z",
    r"\input{/etc/passwd}",
    "50% & $x_1$ #1 {}",
    "_emph_",
    "*bold*",
]


def _hostile() -> pl.DataFrame:
    rows = [("map<i>", "base", name, 0.2, 0.3, True) for name in HOSTILE]
    return _comparison(rows)


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)


def test_hostile_names_in_markdown() -> None:
    text = str(rke.report(_hostile()))
    body = text.replace("<sup>", "").replace("</sup>", "")
    assert "<" not in body  # every < of a name is &lt;
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;" in text
    assert "map&lt;i&gt;" in text
    # a | in a name is escaped, so every row keeps its two cells
    for line in text.splitlines()[:10]:
        assert line.replace("\\|", "").count("|") == 3
    assert r"50% &amp; $x_1$ #1 {}" in text
    assert r") \*bold\* |" in text
    assert r") \_emph\_ |" in text


def test_hostile_names_in_html() -> None:
    text = str(rke.report(_hostile(), "html"))
    parser = _Elements()
    parser.feed(text)
    # only the table's own elements: no <script>, <img> or <i> from a name
    assert set(parser.tags) <= {"table", "caption", "thead", "tbody", "tr", "th", "td", "b", "sup"}
    assert "&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;" in text


LATEX_NAMES = [
    r") a\textbar{}b &",
    r") x\textasciicircum{}y\textasciitilde{}z &",
    r") \textbackslash{}input\{/etc/passwd\} &",
    r") 50\% \& \$x\_1\$ \#1 \{\} &",
    r") \textless{}script\textgreater{}alert(1)\textless{}/script\textgreater{} &",
]


def test_hostile_names_in_latex() -> None:
    text = str(rke.report(_hostile(), "latex"))
    for name in LATEX_NAMES:
        assert name in text
    assert r"\input{" not in text
    assert r"map\textless{}i\textgreater{}" in text


def test_hostile_latex_compiles(tmp_path: Path) -> None:
    engine = shutil.which("pdflatex")
    if engine is None:
        pytest.skip("pdflatex is not installed: the LaTeX table is checked as text only")
    body = str(rke.report(_hostile(), "latex"))
    document = "\\documentclass{article}\n\\usepackage{booktabs}\n\\begin{document}\n"
    (tmp_path / "t.tex").write_text(document + body + "\n\\end{document}\n")
    result = subprocess.run(
        [engine, "-interaction=nonstopmode", "-no-shell-escape", "t.tex"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout[-2000:]
    assert "/etc/passwd" not in result.stdout or "input{" not in result.stdout


@pytest.mark.parametrize(
    ("call", "error", "pattern"),
    [
        (lambda: rke.report(ALL_PAIRS.drop("significant")), rke.ColumnNotFoundError, "significant"),
        (
            lambda: rke.report(ALL_PAIRS.drop("system_overall", "higher_is_better")),
            rke.ColumnNotFoundError,
            r"columns missing: \['higher_is_better', 'system_overall'\]",
        ),
        (lambda: rke.report(ALL_PAIRS, "pdf"), rke.InvalidOptionError, "format="),
        (lambda: rke.report(ALL_PAIRS.head(0)), rke.InvalidOptionError, "empty"),
        (lambda: rke.report(ALL_PAIRS, digits=-1), rke.InvalidOptionError, "digits="),
        (
            lambda: rke.report(ALL_PAIRS.with_columns(pl.lit(None).alias("higher_is_better"))),
            rke.ColumnValueError,
            "'map' has no direction",
        ),
        (
            lambda: rke.report(ALL_PAIRS.with_columns(pl.lit("yes").alias("significant"))),
            rke.ColumnTypeError,
            "'significant' must be Boolean",
        ),
    ],
)
def test_bad_input(call: object, error: type[Exception], pattern: str) -> None:
    with pytest.raises(error, match=pattern):
        call()  # type: ignore[operator]


def test_html_saved_as_a_file_is_a_complete_page(tmp_path: Path) -> None:
    # D12: report(format="html") saved to x.html was a bare <table> fragment.
    rendered = rke.report(_hostile(), "html")
    assert rendered.text.startswith("<table>")  # the fragment, to embed, is unchanged
    page_path = rendered.save(tmp_path / "table.html")
    page = page_path.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>\n")
    assert '<meta charset="utf-8">' in page
    assert f"<body>\n{rendered.text}\n</body>" in page
    parser = _Elements()
    parser.feed(page)
    page_tags = {"html", "head", "meta", "title", "style", "body"}
    table_tags = {"table", "caption", "thead", "tbody", "tr", "th", "td", "b", "sup"}
    assert set(parser.tags) <= page_tags | table_tags  # still nothing from a name
    assert page == rendered.document()
    # another suffix keeps the fragment; other formats have no page
    fragment = rendered.save(tmp_path / "table.txt").read_text(encoding="utf-8")
    assert fragment == rendered.text + "\n"
    with pytest.raises(rke.InvalidOptionError, match="this report is markdown"):
        rke.report(_hostile()).document()


def test_cli_compare_writes_a_page_to_an_html_file(tmp_path: Path, capsys) -> None:
    from polars_rankeval.cli import main

    sample = Path(__file__).resolve().parents[2] / "data" / "sample.parquet"
    target = tmp_path / "table.html"
    args = ["compare", str(sample), "--by", "system", "-m", "map", "--test", "sign"]
    assert main([*args, "-o", str(target)]) == 0
    page = target.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    assert page.rstrip().endswith("</html>")
    assert main([*args, "--format", "html"]) == 0
    fragment = capsys.readouterr().out
    assert fragment.startswith("<table>")
    assert fragment.strip() in page


def test_several_by_columns_are_shown_joined_for_display_only() -> None:
    per_query = pl.DataFrame(
        {
            "run": ["bm25"] * 4 + ["bm25"] * 4,
            "version": [1] * 4 + [2] * 4,
            "query": [1, 2, 3, 4] * 2,
            "map": [0.2, 0.4, 0.1, 0.3, 0.4, 0.5, 0.3, 0.6],
        }
    )
    compared = rke.compare_per_query(per_query, by=["run", "version"], baseline=("bm25", 1))
    lines = str(rke.report(compared)).splitlines()
    assert lines[0] == "| system | map |"
    assert lines[2] == "| (a) bm25 / 1 | 0.2500 |"
    assert lines[3] == "| (b) bm25 / 2 | **0.4500**<sup>a</sup> |"


def test_the_old_comparison_keyword_warns_and_still_works() -> None:
    with pytest.warns(rke.RankEvalDeprecationWarning, match="comparison= is renamed data="):
        old = rke.report(comparison=ALL_PAIRS)
    assert str(old) == str(rke.report(data=ALL_PAIRS))
