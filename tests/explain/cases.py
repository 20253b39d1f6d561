"""Recorded "same metric, different number" cases, as data for ``rke.explain``'s tests and guide.

Each :class:`Case` is one disagreement between two tools (or a tool and what its user
expected): a small long log (query, item, score, relevance; a null score is a judged row the
run did not retrieve, a null relevance an unjudged row), the metric, the two setups as
``rke.explain`` reads them (a convention name, or a mapping of settings over a base
convention), the setting(s) that cause the difference, and for each side:

* ``recorded``: the numbers the thread printed (per query and/or the mean, with the thread's
  URL in :attr:`Case.source`), or none for a generated case (a thread that names a cause but
  gives no data we can transcribe: the log is built so the answer is known);
* ``reference``: an independent plain-Python transcription of that tool's definition
  (sorting, cutting and summing by hand, from the tool's own code or docs: never our code),
  which must give the recorded numbers to the digits the thread prints.

The transcriptions are in :mod:`tests.explain.transcriptions`.

``NOT_REPRODUCED`` lists the threads of research.md Q4(b) that no setting reproduces, and why.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from tests.explain.transcriptions import (
    ToolResult,
    gdeval,
    input_order,
    lenskit_ndcg,
    log_of,
    map_at_k,
    ranking_metrics_torch_ndcg,
    ranx_ndcg,
    recommenders_ndcg,
    rounded_scores,
    sklearn_drop_empty,
    supplied_rows_tool,
    torchmetrics_flattened,
    trec_ap,
    trec_eval_tool,
    trec_ndcg,
    trec_ndcg_tool_at,
    trectools_ndcg,
)

#: An explain setup: a convention name or a mapping of settings.
Setup = str | Mapping[str, Any]


@dataclass(frozen=True)
class Recorded:
    """The numbers a thread printed: per query, the mean, and how many decimals it shows."""

    per_query: Mapping[str, float] = field(default_factory=dict)
    mean: float | None = None
    digits: int = 4
    #: the thread cut the digits instead of rounding them ("~0.8888" for 8/9)
    truncated: bool = False


@dataclass(frozen=True)
class Side:
    """One side of a disagreement: the explain setup, the tool's transcription, its numbers."""

    setup: Setup
    tool: str
    reference: Callable[[pl.DataFrame], ToolResult]
    recorded: Recorded | None = None


@dataclass(frozen=True)
class Case:
    """One recorded (or generated) disagreement and its documented cause(s)."""

    name: str
    source: str
    log: pl.DataFrame
    metric: str
    a: Side
    b: Side
    causes: tuple[str, ...]
    note: str = ""
    #: what the thread printed that we cannot rebuild here (other data), quoted as context
    context: str = ""
    #: warnings the b (or a) side is expected to raise (e.g. EmptyQueriesWarning), by name
    warns: tuple[str, ...] = ()

    @property
    def recorded(self) -> bool:
        """True when the thread itself gives numbers for this log."""
        return self.a.recorded is not None or self.b.recorded is not None


def matches(value: float, printed: float, digits: int) -> bool:
    """``value`` equals a number printed with ``digits`` decimals, rounded or truncated.

    Tools print rounded values (``%.4f``), threads sometimes truncate ("~0.8888" for 8/9):
    either way the true value lies within one unit of the last printed digit.
    """
    return abs(value - printed) < 10.0**-digits


# --- the logs -----------------------------------------------------------------------------------
# torchmetrics #3216: two queries of three documents (item ids made distinct across queries so
# that one flattened list has no duplicate ids).
_TM_3216 = log_of(
    {
        "q1": [("a1", 0.1, 0), ("a2", 0.2, 1), ("a3", 0.3, 0)],
        "q2": [("b1", 0.8, 1), ("b2", 0.1, 0), ("b3", 0.05, 0)],
    }
)

# lkpy #309: truth {1: 3, 2: 5, 3: 4}, recs [1, 2]: item 3 judged, not recommended.
_LK_309 = log_of({"u": [("1", 2.0, 3), ("2", 1.0, 5), ("3", None, 4)]})

