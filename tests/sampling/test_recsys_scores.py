"""data/recsys/scores.parquet: what data/make_recsys.py writes, consistent with recs.parquet."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import polars as pl
import pytest

from tests.conftest import ROOT

FOLDER = ROOT / "data" / "recsys"


@pytest.fixture(scope="module")
def made() -> dict[str, pl.DataFrame]:
    path = ROOT / "data" / "make_recsys.py"
    spec = importlib.util.spec_from_file_location("make_recsys", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out: dict[str, pl.DataFrame] = module.make_recsys()
    return out


def test_every_file_is_what_make_recsys_writes(made: dict[str, pl.DataFrame]) -> None:
    for name, frame in made.items():
        assert pl.read_parquet(Path(FOLDER, f"{name}.parquet")).equals(frame), name


def test_scores_cover_every_unseen_item_and_agree_with_the_lists() -> None:
    scores = pl.read_parquet(FOLDER / "scores.parquet")
    train = pl.read_parquet(FOLDER / "train.parquet")
    recs = pl.read_parquet(FOLDER / "recs.parquet")
    assert scores.schema == pl.Schema(
        {"user": pl.Int16, "system": pl.String, "item": pl.Int16, "score": pl.Float32}
    )
    wide = scores.with_columns(pl.col("user", "item").cast(pl.Int64))
    assert wide.join(train, on=["user", "item"]).height == 0
    seen = train.group_by("user").len(name="seen")
    per_list = wide.group_by("user", "system").len().join(seen, on="user")
    assert (per_list["len"] + per_list["seen"] == 1000).all()
    top = (
        wide.sort("score", descending=True)
        .group_by("user", "system", maintain_order=True)
        .agg(pl.col("item").head(20).alias("top"))
    )
    joined = recs.join(top, on=["user", "system"])
    assert joined.height == recs.height
    assert (joined["top"] == joined["recommended"]).all()
    assert (
        wide.group_by("user", "system").agg(pl.col("score").n_unique() == pl.len())["score"].all()
    )  # no ties: no tie rule is involved


def test_smooth_puts_held_out_items_between_ranks_11_and_100() -> None:
    scores = pl.read_parquet(FOLDER / "scores.parquet").with_columns(
        pl.col("user", "item").cast(pl.Int64)
    )
    test = pl.read_parquet(FOLDER / "test.parquet")
    ranked = scores.filter(pl.col("system") == "smooth").with_columns(
        pl.col("score").rank("ordinal", descending=True).over("user").alias("rank")
    )
    ranks = ranked.join(test, on=["user", "item"])["rank"]
    assert ranks.len() == test.height
    assert ranks.min() >= 11  # type: ignore[operator]
    assert ranks.max() <= 100  # type: ignore[operator]
