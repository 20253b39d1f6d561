"""Friendly metric lists, did-you-mean for unknown metrics, and the progress bar in Jupyter.

Expected splits and suggestions are written by hand; the evaluations compare a comma-separated
string with the same metrics given as a list (the list form is the reference).
"""

from __future__ import annotations

import importlib
import os
import re
import sys
import types
import warnings

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_rankeval as rke
from polars_rankeval._names import registry
from polars_rankeval._names.split import split_metrics

progress_module = importlib.import_module("polars_rankeval._engine.progress")


@pytest.fixture
def log() -> pl.DataFrame:
    # Two systems, three queries; graded labels, one unjudged row (null).
    return pl.DataFrame(
        {
            "system": ["a"] * 7 + ["b"] * 7,
            "query": ["q1", "q1", "q1", "q2", "q2", "q3", "q3"] * 2,
            "item": ["d1", "d2", "d3", "d4", "d5", "d6", "d7"] * 2,
            "score": [3.0, 2.0, 1.0, 2.0, 1.0, 2.0, 1.0, 1.0, 2.0, 3.0, 1.0, 2.0, 1.0, 2.0],
            "relevance": [0, 2, 1, 1, None, 0, 1] * 2,
        }
    )


# ---- comma-separated metric lists ----------------------------------------------------------

SPLITS = [
    ("ndcg@10,map", ["ndcg@10", "map"]),
    ("ndcg@10, map", ["ndcg@10", "map"]),
    (" ndcg@10 ,  map , ", ["ndcg@10", "map"]),
    ("ndcg@10,,map", ["ndcg@10", "map"]),
    ("ndcg@5,10,map", ["ndcg@5,10", "map"]),
    ("ndcg@5, 10 ,mrr", ["ndcg@5,10", "mrr"]),
    ("err@5,10(max_grade=3),p@5", ["err@5,10(max_grade=3)", "p@5"]),
    ("rbp(p=0.8,rel=1),map", ["rbp(p=0.8,rel=1)", "map"]),
    (
        "nDCG(dcg='exp-log2',judged_only=True)@10,P@5",
        ["nDCG(dcg='exp-log2',judged_only=True)@10", "P@5"],
    ),
    ("ndcg@10(gain={0:0,1:1,2:3}),map", ["ndcg@10(gain={0:0,1:1,2:3})", "map"]),
    ("inst(t=[1,2]),map", ["inst(t=[1,2])", "map"]),
    # a quote hides a bracket and a comma
    ("x(name='a,)b'),map", ["x(name='a,)b')", "map"]),
    ('x(name="a,b"),map', ['x(name="a,b")', "map"]),
    # trec_eval's printed names with parameter lists stay whole
    ("utility_2,-1,0,0,map", ["utility_2,-1,0,0", "map"]),
    ("ndcg_1=3,2=9,4=4.5,P_5", ["ndcg_1=3,2=9,4=4.5", "P_5"]),
    ("11pt_avg_.25,.5,11pt_avg", ["11pt_avg_.25,.5", "11pt_avg"]),
    ("map,11pt_avg", ["map", "11pt_avg"]),
    ("", []),
]


@pytest.mark.parametrize(("text", "expected"), SPLITS)
def test_split_metrics(text, expected):
    assert split_metrics(text) == expected


def test_the_command_line_splits_with_the_same_function():
    for text, expected in SPLITS:
        assert registry.split_metric_list(text) == expected


def test_trec_eval_printed_names_survive_a_second_split():
    # The command line resolves lists of names it already split (and trec_eval's printed
    # names); splitting each again must change nothing.
    names = registry.trec_measure_names(["all_trec", "utility.2,-1,0,0", "ndcg.1=3,2=9"])
    assert names is not None
    assert "utility_2,-1,0,0" in names
    assert "ndcg_1=3,2=9" in names
    for name in names:
        assert split_metrics(name) == [name]