# pytrec_eval #56: qrel q1 {d3: 1}, q2 {d2: 1, d3: 1}; run q1 {d1: 1, d2: 1, d3: 1},
# q2 {d3: 1, d2: 1}: every score tied; d1 and d2 of q1 unjudged.
_PTE_56 = log_of(
    {
        "q1": [("d1", 1.0, None), ("d2", 1.0, None), ("d3", 1.0, 1)],
        "q2": [("d3", 1.0, 1), ("d2", 1.0, 1)],
    }
)

# sklearn #29521: y_true = y_score = [[1, 0, 1], [0, 0, 0]].
_SK_29521 = log_of(
    {
        "0": [("i0", 1.0, 1), ("i1", 0.0, 0), ("i2", 1.0, 1)],
        "1": [("i0", 0.0, 0), ("i1", 0.0, 0), ("i2", 0.0, 0)],
    }
)

# Graded labels 0-3 (TREC Web / DL style), distinct scores, every query with a relevant row and
# some judged rows unretrieved. q2 has only grades 0 and 1: exp and linear gain agree there, as
# on OpenNIR #14's topics 2 and 28.
_GRADED = log_of(
    {
        "q1": [
            ("d01", 9.1, 1),
            ("d02", 8.7, 3),
            ("d03", 8.2, 0),
            ("d04", 7.9, 2),
            ("d05", 7.0, None),
            ("d06", 6.4, 1),
            ("d07", None, 3),
            ("d08", None, 2),
        ],
        "q2": [
            ("d11", 5.5, 0),
            ("d12", 5.1, 1),
            ("d13", 4.9, None),
            ("d14", 4.2, 1),
            ("d15", None, 1),
        ],
        "q3": [
            ("d21", 3.3, 2),
            ("d22", 3.1, 0),
            ("d23", 2.8, 3),
            ("d24", 2.5, 1),
            ("d25", 2.2, 2),
            ("d26", 1.9, 0),
            ("d27", None, 1),
        ],
        "q4": [
            ("d31", 0.9, 0),
            ("d32", 0.8, 0),
            ("d33", 0.7, 2),
            ("d34", 0.6, None),
            ("d35", None, 3),
        ],
    }
)

# _GRADED plus a topic judged without a relevant row (every label 0): gdeval never evaluates it.
_GRADED_EMPTY = pl.concat(
    [_GRADED, log_of({"q5": [("d41", 4.0, 0), ("d42", 3.0, 0), ("d43", None, 0)]})]
)

# trectools #24 (TREC CAsT 2019, NDCG@3): a run with a query the qrels do not judge (q4); each
# judged query has at most 3 relevant rows, so trectools' uncut ideal equals the cut one here.
_TT_24 = log_of(
    {
        "q1": [("d1", 3.0, 2), ("d2", 2.0, 0), ("d3", 1.0, 1)],
        "q2": [("d4", 3.0, 0), ("d5", 2.0, 1), ("d6", 1.0, 0), ("d7", None, 2)],
        "q3": [("d8", 3.0, 1), ("d9", 2.0, 0)],
        "q4": [("e1", 3.0, None), ("e2", 2.0, None), ("e3", 1.0, None)],
    }
)

# Scores that differ only past the 3rd decimal: printed with "%.3f" they tie, and trec_eval's
# docno-descending tie rule reorders them. q1: a relevant "a" barely ahead of "z" is put behind
# it; q2 keeps its order (the tie-break agrees), q3 has no tie after rounding.
_PRECISION = log_of(
    {
        "q1": [("a", 0.51234, 1), ("z", 0.51229, 0), ("m", 0.40011, 0), ("b", 0.3, 1)],
        "q2": [("y", 0.90104, 1), ("c", 0.90098, 0), ("k", 0.2, 0)],
        "q3": [("p", 0.7771, 0), ("q", 0.6662, 1), ("r", 0.5553, 0)],
    }
)


