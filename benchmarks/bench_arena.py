"""Chatbot Arena ranking (S17): BradleyTerryRanker, EloRater, ActivePairSampler and RaterAnomalyDetector.

Tables, each over several seeds, all rows in this one process on the same simulated battles
(``sklearn_icml.datasets.make_arena_battles``: Bradley-Terry outcomes, scores ~ N(0, 1), 10 % ties):

1. Fit + 95 % intervals on 10^5 and 10^6 battles over 50 competitors (target: at most 2 s for
   10^6 on 2 cores), side by side with ``evalica.bradley_terry`` (Rust MM iterations, point
   estimates only) and ``choix.ilsr_pairwise`` (point estimates only, no ties: it gets the decisive
   battles). Peers get their input already in the form they take (Python lists); our time includes
   validation, id encoding and aggregation. The notes give the largest rating gap to each peer.
2. How the fit time grows with the number of battles (ours and evalica).
3. Online Elo on 2x10^5 battles: ``EloRater`` against ``evalica.elo``.
4. Coverage of nominal 95 % intervals of the 10 true ratings (10 competitors, 5000 decisive battles
   per trial): sandwich (the paper's), percentile bootstrap (FastChat's) and pivot bootstrap.
5. Active sampling (paper Eq. 9) against uniform sampling: votes needed until the widest 95 %
   interval of the win matrix is at most 0.2, and until the widest 95 % interval of the
   Bradley-Terry scores (logit scale, inverse-probability weighted for active sampling) is at most
   0.3; 8 competitors (28 pairs), batches of 100 votes.
6. Anomalous voters (paper Section 5.1): fraction flagged at alpha = 0.1 among 200 voters of each
   kind (100 votes each), with the paper's one-sided p-value and the randomized two-sided one.
7. Coverage of the nominal 95 % win-matrix intervals of ``WinMatrixEstimator`` (paper Section 4.1):
   8 competitors (28 pairs), 5000 votes per arena drawn in batches of 100 by ``ActivePairSampler``
   (default ``uniform_mix=0.1``, the pure rule ``uniform_mix=0``) or uniformly; the paper's
   inverse-probability estimate with its CLT interval, and the per-pair means.

``--only NAME ...`` (fit, scaling, elo, coverage, active, anomaly, win_matrix) runs a subset.
"""

import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _bench import Table, bench_args, emit, timed  # noqa: E402

from sklearn_icml.datasets import make_arena_battles, simulate_sampled_battles  # noqa: E402
from sklearn_icml.ranking import (  # noqa: E402
    ActivePairSampler,
    BradleyTerryRanker,
    EloRater,
    RaterAnomalyDetector,
    WinMatrixEstimator,
)

ELO = 400 / math.log(10)


def _load():
    return "load average (1, 5, 15 min): " + ", ".join(f"{v:.2f}" for v in os.getloadavg())


def _peer_inputs(X, y):
    import evalica

    winner = {"model_a": evalica.Winner.X, "model_b": evalica.Winner.Y, "tie": evalica.Winner.Draw}
    ev = (X[:, 0].tolist(), X[:, 1].tolist(), [winner[v] for v in y.tolist()])
    decisive = y != "tie"
    a, b, first = X[decisive, 0], X[decisive, 1], y[decisive] == "model_a"
    pairs = list(zip(np.where(first, a, b).tolist(), np.where(first, b, a).tolist()))
    return ev, pairs


