"""Auto-Linear (S5): inverse and forward modelling of layered earths from few pairs, against paired-only peers.

Seed paper S5 (Feng et al., "Auto-Linear Phenomenon in Subsurface Imaging", ICML 2024). Data: 1-D velocity
logs of ``make_layered_earth`` (64 cells of 10 m, 2-5 layers, velocities in [2000, 3500] m/s increasing with
depth) and their normal-incidence seismograms (``convolutional_seismogram``, 10 Hz Ricker, 192 samples of
4 ms). Per seed: unpaired pools of 3000 velocity logs and 3000 traces of *other* models, a paired pool, 500
test pairs.

Ours: ``AutoLinear`` with masked-autoencoder encoders (32 latent values for traces, 16 for logs, 1500 steps
each) and its default bridges (ridge on the latent codes, refined through the frozen decoders), fitted with
the pools on 200 pairs (the timed fit); its frozen encoders then serve the other rows (50 and 100 pairs)
(``refit_encoders=False``), so only the linear maps see the pairs. The same frozen encoders with bridges
fitted on the latent codes only (``bridge_space="latent"``) are a row of their own. Peers on the same pairs,
each tuned on the pairs as a careful user would: ``RidgeCV`` on the raw traces (leave-one-out penalty, as the
library's bridges), ``PLSRegression`` with 2 to 16 components chosen by 3-fold CV, ``MLPRegressor`` on scaled
traces and standardised logs (``TransformedTargetRegressor``) with ``alpha`` and the hidden layers chosen by
3-fold ``GridSearchCV``, and the mean log; ``AutoLinear`` with PCA encoders sees the same pools as ours.
Forward modelling (logs to traces) against ``RidgeCV``, the tuned PLS, the PCA variant and the mean trace.

Tables: inverse MAE, RMSE and SSIM (OpenFWI's convention, 11-sample window, on [2000, 3500] m/s mapped to
[0, 1]); forward MAE; the latent R²; the fit time. Bars: medians over seeds of per-seed ratios.

2-D rows on the CPU (``--only 2d``), the paper's regime at a size a 2-core machine trains: maps of 32 x 32
cells (``make_layered_earth`` with 32 columns and dipping interfaces), gathers of 80 samples x 32 columns (the
convolutional model per column, 15 Hz Ricker), pools of 3000 unpaired maps and 3000 unpaired gathers of other
models, 25 and 50 pairs, 200 test pairs. Ours: ``AutoLinear`` with convolutional masked autoencoders
(channels 8, 16, 32; 4 x 4 masked patches; 64 latent values for gathers, 32 for maps; 400 steps each), fitted
on the pools and 50 pairs, its encoders frozen for 25 pairs; the same with pools of 300 rows (the
pool-size row), with latent-space bridges, and with PCA encoders. Peers on the pairs: the same tuned RidgeCV,
PLS and MLP as the 1-D rows, the mean map, and a paired-only convolutional encoder-decoder of the same size
(the gathers' encoder and the maps' decoder, 400 steps on the pairs: the InversionNet-style rival).

GPU rows (``--device cuda``, or ``--only gpu``): 2-D maps (64 x 64 cells, 64 columns, traces of 128 samples
per column), convolutional masked autoencoders on 10k unpaired maps and gathers per domain, against a
paired-only convolutional encoder-decoder of the same size trained end to end on the pairs (the
InversionNet-style baseline), and seconds per epoch on the CPU against the GPU.

``--quick``: 2 seeds, pools of 1000 and 300 steps per autoencoder (2-D CPU rows: pools of 600, 150 steps,
100 test pairs; GPU rows: 2000 maps, 200 steps).

Parts (``--only``): ``cpu`` (the 1-D quality tables), ``time`` (the timed fit alone, for the fit-time bar:
nothing else runs in the process, so it can be re-measured at a quiet moment), ``2d`` (the 2-D rows on the
CPU; about 3 minutes of CPU time per seed), ``gpu`` (the 2-D rows on a GPU). The
default is ``cpu time`` on the CPU and ``gpu`` otherwise; a part run alone replaces only its own tables in
``benchmarks/results/auto_linear.json``, the others stay as they were (each table names the command that
made it).
"""

import argparse
import json
import math
import os
import shlex
import sys
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _bench import Table, bench_args, emit, paired_verdict, results_path  # noqa: E402

from sklearn_icml.cross_domain import AutoLinear  # noqa: E402
from sklearn_icml.datasets import convolutional_seismogram, make_layered_earth  # noqa: E402
from sklearn_icml.metrics import ssim_1d, ssim_2d  # noqa: E402

V_RANGE = (2000.0, 3500.0)
ALPHAS = np.logspace(-4, 4, 17)
SIZES = (50, 100, 200)
#: the paired-only peers are tuned on the pairs by 3-fold CV (the library's own penalty choice is leave-one-out,
#: closed form for ridge; for an MLP it would be one fit per pair and setting)
CV_FOLDS = 3
MLP_ALPHAS, MLP_SIZES, MLP_ITER = (10.0, 100.0, 1000.0), ((128,), (128, 128)), 500
PLS_COMPONENTS = (2, 4, 8, 16)
MLP = "MLPRegressor, pairs only (standardised, alpha and width by CV)"
PLS = "PLSRegression (components by CV)"
PAIRED_ONLY = ("RidgeCV (raw traces)", PLS, MLP, "mean log")
OURS = "AutoLinear (masked autoencoders)"
#: GPU rows: (unpaired rows per domain, steps per autoencoder, pairs, test pairs), and (cells, columns, samples)
GPU_FULL, GPU_QUICK, GPU_GRID = (10000, 3000, 500, 500), (2000, 200, 200, 200), (64, 64, 128)
PCA_AL = "AutoLinear (PCA encoders)"
LATENT_AL = "AutoLinear (masked autoencoders, latent-space bridges)"
FIT_TIME = "Fit time"
QUALITY_TIME = "Fit time within the quality run"


