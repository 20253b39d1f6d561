"""Chart style and offline output: sizes, palettes, shapes, axes, titles, saving.

Every chart comes back through :func:`_offline`, so ``chart.save`` writes HTML with Vega
inlined and every ``<`` of the embedded JSON escaped, and a notebook shows the Vega-Lite
spec plus an SVG drawn offline. :func:`save` does the same for any Altair chart. Altair is
imported only inside the functions that draw.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from os import PathLike
from pathlib import Path
from typing import Any, Final, TypeVar

import polars as pl

from polars_rankeval.comparison._pairing import SYSTEM_SEPARATOR
from polars_rankeval.io import write_atomically

#: Default chart size in pixels (the plotting area; axes, title and legend come on top).
WIDTH, HEIGHT = 500, 300

_EXTRA = 'pip install "polars-rankeval[plot]"'
_SCHEME: Final = "tableau10"
#: Vega's tableau20: with more than 10 systems each gets one of these 20 colours, and past
#: 20 a marker shape as well, so no two systems look the same (up to 20 × 8 = 160).
_TABLEAU20: Final = (
    *("#4c78a8", "#9ecae9", "#f58518", "#ffbf79", "#54a24b", "#88d27a", "#b79a20"),
    *("#f2cf5b", "#439894", "#83bcb6", "#e45756", "#ff9d98", "#79706e", "#bab0ac"),
    *("#d67195", "#fcbfd2", "#b279a2", "#d6a5c9", "#9e765f", "#d8b5a5"),
)
_SHAPES: Final = (
    *("circle", "square", "triangle-up", "diamond", "cross"),
    *("triangle-down", "triangle-left", "triangle-right"),
)


def _require_altair(function: str) -> None:
    """Raise an ImportError naming the extra when Altair is missing (the charts need it)."""
    try:
        import altair  # type: ignore[import-not-found,unused-ignore]  # noqa: F401
    except ImportError as error:
        msg = (
            f"rke.plot.{function}() draws with Altair, which is not installed: {_EXTRA} "
            f"(rke.plot.{function}_data() returns the same data as a Polars frame without it)"
        )
        raise ImportError(msg) from error


class _ScriptSafeEncoder(json.JSONEncoder):
    r"""JSON whose strings never hold a literal ``<``, so it cannot end an HTML ``<script>``.

    Altair embeds ``json.dumps(spec)`` in a ``<script>`` element; a system named
    ``</script><img onerror=...>`` would end that element. ``\u003c`` is the same character
    to JSON, and ``<`` only occurs inside JSON strings.
    """

    def encode(self, o: Any) -> str:
        return super().encode(o).replace("<", "\\u003c")


def _inline_possible() -> bool:
    """Inline HTML embeds Vega from vl-convert (the plot extra); without it, use the CDN."""
    try:
        import vl_convert  # type: ignore[import-not-found,unused-ignore]  # noqa: F401
    except ImportError:
        return False
    return True


def _html_options(kwargs: dict[str, Any], *, html: bool = True) -> dict[str, Any]:
    options = dict(kwargs)
    if html:  # Altair warns about inline= for PNG, SVG and the rest
        options.setdefault("inline", _inline_possible())
    options["json_kwds"] = {**(options.get("json_kwds") or {}), "cls": _ScriptSafeEncoder}
    return options


def _is_html(fp: object, format: object) -> bool:
    if format is not None:
        return format == "html"
    return isinstance(fp, (str, PathLike)) and str(fp).lower().endswith(".html")


def save(chart: Any, path: str | PathLike[str], *, overwrite: bool = False, **options: Any) -> Path:
    r"""Save any Altair chart offline and safely: HTML with Vega inlined, names escaped.

    The format follows the suffix (``.html``, ``.png``, ``.svg``, ``.pdf``, ``.json``), as
    ``chart.save`` does. HTML embeds the Vega libraries (from vl-convert, the ``plot``
    extra), so the page renders without network, and every ``<`` of the chart's JSON is
    written ``\u003c``, so no label can end the page's ``<script>``. Charts from
    ``rke.plot`` already save this way with ``chart.save(path)``; use this function for charts
    composed from them (``a | b``) or drawn with Altair directly.

    Parameters
    ----------
    chart
        An Altair chart.
    path
        The file to write.
    overwrite
        Replace an existing file (default: refuse, naming it).
    **options
        Other keywords of Altair's ``chart.save`` (``scale_factor=2`` for a sharper PNG).

    Returns
    -------
    Path
        The path written.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_rankeval as rke
    >>> per_query = pl.DataFrame({"system": ["a", "b"], "query": [1, 1], "map": [0.2, 0.5]})
    >>> chart = rke.plot.distribution(per_query, "map")  # doctest: +SKIP
    >>> rke.plot.save(chart, "distribution.html")  # doctest: +SKIP
    """
    target = Path(path)
    html = _is_html(target, options.get("format"))
    # whole or not at all (a temporary file beside it, renamed into place)
    return write_atomically(
        target,
        lambda out: chart.save(str(out), **_html_options(options, html=html)),
        overwrite=overwrite,
        who="rke.plot.save()",
    )


def _vegalite_mimetype() -> str:
    """``application/vnd.vegalite.v<major>+json`` for the Vega-Lite that Altair writes.

    Not Altair 6's ``VEGALITE_MIME_TYPE`` (``application/vnd.vegalite.v6.json``): nbformat
    accepts a JSON value only under ``application/json`` or ``application/...+json``, so a
    notebook holding that key fails validation (nbclient raises, ``nbconvert --execute``
    writes nothing). ``+json`` is the form JupyterLab's renderers and Altair's own
    ``spec_to_mimebundle(format="vega-lite")`` use.
    """
    import altair as alt  # type: ignore[import-not-found,unused-ignore]

    major = str(alt.VEGALITE_VERSION).lstrip("v").split(".")[0]
    return f"application/vnd.vegalite.v{major}+json"


def _bundle(chart: Any) -> dict[str, Any]:
    """The notebook output: the Vega-Lite spec (no network) and an SVG drawn offline."""
    spec = chart.to_dict()
    bundle: dict[str, Any] = {_vegalite_mimetype(): spec, "text/plain": "<rke.plot chart>"}
    if _inline_possible():
        import vl_convert  # type: ignore[import-not-found,unused-ignore]

        bundle["image/svg+xml"] = vl_convert.vegalite_to_svg(spec)
    return bundle


_OFFLINE_CLASSES: dict[type, type] = {}
ChartT = TypeVar("ChartT")


def _offline(chart: ChartT) -> ChartT:
    """The chart, made to save and display offline and escaped (same class name and data).

    Its ``save``/``to_html`` default to ``inline=True`` and escape ``<`` in the embedded JSON;
    in a notebook with Altair's default (CDN) renderer it shows as the Vega-Lite mimetype
    plus an SVG. Another renderer enabled by the user is left to Altair.
    """
    import altair as alt  # type: ignore[import-not-found,unused-ignore]

    base: Any = type(chart)
    made = _OFFLINE_CLASSES.get(base)
    if made is None:

        def to_html(self: Any, *args: Any, **kwargs: Any) -> str:
            return str(base.to_html(self, *args, **_html_options(kwargs)))

        def save_chart(self: Any, fp: Any, format: Any = None, **kwargs: Any) -> None:
            html = _is_html(fp, format)
            base.save(self, fp, format, **_html_options(kwargs, html=html))

        def repr_bundle(self: Any, *args: Any, **kwargs: Any) -> Any:
            if alt.renderers.active != "default":
                return base._repr_mimebundle_(self, *args, **kwargs)
            return _bundle(self)

        namespace = {"to_html": to_html, "save": save_chart, "_repr_mimebundle_": repr_bundle}
        made = type(base.__name__, (base,), namespace)
        made.__module__ = base.__module__
        _OFFLINE_CLASSES[base] = made
    # Altair's SchemaBase.__setattr__ stores attributes as chart properties; bypass it.
    object.__setattr__(chart, "__class__", made)
    return chart


def _axis(alt: Any, title: str | None, **options: Any) -> Any:
    """An axis with fonts a notch larger than Vega-Lite's defaults (readable in a PNG)."""
    return alt.Axis(title=title, labelFontSize=12, titleFontSize=13, **options)


