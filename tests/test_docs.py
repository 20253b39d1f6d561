"""The documentation site builds with ``mkdocs build --strict`` and lists every page.

The build renders the API reference from the docstrings (mkdocstrings) and the plot gallery
from the sample (``docs/hooks.py``), so a broken link, a page missing from the navigation or an
API entry that no longer resolves fails here. The examples on the pages run in
``tests/test_readme.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


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


def test_site_builds_strictly(tmp_path: Path) -> None:
    # the docs extra is part of the test command; without it this fails and says so
    build = ["build", "--strict", "-f", str(DOCS / "mkdocs.yml"), "-d", str(tmp_path / "site")]
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
    site = tmp_path / "site"
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