def _load():
    return "load average " + ", ".join(f"{x:.1f}" for x in os.getloadavg())


def _data(seed, n_pool, n_pairs=1000, n_test=500):
    rng = np.random.RandomState(seed)
    V_pool = make_layered_earth(n_pool, v_range=V_RANGE, random_state=rng)
    S_pool = convolutional_seismogram(make_layered_earth(n_pool, v_range=V_RANGE, random_state=rng))
    V = make_layered_earth(n_pairs + n_test, v_range=V_RANGE, random_state=rng)
    S = convolutional_seismogram(V)
    return S_pool, V_pool, S[:n_pairs], V[:n_pairs], S[n_pairs:], V[n_pairs:]


def _constant(row):
    return lambda A: np.tile(row, (len(A), 1))


def _cv(seed):
    from sklearn.model_selection import KFold

    return KFold(CV_FOLDS, shuffle=True, random_state=seed)


def _tuned_mlp(S, V, seed):
    """The paired-only MLP as a careful user fits it: scaled traces, standardised logs, a grid search on the pairs.

    The traces are divided by their overall standard deviation on the pairs (per-sample standardisation would
    blow up the first samples, which are zero up to rounding on the pairs); each cell of the logs is
    standardised. Returns the predict function (on raw traces).
    """
    from sklearn.compose import TransformedTargetRegressor
    from sklearn.model_selection import GridSearchCV
    from sklearn.neural_network import MLPRegressor

    scale = float(S.std())
    mlp = TransformedTargetRegressor(MLPRegressor(max_iter=MLP_ITER, random_state=seed), transformer=StandardScaler())
    grid = {"regressor__alpha": MLP_ALPHAS, "regressor__hidden_layer_sizes": MLP_SIZES}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # the grid's weakest settings stop at max_iter
        search = GridSearchCV(mlp, grid, cv=_cv(seed), scoring="neg_mean_absolute_error",
                              n_jobs=int(os.environ.get("BENCH_CV_JOBS", "1"))).fit(S / scale, V)
    return lambda A: search.predict(A / scale)


