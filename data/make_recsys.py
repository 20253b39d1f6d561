"""Generate ``data/recsys/``: a small MovieLens-like recommender evaluation set.

Run ``python data/make_recsys.py`` to rebuild it (deterministic, seeded). Files:

* ``train.parquet``: past interactions ``user, item`` (about 12,000 rows; item popularity
  follows a Zipf-like law, as ratings do in MovieLens);
* ``test.parquet``: each user's held-out interactions ``user, item`` (5 per user);
* ``items.parquet``: one row per item: ``item, genre`` (one of 12) and ``embedding``, a
  16-dimensional float vector drawn around its genre's centre;
* ``recs.parquet``: three recommenders' top-20 lists, list-shaped as recommenders write them:
  ``user, system, recommended`` (best first). ``popular`` recommends the most popular unseen
  items, ``random`` random unseen items, and ``genre`` popular unseen items of the user's
  favourite genre first.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

N_USERS = 400
N_ITEMS = 1_000
N_GENRES = 12
HISTORY = 60  # train interactions per user, at most
HELD_OUT = 5
DEPTH = 20


def make_recsys(seed: int = 11) -> dict[str, pl.DataFrame]:
    rng = np.random.default_rng(seed)
    popularity = 1.0 / np.arange(1, N_ITEMS + 1) ** 0.9
    popularity /= popularity.sum()
    genre = rng.integers(0, N_GENRES, size=N_ITEMS)
    centres = rng.normal(size=(N_GENRES, 16))
    embedding = centres[genre] + 0.6 * rng.normal(size=(N_ITEMS, 16))
    train_rows, test_rows, rec_rows = [], [], []
    for user in range(N_USERS):
        taste = rng.integers(0, N_GENRES)
        weights = popularity * np.where(genre == taste, 4.0, 1.0)
        weights /= weights.sum()
        size = int(rng.integers(HELD_OUT + 5, HISTORY + 1))
        seen = rng.choice(N_ITEMS, size=size, replace=False, p=weights)
        history, held_out = seen[:-HELD_OUT], seen[-HELD_OUT:]
        train_rows += [(user, int(i)) for i in history]
        test_rows += [(user, int(i)) for i in held_out]
        unseen = np.setdiff1d(np.arange(N_ITEMS), history)
        by_popularity = unseen[np.argsort(-popularity[unseen], kind="stable")]
        favourite = np.bincount(genre[history], minlength=N_GENRES).argmax()
        in_genre = by_popularity[genre[by_popularity] == favourite]
        rest = by_popularity[genre[by_popularity] != favourite]
        lists = {
            "popular": by_popularity[:DEPTH],
            "random": rng.choice(unseen, size=DEPTH, replace=False),
            "genre": np.concatenate([in_genre, rest])[:DEPTH],
        }
        rec_rows += [(user, system, [int(i) for i in items]) for system, items in lists.items()]
    return {
        "train": pl.DataFrame(train_rows, schema=["user", "item"], orient="row"),
        "test": pl.DataFrame(test_rows, schema=["user", "item"], orient="row"),
        "items": pl.DataFrame(
            {
                "item": np.arange(N_ITEMS),
                "genre": [f"g{g:02d}" for g in genre],
                "embedding": embedding.astype(np.float32),
            }
        ),
        "recs": pl.DataFrame(rec_rows, schema=["user", "system", "recommended"], orient="row"),
    }


if __name__ == "__main__":
    folder = Path(__file__).resolve().parent / "recsys"
    folder.mkdir(exist_ok=True)
    for name, frame in make_recsys().items():
        frame.write_parquet(folder / f"{name}.parquet")
        print(f"{name}: {frame.shape}")
