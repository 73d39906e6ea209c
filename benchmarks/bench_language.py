"""In-context language learning (S6): in-context n-grams and Kneser-Ney, n-gram heads, architectures.

Tables:
1. REGBENCH test set (300 languages of 256 tokens, seed 0): DFA accuracy and TVD of the in-context n-gram
   models, orders 1-4, each backoff, and the learned smoother (trained on 2000 other languages, one fit
   per seed), each order against the in-context interpolated Kneser-Ney n-gram of the same order (the
   same context, discount chosen by TVD on 60 training languages). Targets: order 3 (katz) accuracy >= 0.90,
   TVD <= 0.25, and >= order 1 + 0.35.
2. Cost of the in-context histograms (orders 1-3) for 1000 x 256 tokens: ours against a
   per-position Python loop (run on 20 sequences, scaled to 1000). Target: at least 10x faster.
3. Architectures at equal compute, on sequences of 128 tokens (2000 training languages, 300 test
   languages): the Transformer of NGramTransformerLM (d_model 64, 2 layers), a 2-layer LSTM and a
   2-block S4D diagonal state-space model, each with and without n-gram heads (1, 2, 3) on the
   embeddings, trained alike (AdamW 1e-3, batches of 16 sequences) and scored along the learning
   curve at doubling step counts (equal steps x batch); the in-context Kneser-Ney and Katz 3-grams
   on the same test sequences as untrained peers. The Transformers train longest, until the vanilla
   one plateaus (or the budget ends). DFA accuracy, TVD, the gain from heads per architecture, and
   training seconds per 100 steps.
4. Placement of the n-gram heads: the Transformer with heads on its hidden states after the first block (the
   paper's n-gram layer), along the same curve, against the in-context Kneser-Ney and Katz 3-grams.
5. With --device cuda (or auto on a GPU machine): d_model 128, 4 layers, max_len 512, 10^4 steps,
   heads on embeddings and on hidden states against vanilla, and optimiser steps per second on the
   GPU against one CPU epoch of the same model.

    python benchmarks/bench_language.py --quick       # 1 seed, short curves
    python benchmarks/bench_language.py --seeds 3
    python benchmarks/bench_language.py --seeds 3 --part architectures   # one part; the others' tables stay
"""

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _bench import Table, bench_args, emit, kept_tables, merge_kept, timed  # noqa: E402
from _language_rivals import ARCHITECTURES, build_lm, hidden_states, histograms, learning_curve, probe_tvd  # noqa: E402
from _peer_kneser_ney import in_context_kneser_ney  # noqa: E402

from sklearn_icml.datasets import make_regular_languages  # noqa: E402
from sklearn_icml.language import (  # noqa: E402
    InContextNGram,
    NGramTransformerLM,
    dfa_accuracy,
    next_token_tvd,
    ngram_head_histograms,
)

SEP = 18
ARCH_LEN = 128
PLATEAU_GAIN = 0.01
KN_DISCOUNTS = (0.1, 0.25, 0.5, 0.75, 1.0)


def _python_loop_histograms(sequences, order, vocab_size):
    """The per-position loop the O(L) histograms replace (an n-gram head's matches, position by position)."""
    out = np.zeros((*sequences.shape, vocab_size), dtype=np.float32)
    for b, seq in enumerate(sequences):
        tokens = [int(t) for t in seq if t >= 0]
        for i in range(len(tokens)):
            for j in range(order, i):
                if all(tokens[j - 1 - k] == tokens[i - k] for k in range(order)):
                    out[b, i, tokens[j]] += 1
            total = out[b, i].sum()
            if total:
                out[b, i] /= total
    return out


def _kneser_ney_discount(train):
    """The discount of the in-context Kneser-Ney 3-gram with the lowest TVD on 60 training languages."""
    X, valid = train.sequences[:60], train.valid_next[:60]
    scores = {d: next_token_tvd(X, valid, in_context_kneser_ney(X, order=3, discount=d)) for d in KN_DISCOUNTS}
    return min(scores, key=scores.get)


