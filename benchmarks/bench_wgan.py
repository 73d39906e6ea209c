"""Left-invertible WGAN (S2): fidelity, replication and the certified bound against density models and a copier.

Tables:
1. The paper's 2-D Swiss roll (make_swiss_roll_2d, noise 1.5), 500 training and 500 held-out points per
   seed; 2000 points drawn from each model. Ours: LeftInvertibleWGAN with inverse_penalty=2 (learned
   inverse, the paper's practice) and the injective architecture (exact inverse); beside them the same
   network with inverse_penalty=0 (a plain WGAN-GP), scikit-learn's GaussianMixture (components by BIC)
   and KernelDensity (bandwidth by 5-fold GridSearchCV), a Gaussian fit, a copier (training points
   resampled plus N(0, 0.005^2) noise) and the training set itself as the reference sample. Measures:
   W1 to the held-out and to the training points (exact, POT), the DCR ratio (median distance of a
   model's points to the nearest training point over that of held-out points), the share of near copies
   (nearest training point 3x closer than the second), the authors' dissimilarity score (mean distance
   of a model's points to the nearest training point, the score their code logs), the certified lower
   bound and fit seconds.
   Targets: copier DCR <= 0.3 and ours >= 0.9; ours W1 to holdout <= the Gaussian fit's and <= 1.75 x
   W1(train, holdout); the bound below W1 to train in every seed and above 0 for the injective model.
   Claim of the paper: the inverse penalty raises the DCR over the plain WGAN-GP at W1 within 10 %.
2. Digits (load_digits, 64 features), half for training, latent dimension 16: DCR >= 0.9, share of near
   copies <= 0.05, the certified bound at latent 16 reported.
3. Cost: seconds per generator iteration with the inverse network against the same WGAN-GP without
   it (target <= 1.5x); peak memory of a digits fit in a fresh process (target under 1 GB).
4. GPU rows (``--only gpu --device cuda``, run by benchmarks/gpu.sh): digits with (512, 512, 512) networks for
   20,000 iterations; seconds per iteration on the device against the CPU.

    python benchmarks/bench_wgan.py --quick
    python benchmarks/bench_wgan.py --seeds 5 --max-iter 2000
    python benchmarks/bench_wgan.py --seeds 5 --max-iter 2000 --injective-max-iter 500 --digits-max-iter 500 \
        --only roll                                          # the roll, saved after every seed
    python benchmarks/bench_wgan.py --max-iter 2000 --injective-max-iter 500 --digits-max-iter 500 \
        --only digits,cost --resume                          # digits and cost added to the saved roll
    python benchmarks/bench_wgan.py --first-seed 3 --seeds 2 --max-iter 2000 --injective-max-iter 500 \
        --only roll --resume                                 # roll seeds 3 and 4 added to the saved run

``--resume`` starts from the raw values of the saved run: a part that is not run again keeps its saved values, a
part that is run keeps the saved seeds it does not measure again; targets and the claim are computed over all.
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _bench import Table, bench_args, emit, results_path  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.mixture import GaussianMixture  # noqa: E402
from sklearn.model_selection import GridSearchCV  # noqa: E402
from sklearn.neighbors import KernelDensity, NearestNeighbors  # noqa: E402

from sklearn_icml.datasets import make_swiss_roll_2d  # noqa: E402
from sklearn_icml.generative import LeftInvertibleWGAN  # noqa: E402
from sklearn_icml.metrics import dcr_ratio, replication_score, wasserstein1  # noqa: E402

N_DRAWS = 2000
OURS = "LeftInvertibleWGAN (penalty 2)"
INJECTIVE = "LeftInvertibleWGAN (injective)"
WGAN_GP = "WGAN-GP (penalty 0)"
TRAIN_ITSELF = "training set itself (reference)"


def _cpu_timed(fn, *args, repeat=2, **kwargs):
    """CPU seconds of the process for ``fn(*args, **kwargs)`` (one thread): the best of ``repeat`` calls."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        fn(*args, **kwargs)
        best = min(best, time.process_time() - start)
    return best


