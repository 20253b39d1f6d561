"""``rank-eval --format trec`` against trec_eval's own output files, byte for byte.

Each case is the trec_eval command of ``tests/data/README.md`` spelled for ``rank-eval``
(``trec_eval [options] QRELS RUN`` becomes ``rank-eval RUN --qrels QRELS [options] --format
trec``). A file that needs a measure family not implemented yet is an expected failure whose
reason names the missing measures; the mark is computed, so it goes away (and the test must
then pass) as soon as the families land.
"""

from __future__ import annotations

import difflib
from pathlib import Path

import polars as pl
import pytest

from polars_rankeval._names.registry import parse_metrics, trec_measure_names, trec_measure_of
from polars_rankeval.cli import main as cli_main
from polars_rankeval.errors import RankEvalError

DATA = Path(__file__).parents[1] / "data"
EXPECTED = DATA / "expected_v10"

MEAS_PARAMS = [
    *("-q", "-miprec_at_recall..10,.20,.25,.75,.50", "-m", "P.5,7,3", "-m", "recall.20,2000"),
    *("-m", "Rprec_mult.5.0,0.2,0.35", "-mutility.2,-1,0,0", "-m", "11pt_avg..25,.5,.75"),
    *("-mndcg.1=3,2=9,4=4.5", "-mndcg_cut.10,20,23.4", "-msuccess.2,5,20"),
]
#: expected file -> (run, qrels, options), as in tests/data/README.md
CASES: dict[str, tuple[str, str, list[str]]] = {
    "out.test": ("results.test", "qrels.test", []),
    "out.comment.test": ("results.comment.test", "qrels.comment.test", []),
    "out.test.a": ("results.test", "qrels.test", ["-m", "all_trec"]),
    "out.test.aq": ("results.test", "qrels.test", ["-m", "all_trec", "-q"]),
    "out.test.aqc": ("results.trunc", "qrels.test", ["-m", "all_trec", "-q", "-c"]),
    "out.test.aqcM": ("results.trunc", "qrels.test", ["-m", "all_trec", "-q", "-c", "-M100"]),
    "out.test.aql": (
        "results.test",
        "qrels.rel_level",
        ["-m", "all_trec", "-mrelstring.20", "-q", "-l2"],
    ),
    "out.test.meas_params": ("results.test", "qrels.test", MEAS_PARAMS),
    "out.302.all_trec.q": ("results-302.test", "qrels-302.test", ["-m", "all_trec", "-q"]),
    "out.comment.all_trec.q": (
        "results.comment.test",
        "qrels.comment.test",
        ["-m", "all_trec", "-q"],
    ),
}


def _measure_arguments(options: list[str]) -> list[str]:
    """The ``-m`` values of a command line (``-m X`` and ``-mX``); none means ``official``."""
    values = []
    for index, option in enumerate(options):
        if option == "-m":
            values.append(options[index + 1])
        elif option.startswith("-m"):
            values.append(option[2:])
    return values or ["official"]


def _missing(name: str) -> bool:
    if trec_measure_of(name) in ("runid", "relstring"):
        return False  # printed by the command itself
    try:
        parse_metrics(name)
    except RankEvalError:
        return True
    return False


def _missing_measures(options: list[str]) -> list[str]:
    names = trec_measure_names(_measure_arguments(options)) or []
    return sorted({trec_measure_of(name) or name for name in names if _missing(name)})