def _exact(value):
    """A score to 12 decimals: the same law computed two ways (the in-context unigram of InContextNGram and
    of the Kneser-Ney peer) gives the same value, a tie, not a verdict on a difference at rounding level."""
    return round(float(value), 12)


def ngram_table(train, test, args, discount):
    acc = Table("In-context n-grams on 300 REGBENCH test languages: DFA accuracy", "accuracy", higher_is_better=True)
    tvd = Table("In-context n-grams on 300 REGBENCH test languages: TVD to the automaton's law", "TVD",
                higher_is_better=False)
    X, valid = test.sequences, test.valid_next
    orders = (1, 3) if args.quick else (1, 2, 3, 4)

    def case(order):  # each order is compared with the Kneser-Ney n-gram of the same order
        return f"order {order}"

    for order in orders:
        for backoff in ("katz", "stupid", "none"):
            proba = InContextNGram(order=order, backoff=backoff).fit(X).predict_proba(X)
            name = f"InContextNGram(order={order}, {backoff})"
            for seed in args.seeds:  # deterministic: the same value on every seed, so that verdicts pair up
                acc.add(case(order), name, _exact(dfa_accuracy(X, valid, proba)), ours=True, seed=seed)
                tvd.add(case(order), name, _exact(next_token_tvd(X, valid, proba)), ours=True, seed=seed)
        if order == 3:
            for seed in args.seeds:
                model = InContextNGram(order=3, smoothing="learned", max_iter=5 if args.quick else 20,
                                       random_state=seed, device=args.device).fit(train.sequences)
                proba = model.predict_proba(X)
                acc.add(case(3), "InContextNGram(order=3, learned smoother)", _exact(dfa_accuracy(X, valid, proba)),
                        ours=True, seed=seed)
                tvd.add(case(3), "InContextNGram(order=3, learned smoother)", _exact(next_token_tvd(X, valid, proba)),
                        ours=True, seed=seed)
        proba = in_context_kneser_ney(X, order=order, discount=discount)
        name = f"in-context Kneser-Ney (order={order}, discount={discount:g})"
        for seed in args.seeds:
            acc.add(case(order), name, _exact(dfa_accuracy(X, valid, proba)), seed=seed)
            tvd.add(case(order), name, _exact(next_token_tvd(X, valid, proba)), seed=seed)
    a3, a1 = acc.mean(case(3), "InContextNGram(order=3, katz)"), acc.mean(case(1), "InContextNGram(order=1, katz)")
    acc.bar("in-context 3-gram (Katz back-off) DFA accuracy (target: the paper's in-context 3-gram, close to the "
            "best transformers on REGBENCH, about 0.9)", a3, 0.90, op=">=")
    acc.bar("in-context 3-gram minus in-context unigram, DFA accuracy (target: context matters, +0.35)", a3 - a1,
            0.35, op=">=")
    acc.note("Every model sees only the sequence being predicted, except the learned smoother (trained on the 2000 "
             "training languages). The Kneser-Ney peer is the interpolated Kneser-Ney n-gram of the strings read "
             f"so far (benchmarks/_peer_kneser_ney.py); its discount, {discount:g}, has the lowest TVD of "
             f"{', '.join(f'{d:g}' for d in KN_DISCOUNTS)} on 60 training languages. The deterministic models are "
             "recorded once per seed with the same value; the cases are the orders, each order's rows against the "
             "Kneser-Ney n-gram of that order (at order 1 both are the in-context unigram).")
    tvd.bar("in-context 3-gram (Katz back-off) TVD to the automaton's law (target 0.25, from the paper's "
            "in-context n-gram baselines)", tvd.mean(case(3), "InContextNGram(order=3, katz)"), 0.25, op="<=")
    tvd.note("The released Katz rule gives the left-over mass of every context occurrence that was not (yet) "
             "continued to unseen letters, which raises the TVD; Kneser-Ney's discounting interpolates every "
             "letter with the lower orders instead.")
    return [acc, tvd]


