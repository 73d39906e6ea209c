"""
==========================================================
Emulating Lorenz-63 from noisy observations with DySLIM
==========================================================

We observe trajectories of the Lorenz-63 system every 0.1 time units, with Gaussian noise of half
a standard deviation on each coordinate, and learn the one-step map twice with
:class:`~sklearn_icml.dynamics.DySLIMRegressor`: once with the misfit alone (``lambda = 0``, the
plain MSE emulator) and once with DySLIM's invariant-measure terms (``lambda = 1``). Both use the
same network, initial weights, mini-batches and number of optimiser steps.

Fitting the noisy next state in the mean-squared sense learns a map that contracts, so the MSE
emulator's long rollouts fall off the attractor. The measure terms ask the distribution of the
predictions to match that of the states, which keeps the rollouts on the butterfly.
"""

# %%
# Data
# ----
import matplotlib.pyplot as plt
import numpy as np

from sklearn_icml.datasets import make_lorenz63
from sklearn_icml.dynamics import DySLIMRegressor, make_rollout_dataset
from sklearn_icml.metrics import mmd2

train = make_lorenz63(150, 200, noise=0.5, random_state=0)
test = make_lorenz63(100, 200, random_state=1)  # clean trajectories from other initial states
X, y = make_rollout_dataset(train)
print(X.shape, y.shape)

# %%
# Two emulators, one objective apart
# ----------------------------------
common = dict(hidden_layer_sizes=(64, 64), batch_size=128, max_iter=650, learning_rate=4e-3, random_state=0)
mse = DySLIMRegressor(lambda_uncond=0.0, lambda_cond=0.0, **common).fit(X, y)
dyslim = DySLIMRegressor(lambda_uncond=1.0, lambda_cond=1.0, **common).fit(X, y)

# %%
# Long rollouts: the attractor
# ----------------------------
# Roll both emulators out for 600 steps from the test initial states and keep the last 100.
mu, sd = test.reshape(-1, 3).mean(axis=0), test.reshape(-1, 3).std(axis=0)
rng = np.random.RandomState(0)
reference = test.reshape(-1, 3)
fig, axes = plt.subplots(1, 3, figsize=(12, 4), sharex=True, sharey=True)
axes[0].plot(reference[::4, 0], reference[::4, 2], ",", alpha=0.5)
axes[0].set_title("truth (test attractor)")
for ax, (name, model) in zip(axes[1:], [("MSE-only", mse), ("DySLIM", dyslim)]):
    long_run = model.rollout(test[:, 0], 600)[:, -100:].reshape(-1, 3)
    z = (long_run - mu) / sd
    ref = (reference - mu) / sd
    score = mmd2(z[rng.choice(len(z), 1500, replace=False)], ref[rng.choice(len(ref), 1500, replace=False)])
    ax.plot(long_run[::4, 0], long_run[::4, 2], ",", alpha=0.5)
    ax.set_title(f"{name}: long-run MMD$^2$ {score:.3f}")
    print(f"{name}: long-run MMD^2 {score:.3f}")
for ax in axes:
    ax.set_xlabel("x")
axes[0].set_ylabel("z")
fig.tight_layout()

# %%
# Short-term forecasts: RMSE against lead time
# --------------------------------------------
# From every 20th state of the test trajectories, forecast 15 steps (1.5 time units) and compare
# with the clean truth, in units of the attractor's standard deviation.
starts = np.arange(0, 200 - 15, 20)
x0 = test[:, starts].reshape(-1, 3)
truth = np.stack([test[:, starts + k].reshape(-1, 3) for k in range(1, 16)], axis=1)
lead = 0.1 * np.arange(1, 16)
fig, ax = plt.subplots(figsize=(6, 4))
for name, model in [("MSE-only", mse), ("DySLIM", dyslim)]:
    pred = model.rollout(x0, 15)
    ax.plot(lead, np.sqrt(np.mean(((pred - truth) / sd) ** 2, axis=(0, 2))), "o-", label=name)
ax.set_xlabel("lead time")
ax.set_ylabel("RMSE (attractor standard deviations)")
ax.legend()
fig.tight_layout()
plt.show()
