"""Meta-learned likelihood-free BO (MALIBO) against random search, GP-EI, re-evaluated optima and LFBO.

Four questions, each a table (or three):

1. Forrester family (MALIBO's demonstration family): simple regret on held-out
   tasks after n = 1, 4, 8, 16 evaluations; median, mean and share of
   tasks with regret < 0.1.
2. Shifted Forrester family (the optimum moves with the task, so copying
   earlier optima fails): the same.
3. Cost of one ``observe`` + ``suggest`` at 500 observations in 6-D, against
   one ``tell`` + ``ask`` of scikit-optimize's GP-EI optimiser, side by side.
4. MetaBayesSearchCV on the HPO family (an RBF SVM on variants of
   scikit-learn's datasets): evaluations needed to reach the best
   cross-validated score of the full grid, against RandomizedSearchCV on the
   same grid and folds (meta-data: the full grids of the other tasks).

Methods of 1-2: MetaBayesianOptimizer (ours, meta-trained on 256 tasks x 32
random points with the paper's defaults), the same without the gradient-boosting
residual (an ablation, same meta-trained classifier), LikelihoodFreeOptimizer (LFBO, no
meta-learning), uniform random search, scikit-optimize's gp_minimize (GP-EI,
3 initial random points) and the no-model baseline that evaluates the earlier
tasks' best points, most transferable first (ordered by their mean quantile
on the other tasks, read off each task's nearest observation).

Run: python benchmarks/bench_meta_bo.py [--quick] [--seeds N] [--output FILE]
"""

import os
import time
import warnings

import numpy as np
from _bench import Table, bench_args, emit

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402

from sklearn_icml.datasets import make_forrester_tasks, make_hpo_tasks  # noqa: E402
from sklearn_icml.optimize import (  # noqa: E402
    LikelihoodFreeOptimizer,
    MetaBayesianOptimizer,
    MetaBayesSearchCV,
    MetaLFBOClassifier,
)

torch.set_num_threads(1)  # benchmark configuration (shared 2-core machine); the library never does this

CHECKPOINTS = (1, 4, 8, 16)
ABLATION = "MetaBayesianOptimizer(residual=False)"


# -- baselines ---------------------------------------------------------------------------------------------
def run_random(f, n, seed):
    X = np.random.RandomState(seed).uniform(size=(n, 1))
    return np.array([f(x) for x in X])


def run_gp_ei(f, n, seed):
    from skopt import gp_minimize

    with warnings.catch_warnings():
        # skopt's own duplicate guard ("evaluated at point ... before, using random point") warns each time
        warnings.filterwarnings("ignore", message="The objective has been evaluated at point")
        res = gp_minimize(f, [(0.0, 1.0)], n_calls=n, n_initial_points=3, acq_func="EI", random_state=seed)
    return np.asarray(res.func_vals)


def incumbent_order(tasks):
    """Earlier tasks' best points, ordered by their mean quantile on the other tasks (most transferable first)."""
    incumbents = np.array([X[np.argmin(y), 0] for X, y in tasks])
    quantiles = np.empty((len(tasks), len(tasks)))
    for u, (X, y) in enumerate(tasks):
        ranks = np.argsort(np.argsort(y)) / max(len(y) - 1, 1)
        nearest = np.abs(X[:, 0][None, :] - incumbents[:, None]).argmin(axis=1)
        quantiles[:, u] = ranks[nearest]
    np.fill_diagonal(quantiles, np.nan)
    order = np.argsort(np.nanmean(quantiles, axis=1), kind="stable")
    return incumbents[order]


def run_incumbents(f, n, ordered):
    xs = []
    for x in ordered:
        if all(abs(x - x0) > 1e-12 for x0 in xs):
            xs.append(x)
        if len(xs) == n:
            break
    return np.array([f(np.array([x])) for x in xs])