def histogram_table(args):
    table = Table("In-context histograms (orders 1-3) of 1000 x 256 tokens", "seconds", higher_is_better=False)
    data = make_regular_languages(1000, random_state=0)
    for _ in args.seeds:
        ours = timed(lambda: [ngram_head_histograms(data.sequences, k, vocab_size=19) for k in (1, 2, 3)])
        start = time.perf_counter()
        for k in (1, 2, 3):
            _python_loop_histograms(data.sequences[:20], k, 19)
        loop = (time.perf_counter() - start) * len(data.sequences) / 20
        table.add("1000 x 256", "ngram_head_histograms (hashed contexts, one sort)", ours, ours=True)
        table.add("1000 x 256", "per-position Python loop (20 sequences, scaled)", loop)
    table.bar("per-position Python loop / ngram_head_histograms, time (target: vectorised histograms at least 10x "
              "faster than the loop)", table.mean("1000 x 256", "per-position Python loop (20 sequences, scaled)")
              / table.mean("1000 x 256", "ngram_head_histograms (hashed contexts, one sort)"), 10.0, op=">=")
    return table


HEADS = (1, 2, 3)
ARCH_NAMES = {"transformer": "Transformer", "lstm": "LSTM", "s4d": "S4D"}


def _arch_name(kind, orders):
    return f"{ARCH_NAMES[kind]} + n-gram heads" if orders else f"{ARCH_NAMES[kind]} (vanilla)"


def _steps_case(steps):
    return f"{steps} steps"


def _architecture_data():
    train = make_regular_languages(2000, max_len=ARCH_LEN, random_state=1000)
    test = make_regular_languages(300, max_len=ARCH_LEN, exclude=train.automata, random_state=0)
    return train, test


def _budgets(quick):
    """Doubling step counts: the recurrent and state-space rows, and the Transformer rows (until the plateau)."""
    short = (25, 50, 100) if quick else (50, 100, 200, 400)
    long = (25, 50, 100, 200) if quick else (50, 100, 200, 400, 800, 1600, 3200, 6400)
    return short, long


class _Evaluate:
    """DFA accuracy and TVD of a model's next-token distributions on the test languages (picklable)."""

    def __init__(self, X, valid):
        self.X, self.valid = X, valid

    def __call__(self, proba):
        return dfa_accuracy(self.X, self.valid, proba), next_token_tvd(self.X, self.valid, proba)


def _architecture_seed(seed, quick):
    """One seed of tables 3 (a process of its own with ``--jobs``): the curves and the probes' TVDs."""
    train, test = _architecture_data()
    X = test.sequences
    evaluate = _Evaluate(X, test.valid_next)
    short, long = _budgets(quick)
    curves, nets = {}, {}
    for kind in ARCHITECTURES:
        for orders in ((), HEADS):  # the vanilla model first: with heads, the Transformer trains as long
            if kind != "transformer":
                checkpoints = short
            else:
                checkpoints = long if not orders else tuple(curves[(kind, ())])
            net = build_lm(kind, 19, ARCH_LEN, orders, seed)
            stop = _plateaued if kind == "transformer" and not orders else None
            curve = learning_curve(net, train.sequences, X, set(checkpoints), evaluate, ngram_orders=orders,
                                   vocab_size=19, separator=SEP, seed=seed, stop=stop)
            curves[(kind, orders)] = curve
            if kind == "transformer":
                nets[orders] = net
            print(f"# {_arch_name(kind, orders)}, seed {seed}: "
                  + ", ".join(f"{k}: {v[0][0]:.3f}" for k, v in sorted(curve.items())), file=sys.stderr, flush=True)
    return curves, _probe_seed(train, X, nets, seed)


