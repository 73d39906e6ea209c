"""Tour entries of the generative family: a classifier trained on private synthetic data against real data; a
left-invertible WGAN against a Gaussian fit (W1 to held-out points, with its DCR ratio)."""

from ._base import TourEntry, TourResult, fit_timed


def _run_private_evolution(device="cpu", quick=False):
    from sklearn.datasets import make_blobs
    from sklearn.linear_model import LogisticRegression

    from ..generative import PrivateEvolution, SyntheticDataClassifier

    X, y = make_blobs(2000 if quick else 4000, centers=2, cluster_std=1.5, random_state=0)
    half = len(X) // 2
    generator = PrivateEvolution(n_synthetic=300, n_iterations=10, epsilon=1.0, delta=1e-6, lookahead=1,
                                 bounds=(-15, 15), device=device, random_state=0)
    clf, seconds = fit_timed(SyntheticDataClassifier(generator, LogisticRegression()), X[:half], y[:half])
    real = LogisticRegression().fit(X[:half], y[:half])
    return TourResult(metric="test accuracy, epsilon=1", score=clf.score(X[half:], y[half:]),
                      baseline="LR on the real data", baseline_score=real.score(X[half:], y[half:]),
                      fit_seconds=seconds, agreement=True)


def _run_left_invertible_wgan(device="cpu", quick=False):
    import numpy as np

    from ..datasets import make_swiss_roll_2d
    from ..generative import LeftInvertibleWGAN
    from ..metrics import dcr_ratio, wasserstein1

    X, _ = make_swiss_roll_2d(1000, random_state=0)
    train, holdout = X[:500], X[500:]
    size = dict(hidden_layer_sizes=(32, 32), max_iter=50) if quick else dict(max_iter=800)
    gan, seconds = fit_timed(LeftInvertibleWGAN(**size, device=device, random_state=0), train)
    S = gan.sample(2000)
    gaussian = np.random.RandomState(0).multivariate_normal(train.mean(0), np.cov(train, rowvar=False), 2000)
    return TourResult(metric=f"W1 to holdout (DCR {dcr_ratio(S, train, holdout):.2f})",
                      score=wasserstein1(S, holdout), baseline="Gaussian fit",
                      baseline_score=wasserstein1(gaussian, holdout), fit_seconds=seconds, higher_is_better=False)


TOUR_ENTRIES = [
    TourEntry("SyntheticDataClassifier", "S9", "train on private synthetic data", _run_private_evolution,
              uses_device=True),
    TourEntry("LeftInvertibleWGAN", "S2", "sample without copying the training data", _run_left_invertible_wgan,
              uses_device=True),
]
