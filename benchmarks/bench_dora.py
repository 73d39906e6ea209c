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
"""

import copy
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

from _bench import Table, bench_args, emit  # noqa: E402

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


def peft_dora_fit(module, X, y, r, seed, classify, n_classes):
    """peft's DoRA trained by the loop our estimators use: AdamW, shuffled mini-batches, same loss."""
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
    opt = torch.optim.AdamW(params, lr=LR, weight_decay=0.0)
    gen = torch.Generator().manual_seed(seed)
    n = len(X)
    for _ in range(FT_EPOCHS):
        model.train()
        order = torch.randperm(n, generator=gen).to(device)
        for lo in range(0, n, BATCH):
            idx = order[lo:lo + BATCH]
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


def main(argv=None):
    global PEFT
    args = bench_args(__doc__, argv)
    configure(args)
    try:
        import peft as PEFT
    except ImportError:
        PEFT = None
    torch.set_num_threads(1)  # benchmark configuration (shared 2-core machine); the library never does this
    quality, params_table, time_table = quality_tables(args)
    speed = speed_table(args)
    analysis, figure = magnitude_direction_analysis(args)
    emit([quality["regression"], quality["classification"], params_table, time_table, speed, analysis], args,
         estimators=["DoRAClassifier", "DoRARegressor"], figures=[figure] if figure and not QUICK else [])


if __name__ == "__main__":
    main()