def architecture_tables(args, discount):
    """Tables 3: every architecture with and without heads, scored along its learning curve."""
    train, test = _architecture_data()
    X, valid = test.sequences, test.valid_next
    short, long = _budgets(args.quick)
    acc = Table(f"Architectures at equal compute ({ARCH_LEN}-token sequences): DFA accuracy", "accuracy",
                higher_is_better=True)
    tvd = Table(f"Architectures at equal compute ({ARCH_LEN}-token sequences): TVD", "TVD", higher_is_better=False)
    gain = Table("Gain from n-gram heads at equal compute: DFA accuracy with heads minus without", "accuracy gain",
                 higher_is_better=True, verdicts=False)
    cost = Table(f"Training seconds per 100 optimiser steps (batches of 16 {ARCH_LEN}-token sequences)", "seconds",
                 higher_is_better=False, verdicts=False)
    probe = Table("Probing the Transformers' hidden states for in-context n-gram statistics: TVD of a linear probe",
                  "probe TVD", higher_is_better=False, verdicts=False)
    references = {}
    kn_name = f"in-context Kneser-Ney 3-gram (discount {discount:g})"
    for name, proba in ((kn_name, in_context_kneser_ney(X, order=3, discount=discount)),
                        ("InContextNGram(order=3, katz)", InContextNGram(order=3).fit(X).predict_proba(X))):
        references[name] = (dfa_accuracy(X, valid, proba), next_token_tvd(X, valid, proba))

    if args.jobs > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            done = list(pool.map(_architecture_seed, args.seeds, [args.quick] * len(args.seeds)))
    else:
        done = [_architecture_seed(seed, args.quick) for seed in args.seeds]
    curves, probes = {}, {}
    for seed, (seed_curves, seed_probes) in zip(args.seeds, done):  # in seed order
        for (kind, orders), curve in seed_curves.items():
            curves[(kind, orders, seed)] = curve
            name = _arch_name(kind, orders)
            for steps, ((a, t), _) in sorted(curve.items()):
                acc.add(_steps_case(steps), name, a, ours=bool(orders), seed=seed)
                tvd.add(_steps_case(steps), name, t, ours=bool(orders), seed=seed)
            last = max(curve)
            cost.add("training", name, 100 * curve[last][1] / last, ours=bool(orders), seed=seed)
        for kind in ARCHITECTURES:
            for steps in sorted(set(curves[(kind, (), seed)]) & set(curves[(kind, HEADS, seed)])):
                gain.add(_steps_case(steps), ARCH_NAMES[kind],
                         curves[(kind, HEADS, seed)][steps][0][0] - curves[(kind, (), seed)][steps][0][0],
                         ours=True, seed=seed)
        for (case, name, ours), value in seed_probes.items():
            probe.add(case, name, value, ours=ours, seed=seed)
            probes.setdefault((case, name), []).append(value)
    for case in list(dict.fromkeys(r["case"] for r in acc.rows())):
        for name, (a, t) in references.items():
            for seed in args.seeds:
                acc.add(case, name, a, seed=seed)
                tvd.add(case, name, t, seed=seed)
    _architecture_verdicts(acc, gain, curves, references[kn_name][0], args)
    _probe_claim(probe, probes)
    acc.note(f"Sequences of {ARCH_LEN} tokens (the languages of table 1's generator, truncated), d_model 64 and 2 "
             "layers (blocks) for every model, n-gram heads of orders 1-3 on the embeddings; each row is one "
             "training run per seed scored at each step count (AdamW 1e-3, weight decay 0.01, batches of 16 "
             "sequences, cross-entropy over the scored positions; benchmarks/_language_rivals.py), so equal "
             "step counts are equal compute in sequences seen. The Transformer rows use NGramTransformerLM's "
             "module; the vanilla Transformer stops once a doubling of its steps gains less than "
             f"{PLATEAU_GAIN} accuracy (its plateau; each seed on its own) or after {long[-1]} steps, and the one "
             "with heads trains as long, so that the two are compared at equal compute along the whole curve. The "
             "in-context n-grams are untrained peers, the same in every case.")
    cost.note("Wall-clock seconds of the optimiser steps alone (no evaluation), on the loaded shared machine of the "
              f"provenance line, the seeds in {args.jobs} process(es) at once: compare rows with each other, not "
              "with other pages.")
    return [acc, tvd, gain, cost, probe]