def _tuned_pls(A, B, seed):
    """PLS with its number of components chosen on the pairs (3-fold CV)."""
    from sklearn.cross_decomposition import PLSRegression
    from sklearn.model_selection import GridSearchCV

    grid = {"n_components": [k for k in PLS_COMPONENTS if k < len(A) * (CV_FOLDS - 1) // CV_FOLDS]}
    return GridSearchCV(PLSRegression(), grid, cv=_cv(seed), scoring="neg_mean_absolute_error").fit(A, B)


def _inverse_peers(S, V, seed):
    from sklearn.linear_model import RidgeCV

    return {
        "RidgeCV (raw traces)": RidgeCV(alphas=ALPHAS).fit(S, V).predict,
        PLS: _tuned_pls(S, V, seed).predict,
        MLP: _tuned_mlp(S, V, seed),
        "mean log": _constant(V.mean(axis=0)),
    }


def _forward_peers(S, V, seed):
    from sklearn.linear_model import RidgeCV

    return {
        "RidgeCV (raw logs)": RidgeCV(alphas=ALPHAS).fit(V, S).predict,
        PLS: _tuned_pls(V, S, seed).predict,
        "mean trace": _constant(S.mean(axis=0)),
    }


class _Record:
    """Stands in for a Table in a worker process: the values it would add, replayed into the table later."""

    def __init__(self):
        self.rows = []

    def add(self, *args, **kwargs):
        self.rows.append((args, kwargs))


def _score_inverse(predictors, S_test, V_test, ssim, case, seed, ours, t_mae, t_ssim, t_rmse=None):
    """Inverse MAE, SSIM (``ssim(V_test, V_hat)``) and optionally RMSE of each predictor, recorded; MAE and SSIM."""
    mae, ssims = {}, {}
    for name, predict in predictors.items():
        V_hat = predict(S_test)
        mae[name], ssims[name] = np.abs(V_hat - V_test).mean(), ssim(V_test, V_hat)
        t_mae.add(case, name, mae[name], ours=name == ours, seed=seed)
        t_ssim.add(case, name, ssims[name], ours=name == ours, seed=seed)
        if t_rmse is not None:
            t_rmse.add(case, name, np.sqrt(((V_hat - V_test) ** 2).mean()), ours=name == ours, seed=seed)
    return mae, ssims


def _score_forward(predictors, V_test, S_test, case, seed, ours, t_fwd):
    """Forward MAE over the std of the test traces of each predictor, recorded; the values by name."""
    scale = S_test.std()
    fwd = {}
    for name, predict in predictors.items():
        fwd[name] = np.abs(predict(V_test) - S_test).mean() / scale
        t_fwd.add(case, name, fwd[name], ours=name == ours, seed=seed)
    return fwd


def _bridge_space_values(ratios, n, ours, latent, **metrics):
    """Per-seed values of ours and of the latent-space row at ``n`` pairs (``metrics``: name -> values by method)."""
    for metric, values in metrics.items():
        for k in (ours, latent):
            ratios.setdefault(f"bridge|{metric}|{k}|{n}", []).append(values[k])


def _bridge_space_note(table, ratios, seeds, sizes, ours, latent):
    """Latent-space bridges against ours (output-space), per metric and size: ratio of the means, paired verdict."""
    parts = []
    for metric, label, higher in (("mae", "inverse MAE", False), ("ssim", "inverse SSIM", True),
                                  ("fwd", "forward MAE", False)):
        cells = []
        for n in sizes:
            a, b = ratios[f"bridge|{metric}|{latent}|{n}"], ratios[f"bridge|{metric}|{ours}|{n}"]
            verdict = paired_verdict(list(zip(seeds, a)), list(zip(seeds, b)), higher_is_better=higher)[0]
            cells.append(f"{np.mean(a) / np.mean(b):.2f}x ({verdict}) at {n} pairs")
        parts.append(f"{label} " + ", ".join(cells))
    table.note(f"Bridge space: {latent} / {ours} (output-space bridges, the default), ratio of the means over seeds "
               "and the latent row's paired verdict: " + "; ".join(parts) + ".")


def _one_seed(seed, quick, device):
    """One seed of the quality tables (a process of its own with ``--jobs``): recorded rows and ratios."""
    n_pool, steps = (1000, 300) if quick else (3000, 1500)
    t_mae, t_rmse, t_ssim, t_fwd, t_r2, t_time = (_Record() for _ in range(6))
    ratios = {}
    S_pool, V_pool, S_pairs, V_pairs, S_test, V_test = _data(seed, n_pool)
    start, cpu_start = time.perf_counter(), time.process_time()
    ours = AutoLinear(max_iter=steps, device=device, random_state=seed).fit(
        S_pairs[:200], V_pairs[:200], X_unpaired=S_pool, y_unpaired=V_pool)
    t_time.add("wall-clock", OURS, time.perf_counter() - start, ours=True, seed=seed)
    t_time.add("CPU time of the process", OURS, time.process_time() - cpu_start, ours=True, seed=seed)
    pca = AutoLinear("pca", "pca", random_state=seed).fit(S_pairs[:200], V_pairs[:200], X_unpaired=S_pool,
                                                          y_unpaired=V_pool)
    for n in SIZES:
        case = f"{n} pairs"
        S, V = S_pairs[:n], V_pairs[:n]
        model = ours if n == 200 else AutoLinear(ours.encoder_x_, ours.encoder_y_, refit_encoders=False).fit(S, V)
        latent = AutoLinear(ours.encoder_x_, ours.encoder_y_, bridge_space="latent", refit_encoders=False).fit(S, V)
        pca_n = AutoLinear(pca.encoder_x_, pca.encoder_y_, refit_encoders=False).fit(S, V)
        inverse = {OURS: model.predict, LATENT_AL: latent.predict, PCA_AL: pca_n.predict,
                   **_inverse_peers(S, V, seed)}
        mae, ssim = _score_inverse(inverse, S_test, V_test, lambda A, B: ssim_1d(A, B, value_range=V_RANGE), case,
                                   seed, OURS, t_mae, t_ssim, t_rmse)
        forward = {OURS: model.predict_forward, LATENT_AL: latent.predict_forward, PCA_AL: pca_n.predict_forward,
                   **_forward_peers(S, V, seed)}
        fwd = _score_forward(forward, V_test, S_test, case, seed, OURS, t_fwd)
        _bridge_space_values(ratios, n, OURS, LATENT_AL, mae=mae, ssim=ssim, fwd=fwd)
        t_r2.add(case, OURS, model.latent_r2_, ours=True, seed=seed)
        t_r2.add(case, PCA_AL, pca_n.latent_r2_, seed=seed)
        ratios.setdefault(f"mlp{n}", []).append(mae[OURS] / mae[MLP])
        ratios.setdefault(f"ridge{n}", []).append(mae[OURS] / mae["RidgeCV (raw traces)"])
        ratios.setdefault(f"mean{n}", []).append(mae[OURS] / mae["mean log"])
        for k in PAIRED_ONLY:
            ratios.setdefault(f"{k}|{n}", []).append(mae[OURS] / mae[k])
        ratios.setdefault(f"ssim{n}", []).append(ssim[OURS] - ssim["mean log"])
        ratios.setdefault(f"fwd{n}", []).append(fwd[OURS] / fwd["RidgeCV (raw logs)"])
        ratios.setdefault(f"fmean{n}", []).append(fwd[OURS] / fwd["mean trace"])
    print(f"seed {seed} done ({_load()})", file=sys.stderr, flush=True)
    return [t.rows for t in (t_mae, t_rmse, t_ssim, t_fwd, t_r2, t_time)], ratios


def one_d(args):
    quick = args.quick
    n_pool, steps = (1000, 300) if quick else (3000, 1500)
    t_mae = Table("Inverse modelling (traces to velocity logs), 1-D layered earth", "MAE in m/s",
                  higher_is_better=False)
    t_rmse = Table("Inverse modelling, RMSE", "RMSE in m/s", higher_is_better=False)
    t_ssim = Table("Inverse modelling, SSIM (OpenFWI's convention)", "SSIM", higher_is_better=True)
    t_fwd = Table("Forward modelling (velocity logs to traces)", "MAE / std of the test traces",
                  higher_is_better=False)
    t_r2 = Table("Latent R² of the inverse map on the pairs (how auto-linear the latent codes are)", "R²",
                 higher_is_better=True, verdicts=False)
    t_time = Table(f"{QUALITY_TIME}: {n_pool} + {n_pool} unpaired rows and 200 pairs", "seconds",
                   higher_is_better=False, verdicts=False)
    ratios = {f"{k}{n}": [] for k in ("mlp", "ridge", "fwd", "mean", "fmean", "ssim") for n in SIZES}
    if args.jobs > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            os.environ["BENCH_CV_JOBS"] = str(args.cv_jobs)  # read by the workers' grid searches
            done = list(pool.map(_one_seed, args.seeds, [quick] * len(args.seeds), [args.device] * len(args.seeds)))
    else:
        os.environ["BENCH_CV_JOBS"] = str(args.cv_jobs)
        done = [_one_seed(seed, quick, args.device) for seed in args.seeds]
    for recorded, seed_ratios in done:  # in seed order
        for table, rows in zip((t_mae, t_rmse, t_ssim, t_fwd, t_r2, t_time), recorded):
            for a, kw in rows:
                table.add(*a, **kw)
        for k, v in seed_ratios.items():
            ratios.setdefault(k, []).extend(v)
    med = {k: float(np.median(v)) for k, v in ratios.items()}
    for n in SIZES:  # the paired-only peer most favourable to itself: the largest median ratio of ours to it
        med[f"paired{n}"] = max(med[f"{k}|{n}"] for k in PAIRED_ONLY)
    t_mae.bar("inverse MAE / tuned paired-only MLP at 50 pairs (median over seeds)", med["mlp50"], 0.85)
    t_mae.bar("inverse MAE / tuned paired-only MLP at 200 pairs", med["mlp200"], 0.85)
    t_mae.bar("inverse MAE / RidgeCV at 50 pairs", med["ridge50"], 0.95)
    t_mae.bar("inverse MAE / RidgeCV at 200 pairs (uncertain in the pilot: 0.87-1.17)", med["ridge200"], 1.0)
    for n in SIZES:
        t_mae.bar(f"inverse MAE / the best paired-only peer at {n} pairs (tuned MLP, RidgeCV, tuned PLS or the mean "
                  "log, the largest of the median ratios; target below 1: the pools must help)", med[f"paired{n}"],
                  1.0, op="<")
    overtakes = [n for n in SIZES if med[f"ridge{n}"] > 1.0]
    t_mae.note("Median ratio to RidgeCV on the raw traces: "
               + ", ".join(f"{med[f'ridge{n}']:.2f} at {n} pairs" for n in SIZES) + "; "
               + (f"RidgeCV is ahead from {overtakes[0]} pairs on." if overtakes else "RidgeCV is never ahead.")
               + " To the tuned MLP: " + ", ".join(f"{med[f'mlp{n}']:.2f}" for n in SIZES)
               + "; to the mean log: " + ", ".join(f"{med[f'mean{n}']:.2f}" for n in SIZES) + ".")
    t_mae.claim("self-supervised latents beat paired-only training when pairs are few", paper="markedly better than "
                "InversionNet-style training on few pairs", measured=f"{med['mlp50']:.2f}x the tuned paired-only MLP "
                f"at 50 pairs, {med['mlp200']:.2f}x at 200", reproduced="yes" if max(med["mlp50"], med["mlp200"])
                <= 0.85 else ("partly" if min(med["mlp50"], med["mlp200"]) <= 0.85 else "no"))
    wins = [n for n in SIZES if med[f"paired{n}"] < 1.0]
    t_mae.claim("with few pairs, the unpaired pools make inversion better than anything fitted on the pairs alone",
                paper="the pools carry the inversion when pairs are few", measured="best paired-only peer / ours: "
                + ", ".join(f"{med[f'paired{n}']:.2f} at {n}" for n in SIZES),
                reproduced="yes" if len(wins) == len(SIZES) else ("partly" if wins else "no"))
    t_ssim.note("Ours minus the mean log's SSIM (median over seeds): "
                + ", ".join(f"{med[f'ssim{n}']:+.3f} at {n} pairs" for n in SIZES) + ".")
    for n in SIZES:
        t_fwd.bar(f"forward MAE / RidgeCV at {n} pairs (non-regression guard)", med[f"fwd{n}"], 1.25)
    t_fwd.note("Median ratio to the mean trace: " + ", ".join(f"{med[f'fmean{n}']:.2f} at {n} pairs"
                                                              for n in SIZES) + ".")
    t_time.note(f"The timed fit of the quality run, at {_load()} on a shared 2-core machine; each masked "
                f"autoencoder runs {steps} steps. The bar is checked by the fit-time part (--only time), "
                "which runs nothing else.")
    t_mae.note("The rows of other sizes than 200 pairs reuse the encoders of the 200-pair fit, frozen (they saw "
               "the pools and the 200 pairs' traces and logs, never which goes with which).")
    _bridge_space_note(t_mae, ratios, list(args.seeds), SIZES, OURS, LATENT_AL)
    return [t_mae, t_rmse, t_ssim, t_fwd, t_r2, t_time]


# -- 2-D layered earths on the CPU ----------------------------------------------------------------

#: (depth cells, columns) of a map, trace samples per column, Ricker peak frequency in Hz
GRID_2D, N_T_2D, F0_2D = (32, 32), 80, 15.0
SIZES_2D = (25, 50)
#: (unpaired rows per domain, the smaller pool of the pool-size row, steps per autoencoder, test pairs)
FULL_2D, QUICK_2D = (3000, 300, 400, 200), (600, 150, 150, 100)
#: conv masked autoencoders: channels, batch, latent sizes (gathers, maps), masked patch side (MAE's patches)
CHANNELS_2D, BATCH_2D, LATENT_2D, PATCH_2D = (8, 16, 32), 64, (64, 32), 4
OURS_2D = "AutoLinear (conv masked autoencoders)"
LATENT_2D_AL = "AutoLinear (conv masked autoencoders, latent-space bridges)"
CONV_NET = "conv encoder-decoder, pairs only (InversionNet-style)"
PAIRED_ONLY_2D = ("RidgeCV (raw traces)", PLS, MLP, CONV_NET, "mean map")
TITLE_2D = "2-D layered earths"


def _data_2d(seed, n_pool, n_pairs, n_test):
    """Flat maps (depth x columns) and gathers (time x columns): both pools of other models, pairs, test pairs."""
    rng = np.random.RandomState(1000 + seed)
    cells, cols = GRID_2D

    def earth(n):
        return make_layered_earth(n, n_cells=cells, n_columns=cols, v_range=V_RANGE, random_state=rng)

    def seismic(V):
        return convolutional_seismogram(V, n_samples=N_T_2D, f0=F0_2D).reshape(len(V), -1)

    V_pool = earth(n_pool).reshape(n_pool, -1)
    S_pool = seismic(earth(n_pool))
    V3 = earth(n_pairs + n_test)
    S, V = seismic(V3), V3.reshape(len(V3), -1)
    return S_pool, V_pool, S[:n_pairs], V[:n_pairs], S[n_pairs:], V[n_pairs:]


def _conv_net_on_pairs(S, V, steps, seed):
    """The paired-only network: the conv encoder of the gathers and the conv decoder of the maps, trained end to end.

    Standardised on the pairs (one mean and scale per domain, as the conv masked autoencoders do). Returns the
    predict function (on raw gathers).
    """
    import torch

    from sklearn_icml.utils import Trainer

    shape_x, shape_y = (N_T_2D, GRID_2D[1]), GRID_2D
    net = _paired_conv_net(shape_x, shape_y, CHANNELS_2D, LATENT_2D[1], seed)
    sm, sx, vm, vs = S.mean(), S.std(), V.mean(), V.std()
    batch = min(BATCH_2D, len(S))
    epochs = max(1, math.ceil(steps / math.ceil(len(S) / batch)))
    trainer = Trainer(max_iter=epochs, batch_size=batch, learning_rate=2e-3, n_iter_no_change=10 ** 6,
                      random_state=seed)
    result = trainer.fit(net, ((S - sm) / sx).astype(np.float32), ((V - vm) / vs).astype(np.float32))
    module = result.module.eval()

    def predict(A):
        with torch.no_grad():
            return module(torch.as_tensor(((A - sm) / sx).astype(np.float32))).numpy().astype(np.float64) * vs + vm

    return predict


def _renamed(peers):
    """The 1-D peers' names for maps and gathers ("mean log" is the mean map, "raw traces" the raw gathers)."""
    names = {"mean log": "mean map", "mean trace": "mean gather"}
    return {names.get(k, k): v for k, v in peers.items()}


def _autolinear_2d(steps, seed, **kw):
    return AutoLinear(architecture="conv", input_shape_x=(N_T_2D, GRID_2D[1]), input_shape_y=GRID_2D,
                      hidden_layer_sizes=CHANNELS_2D, n_components_x=LATENT_2D[0], n_components_y=LATENT_2D[1],
                      batch_size=BATCH_2D, patch_size=PATCH_2D, max_iter=steps, random_state=seed, **kw)


def _frozen(fitted, S, V, **kw):
    """Bridges fitted on ``(S, V)`` between the frozen encoders of ``fitted``."""
    return AutoLinear(fitted.encoder_x_, fitted.encoder_y_, refit_encoders=False, **kw).fit(S, V)


def _small_pool_name(n_small):
    return f"AutoLinear (conv masked autoencoders, {n_small}-row pools)"


def _one_seed_2d(seed, quick):
    """One seed of the 2-D tables (a process of its own with ``--jobs``): recorded rows and ratios."""
    n_pool, n_small, steps, n_test = QUICK_2D if quick else FULL_2D
    top = max(SIZES_2D)
    t_mae, t_ssim, t_fwd, t_r2, t_time = (_Record() for _ in range(5))
    ratios = {}
    S_pool, V_pool, S_pairs, V_pairs, S_test, V_test = _data_2d(seed, n_pool, top, n_test)
    small = _small_pool_name(n_small)
    start, cpu_start = time.perf_counter(), time.process_time()
    ours = _autolinear_2d(steps, seed).fit(S_pairs, V_pairs, X_unpaired=S_pool, y_unpaired=V_pool)
    t_time.add("wall-clock", OURS_2D, time.perf_counter() - start, ours=True, seed=seed)
    t_time.add("CPU time of the process", OURS_2D, time.process_time() - cpu_start, ours=True, seed=seed)
    ours_small = _autolinear_2d(steps, seed).fit(S_pairs, V_pairs, X_unpaired=S_pool[:n_small],
                                                 y_unpaired=V_pool[:n_small])
    pca = AutoLinear("pca", "pca", n_components_x=LATENT_2D[0], n_components_y=LATENT_2D[1],
                     random_state=seed).fit(S_pairs, V_pairs, X_unpaired=S_pool, y_unpaired=V_pool)
    for n in SIZES_2D:
        case = f"{n} pairs"
        S, V = S_pairs[:n], V_pairs[:n]
        model = ours if n == top else _frozen(ours, S, V)
        small_n = ours_small if n == top else _frozen(ours_small, S, V)
        latent = _frozen(ours, S, V, bridge_space="latent")
        pca_n = pca if n == top else _frozen(pca, S, V)
        start = time.perf_counter()
        conv_net = _conv_net_on_pairs(S, V, steps, seed)
        t_time.add(f"{CONV_NET}, {n} pairs", CONV_NET, time.perf_counter() - start, seed=seed)
        inverse = {OURS_2D: model.predict, LATENT_2D_AL: latent.predict, small: small_n.predict,
                   PCA_AL: pca_n.predict, **_renamed(_inverse_peers(S, V, seed)), CONV_NET: conv_net}
        mae, ssim = _score_inverse(inverse, S_test, V_test,
                                   lambda A, B: ssim_2d(A, B, shape=GRID_2D, value_range=V_RANGE), case, seed,
                                   OURS_2D, t_mae, t_ssim)
        forward = {OURS_2D: model.predict_forward, LATENT_2D_AL: latent.predict_forward, PCA_AL: pca_n.predict_forward,
                   **_renamed(_forward_peers(S, V, seed))}
        fwd = _score_forward(forward, V_test, S_test, case, seed, OURS_2D, t_fwd)
        _bridge_space_values(ratios, n, OURS_2D, LATENT_2D_AL, mae=mae, ssim=ssim, fwd=fwd)
        t_r2.add(case, OURS_2D, model.latent_r2_, ours=True, seed=seed)
        t_r2.add(case, PCA_AL, pca_n.latent_r2_, seed=seed)
        for k in (*PAIRED_ONLY_2D, PCA_AL, small):
            ratios.setdefault(f"{k}|{n}", []).append(mae[OURS_2D] / mae[k])
        for k in mae:
            ratios.setdefault(f"mae|{k}|{n}", []).append(mae[k])
        ratios.setdefault(f"ssim|{n}", []).append(ssim[OURS_2D] - max(ssim[k] for k in PAIRED_ONLY_2D))
        ratios.setdefault(f"fwd|{n}", []).append(fwd[OURS_2D] / min(fwd[k] for k in fwd if k not in
                                                                   (OURS_2D, LATENT_2D_AL, PCA_AL)))
    print(f"2-D seed {seed} done ({_load()})", file=sys.stderr, flush=True)
    return [t.rows for t in (t_mae, t_ssim, t_fwd, t_r2, t_time)], ratios


def two_d(args):
    """2-D layered earths on the CPU: conv masked autoencoders on large unpaired pools against the tuned peers."""
    quick = args.quick
    n_pool, n_small, steps, n_test = QUICK_2D if quick else FULL_2D
    cells, cols = GRID_2D
    where = (f"{TITLE_2D} ({cells} x {cols} cells, gathers of {N_T_2D} x {cols} samples), {n_pool} unpaired maps "
             f"and {n_pool} unpaired gathers")
    t_mae = Table(f"{where}: inverse modelling", "MAE in m/s", higher_is_better=False)
    t_ssim = Table(f"{TITLE_2D}: inverse modelling, SSIM (OpenFWI's convention, 2-D window)", "SSIM",
                   higher_is_better=True)
    t_fwd = Table(f"{TITLE_2D}: forward modelling (maps to gathers)", "MAE / std of the test gathers",
                  higher_is_better=False)
    t_r2 = Table(f"{TITLE_2D}: latent R² of the inverse map on the pairs", "R²", higher_is_better=True,
                 verdicts=False)
    t_time = Table(f"{TITLE_2D}: fit times ({steps} steps per network)", "seconds", higher_is_better=False,
                   verdicts=False)
    tables = (t_mae, t_ssim, t_fwd, t_r2, t_time)
    os.environ["BENCH_CV_JOBS"] = str(args.cv_jobs)
    if args.jobs > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            done = list(pool.map(_one_seed_2d, args.seeds, [quick] * len(args.seeds)))
    else:
        done = [_one_seed_2d(seed, quick) for seed in args.seeds]
    ratios = {}
    small = _small_pool_name(n_small)
    for recorded, seed_ratios in done:
        for table, rows in zip(tables, recorded):
            for a, kw in rows:
                table.add(*a, **kw)
        for k, v in seed_ratios.items():
            ratios.setdefault(k, []).extend(v)
    med = {k: float(np.median(v)) for k, v in ratios.items()}
    best = {n: max(PAIRED_ONLY_2D, key=lambda k: med[f"{k}|{n}"]) for n in SIZES_2D}
    for n in SIZES_2D:
        t_mae.bar(f"2-D: inverse MAE / the best paired-only peer at {n} pairs ({best[n]}, the largest of the median "
                  "ratios over tuned MLP, RidgeCV, tuned PLS, the paired-only conv network and the mean map; target "
                  "below 1: the pools must help)", med[f"{best[n]}|{n}"], 1.0, op="<")
    seeds = list(args.seeds)

    def versus(k, peer, n):
        """Ratio of the mean MAEs of ``k`` and ``peer`` at ``n`` pairs, and the verdict paired by seed."""
        a, b = ratios[f"mae|{k}|{n}"], ratios[f"mae|{peer}|{n}"]
        verdict = paired_verdict(list(zip(seeds, a)), list(zip(seeds, b)), higher_is_better=False)[0]
        return float(np.mean(a) / np.mean(b)), verdict

    def outcome(verdicts):
        wins = [v == "win" for v in verdicts]
        return "yes" if all(wins) else ("partly" if any(wins) else "no")

    # the claims: a win needs the paired 95 % interval of the difference to exclude zero
    best_mean = {n: min(PAIRED_ONLY_2D, key=lambda k: np.mean(ratios[f"mae|{k}|{n}"])) for n in SIZES_2D}
    vs_best = {n: versus(OURS_2D, best_mean[n], n) for n in SIZES_2D}
    vs_conv = {n: versus(OURS_2D, CONV_NET, n) for n in SIZES_2D}
    t_mae.claim("2-D: with few pairs, conv encoders trained on unpaired pools make inversion better than anything "
                "fitted on the pairs alone", paper="the pools carry the inversion when pairs are few (OpenFWI maps)",
                measured="ours / the best paired-only peer by mean MAE: " + ", ".join(
                    f"{vs_best[n][0]:.2f}x at {n} pairs ({best_mean[n]}, paired: {vs_best[n][1]})"
                    for n in SIZES_2D), reproduced=outcome([vs_best[n][1] for n in SIZES_2D]))
    t_mae.claim("2-D: self-supervised conv latents beat a paired-only conv encoder-decoder of the same size",
                paper="markedly better than InversionNet-style training on few pairs",
                measured=", ".join(f"{vs_conv[n][0]:.2f}x at {n} pairs (paired: {vs_conv[n][1]})" for n in SIZES_2D),
                reproduced=outcome([vs_conv[n][1] for n in SIZES_2D]))
    for k in (LATENT_2D_AL, small, PCA_AL):
        t_mae.note(f"{k} / the best paired-only peer by mean MAE, paired verdict: " + ", ".join(
            "{:.2f}x ({}) at {} pairs".format(*versus(k, best_mean[n], n), n) for n in SIZES_2D) + ".")
    _bridge_space_note(t_mae, ratios, seeds, SIZES_2D, OURS_2D, LATENT_2D_AL)
    t_mae.note(f"Pools of {n_pool} against {n_small} rows per domain (ours / {small}), paired verdict: " + ", ".join(
        "{:.2f}x ({}) at {} pairs".format(*versus(OURS_2D, small, n), n) for n in SIZES_2D) + ".")
    t_mae.note("Median over seeds of ours / each peer: " + "; ".join(
        f"{k}: " + ", ".join(f"{med[f'{k}|{n}']:.2f}" for n in SIZES_2D)
        for k in (*PAIRED_ONLY_2D, PCA_AL, small)) + f" (at {', '.join(map(str, SIZES_2D))} pairs).")
    t_mae.note(f"Pool size: ours with pools of {n_pool} rows per domain against the same with {n_small}; the rows "
               f"of fewer than {max(SIZES_2D)} pairs reuse the encoders of the {max(SIZES_2D)}-pair fit, frozen. "
               f"Conv masked autoencoders: channels {CHANNELS_2D}, latent sizes {LATENT_2D}, batch {BATCH_2D}, "
               f"{PATCH_2D} x {PATCH_2D} masked patches, "
               f"{steps} steps each; the paired-only conv network has the same gather encoder and map decoder and "
               f"{steps} steps on the pairs.")
    t_ssim.note("Ours minus the best paired-only peer's SSIM (median over seeds): "
                + ", ".join(f"{med[f'ssim|{n}']:+.3f} at {n} pairs" for n in SIZES_2D) + ".")
    t_fwd.note("Ours / the best paired-only peer (RidgeCV, tuned PLS or the mean gather), median over seeds: "
               + ", ".join(f"{med[f'fwd|{n}']:.2f} at {n} pairs" for n in SIZES_2D) + ".")
    t_time.note(f"Wall-clock and CPU seconds on a shared 2-core machine ({_load()} at the end); the seeds ran in "
                f"{args.jobs} process(es) at once.")
    return list(tables)


# -- GPU rows: 2-D maps ---------------------------------------------------------------------------

def _paired_conv_net(shape_x, shape_y, channels, n_components, seed):
    """InversionNet-style baseline: the conv encoder of the traces and the conv decoder of the maps, one network."""
    import torch
    from _inversion_net import InversionNet

    return InversionNet(shape_x, shape_y, channels, n_components, torch.Generator().manual_seed(seed))


def gpu(args):
    import torch

    from sklearn_icml.cross_domain import MaskedAutoencoder
    from sklearn_icml.utils import Trainer

    quick = args.quick
    n_pool, steps, n_pairs, n_test = GPU_QUICK if quick else GPU_FULL
    cells, cols, n_t = GPU_GRID
    channels = (16, 32, 64)
    shape_x, shape_y = (n_t, cols), (cells, cols)
    table = Table(f"2-D maps ({cells} x {cols}), {n_pool} unpaired per domain, {n_pairs} pairs, conv encoders",
                  "inverse MAE in m/s", higher_is_better=False)
    t_ssim = Table("2-D maps, SSIM (OpenFWI's convention)", "SSIM", higher_is_better=True)
    t_epoch = Table("Seconds per epoch of a masked autoencoder on the maps (batch 128)", "seconds",
                    higher_is_better=False, verdicts=False)
    for seed in args.seeds[:1] if not quick else args.seeds:
        rng = np.random.RandomState(seed)
        V_pool = make_layered_earth(n_pool, n_cells=cells, n_columns=cols, random_state=rng).reshape(n_pool, -1)
        S_pool = convolutional_seismogram(make_layered_earth(n_pool, n_cells=cells, n_columns=cols, random_state=rng),
                                          n_samples=n_t).reshape(n_pool, -1)
        V3 = make_layered_earth(n_pairs + n_test, n_cells=cells, n_columns=cols, random_state=rng)
        S = convolutional_seismogram(V3, n_samples=n_t).reshape(len(V3), -1)
        V = V3.reshape(len(V3), -1)
        S_tr, V_tr, S_te, V_te = S[:n_pairs], V[:n_pairs], S[n_pairs:], V[n_pairs:]
        model = AutoLinear(architecture="conv", input_shape_x=shape_x, input_shape_y=shape_y,
                           hidden_layer_sizes=channels, n_components_x=64, n_components_y=32, max_iter=steps,
                           device=args.device, random_state=seed).fit(S_tr, V_tr, X_unpaired=S_pool,
                                                                      y_unpaired=V_pool)
        V_hat = model.predict(S_te)
        table.add("2-D maps", OURS, np.abs(V_hat - V_te).mean(), ours=True, seed=seed)
        t_ssim.add("2-D maps", OURS, ssim_2d(V_te, V_hat, shape=shape_y, value_range=V_RANGE), ours=True, seed=seed)
        # the paired-only network of the same size, trained end to end on the pairs (standardised like the MAE)
        net = _paired_conv_net(shape_x, shape_y, channels, 32, seed)
        sx, sm = S_pool.std(), S_pool.mean()
        vm, vs = V_pool.mean(), V_pool.std()
        batches = math.ceil(n_pairs / 64)
        trainer = Trainer(max_iter=max(1, math.ceil(steps / batches)), batch_size=64, learning_rate=1e-3,
                          n_iter_no_change=10 ** 6, device=args.device if args.device != "auto" else
                          ("cuda" if torch.cuda.is_available() else "cpu"), random_state=seed)
        result = trainer.fit(net, ((S_tr - sm) / sx).astype(np.float32), ((V_tr - vm) / vs).astype(np.float32))
        with torch.no_grad():
            V_net = result.module(torch.as_tensor(((S_te - sm) / sx).astype(np.float32))).numpy() * vs + vm
        table.add("2-D maps", "conv encoder-decoder on pairs only", np.abs(V_net - V_te).mean(), seed=seed)
        t_ssim.add("2-D maps", "conv encoder-decoder on pairs only",
                   ssim_2d(V_te, V_net, shape=shape_y, value_range=V_RANGE), seed=seed)
        table.add("2-D maps", "mean map", np.abs(V_tr.mean(axis=0) - V_te).mean(), seed=seed)
        # seconds per epoch: a few epochs' worth of steps on each device
        for device in ["cpu"] + (["cuda"] if torch.cuda.is_available() else []):
            n_rows = min(1280, n_pool) if device == "cpu" else n_pool
            mae = MaskedAutoencoder(32, architecture="conv", input_shape=shape_y, hidden_layer_sizes=channels,
                                    max_iter=2 * math.ceil(n_rows / 128), device=device, random_state=seed)
            start = time.perf_counter()
            mae.fit(V_pool[:n_rows])
            per_epoch = (time.perf_counter() - start) / 2 * (n_pool / n_rows)
            t_epoch.add(f"{n_pool} maps", f"MaskedAutoencoder on {device}", per_epoch, seed=seed)
    table.note(f"{steps} steps per masked autoencoder (channels {channels}); the paired-only network has the same "
               f"encoder and decoder and as many steps, on the pairs. {_load()}.")
    t_epoch.note("CPU seconds per epoch are extrapolated from at most 1280 maps; threads as the thread rule "
                 "allows.")
    return [table, t_ssim, t_epoch]


def fit_time(args):
    """The timed fit alone (the fit-time bar): pools and 200 pairs, nothing else running in the process."""
    n_pool, steps = (1000, 300) if args.quick else (3000, 1500)
    table = Table(f"{FIT_TIME}: {n_pool} + {n_pool} unpaired rows and 200 pairs", "seconds",
                  higher_is_better=False, verdicts=False)
    loads = []
    for seed in args.seeds:
        S_pool, V_pool, S_pairs, V_pairs = _data(seed, n_pool)[:4]
        loads.append(os.getloadavg()[0])
        start, cpu_start = time.perf_counter(), time.process_time()
        AutoLinear(max_iter=steps, device=args.device, random_state=seed).fit(
            S_pairs[:200], V_pairs[:200], X_unpaired=S_pool, y_unpaired=V_pool)
        table.add("wall-clock", OURS, time.perf_counter() - start, ours=True, seed=seed)
        table.add("CPU time of the process", OURS, time.process_time() - cpu_start, ours=True, seed=seed)
        print(f"fit time, seed {seed} done ({_load()})", file=sys.stderr, flush=True)
    table.bar("fit of the pools and 200 pairs, wall-clock seconds (mean over seeds)", table.mean("wall-clock", OURS),
              60.0)
    table.note(f"Each masked autoencoder runs {steps} steps; one fit after the other in one process, nothing else in "
               f"it. 1-minute load average before the fits {min(loads):.1f} to {max(loads):.1f} on a shared 2-core "
               "machine. The thread rule gives torch one thread on an oversubscribed machine, so the CPU time is "
               "close to the wall-clock time of the same fit on an idle core.")
    return [table]


#: the part of the script that writes a table, by the start of its title (a part re-run alone replaces its tables)
PARTS = {"cpu": one_d, "time": fit_time, "2d": two_d, "gpu": gpu}
PART_TITLES = (("cpu", "Inverse modelling"), ("cpu", "Forward modelling"), ("cpu", "Latent R"),
               ("cpu", QUALITY_TIME), ("time", FIT_TIME), ("2d", TITLE_2D), ("gpu", "2-D maps"),
               ("gpu", "Seconds per epoch"))


def table_part(title):
    """The part of the script that writes the table titled ``title`` (None if unknown)."""
    return next((part for part, prefix in PART_TITLES if title.startswith(prefix)), None)


def _kept_tables(args, run):
    """Tables of the parts not run now, from the results file as it was (they stay in it)."""
    path = results_path(args)
    if path is None or not path.exists():
        return path, [], []
    old = json.loads(path.read_text(encoding="utf-8"))
    device = "cpu"
    if args.device != "cpu":
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    if old.get("provenance", {}).get("hardware", {}).get("device", "cpu") != device:
        return path, [], []  # a run on other hardware is kept whole by ``emit`` (merged runs)
    kept = [t for t in old.get("tables", []) if table_part(t["title"]) not in (None, *run)]
    return path, kept, old.get("estimators", []) if kept else []


def _merge(path, kept, kept_estimators):
    """Add the kept tables to the file just saved, in the order of ``PARTS``."""
    if path is None or not kept:
        return
    doc = json.loads(path.read_text(encoding="utf-8"))
    order = {part: i for i, part in enumerate(PARTS)}
    doc["tables"] = sorted(doc["tables"] + kept, key=lambda t: order.get(table_part(t["title"]), len(PARTS)))
    doc["estimators"] = sorted(set(doc["estimators"]) | set(kept_estimators))
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    tmp.replace(path)


def main():
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--jobs", type=int, default=1,
                     help="seeds of the quality tables run in this many processes at once (default 1)")
    pre.add_argument("--cv-jobs", type=int, default=1,
                     help="processes of each grid search of the tuned MLP (GridSearchCV's n_jobs, default 1)")
    pre.add_argument("--only", nargs="+", choices=sorted(PARTS), default=None,
                     help="run these parts only (default: cpu and time on the CPU, gpu otherwise); the tables of "
                          "the other parts stay in the results file")
    known, rest = pre.parse_known_args()
    args = bench_args(__doc__, rest)
    args.jobs, args.cv_jobs = max(1, known.jobs), max(1, known.cv_jobs)
    only = known.only or (["gpu"] if args.device != "cpu" else ["cpu", "time"])
    path, kept, kept_estimators = _kept_tables(args, only)
    command = "python benchmarks/bench_auto_linear.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    for name in only:
        tables = PARTS[name](args)
        for t in tables:
            t.note(f"Produced by {command.strip()} ({len(args.seeds)} seed(s); {_load()} when the table was "
                   "done).")
        emit(tables, args, estimators=["AutoLinear", "MaskedAutoencoder"])
        _merge(path, kept, kept_estimators)


if __name__ == "__main__":
    main()
