"""DySLIM against the MSE-only emulator (same network, seeds and steps) and SINDy on Lorenz-63 and Kuramoto-Sivashinsky.

Each seed draws training trajectories of Lorenz-63 (``make_lorenz63``, time step 0.1:
RK4 at 0.01, stride 10) observed with Gaussian noise of 0.5 (or 0.3, or 0) standard
deviations per coordinate, and clean test trajectories. ``DySLIMRegressor`` with its
defaults lambda_uncond = 0, lambda_cond = 1 (ours), with both terms at 1 (the paper's
Lorenz-63 setting) and with lambda = 0 (the MSE-only emulator: the same network, initial
weights, mini-batches and optimiser steps) learn the one-step map; pysindy's discrete-time
SINDy (STLSQ, degree-2 polynomials) fits the same noisy trajectories. Metrics, in units of
the test attractor's standard deviation per coordinate: the RMSE after 5 steps from test
states, the squared MMD (inverse multiquadric kernel, bandwidths 0.2/0.5/0.9/1.3) between the last 200 states of
2000-step rollouts from the test initial states and test-attractor states (2000 of
each), and the share of diverged trajectories (leaving 100 standard deviations).

    python benchmarks/bench_dyslim.py --quick                 # about a minute at low load
    python benchmarks/bench_dyslim.py --seeds 5               # every case below
    python benchmarks/bench_dyslim.py --seeds 3 --cases noisy clean cost ablation --resume   # the cases with
                                                                      # targets, the step cost and which measure
                                                                      # term costs accuracy on clean data
    python benchmarks/bench_dyslim.py --seeds 1 --cases ks_sobolev --resume   # the H^1 misfit on KS
    python benchmarks/bench_dyslim.py --first-seed 2 --seeds 3 --cases noisy --resume   # seeds 2-4 added to the
                                                                      # saved run (step costs are not carried over)
    python benchmarks/bench_dyslim.py --seeds 3 --cases ks ks_sobolev --resume --jobs 3   # the KS tables, the seeds
                                                                      # in 3 processes at once
"""

import argparse
import sys
import time
import warnings

import numpy as np
from _bench import Table, bench_args, emit

from sklearn_icml.datasets import make_kuramoto_sivashinsky, make_lorenz63
from sklearn_icml.dynamics import DySLIMRegressor, energy_spectrum_log_ratio, make_rollout_dataset
from sklearn_icml.metrics import mmd2

CASES = ("noisy", "clean", "noise03", "short", "pushforward", "ks", "cost", "ablation", "ks_sobolev")
#: The estimator's defaults: the conditional term alone (ours).
OURS = "DySLIM default (lambda_uncond=0, lambda_cond=1)"
#: Both measure terms at 1 (the paper's Lorenz-63 setting).
BOTH = "both terms (lambda_uncond=lambda_cond=1)"
MSE = "MSE-only (lambda=0)"
#: Method labels of saved runs whose rows ``--resume`` carries over, by their present label: "ours" is the
#: estimator's default, so the rows of both terms are a variant and the conditional term alone is ours.
RENAMED = {"DySLIM (lambda=1)": BOTH, "conditional term only (lambda_uncond=0)": OURS,
           "DySLIM (lambda=1): trained map": f"{BOTH}: trained map"}
GPU_CASES = ("gpu",)  # only on request (benchmarks/gpu.sh)
#: The table cases each --cases choice measures.
CASE_LABELS = {"noisy": ("noise 0.5",), "clean": ("clean",), "noise03": ("noise 0.3",),
               "short": ("noise 0.5, short data (40 x 100)",), "pushforward": ("noise 0.5, K=4, push-forward",),
               "ks": ("KS clean", "KS noise 0.5"), "cost": ("batch 256, MLP 3-64-64-3",),
               "ablation": ("clean, 1000 steps", "noise 0.5, 1000 steps"),
               "ks_sobolev": (("KS clean", "DySLIM, H^1 misfit (sobolev_order=1)"),
                              ("KS noise 0.5", "DySLIM, H^1 misfit (sobolev_order=1)"))}