# recommenders #1749, Wikipedia's nDCG example: D1..D6 returned in that order, relevance 3, 2,
# 3, 0, 1, 2; D7 and D8 (3, 2) judged, not returned.
_WIKI = log_of(
    {
        "0": [
            ("D1", 6.0, 3),
            ("D2", 5.0, 2),
            ("D3", 4.0, 3),
            ("D4", 3.0, 0),
            ("D5", 2.0, 1),
            ("D6", 1.0, 2),
            ("D7", None, 3),
            ("D8", None, 2),
        ]
    }
)

# ranking-metrics-torch #1: labels [10, 0, 0, 1, 5], scores [0.1, 0.2, 0.3, 4, 70].
_RMT_1 = log_of(
    {"0": [("i0", 0.1, 10), ("i1", 0.2, 0), ("i2", 0.3, 0), ("i3", 4.0, 1), ("i4", 70.0, 5)]}
)


# trectools #36: ten documents retrieved, the first five relevant; ten relevant in the pool.
_TT_36 = log_of(
    {
        "q": [(f"r{i}", 10.0 - i, 1) for i in range(5)]
        + [(f"n{i}", 5.0 - i, 0) for i in range(5)]
        + [(f"u{i}", None, 1) for i in range(5)]
    }
)


def _cases() -> tuple[Case, ...]:
    trec_ndcg_tool = trec_eval_tool(trec_ndcg)
    return (
        Case(
            name="torchmetrics_3216_flattened",
            source="https://github.com/Lightning-AI/torchmetrics/issues/3216",
            log=_TM_3216,
            metric="ndcg",
            a=Side(
                "torchmetrics",
                "torchmetrics retrieval_normalized_dcg, one query at a time",
                supplied_rows_tool(),
                Recorded({"q1": 0.6309, "q2": 1.0}, 0.8155),
            ),
            b=Side(
                {"convention": "torchmetrics", "flatten": True},
                "torchmetrics retrieval_normalized_dcg on the 2-D [queries, documents] input",
                torchmetrics_flattened,
                Recorded(mean=0.9197),
            ),
            causes=("flatten",),
            note="the 2-D call ranks both queries' documents as one list (fixed by PR #3229)",
        ),
        Case(
            name="lenskit_309_ideal_cutoff",
            source="https://github.com/lenskit/lkpy/issues/309",
            log=_LK_309,
            metric="ndcg@2",
            a=Side(
                {"discount": "jarvelin"},
                "LensKit ndcg(recs, truth, k=2) (the ideal cut at k)",
                lenskit_ndcg(2, whole_ideal=False),
                Recorded({"u": 0.8888}, 0.8888, truncated=True),
            ),
            b=Side(
                {"discount": "jarvelin", "ideal_cutoff": "none"},
                "LensKit ndcg(recs, truth) before PR #310 (the whole truth list as the ideal)",
                lenskit_ndcg(2, whole_ideal=True),
                Recorded({"u": 0.7344}, 0.7344),
            ),
            causes=("ideal_cutoff",),
            note="8 / 9 with the ideal cut at k = 2; 8 / (9 + 3 / log2 3) with the whole list",
        ),
        Case(
            name="lenskit_discount",
            source="https://github.com/lenskit/lkpy/issues/309",
            log=_LK_309,
            metric="ndcg@2",
            a=Side("trec_eval", "trec_eval ndcg_cut_2", trec_ndcg_tool_at(2)),
            b=Side(
                {"discount": "jarvelin"},
                "LensKit ndcg(k=2): _dcg divides by max(log2(rank), 1)",
                lenskit_ndcg(2, whole_ideal=False),
                Recorded({"u": 0.8888}, 0.8888, truncated=True),
            ),
            causes=("discount",),
            note=(
                "LensKit leaves ranks 1 and 2 undiscounted (Järvelin & Kekäläinen); trec_eval "
                "discounts rank 2 by log2(3)"
            ),
            context=(
                "NCF (yihong-chen/neural-collaborative-filtering#2) used log(2)/log(rank+2), a "
                "third discount no setting names (see NOT_REPRODUCED)"
            ),
        ),
        Case(
            name="pytrec_eval_56_ties_map",
            source="https://github.com/cvangysel/pytrec_eval/issues/56",
            log=_PTE_56,
            metric="map",
            a=Side(
                "trec_eval",
                "pytrec_eval (trec_eval: ties by docno descending)",
                trec_eval_tool(trec_ap),
                Recorded({"q1": 1.0, "q2": 1.0}, 1.0),
            ),
            b=Side(
                {"ties": "pessimistic"},
                "the user's expectation: tied documents in the order the run lists them",
                input_order(trec_ap),
                Recorded({"q1": 1 / 3, "q2": 1.0}),
            ),
            causes=("ties",),
            note=(
                "every score is 1: trec_eval puts d3 first (docno descending), the user expected "
                "it third; on this log the input order is the pessimistic one"
            ),
        ),
        Case(
            name="pytrec_eval_56_ties_ndcg",
            source="https://github.com/cvangysel/pytrec_eval/issues/56",
            log=_PTE_56,
            metric="ndcg",
            a=Side(
                "trec_eval",
                "pytrec_eval (trec_eval: ties by docno descending)",
                trec_ndcg_tool,
                Recorded({"q1": 1.0, "q2": 1.0}, 1.0),
            ),
            b=Side(
                {"ties": "pessimistic"},
                "the user's expectation: tied documents in the order the run lists them",
                input_order(trec_ndcg),
                Recorded({"q1": 0.5, "q2": 1.0}),
            ),
            causes=("ties",),
        ),
        Case(
            name="sklearn_29521_empty_queries",
            source="https://github.com/scikit-learn/scikit-learn/issues/29521",
            log=_SK_29521,
            metric="ndcg",
            a=Side(
                "sklearn",
                "sklearn ndcg_score(y, y): the all-zero row scores 0 and is averaged",
                supplied_rows_tool(),
                Recorded(mean=0.5, digits=1),
            ),
            b=Side(
                {"convention": "sklearn", "empty_queries": "drop"},
                "the user's expectation: a row without a relevant item left out",
                sklearn_drop_empty,
                Recorded(mean=1.0, digits=1),
            ),
            causes=("empty_queries",),
            warns=("EmptyQueriesWarning",),
            context=(
                "trectools gave NaN for a query whose ideal DCG is 0 "
                "(joaopalotti/trectools#25, #51): left out of a NaN-skipping mean, as here"
            ),
        ),
        Case(
            name="opennir_14_gdeval_gain",
            source="https://github.com/Georgetown-IR-Lab/OpenNIR/issues/14",
            log=_GRADED,
            metric="ndcg@10",
            a=Side("trec_eval", "pytrec_eval ndcg_cut_10", trec_ndcg_tool_at(10)),
            b=Side("gdeval", "gdeval.pl -k 10", gdeval(10)),
            causes=("gain",),
            note="a generated graded log: gdeval's 2^g - 1 against trec_eval's linear gain",
            context=(
                "OpenNIR #14 (BM25 on TREC-COVID, per-query data not published): mean 0.5371 "
                "(gdeval) vs 0.5618 (pytrec_eval); topics 2 and 28 equal in both"
            ),
        ),
        Case(
            name="gdeval_empty_topics",
            source="https://github.com/trec-web/trec-web-2014/blob/master/src/eval/gdeval.pl",
            log=_GRADED_EMPTY,
            metric="ndcg@10",
            a=Side("trec_eval", "trec_eval ndcg_cut_10", trec_ndcg_tool_at(10)),
            b=Side(
                {"convention": "gdeval", "empty_queries": "drop"},
                "gdeval.pl -k 10 (a topic without a positive judgment is not averaged)",
                gdeval(10),
            ),
            causes=("gain", "empty_queries"),
            warns=("EmptyQueriesWarning",),
            note=(
                "two causes: the gain, and gdeval's topicDone skipping a topic not in %seen "
                "(no positive judgment), which trec_eval scores 0"
            ),
        ),
        Case(
            name="trectools_24_queries_averaged",
            source="https://github.com/joaopalotti/trectools/issues/24",
            log=_TT_24,
            metric="ndcg@3",
            a=Side("trec_eval", "trec_eval ndcg_cut_3", trec_ndcg_tool_at(3)),
            b=Side(
                {"unlabelled": "zero"},
                "trectools get_ndcg(depth=3) before PR #27 (divides by every run query)",
                trectools_ndcg(3, run_queries=True),
            ),
            causes=("unlabelled",),
            note=(
                "q4 is in the run but not in the qrels: trec_eval averages over the other "
                "three, trectools counted it as a 0"
            ),
        ),
        Case(
            name="trectools_ndcg_whole_ideal",
            source="https://github.com/joaopalotti/trectools/blob/master/trectools/trec_eval.py",
            log=_GRADED,
            metric="ndcg@3",
            a=Side("trec_eval", "trec_eval ndcg_cut_3", trec_ndcg_tool_at(3)),
            b=Side(
                {"ideal_cutoff": "none"},
                "trectools get_ndcg(depth=3): 'TREC_Eval does not cut the IDCG rank'",
                trectools_ndcg(3, run_queries=False),
            ),
            causes=("ideal_cutoff",),
            note=(
                "generated: trectools' get_ndcg sums the first k rows but divides by the whole "
                "ideal list's DCG (its code comment says trec_eval does not cut it; ndcg_cut does)"
            ),
        ),
        Case(
            name="anserini_1525_relevance_level",
            source="https://github.com/castorini/anserini/issues/1525",
            log=_GRADED,
            metric="map",
            a=Side("trec_eval", "trec_eval -m map (grade 1 relevant)", trec_eval_tool(trec_ap)),
            b=Side(
                {"relevance_level": 2},
                "trec_eval -l 2 -m map (TREC DL passage: grade 1 not relevant)",
                trec_eval_tool(lambda rows: trec_ap(rows, level=2)),
            ),
            causes=("relevance_level",),
            note=(
                "generated: TREC DL passage judges 0-3 and counts grade 1 as not relevant for MAP "
                "and recall (trec_eval -l 2), while nDCG keeps every grade"
            ),
        ),
        Case(
            name="ranx_29_gain_level",
            source="https://github.com/AmenRa/ranx/issues/29",
            log=_GRADED,
            metric="ndcg@5",
            a=Side(
                {"relevance_level": 2},
                "trec_eval -l 2 -m ndcg_cut.5 (-l does not touch nDCG)",
                trec_ndcg_tool_at(5),
            ),
            b=Side(
                {"convention": "ranx", "relevance_level": 2},
                "ranx ndcg@5-l2 (labels below 2 give no gain)",
                ranx_ndcg(5, 2),
            ),
            causes=("gain_level",),
            note=(
                "ranx's author: 'setting the relevance level for ndcg does not work on "
                "trec_eval'; the ranx preset's other settings (negative labels, missing "
                "queries) change nothing on this log"
            ),
        ),
        Case(
            name="recommenders_1749_binary_gain",
            source="https://github.com/recommenders-team/recommenders/issues/1749",
            log=_WIKI,
            metric="ndcg@6",
            a=Side(
                "trec_eval",
                "Wikipedia's NDCG@6 (trec_eval ndcg_cut_6: graded gain)",
                trec_ndcg_tool_at(6),
                Recorded({"0": 0.785}, 0.785, digits=3),
            ),
            b=Side(
                {"convention": "recommenders", "relevance_level": 0},
                "Recommenders 1.1 ndcg_at_k (1 / log1p(rank) per item of rating_true)",
                recommenders_ndcg(6),
                Recorded({"0": 1.0}, 1.0),
            ),
            causes=("gain", "relevance_level"),
            note=(
                "Recommenders' gain is 1 per hit (the thread's cause), and D4, rated 0 in "
                "rating_true, is a hit there: relevance_level=0 (the recommenders preset reads a "
                "positive label as relevant, as held-out interactions are)"
            ),
        ),
        Case(
            name="ranking_metrics_torch_1_ideal_from_top_k",
            source="https://github.com/karlhigley/ranking-metrics-torch/issues/1",
            log=_RMT_1,
            metric="ndcg@3",
            a=Side(
                "trec_eval",
                "ndcg_at(ks=[3, 5]): the normalizing gains from every label",
                trec_ndcg_tool_at(3),
                Recorded({"0": 0.4124}, 0.4124),
            ),
            b=Side(
                {"ideal": "retrieved", "depth": 3},
                "ndcg_at(ks=[3]) before the fix: the normalizing gains from the top-3 labels",
                ranking_metrics_torch_ndcg(3),
                Recorded({"0": 1.0}, 1.0),
            ),
            causes=("depth", "ideal"),
            note=(
                "the ideal list drawn from the first k ranked rows only: both settings together "
                "(either alone changes nothing), so each carries half"
            ),
            context="ndcg_at(ks=[3, 5]) printed 0.4124 and 0.6957 (trec_eval's ndcg_cut_3, _5)",
        ),
        Case(
            name="trectools_36_map_at_k_denominator",
            source="https://github.com/joaopalotti/trectools/issues/36",
            log=_TT_36,
            metric="map@5",
            a=Side(
                "trec_eval",
                "trectools get_map(depth=5), as trec_eval map_cut_5: divided by R",
                map_at_k(5, min_k_r=False),
                Recorded(mean=0.5, digits=1),
            ),
            b=Side(
                {"denominator": "min_k_R"},
                "the issue's proposal, Spark's and Recommenders' AP@k: divided by min(R, k)",
                map_at_k(5, min_k_r=True),
                Recorded(mean=1.0, digits=1),
            ),
            causes=("denominator",),
            note=(
                "the issue's qrels and run are attachments not stored here; the log follows its "
                "description (the five non-relevant rows judged 0: unjudged gives the same)"
            ),
        ),
        Case(
            name="score_precision",
            source="https://github.com/usnistgov/trec_eval/issues/22",
            log=_PRECISION,
            metric="map",
            a=Side("trec_eval", "trec_eval on the full-precision scores", trec_eval_tool(trec_ap)),
            b=Side(
                {"score_precision": 3},
                "trec_eval on a run file written with %.3f scores",
                lambda log: trec_eval_tool(trec_ap)(rounded_scores(log, 3)),
            ),
            causes=("score_precision",),
            note=(
                "scores printed with 3 decimals tie, and trec_eval breaks ties by docno "
                "descending (trec_eval #22), not by the order the scores had"
            ),
        ),
    )


