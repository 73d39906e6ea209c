"""
=====================================================
A Chatbot Arena leaderboard with confidence intervals
=====================================================

Twenty chatbots, 6,000 simulated crowd votes between random pairs, and a style covariate: the
difference in answer length between the two answers, which sways voters regardless of quality. (The
simulation has no ties: it would draw them independently of the ratings, and counting them as half
wins, as the Arena does, would then shrink every estimate towards the mean.)

We fit :class:`~sklearn_icml.ranking.BradleyTerryRanker` the way Chatbot Arena does (maximum
likelihood, sandwich intervals), with the length difference as a covariate (style control), and
draw the leaderboard: each rating with its 95 % interval, the wider simultaneous interval that holds
for all twenty at once, the true rating of the simulation, and the paper's approximate rank. Online
Elo (:class:`~sklearn_icml.ranking.EloRater`), the leaderboard the Arena started with, is compared
at the end.
"""

# %%
# Votes
# -----
import math

import matplotlib.pyplot as plt
import numpy as np

from sklearn_icml.datasets import make_arena_battles
from sklearn_icml.ranking import ActivePairSampler, BradleyTerryRanker, EloRater

X, y, truth = make_arena_battles(n_battles=6000, n_competitors=20, tie_proba=0.0, n_covariates=1,
                                 return_truth=True, random_state=0)
print(X[:3])
print(y[:3])
true_rating = 400 / math.log(10) * truth["scores"] + 1000

# %%
# Ratings, intervals and ranks
# ----------------------------
# The point estimate is the full-data maximum-likelihood rating; ``rating_intervals_`` are the
# per-competitor 95 % sandwich intervals and ``ranks_`` the approximate ranks
# ``1 + #{competitors whose lower bound exceeds my upper bound}``.
ranker = BradleyTerryRanker().fit(X, y)
joint = BradleyTerryRanker(simultaneous=True).fit(X, y)
board = ranker.leaderboard()
print(f"style coefficient {ranker.covariate_coef_[0]:.2f} (true {truth['covariate_coef'][0]:.2f})")
for row in board[:5]:
    print(f"{row['item']}  {row['rating']:7.1f}  [{row['lower']:7.1f}, {row['upper']:7.1f}]  rank {row['rank']}")

# %%
# The leaderboard plot
# --------------------
# The ranks in the labels come from the simultaneous intervals: with probability at least 95 %, no
# chatbot is ranked better than it is (the paper's uniformly valid ranking).
order = np.argsort(ranker.ratings_)
pos = np.arange(len(order))
fig, (ax, ax_elo) = plt.subplots(1, 2, figsize=(11, 6), gridspec_kw={"width_ratios": [3, 2]})
lo, hi = joint.rating_intervals_[order].T
ax.hlines(pos, lo, hi, color="0.75", lw=6, label="95 % simultaneous interval")
lo, hi = ranker.rating_intervals_[order].T
ax.hlines(pos, lo, hi, color="C0", lw=2.5, label="95 % interval (sandwich)")
ax.plot(ranker.ratings_[order], pos, "o", color="C0", label="rating")
ax.plot(true_rating[order], pos, "x", color="C3", label="true rating")
ax.set_yticks(pos, [f"{ranker.items_[i]}  (#{joint.ranks_[i]})" for i in order])
ax.set_xlabel("Elo-scale rating")
ax.set_title("Bradley-Terry leaderboard with approximate ranks")
ax.legend(loc="lower right", fontsize=8)

# %%
# Online Elo against Bradley-Terry
# --------------------------------
# Online Elo with FastChat's K=4 on the same votes (without style control, which Elo cannot do)
# depends on the order of the votes and lags behind the extremes; Bradley-Terry without the style
# covariate is pulled towards the mean by the omitted length effect.
elo = EloRater().fit(X, y)
plain = BradleyTerryRanker().fit(X[:, :2], y)
ax_elo.plot(true_rating, plain.ratings_, "o", color="C2", label="Bradley-Terry, no style control")
ax_elo.plot(true_rating, elo.ratings_, "s", color="C1", mfc="none", label="online Elo, K=4")
ax_elo.plot(true_rating, ranker.ratings_, ".", color="C0", label="Bradley-Terry, style control")
span = [true_rating.min() - 30, true_rating.max() + 30]
ax_elo.plot(span, span, "k:", lw=1)
ax_elo.set_xlabel("true rating")
ax_elo.set_ylabel("estimated rating")
ax_elo.set_title("Estimates against the truth")
ax_elo.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %%
# Which pairs to show next
# ------------------------
# :class:`~sklearn_icml.ranking.ActivePairSampler` (paper Eq. 9) favours pairs whose interval would
# shrink most with one more vote; the probabilities it returns are what
# ``BradleyTerryRanker.fit(..., sampling_proba=...)`` needs to reweight actively sampled votes.
sampler = ActivePairSampler(random_state=0).fit(X, y)
pairs, proba = sampler.pair_proba()
for k in np.argsort(proba)[::-1][:3]:
    print(f"{pairs[k, 0]} vs {pairs[k, 1]}: probability {proba[k]:.4f} (uniform {1 / len(proba):.4f})")