@pytest.mark.parametrize(
    ("given", "as_list"),
    [
        ("ndcg@10,map", ["ndcg@10", "map"]),
        ("ndcg@10, map", ["ndcg@10", "map"]),
        ("ndcg@5,10,mrr", ["ndcg@5,10", "mrr"]),
        ("rbp(p=0.8,rel=1),p@2", ["rbp(p=0.8,rel=1)", "p@2"]),
        ("nDCG(dcg='exp-log2')@3,AP", ["nDCG(dcg='exp-log2')@3", "AP"]),
        (["ndcg@10,map", "mrr"], ["ndcg@10", "map", "mrr"]),
        (("p@1", "p@2,mrr"), ["p@1", "p@2", "mrr"]),
    ],
)
def test_evaluate_reads_a_comma_separated_string_as_a_list(log, given, as_list):
    expected = rke.evaluate(log, as_list, by="system")
    got = rke.evaluate(log, given, by="system")
    assert_frame_equal(got, expected)
    assert got.columns == ["system", *[c for c in expected.columns if c != "system"]]


def test_the_string_that_failed_before_now_names_two_columns(log):
    # Before: "cutoff in metric 'ndcg@10,map' must be positive integers".
    out = rke.evaluate(log, "ndcg@10,map", by="system")
    assert out.columns == ["system", "ndcg@10", "map"]


def test_every_entry_point_splits(log):
    as_list = ["ndcg@3", "mrr"]
    assert_frame_equal(
        log.rank_eval.evaluate("ndcg@3,mrr", by="system"),
        log.rank_eval.evaluate(as_list, by="system"),
    )
    assert_frame_equal(
        rke.evaluate(log.lazy(), "ndcg@3,mrr", by="system").collect(),
        rke.evaluate(log, as_list, by="system"),
    )
    assert_frame_equal(
        rke.compare(log, "ndcg@3,mrr", by="system", test="t"),
        rke.compare(log, as_list, by="system", test="t"),
    )
    assert_frame_equal(
        rke.tie_report(log, "ndcg@3,mrr", by="system"),
        rke.tie_report(log, as_list, by="system"),
    )
    assert_frame_equal(
        rke.discriminative_power(log, "ndcg@3,mrr", by="system", test="t", n_resamples=10),
        rke.discriminative_power(log, as_list, by="system", test="t", n_resamples=10),
    )


def test_similarity_splits_its_metric_string(log):
    as_list = ["rbo(p=0.8,output=min)", "jaccard@2"]
    assert_frame_equal(
        rke.similarity(log, "rbo(p=0.8,output=min), jaccard@2", by="system"),
        rke.similarity(log, as_list, by="system"),
    )


def test_an_expression_names_the_list_it_cannot_be():
    with pytest.raises(rke.InvalidOptionError, match=r"'ndcg@10,map' names 2 metrics"):
        rke.metric_expr("ndcg@10,map")


@pytest.mark.parametrize(
    ("given", "match"),
    [
        ("", "cannot read metric ''"),
        (",", r"cannot read metric ','"),
        ([], "non-empty list"),
        (["ndcg@10", ""], "cannot read metric ''"),
    ],
)
def test_an_empty_list_is_refused_by_name(log, given, match):
    with pytest.raises(rke.InvalidOptionError, match=match):
        rke.evaluate(log, given)


# ---- did you mean -------------------------------------------------------------------------

TYPOS = [
    # (typed, the first suggestion)
    ("P10", "p@10"),
    ("p10", "p@10"),
    ("ndcg10", "ndcg@10"),
    ("NDCG10", "ndcg@10"),
    ("nDCG10", "ndcg@10"),
    ("recall_100x", "recall@k"),
    ("recall-100", "recall@100"),
    ("ndcg_cut10", "ndcg_cut@10"),
    ("p_at_10", "p@10"),
    ("precision_at_5", "precision@5"),
    ("hits10", "hits@10"),
    ("hitrate10", "hitrate@10"),
    ("ndgc@10", "ndcg@10"),
    ("ndgc", "ndcg"),
    ("recal@5", "recall@5"),
    ("precison@5", "precision@5"),
    ("precison", "precision@k"),
    ("maps", "map"),
    ("mrrr", "mrr"),
    ("recip_rnk", "recip_rank"),
    ("reciprocal_rank", "mrr"),
    ("mean_reciprocal_rank", "mrr"),
    ("mean_average_precision@10", "map@10"),
    ("normalized_dcg@10", "ndcg@10"),
    ("hr@10", "hit_rate@10"),
    ("bpreff", "bpref"),
    ("infAPP", "infap"),
    ("alpha_ndgc@10", "alpha_ndcg@10"),
    ("err_ai@10", "err_ia@10"),
    ("ndcg_rell", "ndcg_rel"),
    # ir_measures' case-sensitive names are known spellings too
    ("setp", "SetP"),
    ("SetPP", "SetP"),
    ("StRecal@10", "strecall@10"),
    # options are carried over where the family takes them
    ("ndgc@10(gain=exp)", "ndcg@10(gain=exp)"),
    ("rpb(p=0.8)", "rbp(p=0.8)"),
]


