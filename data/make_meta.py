"""Generate ``data/meta/``: eight runs and two sets of judgments, for meta-evaluation examples.

Run ``python data/make_meta.py`` to rebuild it (deterministic, seeded). Files:

* ``qrels.human.txt``: graded judgments 0-3 of 50 queries × 120 pooled documents (TREC qrels,
  most of them non-relevant);
* ``qrels.llm.txt``: the same documents judged by a noisier "model" judge (a label moves by one
  grade a fifth of the time, and the judge is lenient on grade 1);
* ``runs.parquet``: eight systems' top-100 rankings of the pool (``system, query, item,
  score``), of increasing skill, two of them near-identical re-rankers of a third.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

N_QUERIES = 50
POOL = 120
DEPTH = 100
OUT = Path(__file__).parent / "meta"


def main() -> None:
    rng = np.random.default_rng(2025)
    OUT.mkdir(exist_ok=True)
    human_lines, llm_lines, runs = [], [], []
    skills = {
        "bm25": 0.50,
        "qld": 0.55,
        "rm3": 0.60,
        "dense": 0.70,
        "colbert": 0.78,
        "splade": 0.80,
        "monot5": 0.95,
        "monot5-b": 0.95,
    }
    for q in range(1, N_QUERIES + 1):
        grades = rng.choice([0, 1, 2, 3], size=POOL, p=[0.8, 0.1, 0.06, 0.04])
        docs = [f"doc{q:02d}-{d:03d}" for d in range(POOL)]
        noise = rng.random(POOL)
        llm = np.where(noise < 0.1, np.clip(grades + 1, 0, 3), grades)
        llm = np.where((noise >= 0.1) & (noise < 0.2), np.clip(grades - 1, 0, 3), llm)
        llm = np.where((grades == 0) & (rng.random(POOL) < 0.08), 1, llm)  # lenient
        for doc, human, model in zip(docs, grades, llm, strict=True):
            human_lines.append(f"{q} 0 {doc} {human}")
            llm_lines.append(f"{q} 0 {doc} {model}")
        shared = rng.normal(0, 0.8, size=POOL)  # what every system sees in a document
        near_copy = np.zeros(POOL)  # monot5-b: monot5's own noise, slightly perturbed
        for system, skill in skills.items():
            own = near_copy if system == "monot5-b" else rng.normal(0, 1, size=POOL)
            score = skill * grades + shared + own
            if system == "monot5":
                near_copy = own + rng.normal(0, 0.1, size=POOL)
            top = np.argsort(-score)[:DEPTH]
            runs.extend((system, str(q), docs[i], round(float(score[i]), 4)) for i in top)
    (OUT / "qrels.human.txt").write_text("\n".join(human_lines) + "\n")
    (OUT / "qrels.llm.txt").write_text("\n".join(llm_lines) + "\n")
    pl.DataFrame(runs, schema=["system", "query", "item", "score"], orient="row").write_parquet(
        OUT / "runs.parquet"
    )


if __name__ == "__main__":
    main()
