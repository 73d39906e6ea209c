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
2. Cost: the ten batched students against one student trained alone, the same code and steps on both sides
   (``ExpandAndCluster`` with N = 10 or N = 1, its ``student_timings_``): 3000 full-batch Adam steps (the
   estimator's default), then the joint float64 L-BFGS polish (at most 1000 iterations; the iterations each side
   ran are in a table). Wall clock (the target: <= 3x, Adam and polish together, and Adam alone) and CPU seconds.
3. Deep teachers: 2-4-3-1, 4-6-3-1 and 6-5-4-1 tanh teachers (drawn as above, per seed), students twice as
   wide per layer. Per fit: recovered exactly (the teacher's widths, every teacher unit at |cos| >= 0.99) or the
   best student returned with a warning; the clusters kept per layer; alignment and test MSE against
   ``MLPRegressor`` given the true widths. Targets: no fit returns a network fitting the probes worse than
   ``fallback_ratio`` times the best student without a warning (checked from outside, on ``predict``); the
   exact recovery in at least 80 % of the fits. ``--no-deep`` skips them. ``--deep-variants`` fits the
   2-4-3-1 teacher again with the defaults, with rho = 4 (students 16-12) and with mini-batches of 500 probes
   (the official code trains on mini-batches): the exact recoveries, and how many of the 10 students hold the
   teacher's least-found first-layer unit at ``|cos| >= 0.99`` (rows without a target).
4. Rows without a target (``--extras``): the official rule (``count="units", gamma=0.5``), ``prune=False``,
   rho = 4, a ReLU teacher, a 6-5-4-1 tanh teacher, 1 % output noise; ``--extras-seeds K`` runs them on the
   first K seeds only (each costs minutes per seed on a loaded 2-core box).
5. GPU rows (``--digits``): a 64-32-10 ReLU MLPRegressor trained on scikit-learn's digits (one-hot targets),
   probed with digits plus Gaussian noise, N = 20, rho = 2: recovered widths, alignment, fit time.

``--no-recovery`` / ``--no-cost`` skip those parts; ``--keep-saved`` keeps the saved run's tables that this
run does not measure (each with a note naming the run it comes from), since a run rewrites the results file.
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


def _students_only(n_students, steps, polish_iter, device, seed, X, y):
    """A fit whose cost is the students' training: its ``student_timings_`` time the Adam steps and the polish.

    The stages after the students (one fine-tune step, no pruning, no fallback check) are cheap and are not in
    the timings.
    """
    ec = ExpandAndCluster(n_students=n_students, student_width=10, student_max_iter=steps,
                          student_polish_max_iter=polish_iter, finetune_max_iter=1, prune=False,
                          fallback_ratio=np.inf, device=device, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return ec.fit(X, y).student_timings_


def cost(args):
    steps, polish_iter = (300, 300) if args.quick else (3000, 1000)
    adam, polish, total = f"Adam, {steps} steps", f"L-BFGS polish, up to {polish_iter} iterations", "both"
    table = Table("Training ten batched students against one student alone (width 10, 2000 probes)",
                  "seconds (wall clock)", higher_is_better=False, verdicts=False)
    cpu = Table("CPU seconds of the same training (Adam and polish)", "seconds (CPU)", higher_is_better=False,
                verdicts=False)
    counts = Table("L-BFGS iterations and function evaluations of the polish", "count", higher_is_better=False,
                   verdicts=False)
    ratios = {adam: [], total: []}
    f0, _, _, warm_X, _ = _teacher(0)
    for n_students in (1, 10):  # untimed: the costs of the first calls
        _students_only(n_students, 20, 20, args.device, 0, warm_X, f0(warm_X))
    for seed in args.seeds:
        f, _, _, X, _ = _teacher(seed)
        y = f(X)
        times = {}
        for n_students in (1, 10):
            method = "10 batched students" if n_students == 10 else "1 student"
            t = _students_only(n_students, steps, polish_iter, args.device, seed, X, y)
            times[n_students] = {adam: t["adam_seconds"], total: t["adam_seconds"] + t["polish_seconds"]}
            ours = n_students == 10
            table.add(adam, method, t["adam_seconds"], ours=ours, seed=seed)
            table.add(polish, method, t["polish_seconds"], ours=ours, seed=seed)
            table.add(total, method, times[n_students][total], ours=ours, seed=seed)
            cpu.add(total, method, t["adam_cpu_seconds"] + t["polish_cpu_seconds"], ours=ours, seed=seed)
            counts.add("iterations", method, t["polish_n_iter"], ours=ours, seed=seed)
            counts.add("function evaluations", method, t["polish_n_evaluations"], ours=ours, seed=seed)
        for key in ratios:
            ratios[key].append(times[10][key] / times[1][key])
        print(f"seed {seed}: 10 students / 1 student {ratios[total][-1]:.2f}x (Adam alone "
              f"{ratios[adam][-1]:.2f}x)", flush=True)
    table.bar("time of 10 batched students over 1 student alone, Adam and polish, mean over seeds (target: <= 3)",
              float(np.mean(ratios[total])), 3.0, op="<=")
    table.bar("the same for the Adam steps alone (target: <= 3)", float(np.mean(ratios[adam])), 3.0, op="<=")
    return [table, cpu, counts]


class _SavedTable:
    """A table of the saved results that this run does not measure again, kept as saved (with a note)."""

    def __init__(self, saved, provenance):
        self.saved = dict(saved)
        run = f"kept from the run of {provenance.get('start', '?')} (commit {str(provenance.get('commit'))[:7]})"
        self.saved["notes"] = [*saved.get("notes", []), run]

    def to_dict(self):
        return self.saved

    def to_markdown(self):
        return f"### {self.saved['title']}\n\n({self.saved['notes'][-1]})\n"


def _keep_saved(tables, args):
    """This run's tables with the saved run's other tables kept in place (the saved order)."""
    import json

    from _bench import results_path

    path = results_path(args)
    if path is None or not path.exists():
        return tables
    saved = json.loads(path.read_text(encoding="utf-8"))
    new = {t.title: i for i, t in enumerate(tables)}
    out, done = [], set()
    for t in saved["tables"]:
        if t["title"] not in new:
            out.append(_SavedTable(t, saved["provenance"]))
            continue
        i = new[t["title"]]  # this table and the new ones after it that the saved run did not have
        while i < len(tables) and i not in done and (i == new[t["title"]] or tables[i].title not in {
                u["title"] for u in saved["tables"]}):
            out.append(tables[i])
            done.add(i)
            i += 1
    return out + [t for i, t in enumerate(tables) if i not in done]


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


#: deep teachers: (inputs, hidden widths, students' widths at rho = 2)
DEEP = {"2-4-3-1 tanh": (2, (4, 3), [8, 6]), "4-6-3-1 tanh": (4, (6, 3), [12, 6]),
        "6-5-4-1 tanh": (6, (5, 4), [10, 8])}


def deep(args):
    outcome = Table("Deep teachers: outcome of each fit (N = 10, rho = 2 per layer)", "fits (share of seeds)",
                    higher_is_better=True, verdicts=False)
    kept = Table("Deep teachers: clusters kept per layer (the rebuilt widths before pruning)",
                 "hidden units (teacher's in the case name)", higher_is_better=False, verdicts=False)
    align = Table("Deep teachers: smallest alignment |cos| of a teacher unit to a unit of the returned network",
                  "|cos|", higher_is_better=True)
    mse = Table("Deep teachers: test MSE on 5000 probes", "MSE", higher_is_better=False)
    fit_time = Table("Deep teachers: fit time", "seconds", higher_is_better=False, verdicts=False)
    exact, silent = [], 0
    for case, (d, widths, student_width) in DEEP.items():
        for seed in args.seeds:
            f, coefs, intercepts, X, X_test = _teacher(seed, widths=widths, d=d)
            y, y_test = f(X), f(X_test)
            start = time.perf_counter()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", ConvergenceWarning)
                ec = ExpandAndCluster(n_hidden_layers=len(widths), student_width=student_width, device=args.device,
                                      random_state=seed).fit(X, y)
            fit_time.add(case, "ExpandAndCluster", time.perf_counter() - start, ours=True, seed=seed)
            warned = any(issubclass(w.category, ConvergenceWarning) for w in caught)
            # the property checked from the outside: a returned network that fits the probes worse than
            # fallback_ratio times the best student comes with a warning
            train_mse = _mse(ec, X, y)
            silent += int(train_mse > ec.fallback_ratio * ec.student_losses_.min() and not warned)
            scores = unit_alignment(coefs, intercepts, ec.coefs_, ec.intercepts_, "tanh")
            good = ec.recovered_ and ec.hidden_layer_sizes_ == widths and min(s.min() for s in scores) >= 0.99
            exact.append(good)
            outcome.add(case, "recovered (teacher's widths, every |cos| >= 0.99)", float(good), ours=True, seed=seed)
            outcome.add(case, "best student returned, with a warning", float(not ec.recovered_ and warned),
                        ours=True, seed=seed)
            for layer, sizes in enumerate(ec.cluster_sizes_):
                kept.add(f"{case}, layer {layer + 1}", "ExpandAndCluster", len(sizes), ours=True, seed=seed)
            for layer, s in enumerate(scores):
                align.add(f"{case}, layer {layer + 1}", "ExpandAndCluster", float(s.min()), ours=True, seed=seed)
            ours = _mse(ec, X_test, y_test)
            mse.add(case, "ExpandAndCluster (returned network)", ours, ours=True, seed=seed)
            right = MLPRegressor(hidden_layer_sizes=widths, solver="lbfgs", activation="tanh", max_iter=5000,
                                 tol=1e-12, random_state=seed)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                right.fit(X, y)
            mse.add(case, f"MLPRegressor({widths})", _mse(right, X_test, y_test), seed=seed)
            for layer, s in enumerate(unit_alignment(coefs, intercepts, right.coefs_, right.intercepts_, "tanh")):
                align.add(f"{case}, layer {layer + 1}", f"MLPRegressor({widths})", float(s.min()), seed=seed)
            print(f"seed {seed} {case}: clusters {[len(c) for c in ec.cluster_sizes_]}, returned widths "
                  f"{ec.hidden_layer_sizes_}, recovered {ec.recovered_}, warned {warned}, rebuilt MSE "
                  f"{ec.rebuilt_loss_:.3g}, best student {ec.student_losses_.min():.3g}, test MSE {ours:.3g}",
                  flush=True)
    n = len(exact)
    outcome.bar(f"fits that return a network fitting the probes worse than fallback_ratio times the best student "
                f"without a warning, of {n} (target: 0)", float(silent), 0.0, op="<=")
    outcome.bar(f"deep fits recovered exactly, of {n} (target: at least 80 %, as for the one-layer teacher)",
                float(np.mean(exact)), 0.8, op=">=")
    return [outcome, kept, align, mse, fit_time]


#: settings tried on the 2-4-3-1 teacher (students' widths per layer and other constructor parameters)
DEEP_VARIANTS = {"defaults (students 8-6)": dict(student_width=[8, 6]),
                 "rho 4 (students 16-12)": dict(student_width=[16, 12]),
                 "mini-batches of 500 probes (students 8-6)": dict(student_width=[8, 6], batch_size=500)}


def _students_holding(units, coefs, intercepts, n_students, cos=0.99):
    """Per teacher first-layer unit, the number of students holding a unit at ``|cos| >= cos`` to it."""
    T = np.vstack([coefs[0], intercepts[0][None]]).T
    T = T / np.linalg.norm(T, axis=1, keepdims=True)
    V = units / np.maximum(np.linalg.norm(units, axis=1, keepdims=True), np.finfo(float).tiny)
    best = np.abs(T @ V.T).reshape(len(T), n_students, -1).max(axis=2)
    return (best >= cos).sum(axis=1)


def deep_variants(args):
    case = "2-4-3-1 tanh"
    d, widths, _ = DEEP[case]
    outcome = Table(f"{case} teacher: recovered exactly under other student settings", "fits (share of seeds)",
                    higher_is_better=True, verdicts=False)
    holding = Table(f"{case} teacher: students (of 10) holding its least-found first-layer unit at |cos| >= 0.99",
                    "students", higher_is_better=True, verdicts=False)
    fit_time = Table(f"{case} teacher under other student settings: fit time", "seconds", higher_is_better=False,
                     verdicts=False)
    for seed in args.seeds:
        f, coefs, intercepts, X, _ = _teacher(seed, widths=widths, d=d)
        y = f(X)
        for variant, params in DEEP_VARIANTS.items():
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                ec = ExpandAndCluster(n_hidden_layers=2, device=args.device, random_state=seed, **params).fit(X, y)
            fit_time.add(variant, "ExpandAndCluster", time.perf_counter() - start, ours=True, seed=seed)
            scores = unit_alignment(coefs, intercepts, ec.coefs_, ec.intercepts_, "tanh")
            good = ec.recovered_ and ec.hidden_layer_sizes_ == widths and min(s.min() for s in scores) >= 0.99
            outcome.add(variant, "ExpandAndCluster", float(good), ours=True, seed=seed)
            held = _students_holding(ec.student_units_[0], coefs, intercepts, ec.n_students)
            holding.add(variant, "ExpandAndCluster", int(held.min()), ours=True, seed=seed)
            print(f"seed {seed} {case}, {variant}: recovered {good}, students holding each first-layer unit "
                  f"{held.tolist()}, best student {ec.student_losses_.min():.3g}", flush=True)
    return [outcome, holding, fit_time]


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
    options = {"--extras": extras, "--digits": digits, "--deep-variants": deep_variants, "--no-recovery": None,
               "--no-cost": None,
               "--no-deep": None, "--keep-saved": None}
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
    if "--no-deep" not in chosen:
        tables += deep(args)
    if "--deep-variants" in chosen:
        tables += deep_variants(args)
    if "--extras" in chosen:
        tables += extras(args)
    if "--digits" in chosen:
        tables += digits(args)
    if "--keep-saved" in chosen:
        tables = _keep_saved(tables, args)
    emit(tables, args, estimators=["ExpandAndCluster"])