#: Each choice measures whole cases (a case label) or one method's row of a case (a (case, method) pair).
#: The measure terms switched on in the ablation: (label, lambda_uncond, lambda_cond, ours).
ABLATION = ((MSE, 0.0, 0.0, False), (BOTH, 1.0, 1.0, False), (OURS, 0.0, 1.0, True),
            ("unconditional term only (lambda_cond=0)", 1.0, 0.0, False))
ABLATION_STEPS = 1000


def _parse():
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--cases", nargs="+", choices=CASES + GPU_CASES, default=list(CASES))
    pre.add_argument("--first-seed", type=int, default=0)
    pre.add_argument("--resume", action="store_true")
    pre.add_argument("--jobs", type=int, default=1, help="seeds run in this many processes at once (default 1)")
    known, rest = pre.parse_known_args()
    args = bench_args(__doc__, rest)
    args.cases = known.cases
    args.seeds = [known.first_seed + s for s in args.seeds]
    args.resume = known.resume
    args.jobs = max(1, known.jobs)
    return args


def _resume(tables, args):
    """Start from the raw values of the saved full run (the step costs only when the cost case is not run again:
    they measure the code of their run); a (case, method, seed) measured again replaces the saved value. Methods
    saved under an earlier label take their present one (``RENAMED``) and "ours" is the estimator's default."""
    import json

    from _bench import results_path

    path = results_path(args)
    if not path.exists():
        return
    saved = {t["title"]: t for t in json.loads(path.read_text())["tables"]}
    rerun = {label for case in args.cases for label in CASE_LABELS.get(case, ())}
    for key, table in tables.items():
        if (key == "cost" and "cost" in args.cases) or table.title not in saved:
            continue
        for row in saved[table.title]["rows"]:
            method = RENAMED.get(row["method"], row["method"])
            for v in row["values"]:
                measured = row["case"] in rerun or (row["case"], method) in rerun
                if (not measured or v["seed"] not in args.seeds) and v["value"] is not None:
                    table.add(row["case"], method, v["value"], ours=method == OURS, seed=v["seed"])


def _sizes(quick):
    if quick:
        return dict(n_train=100, n_steps=200, n_test=50, max_iter=400, long=1000, tail=100, ks_train=10,
                    ks_steps=100, ks_iter=200, ks_long=400)
    return dict(n_train=400, n_steps=400, n_test=200, max_iter=4000, long=2000, tail=200, ks_train=40,
                ks_steps=400, ks_iter=2000, ks_long=2000)


def _subsample(Z, n, rng):
    return Z[rng.choice(len(Z), n, replace=False)] if len(Z) > n else Z


def _hold_diverged(step, X0, n_steps):
    """Roll ``step`` (batch of states -> next states) out, holding trajectories that leave 1e2 sd or go non-finite."""
    z = np.array(X0, dtype=np.float64)
    out = np.empty((len(z), n_steps, z.shape[1]))
    alive = np.ones(len(z), dtype=bool)
    scale = np.maximum(np.abs(z).max(axis=0), 1.0)
    for t in range(n_steps):
        with np.errstate(all="ignore"):
            nxt = step(z)
        bad = ~np.isfinite(nxt).all(axis=1) | (np.abs(nxt) > 100.0 * scale).any(axis=1)
        alive &= ~bad
        z = np.where(alive[:, None], nxt, z)
        out[:, t] = z
    return out, ~alive


def _evaluate(rollout, test, mu, sd, sizes, rng):
    """5-step RMSE, long-run MMD and diverged share, in units of the test attractor."""
    idx = np.arange(0, test.shape[1] - 5, 50)
    starts = test[:, idx].reshape(-1, test.shape[-1])
    ahead = test[:, idx + 5].reshape(-1, test.shape[-1])
    short, _ = rollout(starts, 5)
    rmse = float(np.sqrt(np.mean(((short[:, -1] - ahead) / sd) ** 2)))
    long, diverged = rollout(test[:, 0], sizes["long"])
    tail = ((long[:, -sizes["tail"]:].reshape(-1, test.shape[-1]) - mu) / sd)
    ref = (test.reshape(-1, test.shape[-1]) - mu) / sd
    mmd = mmd2(_subsample(tail, 2000, rng), _subsample(ref, 2000, rng))
    return rmse, mmd, float(np.mean(diverged)), long


def _dyslim_rollout(model):
    def rollout(X0, n_steps):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return model.rollout(X0, n_steps, return_diverged=True)

    return rollout


