"""Stage scheduling of DAGs (S14): GumbelScheduler against the greedy split and OR-tools CP-SAT.

Seed paper S14 (Liu et al., "Differentiable Combinatorial Scheduling at Scale", ICML 2024). Every
method is scored by the objective ``mem_weight * peak stage memory + comm_weight * boundaries crossed``
and by its gap to the lower bound ``mem_weight * max(ceil(sum m / D), max m)``, in percent. Ours and
CP-SAT (compact model, one worker, the run's seed) get the same wall-clock budget on the same graphs
and seeds; the greedy split is instant. Each fit's wall and CPU seconds are kept beside it (the
machine is shared: CPU seconds show what a budget bought).

Parts (``--only PART ...``; all CPU parts by default):

* ``random``: random DAGs of 40, 80 and 120 nodes (make_scheduling_dag, 8 levels, D = 6), 10 s each:
  our objective over CP-SAT's; ``random60``: the same at 60 s each.
* ``layered``: layered DAGs of 1,500 and 10,000 nodes (15 levels, D = 10), 10 s each: gaps;
  ``layered60``: the same at 60 s each.
* ``stage0``: ``init="stage0"`` (the paper's start) at 1,500 nodes within 25 s, and at 25 epochs against
  one-hot logits.
* ``constraints``: edge lags (0 or 1 per edge), a stage capacity (the greedy split's peak, with
  mem_weight = 0.01: fewest boundaries crossed under a hard memory cap) and rows ``A_ub s <= b_ub``
  (four pairs of nodes sharing a stage, three early nodes within the first three stages), each on 3
  graphs of 60 nodes, 5 s each: legality and objective over CP-SAT's on the same constraints.
* ``ablation``: what the search needs, on 200-node DAGs at 5 s: polish alone, sampling alone, no
  gradient, no restarts, one-hot logits, fixed temperature, the release's sampler and settings.
* ``released``: the two graphs of the release (vendored), 10 s each.
* ``cost``: CPU seconds per epoch (per-level against a per-node loop) and memory at n = 10,000.
* ``gpu`` (``--device cuda``): 64, 512 and 2,048 samples per epoch on 10,000 nodes against CP-SAT, 60 s
  (the sampler and the polish run on the CPU, the gradient step on the GPU).

``--quick`` shortens every budget to 2 s (3 s for the 60-s parts) and runs one size per part. A run of
some parts keeps the other parts' tables of the results file (each table records the run that made it).
"""

import argparse
import functools
import json
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _bench import Table, bench_args, emit, kept_tables, merge_kept, results_path  # noqa: E402

from sklearn_icml.datasets import load_dcs_graph, make_scheduling_dag  # noqa: E402
from sklearn_icml.optimize import (  # noqa: E402
    CPSATScheduler,
    GreedyStageScheduler,
    GumbelScheduler,
    StageSchedulingProblem,
)

D, MEM_WEIGHT = 10, 100.0
OURS = "GumbelScheduler"


def _pct(gap):
    return 100.0 * gap


def _timed_fit(est, problem):
    wall, cpu = time.perf_counter(), time.process_time()
    est.fit(problem)
    return est, time.perf_counter() - wall, time.process_time() - cpu


def _ours(limit, seed, args, **kw):
    params = dict(max_iter=None, time_limit=limit)
    params.update(kw)
    return GumbelScheduler(random_state=seed, device=args.device, **params)


def _cpsat(limit, seed, **kw):
    return CPSATScheduler(time_limit=limit, n_workers=1, random_state=seed, **kw)


def _budget(args, full):
    return (3.0 if full >= 60 else 2.0) if args.quick else full


def _race(tables, case, problem, seed, limit, args, *, peers=True, ours_kw=None, label=OURS):
    """Ours, greedy and CP-SAT on one problem and seed: objective, gap, seconds (wall and CPU)."""
    objective, gap, seconds = tables
    out = {}
    runs = [(label, _ours(limit, seed, args, **(ours_kw or {})), True)]
    if peers:
        runs += [("greedy split", GreedyStageScheduler(), False), (f"CP-SAT {limit:g} s", _cpsat(limit, seed), False)]
    for name, est, ours in runs:
        est, wall, cpu = _timed_fit(est, problem)
        value = est.objective_ if est.schedule_ is not None else float("nan")
        objective.add(case, name, value, ours=ours, seed=seed)
        gap.add(case, name, _pct(est.gap_) if est.schedule_ is not None else float("nan"), ours=ours, seed=seed)
        seconds.add(case, f"{name}: wall", wall, ours=ours, seed=seed)
        seconds.add(case, f"{name}: CPU", cpu, ours=ours, seed=seed)
        out[name] = est
    return out


