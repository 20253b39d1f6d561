"""A notebook is a client: one built here runs headless in a real IPython kernel (nbclient).

The notebook evaluates a tiny log, compares, displays the report and every ``rke.plot`` chart
as a cell's last expression, and forces a progress bar. Executing it must raise nothing, the
executed notebook must pass ``nbformat.validate`` (what ``jupyter nbconvert --execute`` checks
before it writes anything), and the chart outputs must carry the Vega-Lite spec under a
``+json`` key (nbformat's rule for JSON mimetypes) and an SVG. The field report: a chart's key
``application/vnd.vegalite.v6.json`` held a dict, so nbclient raised at the first chart cell and
nbconvert wrote no notebook.
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path
from typing import Any

import pytest

nbformat = pytest.importorskip("nbformat", reason="nbformat is in the test extra")
nbclient = pytest.importorskip("nbclient", reason="nbclient is in the test extra")
pytest.importorskip("ipykernel", reason="ipykernel is in the test extra")
pytest.importorskip("altair", reason="the charts need the plot extra")
pytest.importorskip("vl_convert", reason="the SVG fallback needs the plot extra")

#: nbformat's pattern for mimetypes whose value may be any JSON (nbformat.v4 schema,
#: definitions/misc/mimebundle); every other key must hold a string or a list of strings.
JSON_MIME = re.compile(r"^application/(.*\+)?json$")
VEGALITE = re.compile(r"^application/vnd\.vegalite\.v\d+\+json$")

SETUP = """\
import polars as pl
import polars_rankeval as rke

log = pl.DataFrame({
    "system": ["a"] * 6 + ["b"] * 6,
    "query": [1, 1, 1, 2, 2, 2] * 2,
    "item": ["x", "y", "z", "u", "v", "w"] * 2,
    "score": [3.0, 2.0, 1.0, 3.0, 2.0, 1.0, 1.0, 2.0, 3.0, 2.0, 3.0, 1.0],
    "relevance": [1, 0, 2, 0, 1, 1] * 2,
})
per_query = rke.evaluate(log, ["ndcg@3", "map"], by="system", per_query=True)
comparison = rke.compare(log, ["ndcg@3", "map"], by="system", baseline="a")
"""

#: (cell source, what its output must hold): each chart is the cell's last expression.
CELLS: list[tuple[str, str]] = [
    (SETUP, ""),
    ("rke.evaluate(log, ['ndcg@3'], by='system', n_buckets=2, progress=True)", "text/html"),
    ("comparison", "text/html"),
    ("rke.report(comparison, 'html')", "text/html"),
    ("rke.report(comparison)", "text/plain"),
    ("rke.plot.metric_at_k(log, 'ndcg', [1, 2, 3], by='system')", "chart"),
    ("rke.plot.per_query_delta(per_query, 'ndcg@3', baseline='a', system='b')", "chart"),
    ("rke.plot.systems(comparison)", "chart"),
    ("rke.plot.distribution(per_query, 'map')", "chart"),
    ("rke.plot.precision_recall(log, by='system')", "chart"),
]


def _notebook() -> Any:
    cells = [nbformat.v4.new_code_cell(source) for source, _ in CELLS]
    return nbformat.v4.new_notebook(cells=cells)


def _client(notebook: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A client whose kernel has started, running this interpreter; a skip if none can start.

    The kernel spec is written under ``tmp_path`` (``JUPYTER_PATH``), so the kernel is this
    Python, where the package is installed, whatever kernels the machine has registered;
    ``IPYTHONDIR`` keeps its history out of the user's profile.
    """
    import json

    kernels = tmp_path / "jupyter" / "kernels" / "rke-test"
    kernels.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    spec = {"argv": argv, "display_name": "rke test", "language": "python"}
    (kernels / "kernel.json").write_text(json.dumps(spec))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    work = tmp_path / "work"
    work.mkdir()
    client = nbclient.NotebookClient(
        notebook, timeout=120, kernel_name="rke-test", resources={"metadata": {"path": str(work)}}
    )
    client.km = client.create_kernel_manager()
    try:
        client.start_new_kernel(cwd=str(work))
        client.start_new_kernel_client()
    except Exception as error:  # a kernel that cannot start is a skip, said why
        if client.km.has_kernel:
            client.km.shutdown_kernel(now=True)
        pytest.skip(f"no IPython kernel could start here: {type(error).__name__}: {error}")
    return client


def test_notebook_runs_headless_and_validates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    notebook = _notebook()
    started = time.perf_counter()
    client = _client(notebook, tmp_path, monkeypatch)
    # raises CellExecutionError on a cell's error, and nbformat's validation error on an
    # output it rejects (the field report's crash)
    client.execute()
    elapsed = time.perf_counter() - started
    nbformat.validate(notebook)  # what nbconvert checks before it writes the notebook
    # it also survives a write and a read back, as nbconvert --to notebook does
    path = tmp_path / "executed.ipynb"
    nbformat.write(notebook, str(path))
    nbformat.validate(nbformat.read(str(path), as_version=4))

    for cell, (source, expected) in zip(notebook.cells, CELLS, strict=True):
        errors = [out for out in cell.outputs if out.output_type == "error"]
        assert not errors, (source, errors)
        results = [out for out in cell.outputs if out.output_type == "execute_result"]
        if not expected:
            continue
        assert len(results) == 1, (source, cell.outputs)
        data = results[0].data
        for key, value in data.items():
            # a JSON value only under a JSON mimetype, else text (nbformat's rule)
            assert JSON_MIME.match(key) or isinstance(value, str), (source, key)
        if expected == "chart":
            vegalite = [key for key in data if VEGALITE.match(key)]
            assert len(vegalite) == 1, (source, sorted(data))
            assert data[vegalite[0]]["$schema"].startswith(
                "https://vega.github.io/schema/vega-lite/"
            )
            assert data["image/svg+xml"].lstrip().startswith("<svg"), source
            assert data["text/plain"] == "<rke.plot chart>"
        else:
            assert expected in data, (source, sorted(data))
    # the forced progress bar wrote to the cell's stderr, not as an error
    bar = notebook.cells[1].outputs
    assert any(out.output_type == "stream" and out.name == "stderr" for out in bar), bar
    assert elapsed < 60, f"the notebook took {elapsed:.1f} s"


def test_chart_bundle_validates_without_a_kernel() -> None:
    """The same check on each chart's bundle alone, so it runs where no kernel can start."""
    import polars as pl

    import polars_rankeval as rke

    per_query = pl.DataFrame(
        {"system": ["a", "b"] * 2, "query": [1, 1, 2, 2], "m": [0.1, 0.4, 0.3, 0.2]}
    )
    for chart in (
        rke.plot.distribution(per_query, "m"),
        rke.plot.per_query_delta(per_query, "m", baseline="a", system="b"),
    ):
        bundle = chart._repr_mimebundle_()
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        output = nbformat.v4.new_output("execute_result", data=data, execution_count=1)
        cell = nbformat.v4.new_code_cell("chart", outputs=[output], execution_count=1)
        nbformat.validate(nbformat.v4.new_notebook(cells=[cell]))
        assert [key for key in data if VEGALITE.match(key)], sorted(data)
        assert "image/svg+xml" in data
