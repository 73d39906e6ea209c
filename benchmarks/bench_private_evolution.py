"""Private Evolution (S9): private synthetic texts and vectors against the baselines a user would try.

Tables:
1. Text: make_topic_corpus (20 public topics, private texts on 2, 2000 private texts one per user),
   500 synthetic texts, T=10, hashing embedder, bigram mask-fill, threshold 1, lookahead 1:
   share of synthetic texts on a private topic at sigma 11.3 and 2.31 (RDP epsilon 1.29 and 7.58 at
   T=11, delta 3e-6), beside a random public subset (it sees no private data) and non-private PE
   (it sees the exact votes). Targets: >= 0.80 at 11.3, >= 0.90 at 2.31; under 15 s a run.
2. Numeric: make_blobs(4000, centers=2, cluster_std=1.5), the first 2000 rows private:
   LogisticRegression trained on class-conditional synthetic data (300 points a class), its test
   accuracy minus the one trained on the real rows. Beside it: sampling the cells of a private
   quadtree histogram per class at the same epsilon (pure DP, so delta 0). Also at d=16
   (make_classification, 4 classes). Target: within 0.02 of real data in every seed.
3. Accounting: the noise multiplier each accountant needs for epsilon 1.29 over 11 rounds at
   delta 3e-6 ("pld" is tight, so it adds less noise for the same budget).
4. Cost: one voting round, 10^5 private points of dimension 384 against 1024 synthetic ones,
   against scikit-learn's brute-force NearestNeighbors. Target: under 2 s and no slower.

smartnoise-synth's AIM is not run: it needs its own virtualenv (it pins an older scikit-learn).

    python benchmarks/bench_private_evolution.py --quick
    python benchmarks/bench_private_evolution.py --seeds 5
"""

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _bench import Table, bench_args, emit, timed  # noqa: E402
from sklearn.datasets import make_blobs, make_classification  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.neighbors import NearestNeighbors  # noqa: E402

from sklearn_icml.datasets import make_topic_corpus, topic_of  # noqa: E402
from sklearn_icml.generative import PrivateEvolution, PrivateEvolutionText, SyntheticDataClassifier  # noqa: E402
from sklearn_icml.generative._pe_voting import nearest_votes  # noqa: E402
from sklearn_icml.metrics import wasserstein1  # noqa: E402
from sklearn_icml.privacy import (  # noqa: E402
    gaussian_rounds_epsilon,
    gaussian_rounds_noise_multiplier,
    private_quadtree_histogram,
)

SIGMAS = (11.3, 2.31)


def text_table(args):
    share = Table("Text: share of synthetic texts on a private topic", "share", higher_is_better=True)
    seconds = Table("Text: seconds per Private Evolution run", "seconds", higher_is_better=False, verdicts=False)
    for seed in args.seeds:
        corpus = make_topic_corpus(5000, 2000, random_state=seed)

        def on_private(texts, corpus=corpus):
            return np.isin(topic_of(texts, corpus.topic_words), corpus.private_topic_ids).mean()

        rng = np.random.RandomState(seed)
        share.add("500 texts", "random public subset", on_private(corpus.public[rng.randint(5000, size=500)]))
        for sigma, name in [(1e-3, "non-private PE (sigma 1e-3, epsilon 5e6)")] + [
                (s, f"PrivateEvolutionText sigma={s}") for s in SIGMAS]:
            pe = PrivateEvolutionText(n_synthetic=500, n_iterations=10, noise_multiplier=sigma, threshold=1.0,
                                      lookahead=1, initial_population=corpus.public, random_state=seed,
                                      device=args.device)
            start = time.perf_counter()
            pe.fit(corpus.private)
            seconds.add("500 texts, T=10", name, time.perf_counter() - start, ours=sigma in SIGMAS)
            share.add("500 texts", name, on_private(pe.synthetic_), ours=sigma in SIGMAS)
    for sigma, target in zip(SIGMAS, (0.80, 0.90)):
        share.bar(f"share on a private topic at sigma {sigma} (target {target}: the paper's synthetic texts follow "
                  "the private distribution at this privacy level)", share.mean("500 texts",
                                                                                f"PrivateEvolutionText sigma={sigma}"),
                  target, op=">=")
    share.note("sigma 11.3 and 2.31 are RDP epsilon 1.29 and 7.58 over 11 rounds at delta 3e-6 (the paper's "
               "settings); the 10 rounds here spend a little less. The non-private row is the ceiling; the random "
               "public subset sees no private text at all.")
    for sigma in SIGMAS:
        seconds.bar(f"seconds per run at sigma {sigma} (target: under 15 s on 2 cores)",
                    seconds.mean("500 texts, T=10", f"PrivateEvolutionText sigma={sigma}"), 15.0, op="<=")
    return [share, seconds]


def _quadtree_sampler(X, y, epsilon, n_per_class, bounds, n_levels, rng):
    """Per class: a private quadtree histogram at epsilon, then points drawn uniformly in its finest cells."""
    Xs, ys = [], []
    for c in np.unique(y):
        hist = private_quadtree_histogram(X[y == c], bounds=bounds, n_levels=n_levels, epsilon=epsilon,
                                          threshold=10.0, random_state=rng)
        leaves = hist.frontier() if hist.frontier().any() else np.ones(len(hist.counts), dtype=bool)
        weight = np.maximum(hist.counts[leaves], 0) + 1e-12
        centers, radii = hist.cell_centers()[leaves], hist.cell_radii()[leaves]
        pick = rng.choice(len(weight), size=n_per_class, p=weight / weight.sum())
        half = radii[pick, None] / np.sqrt(X.shape[1])
        Xs.append(centers[pick] + rng.uniform(-1, 1, size=(n_per_class, X.shape[1])) * half)
        ys.append(np.full(n_per_class, c))
    return np.concatenate(Xs), np.concatenate(ys)