def _run(capsys: pytest.CaptureFixture[str], name: str) -> tuple[int, str, str]:
    run, qrels, options = CASES[name]
    code = cli_main([str(DATA / run), "--qrels", str(DATA / qrels), *options, "--format", "trec"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("name", list(CASES))
def test_every_measure_of_every_case_is_implemented(name):
    # Every all_trec family exists now: a missing one is a failure, never a skip or an xfail.
    assert _missing_measures(CASES[name][2]) == []


@pytest.mark.parametrize("name", list(CASES))
def test_trec_output_is_byte_identical(capsys, name):
    code, out, err = _run(capsys, name)
    assert code == 0, err
    expected = (EXPECTED / name).read_text()
    diff = "\n".join(difflib.unified_diff(expected.splitlines(), out.splitlines(), lineterm=""))
    assert out == expected, diff


@pytest.mark.parametrize("name", list(CASES))
def test_trec_output_is_byte_identical_for_implemented_measures(capsys, monkeypatch, name):
    # While families are missing: the same command without them prints exactly trec_eval's
    # lines of every other measure (order, names, per-query/summary split, formatting).
    from polars_rankeval.cli import _evaluation  # the module whose _metric_plan calls it

    missing = set(_missing_measures(CASES[name][2]))
    original = _evaluation.trec_measure_names

    def without_missing(arguments: list[str]) -> list[str] | None:
        names = original(arguments)
        return None if names is None else [n for n in names if trec_measure_of(n) not in missing]

    monkeypatch.setattr(_evaluation, "trec_measure_names", without_missing)
    code, out, err = _run(capsys, name)
    assert code == 0, err
    expected = [
        line
        for line in (EXPECTED / name).read_text().splitlines(keepends=True)
        if trec_measure_of(line.split("\t")[0].rstrip()) not in missing
    ]
    assert out == "".join(expected)


def test_measure_names_and_parameter_forms():
    assert trec_measure_names(["P.5,7,3"]) == ["P_3", "P_5", "P_7"]
    assert trec_measure_names(["ndcg_cut.10,20,23.4"]) == [
        "ndcg_cut_10",
        "ndcg_cut_20",
        "ndcg_cut_23",
    ]
    assert trec_measure_names(["iprec_at_recall..10,.20"]) == [
        "iprec_at_recall_0.10",
        "iprec_at_recall_0.20",
    ]
    assert trec_measure_names(["Rprec_mult.5.0,0.2,0.35"]) == [
        "Rprec_mult_0.20",
        "Rprec_mult_0.35",
        "Rprec_mult_5.00",
    ]
    assert trec_measure_names(["utility.2,-1,0,0", "11pt_avg..25,.5,.75"]) == [
        "utility_2,-1,0,0",
        "11pt_avg_.25,.5,.75",
    ]
    assert trec_measure_names(["success.2,5,20", "ndcg.1=3,2=9,4=4.5"]) == [
        "ndcg_1=3,2=9,4=4.5",
        "success_2",
        "success_5",
        "success_20",
    ]
    # trec_eval's order, whatever the order of -m; a later -m's parameters win
    assert trec_measure_names(["P.5", "map", "P.10"]) == ["map", "P_10"]
    assert trec_measure_names(["unj", "relstring.20"]) == [
        "relstring_20",
        "unj_5",
        "unj_10",
        "unj_20",
    ]
    official = trec_measure_names(["official"]) or []
    assert official[:3] == ["runid", "num_q", "num_ret"]
    assert official[-1] == "P_1000"
    # out.test.a prints 99 lines: every name but relstring, which has no summary line
    assert len(trec_measure_names(["all_trec"]) or []) == 100
    # our own metric strings are not trec_eval forms
    assert trec_measure_names(["ndcg@10"]) is None
    assert trec_measure_names(["P_5"]) is None


@pytest.mark.parametrize(
    "name",
    [
        "P_5",
        "ndcg_cut_10",
        "recip_rank",
        "infAP",
        "Rprec",
        "map_cut_100",
        "ndcg_1=3,2=9,4=4.5",
        "relative_P_5",
        "Rprec_mult_0.20",
        "utility_2,-1,0,0",
        "set_F",
        "set_F_0.5",
        "unj_10",
        "num_nonrel_judged_ret",
    ],
)
def test_trec_names_are_metric_strings_naming_their_column(name):
    log = pl.DataFrame(
        {"query": "q", "item": ["a", "b", "c"], "score": [3.0, 2.0, 1.0], "relevance": [1, 0, 1]}
    )
    from polars_rankeval import evaluate

    assert evaluate(log, [name]).columns == [name]


def test_unknown_trec_family_fails_cleanly(monkeypatch):
    # A trec_eval name whose family is not registered is refused with its name, not misread.
    import polars_rankeval._names.registry as registry

    families = {k: v for k, v in registry._FAMILIES.items() if k != "iprec_at_recall"}
    monkeypatch.setattr(registry, "_FAMILIES", families)
    with pytest.raises(RankEvalError, match=r"iprec_at_recall_0\.10"):
        parse_metrics("iprec_at_recall_0.10")


def _tiny(tmp_path: Path) -> list[str]:
    # Query 1 ranks, by score and then docno descending: e (unjudged), d (1), c (label -1),
    # b (0), a (1); f is judged relevant and not retrieved, so R = 3.
    run = tmp_path / "run.txt"
    run.write_text(
        "".join(
            f"1 Q0 {doc} 0 {score} tag\n"
            for doc, score in [("a", 1), ("b", 2), ("c", 3), ("d", 3), ("e", 4)]
        )
    )
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("1 0 a 1\n1 0 b 0\n1 0 c -1\n1 0 d 1\n1 0 f 1\n")
    return [str(run), "--qrels", str(qrels), "--format", "trec", "-q"]


def test_judged_only_and_max_docs_hand_worked(tmp_path, capsys):
    args = _tiny(tmp_path)
    cli_main([*args, "-m", "num_ret,num_rel_ret,P_2", "-mrelstring"])
    assert capsys.readouterr().out.splitlines()[:1] == ["num_ret               \t1\t5"]
    cli_main([*args, "-m", "num_ret", "-m", "relstring", "-m", "P.2"])
    lines = capsys.readouterr().out.splitlines()
    assert "relstring             \t1\t'-1.01'" in lines
    # -J: e and c leave; d, b, a are ranks 1..3: P_2 = 1/2
    cli_main([*args, "-J", "-m", "num_ret", "-m", "relstring", "-m", "P.2"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[:3] == [
        "num_ret               \t1\t3",
        "P_2                   \t1\t0.5000",
        "relstring             \t1\t'101'",
    ]
    # -M 2: e and d only; a (judged) still counts toward R: recall_5 = 1/3
    cli_main([*args, "-M", "2", "-m", "num_ret", "-m", "num_rel", "-m", "recall.5"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[:3] == [
        "num_ret               \t1\t2",
        "num_rel               \t1\t3",
        "recall_5              \t1\t0.3333",
    ]


def test_num_docs_reaches_utility(tmp_path, capsys):
    # utility = a*rel_ret + b*nonrel_ret + c*rel_not_ret + d*(N + rel_ret - ret - R)
    # rel_ret 2 (d, a), ret 5, R 3: with d=1 and -N 100: 100 + 2 - 5 - 3 = 94
    args = _tiny(tmp_path)
    cli_main([*args, "-N", "100", "-m", "utility.0,0,0,1"])
    assert capsys.readouterr().out.splitlines()[0] == "utility_0,0,0,1       \t1\t94.0000"