def _log(text):
    print(f"[bench_wgan {time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def _gan(args, seed, max_iter=None, **params):
    return LeftInvertibleWGAN(max_iter=max_iter or args.max_iter, device=args.device, random_state=seed, **params)


def _mean_nn_distance(S, train):
    """The authors' dissimilarity score: mean distance from each point of ``S`` to its nearest training point."""
    return float(NearestNeighbors(n_neighbors=1).fit(train).kneighbors(S)[0].mean())


def _gaussian_mixture(X, seed):
    fits = [GaussianMixture(k, random_state=seed).fit(X) for k in range(1, 11)]
    return min(fits, key=lambda m: m.bic(X))


def _kde(X, seed):
    scale = X.std(axis=0).mean()
    grid = {"bandwidth": scale * np.logspace(-2, 0, 15)}
    return GridSearchCV(KernelDensity(), grid, cv=5).fit(X).best_estimator_


def _samplers(args, seed, X, latent_dim=None, max_iter=None):
    """name -> (fit + draw function returning (points, fitted model or None))."""
    rng = np.random.RandomState(seed)
    extra = {"max_iter": max_iter} if latent_dim is None else {"latent_dim": latent_dim, "max_iter": max_iter}

    def gan(**params):
        def run():
            model = _gan(args, seed, **{**extra, **params}).fit(X)
            return model.sample(N_DRAWS, random_state=seed + 1000), model
        return run

    def gaussian():
        mean, cov = X.mean(axis=0), np.cov(X, rowvar=False)
        return rng.multivariate_normal(mean, cov, size=N_DRAWS), None

    def copier():
        return X[rng.randint(len(X), size=N_DRAWS)] + rng.normal(scale=0.005, size=(N_DRAWS, X.shape[1])), None

    return {
        OURS: gan(inverse_penalty=2.0),
        INJECTIVE: gan(architecture="injective_mlp", **({} if latent_dim else {"max_iter": args.injective_max_iter})),
        WGAN_GP: gan(inverse_penalty=0.0),
        "GaussianMixture (BIC)": lambda: (_gaussian_mixture(X, seed).sample(N_DRAWS)[0], None),
        "KernelDensity (CV bandwidth)": lambda: (_kde(X, seed).sample(N_DRAWS, random_state=seed), None),
        "Gaussian fit": gaussian,
        "copier (train + N(0, 0.005^2))": copier,
    }


ROLL_CASE = "2-D roll, 500 train / 500 holdout"
DIGITS_CASE = "digits, 64-D, half train, latent 16"
COST_CASE = "500 points, batch 200"
COPIER = "copier (train + N(0, 0.005^2))"
WITH_INVERSE, NO_INVERSE = "with the inverse network", "WGAN-GP, no inverse network"
ROLL = ("roll_w1_ho", "roll_w1_tr", "roll_dcr", "roll_rep", "roll_nn", "roll_bound", "roll_secs")
DIGITS = ("digits_w1_ho", "digits_dcr", "digits_rep", "digits_bound")
COST = ("cost_iter", "cost_memory")


def make_tables():
    """Every table of the CPU run, in the order of the page (key -> Table)."""
    return {
        "roll_w1_ho": Table("Swiss roll: W1 to the held-out points", "W1", higher_is_better=False),
        "roll_w1_tr": Table("Swiss roll: W1 to the training points", "W1", higher_is_better=False, verdicts=False),
        "roll_dcr": Table("Swiss roll: DCR ratio (about 1 for a fresh sample, near 0 for a copier)", "DCR ratio",
                          higher_is_better=True, verdicts=False),
        "roll_rep": Table("Swiss roll: share of near copies (nearest training point 3x closer than the second)",
                          "share", higher_is_better=False, verdicts=False),
        "roll_nn": Table("Swiss roll: mean distance to the nearest training point (the authors' dissimilarity "
                         "score)", "mean distance", higher_is_better=True, verdicts=False),
        "roll_bound": Table("Swiss roll: certified lower bound on W1 to the training points", "bound",
                            higher_is_better=True, verdicts=False),
        "roll_secs": Table("Swiss roll: fit seconds", "seconds", higher_is_better=False, verdicts=False),
        "digits_w1_ho": Table("Digits: W1 to the held-out images", "W1", higher_is_better=False),
        "digits_dcr": Table("Digits: DCR ratio", "DCR ratio", higher_is_better=True, verdicts=False),
        "digits_rep": Table("Digits: share of near copies", "share", higher_is_better=False, verdicts=False),
        "digits_bound": Table("Digits: certified lower bound on W1 to the training images (latent 16)", "bound",
                              higher_is_better=True, verdicts=False),
        "cost_iter": Table("Cost: CPU seconds per generator iteration (5 critic steps), roll, networks "
                           "(128, 128, 128)", "CPU seconds", higher_is_better=False),
        "cost_memory": Table("Cost: peak memory of a digits fit (fresh process, latent 16)", "MiB",
                             higher_is_better=False, verdicts=False),
    }


def _clear(table):
    """Drop a table's notes, targets and claims (they are recomputed over all its values)."""
    table._notes.clear()
    table._bars.clear()
    table._claims.clear()


def _by_seed(table, case, method):
    return dict(table._values.get((case, method), []))


def _seeds(table, case, method):
    return sorted(_by_seed(table, case, method))


def resume(tables, args, rerun):
    """Fill ``tables`` with the saved run's raw values, leaving out the seeds measured again (``rerun``: table key ->
    seeds, None for all)."""
    path = results_path(args)
    if path is None or not path.exists():
        return
    saved = {t["title"]: t for t in json.loads(path.read_text(encoding="utf-8"))["tables"]}
    for key, table in tables.items():
        skip = rerun.get(key, ())
        if skip is None:
            continue
        for row in saved.get(table.title, {}).get("rows", []):
            for v in row["values"]:
                if v["seed"] not in skip and v["value"] is not None:
                    table.add(row["case"], row["method"], v["value"], ours=row["ours"], seed=v["seed"])


def measure_roll_seed(t, args, seed):
    """One seed of the roll: every sampler's W1, DCR, share of near copies, dissimilarity, bound and seconds."""
    X, _ = make_swiss_roll_2d(2 * args.n_train, random_state=seed)
    train, holdout = X[:args.n_train], X[args.n_train:]
    t["roll_w1_ho"].add(ROLL_CASE, TRAIN_ITSELF, wasserstein1(train, holdout), seed=seed)
    t["roll_nn"].add(ROLL_CASE, "held-out points (reference)", _mean_nn_distance(holdout, train), seed=seed)
    for name, run in _samplers(args, seed, train).items():
        start = time.perf_counter()
        S, model = run()
        seconds = time.perf_counter() - start
        ours = name in (OURS, INJECTIVE)
        _add_sample_rows(t, "roll", ROLL_CASE, name, S, model, train, holdout, seed)
        t["roll_w1_tr"].add(ROLL_CASE, name, wasserstein1(S, train, random_state=seed), ours=ours, seed=seed)
        t["roll_nn"].add(ROLL_CASE, name, _mean_nn_distance(S, train), ours=ours, seed=seed)
        t["roll_secs"].add(ROLL_CASE, name, seconds, ours=ours, seed=seed)
        _log(f"roll seed {seed} {name}: {seconds:.1f} s")


def _add_sample_rows(t, prefix, case, name, S, model, train, holdout, seed):
    """The rows every dataset reports for one sampler: W1 to holdout, DCR, replication share and the bound."""
    ours = name in (OURS, INJECTIVE)
    t[f"{prefix}_w1_ho"].add(case, name, wasserstein1(S, holdout, random_state=seed), ours=ours, seed=seed)
    t[f"{prefix}_dcr"].add(case, name, dcr_ratio(S, train, holdout), ours=ours, seed=seed)
    t[f"{prefix}_rep"].add(case, name, replication_score(S, train), ours=ours, seed=seed)
    if model is not None:
        t[f"{prefix}_bound"].add(case, name, model.lower_bound_, ours=ours, seed=seed)


def roll_bars(t, args):
    """Targets, claim and notes of the roll over every seed in the tables."""
    for key in ROLL:
        _clear(t[key])
    if not _seeds(t["roll_w1_ho"], ROLL_CASE, OURS):
        return
    w1_ho, dcr, nn_mean, bound = t["roll_w1_ho"], t["roll_dcr"], t["roll_nn"], t["roll_bound"]
    dcr.bar("copier DCR ratio on the roll (target <= 0.3; pilot 0.10)", dcr.mean(ROLL_CASE, COPIER), 0.3, op="<=")
    dcr.bar("LeftInvertibleWGAN (penalty 2) DCR ratio on the roll (target >= 0.9; pilot 1.23)",
            dcr.mean(ROLL_CASE, OURS), 0.9, op=">=")
    w1_ho.bar("LeftInvertibleWGAN (penalty 2) W1 to holdout over the Gaussian fit's (target <= 1.0; "
              "pilot 0.255 / 0.282)", w1_ho.mean(ROLL_CASE, OURS) / w1_ho.mean(ROLL_CASE, "Gaussian fit"), 1.0,
              op="<=")
    w1_ho.bar("LeftInvertibleWGAN (penalty 2) W1 to holdout over W1(train, holdout) (target <= 1.75; pilot 1.56)",
              w1_ho.mean(ROLL_CASE, OURS) / w1_ho.mean(ROLL_CASE, TRAIN_ITSELF), 1.75, op="<=")
    gaps = []
    for name in (OURS, INJECTIVE, WGAN_GP):
        to_train = _by_seed(t["roll_w1_tr"], ROLL_CASE, name)
        gaps += [b - to_train[s] for s, b in _by_seed(bound, ROLL_CASE, name).items() if s in to_train]
    bound.bar("largest (bound - W1 to train) over seeds and GAN rows (target <= 0: the bound is certified)",
              max(gaps), 0.0, op="<=")
    bound.bar("smallest injective bound over seeds (target > 0)", min(bound.values(ROLL_CASE, INJECTIVE)), 0.0,
              op=">")
    ours_dcr, plain_dcr = dcr.mean(ROLL_CASE, OURS), dcr.mean(ROLL_CASE, WGAN_GP)
    ours_nn, plain_nn = nn_mean.mean(ROLL_CASE, OURS), nn_mean.mean(ROLL_CASE, WGAN_GP)
    w1_change = w1_ho.mean(ROLL_CASE, OURS) / w1_ho.mean(ROLL_CASE, WGAN_GP) - 1.0
    raised = ours_dcr > plain_dcr
    within = w1_change <= 0.10  # kept quality: W1 to holdout at most 10 % worse (better counts)
    dcr.claim("inverse_penalty 2 raises the DCR ratio over 0 with W1 to holdout within 10 %",
              paper="diverse samples without replication at kept quality (pilot, one seed: DCR 1.23 against 1.07)",
              reproduced="yes" if raised and within else ("partly" if raised or within else "no"),
              measured=f"DCR {ours_dcr:.2f} against {plain_dcr:.2f} (mean distance to the nearest training "
                       f"point {ours_nn:.3f} against {plain_nn:.3f}), W1 to holdout {100 * w1_change:+.0f} %")
    injective = ("" if args.injective_max_iter == args.max_iter else
                 f" ({args.injective_max_iter} for the injective model, whose row is there for the bound)")
    n_seeds = len(_seeds(w1_ho, ROLL_CASE, OURS))
    note = (f"{n_seeds} seeds, {args.max_iter} generator iterations{injective} of 5 critic steps each, "
            "networks (128, 128, 128) (ReLU generator and critic, LeakyReLU inverse), batch 200, learning rate 1e-4.")
    for table in (w1_ho, dcr, nn_mean, bound):
        table.note(note)


def run_roll(t, args, flush):
    """The roll's seeds, one after the other, saved after each; stops before a seed that would pass the budget."""
    started, seed_seconds = time.perf_counter(), []
    for seed in args.roll_seeds:
        elapsed = time.perf_counter() - started
        if args.roll_minutes and seed_seconds and elapsed + max(seed_seconds) > 60.0 * args.roll_minutes:
            _log(f"roll: {len(seed_seconds)} seeds in {elapsed:.0f} s; another would pass --roll-minutes "
                 f"{args.roll_minutes}")
            break
        seed_start = time.perf_counter()
        measure_roll_seed(t, args, seed)
        seed_seconds.append(time.perf_counter() - seed_start)
        roll_bars(t, args)
        flush()


def measure_digits(t, args):
    X = load_digits().data
    for seed in args.digits_seeds:
        order = np.random.RandomState(seed).permutation(len(X))
        train, holdout = X[order[:len(X) // 2]], X[order[len(X) // 2:]]
        t["digits_w1_ho"].add(DIGITS_CASE, TRAIN_ITSELF, wasserstein1(train, holdout), seed=seed)
        samplers = _samplers(args, seed, train, latent_dim=16, max_iter=args.digits_max_iter)
        for name in (OURS, INJECTIVE, "GaussianMixture (BIC)", "KernelDensity (CV bandwidth)", "Gaussian fit",
                     COPIER):
            start = time.perf_counter()
            S, model = samplers[name]()
            _add_sample_rows(t, "digits", DIGITS_CASE, name, S, model, train, holdout, seed)
            _log(f"digits seed {seed} {name}: {time.perf_counter() - start:.1f} s")


def digits_bars(t, args):
    for key in DIGITS:
        _clear(t[key])
    if not _seeds(t["digits_dcr"], DIGITS_CASE, OURS):
        return
    t["digits_dcr"].bar("LeftInvertibleWGAN (penalty 2) DCR ratio on digits (target >= 0.9)",
                        t["digits_dcr"].mean(DIGITS_CASE, OURS), 0.9, op=">=")
    t["digits_rep"].bar("LeftInvertibleWGAN (penalty 2) share of near copies on digits (target <= 0.05)",
                        t["digits_rep"].mean(DIGITS_CASE, OURS), 0.05, op="<=")
    n_seeds = len(_seeds(t["digits_dcr"], DIGITS_CASE, OURS))
    t["digits_bound"].note(f"{n_seeds} seed(s), {args.digits_max_iter} generator iterations; the learned "
                           "inverse's bound is 0 when its error exceeds the covering bound e_n; the injective one is "
                           "positive by construction.")


_MEMORY_CHILD = """
import resource, sys
from sklearn.datasets import load_digits
from sklearn_icml.generative import LeftInvertibleWGAN
X = load_digits().data[:898]
LeftInvertibleWGAN(latent_dim=16, max_iter=int(sys.argv[1]), random_state=0).fit(X)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def measure_cost(t, args):
    import torch

    from sklearn_icml.generative._wgan_training import train_wgan
    from sklearn_icml.utils import resolve_device, torch_threads

    n_iter = 10 if args.quick else 30
    device = resolve_device(args.device)
    for seed in args.cost_seeds:
        X, _ = make_swiss_roll_2d(args.n_train, random_state=seed)
        X = (X - X.mean(0)) / X.std(0)
        with torch_threads(1):
            for name, train_inverse in ((WITH_INVERSE, True), (NO_INVERSE, False)):
                seconds = _cpu_timed(train_wgan, X, latent_dim=2, max_iter=n_iter, device=device,
                                     generator=torch.Generator().manual_seed(seed),
                                     train_inverse=train_inverse) / n_iter
                t["cost_iter"].add(COST_CASE, name, seconds, ours=train_inverse, seed=seed)
        _log(f"cost seed {seed}")
    out = subprocess.run([sys.executable, "-c", _MEMORY_CHILD, str(n_iter)], check=True, capture_output=True,
                         text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    mib = int(out.stdout.strip().splitlines()[-1]) / 1024.0  # ru_maxrss is in KiB on Linux
    t["cost_memory"].add("898 images, 64 features", "LeftInvertibleWGAN fit", mib, ours=True, seed=0)
    args.cost_n_iter = n_iter


def cost_bars(t, args):
    per_iter, memory = t["cost_iter"], t["cost_memory"]
    for key in COST:
        _clear(t[key])
    if not _seeds(per_iter, COST_CASE, WITH_INVERSE):
        return
    with_inv, without = _by_seed(per_iter, COST_CASE, WITH_INVERSE), _by_seed(per_iter, COST_CASE, NO_INVERSE)
    ratios = [with_inv[s] / without[s] for s in with_inv if s in without]
    n_iter = getattr(args, "cost_n_iter", 10 if args.quick else 30)
    per_iter.note(f"CPU time of the process (one thread), best of 2 runs of {n_iter} iterations, the two loops "
                  "timed one after the other on the same seed: on a shared machine wall time measures the other "
                  "tenants as much as the loop.")
    per_iter.bar("iteration with the inverse network over a WGAN-GP iteration (target <= 1.5)",
                 float(np.mean(ratios)), 1.5, op="<=")
    mib = memory.values("898 images, 64 features", "LeftInvertibleWGAN fit")
    if mib:
        memory.bar("peak resident memory of a digits fit, MiB (target under 1024)", max(mib), 1024.0, op="<")
        memory.note(f"Peak resident set of the whole child process (Python, torch, scikit-learn), {n_iter} "
                    "iterations; the fit's memory does not grow with the iterations.")


def gpu_tables(args):
    """Digits with (512, 512, 512) networks for 20,000 iterations on ``--device``; iteration time against the CPU."""
    case = "digits, (512, 512, 512), latent 16"
    n_iter = 200 if args.quick else 20_000
    quality = Table(f"GPU rows: digits, networks (512, 512, 512), {n_iter} iterations, W1 to the held-out images",
                    "W1", higher_is_better=False, verdicts=False)
    dcr = Table("GPU rows: digits DCR ratio and share of near copies", "value", higher_is_better=True,
                verdicts=False)
    per_iter = Table("GPU rows: seconds per generator iteration, digits, networks (512, 512, 512)", "seconds",
                     higher_is_better=False, verdicts=False)
    X = load_digits().data
    big = dict(latent_dim=16, hidden_layer_sizes=(512, 512, 512))
    for seed in args.seeds:
        order = np.random.RandomState(seed).permutation(len(X))
        train, holdout = X[order[:len(X) // 2]], X[order[len(X) // 2:]]
        LeftInvertibleWGAN(max_iter=2, device=args.device, random_state=seed, **big).fit(train)  # warm-up
        start = time.perf_counter()
        model = LeftInvertibleWGAN(max_iter=n_iter, device=args.device, random_state=seed, **big).fit(train)
        seconds = time.perf_counter() - start
        S = model.sample(N_DRAWS, random_state=seed + 1000)
        quality.add(case, f"LeftInvertibleWGAN on {model.device_}", wasserstein1(S, holdout, random_state=seed),
                    ours=True, seed=seed)
        quality.add(case, TRAIN_ITSELF, wasserstein1(train, holdout), seed=seed)
        dcr.add("DCR ratio", "LeftInvertibleWGAN", dcr_ratio(S, train, holdout), ours=True, seed=seed)
        dcr.add("share of near copies", "LeftInvertibleWGAN", replication_score(S, train), ours=True, seed=seed)
        dcr.add("certified bound", "LeftInvertibleWGAN", model.lower_bound_, ours=True, seed=seed)
        per_iter.add(case, f"LeftInvertibleWGAN on {model.device_}", seconds / n_iter, ours=True, seed=seed)
        cpu_iter = 20
        start = time.perf_counter()
        LeftInvertibleWGAN(max_iter=cpu_iter, device="cpu", random_state=seed, **big).fit(train)
        per_iter.add(case, "LeftInvertibleWGAN on cpu (20 iterations)", (time.perf_counter() - start) / cpu_iter,
                     seed=seed)
        _log(f"gpu rows seed {seed}: {seconds:.1f} s on {model.device_}")
    per_iter.note("Wall clock after a warm-up fit; the device row's time includes the bound's Monte Carlo draws and "
                  "the transfers; the CPU row runs 20 iterations of the same networks.")
    return [quality, dcr, per_iter]


def main():
    extra = argparse.ArgumentParser(add_help=False)
    extra.add_argument("--max-iter", type=int, default=None, help="generator iterations (default 2000; 100 quick)")
    extra.add_argument("--digits-seeds", type=int, default=None, help="seeds of the digits table (default 1)")
    extra.add_argument("--digits-max-iter", type=int, default=None, help="iterations on digits (default --max-iter)")
    extra.add_argument("--injective-max-iter", type=int, default=None,
                       help="iterations of the injective model on the roll (default --max-iter)")
    extra.add_argument("--roll-minutes", type=float, default=None,
                       help="start no further roll seed once another would pass this many minutes (default: no limit)")
    extra.add_argument("--only", default="roll,digits,cost",
                       help="comma-separated tables: roll, digits, cost, gpu (gpu: only when asked)")
    extra.add_argument("--first-seed", type=int, default=0, help="first seed of the roll and cost (default 0)")
    extra.add_argument("--resume", action="store_true",
                       help="start from the saved run's values (parts and seeds measured again replace theirs)")
    own, rest = extra.parse_known_args()
    args = bench_args(__doc__, rest)
    args.seeds = [own.first_seed + s for s in args.seeds]
    args.roll_seeds, args.cost_seeds = list(args.seeds), list(args.seeds)
    args.max_iter = own.max_iter or (100 if args.quick else 2000)
    args.digits_seeds = list(range(own.digits_seeds or 1))
    args.digits_max_iter = own.digits_max_iter or args.max_iter
    args.n_train = 500
    args.roll_minutes = own.roll_minutes
    args.injective_max_iter = own.injective_max_iter or args.max_iter
    only = set(own.only.split(","))
    t = make_tables()
    if own.resume:
        rerun = {}
        if "roll" in only:
            rerun.update(dict.fromkeys(ROLL, set(args.roll_seeds)))
        if "digits" in only:
            rerun.update(dict.fromkeys(DIGITS, set(args.digits_seeds)))
        if "cost" in only:
            rerun.update(dict.fromkeys(COST))  # None: no saved value kept (a cost measures the code of its run)
        resume(t, args, rerun)

    def flush():
        args.seeds = sorted(set(_seeds(t["roll_w1_ho"], ROLL_CASE, TRAIN_ITSELF)) | set(args.seeds))
        roll_bars(t, args)
        digits_bars(t, args)
        cost_bars(t, args)
        emit([table for table in t.values() if table.rows()], args, estimators=["LeftInvertibleWGAN"])

    if only & {"roll", "digits", "cost"}:
        args.seeds = []  # the seeds the saved run records: those in its roll tables
        if "roll" in only:
            run_roll(t, args, flush)
        if "digits" in only:
            measure_digits(t, args)
            flush()
        if "cost" in only:
            measure_cost(t, args)
        flush()
    if "gpu" in only:
        args.seeds = list(args.roll_seeds)
        emit(gpu_tables(args), args, estimators=["LeftInvertibleWGAN"])


if __name__ == "__main__":
    main()
