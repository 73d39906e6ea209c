"""
==========================================================
Choosing the fine-tuning method and rank with GridSearchCV
==========================================================

:class:`~sklearn_icml.finetune.DoRAClassifier` fine-tunes any torch network. Here the network is
our own ``nn.Sequential``, pre-trained on a source classification task; ``method`` and ``r`` are
ordinary hyper-parameters, so one :class:`~sklearn.model_selection.GridSearchCV` compares DoRA and
LoRA at several ranks with full fine-tuning and head-only training, by cross-validation on the
target task's 300 samples. The network passed as ``module`` is deep-copied by every fit and never
modified.
"""

# %%
# A pre-trained torch network
# ---------------------------
# Any ``nn.Module`` that maps ``(n_samples, n_features)`` float tensors to class logits works.
# We pre-train ours on the source task with ``method="full"`` (every weight trained).
import matplotlib.pyplot as plt
import numpy as np
import torch
from sklearn.model_selection import GridSearchCV

from sklearn_icml.datasets import make_weight_shift_tasks
from sklearn_icml.finetune import DoRAClassifier

Xs, ys, Xt, yt, Xte, yte = make_weight_shift_tasks(
    n_source=1500, n_target=300, n_test=1000, task="classification", n_classes=3, magnitude_shift=0.6,
    direction_shift=0.1, random_state=1)

# Networks this small train fastest on one CPU thread (a process-wide torch setting, which the
# estimators leave alone; set it in your own script if it helps).
torch.set_num_threads(1)

torch.manual_seed(0)  # our network's initial weights (the estimators never touch the global seed)
net = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 32), torch.nn.Tanh(),
                          torch.nn.Linear(32, 3))
pretrained = DoRAClassifier(net, method="full", max_iter=15, learning_rate=3e-3, random_state=0).fit(Xs, ys)
print(f"source accuracy {pretrained.score(Xs, ys):.3f}; "
      f"target accuracy before fine-tuning {pretrained.score(Xte, yte):.3f}")

# %%
# One grid search over the method and the rank
# --------------------------------------------
grid = [{"method": ["dora", "lora"], "r": [1, 4]}, {"method": ["full", "head"]}]
search = GridSearchCV(DoRAClassifier(pretrained.module_, max_iter=20, random_state=0), grid, cv=3,
                      scoring="accuracy").fit(Xt, yt)
print("best:", search.best_params_, f"CV accuracy {search.best_score_:.3f}")
print(f"test accuracy of the refitted best model: {search.score(Xte, yte):.3f}")

# %%
# The cross-validated accuracy of every candidate, with the number of parameters it trains:
res = search.cv_results_
labels = [p["method"] + (f", r={p['r']}" if "r" in p else "") for p in res["params"]]
n_trainable = [DoRAClassifier(pretrained.module_, max_iter=1, **p).fit(Xt, yt).n_trainable_params_
               for p in res["params"]]
order = np.argsort(res["mean_test_score"])
fig, ax = plt.subplots(figsize=(7, 3.8))
ax.barh(np.arange(len(order)), res["mean_test_score"][order], xerr=res["std_test_score"][order],
        color=["tab:blue" if labels[i].startswith("dora") else "tab:orange" if labels[i].startswith("lora")
               else "grey" for i in order])
ax.set_yticks(np.arange(len(order)), [f"{labels[i]} ({n_trainable[i]} params)" for i in order])
ax.axvline(pretrained.score(Xt, yt), color="tab:red", ls="-.", lw=1, label="no fine-tuning (300 samples)")
no_ft = pretrained.score(Xt, yt)
ax.set_xlim(min(res["mean_test_score"].min(), no_ft) - 0.05,
            (res["mean_test_score"] + res["std_test_score"]).max() + 0.02)
ax.set_xlabel("3-fold CV accuracy on the target task")
ax.set_title("GridSearchCV over method and rank")
ax.legend(loc="lower right", fontsize=8)
fig.tight_layout()
plt.show()
