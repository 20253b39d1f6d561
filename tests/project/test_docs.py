"""The documentation site builds with ``mkdocs build --strict`` and lists every page.

The build renders the API reference from the docstrings (mkdocstrings) and the plot gallery
from the sample (``docs/hooks.py``), so a broken link, a page missing from the navigation or an
API entry that no longer resolves fails here. The examples on the pages run in
``tests/project/test_readme.py``; this module checks what a reader sees that a passing example does
not show: the rendered HTML (cross-references, ``<BLANKLINE>``, the stylesheet) and that every
file an example reads is shipped in the repository, so the examples run on a fresh clone and
not only in the test's prepared directory.
"""

from __future__ import annotations

import html
import importlib.util
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from tests.project.test_readme import PAGES, PYTHON, SHELL, _commands, _is_cli, parse_blocks

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _nav_pages(entries: object) -> set[str]:
    if isinstance(entries, str):
        return {entries}
    if isinstance(entries, list):
        return set().union(*(_nav_pages(entry) for entry in entries))
    if isinstance(entries, dict):
        return set().union(*(_nav_pages(value) for value in entries.values()))
    return set()


def test_every_page_is_in_the_navigation() -> None:
    yaml = pytest.importorskip("yaml", reason="PyYAML comes with the docs extra (mkdocs)")
    config = yaml.safe_load((DOCS / "mkdocs.yml").read_text(encoding="utf-8"))
    pages = {path.relative_to(DOCS / "pages").as_posix() for path in DOCS.rglob("pages/**/*.md")}
    assert _nav_pages(config["nav"]) == pages


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built once for this module's tests with ``mkdocs build --strict``."""
    # the docs extra is part of the test command; without it this fails and says so
    out = tmp_path_factory.mktemp("site")
    build = ["build", "--strict", "-f", str(DOCS / "mkdocs.yml"), "-d", str(out / "site")]
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", *build],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, (
        "mkdocs build --strict failed (install the docs extra: pip install -e '.[docs]')\n"
        + done.stdout[-4000:]
        + done.stderr[-4000:]
    )
    return out / "site"


def test_site_builds_strictly(site: Path) -> None:
    assert (site / "index.html").is_file()
    # the API reference rendered the docstrings, and the gallery was drawn by the build
    api = (site / "reference" / "api" / "index.html").read_text(encoding="utf-8")
    assert "Evaluate ranking metrics over a long-format table" in api
    assert sorted(path.name for path in (site / "gallery").iterdir()) == [
        "distribution.svg",
        "metric_at_k.svg",
        "per_query_delta.svg",
        "precision_recall.svg",
        "systems.svg",
    ]


# ---- what the reader sees ------------------------------------------------------------------------