@pytest.mark.parametrize(("typed", "first"), TYPOS)
def test_unknown_metric_suggests_the_closest_spelling(typed, first):
    with pytest.raises(rke.UnknownMetricError) as caught:
        registry.parse_metrics(typed)
    message = str(caught.value)
    suggested = re.search(r"did you mean '([^']*)'", message)
    assert suggested is not None, message
    assert suggested[1] == first, message
    # the suggestion itself is a metric string the parser reads (a template '@k' aside)
    if "@k" not in first:
        assert registry.parse_metrics(first)


@pytest.mark.parametrize("typed", [t for t, _ in TYPOS])
def test_the_error_names_a_few_spellings_not_all(typed):
    with pytest.raises(rke.UnknownMetricError) as caught:
        registry.parse_metrics(typed)
    message = str(caught.value)
    quoted = re.findall(r"'[^']*'", message)
    # the name, the whole string, the first suggestion, at most four close names
    assert len(quoted) <= 7, message
    assert "known_metrics()" in message
    assert "Known metrics:" not in message
    assert len(message) < 300, message


def test_a_name_with_nothing_close_says_so():
    with pytest.raises(rke.UnknownMetricError, match=r"'zzqx'; no known name is close"):
        registry.parse_metrics("zzqx")


def test_unknown_metric_from_evaluate_and_the_namespace(log):
    with pytest.raises(rke.UnknownMetricError, match=r"did you mean 'p@10'"):
        rke.evaluate(log, "map,P10")
    with pytest.raises(rke.UnknownMetricError, match=r"did you mean 'ndcg@3'"):
        log.rank_eval.evaluate(["ndcg3"])


@pytest.mark.parametrize(
    ("typed", "match"),
    [
        ("map@1O", r"did you mean 'map@10'\?"),
        ("P@l0", r"did you mean 'P@10'\?"),
        ("ndcg@5,1O", r"did you mean 'ndcg@5,10'\?"),
        ("ndcg(dcg='exp-log2')@10", r"did you mean \"nDCG\(dcg='exp-log2'\)@10\"\?.*case"),
    ],
)
def test_other_misspellings_get_a_hint(typed, match):
    with pytest.raises(rke.InvalidOptionError, match=match):
        registry.parse_metrics(typed)


def test_spellings_that_work_already_still_work():
    for text in ["mrr", "recip_rank", "precision@5", "NDCG@10", "P_5", "Rprec", "infAP", "SetP"]:
        assert registry.parse_metrics(text), text


# ---- progress in Jupyter ------------------------------------------------------------------


class _ZMQInteractiveShell:
    """Stands for the Jupyter kernel's shell (its class name is what detection reads)."""


@pytest.fixture
def notebook(monkeypatch):
    """A Jupyter kernel as tqdm and our detection see it: ipykernel's shell module is loaded.

    tqdm's modules imported in it are dropped afterwards (monkeypatch puts back only those
    that were loaded before), so no later test sees a bar built for this environment.
    """
    fresh = ("tqdm.auto", "tqdm.autonotebook", "tqdm.notebook")
    before = {name for name in fresh if name in sys.modules}
    yield _enter_notebook(monkeypatch, fresh)
    monkeypatch.undo()
    for name in set(fresh) - before:
        sys.modules.pop(name, None)