PROBE_CONTEXTS = (1, 2)
PROBE_TRAIN = 200
PROBE_NAMES = ("Transformer (vanilla), trained to its plateau", "Transformer + n-gram heads, trained as long",
               "Transformer (vanilla) at its random initialisation (control)")


def _probe_case(k, layer):
    return f"context of {k} token{'s' if k > 1 else ''}, after block {layer + 1}"


def _probe_seed(train, X, nets, seed):
    """Linear probes from the Transformers' hidden states to the in-context n-gram next-token distributions."""
    Xtr = train.sequences[:PROBE_TRAIN]
    targets = {k: (ngram_head_histograms(Xtr, k, vocab_size=19), ngram_head_histograms(X, k, vocab_size=19))
               for k in PROBE_CONTEXTS}
    models = [(PROBE_NAMES[0], nets[()], (), True), (PROBE_NAMES[1], nets[HEADS], HEADS, True),
              (PROBE_NAMES[2], build_lm("transformer", 19, ARCH_LEN, (), seed), (), False)]
    out = {}
    for name, net, orders, ours in models:
        train_h = hidden_states(net, Xtr, histograms(Xtr, orders, 19))
        test_h = hidden_states(net, X, histograms(X, orders, 19))
        for k, (ytr, yte) in targets.items():
            rtr, rte = ytr.sum(-1) > 0, yte.sum(-1) > 0
            for layer, (htr, hte) in enumerate(zip(train_h, test_h)):
                out[(_probe_case(k, layer), name, ours)] = probe_tvd(htr[rtr], ytr[rtr], hte[rte], yte[rte])
    print(f"# probes, seed {seed}: " + ", ".join(f"{c} / {n.split(',')[0].split(' at ')[0]}: {v:.3f}"
                                                 for (c, n, _), v in out.items()), file=sys.stderr, flush=True)
    return out


def _probe_claim(table, probes):
    last = max(int(case.rsplit(" ", 1)[1]) for case, _ in probes) - 1
    margins = {k: float(np.mean(probes[(_probe_case(k, last), PROBE_NAMES[2])])
                        - np.mean(probes[(_probe_case(k, last), PROBE_NAMES[0])])) for k in PROBE_CONTEXTS}
    table.claim("a Transformer trained on in-context languages carries the in-context n-gram statistics in its "
                "hidden states (a linear probe recovers them better than from the same network untrained)",
                paper="probes decode in-context n-gram statistics from Transformer hidden states (Section 5)",
                reproduced="yes" if all(m > 0.05 for m in margins.values()) else "partly"
                if any(m > 0 for m in margins.values()) else "no",
                measured="; ".join(f"context of {k}: probe TVD lower by {m:+.3f} after the last block"
                                   for k, m in margins.items()))
    table.note(f"Targets: at each position with an earlier occurrence of its context (the last 1 or 2 tokens), the "
               "distribution of the tokens that followed those occurrences (ngram_head_histograms, what an n-gram "
               "head of that order reads). Features: the residual stream after each block. The probe is "
               "softmax(W h + b) fitted by L-BFGS (cross-entropy to the soft targets) on the first "
               f"{PROBE_TRAIN} training languages and scored on the 300 test languages by mean TVD to the targets "
               "(0: the statistics are linearly decodable). The models are the Transformers of the tables above at "
               "the end of training (each seed); the control is the vanilla one's initial weights. The model with "
               "heads receives the 1- to 3-token histograms at its embeddings, so its probes read statistics it is "
               "given rather than computes.")


