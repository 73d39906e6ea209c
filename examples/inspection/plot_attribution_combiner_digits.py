"""
==================================================================
Optimal combinations of feature attributions on handwritten digits
==================================================================

Different attribution methods explain the same prediction differently. For one input,
:class:`~sklearn_icml.inspection.AttributionCombiner` (Decker et al., ICML 2024) finds the convex
combination of several base maps that is the most *faithful* (the lowest infidelity: the map
predicts how the output drops when random pixels are switched off) or the most *robust* (the map
changes least when the input is slightly perturbed). Both criteria are quadratic in the weights,
so the best weights solve a small quadratic programme over the simplex, exactly, per input.

We train a small torch network on scikit-learn's digits, explain a few test digits with six
base methods, and look at the maps, the weights each criterion picks, and the quality of the
combinations on fresh perturbations.
"""

# %%
# A small torch classifier on the digits
# ---------------------------------------
import matplotlib.pyplot as plt
import numpy as np
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from sklearn_icml.inspection import AttributionCombiner

X, y = load_digits(return_X_y=True)
X = X / 16.0
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)

gen = torch.Generator().manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
with torch.no_grad():
    for p in net.parameters():
        p.copy_(0.1 * torch.randn(p.shape, generator=gen))
opt = torch.optim.Adam(net.parameters(), lr=1e-2)
Xt, yt = torch.tensor(X_train, dtype=torch.float32), torch.tensor(y_train)
for _ in range(300):
    opt.zero_grad()
    torch.nn.functional.cross_entropy(net(Xt), yt).backward()
    opt.step()
net.eval()
with torch.no_grad():
    accuracy = (net(torch.tensor(X_test, dtype=torch.float32)).argmax(1).numpy() == y_test).mean()
print(f"test accuracy: {accuracy:.3f}")

# %%
# Combine six base methods, once per criterion
# --------------------------------------------
# The module is already trained, so ``fit`` only records what the explanations need (here a zero
# baseline and pixel units for the perturbations). Each input gets its own weights.
methods = ("saliency", "input_x_gradient", ("integrated_gradients", {"n_steps": 16}),
           ("smoothgrad", {"n_samples": 8}), ("gradient_shap", {"n_samples": 8}), "feature_ablation")
common = dict(methods=methods, baseline=0.0, feature_scale="unit", n_faithfulness_samples=100,
              n_robustness_samples=20, random_state=0)
X_explain = X_test[:20]
results, combiners = {}, {}
for criterion in ("faithfulness", "robustness"):
    combiners[criterion] = AttributionCombiner(net, criterion=criterion, **common).fit(X_train)
    results[criterion] = combiners[criterion].explain(X_explain, return_weights=True)
names = list(combiners["faithfulness"].method_names_)

# %%
# The base maps, the weights and the two combinations for one digit
# -----------------------------------------------------------------
i = 0
phi_f, w_f, _ = results["faithfulness"]
phi_r, w_r, base = results["robustness"]  # the L2-normalised base maps
panels = ([("input", X_explain[i])] + [(name, base[i, j]) for j, name in enumerate(names)]
          + [("faithful combination", phi_f[i]), ("robust combination", phi_r[i])])
fig, axes = plt.subplots(3, 3, figsize=(7, 7.5))
for ax, (title, img) in zip(axes.ravel(), panels):
    if title == "input":
        ax.imshow(img.reshape(8, 8), cmap="gray_r")
    else:
        lim = np.abs(img).max() or 1.0
        ax.imshow(img.reshape(8, 8), cmap="RdBu_r", vmin=-lim, vmax=lim)
    ax.set_title(title, fontsize=9)
    ax.set_axis_off()
fig.suptitle(f"digit {y_test[i]}: base maps and the optimal combinations")
fig.tight_layout()

# %%
# The weights each criterion gives the methods
# --------------------------------------------
# Faithfulness leans on the maps that predict the effect of switching pixels off (ablation,
# integrated gradients, input x gradient); robustness on the smooth ones (SmoothGrad, saliency).
fig, ax = plt.subplots(figsize=(8, 3.5))
pos = np.arange(len(names))
for shift, (criterion, (_, w, _)) in zip((-0.2, 0.2), results.items()):
    ax.bar(pos + shift, w.mean(axis=0), width=0.4, yerr=w.std(axis=0), capsize=2, label=criterion)
ax.set_xticks(pos, names, rotation=20)
ax.set_ylabel("weight (mean over 20 digits)")
ax.legend()
fig.tight_layout()

# %%
# Quality on fresh perturbations
# ------------------------------
# ``evaluate`` scores every base method, the combination and the plain average of the maps on
# perturbations the weights were not fitted on. ``score`` is minus the combination's mean value
# for the combiner's own criterion, so that a grid search can tune it.
rows = {}
for criterion, key in (("faithfulness", "infidelity"), ("robustness", "sensitivity")):
    quality = combiners[criterion].evaluate(X_explain, metrics=(key,))
    rows[criterion] = (quality.names, quality[key].mean(axis=0))
    print(f"{criterion}: held-out {key} of the combination {rows[criterion][1][-2]:.4f}, "
          f"of the best single method {rows[criterion][1][:-2].min():.4f}")

fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
for ax, (criterion, (labels, values)), metric in zip(axes, rows.items(), ("infidelity", "sensitivity")):
    colors = ["tab:gray"] * (len(labels) - 2) + ["tab:red", "tab:blue"]
    ax.barh(np.arange(len(labels)), values, color=colors)
    ax.set_yticks(np.arange(len(labels)), labels)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.xaxis.set_minor_formatter(plt.NullFormatter())
    ax.set_xlabel(f"held-out {metric} (lower is better)")
    ax.set_title(f"{criterion}: combination in red")
fig.tight_layout()
plt.show()
