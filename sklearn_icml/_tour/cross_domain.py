"""Tour entry of the cross-domain family: Auto-Linear's inverse modelling at 200 pairs against RidgeCV."""

from ._base import TourEntry, TourResult, fit_timed


def _run_auto_linear(device="cpu", quick=False):
    import numpy as np
    from sklearn.linear_model import RidgeCV

    from ..cross_domain import AutoLinear
    from ..datasets import convolutional_seismogram, make_layered_earth

    rng = np.random.RandomState(0)
    n_pool = 500 if quick else 3000
    V_pool = make_layered_earth(n_pool, random_state=rng)
    S_pool = convolutional_seismogram(make_layered_earth(n_pool, random_state=rng))
    V = make_layered_earth(200 + 500, random_state=rng)
    S = convolutional_seismogram(V)
    model = AutoLinear(max_iter=150 if quick else 1500, device=device, random_state=0)
    model, seconds = fit_timed(model, S[:200], V[:200], X_unpaired=S_pool, y_unpaired=V_pool)
    ridge = RidgeCV(alphas=np.logspace(-4, 4, 17)).fit(S[:200], V[:200])
    ours = float(np.abs(model.predict(S[200:]) - V[200:]).mean())
    theirs = float(np.abs(ridge.predict(S[200:]) - V[200:]).mean())
    return TourResult(metric="inverse MAE, m/s (200 pairs)", score=ours, baseline="RidgeCV on raw traces",
                      baseline_score=theirs,
                      fit_seconds=seconds, higher_is_better=False)


TOUR_ENTRIES = [
    TourEntry("AutoLinear", "S5", "velocity logs from seismic traces, 3000 unpaired per domain", _run_auto_linear,
              uses_device=True),
]