def _plateaued(curve):
    """Whether the last doubling of steps gained less than 0.01 DFA accuracy."""
    steps = sorted(curve)
    return len(steps) >= 2 and curve[steps[-1]][0][0] - curve[steps[-2]][0][0] < PLATEAU_GAIN


def _architecture_verdicts(acc, gain, curves, kn, args):
    seeds = args.seeds
    vanilla = [curves[("transformer", (), s)] for s in seeds]
    heads = [curves[("transformer", HEADS, s)] for s in seeds]

    def mean_acc(cs, steps):
        return float(np.mean([c[steps][0][0] for c in cs]))

    def final(cs):  # each seed at its plateau (or budget): its last checkpoint
        return float(np.mean([c[max(c)][0][0] for c in cs]))

    def last_doubling(cs):
        return float(np.mean([c[max(c)][0][0] - c[sorted(c)[-2]][0][0] for c in cs]))

    reached = sorted({max(c) for c in vanilla})
    acc.bar(f"vanilla Transformer trained to its plateau: DFA accuracy gained by its last doubling of steps, "
            f"ending at {'/'.join(map(str, reached))} steps (target: at most {PLATEAU_GAIN})", last_doubling(vanilla),
            PLATEAU_GAIN, op="<=")
    common = sorted(set.intersection(*(set(c) for c in vanilla + heads)))
    diffs = {s: mean_acc(heads, s) - mean_acc(vanilla, s) for s in common}
    acc.bar(f"n-gram heads minus vanilla Transformer at equal compute, smallest gain over {common[0]}-{common[-1]} "
            "steps (target: above 0 at every budget, the paper's faster learning with n-gram heads)",
            min(diffs.values()), 0.0, op=">")
    plateau_gain = final(heads) - final(vanilla)
    acc.bar("plateau gain from n-gram heads: the Transformer with heads at its plateau minus the vanilla one at its "
            "plateau or budget, DFA accuracy (target: the paper's gain from n-gram heads, +0.2)", plateau_gain, 0.2,
            op=">=")
    acc.bar("Transformer with n-gram heads at its plateau, DFA accuracy (target 0.85)", final(heads), 0.85, op=">=")
    acc.bar("Transformer with n-gram heads at its plateau minus the in-context Kneser-Ney 3-gram, DFA accuracy "
            "(target: at least the simple in-context rival, 0)", final(heads) - kn, 0.0, op=">=")
    faster = all(d > 0 for d in diffs.values())
    acc.claim("n-gram heads make a small transformer learn in-context languages faster than a vanilla one",
              paper="higher accuracy with n-gram heads at every training budget on REGBENCH",
              reproduced="yes" if faster else "partly" if diffs[common[0]] > 0 else "no",
              measured="; ".join(f"{diffs[s]:+.3f} at {s} steps" for s in common)
              + f"; {plateau_gain:+.3f} at the plateaus")
    short = sorted(set.intersection(*(set(curves[(k, (), s)]) for k in ARCHITECTURES for s in seeds)))
    end = short[-1]
    vals = {k: mean_acc([curves[(k, (), s)] for s in seeds], end) for k in ARCHITECTURES}
    best_rival = max(vals["lstm"], vals["s4d"])
    acc.claim(f"vanilla Transformers learn in-context languages better than recurrent and state-space models at "
              f"equal compute ({end} steps)",
              paper="Transformers clearly ahead of RNNs and SSMs on REGBENCH (Figure 1)",
              reproduced="yes" if vals["transformer"] > best_rival + 0.02 else "partly"
              if vals["transformer"] > best_rival else "no",
              measured=", ".join(f"{ARCH_NAMES[k]} {v:.3f}" for k, v in vals.items()))
    gains = {k: [float(np.mean([curves[(k, HEADS, s)][st][0][0] - curves[(k, (), s)][st][0][0] for s in seeds]))
                 for st in short] for k in ("lstm", "s4d")}
    every = all(g > 0 for gs in gains.values() for g in gs)
    acc.claim("hard-wired n-gram heads help recurrent and state-space models as well",
              paper="n-gram layers improve neural sequence models beyond Transformers (Section 6)",
              reproduced="yes" if every else "partly" if any(g > 0 for gs in gains.values() for g in gs) else "no",
              measured="; ".join(f"{ARCH_NAMES[k]} {min(gs):+.3f} to {max(gs):+.3f}" for k, gs in gains.items()))
    gain.note("Paired by seed: each value is one seed's accuracy with heads minus the same seed's without.")


