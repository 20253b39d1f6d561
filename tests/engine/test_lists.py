"""List-shaped input: rke.from_lists and evaluate on per-user list columns."""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_rankeval as rke

RECS = pl.DataFrame(
    {
        "model": ["m", "m", "m"],
        "user": [1, 2, 3],
        "predicted": [["a", "b", "c"], ["d", "e"], []],
        "actual": [["b", "z"], ["q"], ["a"]],
    }
)


# user 3 has an empty list: said when the lists are read (trial 2.4)
EMPTY = r"1 of 3 user\(s\) in 'user' have an empty \(or null\) 'predicted' list, e\.g\. user 3"


def test_long_rows_by_hand() -> None:
    with pytest.warns(rke.QueryCoverageWarning, match=EMPTY):
        long = rke.from_lists(RECS, recommended="predicted", relevant="actual")
    long = long.sort("user", "item")
    assert long.rows() == [
        ("m", 1, "a", 3.0, 0),
        ("m", 1, "b", 2.0, 1),
        ("m", 1, "c", 1.0, 0),
        ("m", 1, "z", None, 1),  # relevant, not recommended: judged, unretrieved
        ("m", 2, "d", 2.0, 0),
        ("m", 2, "e", 1.0, 0),
        ("m", 2, "q", None, 1),
        ("m", 3, "a", None, 1),  # nothing recommended
    ]
    assert long.columns == ["model", "user", "item", "score", "relevance"]


def test_lazy_equals_eager_and_nothing_is_read_early() -> None:
    lazy = rke.from_lists(RECS.lazy(), recommended="predicted", relevant="actual")
    assert isinstance(lazy, pl.LazyFrame)
    eager = rke.from_lists(RECS, recommended="predicted", relevant="actual", warn_empty=False)
    with pytest.warns(rke.QueryCoverageWarning, match=EMPTY):  # when read, not before
        collected = lazy.collect()
    assert_frame_equal(collected.sort("user", "item"), eager.sort("user", "item"))


def test_labels_scores_and_arrays() -> None:
    recs = pl.DataFrame(
        {
            "user": [1, 1],
            "system": ["x", "y"],
            "recommended": [[10, 20], [20, 30]],
            "labels": [[2, 0], [0, 1]],
            "scores": [[0.1, 0.9], [0.5, 0.4]],
        }
    ).with_columns(pl.col("recommended").cast(pl.Array(pl.Int64, 2)))
    long = rke.from_lists(recs, labels="labels", scores="scores").sort("system", "item")
    assert long.select("system", "item", "score", "relevance").rows() == [
        ("x", 10, 0.1, 2),
        ("x", 20, 0.9, 0),
        ("y", 20, 0.5, 0),
        ("y", 30, 0.4, 1),
    ]
    unlabelled = rke.from_lists(recs)
    assert unlabelled["relevance"].null_count() == 4


def test_metrics_on_lists_by_hand() -> None:
    # user 1: a b c, relevant {b, z}; user 2: d e, relevant {q}; user 3: nothing, relevant {a}
    with pytest.warns(rke.QueryCoverageWarning, match=EMPTY + ": 1 of them with a relevant"):
        out = rke.evaluate(
            RECS, ["recall@2", "p@2", "ndcg@3"], query="user", item="predicted", relevance="actual"
        )
    idcg = 1 + 1 / math.log2(3)
    # trec_eval's rule skips user 3 (judged, nothing retrieved): means over users 1 and 2
    skipped = (0.5 / 2, 0.5 / 2, (1 / math.log2(3) / idcg) / 2)
    assert out.row(0) == pytest.approx(skipped, rel=1e-12)
    expected = (0.5 / 3, 0.5 / 3, (1 / math.log2(3) / idcg) / 3)
    # scoring user 3 is asked for: no warning, whichever way the lists come in
    via = rke.evaluate(
        rke.from_lists(RECS, recommended="predicted", relevant="actual", warn_empty=False),
        ["recall@2", "p@2", "ndcg@3"],
        query="user",
        missing_queries="zero",
    )
    assert via.row(0) == pytest.approx(expected, rel=1e-12)
    direct = rke.evaluate(
        RECS,
        ["recall@2", "p@2", "ndcg@3"],
        query="user",
        item="predicted",
        relevance="actual",
        missing_queries="zero",
    )
    assert direct.row(0) == pytest.approx(expected, rel=1e-12)


