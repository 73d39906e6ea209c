"""Tour entry of the generative family: a classifier trained on private synthetic data against real data."""

from .._tour import TourEntry, TourResult, fit_timed


def _run_private_evolution(device="cpu", quick=False):
    from sklearn.datasets import make_blobs
    from sklearn.linear_model import LogisticRegression

    from . import PrivateEvolution, SyntheticDataClassifier

    X, y = make_blobs(2000 if quick else 4000, centers=2, cluster_std=1.5, random_state=0)
    half = len(X) // 2
    generator = PrivateEvolution(n_synthetic=300, n_iterations=10, epsilon=1.0, delta=1e-6, lookahead=1,
                                 bounds=(-15, 15), device=device, random_state=0)
    clf, seconds = fit_timed(SyntheticDataClassifier(generator, LogisticRegression()), X[:half], y[:half])
    real = LogisticRegression().fit(X[:half], y[:half])
    return TourResult(metric="test accuracy, epsilon=1", score=clf.score(X[half:], y[half:]),
                      baseline="LR on the real data", baseline_score=real.score(X[half:], y[half:]),
                      fit_seconds=seconds, agreement=True)


TOUR_ENTRIES = [
    TourEntry("SyntheticDataClassifier", "S9", "train on private synthetic data", _run_private_evolution,
              uses_device=True),
]
