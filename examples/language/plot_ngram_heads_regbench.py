"""
==============================================================
N-gram heads make in-context language learning easy to learn
==============================================================

Each REGBENCH instance is a handful of strings of an unknown regular language, joined by a
separator; a model must predict the next letter in context, on automata it has never seen.
We show one automaton with its strings, train a small Transformer with and without hard-wired
n-gram heads for the same number of optimiser steps, and look at one head's attention: each
position attends to the earlier positions that followed the same two tokens.
"""

import matplotlib.pyplot as plt
import numpy as np

from sklearn_icml.datasets import make_regular_languages
from sklearn_icml.language import InContextNGram, NGramTransformerLM

train = make_regular_languages(200, max_len=64, random_state=1)
test = make_regular_languages(60, max_len=64, exclude=train.automata, random_state=0)

# %%
# One language: its automaton and the start of its sample
# --------------------------------------------------------
table = test.automata[0]
letters = "abcdefghijklmnopqr"
tokens = [t for t in test.sequences[0] if t >= 0]
print("sample:", "".join("|" if t == 18 else letters[t] for t in tokens[:60]))
for state, row in enumerate(table):
    print(f"state {state}:", ", ".join(f"{letters[a]} -> {row[a]}" for a in np.flatnonzero(row >= 0)))

# %%
# The in-context 3-gram needs no training at all
# ----------------------------------------------
trigram = InContextNGram(order=3).fit(test.sequences)
unigram = InContextNGram(order=1).fit(test.sequences)
print(f"in-context 3-gram accuracy {trigram.score(test.sequences, test.valid_next):.3f}, "
      f"1-gram {unigram.score(test.sequences, test.valid_next):.3f}")

# %%
# Accuracy against optimiser steps, with and without n-gram heads
# ---------------------------------------------------------------
steps_per_epoch = int(np.ceil(len(train.sequences) / 16))
epochs = [1, 2, 4]
curves = {}
for name, orders in [("n-gram heads (1, 2, 3)", (1, 2, 3)), ("vanilla", ())]:
    curves[name] = [
        NGramTransformerLM(d_model=32, max_len=64, ngram_orders=orders, max_iter=k, random_state=0)
        .fit(train.sequences).score(test.sequences, test.valid_next)
        for k in epochs
    ]

fig, axes = plt.subplots(1, 2, figsize=(11, 4))
for name, accuracy in curves.items():
    axes[0].plot(np.array(epochs) * steps_per_epoch, accuracy, marker="o", label=name)
axes[0].axhline(trigram.score(test.sequences, test.valid_next), color="gray", ls="--", label="in-context 3-gram")
axes[0].set_xlabel("optimiser steps")
axes[0].set_ylabel("DFA accuracy on unseen languages")
axes[0].legend()

# %%
# One head's attention: order 2 on the first 40 tokens
# ----------------------------------------------------
import torch  # noqa: E402

from sklearn_icml.language._modules import head_match_matrix  # noqa: E402

attention = head_match_matrix(torch.as_tensor(test.sequences[:1, :40]), 2)[0].numpy()
axes[1].imshow(attention, cmap="Blues")
axes[1].set_xlabel("attended position j (reads the token at j)")
axes[1].set_ylabel("position i")
axes[1].set_title("2-gram head: j whose two preceding tokens end i")
fig.tight_layout()
plt.show()