def _sindy_rollout(train):
    import pysindy as ps

    model = ps.DiscreteSINDy(optimizer=ps.STLSQ(threshold=0.1), feature_library=ps.PolynomialLibrary(degree=2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit([t for t in train], t=1)
    return lambda X0, n_steps: _hold_diverged(model.predict, X0, n_steps)


def _l63_case(tables, case, seed, sizes, *, noise, n_train=None, n_steps=None, extra=None, sindy=False,
              variants=None):
    """Fit DySLIM (ours), both terms and MSE-only (or ``variants``) on one Lorenz-63 setting; add the metrics."""
    n_train = n_train or sizes["n_train"]
    n_steps = n_steps or sizes["n_steps"]
    train = make_lorenz63(n_train, n_steps, noise=noise, random_state=seed)
    test = make_lorenz63(sizes["n_test"], 400, random_state=10_000 + seed)
    mu, sd = test.reshape(-1, 3).mean(axis=0), test.reshape(-1, 3).std(axis=0)
    K = (extra or {}).get("n_rollout_steps", 1)
    X, y = make_rollout_dataset(train, n_rollout_steps=K)
    figures = {}
    variants = variants or ((0.0, 1.0, OURS, True), (1.0, 1.0, BOTH, False), (0.0, 0.0, MSE, False))
    for lam_u, lam_c, label, ours in variants:
        model = DySLIMRegressor(lambda_uncond=lam_u, lambda_cond=lam_c, max_iter=sizes["max_iter"], random_state=seed,
                                **(extra or {}))
        start = time.perf_counter()
        model.fit(X, y)
        seconds = time.perf_counter() - start
        rmse, mmd, div, long = _evaluate(_dyslim_rollout(model), test, mu, sd, sizes, np.random.RandomState(seed))
        for name, value in zip(("rmse", "mmd", "div", "fit"), (rmse, mmd, div, seconds)):
            tables[name].add(case, label, value, ours=ours, seed=seed)
        figures[label] = long
        print(f"  {case} seed {seed} {label}: rmse5 {rmse:.3f} mmd {mmd:.4f} diverged {div:.3f} "
              f"fit {seconds:.0f} s", file=sys.stderr, flush=True)
    if sindy:
        try:
            start = time.perf_counter()
            rollout = _sindy_rollout(train)
            seconds = time.perf_counter() - start
            rmse, mmd, div, _ = _evaluate(rollout, test, mu, sd, sizes, np.random.RandomState(seed))
        except ImportError:
            rmse = mmd = div = seconds = float("nan")
        for name, value in zip(("rmse", "mmd", "div", "fit"), (rmse, mmd, div, seconds)):
            tables[name].add(case, "pysindy DiscreteSINDy (STLSQ, degree 2)", value, seed=seed)
    return figures


def _ks_case(tables, case, seed, sizes, *, noise, variants=None):
    """DySLIM (ours), both terms and MSE-only, or ``variants`` ``(lambda_uncond, lambda_cond, label, ours, extra
    parameters)``, on KS."""
    train = make_kuramoto_sivashinsky(sizes["ks_train"], sizes["ks_steps"], noise=noise, random_state=seed)
    test = make_kuramoto_sivashinsky(20, 200, random_state=10_000 + seed)
    mu, sd = test.reshape(-1, 64).mean(), test.reshape(-1, 64).std()
    X, y = make_rollout_dataset(train)
    variants = variants or ((0.0, 1.0, OURS, True, {}), (1.0, 1.0, BOTH, False, {}), (0.0, 0.0, MSE, False, {}))
    for lam_u, lam_c, label, ours, extra in variants:
        model = DySLIMRegressor(network="periodic_conv", hidden_layer_sizes=(32,), integrator="residual",
                                mmd_bandwidths=(0.2, 0.5, 0.9, 1.3, 2, 5, 9, 13, 20, 50, 90, 130),
                                lambda_uncond=lam_u, lambda_cond=lam_c, max_iter=sizes["ks_iter"], batch_size=128,
                                random_state=seed, **extra).fit(X, y)
        rmse, mmd, div, long = _evaluate(_dyslim_rollout(model), test, mu, sd,
                                         dict(sizes, long=sizes["ks_long"]), np.random.RandomState(seed))
        tail = long[:, -sizes["tail"]:].reshape(-1, 64)
        melr = energy_spectrum_log_ratio(test.reshape(-1, 64), tail)
        melr_w = energy_spectrum_log_ratio(test.reshape(-1, 64), tail, weighted=True)
        for name, value in zip(("ks_rmse", "ks_mmd", "ks_melr", "ks_melr_w", "ks_div"), (rmse, mmd, melr, melr_w, div)):
            tables[name].add(case, label, value, ours=ours, seed=seed)
        print(f"  {case} seed {seed} {label}: rmse5 {rmse:.3f} mmd {mmd:.4f} melr {melr:.3f} weighted {melr_w:.4f} "
              f"diverged {div:.3f}", file=sys.stderr, flush=True)


def _ablation_case(tables, case, seed, sizes, *, noise):
    """Which measure term costs accuracy on clean data: each term alone, both and none, on short fits.

    Besides the 5-step RMSE and the long-run MMD it records the speed ratio: the median over test states of the
    learned one-step displacement ``|S(x) - x|`` over the true one ``|x_1 - x_0|``. The unconditional term
    ``MMD^2({S(x_0)}, {x_0})`` is zero for the identity map and positive for the true map (its value on a batch of
    256 true pairs is recorded as the floor), so it pulls the learned map towards slower motion."""
    train = make_lorenz63(sizes["n_train"], sizes["n_steps"], noise=noise, random_state=seed)
    test = make_lorenz63(sizes["n_test"], 400, random_state=10_000 + seed)
    mu, sd = test.reshape(-1, 3).mean(axis=0), test.reshape(-1, 3).std(axis=0)
    X, y = make_rollout_dataset(train)
    Xt, yt = make_rollout_dataset(test)
    steps = ABLATION_STEPS if not sizes.get("quick") else sizes["max_iter"]
    true_move = np.linalg.norm((yt - Xt) / sd, axis=1)
    for label, lam_u, lam_c, ours in ABLATION:
        model = DySLIMRegressor(lambda_uncond=lam_u, lambda_cond=lam_c, max_iter=steps, random_state=seed)
        model.fit(X, y)
        rmse, mmd, div, _ = _evaluate(_dyslim_rollout(model), test, mu, sd, sizes, np.random.RandomState(seed))
        speed = float(np.median(np.linalg.norm((model.predict(Xt) - Xt) / sd, axis=1) / np.maximum(true_move, 1e-12)))
        last = model.loss_curve_[-100:].mean(axis=0)  # (total, l2, uncond, cond) over the last 100 steps
        for name, value in zip(("abl_rmse", "abl_mmd", "abl_speed", "abl_l2"), (rmse, mmd, speed, last[1])):
            tables[name].add(case, label, value, ours=ours, seed=seed)
        if lam_u:
            tables["abl_floor"].add(case, f"{label}: trained map", last[2], seed=seed)
        print(f"  {case} seed {seed} {label}: rmse5 {rmse:.3f} mmd {mmd:.4f} speed {speed:.3f} diverged {div:.3f}",
              file=sys.stderr, flush=True)
    rng = np.random.RandomState(seed)
    idx = rng.choice(len(X), 256, replace=False)
    Z0, Z1 = (X[idx] - X.mean(axis=0)) / X.std(axis=0), (y[idx] - X.mean(axis=0)) / X.std(axis=0)
    tables["abl_floor"].add(case, "true map (x_1 for S(x_0)), one batch of 256", mmd2(Z1, Z0), seed=seed)


def _step_cost(tables, seed, device):
    """CPU seconds per optimiser step at batch 256 (MSE-only vs DySLIM), from fits of 200 steps."""
    train = make_lorenz63(100, 100, random_state=seed)
    X, y = make_rollout_dataset(train)
    for lam_u, lam_c, label, ours in ((0.0, 1.0, OURS, True), (1.0, 1.0, BOTH, False), (0.0, 0.0, MSE, False)):
        model = DySLIMRegressor(lambda_uncond=lam_u, lambda_cond=lam_c, max_iter=200, device=device,
                                random_state=seed)
        model.fit(X[:512], y[:512])  # warm-up (imports, allocator)
        start = time.process_time()  # CPU time of this process (one torch thread): robust to a loaded machine
        model.fit(X, y)
        tables["cost"].add("batch 256, MLP 3-64-64-3", label, (time.process_time() - start) / 200, ours=ours,
                           seed=seed)


def _gpu_rows(tables, seed, device, quick):
    """KS at 512 points (periodic_conv, batch 1024, 12 bandwidths) and L63 at time step 0.4: seconds per step
    on ``device`` and on the CPU, and the L63 long-run MMD of DySLIM and MSE-only trained on ``device``."""
    import torch

    n_steps = 20 if quick else 200
    ks = make_kuramoto_sivashinsky(8 if quick else 64, 40 if quick else 200, n_grid=512, domain_length=22.0 * 8,
                                   random_state=seed)
    X, y = make_rollout_dataset(ks)
    bandwidths = (0.2, 0.5, 0.9, 1.3, 2, 5, 9, 13, 20, 50, 90, 130)
    for where in dict.fromkeys([device, "cpu"]):
        if where == "cuda" and not torch.cuda.is_available():
            continue
        steps = n_steps if where != "cpu" else 3  # the dilated network costs seconds per step on one CPU thread
        model = DySLIMRegressor(network="periodic_conv", hidden_layer_sizes=(48, 48, 48), mmd_bandwidths=bandwidths,
                                batch_size=1024, max_iter=steps, device=where, random_state=seed)
        model.set_params(max_iter=2).fit(X[:2048], y[:2048])  # warm-up
        start = time.perf_counter()
        model.set_params(max_iter=steps).fit(X, y)
        tables["gpu_cost"].add("KS 512 points, periodic_conv, batch 1024", f"DySLIM on {where}",
                               (time.perf_counter() - start) / steps, ours=where != "cpu", seed=seed)
    train = make_lorenz63(100 if quick else 400, 100 if quick else 400, stride=40, random_state=seed)
    test = make_lorenz63(50 if quick else 200, 200, stride=40, random_state=10_000 + seed)
    mu, sd = test.reshape(-1, 3).mean(axis=0), test.reshape(-1, 3).std(axis=0)
    X, y = make_rollout_dataset(train)
    sizes = dict(long=1000 if quick else 2000, tail=100 if quick else 200)
    for lam_u, lam_c, label, ours in ((0.0, 1.0, OURS, True), (1.0, 1.0, BOTH, False), (0.0, 0.0, MSE, False)):
        model = DySLIMRegressor(lambda_uncond=lam_u, lambda_cond=lam_c, max_iter=500 if quick else 10_000,
                                batch_size=1024,
                                device=device, random_state=seed).fit(X, y)
        _, mmd, div, _ = _evaluate(_dyslim_rollout(model), test, mu, sd, sizes, np.random.RandomState(seed))
        tables["gpu_l63"].add("L63, time step 0.4", label, mmd, ours=ours, seed=seed)


class _Record:
    """Stands in for a Table in a worker process: the values it would add, replayed into the table later."""

    def __init__(self, key, rows):
        self.key, self.rows = key, rows

    def add(self, case, method, value, *, ours=False, seed=None):
        self.rows.append((self.key, case, method, value, ours, seed))


def _run_seed(tables, seed, cases, sizes, quick, device):
    """Every chosen case on one seed, its values added to ``tables``."""
    if "noisy" in cases:
        _l63_case(tables, "noise 0.5", seed, sizes, noise=0.5, sindy=True)
    if "clean" in cases:
        _l63_case(tables, "clean", seed, sizes, noise=0.0)
    if "noise03" in cases:
        _l63_case(tables, "noise 0.3", seed, sizes, noise=0.3)
    if "short" in cases:
        _l63_case(tables, "noise 0.5, short data (40 x 100)", seed, sizes, noise=0.5, n_train=40, n_steps=100)
    if "pushforward" in cases:
        _l63_case(tables, "noise 0.5, K=4, push-forward", seed, sizes, noise=0.5,
                  extra=dict(n_rollout_steps=4, pushforward=True))
    if "ks" in cases:
        _ks_case(tables, "KS clean", seed, sizes, noise=0.0)
        _ks_case(tables, "KS noise 0.5", seed, sizes, noise=0.5)
    if "ablation" in cases:
        _ablation_case(tables, "clean, 1000 steps", seed, dict(sizes, quick=quick), noise=0.0)
        _ablation_case(tables, "noise 0.5, 1000 steps", seed, dict(sizes, quick=quick), noise=0.5)
    if "ks_sobolev" in cases:  # the paper's H^1 misfit on the field (domain length 22)
        h1 = ((1.0, 1.0, "DySLIM, H^1 misfit (sobolev_order=1)", False,
               dict(sobolev_order=1, sobolev_length=22.0)),)
        _ks_case(tables, "KS clean", seed, sizes, noise=0.0, variants=h1)
        _ks_case(tables, "KS noise 0.5", seed, sizes, noise=0.5, variants=h1)
    if "cost" in cases:
        _step_cost(tables, seed, device)
    if "gpu" in cases:
        _gpu_rows(tables, seed, device, quick)


def _seed_worker(seed, cases, sizes, quick, device, keys):
    """One seed in a process of its own (``--jobs``): the rows it records, as (table key, case, method, value,
    ours, seed) in the order a sequential run adds them."""
    rows = []
    _run_seed({key: _Record(key, rows) for key in keys}, seed, cases, sizes, quick, device)
    print(f"  seed {seed} done", file=sys.stderr, flush=True)
    return rows


def _has(table, case, method=None):
    return any(row["case"] == case and method in (None, row["method"]) for row in table.rows())


def _median_ratio(table, case, ours, peer):
    a, b = np.array(table.values(case, ours)), np.array(table.values(case, peer))
    return float(np.median(a / b)), float(np.median(a)), float(np.median(b))


def main():
    args = _parse()
    sizes = _sizes(args.quick)
    n_l63 = f"{sizes['n_train']} trajectories of {sizes['n_steps']} steps, {sizes['max_iter']} optimiser steps"
    tables = {
        "rmse": Table(f"Lorenz-63: RMSE after 5 steps (time 0.5) from clean test states ({n_l63})",
                      "RMSE (attractor sd)", higher_is_better=False),
        "mmd": Table(f"Lorenz-63: long-run MMD^2 ({sizes['long']}-step rollouts, last {sizes['tail']} steps, "
                     "against the test attractor)", "MMD^2", higher_is_better=False),
        "div": Table("Lorenz-63: share of diverged rollouts", "share", higher_is_better=False, verdicts=False),
        "fit": Table("Lorenz-63: fit time", "seconds", higher_is_better=False, verdicts=False),
        "ks_rmse": Table("Kuramoto-Sivashinsky (64 points, periodic_conv): RMSE after 5 steps", "RMSE (field sd)",
                         higher_is_better=False),
        "ks_mmd": Table(f"Kuramoto-Sivashinsky: long-run MMD^2 ({sizes['ks_long']}-step rollouts)", "MMD^2",
                        higher_is_better=False),
        "ks_melr": Table("Kuramoto-Sivashinsky: energy-spectrum log ratio (MELR) of the long-run states", "MELR",
                         higher_is_better=False),
        "ks_melr_w": Table("Kuramoto-Sivashinsky: MELR weighted by the true spectrum (long-run states)",
                           "weighted MELR", higher_is_better=False),
        "ks_div": Table("Kuramoto-Sivashinsky: share of diverged rollouts", "share", higher_is_better=False,
                        verdicts=False),
        "cost": Table(f"Cost of one optimiser step ({args.device}, one torch thread)", "CPU seconds per step",
                      higher_is_better=False,
                      verdicts=False),
        "abl_rmse": Table(f"Which measure term: RMSE after 5 steps ({ABLATION_STEPS} optimiser steps)",
                          "RMSE (attractor sd)", higher_is_better=False),
        "abl_mmd": Table(f"Which measure term: long-run MMD^2 ({ABLATION_STEPS} optimiser steps)", "MMD^2",
                         higher_is_better=False),
        "abl_speed": Table("Which measure term: learned one-step displacement over the true one (median over test "
                           "states; 1 is the true speed)", "speed ratio", higher_is_better=False, verdicts=False),
        "abl_l2": Table("Which measure term: one-step misfit l2 in training (z-scores, mean of the last 100 steps)",
                        "l2", higher_is_better=False, verdicts=False),
        "abl_floor": Table("Which measure term: the unconditional term MMD^2({S(x_0)}, {x_0}) on training batches, "
                           "at the true map "
                           "and at the trained maps (mean of the last 100 steps; the identity map scores 0)",
                           "MMD^2 (z-scores)", higher_is_better=False, verdicts=False),
        "gpu_cost": Table("Seconds per DySLIM step, GPU against CPU on the same machine", "seconds per step",
                          higher_is_better=False, verdicts=False),
        "gpu_l63": Table("Lorenz-63 at time step 0.4 (stride 40): long-run MMD^2, batch 1024", "MMD^2",
                         higher_is_better=False),
    }
    ours, mse = OURS, MSE
    used = []
    if args.resume:
        _resume(tables, args)
        used.extend(t for t in tables.values() if t.rows())

    def flush(*keys):
        for k in keys:
            if tables[k] not in used:
                used.append(tables[k])
        emit(used, args, estimators=["DySLIMRegressor"])

    if args.jobs > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        n = len(args.seeds)
        with ProcessPoolExecutor(min(args.jobs, n), mp_context=multiprocessing.get_context("spawn")) as pool:
            done = pool.map(_seed_worker, args.seeds, [args.cases] * n, [sizes] * n, [args.quick] * n,
                            [args.device] * n, [list(tables)] * n)
            filled = set()
            for rows in done:  # in seed order, each seed saved as it comes
                for key, case, method, value, is_ours, seed in rows:
                    tables[key].add(case, method, value, ours=is_ours, seed=seed)
                    filled.add(key)
                flush(*[k for k in tables if tables[k].rows()])
        for key in filled:  # the workers are reaped: their CPU seconds now count in the tables they filled
            tables[key].touch()
    else:
        for seed in args.seeds:
            _run_seed(tables, seed, args.cases, sizes, args.quick, args.device)
            flush(*[k for k in tables if tables[k].rows()])

    if _has(tables["rmse"], "noise 0.5"):
        r, a, b = _median_ratio(tables["rmse"], "noise 0.5", ours, mse)
        tables["rmse"].bar(f"noise 0.5: median 5-step RMSE of DySLIM over MSE-only ({a:.3f} vs {b:.3f}) at most 0.85",
                           r, 0.85)
        r, a, b = _median_ratio(tables["mmd"], "noise 0.5", ours, mse)
        tables["mmd"].bar(f"noise 0.5: median long-run MMD^2 of DySLIM over MSE-only ({a:.3f} vs {b:.3f}) at most 0.5",
                          r, 0.5)
        tables["div"].bar("noise 0.5: diverged DySLIM rollouts (share, max over seeds)",
                          max(tables["div"].values("noise 0.5", ours)), 0.0)
    if _has(tables["mmd"], "clean"):
        tables["mmd"].bar("clean data: median long-run MMD^2 of the MSE-only emulator at most 0.05",
                          float(np.median(tables["mmd"].values("clean", mse))), 0.05)
        tables["mmd"].note("On clean data DySLIM's long-run MMD is expected to be worse than MSE-only's: with a "
                           "short time step the MSE emulator already reproduces the attractor.")
    if _has(tables["ks_div"], "KS clean") and _has(tables["ks_div"], "KS noise 0.5"):
        ks = ours if _has(tables["ks_div"], "KS clean", ours) else BOTH  # saved KS rows measured both terms
        tables["ks_div"].bar(f"KS: diverged rollouts of {ks} (share, max over seeds and cases)",
                             max(tables["ks_div"].values("KS clean", ks) + tables["ks_div"].values("KS noise 0.5",
                                                                                                    ks)), 0.0)
    if _has(tables["cost"], "batch 256, MLP 3-64-64-3"):
        r, a, b = _median_ratio(tables["cost"], "batch 256, MLP 3-64-64-3", ours, mse)
        tables["cost"].bar(f"a DySLIM step over an MSE-only step at batch 256 ({a * 1e3:.1f} vs {b * 1e3:.1f} ms) "
                           "at most 4", r, 4.0)
    if args.quick:
        for t in tables.values():
            t.note("--quick: smaller data and fewer optimiser steps than the full run; bars are those of the full "
                   "run and are indicative only.")
    flush()


if __name__ == "__main__":
    main()
