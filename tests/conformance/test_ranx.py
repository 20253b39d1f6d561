"""Cross-check against ranx, a second independent implementation.

ranx covers metrics pytrec_eval lacks (hits@k, f1@k, hit_rate@k). The generated log avoids the
places where ranx knowingly differs from trec_eval (see metric-conventions in the README):
no tied scores (ranx's tie order is unspecified), no negative labels (ranx counts them as judged
non-relevant in bpref), and every query has a judged non-relevant item (ranx bpref is NaN
otherwise). ranx 0.3.21 returns 0 for most queries when bpref is evaluated over many queries at
once, while each query evaluated alone gives the trec_eval value; so bpref is compared query by
query.
"""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl
import pytest

import polars_rankeval as rke
from tests.support.logs import tie_free_log, trec_dicts

ranx = pytest.importorskip("ranx")

# ranx metric name -> ours
METRICS = {
    "hits@5": "hits@5",
    "hits@20": "hits@20",
    "f1@5": "f1@5",
    "f1@20": "f1@20",
    "hit_rate@1": "hit_rate@1",
    "hit_rate@5": "hit_rate@5",
    "precision@10": "p@10",
    "recall@10": "recall@10",
    "map": "map",
    "map@5": "map@5",
    "mrr": "mrr",
    "mrr@3": "mrr@3",
    "ndcg@10": "ndcg@10",
    "r-precision": "r_precision",
    "bpref": "bpref",
}


@pytest.fixture(scope="module")
def comparison() -> tuple[pl.DataFrame, dict[str, np.ndarray], list[str]]:
    log = tie_free_log(
        11, 60, min_items=3, max_items=30, label_p=(0.6, 0.2, 0.1, 0.1), first_is_nonrelevant=True
    )
    qrels, run = trec_dicts(log)
    ranx_order = list(ranx.Run(run).keys())  # the order of ranx's per-query arrays
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        batch = [name for name in METRICS if name != "bpref"]
        theirs = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), batch, return_mean=False)
        theirs["bpref"] = np.array(
            [
                ranx.evaluate(ranx.Qrels({q: qrels[q]}), ranx.Run({q: run[q]}), "bpref")
                for q in ranx_order
            ]
        )
    ours = rke.evaluate(log, list(METRICS.values()), per_query=True)
    return ours, theirs, ranx_order


@pytest.mark.parametrize("ranx_name", list(METRICS))
def test_matches_ranx_per_query(comparison, ranx_name):
    ours, theirs, ranx_queries = comparison
    ours_by_query = dict(zip(ours["query"], ours[METRICS[ranx_name]], strict=True))
    assert sorted(ours_by_query) == sorted(ranx_queries)
    expected = np.asarray(theirs[ranx_name], dtype=float)
    got = np.array([ours_by_query[q] for q in ranx_queries], dtype=float)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9, err_msg=ranx_name)
