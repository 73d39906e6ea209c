"""Tour entry of the dynamics family: DySLIM against the MSE-only emulator on noisy Lorenz-63 (long-run MMD)."""

from ._base import TourEntry, TourResult, fit_timed


def _long_run_mmd(model, test, n_steps):
    import numpy as np

    from ..metrics import mmd2

    mu, sd = test.reshape(-1, 3).mean(axis=0), test.reshape(-1, 3).std(axis=0)
    states = model.rollout(test[:, 0], n_steps)
    tail = (states[:, -n_steps // 10:].reshape(-1, 3) - mu) / sd
    ref = (test.reshape(-1, 3) - mu) / sd
    rng = np.random.RandomState(0)
    return mmd2(tail[rng.choice(len(tail), min(len(tail), 1500), replace=False)],
                ref[rng.choice(len(ref), min(len(ref), 1500), replace=False)])


def _run_dyslim(device="cpu", quick=False):
    from ..datasets import make_lorenz63
    from ..dynamics import DySLIMRegressor, make_rollout_dataset

    max_iter, n_steps = (500, 500) if quick else (800, 1000)
    X, y = make_rollout_dataset(make_lorenz63(150, 200, noise=0.5, random_state=0))
    test = make_lorenz63(100, 200, random_state=1)
    kw = dict(max_iter=max_iter, batch_size=128, learning_rate=3e-3, device=device, random_state=0)
    ours, seconds = fit_timed(DySLIMRegressor(lambda_uncond=1.0, lambda_cond=1.0, **kw), X, y)
    mse = DySLIMRegressor(lambda_uncond=0.0, lambda_cond=0.0, **kw).fit(X, y)
    return TourResult(metric="long-run MMD^2, noisy L63", score=_long_run_mmd(ours, test, n_steps),
                      baseline="MSE-only emulator", baseline_score=_long_run_mmd(mse, test, n_steps),
                      fit_seconds=seconds, higher_is_better=False)


TOUR_ENTRIES = [
    TourEntry("DySLIMRegressor", "S4", "emulate chaotic dynamics from noisy observations", _run_dyslim,
              uses_device=True),
]
