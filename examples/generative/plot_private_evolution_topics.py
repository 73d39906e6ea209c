"""
===============================================================
Private Evolution pulls public texts towards the private topics
===============================================================

A public pool of short texts covers 20 topics; the private texts are about 2 of them. Private
Evolution starts from a random public subset and, round by round, keeps the synthetic texts that
private texts vote for (through a noisy, thresholded histogram) and varies them by masking and
refilling words from the public pool's bigrams. We follow the share of surviving texts that are on
a private topic, at two privacy budgets, and show a few final synthetic texts.
"""

import matplotlib.pyplot as plt
import numpy as np

from sklearn_icml.datasets import make_topic_corpus, topic_of
from sklearn_icml.generative import PrivateEvolutionText

corpus = make_topic_corpus(3000, 1000, random_state=0)


def on_private_topics(texts):
    return np.isin(topic_of(texts, corpus.topic_words), corpus.private_topic_ids)


start = on_private_topics(corpus.public).mean()
fig, ax = plt.subplots(figsize=(6, 4))
for sigma in (11.3, 2.31):
    pe = PrivateEvolutionText(n_synthetic=300, n_iterations=8, noise_multiplier=sigma, lookahead=1,
                              initial_population=corpus.public, random_state=0).fit(corpus.private)
    share = [on_private_topics(pe.seeds_[pe.seed_rounds_ == t]).mean() for t in range(8)]
    ax.plot(range(1, 9), share, marker="o", label=f"sigma={sigma} (epsilon={pe.epsilon_spent_:.2f})")
    print(f"sigma={sigma}: epsilon {pe.epsilon_spent_:.2f}, final share {on_private_topics(pe.synthetic_).mean():.2f}")
ax.axhline(start, color="gray", ls="--", label="random public subset")
ax.set_xlabel("round")
ax.set_ylabel("survivors on a private topic")
ax.set_ylim(0, 1.05)
ax.legend()
fig.tight_layout()

for text in pe.synthetic_[:3]:
    print(text)
plt.show()