def _three(title):
    return (Table(f"{title}: objective", "objective", higher_is_better=False),
            Table(f"{title}: gap to the lower bound", "gap (%)", higher_is_better=False),
            Table(f"{title}: seconds per fit (wall and CPU)", "seconds", higher_is_better=False, verdicts=False))


def random_dags(args, full=10.0):
    limit = _budget(args, full)
    tables = _three(f"Random DAGs, 8 levels, D = 6, {limit:g} s each")
    sizes = (40,) if args.quick else (40, 80, 120)
    ratios, worse_than_greedy, statuses = [], [], []
    for n in sizes:
        for seed in args.seeds:
            problem = StageSchedulingProblem.from_dataset(
                make_scheduling_dag(n, depth=8, n_stages=6, mem_weight=MEM_WEIGHT, random_state=100 + seed))
            fits = _race(tables, f"n = {n}", problem, seed, limit, args)
            cp = fits[f"CP-SAT {limit:g} s"]
            statuses.append(cp.status_)
            ratios.append(fits[OURS].objective_ / cp.objective_)
            worse_than_greedy.append(fits[OURS].objective_ > fits["greedy split"].objective_)
    objective = tables[0]
    objective.bar(f"median of our objective / CP-SAT's over {len(ratios)} DAGs of {sizes[0]} to {sizes[-1]} nodes at "
                  f"{limit:g} s each (target <= 1.03)", float(np.median(ratios)), 1.03)
    objective.bar("DAGs where ours is worse than the greedy split (target 0)", float(sum(worse_than_greedy)), 0.0)
    objective.note(f"ours / CP-SAT per DAG: {', '.join(f'{r:.4f}' for r in ratios)} (max {max(ratios):.4f}); "
                   f"CP-SAT statuses: {', '.join(statuses)}.")
    return list(tables)


def layered(args, full=10.0):
    limit = _budget(args, full)
    tables = _three(f"Layered DAGs, 15 levels, D = 10, {limit:g} s each")
    sizes = (1500,) if args.quick else (1500, 10000)
    for n in sizes:
        ours, greedy, cpsat, statuses = [], [], [], []
        for seed in args.seeds:
            problem = StageSchedulingProblem.from_dataset(
                make_scheduling_dag(n, n_stages=10, mem_weight=MEM_WEIGHT, random_state=seed))
            fits = _race(tables, f"n = {n}", problem, seed, limit, args)
            cp = fits[f"CP-SAT {limit:g} s"]
            ours.append(fits[OURS].gap_)
            greedy.append(fits["greedy split"].gap_)
            cpsat.append(cp.gap_ if cp.schedule_ is not None else np.inf)
            statuses.append(cp.status_)
        gap = tables[1]
        gap.bar(f"n = {n}: our median gap / the greedy split's median gap (target <= 0.75: at least 25 % below)",
                float(np.median(ours) / np.median(greedy)), 0.75)
        if n == sizes[-1]:
            gap.bar(f"n = {n}: seeds where ours beats CP-SAT at {limit:g} s (target: all {len(ours)})",
                    float(sum(o < c for o, c in zip(ours, cpsat))), float(len(ours)), op=">=")
        gap.note(f"n = {n}: CP-SAT statuses {', '.join(statuses)} (no schedule in time counts as n/a).")
    return list(tables)