# -- the regret study ----------------------------------------------------------------------------------------
def regret_tables(family, args, sizes):
    title = "Forrester family" if family == "forrester" else "Shifted Forrester family"
    spec = f"{sizes['n_targets']} held-out tasks per seed, meta-data {sizes['n_meta']} tasks x 32 points"
    tables = {
        "median": Table(f"{title}: median simple regret ({spec})", "regret", higher_is_better=False),
        "mean": Table(f"{title}: mean simple regret ({spec})", "regret", higher_is_better=False),
        "share": Table(f"{title}: share of tasks with regret < 0.1 ({spec})", "share", higher_is_better=True),
    }
    seconds = {"meta_fit": [], "malibo_run": [], "gp_run": []}
    n_max = max(CHECKPOINTS)
    for seed in args.seeds:
        meta = make_forrester_tasks(sizes["n_meta"], 32, family=family, random_state=1000 * seed + 1)
        targets = make_forrester_tasks(sizes["n_targets"], 0, family=family, random_state=1000 * seed + 2)
        start = time.perf_counter()
        malibo = MetaBayesianOptimizer(
            bounds=[(0.0, 1.0)], random_state=seed,
            classifier=MetaLFBOClassifier(max_epochs=sizes["max_epochs"], device=args.device)).fit(meta.tasks)
        seconds["meta_fit"].append(time.perf_counter() - start)
        lfbo = LikelihoodFreeOptimizer(bounds=[(0.0, 1.0)], random_state=seed)
        ordered = incumbent_order(meta.tasks)
        # ablation: the same meta-trained classifier without the gradient-boosting residual (fit() reuses it)
        no_residual = MetaBayesianOptimizer(bounds=[(0.0, 1.0)], residual=False, random_state=seed,
                                            classifier=malibo.classifier_).fit()
        curves = {name: [] for name in ("MetaBayesianOptimizer", ABLATION, "LikelihoodFreeOptimizer (LFBO)",
                                        "random search", "skopt GP-EI", "re-evaluate earlier optima")}
        for i, f in enumerate(targets.functions):
            start = time.perf_counter()
            curves["MetaBayesianOptimizer"].append(malibo.minimize(f, n_max).func_vals)
            seconds["malibo_run"].append(time.perf_counter() - start)
            curves[ABLATION].append(no_residual.minimize(f, n_max).func_vals)
            curves["LikelihoodFreeOptimizer (LFBO)"].append(lfbo.minimize(f, n_max).func_vals)
            curves["random search"].append(run_random(f, n_max, 100 * seed + i))
            start = time.perf_counter()
            curves["skopt GP-EI"].append(run_gp_ei(f, n_max, 100 * seed + i))
            seconds["gp_run"].append(time.perf_counter() - start)
            curves["re-evaluate earlier optima"].append(run_incumbents(f, n_max, ordered))
        for name, runs in curves.items():
            regret = np.array([np.minimum.accumulate(v) - f.minimum for v, f in zip(runs, targets.functions)])
            ours = name in ("MetaBayesianOptimizer", ABLATION)
            for n in CHECKPOINTS:
                r = regret[:, n - 1]
                tables["median"].add(f"n={n}", name, float(np.median(r)), ours=ours)
                tables["mean"].add(f"n={n}", name, float(np.mean(r)), ours=ours)
                tables["share"].add(f"n={n}", name, float(np.mean(r < 0.1)), ours=ours)
        print(f"[{family}] seed {seed} done", flush=True)
    note = (f"MetaBayesianOptimizer meta-training: {np.mean(seconds['meta_fit']):.0f} s on average "
            f"({sizes['max_epochs']} epochs at most, early stopping); one 16-evaluation run: "
            f"{np.mean(seconds['malibo_run']):.1f} s; skopt gp_minimize run: {np.mean(seconds['gp_run']):.1f} s.")
    for t in tables.values():
        t.note(note)
    return tables


def check_regret_bars(tables, family):
    rows = {(r["case"], r["method"]): r["mean"] for r in tables["median"].rows()}
    mean_rows = {(r["case"], r["method"]): r["mean"] for r in tables["mean"].rows()}
    share_rows = {(r["case"], r["method"]): r["mean"] for r in tables["share"].rows()}
    ours = "MetaBayesianOptimizer"
    if family == "forrester":
        checks = [
            ("zero-shot (n=1) median regret <= 0.5", rows[("n=1", ours)], rows[("n=1", ours)] <= 0.5),
            ("n=4 success share (regret < 0.1) >= 0.7", share_rows[("n=4", ours)], share_rows[("n=4", ours)] >= 0.7),
            ("n=16 mean regret <= 0.1", mean_rows[("n=16", ours)], mean_rows[("n=16", ours)] <= 0.1),
        ]
        table = tables["median"]
    else:
        ours8 = rows[("n=8", ours)]
        inc8, gp8 = rows[("n=8", "re-evaluate earlier optima")], rows[("n=8", "skopt GP-EI")]
        checks = [
            (f"n=8 median regret <= 0.5 x re-evaluate-optima ({inc8:.4g})", ours8, ours8 <= 0.5 * inc8),
            (f"n=8 median regret <= 0.5 x GP-EI ({gp8:.4g})", ours8, ours8 <= 0.5 * gp8),
        ]
        table = tables["median"]
    for text, value, ok in checks:
        table.note(f"Bar: {text}: measured {value:.4g} (mean over seeds of the per-seed statistic): "
                   f"{'met' if ok else 'MISSED'}.")


