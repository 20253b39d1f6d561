"""``python -m polars_rankeval.cli``: the ``rank-eval`` command line."""

from __future__ import annotations

import sys

from polars_rankeval.cli import main

if __name__ == "__main__":
    sys.exit(main())
