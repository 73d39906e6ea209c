"""The tour's types: what an entry is and what it reports."""

import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["TourEntry", "TourResult", "fit_timed"]


@dataclass(frozen=True)
class TourResult:
    """What one tour entry reports.

    ``score`` is the method's figure under ``metric``; ``baseline`` names the
    method it is compared with (scikit-learn's closest estimator, the classic
    algorithm the paper improves on, ...) and ``baseline_score`` its figure on
    the same data and seed. ``fit_seconds`` times our method's fit only.
    ``agreement=True`` marks a row that is no contest: the baseline is a
    figure ours should agree with (a new metric next to the classic one it
    refines), and the verdict says whether they agree.
    """

    metric: str
    score: float
    baseline: str
    baseline_score: float
    fit_seconds: float
    higher_is_better: bool = True
    agreement: bool = False


@dataclass(frozen=True)
class TourEntry:
    """One row of the tour.

    ``run(device, quick)`` builds the demo data from :mod:`sklearn_icml.datasets`,
    fits the method and its baseline, and returns a :class:`TourResult`.
    ``device`` is one of ``"cpu"``, ``"auto"``, ``"cuda"``; entries whose method
    has no ``device`` parameter ignore it.
    """

    name: str
    paper: str
    task: str
    run: Callable[..., TourResult]
    uses_device: bool = False


def fit_timed(estimator, *args, **kwargs):
    """Fit ``estimator`` and return ``(estimator, seconds)``."""
    start = time.perf_counter()
    estimator.fit(*args, **kwargs)
    return estimator, time.perf_counter() - start
