"""Tour entries of the metrics family (S16)."""

import time

from ._base import TourEntry, TourResult


def _run_ls_ece(device="cpu", quick=False):
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    from sklearn.naive_bayes import GaussianNB

    from ..metrics import binned_ece, ls_ece

    X, y = load_digits(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.4, random_state=0)
    proba = GaussianNB().fit(Xtr, ytr).predict_proba(Xte)
    if device != "cpu":
        import torch

        from ..utils._torch import resolve_device

        proba = torch.as_tensor(proba, device=resolve_device(device))
    start = time.perf_counter()
    value = float(ls_ece(yte, proba, sigma=1 / 15))
    seconds = time.perf_counter() - start
    baseline = binned_ece(yte, proba, n_bins=15)
    # an agreement check, not a contest: the paper finds that binned ECE closely tracks LS-ECE in practice
    return TourResult(metric="LS-ECE, digits", score=value,
                      baseline="15-bin ECE", baseline_score=baseline, fit_seconds=seconds,
                      higher_is_better=False, agreement=True)


TOUR_ENTRIES = [
    TourEntry("ls_ece", "S16", "calibration error of a classifier (sigma=1/15), checked against binned ECE",
              _run_ls_ece, uses_device=True),
]