# -- cost of one step ------------------------------------------------------------------------------------------
def cost_table(args, n_obs):
    from skopt import Optimizer

    d = 6
    table = Table(f"Cost of one observe + suggest at {n_obs} observations in {d}-D", "seconds",
                  higher_is_better=False)
    case = f"n={n_obs}, d={d}"
    for seed in args.seeds:
        rng = np.random.RandomState(seed)
        centres = rng.uniform(size=(8, d))
        earlier = []
        for c in centres:
            X = rng.uniform(size=(64, d))
            earlier.append((X, ((X - c) ** 2).sum(axis=1)))
        X = rng.uniform(size=(n_obs, d))
        y = ((X - 0.3) ** 2).sum(axis=1) + 0.01 * rng.standard_normal(n_obs)
        x_new, y_new = rng.uniform(size=(1, d)), [0.5]
        malibo = MetaBayesianOptimizer(bounds=[(0.0, 1.0)] * d, random_state=seed,
                                       classifier=MetaLFBOClassifier(max_epochs=5, device=args.device))
        malibo.fit(earlier).observe(X[:-1], y[:-1])
        start = time.perf_counter()
        malibo.observe(x_new, y_new).suggest(1)
        table.add(case, "MetaBayesianOptimizer", time.perf_counter() - start, ours=True)
        lfbo = LikelihoodFreeOptimizer(bounds=[(0.0, 1.0)] * d, random_state=seed).fit()
        lfbo.observe(X[:-1], y[:-1])
        start = time.perf_counter()
        lfbo.observe(x_new, y_new).suggest(1)
        table.add(case, "LikelihoodFreeOptimizer (LFBO)", time.perf_counter() - start)
        gp = Optimizer([(0.0, 1.0)] * d, base_estimator="GP", acq_func="EI", n_initial_points=3,
                       random_state=seed)
        gp.tell(X[:-1].tolist(), list(y[:-1]))
        start = time.perf_counter()
        gp.tell(x_new[0].tolist(), y_new[0])
        gp.ask()
        table.add(case, "skopt GP-EI (Optimizer.tell + ask)", time.perf_counter() - start)
        print(f"[cost] seed {seed} done", flush=True)
    rows = {r["method"]: r["mean"] for r in table.rows()}
    ours, gp = rows["MetaBayesianOptimizer"], rows["skopt GP-EI (Optimizer.tell + ask)"]
    if n_obs == 500:
        table.note(f"Bar: one step at 500 observations in 6-D <= 2 s: measured {ours:.3g} s: "
                   f"{'met' if ours <= 2 else 'MISSED'}.")
    if n_obs == 500:
        table.note(f"Bar: at least 50x cheaper than the GP step: measured {gp / ours:.0f}x: "
                   f"{'met' if gp / ours >= 50 else 'MISSED'}.")
    else:
        table.note(f"GP step / our step: {gp / ours:.0f}x (the bars are stated at 500 observations; the GP's cost "
                   "grows with n^3, ours about linearly).")
    return table


# -- MetaBayesSearchCV on the HPO family -----------------------------------------------------------------------
def fits_to_best(scores, best):
    hit = np.flatnonzero(np.asarray(scores) >= best - 1e-12)
    return int(hit[0]) + 1 if hit.size else np.nan


