"""Expand-and-Cluster (S18): a teacher network's width and weights recovered from its outputs.

Teacher: a 6-5-1 tanh network (weights N(0, 1), biases N(0, 0.3^2), drawn once per seed), 2000 Gaussian
probes for training and 5000 for testing. ``ExpandAndCluster`` trains N = 10 students of width 10 (rho = 2)
with its defaults (3000 Adam steps, then a joint float64 L-BFGS polish of the students to near-zero loss,
gamma = 0.8 counted in students, beta = pi/6, float64 polish of the recovered network, pruning).

1. Recovery: the recovered width, the smallest alignment ``|cos|`` of a teacher unit to a recovered unit
   (``unit_alignment``), and the test MSE against scikit-learn's ``MLPRegressor(hidden_layer_sizes=(5,),
   solver="lbfgs")`` given the true width (the median of 5 initialisations) and the over-parameterised
   ``MLPRegressor((10,), solver="lbfgs")``. Bars: the exact width in >= 4 of 5 seeds, min |cos| >= 0.99,
   test MSE <= 10x the right-sized MLPRegressor's and < 0.1x the over-parameterised one's (every seed).
2. Cost: the ten batched students against one student trained alone (same width and steps). Bar: <= 3x.
3. Rows without a bar (``--extras``): the official rule (``count="units", gamma=0.5``), ``prune=False``,
   rho = 4, a ReLU teacher, a 6-5-4-1 tanh teacher, 1 % output noise; ``--extras-seeds K`` runs them on the
   first K seeds only (each costs minutes per seed on a loaded 2-core box).
4. GPU rows (``--digits``): a 64-32-10 ReLU MLPRegressor trained on scikit-learn's digits (one-hot targets),
   probed with digits plus Gaussian noise, N = 20, rho = 2: recovered widths, alignment, fit time.
"""

import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

from _bench import Table, bench_args, emit  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.neural_network import MLPRegressor  # noqa: E402

from sklearn_icml.neural_network import ExpandAndCluster, unit_alignment  # noqa: E402


def _teacher(seed, widths=(5,), activation="tanh", d=6):
    rng = np.random.RandomState(1000 + seed)
    sizes = [d, *widths, 1]
    coefs = [rng.normal(size=(i, o)) for i, o in zip(sizes[:-1], sizes[1:])]
    intercepts = [0.3 * rng.normal(size=o) for o in sizes[1:]]
    intercepts[-1] = np.zeros(1)
    act = np.tanh if activation == "tanh" else (lambda z: np.maximum(z, 0.0))

    def f(X):
        h = X
        for c, b in zip(coefs[:-1], intercepts[:-1]):
            h = act(h @ c + b)
        return (h @ coefs[-1] + intercepts[-1]).ravel()

    X = rng.normal(size=(2000, d))
    X_test = rng.normal(size=(5000, d))
    return f, coefs, intercepts, X, X_test