def stage0(args):
    limit = _budget(args, 25.0)
    epochs = 5 if args.quick else 25
    tables = _three(f"init='stage0' (the paper's start), n = 1,500, D = 10, {limit:g} s")
    fixed = Table(f"init='stage0', n = 1,500, D = 10, {epochs} epochs (no time limit): gap and CPU seconds",
                  "value", higher_is_better=False)
    gaps = []
    for seed in args.seeds:
        problem = StageSchedulingProblem.from_dataset(
            make_scheduling_dag(1500, n_stages=10, mem_weight=MEM_WEIGHT, random_state=seed))
        fits = _race(tables, "n = 1500", problem, seed, limit, args, peers=False,
                     ours_kw=dict(init="stage0"), label="GumbelScheduler init='stage0'")
        tables[1].add("n = 1500", "greedy split", _pct(GreedyStageScheduler().fit(problem).gap_), seed=seed)
        gaps.append(fits["GumbelScheduler init='stage0'"].gap_)
        for slope, name in ((1.0, "GumbelScheduler init='stage0'"),
                            (0.0, "same, one-hot logits (every other stage level)")):
            est = _ours(None, seed, args, init="stage0", max_iter=epochs)
            est._distance_slope = slope
            est, _, cpu = _timed_fit(est, problem)
            fixed.add("gap (%)", name, _pct(est.gap_), ours=slope == 1.0, seed=seed)
            fixed.add("CPU seconds", name, cpu, ours=slope == 1.0, seed=seed)
    tables[1].bar(f"median gap of init='stage0' at n = 1,500 within {limit:g} s, in % (target <= 10)",
                  _pct(float(np.median(gaps))), 10.0)
    tables[1].note("The budget is wall-clock: the CPU seconds rows show how much of it the shared machine gave.")
    fixed.note("A fixed number of epochs does not depend on the machine's load: the logits centred on the best "
               "schedule with a penalty per stage of distance (the default) against a plain one-hot, where a node "
               "pushed past its stage by its parents lands on any later stage.")
    return list(tables) + [fixed]


def _constrained(kind, seed):
    rng = np.random.RandomState(seed)
    base = StageSchedulingProblem.from_dataset(
        make_scheduling_dag(60, depth=6, n_stages=8, mem_weight=MEM_WEIGHT, random_state=200 + seed))
    if kind == "edge lags":
        return base.replace(edge_lag=rng.randint(0, 2, size=base.n_edges))
    if kind == "stage capacity":  # fewest boundaries crossed under a hard cap: the greedy split's own peak
        return base.replace(mem_weight=0.01, stage_capacity=float(base.stage_loads(
            GreedyStageScheduler().fit(base).schedule_).max()))
    rows, rhs = [], []
    for _ in range(4):  # four pairs of nodes of equal level share a stage
        level = rng.randint(base.n_levels - 1)  # every level but the last has at least two nodes here
        a, b = rng.choice(np.flatnonzero(base.levels == level), size=2, replace=False)
        for sign in (1, -1):
            row = np.zeros(base.n_nodes)
            row[a], row[b] = sign, -sign
            rows.append(row)
            rhs.append(0)
    for v in rng.choice(np.flatnonzero(base.levels <= 1), size=3, replace=False):  # early nodes in the first 3 stages
        row = np.zeros(base.n_nodes)
        row[v] = 1
        rows.append(row)
        rhs.append(2)
    return base.replace(A_ub=np.array(rows), b_ub=np.array(rhs, dtype=float))


def constraints(args):
    limit = _budget(args, 5.0)
    tables = _three(f"Constraints, 60-node DAGs, D = 8, {limit:g} s each")
    legal, ratios = [], {}
    for kind in ("edge lags", "stage capacity", "rows A_ub s <= b_ub"):
        for seed in args.seeds:
            problem = _constrained(kind, seed)
            fits = _race(tables, kind, problem, seed, limit, args)
            legal += [problem.is_feasible(f.schedule_) for f in fits.values() if f.schedule_ is not None]
            cp = fits[f"CP-SAT {limit:g} s"]
            ratios.setdefault(kind, []).append(fits[OURS].objective_ / cp.objective_)
    objective = tables[0]
    objective.bar("schedules that break a constraint, all methods (target 0)", float(len(legal) - sum(legal)), 0.0)
    for kind, r in ratios.items():
        objective.note(f"{kind}: ours / CP-SAT per graph {', '.join(f'{x:.4f}' for x in r)}.")
    return list(tables)


