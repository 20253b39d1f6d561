"""MkDocs hooks: pages built from the repository, not copied into ``docs/pages``.

* The plot gallery (``gallery/*.svg``) is rendered at build time from ``data/sample.parquet``
  by ``data/gallery/make_gallery.py``'s charts, so the site never shows a stale picture.
* The benchmarks page appends ``benchmarks/README.md`` (the measured tables), with its growth
  chart.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[1]


def _gallery_charts() -> dict[str, Any]:
    spec = importlib.util.spec_from_file_location(
        "make_gallery", ROOT / "data" / "gallery" / "make_gallery.py"
    )
    if spec is None or spec.loader is None:
        msg = "data/gallery/make_gallery.py cannot be loaded"
        raise RuntimeError(msg)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    charts: dict[str, Any] = module.charts()
    return charts


def on_files(files: Files, config: Any) -> Files:
    """Add the gallery's SVGs, rendered now, and the benchmarks' growth chart."""
    import vl_convert

    for name, chart in _gallery_charts().items():
        svg = vl_convert.vegalite_to_svg(chart.to_json())
        files.append(File.generated(config, f"gallery/{name}.svg", content=svg))
    growth = (ROOT / "benchmarks" / "growth.png").read_bytes()
    files.append(File.generated(config, "growth.png", content=growth))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    """Append benchmarks/README.md (headings one level down) to the benchmarks page."""
    if page.file.src_uri != "benchmarks.md":
        return markdown
    measured = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    # one level down: the page has its own title
    lines = [("#" + line if line.startswith("#") else line) for line in measured.splitlines()]
    return markdown + "\n\n" + "\n".join(lines) + "\n"