def hpo_table(args, sizes):
    from sklearn.model_selection import GridSearchCV, RandomizedSearchCV, StratifiedKFold

    n_grid = sizes["grid_size"] ** 2
    table = Table(f"Evaluations to reach the full grid's best 3-fold CV accuracy (RBF SVM, {n_grid}-point grid, "
                  f"{sizes['n_hpo_tasks']} tasks, leave-one-task-out meta-data)", "evaluations",
                  higher_is_better=False)
    missed = {"MetaBayesSearchCV": 0, "RandomizedSearchCV": 0}
    for seed in args.seeds:
        data = make_hpo_tasks(sizes["n_hpo_tasks"], grid_size=sizes["grid_size"], random_state=seed)
        cv = StratifiedKFold(3, shuffle=True, random_state=seed)
        grids = [GridSearchCV(data.estimator, data.param_grid, cv=cv).fit(X, y) for X, y in data.datasets]
        per_seed = {"MetaBayesSearchCV": [], "RandomizedSearchCV": []}
        for t, (X, y) in enumerate(data.datasets):
            best = grids[t].cv_results_["mean_test_score"].max()
            earlier = [g.cv_results_ for u, g in enumerate(grids) if u != t]
            meta = MetaBayesSearchCV(
                data.estimator, data.param_grid, n_iter=sizes["hpo_budget"], meta_results=earlier, cv=cv,
                refit=False, random_state=seed,
                optimizer=MetaBayesianOptimizer(classifier=MetaLFBOClassifier(
                    max_epochs=sizes["hpo_epochs"], device=args.device))).fit(X, y)
            rand = RandomizedSearchCV(data.estimator, data.param_grid, n_iter=n_grid, cv=cv, refit=False,
                                      random_state=seed).fit(X, y)
            for name, search in (("MetaBayesSearchCV", meta), ("RandomizedSearchCV", rand)):
                k = fits_to_best(search.cv_results_["mean_test_score"], best)
                if np.isnan(k):
                    missed[name] += 1
                    k = sizes["hpo_budget"] + 1  # censored: counted as one more than the budget
                per_seed[name].append(k)
        for name, values in per_seed.items():
            table.add("fits to best (mean over tasks)", name, float(np.mean(values)), ours=name == "MetaBayesSearchCV")
            table.add("fits to best (median over tasks)", name, float(np.median(values)),
                      ours=name == "MetaBayesSearchCV")
        print(f"[hpo] seed {seed} done", flush=True)
    rows = {r["method"]: r["mean"] for r in table.rows() if r["case"].startswith("fits to best (mean")}
    table.note(f"GridSearchCV needs all {n_grid} settings. MetaBayesSearchCV budget: {sizes['hpo_budget']} "
               f"settings; runs that never reached the grid's best (counted as budget + 1): "
               f"{missed['MetaBayesSearchCV']}; RandomizedSearchCV samples the whole grid without replacement.")
    ours, rand = rows["MetaBayesSearchCV"], rows["RandomizedSearchCV"]
    table.note(f"Bar: fewer fits than RandomizedSearchCV to reach the grid's best: {ours:.3g} vs {rand:.3g} "
               f"settings (x 3 folds each): {'met' if ours < rand else 'MISSED'}.")
    return table


def main():
    args = bench_args(__doc__, default_seeds=3, quick_seeds=1)
    if args.quick:
        sizes = dict(n_meta=64, n_targets=4, max_epochs=150, n_obs=200, n_hpo_tasks=4, grid_size=6, hpo_budget=16,
                     hpo_epochs=100)
    else:
        sizes = dict(n_meta=256, n_targets=8, max_epochs=2048, n_obs=500, n_hpo_tasks=8, grid_size=8, hpo_budget=32,
                     hpo_epochs=500)
    start = time.perf_counter()
    tables = []
    for family in ("forrester", "shifted"):
        t = regret_tables(family, args, sizes)
        check_regret_bars(t, family)
        tables += [t["median"], t["mean"], t["share"]]
        emit([t["median"], t["mean"], t["share"]])
    cost = cost_table(args, sizes["n_obs"])
    emit(cost)
    hpo = hpo_table(args, sizes)
    emit(hpo)
    tables += [cost, hpo]
    load = os.getloadavg()
    print(f"total {time.perf_counter() - start:.0f} s; load average at the end {load[0]:.1f} / {load[1]:.1f} / "
          f"{load[2]:.1f} (2 cores, shared)")
    if args.output:
        emit(tables, args, file=open(os.devnull, "w"))


if __name__ == "__main__":
    main()