def numeric_tables(args):
    tables = []
    cases = [("blobs d=2", lambda s: make_blobs(4000, centers=2, cluster_std=1.5, random_state=s), (-15, 15), 6),
             ("classification d=16, 4 classes",
              lambda s: make_classification(4000, n_features=16, n_informative=6, n_classes=4, random_state=s),
              (-8, 8), 2)]
    gap = Table("Numeric: test accuracy of LogisticRegression on synthetic data minus on real data", "gap",
                higher_is_better=True)
    w1 = Table("Numeric: Wasserstein-1 distance from the synthetic points to held-out real points", "W1",
               higher_is_better=False)
    for case, make, bounds, n_levels in cases:
        for seed in args.seeds:
            X, y = make(seed)
            Xtr, ytr, Xte, yte = X[:2000], y[:2000], X[2000:], y[2000:]
            real = LogisticRegression(max_iter=1000).fit(Xtr, ytr).score(Xte, yte)
            for sigma in SIGMAS:
                gen = PrivateEvolution(n_synthetic=300, n_iterations=10, noise_multiplier=sigma, lookahead=1,
                                       bounds=bounds, random_state=seed, device=args.device)
                clf = SyntheticDataClassifier(gen, LogisticRegression(max_iter=1000)).fit(Xtr, ytr)
                gap.add(f"{case}, sigma={sigma}", "SyntheticDataClassifier(PrivateEvolution)",
                        clf.score(Xte, yte) - real, ours=True)
                eps = clf.epsilon_spent_
                Xq, yq = _quadtree_sampler(Xtr, ytr, eps, 300, bounds, n_levels, np.random.RandomState(seed))
                gap.add(f"{case}, sigma={sigma}", f"quadtree histogram sampling (epsilon={eps:.2f})",
                        LogisticRegression(max_iter=1000).fit(Xq, yq).score(Xte, yte) - real)
                w1.add(f"{case}, sigma={sigma}", "PrivateEvolution", wasserstein1(clf.generator_.sample()[0], Xte,
                                                                                   random_state=seed), ours=True)
                w1.add(f"{case}, sigma={sigma}", "quadtree histogram sampling", wasserstein1(Xq, Xte,
                                                                                             random_state=seed))
    for case in dict.fromkeys(r["case"] for r in gap.rows() if r["case"].startswith("blobs")):
        worst = min(gap.values(case, "SyntheticDataClassifier(PrivateEvolution)"))
        gap.bar(f"{case}: accuracy on synthetic minus on real data, worst seed (target: within 0.02 of training "
                "on the real data)", worst, -0.02, op=">=")
    gap.note("The target is set on the blobs only; at d=16 with 4 classes, 300 points per class evolved by "
             "isotropic jitter cover the classes poorly (compare with the quadtree baseline there).")
    gap.note("The quadtree baseline spends the same epsilon with delta 0 and samples uniformly inside its finest "
             "heavy cells; it sees the private points only through its noisy counts, like PE through its votes.")
    tables += [gap, w1]
    return tables


def accounting_table(args):
    table = Table("Accounting: noise multiplier for epsilon 1.29 over 11 rounds (delta 3e-6)", "sigma",
                  higher_is_better=False)
    for _ in args.seeds[:1]:
        table.add("epsilon 1.29", "pld (tight)", gaussian_rounds_noise_multiplier(1.29, 3e-6, 11), ours=True)
        table.add("epsilon 1.29", "rdp (as the release)",
                  gaussian_rounds_noise_multiplier(1.29, 3e-6, 11, accountant="rdp"))
    table.note(f"sigma 11.3 costs epsilon {gaussian_rounds_epsilon(11.3, 11, 3e-6, accountant='rdp'):.3f} by RDP "
               f"and {gaussian_rounds_epsilon(11.3, 11, 3e-6):.3f} by PLD.")
    return table


def cost_table(args):
    table = Table("Cost: one voting round, 10^5 x 384 private against 1024 synthetic", "seconds",
                  higher_is_better=False)
    n = 20_000 if args.quick else 100_000
    for seed in args.seeds:
        rng = np.random.RandomState(seed)
        private, synthetic = rng.normal(size=(n, 384)), rng.normal(size=(1024, 384))
        table.add(f"{n} x 384", "nearest_votes (blocked torch matmul)",
                  timed(nearest_votes, private, synthetic, args.device), ours=True)
        table.add(f"{n} x 384", "nearest_votes (blocked numpy)", timed(nearest_votes, private, synthetic, None),
                  ours=True)
        nn = NearestNeighbors(n_neighbors=1, algorithm="brute").fit(synthetic)
        table.add(f"{n} x 384", "sklearn NearestNeighbors(brute)", timed(nn.kneighbors, private))
    case = f"{n} x 384"
    best = min(table.mean(case, "nearest_votes (blocked torch matmul)"),
               table.mean(case, "nearest_votes (blocked numpy)"))
    table.bar(f"one voting round on {case}, seconds, faster of our two paths (target: under 2 s)", best, 2.0, op="<=")
    table.bar("our faster path / sklearn NearestNeighbors, time (target: no slower)",
              best / table.mean(case, "sklearn NearestNeighbors(brute)"), 1.0, op="<=")
    table.note("Memory: blocks of 8192 rows, so the distance block is 8192 x 1024 whatever the number of private "
               "points.")
    return table


def main():
    args = bench_args(__doc__, default_seeds=5, quick_seeds=2)
    emit(text_table(args) + numeric_tables(args) + [accounting_table(args), cost_table(args)], args,
         estimators=["PrivateEvolution", "PrivateEvolutionText", "SyntheticDataClassifier"])


if __name__ == "__main__":
    main()