PLACEMENT_STEPS = (50, 100, 200, 400, 800, 1600, 3200)


def _placement_seed(seed, quick):
    """One seed of the placement table: the Transformer with heads on its hidden states, along its curve."""
    train, test = _architecture_data()
    checkpoints = (25, 50, 100) if quick else PLACEMENT_STEPS
    net = build_lm("transformer", 19, ARCH_LEN, HEADS, seed, heads_on="hidden")
    curve = learning_curve(net, train.sequences, test.sequences, set(checkpoints),
                           _Evaluate(test.sequences, test.valid_next), ngram_orders=HEADS, vocab_size=19,
                           separator=SEP, seed=seed)
    print(f"# Transformer + n-gram heads on hidden states, seed {seed}: "
          + ", ".join(f"{k}: {v[0][0]:.3f}" for k, v in sorted(curve.items())), file=sys.stderr, flush=True)
    return curve


def placement_table(args, discount):
    """The paper's other placement of the heads: on the hidden states after the first block."""
    train, test = _architecture_data()
    X, valid = test.sequences, test.valid_next
    table = Table(f"Placement of the n-gram heads ({ARCH_LEN}-token sequences): the Transformer with heads on its "
                  "hidden states, DFA accuracy", "accuracy", higher_is_better=True)
    if args.jobs > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            done = list(pool.map(_placement_seed, args.seeds, [args.quick] * len(args.seeds)))
    else:
        done = [_placement_seed(seed, args.quick) for seed in args.seeds]
    name = "Transformer + n-gram heads on hidden states (after block 1)"
    tvds = {}
    for seed, curve in zip(args.seeds, done):
        for steps, ((a, t), _) in sorted(curve.items()):
            table.add(_steps_case(steps), name, a, ours=True, seed=seed)
            tvds.setdefault(steps, []).append(t)
    kn_name = f"in-context Kneser-Ney 3-gram (discount {discount:g})"
    references = {kn_name: in_context_kneser_ney(X, order=3, discount=discount),
                  "InContextNGram(order=3, katz)": InContextNGram(order=3).fit(X).predict_proba(X)}
    for case in list(dict.fromkeys(r["case"] for r in table.rows())):
        for ref, proba in references.items():
            for seed in args.seeds:
                table.add(case, ref, dfa_accuracy(X, valid, proba), seed=seed)
    last = max(done[0])
    final = table.mean(_steps_case(last), name)
    table.bar(f"Transformer with n-gram heads on its hidden states after {last} steps minus the in-context "
              "Kneser-Ney 3-gram, DFA accuracy (target: at least the simple in-context rival, 0)",
              final - table.mean(_steps_case(last), kn_name), 0.0, op=">=")
    table.note("The paper's placement of the n-gram layer after the first block: the heads attend over the hidden "
               "states (benchmarks/_language_rivals.py, NGramTransformerLM's ngram_heads_on='hidden'), orders 1-3. "
               "Same data, seeds, optimiser and doubling step counts as the architecture tables (whose Transformer "
               "with heads on the embeddings is the row to compare at equal steps). TVD to the automaton's law at "
               "each step count (mean over seeds): "
               + ", ".join(f"{np.mean(v):.3f} at {k}" for k, v in sorted(tvds.items())) + ".")
    return table


