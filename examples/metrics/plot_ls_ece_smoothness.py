"""
=====================================================
Binned ECE jumps, logit-smoothed ECE does not (S16)
=====================================================

Binned expected calibration error (ECE) is discontinuous: moving predictions across a bin edge
changes it abruptly. Chidambaram et al. (ICML 2024) replace it by the ECE of the predictor whose
logits carry a little noise, the *logit-smoothed ECE* (:func:`sklearn_icml.metrics.ls_ece`),
which is continuous and tracks binned ECE on real models.

This example reproduces the paper's synthetic pathology, then compares an uncalibrated and a
calibrated model with the smooth reliability diagram
(:class:`sklearn_icml.metrics.LSReliabilityDisplay`).
"""

# %%
# The paper's synthetic predictor
# -------------------------------
# Labels are coin flips, and the predictor's logit is ``1e-3 * (y - 1/2)``: always right, with
# every probability within 0.00025 of 0.5. With an even number of bins 0.5 is a bin edge and
# the two classes fall into different bins; with an odd number they share one.
import matplotlib.pyplot as plt
import numpy as np

from sklearn_icml.datasets import make_ece_pathology
from sklearn_icml.metrics import binned_ece, ls_ece

y_true, y_prob = make_ece_pathology(1000, random_state=0)
n_bins = np.arange(2, 41)
ece = [binned_ece(y_true, y_prob, n_bins=b) for b in n_bins]
ls = [ls_ece(y_true, y_prob, sigma=1 / b) for b in n_bins]

fig, ax = plt.subplots(figsize=(7, 3.5))
ax.plot(n_bins, ece, "o-", label="binned ECE, b bins")
ax.plot(n_bins, ls, "s-", label="LS-ECE, sigma = 1/b")
ax.set(xlabel="number of bins b (LS-ECE: 1/sigma)", ylabel="calibration error",
       title="Binned ECE flips with the parity of b; LS-ECE is smooth")
ax.legend()
print(f"binned ECE: 10 bins {ece[8]:.3f}, 11 bins {ece[9]:.3f}")
print(f"LS-ECE: sigma=1/10 {ls[8]:.4f}, sigma=1/11 {ls[9]:.4f}")

# %%
# An uncalibrated and a calibrated model
# --------------------------------------
# Gaussian naive Bayes is famously over-confident; isotonic calibration fixes much of it. The
# smooth reliability curve (line) and the 15-bin diagram (squares) tell the same story, and
# LS-ECE at ``sigma = 1/15`` is close to 15-bin ECE, as the paper finds on image classifiers.
from sklearn.calibration import CalibratedClassifierCV
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.naive_bayes import GaussianNB

from sklearn_icml.metrics import LSReliabilityDisplay

X, y = load_digits(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.4, random_state=0)
models = {
    "GaussianNB": GaussianNB().fit(X_train, y_train),
    "GaussianNB + isotonic": CalibratedClassifierCV(GaussianNB(), method="isotonic", cv=5).fit(X_train, y_train),
}
fig, axes = plt.subplots(1, 2, figsize=(10, 4.5), sharey=True)
for ax, (name, model) in zip(axes, models.items()):
    disp = LSReliabilityDisplay.from_estimator(model, X_test, y_test, sigma=1 / 15, n_bins=15, name=name, ax=ax)
    ax.set_title(f"{name}\nLS-ECE {disp.ls_ece:.3f}, 15-bin ECE {disp.binned_ece:.3f}")
fig.tight_layout()
plt.show()
