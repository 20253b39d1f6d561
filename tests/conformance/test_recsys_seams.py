"""Where the list converter meets the presets: every preset on both shapes of a recommender log.

A recommender's output reaches ``evaluate`` in two shapes:

* ``from_lists``: per-user lists; a recommended item outside the ground truth is labelled 0
  (judged non-relevant), a ground-truth item that was not recommended is an unretrieved row;
* a long log joined by hand from a rating table (Recommenders' ``rating_true``): the held-out
  items carry their (positive) rating, a recommended item outside them has a null label.

Each preset must give its tool's number on both shapes, as a DataFrame and as a LazyFrame. The
expected values come from plain-Python transcriptions of each tool's formula (cited at each
function), fed the tool's own input (the ranked lists and the ground truth with its ratings),
never from this library. ``from_lists`` carries no ratings: its ground truth is rated 1.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import polars as pl
import pytest

import polars_rankeval as rke
from tests.support import reference

K = 3
# user -> the recommended items, best first (scores 10, 9, ...: no ties)
RECOMMENDED: dict[int, list[int]] = {
    1: [10, 11, 12, 13, 14],
    2: [11, 15, 10, 16, 17],
    3: [18, 19, 20, 21, 22],  # no hit at all
    4: [12, 13, 14, 10, 11],
    5: [16, 17, 18, 19, 13],
}
# user -> {held-out item: rating}; ratings 1..3 (gdeval's grades stop at 4)
TRUTH: dict[int, dict[int, int]] = {
    1: {10: 3, 13: 1, 30: 2},  # ranks 1 and 4, and one item not recommended
    2: {15: 2},  # rank 2
    3: {31: 1, 32: 3},  # nothing recommended
    4: {12: 1, 13: 3, 14: 2},  # ranks 1, 2, 3
    5: {13: 2, 33: 1},  # rank 5, and one not recommended
}
TRAIN = pl.DataFrame(
    {
        "user": [1, 1, 2, 2, 3, 3, 4, 6, 6, 7],
        "item": [10, 11, 10, 12, 10, 13, 15, 16, 10, 11],
    }
)
N_CATALOG = 40  # RecBole's num_items


def _score(rank: int) -> float:
    return float(10 - rank)  # rank 0 (best) scores 10


def _lists() -> pl.DataFrame:
    users = sorted(RECOMMENDED)
    return pl.DataFrame(
        {
            "user": users,
            "recommended": [RECOMMENDED[u] for u in users],
            "relevant": [sorted(TRUTH[u]) for u in users],
        }
    )


def from_lists_log() -> pl.DataFrame:
    return rke.from_lists(_lists(), relevant="relevant")


def joined_log() -> pl.DataFrame:
    """The recommendations full-joined by hand with the rating table (nulls outside it)."""
    recs = pl.DataFrame(
        [(u, i, _score(r)) for u, items in RECOMMENDED.items() for r, i in enumerate(items)],
        schema={"user": pl.Int64, "item": pl.Int64, "score": pl.Float64},
        orient="row",
    )
    ratings = pl.DataFrame(
        [(u, i, g) for u, items in TRUTH.items() for i, g in items.items()],
        schema={"user": pl.Int64, "item": pl.Int64, "relevance": pl.Int64},
        orient="row",
    )
    return recs.join(ratings, on=["user", "item"], how="full", coalesce=True)


def _truth(graded: bool) -> dict[int, dict[int, int]]:
    """The ground truth a tool sees: the ratings, or 1 for each item (from_lists)."""
    return {u: {i: (g if graded else 1) for i, g in t.items()} for u, t in TRUTH.items()}


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def _log2_dcg(gains: list[float]) -> float:
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains))


# ---- Spark mllib RankingMetrics (RankingMetrics.scala, Spark 3.4+ with relevance values) ----


def spark(truth: dict[int, dict[int, int]]) -> dict[str, float]:
    p, r, ap_k, ap, nd = [], [], [], [], []
    for u, pred in RECOMMENDED.items():
        # the label array, most relevant first (Spark takes the ideal list in the given order)
        lab = sorted(truth[u], key=lambda i, u=u: -truth[u][i])
        rel = {i: float(truth[u][i]) for i in lab}
        hits = [i in rel for i in pred]
        # precisionAt: countRelevantItemRatio(pred, lab, k, k); recallAt: ... / lab.size
        p.append(sum(hits[:K]) / K)
        r.append(sum(hits[:K]) / len(lab))
        # averagePrecision(pred, lab, k): precSum / min(labSet.size, k); uncut: / labSet.size
        for n, denominator, out in ((K, min(len(lab), K), ap_k), (len(pred), len(lab), ap)):
            cnt, total = 0, 0.0
            for i in range(min(n, len(pred))):
                if hits[i]:
                    cnt += 1
                    total += cnt / (i + 1)
            out.append(total / denominator)
        # ndcgAt(k) with relevance: gain 2^rel - 1, discount 1 / ln(i + 2), i < n
        n = min(max(len(pred), len(lab)), K)
        dcg = sum((2.0 ** rel.get(pred[i], 0.0) - 1) / math.log(i + 2) for i in range(n))
        ideal = sum((2.0 ** rel[lab[i]] - 1) / math.log(i + 2) for i in range(min(n, len(lab))))
        nd.append(dcg / ideal)
    return {"p@3": _mean(p), "recall@3": _mean(r), "map@3": _mean(ap_k)} | {
        "map": _mean(ap),
        "ndcg@3": _mean(nd),
    }


# ---- Microsoft Recommenders python_evaluation (precision_at_k, recall_at_k, map_at_k,
# ndcg_at_k(score_type="binary")), relevancy_method="top_k" -----------------------------------


def recommenders(truth: dict[int, dict[int, int]]) -> dict[str, float]:
    # merge_ranking_true_pred: df_hit = the top-k predictions found in rating_true (rank
    # 1-based), df_hit_count: hits and "actual" = |rating_true of the user|; n_users = users
    # in both tables
    users = [u for u in RECOMMENDED if u in truth]
    p = r = ap = nd = 0.0
    for u in users:
        ranks = [rank for rank, i in enumerate(RECOMMENDED[u][:K], 1) if i in truth[u]]
        actual = len(truth[u])
        p += len(ranks) / K
        r += len(ranks) / actual
        # map_at_k: rr = (cumcount + 1) / rank, summed, divided by min(actual, k)
        ap += sum((j + 1) / rank for j, rank in enumerate(ranks)) / min(actual, K)
        # ndcg_at_k, binary: rel 1, discount ln(1 + rank); ideal: the first k of rating_true
        dcg = sum(1 / math.log(1 + rank) for rank in ranks)
        idcg = sum(1 / math.log(1 + irank) for irank in range(1, min(actual, K) + 1))
        nd += dcg / idcg
    n = len(users)
    return {"p@3": p / n, "recall@3": r / n, "map@3": ap / n, "ndcg@3": nd / n}


# ---- sklearn.metrics.ndcg_score (_ndcg_sample_scores): one row per user over the supplied
# (recommended) items, y_true = the rating or 0; an all-zero row scores 0 and is averaged ------


def sklearn(truth: dict[int, dict[int, int]]) -> dict[str, float]:
    values = []
    for u, pred in RECOMMENDED.items():
        y_true = [float(truth[u].get(i, 0)) for i in pred]  # already in y_score order
        ideal = _log2_dcg(sorted(y_true, reverse=True)[:K])
        values.append(_log2_dcg(y_true[:K]) / ideal if ideal else 0.0)
    return {"ndcg@3": _mean(values)}


# ---- ranx (metrics/*.py): qrels filtered to rel >= rel_lvl (1); run = the recommendations;
# ndcg "jarvelin" gain = rel over log2(rank + 1), ideal from the qrels -------------------------


def ranx(truth: dict[int, dict[int, int]]) -> dict[str, float]:
    p, r, ap, rr, nd = [], [], [], [], []
    for u, pred in RECOMMENDED.items():
        qrels = {i: g for i, g in truth[u].items() if g >= 1}
        hits = [i in qrels for i in pred[:K]]
        p.append(sum(hits) / K)
        r.append(sum(hits) / len(qrels))
        cnt, total = 0, 0.0
        for i, hit in enumerate(hits):
            if hit:
                cnt += 1
                total += cnt / (i + 1)
        ap.append(total / len(qrels))
        rr.append(next((1 / (i + 1) for i, hit in enumerate(hits) if hit), 0.0))
        gains = [float(qrels.get(i, 0)) for i in pred[:K]]
        nd.append(_log2_dcg(gains) / _log2_dcg(sorted(qrels.values(), reverse=True)[:K]))
    return {"p@3": _mean(p), "recall@3": _mean(r), "map@3": _mean(ap)} | {
        "mrr@3": _mean(rr),
        "ndcg@3": _mean(nd),
    }


# ---- torchmetrics retrieval (functional retrieval_precision/recall/average_precision/
# reciprocal_rank/normalized_dcg, empty_target_action="neg"): only the supplied rows exist;
# binary target for P/R/AP/RR, the graded target for NDCG -----------------------------------


def torchmetrics(truth: dict[int, dict[int, int]]) -> dict[str, float]:
    p, r, ap, rr, nd = [], [], [], [], []
    for u, pred in RECOMMENDED.items():
        target = [truth[u].get(i, 0) for i in pred]
        positives = sum(1 for t in target if t > 0)
        hits = [t > 0 for t in target[:K]]
        if positives == 0:  # empty_target_action="neg": the query scores 0
            p.append(0.0), r.append(0.0), ap.append(0.0), rr.append(0.0), nd.append(0.0)
            continue
        p.append(sum(hits) / K)
        r.append(sum(hits) / positives)
        # retrieval_average_precision(top_k): mean precision at the hits in the top k
        precisions = [sum(hits[: i + 1]) / (i + 1) for i, hit in enumerate(hits) if hit]
        ap.append(_mean(precisions) if precisions else 0.0)
        rr.append(next((1 / (i + 1) for i, hit in enumerate(hits) if hit), 0.0))
        ideal = _log2_dcg(sorted(map(float, target), reverse=True)[:K])
        nd.append(_log2_dcg([float(t) for t in target[:K]]) / ideal)
    return {"p@3": _mean(p), "recall@3": _mean(r), "map@3": _mean(ap)} | {
        "mrr@3": _mean(rr),
        "ndcg@3": _mean(nd),
    }


# ---- gdeval.pl (TREC Web track): nDCG@k gain 2^g - 1 over log2(rank + 1), ideal from every
# judged document; ERR@k with R = (2^g - 1) / 2^4 -------------------------------------------


def gdeval(truth: dict[int, dict[int, int]]) -> dict[str, float]:
    nd, err = [], []
    for u, pred in RECOMMENDED.items():
        grades = [truth[u].get(i, 0) for i in pred[:K]]
        gains = [2.0**g - 1 for g in grades]
        ideal = _log2_dcg(sorted((2.0**g - 1 for g in truth[u].values()), reverse=True)[:K])
        nd.append(_log2_dcg(gains) / ideal)
        stop, total = 1.0, 0.0
        for rank, g in enumerate(grades, 1):
            chance = (2.0**g - 1) / 16
            total += stop * chance / rank
            stop *= 1 - chance
        err.append(total)
    return {"ndcg@3": _mean(nd), "err@3": _mean(err)}


# ---- trec_eval and ir_measures (pytrec_eval): tests/support/reference.py, written from
# trec_eval's C sources, reads the log's own rows (a from_lists log has judged 0 rows, the
# joined one unjudged rows: bpref differs between them, and so does trec_eval) ----------------

TREC_METRICS = ["p@3", "recall@3", "map", "ndcg@3", "mrr", "bpref"]


def trec(log: pl.DataFrame, missing_queries: str) -> dict[str, float]:
    rows = log.select("user", "item", "score", "relevance").iter_rows()
    values = reference.per_query(rows, TREC_METRICS, missing_queries=missing_queries)
    return {m: float(v) for m, v in reference.summary(values, TREC_METRICS).items()}  # type: ignore[arg-type]


# ---- label-free presets: the same number on both shapes --------------------------------------


def _top() -> dict[int, list[int]]:
    return {u: items[:K] for u, items in RECOMMENDED.items()}


def _train_users() -> dict[int, set[int]]:
    users: dict[int, set[int]] = {}
    for user, item in TRAIN.iter_rows():
        users.setdefault(item, set()).add(user)
    return users


def _train_counts() -> dict[int, int]:
    counts: dict[int, int] = {}
    for _, item in TRAIN.iter_rows():
        counts[item] = counts.get(item, 0) + 1
    return counts


def _gini_recommended(counts: list[int]) -> float:
    counts = sorted(counts)
    m = len(counts)
    return sum((2 * j - m - 1) * c for j, c in enumerate(counts, 1)) / ((m - 1) * sum(counts))


def evidently() -> dict[str, float]:
    # legacy/metrics/recsys: PopularityBias.get_apr (distinct train users, items absent from
    # train dropped), get_coverage (recommended train items / train items), get_gini (over the
    # recommended items); PersonalizationMetric: 1 - mean pairwise overlap / k
    top, users = _top(), _train_users()
    # a list with no train item has a NaN mean, which pandas' outer mean skips
    pops = [[len(users[i]) for i in items if i in users] for items in top.values()]
    arp = _mean([_mean(p) for p in pops if p])
    recommended = {i for items in top.values() for i in items}
    coverage = len(recommended & set(users)) / len(users)
    counts: dict[int, int] = {}
    for items in top.values():
        for i in items:
            counts[i] = counts.get(i, 0) + 1
    lists = list(top.values())
    n = len(lists)
    overlap = sum(
        len(set(a) & set(b)) for x, a in enumerate(lists) for y, b in enumerate(lists) if x != y
    )
    return {
        "arp@3": arp,
        "coverage@3": coverage,
        "gini@3": _gini_recommended(list(counts.values())),
        "personalization@3": 1 - overlap / (K * n * (n - 1)),
    }


def recbole() -> dict[str, float]:
    # recbole/evaluator/metrics.py: ItemCoverage, GiniIndex (over num_items), AveragePopularity
    # (interaction counts, 0 when absent)
    top, counts = _top(), _train_counts()
    recommended = [i for items in top.values() for i in items]
    item_count: dict[int, int] = {}
    for i in recommended:
        item_count[i] = item_count.get(i, 0) + 1
    sorted_count = sorted(item_count.values())
    m, total = len(sorted_count), len(recommended)
    idx = range(N_CATALOG - m + 1, N_CATALOG + 1)
    gini = sum((2 * j - N_CATALOG - 1) * c for j, c in zip(idx, sorted_count, strict=True))
    return {
        "coverage@3": len(item_count) / N_CATALOG,
        "gini@3": gini / total / N_CATALOG,
        "arp@3": _mean([_mean([counts.get(i, 0) for i in items]) for items in top.values()]),
    }


def replay() -> dict[str, float]:
    # replay/metrics: Coverage (recommended train items / train items), Surprisal
    # (log2(N / users(i)) / log2(N), absent 1, summed over the top k / k), Novelty (= unseen)
    top, users = _top(), _train_users()
    n_users = TRAIN["user"].n_unique()
    seen: dict[int, set[int]] = {}
    for user, item in TRAIN.iter_rows():
        seen.setdefault(user, set()).add(item)
    recommended = {i for items in top.values() for i in items}

    def weight(i: int) -> float:
        return math.log2(n_users / len(users[i])) / math.log2(n_users) if i in users else 1.0

    return {
        "coverage@3": len(recommended & set(users)) / len(users),
        "surprisal@3": _mean([sum(weight(i) for i in items) / K for items in top.values()]),
        "unseen@3": _mean(
            [len([i for i in items if i not in seen.get(u, set())]) / K for u, items in top.items()]
        ),
    }


def _check(
    log: pl.DataFrame, lazy: bool, convention: str, expected: dict[str, float], **kw: Any
) -> None:
    frame: pl.DataFrame | pl.LazyFrame = log.lazy() if lazy else log
    out = rke.evaluate(frame, list(expected), query="user", convention=convention, **kw)
    if isinstance(out, pl.LazyFrame):
        out = out.collect()
    got = out.row(0, named=True)
    for metric, value in expected.items():
        assert got[metric] == pytest.approx(value, abs=1e-12), (convention, metric)


SHAPES: dict[str, tuple[Callable[[], pl.DataFrame], bool]] = {
    # shape -> (the log, whether its ground truth carries the ratings)
    "from_lists": (from_lists_log, False),
    "joined": (joined_log, True),
}


@pytest.mark.parametrize("lazy", [False, True], ids=["DataFrame", "LazyFrame"])
@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize(
    "convention", ["spark", "recommenders", "ranx", "gdeval", "sklearn", "torchmetrics"]
)
def test_accuracy_presets_give_their_tool_on_both_log_shapes(
    convention: str, shape: str, lazy: bool
) -> None:
    make, graded = SHAPES[shape]
    truth = _truth(graded)
    # sklearn and torchmetrics give every supplied row a target (0 outside the ground truth):
    # on the joined log user 3's recommended rows are all unlabelled, and the tools average in
    # its 0 (the presets' unlabelled="zero": no judgment concept).
    expected: dict[str, float] = {
        "spark": lambda: spark(truth),
        "recommenders": lambda: recommenders(truth),
        "ranx": lambda: ranx(truth),
        "gdeval": lambda: gdeval(truth),
        "sklearn": lambda: sklearn(truth),
        "torchmetrics": lambda: torchmetrics(truth),
    }[convention]()
    _check(make(), lazy, convention, expected)


@pytest.mark.parametrize("lazy", [False, True], ids=["DataFrame", "LazyFrame"])
@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize(
    ("convention", "missing"), [("trec_eval", "skip"), ("ir_measures", "zero")]
)
def test_trec_presets_on_both_log_shapes(
    convention: str, missing: str, shape: str, lazy: bool
) -> None:
    log = SHAPES[shape][0]()
    _check(log, lazy, convention, trec(log, missing))


@pytest.mark.parametrize("lazy", [False, True], ids=["DataFrame", "LazyFrame"])
@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("convention", ["evidently", "recbole", "replay"])
def test_label_free_presets_on_both_log_shapes(convention: str, shape: str, lazy: bool) -> None:
    expected, kw = {
        "evidently": (evidently, {}),
        "recbole": (recbole, {"catalog": N_CATALOG}),
        "replay": (replay, {}),
    }[convention]
    _check(SHAPES[shape][0](), lazy, convention, expected(), train=TRAIN, **kw)


def _auc(pos: list[float], neg: list[float]) -> float:
    return sum(1.0 for p in pos for n in neg if p > n) / (len(pos) * len(neg))


# Impressions with clicks (GAUC's input): every shown item has a 0/1 label.
CLICKS: dict[int, list[int]] = {1: [1, 0, 0, 1, 0], 2: [0, 1, 1, 0, 0], 3: [0, 0, 0, 0, 0]}
CLICKS |= {4: [1, 1, 0, 0, 0], 5: [0, 0, 1, 0, 1]}


@pytest.mark.parametrize("lazy", [False, True], ids=["DataFrame", "LazyFrame"])
@pytest.mark.parametrize("convention", ["recbole", "torchrec"])
def test_gauc_presets_on_both_log_shapes(convention: str, lazy: bool) -> None:
    # RecBole GAUC: Σ_u |pos_u| AUC_u / Σ_u |pos_u|; TorchRec: the plain mean; users with one
    # class left out by both (no ties here, so tie credit and identical scores do not matter)
    weighted, total, plain = 0.0, 0, []
    for clicks in CLICKS.values():
        scores = [_score(r) for r in range(len(clicks))]
        pos = [s for s, c in zip(scores, clicks, strict=True) if c]
        neg = [s for s, c in zip(scores, clicks, strict=True) if not c]
        if pos and neg:
            weighted += len(pos) * _auc(pos, neg)
            total += len(pos)
            plain.append(_auc(pos, neg))
    expected = weighted / total if convention == "recbole" else _mean(plain)
    users = sorted(CLICKS)
    lists = pl.DataFrame(
        {
            "user": users,
            "recommended": [RECOMMENDED[u] for u in users],
            "clicks": [CLICKS[u] for u in users],
        }
    )
    by_lists = rke.from_lists(lists, labels="clicks")
    joined = pl.DataFrame(
        [(u, i, _score(r), CLICKS[u][r]) for u in users for r, i in enumerate(RECOMMENDED[u])],
        schema={"user": pl.Int64, "item": pl.Int64, "score": pl.Float64, "relevance": pl.Int64},
        orient="row",
    )
    for log in (by_lists, joined):
        _check(log, lazy, convention, {"gauc": expected})


def test_a_random_recommender_never_scores_one() -> None:
    # trial 2.1: from_lists + the recommenders preset gave p@3 = ndcg@3 = 1.0 (every
    # recommended item counted relevant); Recommenders' precision_at_k gives (1/3 + 0) / 2
    lists = pl.DataFrame(
        {"user": [1, 2], "recommended": [[10, 11, 12], [10, 13, 14]], "relevant": [[11], [55]]}
    )
    log = rke.from_lists(lists, relevant="relevant")
    for convention in ("recommenders", "spark"):
        out = rke.evaluate(log, ["p@3"], query="user", convention=convention)
        assert out.item() == pytest.approx(1 / 6, abs=1e-15)


# Each beyond-accuracy metric's declared direction and its anchor in the reference tools:
# RecBole's ``smaller`` flags (recbole/evaluator/metrics.py), Evidently's presentation
# (legacy/metrics/recsys), Recommenders' docstrings (python_evaluation.py), RePlay's and
# LensKit's docs.
DIRECTIONS = {
    "arp@5": "lower",  # RecBole AveragePopularity smaller=True; Evidently: popularity bias
    "gini@5": "lower",  # RecBole GiniIndex smaller=True (inequality of exposure)
    "ils@5": "lower",  # LensKit ILS: similarity, the inverse of diversity
    "fall_out@5": "lower",  # torchmetrics RetrievalFallOut: the false-positive share
    "aplt@5": "higher",  # RecBole TailPercentage (smaller unset): more long tail
    "aclt@5": "higher",  # Abdollahpouri et al. / Elliot ACLT: more long-tail items
    "coverage@5": "higher",  # RecBole ItemCoverage; Recommenders catalog_coverage
    "entropy@5": "higher",  # RecBole ShannonEntropy; Recommenders distributional_coverage
    "novelty@5": "higher",  # Recommenders novelty, Evidently NoveltyMetric (more novel)
    "surprisal@5": "higher",  # RePlay Surprisal
    "unseen@5": "higher",  # RePlay Novelty
    "personalization@5": "higher",  # Evidently PersonalizationMetric (more personal)
    "ild@5": "higher",  # Recommenders diversity, Evidently DiversityMetric
    "categorical_diversity@5": "higher",  # RePlay CategoricalDiversity
    "serendipity@5": "higher",  # Recommenders serendipity, Evidently SerendipityMetric
    "unexpectedness@5(baseline=b)": "higher",  # RePlay Unexpectedness
    "gauc": "higher",  # RecBole GAUC, TorchRec GAUC
    "auc": "higher",
}


@pytest.mark.parametrize(("metric", "direction"), list(DIRECTIONS.items()))
def test_beyond_accuracy_directions_follow_the_tools(metric: str, direction: str) -> None:
    assert rke.parse_metric(metric).direction == direction


def test_a_table_no_metric_reads_is_said() -> None:
    log = from_lists_log()
    items = pl.DataFrame({"item": list(range(10, 34)), "x": [float(i % 3) for i in range(24)]})
    # ild under the recommenders preset measures similarity by train co-occurrence
    with pytest.warns(rke.UnusedTableWarning, match=r"option items= .*'ild@3'.*co-occurrence"):
        rke.evaluate(
            log, ["ild@3"], query="user", convention="recommenders", train=TRAIN, items=items
        )
    # coverage of the train items under the preset: the catalog is not its denominator
    with pytest.warns(rke.UnusedTableWarning, match=r"option catalog= is not read .*coverage@3"):
        rke.evaluate(
            log, ["coverage@3"], query="user", convention="recommenders", train=TRAIN, catalog=40
        )
    # every table read: no warning
    rke.evaluate(
        log,
        ["ild@3", "coverage@3", "novelty@3"],
        query="user",
        train=TRAIN,
        items=items,
        catalog=40,
    )


@pytest.mark.parametrize("name", ["n", "s", "p", "d", "t", "m", "q", "u", "self", "total"])
def test_beyond_accuracy_metrics_take_any_column_name(name: str) -> None:
    # short internal column names once collided with a user's by= or query column (a raw
    # Polars DuplicateError); the values must not depend on the column's name
    log = from_lists_log().with_columns(pl.lit("a").alias("system"))
    items = pl.DataFrame({"item": list(range(10, 34)), "x": [float(i % 3) for i in range(24)]})
    items = items.with_columns(y=pl.col("x") * 2 - 1, g=(pl.col("item") % 2).cast(pl.String))
    metrics = ["coverage@3", "entropy@3", "gini@3", "gini@3(over=catalog)", "personalization@3"]
    metrics += ["ild@3(features=x+y)", "ild@3(similarity=cooccurrence)", "ils@3(features=x+y)"]
    metrics += ["serendipity@3(features=x+y)", "categorical_diversity@3(category=g)"]
    tables = {"train": TRAIN, "items": items, "catalog": N_CATALOG}
    expected = rke.evaluate(log, metrics, query="user", by="system", **tables)
    renamed = log.rename({"system": name})
    got = rke.evaluate(renamed, metrics, query="user", by=name, **tables)
    assert got.rename({name: "system"}).equals(expected)
    # the same name as the query column (the train table names its users alike)
    tables["train"] = TRAIN.rename({"user": name})
    got = rke.evaluate(log.rename({"user": name}), metrics, query=name, by="system", **tables)
    assert got.equals(expected)


def test_recommenders_default_serendipity_counts_every_item_relevant() -> None:
    # recommenders python_evaluation.serendipity(train_df, reco_df) without col_relevance:
    # user_item_serendipity = (1 - Σ_{j in the user's train items} sim(i, j) / |train items|)
    # × 1, averaged per user (user_serendipity), then over users; sim = item co-occurrence
    # (_get_cooccurrence_similarity: co-counts / sqrt(count_i * count_j), distinct users)
    from tests.metrics.test_popularity import RECOMMENDERS_RECO, RECOMMENDERS_TRAIN

    history: dict[int, set[int]] = {}
    users: dict[int, set[int]] = {}
    for user, item in RECOMMENDERS_TRAIN.iter_rows():
        history.setdefault(user, set()).add(item)
        users.setdefault(item, set()).add(user)

    def sim(a: int, b: int) -> float:
        both = len(users.get(a, set()) & users.get(b, set()))
        return both / math.sqrt(len(users[a]) * len(users[b])) if both else 0.0

    reco: dict[int, list[int]] = {}
    for user, item, *_ in RECOMMENDERS_RECO.iter_rows():
        reco.setdefault(user, []).append(item)
    per_user = [
        _mean([1 - sum(sim(i, j) for j in history[u]) / len(history[u]) for i in items])
        for u, items in reco.items()
    ]
    out = rke.evaluate(
        RECOMMENDERS_RECO.drop("relevance"),  # no label is read
        ["serendipity@2(relevant=all)"],
        convention="recommenders",
        train=RECOMMENDERS_TRAIN,
    )
    assert out.item() == pytest.approx(_mean(per_user), abs=1e-15)
    # beside the labelled form in one call (the two must not share their relevant set)
    both = rke.evaluate(
        RECOMMENDERS_RECO,
        ["serendipity@2", "serendipity@2(relevant=all)"],
        convention="recommenders",
        train=RECOMMENDERS_TRAIN,
    )
    assert both.row(0) == pytest.approx((0.43408, _mean(per_user)), abs=1e-5)
