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
* ``scores.parquet``: every score behind those lists, for full and sampled evaluation:
  ``user, system, item, score`` for each item the user has not interacted with in train
  (held-out items included). ``popular``, ``random`` and ``genre`` score each unseen item by
  its place in the system's full ordering (the top 20 are ``recs.parquet``'s lists, in order);
  a fourth system, ``smooth``, exists only here: it puts each of the user's held-out items at a
  distinct full rank between 11 and 100 and the other unseen items in popularity order: it
  never ranks a held-out item in a full top 10, yet beats the others against 100 sampled
  negatives (Krichene & Rendle's point). Its randomness comes from a second generator seeded
  ``seed + 1`` and drawn after the others, so the first four files do not change.
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
    orders: list[dict[str, np.ndarray]] = []  # each user's full orderings, for scores.parquet
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
        orders.append(
            {
                "popular": by_popularity,
                "genre": np.concatenate([in_genre, rest]),
                "random_top": lists["random"],
                "unseen": unseen,
                "held_out": held_out,
            }
        )
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
        "scores": _scores(orders, np.random.default_rng(seed + 1)),
    }


def _scores(orders: list[dict[str, np.ndarray]], rng: np.random.Generator) -> pl.DataFrame:
    """Each system's score for every unseen item: its place in the system's full ordering.

    The score of the item at 0-based place ``p`` in a user's ordering of ``u`` unseen items is
    ``u - p`` (distinct, so no tie is broken by item id).
    """
    systems = ("popular", "random", "genre", "smooth")
    frames = []
    for user, order in enumerate(orders):
        unseen, held_out = order["unseen"], order["held_out"]
        top = order["random_top"]
        rest = np.setdiff1d(unseen, top)
        # the random system: its 20 recommended items first, the others in a random order
        random_order = np.concatenate([top, rng.permutation(rest)])
        # the smooth system: held-out items at distinct places 10..99 (ranks 11..100)
        places = np.sort(rng.choice(np.arange(10, 100), size=len(held_out), replace=False))
        others = order["popular"][~np.isin(order["popular"], held_out)]
        smooth = np.empty(len(unseen), dtype=np.int64)
        is_held = np.zeros(len(unseen), dtype=bool)
        is_held[places] = True
        smooth[is_held] = rng.permutation(held_out)
        smooth[~is_held] = others
        for system, ordering in zip(
            systems, (order["popular"], random_order, order["genre"], smooth), strict=True
        ):
            frames.append(
                pl.DataFrame(
                    {
                        "user": np.full(len(ordering), user, dtype=np.int16),
                        "system": [system] * len(ordering),
                        "item": ordering.astype(np.int16),
                        "score": (len(ordering) - np.arange(len(ordering))).astype(np.float32),
                    }
                )
            )
    return pl.concat(frames).sort("user", "system", "item")


if __name__ == "__main__":
    folder = Path(__file__).resolve().parent / "recsys"
    folder.mkdir(exist_ok=True)
    for name, frame in make_recsys().items():
        frame.write_parquet(folder / f"{name}.parquet")
        print(f"{name}: {frame.shape}")
