"""Tour entry of the finetune family: DoRA against LoRA at equal rank on a magnitude-dominated task shift."""

from ._base import TourEntry, TourResult, fit_timed


def _run_dora(device="cpu", quick=False):
    from ..datasets import make_weight_shift_tasks
    from ..finetune import DoRARegressor

    Xs, ys, Xt, yt, Xte, yte = make_weight_shift_tasks(
        n_source=1500 if quick else 2000, n_target=300, n_test=1000 if quick else 2000,
        magnitude_shift=0.6, direction_shift=0.1, random_state=0)
    hidden = (32, 32) if quick else (64, 64)
    pretrained = DoRARegressor(method="full", hidden_layer_sizes=hidden, activation="tanh",
                               max_iter=25 if quick else 60, batch_size=64 if quick else 256,
                               learning_rate=2e-3 if quick else 5e-3, device=device, random_state=0).fit(Xs, ys)
    common = dict(r=1, max_iter=40 if quick else 100, batch_size=32, device=device, random_state=0)
    dora, seconds = fit_timed(DoRARegressor(pretrained.module_, method="dora", **common), Xt, yt)
    lora = DoRARegressor(pretrained.module_, method="lora", **common).fit(Xt, yt)
    return TourResult(metric="test R^2, rank 1", score=dora.score(Xte, yte),
                      baseline="LoRA, same rank", baseline_score=lora.score(Xte, yte),
                      fit_seconds=seconds)


TOUR_ENTRIES = [
    TourEntry("DoRARegressor", "S1", "fine-tune a pre-trained MLP on a shifted task", _run_dora,
              uses_device=True),
]
