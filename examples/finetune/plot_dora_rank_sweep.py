"""
==============================================================
DoRA against LoRA, full fine-tuning and head-only at each rank
==============================================================

A small MLP is pre-trained on a *source* task labelled by a teacher network. The *target* task's
teacher has the same architecture, with the norms of its hidden units changed (and their
directions a little): a shift that is mostly in magnitude. With 300 target samples we fine-tune the
pre-trained network four ways with :class:`~sklearn_icml.finetune.DoRARegressor`:

* ``method="dora"``: weight-decomposed low-rank adapters (direction of rank ``r`` plus one
  magnitude per unit), the head trained;
* ``method="lora"``: low-rank adapters with the same initialisation, the head trained;
* ``method="full"``: every weight trained;
* ``method="head"``: only the output layer trained.

The adapters are merged after ``fit``, so every fine-tuned network has the pre-trained network's
size and speed.
"""

# %%
# Data and pre-training
# ---------------------
import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.ticker import NullFormatter

from sklearn_icml.datasets import make_weight_shift_tasks
from sklearn_icml.finetune import DoRARegressor

# Networks this small train fastest on one CPU thread (a process-wide torch setting, which the
# estimators leave alone; set it in your own script if it helps).
torch.set_num_threads(1)

Xs, ys, Xt, yt, Xte, yte = make_weight_shift_tasks(
    n_source=1500, n_target=300, n_test=1000, magnitude_shift=0.6, direction_shift=0.1, random_state=0)
pretrained = DoRARegressor(method="full", hidden_layer_sizes=(32, 32), activation="tanh", max_iter=25,
                           learning_rate=2e-3, random_state=0).fit(Xs, ys)
print(f"source R^2 {pretrained.score(Xs, ys):.3f}, target R^2 before fine-tuning {pretrained.score(Xte, yte):.3f}")

# %%
# Fine-tuning at ranks 1 to 8
# ---------------------------
ranks = [1, 2, 4, 8]
common = dict(max_iter=40, batch_size=32, learning_rate=1e-3, random_state=0)
fitted = {}
for method in ("dora", "lora"):
    for r in ranks:
        fitted[method, r] = DoRARegressor(pretrained.module_, method=method, r=r, **common).fit(Xt, yt)
for method in ("full", "head"):
    fitted[method, None] = DoRARegressor(pretrained.module_, method=method, **common).fit(Xt, yt)

score = {key: est.score(Xte, yte) for key, est in fitted.items()}
for key, est in fitted.items():
    print(f"{key[0]:>4} r={key[1]}: R^2 {score[key]:.4f} with {est.n_trainable_params_} trainable parameters")

fig, axes = plt.subplots(1, 2, figsize=(11, 4))
ax = axes[0]
NAMES = {"dora": "DoRA", "lora": "LoRA", "full": "full fine-tuning", "head": "head only"}
for method, style in (("dora", "o-"), ("lora", "s--")):
    ax.plot(ranks, [score[method, r] for r in ranks], style, label=NAMES[method])
ax.axhline(score["full", None], color="k", lw=1, label="full fine-tuning")
ax.axhline(score["head", None], color="grey", lw=1, ls=":", label="head only")
ax.axhline(pretrained.score(Xte, yte), color="tab:red", lw=1, ls="-.", label="no fine-tuning")
ax.set_xscale("log", base=2)
ax.set_xticks(ranks, [str(r) for r in ranks])
ax.set_xlabel("rank r")
ax.set_ylabel("test R$^2$ on the target task")
ax.set_title("Fine-tuning quality")
ax.legend(fontsize=8)

ax = axes[1]
for method, style in (("dora", "o-"), ("lora", "s--")):
    ax.plot([fitted[method, r].n_trainable_params_ for r in ranks], [score[method, r] for r in ranks], style,
            label=NAMES[method])
for method, marker in (("full", "k*"), ("head", "v")):
    ax.plot(fitted[method, None].n_trainable_params_, score[method, None], marker, ms=10,
            label=NAMES[method])
ax.set_xscale("log")
ax.set_xlabel("trainable parameters")
ax.set_title("Quality against cost")
ax.legend(fontsize=8)
fig.tight_layout()

# %%
# What changed in the weights: magnitude against direction
# --------------------------------------------------------
# For each unit (row) of the first hidden layer we compare the fine-tuned weight with the
# pre-trained one: the change of its norm ``|Delta m|`` and of its direction ``1 - cos``.
# :func:`~sklearn_icml.finetune.magnitude_direction_shift` gives their means, the paper's
# Delta M and Delta D. LoRA can only move a unit's norm by moving its direction, so the two go
# together; DoRA's magnitude vector changes norms on its own, like full fine-tuning.
from sklearn_icml.finetune import magnitude_direction_shift  # noqa: E402

W0 = pretrained.module_.body[0].weight.detach().numpy()
fig, ax = plt.subplots(figsize=(6, 4.5))
for (method, r), color in ((("full", None), "k"), (("lora", 4), "tab:orange"), (("dora", 4), "tab:blue")):
    W = fitted[method, r].module_.body[0].weight.detach().numpy()
    n, n0 = np.linalg.norm(W, axis=1), np.linalg.norm(W0, axis=1)
    d_dir = 1 - np.sum(W * W0, axis=1) / (n * n0)
    dm, dd = magnitude_direction_shift(W0, W)
    label = rf"{NAMES[method]}: $\Delta M$ = {dm:.3f}, $\Delta D$ = {dd:.4f}"
    ax.scatter(d_dir, np.abs(n - n0), s=18, color=color, alpha=0.7, label=label)
ax.set_xscale("log")
ax.xaxis.set_minor_formatter(NullFormatter())
ax.set_xlabel("direction change of a unit, 1 - cos")
ax.set_ylabel(r"magnitude change of a unit, $|\Delta m|$")
ax.set_title("First hidden layer, 32 units (r=4 for the adapters)")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()
