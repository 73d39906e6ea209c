"""
==========================================================
Scaling laws per model shape and the envelope between them
==========================================================

A model's *shape* (patch size, width, input resolution) fixes which scaling law its training
follows. :class:`~sklearn_icml.scaling.ScalingLawRegressor` fits one law per shape;
:class:`~sklearn_icml.scaling.AdaptiveShapeScheduler` finds the loss levels where switching to
the next shape saves compute: the lower envelope of the marginal compute :math:`|dC/dE|`.

We first look at the envelope on synthetic runs of three shapes that follow known laws. Then we
train a small MLP on scikit-learn's digits at three input resolutions (2x2, 4x4 and 8x8
average-pooled images), fit the laws from those static runs, and train a run that follows the
schedule, switching resolution with the function-preserving
:func:`~sklearn_icml.scaling.resize_input_resolution`, with
:func:`~sklearn_icml.scaling.train_adaptive`. The prediction assumes that after a switch the model
trains like one of the new shape trained from scratch; the last panel shows how far that holds.
"""

# %%
# The envelope of three known laws
# --------------------------------
import copy
import warnings

import matplotlib.pyplot as plt
import numpy as np
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from sklearn_icml.datasets import make_scaling_runs
from sklearn_icml.scaling import (
    AdaptiveShapeScheduler,
    ScalingLawBoundWarning,
    ScalingLawRegressor,
    resize_input_resolution,
    train_adaptive,
)

X_runs, y_runs = make_scaling_runs(n_shapes=3, n_runs=30, noise=0.01, random_state=0)
synthetic = AdaptiveShapeScheduler(ScalingLawRegressor(shape_column=1, random_state=0)).fit(X_runs, y_runs)
synthetic_segments = synthetic.schedule(0.06)
print("synthetic schedule:", [(s.shape, round(s.loss_to, 4)) for s in synthetic_segments],
      f"predicted saving {synthetic.savings(0.06):.1%}")

# %%
# Static runs of a digits classifier at three resolutions
# -------------------------------------------------------
X, y = load_digits(return_X_y=True)
X = (X / 16.0).astype(np.float32)
X_tr, X_va, y_tr, y_va = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
X_va_t, y_va_t = torch.as_tensor(X_va), torch.as_tensor(y_va)
HIDDEN, BATCH, STEPS = 32, 32, 500
SIDES = (2, 4, 8)


