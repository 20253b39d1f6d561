"""The mutation sample (benchmarks/mutation_sample.py) still applies to the current code.

The sample itself runs the suite once per mutant (minutes), so it lives in benchmarks/; here
only its ``--check`` runs: every mutant's line is still where the script looks for it, so a
refactor that moves or rewrites one is noticed and the sample cannot quietly stop testing.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_mutant_still_applies() -> None:
    script = ROOT / "benchmarks" / "mutation_sample.py"
    done = subprocess.run(
        [sys.executable, str(script), "--check"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # round 3's 20 mutants (R3-M01 ... R3-M20) and round 4's 34 (M01 ... M34)
    assert "54 mutants apply" in done.stdout