def _enter_notebook(monkeypatch, fresh):
    ipython = pytest.importorskip("IPython")
    monkeypatch.setitem(sys.modules, "ipykernel.zmqshell", types.ModuleType("ipykernel.zmqshell"))
    monkeypatch.setattr(ipython, "get_ipython", _ZMQInteractiveShell)  # () gives a shell
    for key in [k for k in list(os.environ) if k == "QT_API" or k.startswith("SPYDER")]:
        monkeypatch.delenv(key)
    # tqdm's modules decide at import time: import them afresh in this environment
    for name in fresh:
        monkeypatch.delitem(sys.modules, name, raising=False)
    return monkeypatch


def _no_ipywidgets(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "ipywidgets", None)  # import raises ImportError


def _fake_ipywidgets(monkeypatch) -> None:
    class Widget:
        def __init__(self, **kwargs):
            self.value, self.bar_style, self.children = None, "", []
            self.layout = types.SimpleNamespace()
            self.style = types.SimpleNamespace(bar_color=None)
            self.__dict__.update(kwargs)

        def close(self):
            self.closed = True

    module = types.ModuleType("ipywidgets")
    module.FloatProgress = type("FloatProgress", (Widget,), {})
    module.HBox = type("HBox", (Widget,), {})
    module.HTML = type("HTML", (Widget,), {})
    monkeypatch.setitem(sys.modules, "ipywidgets", module)


def test_the_simulated_notebook_is_one_where_tqdm_auto_warns(notebook):
    # The premise of the next test: tqdm.auto, which we used before, warns here.
    _no_ipywidgets(notebook)
    with pytest.warns(Warning, match="IProgress not found"):
        importlib.import_module("tqdm.auto")


def test_notebook_without_ipywidgets_gets_a_text_bar_and_no_warning(notebook, capsys):
    _no_ipywidgets(notebook)
    assert progress_module._in_notebook()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with progress_module.Progress(2, enabled=True) as bar:
            bar.spilled()
            bar.advance()
            bar.advance()
    assert [str(w.message) for w in caught] == []
    from tqdm.std import tqdm as text_bar

    assert type(bar._tqdm) is text_bar
    assert "pass 2/2" in capsys.readouterr().err


def test_notebook_with_ipywidgets_gets_the_widget_and_no_warning(notebook, capsys):
    _fake_ipywidgets(notebook)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with progress_module.Progress(2, enabled=True, spill=False) as bar:
            bar.advance()
    assert [str(w.message) for w in caught] == []
    assert type(bar._tqdm) is sys.modules["tqdm.notebook"].tqdm
    container = bar._tqdm.container
    assert container.children[1].value == 1  # the widget's bar moved: one pass of two
    assert capsys.readouterr().err == ""  # nothing written as text


def test_evaluate_in_a_notebook_without_ipywidgets_warns_nothing(notebook, log, capsys):
    _no_ipywidgets(notebook)
    expected = rke.evaluate(log, ["map"], by="system")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = rke.evaluate(log.lazy(), ["map"], by="system", n_buckets=3, progress=True)
        got = got.collect()
    assert [str(w.message) for w in caught] == []
    assert_frame_equal(got.sort("system"), expected.sort("system"))
    assert "pass 3/3" in capsys.readouterr().err


def test_progress_stays_quiet_by_default_in_a_notebook(notebook, log, capsys):
    _no_ipywidgets(notebook)
    rke.evaluate(log.lazy(), ["map"], by="system", n_buckets=3).collect()
    assert capsys.readouterr().err == ""


def test_not_a_notebook_without_the_kernel(monkeypatch):
    monkeypatch.delitem(sys.modules, "ipykernel.zmqshell", raising=False)
    monkeypatch.delitem(sys.modules, "IPython.utils._process_emscripten", raising=False)
    assert not progress_module._in_notebook()


def test_the_qt_console_is_not_a_notebook(notebook):
    notebook.setenv("QT_API", "pyqt5")
    assert not progress_module._in_notebook()
