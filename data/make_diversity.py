"""Generate ``data/diversity/``: a small TREC Web-track-like diversity collection.

Run ``python data/make_diversity.py`` to rebuild it (deterministic, seeded). Files:

* ``qrels.txt``: diversity qrels ``topic subtopic docno judgment`` (ndeval's input): 20 topics
  with 2 to 6 subtopics (intents) each; a judged document is relevant to one or more
  subtopics, graded 0 to 2;
* ``adhoc.txt``: a TREC run (``topic Q0 docno rank score tag``) ranking by relevance to the
  topic's main intent, 100 documents per topic, with scores rounded to two decimals (ties);
* ``diverse.txt``: the same documents re-ranked to cover more intents early (an MMR-like
  greedy re-ranking of ``adhoc`` that rewards intents not covered yet).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

N_TOPICS = 20
DEPTH = 100
OUT = Path(__file__).parent / "diversity"


def main() -> None:
    rng = np.random.default_rng(2009)
    OUT.mkdir(exist_ok=True)
    qrels: list[str] = []
    adhoc: list[str] = []
    diverse: list[str] = []
    for topic in range(1, N_TOPICS + 1):
        n_sub = int(rng.integers(2, 7))
        popularity = rng.dirichlet(np.ones(n_sub) * 0.7)  # the main intent dominates
        docs = [f"clueweb09-en{topic:04d}-{d:05d}" for d in range(160)]
        relevant: dict[str, set[int]] = {}
        for doc in docs:
            if rng.random() < 0.45:  # judged
                intents = {int(s) + 1 for s in np.flatnonzero(rng.random(n_sub) < popularity)}
                for subtopic in range(1, n_sub + 1):
                    grade = int(rng.choice([1, 2], p=[0.7, 0.3])) if subtopic in intents else 0
                    if grade or rng.random() < 0.3:
                        qrels.append(f"{topic} {subtopic} {doc} {grade}")
                relevant[doc] = intents
        main_intent = int(np.argmax(popularity)) + 1
        noise = rng.normal(0.0, 0.35, size=len(docs))
        scores = {
            doc: round(float((main_intent in relevant.get(doc, set())) + noise[i]), 2)
            for i, doc in enumerate(docs)
        }
        ranked = sorted(docs, key=lambda d: (-scores[d], d))[:DEPTH]
        adhoc.extend(
            f"{topic} Q0 {doc} {rank} {scores[doc]:.2f} adhoc" for rank, doc in enumerate(ranked, 1)
        )
        # greedy re-ranking: the score, plus a bonus for each intent not covered yet
        covered: dict[int, int] = {}
        left, reranked = list(ranked), []
        while left:
            best = max(
                left,
                key=lambda d: (
                    scores[d] + 0.5 * sum(not covered.get(s) for s in relevant.get(d, set())),
                    d,
                ),
            )
            left.remove(best)
            reranked.append(best)
            for subtopic in relevant.get(best, set()):
                covered[subtopic] = covered.get(subtopic, 0) + 1
        diverse.extend(
            f"{topic} Q0 {doc} {rank} {DEPTH + 1 - rank} diverse"
            for rank, doc in enumerate(reranked, 1)
        )
    (OUT / "qrels.txt").write_text("\n".join(qrels) + "\n")
    (OUT / "adhoc.txt").write_text("\n".join(adhoc) + "\n")
    (OUT / "diverse.txt").write_text("\n".join(diverse) + "\n")


if __name__ == "__main__":
    main()
