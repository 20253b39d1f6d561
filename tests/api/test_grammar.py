"""One grammar: the command line's ``-m`` and the API read every metric form the same way.

trec_eval's ``-m`` forms with parameters or a set (``P.5,10``, ``official``) are a dialect of
the one parser: ``rke.evaluate(log, "P.5,10")`` gives the columns ``P_5`` and ``P_10``, as the
command line prints them. Each form runs through both and must give the same columns and
values, or the same refusal. Expected names are trec_eval's, written by hand.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import polars_rankeval as rke
from polars_rankeval.cli import main as cli_main

# q1: a(1) b(0) c(1) by score, R = 2; q2: x(0) y(1), R = 1.
LOG = pl.DataFrame(
    {
        "query": ["q1", "q1", "q1", "q2", "q2"],
        "item": ["a", "b", "c", "x", "y"],
        "score": [3.0, 2.0, 1.0, 2.0, 1.0],
        "relevance": [1, 0, 1, 0, 1],
    }
)
ITERATIONS = [f"iprec_at_recall_{level / 10:3.2f}" for level in range(11)]
LONG_CUTS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
OFFICIAL = [
    *("num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref"),
    "recip_rank",
    *ITERATIONS,
    *(f"P_{k}" for k in LONG_CUTS),
]
SET = [
    *("num_q", "num_ret", "num_rel", "num_rel_ret", "utility", "set_P", "set_relative_P"),
    *("set_recall", "set_map", "set_F"),
]
#: Each form and the columns trec_eval would print for it (runid and relstring are text).
FORMS: dict[str, list[str]] = {
    "P.5,10": ["P_5", "P_10"],
    "P.10,5": ["P_5", "P_10"],  # trec_eval sorts the cutoffs
    "ndcg_cut.5,10": ["ndcg_cut_5", "ndcg_cut_10"],
    "ndcg.1=3,2=9": ["ndcg_1=3,2=9"],
    "iprec_at_recall..10,.20": ["iprec_at_recall_0.10", "iprec_at_recall_0.20"],
    "utility.2,-1,0,0": ["utility_2,-1,0,0"],
    "Rprec_mult.0.2,0.4": ["Rprec_mult_0.20", "Rprec_mult_0.40"],
    "official": OFFICIAL,
    "set": SET,
    "P.5,10,ndcg@10": ["P_5", "P_10", "ndcg@10"],
    "ndcg@10,P.5,10": ["ndcg@10", "P_5", "P_10"],
    "map,recall@5": ["map", "recall@5"],
}
#: Forms both refuse, with the words of the refusal.
REFUSED = {
    "P.": "cannot read metric 'P.'",
    "zzz.5": "cannot read metric 'zzz.5'",
    "p": "needs a cutoff",
}


@pytest.fixture(scope="module")
def log_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("grammar") / "log.parquet"
    LOG.write_parquet(path)
    return path


def _cli(capsys: pytest.CaptureFixture[str], path: Path, form: str) -> tuple[int, str, str]:
    code = cli_main([str(path), "-m", form, "-f", "csv"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("form", FORMS)
def test_every_form_reads_the_same_in_the_api_and_the_cli(form, log_path, capsys):
    api = rke.evaluate(LOG, form)
    code, out, err = _cli(capsys, log_path, form)
    assert code == 0, err
    cli = pl.read_csv(out.encode())
    assert api.columns == FORMS[form]
    assert cli.columns == FORMS[form]
    for column in api.columns:
        assert cli[column].item() == pytest.approx(api[column].item(), abs=1e-12), column


def test_a_trec_form_is_the_metric_its_printed_name_reads():
    # P_5: q1 2/5, q2 1/5 -> 0.3; P_10 half that; the -m form and the printed names agree
    out = rke.evaluate(LOG, ["P.5,10"])
    assert out.row(0) == pytest.approx((0.3, 0.15))
    assert out.row(0) == rke.evaluate(LOG, ["P_5", "P_10"]).row(0)


@pytest.mark.parametrize("form", REFUSED)
def test_both_refuse_the_same_forms(form, log_path, capsys):
    with pytest.raises(rke.RankEvalError, match=REFUSED[form]) as raised:
        rke.evaluate(LOG, form)
    code, _, err = _cli(capsys, log_path, form)
    assert code != 0
    assert str(raised.value) in err


def test_a_bare_trec_eval_measure_is_trec_eval_s_on_the_command_line_only(log_path, capsys):
    # trec_eval's -m recall means its default cutoffs; in Python a bare "recall" asks for one,
    # and the refusal spells the -m form out.
    code, out, _ = _cli(capsys, log_path, "recall")
    assert code == 0
    assert pl.read_csv(out.encode()).columns == [f"recall_{k}" for k in LONG_CUTS]
    with pytest.raises(rke.InvalidOptionError, match=r"'recall\.5,10,15,20,30,100,200,500,1000'"):
        rke.evaluate(LOG, "recall")


def test_an_unreadable_trec_form_gets_no_hint_repeating_it():
    # "P." is in the right case already: suggesting "P." again helped no one
    with pytest.raises(rke.InvalidOptionError) as raised:
        rke.evaluate(LOG, "P.")
    assert "did you mean" not in str(raised.value)