class PoolFlatten(torch.nn.Module):
    """Average-pools the flattened 8x8 digits to ``side x side`` pixels."""

    def __init__(self, side):
        super().__init__()
        self.side = side

    def forward(self, x):
        return torch.nn.functional.avg_pool2d(x.reshape(-1, 1, 8, 8), 8 // self.side).flatten(1)


def make_model(side, seed=0):
    gen = torch.Generator().manual_seed(seed)
    model = torch.nn.Sequential(PoolFlatten(side), torch.nn.Linear(side * side, HIDDEN), torch.nn.ReLU(),
                                torch.nn.Linear(HIDDEN, 10))
    with torch.no_grad():
        for m in (model[1], model[3]):
            m.weight.copy_((torch.rand(m.weight.shape, generator=gen) * 2 - 1) / np.sqrt(m.in_features))
            m.bias.zero_()
    return model


def resize(model, side):
    """The same network on another resolution: the first layer is resized, the rest kept."""
    if model[0].side == side:
        return model
    new = copy.deepcopy(model)
    new[0], new[1] = PoolFlatten(side), resize_input_resolution(model[1], model[0].side, side)
    return new


def flops(side):  # 6 x parameters x batch per training step
    return 6.0 * BATCH * (side * side * HIDDEN + HIDDEN + HIDDEN * 10 + 10)


def evaluate(model):  # held-out cross-entropy: the loss the laws are written in
    return float(torch.nn.functional.cross_entropy(model(X_va_t), y_va_t))


common = dict(loss_fn=torch.nn.functional.cross_entropy, eval_fn=evaluate, flops_per_step=flops,
              learning_rate=3e-3, batch_size=BATCH, eval_every=20, random_state=0)
curves = {side: train_adaptive(make_model(side), resize, None, (X_tr, y_tr), target_loss=1e-9, max_steps=STEPS,
                               shape=side, **common).history for side in SIDES}

# %%
# One law per resolution, and the schedule
# ----------------------------------------
# The first evaluations (the transient of the first steps) are left out of the fit. Constant
# learning-rate runs often approach their plateau faster than a power law, which puts the exponent
# on its bound; the regressor says so in ``at_bound_`` (and with a warning, silenced here).
runs = np.array([(c, side, e) for side, h in curves.items() for c, e, _ in h[2:]])
law = ScalingLawRegressor(shape_column=1, random_state=0)
with warnings.catch_warnings():
    warnings.simplefilter("ignore", ScalingLawBoundWarning)
    scheduler = AdaptiveShapeScheduler(law).fit(runs[:, :2], runs[:, 2])
print("parameters on a bound:", scheduler.law_.at_bound_)

# %%
# The target: among 1.2 to 4 times the best loss of the static runs, the loss where the laws
# predict the largest saving.
best = min(e for h in curves.values() for _, e, _ in h)
candidates = [m * best for m in (1.2, 1.5, 2.0, 3.0, 4.0) if m * best > max(
    min(p["c"] for p in scheduler.law_.params_.values()), 0)]
target = min(candidates, key=lambda t: scheduler.predicted_compute(t) / scheduler.static_compute(t))
segments = scheduler.schedule(target)
for s in segments:
    print(f"{s.shape}x{s.shape}: loss {s.loss_from:.3f} -> {s.loss_to:.3f}, "
          f"compute {s.compute_from:.3g} -> {s.compute_to:.3g}")
print(f"predicted adaptive / best static compute: "
      f"{scheduler.predicted_compute(target) / scheduler.static_compute(target):.3f}")

# %%
# A run along the schedule
# ------------------------
adaptive = train_adaptive(make_model(segments[0].shape), resize, scheduler, (X_tr, y_tr), target_loss=target,
                          max_steps=3 * STEPS, stall_patience=8, **common)
static_best = min(next((c for c, e, _ in h if e <= target), np.inf) for h in curves.values())
print(f"realised adaptive / best static compute: {adaptive.compute_to_target / static_best:.3f}")

# %%
# The figure
# ----------
# Left: the synthetic runs and their fitted laws. Middle: the marginal compute of each shape against
# the loss; the schedule follows the lowest curve and switches where the curves cross (dotted lines).
# Right: the digits runs (thin: static resolutions), the adaptive run (dots, colored by resolution)
# and the curve its schedule predicts (dashed).
fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
shape_colors = {1: "tab:blue", 2: "tab:orange", 3: "tab:green"}
grid = np.geomspace(X_runs[:, 0].min(), X_runs[:, 0].max(), 200)
for shape in (1, 2, 3):
    mask = X_runs[:, 1] == shape
    axes[0].scatter(X_runs[mask, 0], y_runs[mask], s=6, color=shape_colors[shape], alpha=0.5)
    axes[0].plot(grid, synthetic.law_.predict(np.column_stack([grid, np.full(200, shape)])),
                 color=shape_colors[shape], label=f"shape {shape}")
axes[0].set(xscale="log", yscale="log", xlabel="compute", ylabel="loss", title="fitted laws (synthetic runs)")
axes[0].legend()

levels = np.geomspace(0.06, synthetic_segments[0].loss_from, 300)
for shape in (1, 2, 3):
    axes[1].plot(levels, synthetic.law_.marginal_compute(levels, shape=shape), color=shape_colors[shape],
                 label=f"shape {shape}")
for seg in synthetic_segments[:-1]:
    axes[1].axvline(seg.loss_to, color="k", linestyle=":")
axes[1].set(xscale="log", yscale="log", xlabel="loss E", ylabel="|dC/dE|", title="envelope and switch points")
axes[1].legend()

res_colors = {2: "tab:blue", 4: "tab:orange", 8: "tab:green"}
predicted_c, predicted_e = [], []
for seg in segments:
    e = np.geomspace(seg.loss_from, seg.loss_to, 50)
    c0 = scheduler.law_.compute_to_reach(seg.loss_from, shape=seg.shape)
    predicted_c.append(seg.compute_from + scheduler.law_.compute_to_reach(e, shape=seg.shape) - c0)
    predicted_e.append(e)
axes[2].plot(np.concatenate(predicted_c), np.concatenate(predicted_e), "k--", label="predicted (schedule)")
for side, h in curves.items():
    cs, es, _ = np.array(h).T
    axes[2].plot(cs, es, color=res_colors[side], alpha=0.4, label=f"static {side}x{side}")
c, e, shape = zip(*adaptive.history)
axes[2].scatter(c, e, c=[res_colors[s] for s in shape], s=8, label="adaptive run")
axes[2].axhline(target, color="gray", linewidth=0.8)
axes[2].set(xscale="log", yscale="log", xlabel="compute (FLOPs)", ylabel="held-out loss",
            title="digits: realised vs predicted")
axes[2].legend(fontsize=8)
fig.tight_layout()
plt.show()