def _text(page: str) -> str:
    """A page's visible text: tags dropped, entities decoded, whitespace collapsed."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def test_api_reference_shows_links_not_sphinx_roles(site: Path) -> None:
    api = (site / "reference" / "api" / "index.html").read_text(encoding="utf-8")
    text = _text(api)
    roles = re.findall(r":(?:class|func|meth|attr|mod|data|exc|obj):\S{0,40}", text)
    assert roles == [], f"raw Sphinx roles on the API page: {roles[:5]}"
    # evaluate's docstring names the warning with :class:`~polars_rankeval.EmptyEvaluationWarning`
    # and compare's names evaluate: both are links to their entries on the page now
    links = dict(
        re.findall(r'<a class="autorefs[^"]*"[^>]*href="#([^"]+)"[^>]*><code>([^<]+)<', api)
    )
    assert links.get("polars_rankeval.errors.EmptyEvaluationWarning") == "EmptyEvaluationWarning"
    assert links.get("polars_rankeval.evaluate") in {
        "evaluate",
        "polars_rankeval.evaluate",
    }
    assert links.get("polars_rankeval.compare") in {"compare", "polars_rankeval.compare"}


def test_api_headings_and_signatures_read_as_users_call_them(site: Path) -> None:
    api = (site / "reference" / "api" / "index.html").read_text(encoding="utf-8")
    heading = re.search(r'<h2 id="polars_rankeval\.evaluate"[^>]*>(.*?)</h2>', api, re.S)
    assert heading is not None
    assert (
        _text(heading[1]).split()[0] == "evaluate"
    )  # not polars_rankeval._engine.evaluate.evaluate
    # the signature is a block of its own: one parameter a line, annotations by their last name
    signature = re.search(r'<div class="doc-signature[^"]*"[^>]*>(.*?)</div>', api, re.S)
    assert signature is not None
    lines = html.unescape(re.sub(r"<[^>]+>", "", signature[1])).strip().splitlines()
    assert lines[0] == "evaluate("
    assert "    per_query: bool = False," in lines
    assert not any("polars_rankeval." in line for line in lines)


def test_doctest_blank_lines_render_blank(site: Path) -> None:
    sources = [page.read_text(encoding="utf-8") for page in PAGES]
    assert any("<BLANKLINE>" in source for source in sources)  # else the check below is vacuous
    shown = [
        path.relative_to(site).as_posix()
        for path in site.rglob("*.html")
        if "BLANKLINE" in path.read_text(encoding="utf-8")
    ]
    assert shown == []


def test_every_code_block_renders_as_code(site: Path) -> None:
    # a fence Markdown does not read (```python continued, the test runner's marker) prints
    # its backticks and code as a paragraph
    sources = [page.read_text(encoding="utf-8") for page in PAGES]
    assert any("```python continued" in source for source in sources)  # the case exists
    printed = []
    for path in site.rglob("*.html"):
        page = path.read_text(encoding="utf-8")
        article = page[page.find("<article") : page.find("</article>")]
        prose = re.sub(r"<(pre|code)\b.*?</\1>", "", article, flags=re.S)
        if "```" in html.unescape(prose):
            printed.append(path.relative_to(site).as_posix())
    assert printed == [], "code fences printed as text"


def test_every_page_loads_the_stylesheet_for_wide_tables(site: Path) -> None:
    css = (site / "stylesheets" / "extra.css").read_text(encoding="utf-8")
    rule = re.search(r"\.md-typeset table:not\(\[class\]\)\s*\{([^}]*)\}", css)
    assert rule is not None
    assert "overflow-x: auto" in rule[1]
    assert "max-width: 100%" in rule[1]
    pages = list(site.rglob("*.html"))
    assert len(pages) > 20
    missing = [p.name for p in pages if "stylesheets/extra.css" not in p.read_text("utf-8")]
    assert missing in ([], ["404.html"])


def _hooks() -> ModuleType:
    return _load(DOCS / "hooks.py", "docs_hooks")


def test_sphinx_roles_become_optional_autorefs() -> None:
    griffe = pytest.importorskip("griffe", reason="griffe comes with the docs extra")
    package = griffe.load("polars_rankeval", search_paths=[str(ROOT)])
    text = (
        "See :func:`~polars_rankeval.evaluate`, :class:`polars_rankeval.TieWarning`, "
        ":class:`the warning <polars_rankeval.errors.EmptyQueriesWarning>`, "
        ":mod:`polars_rankeval.errors` and :func:`no_such_thing`."
    )
    got = _hooks().sphinx_roles_to_autorefs(text, package)
    found = re.findall(
        r'<autoref identifier="([^"]+)" optional><code>([^<]+)</code></autoref>', got
    )
    assert found == [
        ("polars_rankeval._engine.evaluate.evaluate", "evaluate"),  # the function, not its module
        ("polars_rankeval.errors.TieWarning", "polars_rankeval.TieWarning"),
        ("polars_rankeval.errors.EmptyQueriesWarning", "the warning"),
        ("polars_rankeval.errors", "polars_rankeval.errors"),
        ("no_such_thing", "no_such_thing"),  # unresolved: code, not an error
    ]
    assert not re.search(r":(func|class|mod):", got)


@pytest.mark.parametrize(
    "highlighted",
    [
        '<span class="go">&lt;BLANKLINE&gt;</span>',  # doctest output (pycon)
        '<span class="o">&lt;</span><span class="n">BLANKLINE</span><span class="o">&gt;</span>',
        "&lt;BLANKLINE&gt;",  # not highlighted
    ],
)
def test_blankline_marker_is_removed_and_nothing_else(highlighted: str) -> None:
    page = f'<pre><code>| a |\n{highlighted}\n<span class="o">*</span>&lt;b&gt;</code></pre>'
    got = _hooks().on_page_content(page, None, None, None)
    assert got == '<pre><code>| a |\n\n<span class="o">*</span>&lt;b&gt;</code></pre>'


# ---- every file an example reads is shipped ------------------------------------------------------

# string literals and arguments that name a file or folder an example reads
PATHLIKE = re.compile(r"^[\w.*=/-]*(/|\.(parquet|txt|csv|tsv|jsonl?|ndjson|gz))[\w.*=/-]*$")
OUTPUT_OPTIONS = {"-o", "--output", "--spill-dir"}
# a python line that writes the path it names
WRITES = re.compile(r"\.(save|write_\w+|sink_\w+)\(|\bopen\([^)]*[\"']w")


def _read_paths() -> list[tuple[str, str]]:
    """(where, path) for every path an example of README.md or a docs page reads.

    ``where`` is ``page:line`` for python, ``page:line command...`` for a shell command.
    """
    found = []
    for page in PAGES:
        for block in parse_blocks(page.read_text(encoding="utf-8"), page):
            if block.lang in PYTHON:
                for number, line in enumerate(block.source.splitlines(), block.line + 1):
                    if WRITES.search(line) or line.lstrip().startswith("#"):
                        continue
                    for literal in re.findall(r"\"([^\"\n]+)\"|'([^'\n]+)'", line):
                        value = literal[0] or literal[1]
                        if PATHLIKE.match(value):
                            found.append((f"{block.page}:{number}", value))
            elif block.lang in SHELL:
                for command in _commands(block.source):
                    argv = _is_cli(command)
                    for before, token in zip([None, *(argv or [])], argv or [], strict=False):
                        if before in OUTPUT_OPTIONS or token.startswith("-"):
                            continue
                        if PATHLIKE.match(token) and not re.fullmatch(r"[\w@,.]+", token):
                            found.append((f"{block.where} {shlex.join(command)[:60]}", token))
    return found


# (page, start of the command, path): an example that reads a file the repository does not ship
# yet, with the reason in a comment. Empty: every example runs on a fresh clone.
NOT_SHIPPED_YET: set[tuple[str, str, str]] = set()


def _exempt(where: str, path: str) -> bool:
    page, _, rest = where.partition(":")
    command = rest.partition(" ")[2]
    return any((page, path) == (p, q) and command.startswith(c) for p, c, q in NOT_SHIPPED_YET)


def test_every_file_an_example_reads_is_in_the_repository() -> None:
    paths = _read_paths()
    # the scan sees the examples: the sample, the partitioned log and the TREC files at least
    seen = {path for _, path in paths}
    assert {"data/sample.parquet", "data/logs/**/*.parquet", "data/trec/run.txt"} <= seen
    missing = [
        (where, path)
        for where, path in paths
        if not any(ROOT.glob(path)) and not _exempt(where, path)
    ]
    assert missing == [], "examples read files a fresh clone does not have"
    # an entry that is no longer needed goes, so the exception cannot outlive its reason
    for entry in NOT_SHIPPED_YET:
        assert any(_exempt(where, path) for where, path in paths), f"{entry} is not needed"


def test_data_logs_is_what_make_sample_writes(tmp_path: Path) -> None:
    make_sample = _load(ROOT / "data" / "make_sample.py", "make_sample")
    written = make_sample.write_logs(make_sample.make_sample(), tmp_path / "logs")
    shipped = sorted(
        p.relative_to(ROOT / "data" / "logs") for p in (ROOT / "data" / "logs").rglob("*.parquet")
    )
    assert sorted(p.relative_to(tmp_path / "logs") for p in written) == shipped
    assert [p.as_posix() for p in shipped] == [
        "date=2024-06-01/model=bm25/part.parquet",
        "date=2024-06-01/model=neural/part.parquet",
        "date=2024-06-02/model=bm25/part.parquet",
        "date=2024-06-02/model=neural/part.parquet",
    ]
    for part in shipped:
        assert_frame_equal(
            pl.read_parquet(ROOT / "data" / "logs" / part),
            pl.read_parquet(tmp_path / "logs" / part),
        )
    # small enough to commit: a few hundred KB
    assert sum(p.stat().st_size for p in (ROOT / "data" / "logs").rglob("*")) < 400_000
    # read as a pipeline would: partition columns from the folder names, 300 queries a day
    scanned = pl.scan_parquet(ROOT / "data" / "logs" / "**" / "*.parquet", hive_partitioning=True)
    counts = (
        scanned.group_by("date", "model").agg(pl.col("query").n_unique()).sort("date", "model")
    ).collect()
    assert counts["query"].to_list() == [300, 300, 300, 300]
    assert counts["date"].dtype == pl.Date


def test_data_trec_is_trec_evals_test_collection() -> None:
    trec, tests_data = ROOT / "data" / "trec", ROOT / "tests" / "data"
    assert (trec / "run.txt").read_bytes() == (tests_data / "results.test").read_bytes()
    assert (trec / "qrels.txt").read_bytes() == (tests_data / "qrels.test").read_bytes()
    assert (trec / "trunc.txt").read_bytes() == (tests_data / "results.trunc").read_bytes()