def ablation(args):
    limit = _budget(args, 5.0)
    n = 200
    objective = Table(f"What the search needs: n = {n}, D = 10, {limit:g} s each", "gap (%)", higher_is_better=False,
                      verdicts=False)
    variants = {
        "greedy split": None,
        "greedy + polish (max_iter=0)": dict(max_iter=0, time_limit=None),
        "GumbelScheduler (defaults, time budget)": dict(),
        "no polish (sampling and gradient only)": dict(polish=False),
        "no gradient (learning_rate=0)": dict(learning_rate=0.0),
        "no restarts": dict(restart_after=None),
        "one-hot logits (every other stage level)": dict(_distance_slope=0.0),
        "fixed temperature (tau=1)": dict(tau=1.0, tau_final=None),
        "batch_size=8": dict(batch_size=8),
        "release's sampler and settings (paper, tau=50, lr=1, no polish, no restarts)":
            dict(constraint="paper", tau=50.0, tau_final=None, learning_rate=1.0, polish=False, restart_after=None),
    }
    for seed in args.seeds:
        problem = StageSchedulingProblem.from_dataset(
            make_scheduling_dag(n, n_stages=10, mem_weight=MEM_WEIGHT, random_state=seed))
        for name, kw in variants.items():
            if kw is None:
                objective.add(f"n = {n}", name, _pct(GreedyStageScheduler().fit(problem).gap_), seed=seed)
                continue
            params = dict(max_iter=None, time_limit=limit)
            params.update(kw)
            slope = params.pop("_distance_slope", None)
            est = GumbelScheduler(random_state=seed, device=args.device, **params)
            if slope is not None:
                est._distance_slope = slope
            est.fit(problem)
            objective.add(f"n = {n}", name, _pct(est.gap_), ours=True, seed=seed)
    return [objective]


def released(args):
    limit = _budget(args, 10.0)
    tables = _three(f"The release's graphs, D = 10, {limit:g} s each")
    for graph in ("rand_graph_1000_1", "rand_graph_sparse_1000_1"):
        problem = StageSchedulingProblem.from_dataset(load_dcs_graph(graph, n_stages=10, mem_weight=MEM_WEIGHT))
        for seed in args.seeds:
            _race(tables, f"{graph} ({problem.n_nodes} nodes)", problem, seed, limit, args)
        if args.quick:
            break
    return list(tables)


_MEMORY_SCRIPT = """
import resource, sys, time, torch
from sklearn_icml.datasets import make_scheduling_dag
from sklearn_icml.optimize import GumbelScheduler, StageSchedulingProblem
problem = StageSchedulingProblem.from_dataset(make_scheduling_dag({n}, n_stages=10, random_state=0))
GumbelScheduler(batch_size={b}, max_iter=1, init="stage0", random_state=0).fit(problem)  # warm-up
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
cpu, wall = time.process_time(), time.perf_counter()
est = GumbelScheduler(batch_size={b}, max_iter={epochs}, init="stage0", random_state=0).fit(problem)
cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(cpu / est.n_iter_, wall / est.n_iter_, after / 1024.0, before / 1024.0)
"""


def _cpu_seconds(fn, *args, **kwargs):
    """CPU seconds of the call (one torch thread): robust to other jobs on the machine, unlike wall time."""
    start = time.process_time()
    fn(*args, **kwargs)
    return time.process_time() - start


def cost(args):
    from _scheduling_reference import per_node_epoch

    table = Table("CPU seconds per epoch (one thread), n = 1000, B = 32", "CPU seconds", higher_is_better=False)
    problem = StageSchedulingProblem.from_dataset(make_scheduling_dag(1000, n_stages=D, random_state=0))
    epochs = 5 if args.quick else 20
    GumbelScheduler(batch_size=32, max_iter=1, random_state=0).fit(problem)  # warm-up: first torch calls
    per_node_epoch(StageSchedulingProblem.from_dataset(make_scheduling_dag(50, depth=5, random_state=0)), 4, 50.0)
    for seed in args.seeds:
        for constraint in ("paper", "mask"):
            est = GumbelScheduler(batch_size=32, max_iter=epochs, init="stage0", constraint=constraint,
                                  polish=False, random_state=seed)  # sampler, loss and step, as the reference
            table.add("n = 1000, B = 32", f"GumbelScheduler (per level, {constraint})",
                      _cpu_seconds(est.fit, problem) / epochs, ours=True)
        table.add("n = 1000, B = 32", "per-node loop (release-shaped)",
                  _cpu_seconds(per_node_epoch, problem, 32, 50.0, random_state=seed))
    ratio = [r for r in table.rows() if r["ours"]][0]["ratio"]
    table.bar("per-node loop / our per-level epoch, CPU time (paper constraint; target: at least 10x faster)",
              1 / ratio, 10.0, op=">=")
    table.note("Fit setup is included in ours; the polish is off in ours (the reference epoch samples, scores "
               "and steps, and so do these fits).")
    memory = Table("n = 10,000, B = 16: epoch time and peak resident memory (fresh process, one thread)", "value",
                   higher_is_better=False, verdicts=False)
    script = _MEMORY_SCRIPT.format(n=10000, b=16, epochs=3 if args.quick else 10)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                         env=dict(os.environ, OMP_NUM_THREADS="1"))
    cpu, wall, peak, base = map(float, out.stdout.split())
    memory.add("CPU seconds per epoch", "GumbelScheduler", cpu, ours=True)
    memory.add("wall seconds per epoch", "GumbelScheduler", wall, ours=True)
    memory.add("peak RSS (MB), whole process", "GumbelScheduler", peak, ours=True)
    memory.add("peak RSS increase over a 1-epoch warm-up (MB)", "GumbelScheduler", peak - base, ours=True)
    memory.bar("CPU seconds per epoch at n = 10,000, B = 16 (target: under 2 s)", cpu, 2.0, op="<")
    memory.bar("peak RSS in MB at n = 10,000, B = 16 (target: under 2 GB)", peak, 2048.0, op="<")
    return [table, memory]