def table_fit(args):
    import choix
    import evalica

    table = Table("Fit + 95 % intervals, 50 competitors, 10 % ties", "seconds", higher_is_better=False)
    sizes = [10**5, 10**6]
    gaps = {}
    for seed in args.seeds:
        for n in sizes:
            case = f"{n:.0e} battles".replace("+0", "")
            X, y = make_arena_battles(n_battles=n, n_competitors=50, string_ids=False, random_state=seed)
            names = np.array([f"model-{m:02d}" for m in range(50)], dtype=object)
            Xs = names[X]
            ours = BradleyTerryRanker()
            table.add(case, "BradleyTerryRanker, sandwich (int ids)", timed(ours.fit, X, y), ours=True)
            table.add(case, "BradleyTerryRanker, sandwich (string ids)", timed(BradleyTerryRanker().fit, Xs, y),
                      ours=True)
            boot = BradleyTerryRanker(ci_method="bootstrap", n_bootstrap=100, random_state=seed)
            table.add(case, "BradleyTerryRanker, 100 bootstrap fits, n_jobs=1", timed(boot.fit, X, y), ours=True)
            ev, pairs = _peer_inputs(X, y)
            start = time.perf_counter()
            res = evalica.bradley_terry(*ev, tolerance=1e-10, limit=10000)
            table.add(case, "evalica.bradley_terry (no intervals)", time.perf_counter() - start)
            theirs = np.log(res.scores.sort_index().to_numpy())
            gaps.setdefault("evalica", []).append(np.max(np.abs(ELO * (theirs - theirs.mean()) + 1000
                                                                - ours.ratings_)))
            if n <= 10**5 or not args.quick:
                start = time.perf_counter()
                c = choix.ilsr_pairwise(50, pairs, alpha=0.0, max_iter=1000, tol=1e-10)
                table.add(case, "choix.ilsr_pairwise (no intervals, no ties)", time.perf_counter() - start)
                drop = BradleyTerryRanker(ties="drop").fit(X, y)
                gaps.setdefault("choix", []).append(np.max(np.abs(ELO * (c - c.mean()) + 1000 - drop.ratings_)))
    for ids in ("int ids", "string ids"):
        table.bar(f"BradleyTerryRanker fit + sandwich intervals on 10^6 battles, 50 competitors, {ids}, seconds "
                  "(target: at most 2 s on 2 cores, an arena's whole history refitted interactively)",
                  table.mean("1e6 battles", f"BradleyTerryRanker, sandwich ({ids})"), 2.0, op="<=")
    table.bar("largest rating gap to evalica.bradley_terry, Elo points (target: 1e-8 of a logit, the "
              "same maximum-likelihood estimate)", max(gaps["evalica"]), 1e-8 * ELO, op="<=")
    table.bar("largest rating gap to choix.ilsr_pairwise (ours with ties='drop'), Elo points (target: 1e-8 of a "
              "logit)", max(gaps["choix"]), 1e-8 * ELO, op="<=")
    table.note("Largest rating gap to the peers (Elo points): evalica (ties as half) "
               f"{max(gaps['evalica']):.2e}; choix ILSR vs ours with ties='drop' {max(gaps['choix']):.2e}.")
    if args.quick:
        table.note("--quick: choix only on 10^5 battles (it takes about 9 s on 10^6).")
    return table


def table_scaling(args):
    import evalica

    table = Table("Fit time against the number of battles (50 competitors, sandwich intervals)", "seconds",
                  higher_is_better=False)
    sizes = [10**4, 10**5, 10**6] if args.quick else [10**4, 10**5, 10**6, 3 * 10**6]
    for seed in args.seeds:
        for n in sizes:
            case = f"n={n:,}"
            X, y = make_arena_battles(n_battles=n, n_competitors=50, string_ids=False, random_state=seed)
            table.add(case, "BradleyTerryRanker", timed(BradleyTerryRanker().fit, X, y), ours=True)
            ev, _ = _peer_inputs(X, y)
            start = time.perf_counter()
            evalica.bradley_terry(*ev, tolerance=1e-10, limit=10000)
            table.add(case, "evalica.bradley_terry", time.perf_counter() - start)
    table.note("Our time is dominated by validation and aggregation (linear in n); the Newton steps work on "
               "the at most 50 x 49 x 3 distinct battles.")
    return table


def table_elo(args):
    import evalica

    table = Table("Online Elo, 2x10^5 battles, 50 competitors", "seconds", higher_is_better=False)
    gap = 0.0
    for seed in args.seeds:
        X, y = make_arena_battles(n_battles=200000, n_competitors=50, string_ids=False, random_state=seed)
        elo = EloRater()
        table.add("2e5 battles", "EloRater", timed(elo.fit, X, y), ours=True)
        ev, _ = _peer_inputs(X, y)
        start = time.perf_counter()
        res = evalica.elo(*ev, k=4.0)
        table.add("2e5 battles", "evalica.elo", time.perf_counter() - start)
        gap = max(gap, np.max(np.abs(res.scores.sort_index().to_numpy() - elo.ratings_)))
    table.note("The sequential update is a Python loop on our side, Rust on evalica's.")
    table.bar("largest rating gap to evalica.elo, Elo points (target: 1e-9, the same sequential update)",
              gap, 1e-9, op="<=")
    return table


