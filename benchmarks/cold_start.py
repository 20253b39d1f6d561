"""Cold start: what ``import polars_rankeval`` and ``rank-eval --help`` cost over ``import polars``.

``python benchmarks/cold_start.py [--repeat 15]`` runs each command in a fresh interpreter,
alternating, after one warm-up run of each that writes the bytecode (as ``pip install`` does;
``PYTHONDONTWRITEBYTECODE`` is cleared for the children), and prints the median wall time of
each and its difference to ``import polars``. The target (issue "Speed where researchers and
analysts are"): at most 0.3 s over ``import polars`` for both.

Also prints which of the package's modules the import loads, and whether any optional extra
(scipy, altair, pyspark, vl_convert) or a heavy module of ours is among them (they are imported
when used).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

COMMANDS = {
    "python": [sys.executable, "-c", "pass"],
    "import polars": [sys.executable, "-c", "import polars"],
    "import polars_rankeval": [sys.executable, "-c", "import polars_rankeval"],
    "rank-eval --help": [sys.executable, "-m", "polars_rankeval", "--help"],
}
EXTRAS = ("scipy", "altair", "pyspark", "vl_convert", "pyarrow", "pandas", "matplotlib")


def wall(command: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=env)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    for command in COMMANDS.values():  # warm-up: bytecode written, files in the page cache
        wall(command, env)
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(args.repeat):
        for name, command in COMMANDS.items():
            times[name].append(wall(command, env))
    medians = {name: statistics.median(values) for name, values in times.items()}
    print(
        f"{args.repeat} fresh interpreters each, alternating; load average {os.getloadavg()[0]:.2f}"
    )
    for name, median in medians.items():
        over = median - medians["import polars"]
        print(f"{name:24} {median:.3f} s median ({over:+.3f} s over import polars)")
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, polars_rankeval; print(' '.join(sorted(sys.modules)))",
        ],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    ).stdout.split()
    ours = [name for name in loaded if name.startswith("polars_rankeval")]
    extras = [name for name in EXTRAS if name in loaded]
    print(
        f"modules of ours loaded by the import: {len(ours)}; "
        f"optional extras loaded: {extras or 'none'}"
    )


if __name__ == "__main__":
    main()
