"""The plot gallery's charts, drawn from data/sample.parquet (public API only).

The documentation site renders them when it is built (``docs/hooks.py`` calls ``charts()``),
so the gallery always shows what the current code draws. To look at them without the site:

python data/gallery/make_gallery.py   # needs the plot extra: pip install ".[plot]"

which writes one PNG per chart next to this script (not kept in the repository).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import vl_convert

import polars_rankeval as rke

HERE = Path(__file__).resolve().parent
SAMPLE = HERE.parent / "sample.parquet"


def charts() -> dict[str, object]:
    log = pl.read_parquet(SAMPLE)
    per_query = rke.evaluate(log, ["ndcg@10", "map"], by="system", per_query=True)
    comparison = rke.compare(log, ["ndcg@10", "map", "mrr"], by="system", baseline="bm25")
    return {
        "metric_at_k": rke.plot.metric_at_k(log, "ndcg", [1, 3, 5, 10, 20, 50, 100], by="system"),
        "per_query_delta": rke.plot.per_query_delta(per_query, "ndcg@10", "bm25", "neural"),
        "systems": rke.plot.systems(comparison),
        "distribution": rke.plot.distribution(per_query, "ndcg@10"),
        "precision_recall": rke.plot.precision_recall(log, by="system"),
    }


def main() -> None:
    for name, chart in charts().items():
        path = HERE / f"{name}.png"
        path.write_bytes(vl_convert.vegalite_to_png(chart.to_json(), scale=2))
        print(f"wrote {path.relative_to(HERE.parent.parent)}")


if __name__ == "__main__":
    main()