def test_empty_lists_are_said_once_with_a_count() -> None:
    recs = pl.DataFrame(
        {
            "user": [1, 2, 3, 4, 5],
            "recommended": [["a"], [], None, [], ["b"]],
            "relevant": [["a"], ["a"], None, [], ["b"]],
        }
    )
    with pytest.warns(rke.QueryCoverageWarning) as record:
        rke.from_lists(recs, relevant="relevant")
    assert len(record) == 1
    message = str(record[0].message)
    assert "3 of 5 user(s)" in message
    assert "e.g. user 2, 3, 4" in message
    assert "1 of them with a relevant item" in message
    assert "the others have no row at all" in message
    assert record[0].filename == __file__  # points at the user's line
    with pytest.warns(rke.QueryCoverageWarning, match="they have no row"):
        rke.from_lists(recs.drop("relevant"))
    # nothing empty, or warn_empty=False: no warning
    rke.from_lists(recs.filter(pl.col("recommended").list.len() > 0), relevant="relevant")
    rke.from_lists(recs, relevant="relevant", warn_empty=False)


def test_errors_and_the_hint() -> None:
    with pytest.raises(rke.ColumnNotFoundError, match=r"rke\.from_lists\(frame, query='user'"):
        rke.evaluate(RECS, ["ndcg@3"], query="user")
    with pytest.raises(rke.ColumnTypeError, match="must be a list column"):
        rke.from_lists(RECS, recommended="model")
    with pytest.raises(rke.ColumnNotFoundError, match="option relevant="):
        rke.from_lists(RECS, recommended="predicted", relevant="nope")
    with pytest.raises(rke.ColumnValueError, match="not both"):
        rke.from_lists(RECS, recommended="predicted", relevant="actual", labels="actual")
    mixed = pl.DataFrame({"user": [1], "recommended": [[1, 2]], "relevant": [["1"]]})
    with pytest.raises(rke.ColumnTypeError, match="must hold item ids like 'recommended'"):
        rke.from_lists(mixed, relevant="relevant")
    bad = pl.DataFrame({"user": [1, 2], "recommended": [["a"], ["b", "c"]], "labels": [[1], [1]]})
    with pytest.raises(rke.ColumnValueError, match=r"user 2 has 2 recommended items and 1 labels"):
        rke.from_lists(bad, labels="labels")
    with pytest.raises(rke.ColumnValueError, match="user 2"):
        rke.from_lists(bad.lazy(), labels="labels").collect()


def test_command_line_reads_list_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from polars_rankeval.cli import main

    path = tmp_path / "recs.parquet"
    RECS.write_parquet(path)
    code = main(
        [str(path), "--query", "user", "--item", "predicted", "--relevance", "actual", "-m", "p@2"]
    )
    out, _ = capsys.readouterr()
    assert code == 0
    assert "0.2500" in out  # users 1 and 2 (user 3 got no list: skipped, as trec_eval)


def test_command_line_lists_with_a_train_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from polars_rankeval.cli import main

    path, train_path = tmp_path / "recs.parquet", tmp_path / "train.parquet"
    RECS.write_parquet(path)
    # the train table names its keys user and item; the log's item column is the list
    pl.DataFrame({"user": [1, 2, 9], "item": ["a", "a", "d"]}).write_parquet(train_path)
    arguments = [str(path), "--query", "user", "--item", "predicted", "-m", "unseen@2"]
    code = main([*arguments, "--train", str(train_path), "--format", "csv"])
    out, err = capsys.readouterr()
    assert code == 0, err
    # user 1: a (seen), b -> 1/2; user 2: d, e, neither seen -> 1; user 3 has no list
    assert out.strip().splitlines()[-1] == "0.75"
    code = main(["compare", *arguments, "--by", "model", "--train", str(train_path)])
    assert code == 2  # one system: nothing to compare, said on one line
    assert "rank-eval: error:" in capsys.readouterr().err


def test_a_long_log_with_list_valued_item_ids_is_refused_as_such() -> None:
    # audit E24: rows of (query, item, score, relevance) whose item id is a list were taken for
    # list-shaped input and refused with "already has a column 'score'"
    log = pl.DataFrame(
        {"query": ["q", "q"], "item": [[1], [2]], "score": [1.0, 2.0], "relevance": [1, 0]}
    )
    with pytest.raises(rke.ColumnTypeError, match=r"'item' \(option item=\) holds lists"):
        rke.evaluate(log, ["map"])


def test_the_old_frame_keyword_warns_and_still_works() -> None:
    keywords = {"recommended": "predicted", "relevant": "actual", "warn_empty": False}
    with pytest.warns(rke.RankEvalDeprecationWarning, match="frame= is renamed data="):
        old = rke.from_lists(frame=RECS, **keywords)  # type: ignore[arg-type]
    assert_frame_equal(old, rke.from_lists(data=RECS, **keywords))  # type: ignore[arg-type]
