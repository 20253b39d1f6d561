"""What every test folder shares.

The suite mirrors the package: ``metrics/`` (one file per metric family), ``engine/`` (the
route of a log through evaluate: inputs, plan, passes, streaming, ties), ``comparison/``,
``gate/``, ``cli/``, ``agreement/``, ``plot/``, ``spark/``; ``conformance/`` checks each preset
against its reference tool (trec_eval, ir_measures, ranx, torchmetrics, NTCIREVAL, the
recommender libraries); ``properties/`` holds the generated-data, fuzz, fault and mutant tests;
``api/`` the public surface and ``project/`` the docs, README, notebook, style and benchmark
scripts. Generators and brute-force references live in ``tests/support/``.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

#: The repository root, and the sample log the README and the docs use.
ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "sample.parquet"
#: trec_eval's own test files (tests/data/README.md).
TREC_DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="session")
def sample_log() -> pl.DataFrame:
    """``data/sample.parquet``: the README's sample log (query, item, score, relevance, system)."""
    return pl.read_parquet(SAMPLE)
