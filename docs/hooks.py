"""MkDocs hooks: pages built from the repository, not copied into ``docs/pages``.

* The plot gallery (``gallery/*.svg``) is rendered at build time from ``data/sample.parquet``
  by ``data/gallery/make_gallery.py``'s charts, so the site never shows a stale picture.
* The benchmarks page appends ``benchmarks/README.md`` (the measured tables), with its growth
  chart.

And two fixes to how the docstrings read on the site, where the source stays as it is (the
docstrings are also read in editors and by ``help()``, and their examples run as doctests):

* ``SphinxRoles``, a griffe extension named in ``mkdocs.yml``, turns the Sphinx roles of the
  docstrings (``:func:`~polars_rankeval.compare```) into links to the API reference:
  mkdocstrings reads Markdown, where a role would print as ``:func:`` and a code span.
* ``on_page_content`` renders doctests' ``<BLANKLINE>`` markers as the blank lines they stand
  for, on the pages and in the API reference.

And ``on_page_markdown`` drops the test runner's ``continued`` marker from code fences, which
SuperFences would otherwise not read as fences at all.
"""

from __future__ import annotations

import html
import importlib.util
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import griffe
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


# ```python continued: the test runner's marker for a block that goes on in the namespace of the
# one before (tests/project/test_readme.py); SuperFences takes no bare word after the language and
# would print the whole block as a paragraph
CONTINUED_FENCE = re.compile(r"^(?P<fence> *(?:`{3,}|~{3,}) *[\w+-]+) +continued *$", re.MULTILINE)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    """Drop the ``continued`` marker from code fences; extend the benchmarks page.

    The benchmarks page gets benchmarks/README.md appended, its headings one level down.
    """
    markdown = CONTINUED_FENCE.sub(r"\g<fence>", markdown)
    if page.file.src_uri != "benchmarks.md":
        return markdown
    measured = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    # one level down: the page has its own title
    lines = [("#" + line if line.startswith("#") else line) for line in measured.splitlines()]
    return markdown + "\n\n" + "\n".join(lines) + "\n"


# ---- Sphinx roles in docstrings -----------------------------------------------------------------

# :func:`name`, :class:`~pkg.mod.Name`, :meth:`title <pkg.Class.method>` (and the :py: domain)
ROLE = re.compile(
    r":(?:py:)?(?P<role>class|func|meth|attr|data|mod|exc|obj|const|type):"
    r"`(?:(?P<title>[^`<]*?)\s*<(?P<target>[^`>]+)>|(?P<bare>[^`]+))`"
)


def _objects(obj: griffe.Object) -> Iterator[griffe.Object]:
    """``obj`` and every object it defines (aliases, re-exports, are the objects elsewhere)."""
    yield obj
    for member in obj.members.values():
        if not member.is_alias and isinstance(member, griffe.Object):
            yield from _objects(member)


def _target(scope: griffe.Object, name: str, role: str) -> str:
    """The canonical path ``name`` means in ``scope``'s docstring, else ``name`` unchanged.

    A bare ``compare`` is resolved as Python would (the object's and its parents' scope), so
    the link goes to the function the module imports; a dotted ``Class.method`` resolves its
    first part. The canonical path is what mkdocstrings registers for a rendered object, also
    when the page documents it under a shorter public name (``polars_rankeval.Metric``). Where
    a function shares its module's name (``polars_rankeval.evaluate`` is the module to griffe,
    the function to Python), a role other than ``:mod:`` means the function.
    """
    head, _, rest = name.partition(".")
    paths = []
    for first, tail in ((name, ""), (head, rest)):
        try:
            path = scope.resolve(first)
        except (griffe.NameResolutionError, KeyError, ValueError):
            continue
        paths.append(f"{path}.{tail}" if tail else path)
    paths.append(name)  # already a full path: polars_rankeval.compare
    for full in paths:
        try:
            found = scope.modules_collection[full]
            if found.is_module and role != "mod" and found.name in found.members:
                found = found.members[found.name]
            return str(found.canonical_path)
        except (KeyError, ValueError, griffe.AliasResolutionError, griffe.CyclicAliasError):
            continue
    return paths[0]


def sphinx_roles_to_autorefs(text: str, scope: griffe.Object) -> str:
    """Replace each Sphinx role of ``text`` by an optional mkdocs-autorefs reference.

    ``~pkg.mod.name`` shows ``name``; an explicit title shows the title. The reference is
    optional: a target the site does not document (a private helper, a module) prints as code
    with its path in a tooltip, never as a broken link or a strict-build warning.
    """

    def replace(match: re.Match[str]) -> str:
        raw = match["target"] or match["bare"]
        short = raw.startswith("~")
        name = raw.lstrip("~").strip()
        shown = match["title"] or (name.rsplit(".", 1)[-1] if short else name)
        identifier = html.escape(_target(scope, name, match["role"]), quote=True)
        return (
            f'<autoref identifier="{identifier}" optional>'
            f"<code>{html.escape(shown)}</code></autoref>"
        )

    return ROLE.sub(replace, text)


class SphinxRoles(griffe.Extension):
    """Griffe extension: Sphinx roles in the package's docstrings become autorefs."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        """Rewrite every docstring of ``pkg`` once the whole package is loaded.

        Not earlier: a name a module imports after the function that mentions it resolves
        only then.
        """
        for obj in _objects(pkg):
            if obj.docstring is not None and ":" in obj.docstring.value:
                obj.docstring.value = sphinx_roles_to_autorefs(obj.docstring.value, obj)


# ---- <BLANKLINE> ---------------------------------------------------------------------------------

# highlighted as Python output (one span) or as Python code (three spans: < BLANKLINE >)
BLANKLINE = re.compile(
    r"(?:<span[^>]*>)?&lt;(?:</span>)?(?:<span[^>]*>)?BLANKLINE"
    r"(?:</span>)?(?:<span[^>]*>)?&gt;(?:</span>)?"
)


def on_page_content(html_text: str, page: Any, config: Any, files: Files) -> str:
    """Doctest output shows the blank line a ``<BLANKLINE>`` marker stands for."""
    return BLANKLINE.sub("", html_text)