CASES: tuple[Case, ...] = _cases()
BY_NAME: dict[str, Case] = {case.name: case for case in CASES}

#: Threads of research.md Q4(b) no setting reproduces, and why.
NOT_REPRODUCED: dict[str, str] = {
    "https://github.com/yihong-chen/neural-collaborative-filtering/issues/2": (
        "NCF's log(2)/log(rank + 2) discount (rank from 1) is neither 1/log_b(rank + 1) for any "
        "base nor Järvelin's; no discount= value names it, and the thread gives no numbers"
    ),
    "https://github.com/Lightning-AI/torchmetrics/issues/2449": (
        "top_k 5 and 10 above every query's length (3 and 4 documents): 0.8467 is right for "
        "every top_k, no disagreement to explain"
    ),
    "https://github.com/joaopalotti/trectools/issues/18": (
        "the run and qrels are in a gist not stored here (Rprec 79.06 vs 79.62, ndcg 93.69 vs "
        "94.35 quoted as context only)"
    ),
    "https://github.com/joaopalotti/trectools/pull/51": (
        "NaN for a query whose relevant rows were all missed (ideal DCG > 0, DCG 0) is a "
        "trectools bug with no setting: trec_eval, and every preset, score it 0; the NaN for "
        "an empty query (ideal DCG 0) is empty_queries='drop' (sklearn_29521_empty_queries)"
    ),
    "https://github.com/lenskit/lkpy/issues/309 (its second bug)": (
        "the thread's second bug (recs [2, 3, 1], k=2: 1.21 instead of 1.0) sums the run's DCG "
        "over all three recommendations but cuts the ideal list at k: a run not cut at k has "
        "no setting (an nDCG above 1 is no tool's definition)"
    ),
    "https://github.com/terrierteam/ir_measures/issues/42": (
        "pytrec_eval returning 0 for a second call's cutoff was a caching bug (fixed in "
        "pytrec-eval-terrier 0.5.4), not a definition"
    ),
}
