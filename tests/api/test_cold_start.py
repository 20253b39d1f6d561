"""Cold start: the import and ``rank-eval --help`` load no optional extra and no heavy library.

What they cost is measured in ``benchmarks/cold_start.py`` (no timed tests); this holds the
reason it stays small: scipy (``stats``), altair and vl-convert (``plot``), pyspark (``spark``),
pandas, pyarrow and tqdm are imported only by the function that uses them.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("scipy", "altair", "vl_convert", "pyspark", "pandas", "pyarrow", "tqdm", "IPython")
_LOADED = "import sys; print(' '.join(name for name in {heavy!r} if name in sys.modules))"

IMPORT = f"import polars_rankeval; {_LOADED.format(heavy=HEAVY)}"
HELP = f"""
import runpy, sys
sys.argv = ["rank-eval", "--help"]
try:
    runpy.run_module("polars_rankeval", run_name="__main__")
except SystemExit:
    pass
sys.stdout = sys.__stderr__
{_LOADED.format(heavy=HEAVY)}
"""


@pytest.mark.parametrize("code", [IMPORT, HELP], ids=["import", "rank-eval --help"])
def test_cold_start_loads_no_optional_extra(code: str) -> None:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    # --help prints to stdout; the list of loaded heavy modules goes to stderr there
    loaded = (done.stderr if "runpy" in code else done.stdout).split()
    assert loaded == [], f"imported at start: {loaded}"