def _mlp(width, seed, X, y, activation="tanh"):
    mlp = MLPRegressor(hidden_layer_sizes=(width,), activation=activation, solver="lbfgs", max_iter=5000,
                       tol=1e-12, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return mlp.fit(X, y)


def _mse(model, X, y):
    return float(np.mean((model.predict(X) - y) ** 2))


def recovery(args):
    width = Table("Recovered width of a 6-5-1 tanh teacher (N = 10, rho = 2)", "hidden units",
                  higher_is_better=False)
    align = Table("Smallest alignment |cos| of a teacher unit to a recovered unit", "|cos|", higher_is_better=True)
    mse = Table("Test MSE on 5000 probes", "MSE", higher_is_better=False)
    fit_time = Table("Fit time", "seconds", higher_is_better=False)
    exact, ratio_right, ratio_over = [], [], []
    for seed in args.seeds:
        f, coefs, intercepts, X, X_test = _teacher(seed)
        y, y_test = f(X), f(X_test)
        start = time.perf_counter()
        ec = ExpandAndCluster(student_width=10, device=args.device, random_state=seed).fit(X, y)
        fit_time.add("6-5-1 tanh", "ExpandAndCluster", time.perf_counter() - start, ours=True, seed=seed)
        width.add("6-5-1 tanh", "ExpandAndCluster", ec.hidden_layer_sizes_[0], ours=True, seed=seed)
        exact.append(ec.hidden_layer_sizes_ == (5,))
        align.add("6-5-1 tanh", "ExpandAndCluster",
                  unit_alignment(coefs, intercepts, ec.coefs_, ec.intercepts_, "tanh")[0].min(), ours=True, seed=seed)
        ours = _mse(ec, X_test, y_test)
        mse.add("6-5-1 tanh", "ExpandAndCluster", ours, ours=True, seed=seed)
        start = time.perf_counter()
        right = [_mlp(5, 5 * seed + i, X, y) for i in range(5)]
        fit_time.add("6-5-1 tanh", "MLPRegressor((5,)) x 5 inits", time.perf_counter() - start, seed=seed)
        right_mse = [_mse(m, X_test, y_test) for m in right]
        median = int(np.argsort(right_mse)[len(right_mse) // 2])
        mse.add("6-5-1 tanh", "MLPRegressor((5,)), median of 5 inits", right_mse[median], seed=seed)
        align.add("6-5-1 tanh", "MLPRegressor((5,)), median of 5 inits",
                  unit_alignment(coefs, intercepts, right[median].coefs_, right[median].intercepts_,
                                 "tanh")[0].min(), seed=seed)
        over = _mlp(10, seed, X, y)
        mse.add("6-5-1 tanh", "MLPRegressor((10,))", _mse(over, X_test, y_test), seed=seed)
        ratio_right.append(ours / right_mse[median])
        ratio_over.append(ours / _mse(over, X_test, y_test))
        print(f"seed {seed}: width {ec.hidden_layer_sizes_}, test MSE {ours:.3g}, "
              f"{time.perf_counter() - start:.0f} s of baselines", flush=True)
    n = len(args.seeds)
    width.bar(f"seeds with the exact width 5, of {n} (target: at least 4 of 5, i.e. 80 %)",
              float(np.mean(exact)), 0.8, op=">=")
    align.bar("smallest |cos| over teacher units and seeds (target: >= 0.99)",
              min(align.values("6-5-1 tanh", "ExpandAndCluster")), 0.99, op=">=")
    mse.bar("largest per-seed ratio of our test MSE to the right-sized MLPRegressor's (target: <= 10)",
            max(ratio_right), 10.0, op="<=")
    mse.bar("largest per-seed ratio of our test MSE to MLPRegressor((10,))'s (target: < 0.1)",
            max(ratio_over), 0.1, op="<")
    return [width, align, mse, fit_time]


def cost(args):
    import torch

    from sklearn_icml.neural_network._students import fit_students, init_students

    table = Table("Training ten batched students against one student alone (width 10, 2000 probes)",
                  "seconds", higher_is_better=False)
    steps = 300 if args.quick else 1000
    ratios = []
    for seed in args.seeds:
        f, _, _, X, _ = _teacher(seed)
        Y = f(X)[:, None]
        times = {}
        for n_students in (1, 10):
            module = init_students(n_students, 6, [10], 1, "tanh", torch.Generator().manual_seed(seed))
            start = time.perf_counter()
            fit_students(module, X, Y, steps=steps, learning_rate=1e-2, batch_size=None, device=args.device,
                         random_state=seed, verbose=0, name="bench")
            times[n_students] = time.perf_counter() - start
        table.add(f"{steps} steps", "10 batched students", times[10], ours=True, seed=seed)
        table.add(f"{steps} steps", "1 student", times[1], seed=seed)
        ratios.append(times[10] / times[1])
    table.bar("time of 10 batched students over 1 student alone, mean over seeds (target: <= 3)",
              float(np.mean(ratios)), 3.0, op="<=")
    return [table]


def extras(args):
    width = Table("Recovered widths without a bar", "hidden units (teacher's in the case name)",
                  higher_is_better=False)
    mse = Table("Test MSE without a bar", "MSE", higher_is_better=False)
    cases = {
        "6-5-1 tanh, official rule (units, gamma 0.5)": (dict(student_width=10, count="units", gamma=0.5), {}),
        "6-5-1 tanh, prune=False": (dict(student_width=10, prune=False), {}),
        "6-5-1 tanh, rho 4": (dict(student_width=20), {}),
        "6-5-1 relu": (dict(student_width=10, activation="relu"), dict(activation="relu")),
        "6-5-4-1 tanh": (dict(n_hidden_layers=2, student_width=[10, 8]), dict(widths=(5, 4))),
        "6-5-1 tanh, 1 % output noise": (dict(student_width=10), dict(noise=0.01)),
    }
    for seed in args.seeds[:args.extras_seeds]:
        for case, (params, teacher) in cases.items():
            teacher = dict(teacher)
            noise = teacher.pop("noise", 0.0)
            f, _, _, X, X_test = _teacher(seed, **teacher)
            y = f(X)
            y = y + noise * y.std() * np.random.RandomState(seed).normal(size=len(y))
            ec = ExpandAndCluster(device=args.device, random_state=seed, **params).fit(X, y)
            width.add(case, "ExpandAndCluster", sum(ec.hidden_layer_sizes_), ours=True, seed=seed)
            mse.add(case, "ExpandAndCluster", _mse(ec, X_test, f(X_test)), ours=True, seed=seed)
            print(f"seed {seed} {case}: widths {ec.hidden_layer_sizes_}", flush=True)
    return [width, mse]


def digits(args):
    from sklearn.datasets import load_digits

    table = Table("Digits teacher 64-32-10 (ReLU), N = 20, rho = 2", "value", higher_is_better=True)
    X, labels = load_digits(return_X_y=True)
    X = X / 16.0
    Y = np.eye(10)[labels]
    for seed in args.seeds:
        teacher = MLPRegressor(hidden_layer_sizes=(64, 32), max_iter=300, random_state=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            teacher.fit(X, Y)
        rng = np.random.RandomState(seed)
        probes = np.vstack([X + 0.1 * rng.normal(size=X.shape) for _ in range(2)])
        start = time.perf_counter()
        ec = ExpandAndCluster.from_teacher(teacher, probes, n_hidden_layers=2, student_width=[128, 64],
                                           n_students=20, device=args.device, random_state=seed)
        seconds = time.perf_counter() - start
        scores = unit_alignment(teacher.coefs_, teacher.intercepts_, ec.coefs_, ec.intercepts_, "relu")
        table.add("layer 1 width (teacher 64)", "ExpandAndCluster", ec.hidden_layer_sizes_[0], ours=True, seed=seed)
        table.add("layer 2 width (teacher 32)", "ExpandAndCluster", ec.hidden_layer_sizes_[1], ours=True, seed=seed)
        table.add("median alignment, layer 1", "ExpandAndCluster", float(np.median(scores[0])), ours=True,
                  seed=seed)
        table.add(f"fit seconds ({args.device})", "ExpandAndCluster", seconds, ours=True, seed=seed)
        if args.device != "cpu":  # the same fit on the CPU, for the speed-up
            start = time.perf_counter()
            ExpandAndCluster.from_teacher(teacher, probes, n_hidden_layers=2, student_width=[128, 64],
                                          n_students=20, device="cpu", random_state=seed)
            table.add("fit seconds (cpu)", "ExpandAndCluster", time.perf_counter() - start, ours=True, seed=seed)
    return [table]


if __name__ == "__main__":
    options = {"--extras": extras, "--digits": digits, "--no-recovery": None, "--no-cost": None}
    chosen = [a for a in sys.argv[1:] if a in options]
    extras_seeds = None
    if "--extras-seeds" in sys.argv:
        at = sys.argv.index("--extras-seeds")
        extras_seeds = int(sys.argv[at + 1])
        del sys.argv[at:at + 2]
    sys.argv = [a for a in sys.argv if a not in options]
    args = bench_args(__doc__)
    args.extras_seeds = extras_seeds
    tables = []
    if "--no-recovery" not in chosen:
        tables += recovery(args)
    if "--no-cost" not in chosen:
        tables += cost(args)
    if "--extras" in chosen:
        tables += extras(args)
    if "--digits" in chosen:
        tables += digits(args)
    emit(tables, args, estimators=["ExpandAndCluster"])