def table_coverage(args):
    table = Table("Coverage of nominal 95 % intervals (10 competitors, 5000 battles per trial)",
                  "fraction of true ratings inside their interval", higher_is_better=True)
    trials = 25 if args.quick else 100
    widths = {}
    for seed in args.seeds:
        hits = {"sandwich": [], "bootstrap": [], "bootstrap_pivot": [], "sandwich, simultaneous (all 10)": []}
        for t in range(trials):
            X, y, truth = make_arena_battles(n_battles=5000, n_competitors=10, tie_proba=0.0, string_ids=False,
                                             return_truth=True, random_state=1000 * seed + t)
            true = ELO * truth["scores"] + 1000
            for method in ("sandwich", "bootstrap", "bootstrap_pivot"):
                r = BradleyTerryRanker(ci_method=method, n_bootstrap=100, random_state=t).fit(X, y)
                lo, hi = r.rating_intervals_.T
                hits[method].append(np.mean((lo <= true) & (true <= hi)))
                widths.setdefault(method, []).append(np.mean(hi - lo))
            lo, hi = BradleyTerryRanker(simultaneous=True).fit(X, y).rating_intervals_.T
            hits["sandwich, simultaneous (all 10)"].append(float(np.all((lo <= true) & (true <= hi))))
        for method, h in hits.items():
            table.add(f"{trials} trials", f"BradleyTerryRanker {method}", np.mean(h), ours=True)
    table.note("Mean interval width (Elo points): "
               + ", ".join(f"{m} {np.mean(w):.1f}" for m, w in widths.items())
               + ". The simultaneous row counts trials where all 10 intervals hold at once.")
    sandwich = table.mean(f"{trials} trials", "BradleyTerryRanker sandwich")
    table.bar("sandwich coverage of nominal 95 % intervals, at least (the paper: coverage centred at 1 - alpha)",
              sandwich, 0.92, op=">=")
    table.bar("sandwich coverage of nominal 95 % intervals, at most (the paper: coverage centred at 1 - alpha)",
              sandwich, 0.97, op="<=")
    return table


def _votes_needed(rule, seed, mix=0.0, M=8, batch=100, max_votes=30000, wm_target=0.2, bt_target=0.3):
    rng = np.random.RandomState(seed)
    xi = rng.standard_normal(M)
    sampler = ActivePairSampler(rule, items=np.arange(M), uniform_mix=mix, random_state=seed).fit()
    iu = np.triu_indices(M, 1)
    Xs, ys, ps = [], [], []
    need_wm = need_bt = math.nan
    n = 0
    while n < max_votes and (math.isnan(need_wm) or math.isnan(need_bt)):
        X, p = sampler.sample(batch)
        X = X.astype(int)
        y = (rng.rand(batch) < 1 / (1 + np.exp(-(xi[X[:, 0]] - xi[X[:, 1]])))).astype(int)
        sampler.partial_fit(X, y)
        Xs.append(X), ys.append(y), ps.append(p)
        n += batch
        cnt, s = sampler.counts_[iu], sampler.outcome_sum_[iu]
        if math.isnan(need_wm) and cnt.min() > 1:
            theta = s / cnt
            if np.max(2 * 1.96 * np.sqrt(np.clip(theta * (1 - theta), 1e-3, None) / cnt)) <= wm_target:
                need_wm = n
        if math.isnan(need_bt) and n % 500 == 0:
            XX, yy, pp = np.vstack(Xs), np.concatenate(ys), np.concatenate(ps)
            try:
                r = BradleyTerryRanker().fit(XX, yy, sampling_proba=None if rule == "uniform" else pp)
            except ValueError:  # no finite MLE yet
                continue
            if np.max(np.diff(r.rating_intervals_, axis=1)) / ELO <= bt_target:
                need_bt = n
    return need_wm, need_bt


