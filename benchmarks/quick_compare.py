"""Quick side-by-side timing: polars_rankeval vs pytrec_eval on one synthetic log.

Run: ``python benchmarks/quick_compare.py [n_queries]`` (default 10,000 queries x 100 items).
It writes the log to a temporary Parquet file, evaluates the standard suite
(ndcg@10, map, mrr, p@10, recall@100) lazily from the file and eagerly from a DataFrame, then
with pytrec_eval (including building its dicts from the same frame), checks that the per-query
values agree and prints wall times. The full benchmark suite is tracked in issue "Scale".
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

import polars_rankeval as rke

SUITE = {
    "ndcg@10": "ndcg_cut_10",
    "map": "map",
    "mrr": "recip_rank",
    "p@10": "P_10",
    "recall@100": "recall_100",
}


def make_log(n_queries: int, n_items: int = 100, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    n = n_queries * n_items
    return pl.DataFrame(
        {
            "query": np.repeat(np.arange(n_queries), n_items),
            "item": np.tile(np.arange(n_items), n_queries) * 7919 % 100_003,
            "score": np.round(rng.random(n), 3),  # 3 decimals: ties; exact enough for float32
            "relevance": rng.choice([0, 1, 2], n, p=[0.9, 0.07, 0.03]),
        }
    )


def main() -> None:
    n_queries = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    log = make_log(n_queries)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "log.parquet"
        log.write_parquet(path)
        start = time.perf_counter()
        lazy = rke.evaluate(pl.scan_parquet(path), list(SUITE), per_query=True).collect()
        lazy_s = time.perf_counter() - start
    start = time.perf_counter()
    rke.evaluate(log, list(SUITE), per_query=True)
    eager_s = time.perf_counter() - start

    import pytrec_eval

    start = time.perf_counter()
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for query, item, score, label in log.iter_rows():
        qrels.setdefault(str(query), {})[str(item)] = int(label)
        run.setdefault(str(query), {})[str(item)] = float(score)
    theirs = pytrec_eval.RelevanceEvaluator(qrels, set(SUITE.values())).evaluate(run)
    pytrec_s = time.perf_counter() - start

    worst = 0.0
    for row in lazy.iter_rows(named=True):
        for ours, trec in SUITE.items():
            worst = max(worst, abs(row[ours] - theirs[str(row["query"])][trec]))
    print(f"rows={log.height:,} queries={n_queries:,} max |diff| vs pytrec_eval={worst:.1e}")
    print(f"polars_rankeval lazy (scan_parquet): {lazy_s:.2f} s")
    print(f"polars_rankeval eager (DataFrame):   {eager_s:.2f} s")
    print(f"pytrec_eval (dicts + evaluate):      {pytrec_s:.2f} s")
    lazy_x, eager_x = pytrec_s / lazy_s, pytrec_s / eager_s
    print(f"speed-up vs pytrec_eval: {lazy_x:.1f}x (lazy), {eager_x:.1f}x (eager)")


if __name__ == "__main__":
    main()
