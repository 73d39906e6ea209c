"""
=======================================================
A classifier that never sees the private data it learns
=======================================================

:class:`~sklearn_icml.generative.SyntheticDataClassifier` runs Private Evolution once per class on
private data, then trains a logistic regression on the synthetic points only. We plot the private
points, the synthetic ones at two privacy budgets, and compare test accuracy with the same model
trained on the real data.
"""

import matplotlib.pyplot as plt
from sklearn.datasets import make_blobs
from sklearn.linear_model import LogisticRegression

from sklearn_icml.generative import PrivateEvolution, SyntheticDataClassifier

X, y = make_blobs(4000, centers=2, cluster_std=1.5, random_state=0)
X_private, y_private, X_test, y_test = X[:2000], y[:2000], X[2000:], y[2000:]
real = LogisticRegression().fit(X_private, y_private).score(X_test, y_test)
print(f"trained on the real data: test accuracy {real:.3f}")

fig, axes = plt.subplots(1, 3, figsize=(12, 4), sharex=True, sharey=True)
axes[0].scatter(*X_private.T, c=y_private, s=4, cmap="coolwarm")
axes[0].set_title("private data")
for ax, epsilon in zip(axes[1:], (0.5, 4.0)):
    generator = PrivateEvolution(n_synthetic=300, n_iterations=10, epsilon=epsilon, delta=1e-6, lookahead=1,
                                 bounds=(-15, 15), random_state=0)
    clf = SyntheticDataClassifier(generator, LogisticRegression()).fit(X_private, y_private)
    X_syn, y_syn = clf.generator_.sample()
    ax.scatter(*X_syn.T, c=y_syn, s=6, cmap="coolwarm")
    ax.set_title(f"synthetic, epsilon={clf.epsilon_spent_:.2f}: accuracy {clf.score(X_test, y_test):.3f}")
    print(f"epsilon {clf.epsilon_spent_:.2f}: test accuracy {clf.score(X_test, y_test):.3f}")
fig.tight_layout()
plt.show()