def gpu(args):
    """GPU rows: large batches on 10,000 nodes against CP-SAT at the same budget."""
    limit = _budget(args, 60.0)
    tables = _three(f"n = 10,000, D = 10 on the GPU, {limit:g} s")
    problem = StageSchedulingProblem.from_dataset(
        make_scheduling_dag(10000, n_stages=10, mem_weight=MEM_WEIGHT, random_state=0))
    for seed in args.seeds:
        for b in (64, 512, 2048):
            _race(tables, "n = 10000", problem, seed, limit, args, peers=(b == 64),
                  ours_kw=dict(batch_size=b), label=f"{OURS} B={b}")
    return list(tables)


PARTS = ("random", "random60", "layered", "layered60", "stage0", "constraints", "ablation", "released", "cost",
         "gpu")
_PREFIXES = (("Random DAGs", "random"), ("Layered DAGs", "layered"), ("init='stage0'", "stage0"),
             ("Constraints", "constraints"), ("What the search needs", "ablation"), ("The release's", "released"),
             ("CPU seconds per epoch", "cost"), ("n = 10,000, B = 16", "cost"),
             ("n = 10,000, D = 10 on the GPU", "gpu"))


def part_of(title):
    """The part of the script that writes the table titled ``title`` (None if unknown)."""
    part = next((part for prefix, part in _PREFIXES if title.startswith(prefix)), None)
    if part in ("random", "layered") and (" 60 s each" in title or " 3 s each" in title):  # 3 s: --quick
        return part + "60"
    return part


def main():
    parts = {"random": random_dags, "random60": functools.partial(random_dags, full=60.0), "layered": layered,
             "layered60": functools.partial(layered, full=60.0), "stage0": stage0, "constraints": constraints,
             "ablation": ablation, "released": released, "cost": cost, "gpu": gpu}
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--only", nargs="+", choices=PARTS, default=None)
    known, rest = pre.parse_known_args()
    args = bench_args(__doc__, rest, default_seeds=3)
    only = known.only or (["gpu"] if args.device != "cpu" else
                          ["random", "random60", "layered", "layered60", "stage0", "constraints", "ablation",
                           "released"])
    # the tables of the parts not run now stay in the results file, each with the run that made it
    kept, kept_estimators = kept_tables(args, part_of, only)
    if kept:
        old = json.loads(results_path(args).read_text(encoding="utf-8"))
        for t in kept:
            t.setdefault("run", {key: old.get("provenance", {}).get(key) for key in ("command", "commit", "dirty",
                                                                                       "start")})
    # first calls (torch and OR-tools imports, kernels) outside the timed fits
    tiny = StageSchedulingProblem.from_dataset(make_scheduling_dag(20, depth=4, n_stages=4, random_state=0))
    _ours(None, 0, args, max_iter=1).fit(tiny)
    _cpsat(1.0, 0).fit(tiny)
    for name in only:
        load = os.getloadavg()[0]
        tables = parts[name](args)
        for t in tables:  # the machine is shared: wall-clock budgets buy less CPU under load
            t.note(f"Load average (1 min, 2 cores shared) at the start and end of this part: {load:.1f} to "
                   f"{os.getloadavg()[0]:.1f}.")
        # each part as soon as it is done: the whole run is long
        emit(tables, args, estimators=["CPSATScheduler", "GreedyStageScheduler", "GumbelScheduler"])
        merge_kept(args, kept, kept_estimators, PARTS, part_of)


if __name__ == "__main__":
    main()