def gpu_tables(args):
    """The GPU rows: a larger model on longer sequences, and steps per second against the CPU."""
    if args.device == "cpu":
        return []
    train = make_regular_languages(2000, max_len=512, random_state=1000)
    test = make_regular_languages(300, max_len=512, exclude=train.automata, random_state=0)
    steps_per_epoch = int(np.ceil(len(train.sequences) / 16))
    epochs = int(np.ceil(10_000 / steps_per_epoch))
    acc = Table(f"GPU: d_model 128, 4 layers, max_len 512, {epochs * steps_per_epoch} steps: DFA accuracy",
                "accuracy", higher_is_better=True)
    speed = Table("GPU: optimiser steps per second (d_model 128, 4 layers, max_len 512)", "steps/s",
                  higher_is_better=True, verdicts=False)
    models = [("heads on embeddings", (1, 2, 3), "embedding"), ("heads on hidden states", (1, 2, 3), "hidden"),
              ("vanilla", (), "embedding")]
    for seed in args.seeds:
        for name, orders, heads_on in models:
            params = dict(d_model=128, n_layers=4, max_len=512, ngram_orders=orders, ngram_heads_on=heads_on,
                          random_state=seed)
            start = time.perf_counter()
            lm = NGramTransformerLM(max_iter=epochs, device=args.device, **params).fit(train.sequences)
            speed.add(args.device, name, epochs * steps_per_epoch / (time.perf_counter() - start), ours=True)
            acc.add("300 test languages", name, lm.score(test.sequences, test.valid_next), ours=bool(orders))
            start = time.perf_counter()
            NGramTransformerLM(max_iter=1, device="cpu", **params).fit(train.sequences)
            speed.add("cpu", name, steps_per_epoch / (time.perf_counter() - start), ours=True)
    return [acc, speed]


PARTS = ("ngrams", "histograms", "architectures", "placement", "gpu")
PART_TITLES = (("ngrams", "In-context n-grams on"), ("histograms", "In-context histograms"),
               ("architectures", "Architectures at equal compute"), ("architectures", "Gain from n-gram heads"),
               ("architectures", "Training seconds per 100"), ("architectures", "Probing the Transformers"),
               ("placement", "Placement of the n-gram heads"), ("gpu", "GPU:"))


def part_of(title):
    """The part of the script that writes the table titled ``title`` (None if unknown)."""
    return next((part for part, prefix in PART_TITLES if title.startswith(prefix)), None)


def parse():
    import argparse

    extra = argparse.ArgumentParser(add_help=False)
    extra.add_argument("--part", default=",".join(PARTS), help="comma-separated parts to run")
    extra.add_argument("--jobs", type=int, default=1,
                       help="processes for the seeds of the architectures and placement parts")
    own, rest = extra.parse_known_args()
    if "-h" in rest or "--help" in rest:
        print(f"extra options: --part {','.join(PARTS)} (the tables of the parts not run stay in the results file); "
              "--jobs N (the seeds of the architectures and placement parts in N processes at once)")
    args = bench_args(__doc__, rest, default_seeds=3, quick_seeds=1)
    args.parts = [p for p in PARTS if p in own.part.split(",")]
    args.jobs = max(1, own.jobs)
    return args


def main():
    args = parse()
    kept, kept_estimators = kept_tables(args, part_of, args.parts)
    estimators = ["InContextNGram", "NGramTransformerLM"]

    def save(tables):
        emit(tables, args, estimators=estimators)
        merge_kept(args, kept, kept_estimators, PARTS, part_of)

    train = make_regular_languages(2000, random_state=1000)
    test = make_regular_languages(300, exclude=train.automata, random_state=0)
    discount = _kneser_ney_discount(train)
    if "ngrams" in args.parts:
        save(ngram_table(train, test, args, discount))
    if "histograms" in args.parts:
        save([histogram_table(args)])
    if "architectures" in args.parts:
        save(architecture_tables(args, discount))
    if "placement" in args.parts:
        save([placement_table(args, discount)])
    if "gpu" in args.parts and args.device != "cpu":
        save(gpu_tables(args))


if __name__ == "__main__":
    main()