def table_active(args):
    wm = Table("Active vs uniform sampling: votes until the widest win-matrix 95 % interval <= 0.2 (8 competitors)",
               "votes", higher_is_better=False)
    bt = Table("Active vs uniform sampling: votes until the widest BT-score 95 % interval <= 0.3 logit",
               "votes", higher_is_better=False)
    rows = [("ActivePairSampler (Eq. 9), uniform_mix=0", "ci_reduction", 0.0, True),
            ("ActivePairSampler (Eq. 9), uniform_mix=0.1 (default)", "ci_reduction", 0.1, True),
            ("uniform sampling", "uniform", 0.0, False)]
    seeds = range(3 * len(args.seeds))
    for name, rule, mix, ours in rows:
        for seed in seeds:
            need_wm, need_bt = _votes_needed(rule, seed, mix)
            wm.add("28 pairs", name, need_wm, ours=ours, seed=seed)
            bt.add("28 pairs", name, need_bt, ours=ours, seed=seed)
    default, uniform = rows[1][0], rows[2][0]
    for table, paper, extra in ((wm, "random sampling needs 54 % more votes (6,800 vs 4,400) for win-matrix "
                                 "precision 0.2", 0.54),
                                (bt, "random sampling needs 5 % more votes (17,200 vs 16,400) for BT-score "
                                 "precision 0.3", 0.05)):
        more = table.mean("28 pairs", uniform) / table.mean("28 pairs", default) - 1
        reproduced = "yes" if more >= 0.75 * extra else ("partly" if more > 0 else "no")
        table.claim("active sampling (Eq. 9) reaches the precision with fewer votes than uniform sampling",
                    paper=paper, reproduced=reproduced,
                    measured=f"uniform sampling needs {100 * more:+.0f} % votes against the default sampler")
    wm.note(f"{len(seeds)} simulated arenas (true scores ~ N(0, 1)). Paper (its 213,576-vote replay): 4,400 "
            "adaptive vs 6,800 random votes for win-matrix precision 0.2 (random needs +54 %).")
    bt.note("BT scores from the active votes are fitted with sampling_proba (Eq. 7 weights). Paper: 16,400 vs "
            "17,200 votes for BT-score precision 0.3 (+5 % for random). The inverse-probability weights inflate "
            "the variance of the BT scores, which eats the gain.")
    return [wm, bt]


def table_anomaly(args):
    table = Table("Anomalous voters at alpha = 0.1: fraction flagged (200 voters x 100 votes per kind)",
                  "fraction flagged", higher_is_better=True)
    M = 8
    for seed in args.seeds:
        Xh, yh, truth = make_arena_battles(n_battles=20000, n_competitors=M, string_ids=False, return_truth=True,
                                           random_state=seed)
        xi = truth["scores"]
        rng = np.random.RandomState(seed + 100)
        n = 200 * 100
        a = rng.randint(M, size=n)
        b = (a + 1 + rng.randint(M - 1, size=n)) % M
        groups = np.repeat(np.arange(200), 100)
        honest = rng.rand(n) < 1 / (1 + np.exp(-(xi[a] - xi[b])))
        kinds = {
            "honest voters (false positives)": np.where(rng.rand(n) < 0.1, "tie",
                                                        np.where(honest, "model_a", "model_b")),
            "always backs the weaker": np.where(xi[a] < xi[b], "model_a", "model_b"),
            "coin flips": np.where(rng.rand(n) < 0.5, "model_a", "model_b"),
        }
        for pvalue in ("paper", "randomized"):
            det = RaterAnomalyDetector(alpha=0.1, pvalue=pvalue, random_state=seed).fit(Xh, yh)
            for kind, y in kinds.items():
                flagged = det.test(np.column_stack([a, b]), y, groups)["flagged"].mean()
                table.add(kind, f"RaterAnomalyDetector pvalue={pvalue!r}", flagged, ours=True)
    table.note("Higher is better except for honest voters, where the fraction must stay at most alpha = 0.1. "
               "The paper's one-sided p-value (Eq. 10) cannot react to a vote for the first competitor of the "
               "sorted pair (p = 1), so it misses coin-flippers entirely; the randomized two-sided p-value is "
               "exactly uniform for exchangeable votes.")
    for pvalue in ("paper", "randomized"):
        method = f"RaterAnomalyDetector pvalue={pvalue!r}"
        table.bar(f"{method}: honest voters flagged, at most alpha = 0.1 (a valid test's false-positive rate)",
                  table.mean("honest voters (false positives)", method), 0.1, op="<=")
    for kind in ("always backs the weaker", "coin flips"):
        table.bar(f"RaterAnomalyDetector pvalue='randomized': {kind} flagged (target: at least 0.9)",
                  table.mean(kind, "RaterAnomalyDetector pvalue='randomized'"), 0.9, op=">=")
    paper_rows = [table.mean(kind, "RaterAnomalyDetector pvalue='paper'")
                  for kind in ("always backs the weaker", "coin flips")]
    table.claim("the one-sided p-value of Eq. 10 flags anomalous voters at alpha = 0.1",
                paper="13 of 14 flagged users anomalous among 50 hand-labelled users",
                reproduced="yes" if min(paper_rows) >= 0.9 else ("partly" if max(paper_rows) >= 0.25 else "no"),
                measured=f"flags {paper_rows[0]:.2f} of the voters backing the weaker and {paper_rows[1]:.3f} of "
                         "the coin flippers")
    return table


