"""Draw the growth curve of benchmarks/README.md (rows vs time and peak RSS) as a PNG.

The figures are the measured ones from the README's growth table (one run per row, see there);
this script only draws them: ``python benchmarks/growth_chart.py`` writes
``benchmarks/growth.png`` (needs the ``plot`` extra).
"""

from __future__ import annotations

from pathlib import Path

import altair as alt
import polars as pl
import vl_convert

HERE = Path(__file__).resolve().parent

# rows, wall seconds, CPU seconds (None: not recorded), peak RSS in MB: benchmarks/README.md.
MEASURED = [
    (1_000_000, 0.41, 1.5, 245),  # the suite table's rke_lazy (1M, unsorted)
    # issue 21's rerun on the final code (partial sums, read once, order-free sums)
    (10_000_000, 2.56, 5.6, 661),
    (100_000_000, 32.4, 62.1, 781),
    (1_000_000_000, 362.1, 690.8, 1451),
]


def main() -> None:
    frame = pl.DataFrame(MEASURED, schema=["rows", "wall", "cpu", "rss"], orient="row")
    times = frame.unpivot(index="rows", on=["wall", "cpu"], variable_name="time", value_name="s")
    times = times.drop_nulls()
    linear = pl.DataFrame({"rows": [1e7, 1e9], "s": [2.56, 256.0], "time": "linear from 10M"})
    scale = alt.Scale(type="log")
    time_chart = (
        alt.Chart(pl.concat([times, linear.cast({"s": pl.Float64})], how="diagonal_relaxed"))
        .mark_line(point=True)
        .encode(
            x=alt.X("rows:Q", scale=scale, title="rows in the log"),
            y=alt.Y("s:Q", scale=scale, title="seconds"),
            color=alt.Color("time:N", title=None),
            strokeDash=alt.condition(
                alt.datum.time == "linear from 10M", alt.value([4, 4]), alt.value([1, 0])
            ),
        )
        .properties(width=360, height=260, title="Standard suite: time")
    )
    rss_chart = (
        alt.Chart(frame)
        .mark_line(point=True, color="#e45756")
        .encode(
            x=alt.X("rows:Q", scale=scale, title="rows in the log"),
            y=alt.Y("rss:Q", title="peak RSS (MB)", scale=alt.Scale(domain=[0, 2000])),
        )
        .properties(width=300, height=260, title="Peak RSS (target: 1.5 GB at 1B)")
    )
    chart = alt.hconcat(time_chart, rss_chart).configure_axis(labelFontSize=12, titleFontSize=13)
    png = vl_convert.vegalite_to_png(chart.to_json(), scale=2)
    (HERE / "growth.png").write_bytes(png)


if __name__ == "__main__":
    main()