def _legend(alt: Any, title: str | None, **options: Any) -> Any:
    return alt.Legend(title=title, labelFontSize=12, titleFontSize=13, **options)


def _color(alt: Any, field: str | None, keys: Sequence[str], data: pl.DataFrame) -> dict[str, Any]:
    """Colour (and past 20 systems, shape) per system, with a legend naming each.

    Up to 10 systems: tableau10. Up to 20: tableau20. Past 20: tableau20 and a marker shape
    per block of 20, so colours never repeat silently.
    """
    if field is None:
        return {}
    legend = _legend(alt, SYSTEM_SEPARATOR.join(keys), symbolLimit=0)
    names = data[field].cast(pl.String).unique().drop_nulls().sort().to_list()
    if len(names) <= 10:
        return {"color": alt.Color(f"{field}:N", legend=legend, scale=alt.Scale(scheme=_SCHEME))}
    colours = [_TABLEAU20[i % len(_TABLEAU20)] for i in range(len(names))]
    encodings = {
        "color": alt.Color(
            f"{field}:N", legend=legend, scale=alt.Scale(domain=names, range=colours)
        )
    }
    if len(names) > len(_TABLEAU20):
        shapes = [_SHAPES[(i // len(_TABLEAU20)) % len(_SHAPES)] for i in range(len(names))]
        encodings["shape"] = alt.Shape(
            f"{field}:N", legend=legend, scale=alt.Scale(domain=names, range=shapes)
        )
    return encodings


def _title(alt: Any, text: str, subtitle: str | list[str] | None = None) -> Any:
    return alt.Title(
        text,
        subtitle=subtitle or "",
        fontSize=15,
        subtitleFontSize=12,
        subtitleColor="#555555",
        anchor="start",
    )


def _number(value: object) -> str:
    finite = isinstance(value, (int, float)) and math.isfinite(value)
    return f"{value:.4f}" if finite else "–"