def _win_matrix_trial(seed, rule, mix, weighted, M=8, T=5000, batch=100):
    """One simulated arena: fraction of the 28 true win rates inside their interval, and the mean width."""
    rng = np.random.RandomState(seed)
    xi = rng.standard_normal(M)
    sampler = ActivePairSampler(rule, items=np.arange(M), uniform_mix=mix, random_state=seed).fit()
    X, y, p = simulate_sampled_battles(sampler, xi, T, batch_size=batch, random_state=rng)
    est = WinMatrixEstimator(items=np.arange(M)).fit(X, y, sampling_proba=p if weighted else None)
    iu = np.triu_indices(M, 1)
    truth = 1 / (1 + np.exp(-(xi[:, None] - xi[None, :])))[iu]
    lo, hi = est.win_matrix_intervals_[..., 0][iu], est.win_matrix_intervals_[..., 1][iu]
    return np.mean((lo <= truth) & (truth <= hi)), np.mean(hi - lo)


def table_win_matrix(args):
    table = Table("Coverage of nominal 95 % win-matrix intervals (8 competitors, 5000 votes per arena)",
                  "fraction of the 28 true win rates inside their interval", higher_is_better=True)
    trials = 20 if args.quick else 40
    rows = [("WinMatrixEstimator inverse-probability, ActivePairSampler uniform_mix=0.1 (default)",
             "ci_reduction", 0.1, True),
            ("WinMatrixEstimator inverse-probability, ActivePairSampler uniform_mix=0 (pure Eq. 9)",
             "ci_reduction", 0.0, True),
            ("WinMatrixEstimator per-pair means, ActivePairSampler uniform_mix=0.1", "ci_reduction", 0.1, False),
            ("WinMatrixEstimator inverse-probability, uniform sampling", "uniform", 0.0, True)]
    widths = {}
    for name, rule, mix, weighted in rows:
        for seed in args.seeds:
            res = [_win_matrix_trial(1000 * seed + t, rule, mix, weighted) for t in range(trials)]
            table.add(f"{trials} arenas", name, np.mean([c for c, _ in res]), ours=True, seed=seed)
            widths.setdefault(name.replace("WinMatrixEstimator ", ""), []).extend(w for _, w in res)
    table.note("Mean interval width: " + "; ".join(f"{m} {np.mean(w):.3f}" for m, w in widths.items()) + ".")
    for name, *_ in rows:
        if name.endswith("per-pair means, ActivePairSampler uniform_mix=0.1"):
            continue  # the per-pair means ignore the sampling probabilities: not the paper's estimate
        cov = table.mean(f"{trials} arenas", name)
        table.bar(f"{name}: coverage, at least (nominal 0.95; the paper's CLT, Section 4.1)", cov, 0.92, op=">=")
        table.bar(f"{name}: coverage, at most (nominal 0.95)", cov, 0.97, op="<=")
    return table


TABLES = {"fit": table_fit, "scaling": table_scaling, "elo": table_elo, "coverage": table_coverage,
          "active": table_active, "anomaly": table_anomaly, "win_matrix": table_win_matrix}


def main():
    import argparse

    extra = argparse.ArgumentParser(add_help=False)
    extra.add_argument("--only", nargs="+", choices=sorted(TABLES), default=list(TABLES))
    own, rest = extra.parse_known_args()
    args = bench_args(__doc__, rest)
    start = time.perf_counter()
    tables = []
    for part in own.only:
        out = TABLES[part](args)
        tables.extend(out if isinstance(out, list) else [out])
    # the estimators of all_estimators(); the sampler, the win matrix and the anomaly test are measured too
    emit(tables, args, estimators=["BradleyTerryRanker", "EloRater"])
    print(f"total {time.perf_counter() - start:.0f} s; {_load()}", file=sys.stderr)


if __name__ == "__main__":
    main()
