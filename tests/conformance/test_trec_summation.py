"""The trec layout's means are summed as trec_eval sums them, to the last printed digit.

trec_eval (``trec_eval.c``, ``meas_acc.c``, ``meas_avg.c``) walks the topics in ``strcmp``
order of their ids, adds each topic's value to a running double, and divides by the number of
topics. A mean summed in another order can differ in the last bit, and on a value such as
0.46625 that bit decides the fourth printed decimal. These 240 topics (P_10 of 0.0 to 1.0,
found by a random search) are such a case: the running sum gives 0.46625000000000016 (printed
0.4663), a pairwise sum 0.46624999999999994 (printed 0.4662).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from polars_rankeval.cli import main

# Relevant documents in each topic's top 10, topic by topic ("A" is 10).
RELEVANT = (
    "31A1986982675916216A0318770574513950579451824A5912316357236313309953413314769175306204A504275"
    "333693A06027119498139718566191084353A685059109760425048390764927019428A82330699864A967208A8"
    "204609306958A526142065999A31A25242102A0144256147A0A73337"
)


def _files(tmp_path: Path) -> tuple[str, str]:
    run, qrels = [], []
    for index, char in enumerate(RELEVANT):
        topic, relevant = f"q{index:03d}", 10 if char == "A" else int(char)
        for rank in range(10):
            run.append(f"{topic} Q0 d{rank} {rank + 1} {10 - rank} tag")
            qrels.append(f"{topic} 0 d{rank} {int(rank < relevant)}")
    run_path, qrels_path = tmp_path / "run.txt", tmp_path / "qrels.txt"
    run_path.write_text("\n".join(run) + "\n")
    qrels_path.write_text("\n".join(qrels) + "\n")
    return str(run_path), str(qrels_path)


def test_running_sum_in_topic_order(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    values = [(10 if char == "A" else int(char)) / 10 for char in RELEVANT]
    total = 0.0
    for value in values:  # trec_eval's loop, in strcmp order of q000..q239
        total += value
    assert len(values) == 240
    assert f"{total / 240:.4f}" == "0.4663"
    run, qrels = _files(tmp_path)
    assert main([run, "--qrels", qrels, "-m", "P.10", "-f", "trec"]) == 0
    assert capsys.readouterr().out == "P_10                  \tall\t0.4663\n"
    # Several runs in one call sum each run the same way.
    second = tmp_path / "again.txt"
    second.write_text(Path(run).read_text())
    assert main([run, str(second), "--qrels", qrels, "-m", "P.10", "-f", "trec"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1] == out[3] == "P_10                  \tall\t0.4663"
