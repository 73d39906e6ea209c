"""Overhead of the shared training layer: epoch time through the Trainer against the hand loops it replaced.

These estimators used to carry their own torch loops; they now train through
``sklearn_icml.utils.Trainer`` (skorch's ``NeuralNet`` inside). For each one this script
builds the same network from the same seed, on the same data, and trains it for the same number of
epochs twice: with a copy of the estimator's former hand-written loop (kept below, verbatim up to
variable names) and through the layer (with the train step the estimator now uses, and the stopping
rule switched off so both run every epoch). It reports

1. CPU seconds per epoch (process time, one torch thread: robust to other jobs on the machine), the
   target being a ratio of at most 1.1 against the hand loop;
2. the held-out score of the two trained networks (R^2, or Harrell's c-index), which must agree
   within seed noise (the batch order and the initial weights are the same; the survival losses now
   sort each batch inside the train step, which changes the dropout masks' order of draws).

Cases: ``DoRARegressor`` (DoRA r=4 on a pre-trained 32x32 MLP, 300 rows, batch 64),
``CoxSurvival`` with Adam (MLP 16, batch 64) and with L-BFGS (full batch, one layer epoch per
L-BFGS iteration against torch's single long ``step`` call; the time is per 200-iteration solve),
``PrototypeSurvival`` (transformer fusion, Cox loss, batch 40, warm-up + cosine per step) and
the step-budgeted stream of ``DySLIMRegressor`` (its objective at lambda = 0, the one-step MSE of a
residual MLP 3-64-64-3, batch 256, 400 Adam steps with gradient clipping over successive seeded
permutations of 2000 rows; ``Trainer(loop="steps")`` against the plain loop; an epoch is a
pass of 8 steps).
"""

import copy
import math
import os
import sys
import time
import warnings

import numpy as np
import torch
from sklearn.metrics import r2_score

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _bench import Table, bench_args, emit  # noqa: E402

from sklearn_icml.datasets import make_lorenz63, make_weight_shift_tasks  # noqa: E402
from sklearn_icml.dynamics import make_rollout_dataset  # noqa: E402
from sklearn_icml.finetune import DoRARegressor, apply_adapters  # noqa: E402
from sklearn_icml.survival import (  # noqa: E402
    CoxSurvival,
    Surv,
    concordance_index,
    cox_partial_likelihood_loss,
)
from sklearn_icml.survival._fusion_net import FusionNet  # noqa: E402
from sklearn_icml.utils import Trainer, resolve_device, to_tensor, torch_generator  # noqa: E402

QUICK = False
REPEATS = 5


def cpu_seconds(fn, *args, **kwargs):
    start = time.process_time()
    out = fn(*args, **kwargs)
    return time.process_time() - start, out


# -- DoRA: the former loop of finetune/_estimators.py --------------------------------------------

def dora_old_loop(module, Xt, Yt, loss_fn, epochs, batch, lr, shuffle_gen):
    params = [p for p in module.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    n = Xt.shape[0]
    for _ in range(epochs):
        module.train()
        order = torch.randperm(n, generator=shuffle_gen).to(Xt.device)
        total = torch.zeros((), dtype=torch.float64, device=Xt.device)
        for lo in range(0, n, batch):
            idx = order[lo:lo + batch]
            loss = loss_fn(module(Xt[idx]), Yt[idx])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            total += loss.detach().to(torch.float64) * len(idx)
        float(total.item()) / n
    module.eval()


def dora_case(seed, device, epochs):
    Xs, ys, Xt, yt, Xe, ye = make_weight_shift_tasks(1500, 300, 1000, random_state=seed)
    pre = DoRARegressor(method="full", hidden_layer_sizes=(32, 32), activation="tanh", max_iter=25,
                        random_state=seed).fit(Xs, ys).module_
    y_scale = float(np.std(yt)) or 1.0

    def loss_fn(out, target):
        return (((out.reshape(target.shape) - target) / y_scale) ** 2).mean()

    def build():
        module = copy.deepcopy(pre)
        apply_adapters(module, "dora", r=4, freeze=True, random_state=seed)
        for p in module.head.parameters():
            p.requires_grad_(True)
        return module.to(device)

    Y = yt.reshape(-1, 1)

    def old():
        module = build()
        dora_old_loop(module, to_tensor(Xt, device, torch.float32), to_tensor(Y, device, torch.float32), loss_fn,
                      epochs, 64, 1e-3, torch_generator(seed))
        return module

    def new():
        return Trainer(loss=loss_fn, max_iter=epochs, n_iter_no_change=epochs, batch_size=64, learning_rate=1e-3,
                       device=device, random_state=torch_generator(seed)).fit(build(), Xt, Y).module

    def score(module):
        with torch.no_grad():
            pred = module.to("cpu")(torch.as_tensor(Xe, dtype=torch.float32)).numpy().ravel()
        return r2_score(ye, pred)

    return old, new, score


# -- CoxSurvival: the former Adam and L-BFGS loops of survival/_cox.py ---------------------------

def cox_data(seed):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(600, 5))
    eta = X[:, 0] - 0.5 * X[:, 1] + 0.5 * np.tanh(2 * X[:, 2])
    y = Surv.from_arrays(rng.rand(600) < 0.7, rng.exponential(np.exp(-eta)))
    return X[:400], y[:400], X[400:], y[400:]


def cox_module(X, y, seed):
    """The log-risk network of ``CoxSurvival(hidden_layer_sizes=(16,), random_state=seed)`` as its fit starts.

    The fitted ``module_`` (float64, the training standardisation inside) with its weights redrawn as the fit
    draws them: torch's ``nn.Linear`` default, layer by layer from the input, from the seeded generator.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        net = CoxSurvival(hidden_layer_sizes=(16,), solver="adam", max_iter=1, random_state=seed).fit(X, y).module_
    generator = torch_generator(seed)
    with torch.no_grad():
        for layer in (m for m in net.modules() if isinstance(m, torch.nn.Linear)):
            torch.nn.init.kaiming_uniform_(layer.weight, a=math.sqrt(5), generator=generator)
            if layer.bias is not None:
                bound = 1.0 / math.sqrt(layer.in_features)
                torch.nn.init.uniform_(layer.bias, -bound, bound, generator=generator)
    return net


def cox_penalty(module, alpha):
    return 0.5 * alpha * sum((layer.weight ** 2).sum() for layer in module.linears())


def cox_train_step(alpha, n_total, presorted=False):
    """CoxSurvival's batch objective on its MLP: partial likelihood / batch size + penalty / n_samples."""
    def step(module, xb, yb):
        loss = cox_partial_likelihood_loss(module(xb)[:, 0], yb[:, 0], yb[:, 1], normalizer=xb.shape[0],
                                           presorted=presorted)
        return loss + cox_penalty(module, alpha) / n_total

    return step


# the former loops sorted each batch in numpy and took the loss on the sorted batch with these two helpers

def cox_sort_keys(time):
    """Descending-time order and, per sorted position, the last index of its tied-time group (Breslow's ties)."""
    order = np.argsort(-time, kind="mergesort")
    t_sorted = time[order]
    return order, np.searchsorted(-t_sorted, -t_sorted, side="right") - 1


def cox_negative_log_likelihood(log_risk, event, last, normalizer):
    """Breslow negative log partial likelihood on samples sorted by descending time."""
    return -((log_risk - torch.logcumsumexp(log_risk, dim=0)[last]) * event).sum() / normalizer


def cox_old_adam(module, X, event, time_, epochs, batch_size, lr, alpha, generator, device):
    optimizer = torch.optim.Adam(module.parameters(), lr=lr)
    n = X.shape[0]
    for _ in range(epochs):
        perm = torch.randperm(n, generator=generator).numpy()
        total = 0.0
        for start in range(0, n, batch_size):
            idx = perm[start:start + batch_size]
            if not event[idx].any():
                continue
            order, last = cox_sort_keys(time_[idx])
            idx = idx[order]
            Xt = to_tensor(X[idx], device, torch.float64)
            et = to_tensor(event[idx].astype(np.float64), device, torch.float64)
            optimizer.zero_grad()
            loss = (cox_negative_log_likelihood(module(Xt)[:, 0], et, to_tensor(last, device), len(idx))
                    + cox_penalty(module, alpha) / n)
            loss.backward()
            optimizer.step()
            total += float(loss.detach()) * len(idx)


def cox_old_lbfgs(module, X, event, time_, max_iter, alpha, device):
    n = X.shape[0]
    order, last = cox_sort_keys(time_)
    Xt = to_tensor(X[order], device, torch.float64)
    et = to_tensor(event[order].astype(np.float64), device, torch.float64)
    lt = to_tensor(last, device)
    optimizer = torch.optim.LBFGS(module.parameters(), lr=1.0, max_iter=max_iter, tolerance_grad=1e-9,
                                  tolerance_change=0.0, history_size=20, line_search_fn="strong_wolfe")

    def closure():
        optimizer.zero_grad()
        loss = cox_negative_log_likelihood(module(Xt)[:, 0], et, lt, n) + cox_penalty(module, alpha) / n
        loss.backward()
        return loss

    optimizer.step(closure)


def cox_case(seed, device, epochs, solver):
    X, y, Xe, ye = cox_data(seed)
    event, time_ = y["event"], y["time"]
    target = np.column_stack([time_, event]).astype(np.float64)
    alpha = 1.0
    step = cox_train_step(alpha, X.shape[0])
    initial = cox_module(X, y, seed)

    def old():
        module = copy.deepcopy(initial).to(device)
        if solver == "adam":
            cox_old_adam(module, X, event, time_, epochs, 64, 1e-2, alpha, torch_generator(seed + 1), device)
        else:
            cox_old_lbfgs(module, X, event, time_, 200, alpha, device)
        return module

    def new():
        module = copy.deepcopy(initial)
        if solver == "adam":
            return Trainer(train_step=step, max_iter=epochs, n_iter_no_change=epochs, batch_size=64,
                           learning_rate=1e-2, optimizer="adam", device=device,
                           random_state=torch_generator(seed + 1)).fit(module, X, target).module
        order = np.argsort(-time_, kind="mergesort")
        return Trainer(loop="lbfgs", train_step=cox_train_step(alpha, X.shape[0], True), max_iter=200,
                       learning_rate=1.0, tol=1e-9, device=device, random_state=seed,
                       optimizer_options=dict(tolerance_change=0.0, history_size=20)).fit(module, X[order],
                                                                                         target[order]).module

    def score(module):
        with torch.no_grad():
            risk = module.to("cpu")(torch.as_tensor(Xe))[:, 0].numpy()
        return concordance_index(ye, risk)

    return old, new, score


# -- DySLIMRegressor: a step budget over successive permutations ---------------------------------

def dyslim_case(seed, device, steps):
    """The step budget at lambda = 0 against the plain loop it equals (Adam, clipping at 1, one batch per step)."""
    X, y = make_rollout_dataset(make_lorenz63(25, 101, random_state=seed))
    X, y, Xe, ye = X[:2000], y[:2000], X[2000:], y[2000:]
    gen = torch.Generator().manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(3, 64), torch.nn.SiLU(), torch.nn.Linear(64, 64), torch.nn.SiLU(),
                              torch.nn.Linear(64, 3))
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(0.1 * torch.randn(p.shape, generator=gen))

    def old():
        module = copy.deepcopy(net).to(device)
        Xt, Yt = to_tensor(X, device, torch.float32), to_tensor(y, device, torch.float32)
        g = torch_generator(seed)
        order = torch.cat([torch.randperm(len(X), generator=g) for _ in range(math.ceil(steps * 256 / len(X)))])
        opt = torch.optim.Adam(module.parameters(), lr=1e-3)
        for k in range(steps):
            idx = order[k * 256:(k + 1) * 256].to(device)
            loss = ((Xt[idx] + module(Xt[idx]) - Yt[idx]) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(module.parameters(), 1.0)
            opt.step()
        return module.to("cpu")

    def new():
        module = copy.deepcopy(net)
        Xt, Yt = to_tensor(X, device, torch.float32), to_tensor(y, device, torch.float32)

        def step(m, idx, _):
            return ((Xt[idx] + m(Xt[idx]) - Yt[idx]) ** 2).mean()

        return Trainer(loop="steps", train_step=step, max_iter=steps, batch_size=256, learning_rate=1e-3,
                       optimizer="adam", n_iter_no_change=None, grad_clip=1.0, device=device,
                       random_state=torch_generator(seed)).fit(module, np.arange(len(X))).module

    def score(fitted):
        with torch.no_grad():
            Xt = torch.as_tensor(Xe, dtype=torch.float32)
            return r2_score(ye, (Xt + fitted(Xt)).numpy())

    return old, new, score


# -- PrototypeSurvival: the former loop of survival/_prototype_survival.py -----------------------

def proto_data(seed, K=4, t=4, sizes=(6, 4, 4)):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(450, K * t + sum(sizes))).astype(np.float32)
    eta = 1.5 * X[:, 0] + X[:, K * t]
    y = Surv.from_arrays(rng.rand(450) < 0.8, rng.exponential(np.exp(-eta)))
    return X[:300], y[:300], X[300:], y[300:], K, t, list(sizes)


def proto_old_loop(module, X, event, time_, epochs, batch_size, lr, generator, device):
    Xt = to_tensor(X, device, torch.float32)
    et = to_tensor(event.astype(np.float32), device)
    n = X.shape[0]
    steps_per_epoch = math.ceil(n / batch_size)
    total = epochs * steps_per_epoch
    warmup = min(steps_per_epoch, total - 1)

    def schedule(step):
        if step < warmup:
            return (step + 1) / warmup
        return 0.5 * (1.0 + math.cos(math.pi * (step - warmup) / max(1, total - warmup)))

    optimizer = torch.optim.AdamW(module.parameters(), lr=lr, weight_decay=1e-5)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
    module.train()
    for _ in range(epochs):
        perm = torch.randperm(n, generator=generator).numpy()
        for start in range(0, n, batch_size):
            idx = perm[start:start + batch_size]
            order, last = cox_sort_keys(time_[idx])
            idx = idx[order]
            n_events = int(event[idx].sum())
            if n_events == 0:
                scheduler.step()
                continue
            idx_t = to_tensor(idx, device)
            logits = module(Xt[idx_t], generator)
            loss = cox_negative_log_likelihood(logits[:, 0], et[idx_t], to_tensor(last, device), n_events)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
    module.eval()


def proto_case(seed, device, epochs):
    X, y, Xe, ye, K, t, sizes = proto_data(seed)
    event, time_ = y["event"], y["time"]
    target = np.column_stack([time_, event]).astype(np.float64)

    def build(gen):
        return FusionNet(K, t, sizes, 32, 8, "transformer", 1, 0.25, 0.1, 0.5, gen).to(device)

    def old():
        gen = torch_generator(seed)
        module = build(gen)
        proto_old_loop(module, X, event, time_, epochs, 40, 3e-3, gen, device)
        return module

    def new():
        gen = torch_generator(seed)
        module = build(gen)
        steps_per_epoch = math.ceil(X.shape[0] / 40)
        total, warmup = epochs * steps_per_epoch, min(steps_per_epoch, epochs * steps_per_epoch - 1)

        def schedule(step):
            if step < warmup:
                return (step + 1) / warmup
            return 0.5 * (1.0 + math.cos(math.pi * (step - warmup) / max(1, total - warmup)))

        def train_step(net, xb, yb):
            return cox_partial_likelihood_loss(net(xb, gen if net.training else None)[:, 0], yb[:, 0], yb[:, 1])

        return Trainer(train_step=train_step, max_iter=epochs, n_iter_no_change=epochs, batch_size=40,
                       learning_rate=3e-3, weight_decay=1e-5, device=device, random_state=gen,
                       lr_schedule=lambda opt: torch.optim.lr_scheduler.LambdaLR(opt, schedule),
                       lr_schedule_interval="batch").fit(module, X, target).module

    def score(module):
        with torch.no_grad():
            risk = module.to("cpu")(torch.as_tensor(Xe))[:, 0].numpy()
        return concordance_index(ye, risk)

    return old, new, score


def main():
    global QUICK, REPEATS
    args = bench_args(__doc__)
    QUICK = args.quick
    REPEATS = 2 if QUICK else 5
    device = resolve_device(args.device)
    torch.set_num_threads(1)
    epochs = dict(dora=20 if QUICK else 60, cox=40 if QUICK else 100, proto=10 if QUICK else 30,
                  dyslim=80 if QUICK else 400)
    cases = {
        f"DoRARegressor (DoRA r=4, {epochs['dora']} epochs)": lambda s: dora_case(s, device, epochs["dora"]),
        f"CoxSurvival adam (MLP 16, {epochs['cox']} epochs)": lambda s: cox_case(s, device, epochs["cox"], "adam"),
        "CoxSurvival lbfgs (MLP 16, one 200-iteration solve)": lambda s: cox_case(s, device, 1, "lbfgs"),
        f"PrototypeSurvival (transformer, {epochs['proto']} epochs)": lambda s: proto_case(s, device, epochs["proto"]),
        f"DySLIMRegressor stream (lambda=0, {epochs['dyslim']} steps)": lambda s: dyslim_case(s, device,
                                                                                               epochs["dyslim"]),
    }
    per_epoch = {"DoRARegressor": epochs["dora"], "CoxSurvival adam": epochs["cox"], "CoxSurvival lbfgs": 1,
                 "PrototypeSurvival": epochs["proto"], "DySLIMRegressor": math.ceil(epochs["dyslim"] / 8)}
    times = Table("CPU seconds per epoch: training layer against the former hand loop", "CPU seconds per epoch",
                  higher_is_better=False, verdicts=False)
    scores = Table("Held-out score of the trained network: training layer against the former hand loop",
                   "R^2 (DoRA) or c-index (survival)", higher_is_better=True, verdicts=False)
    # warm-up: imports and first-call costs of torch and skorch stay out of the timings
    Trainer(max_iter=1).fit(torch.nn.Linear(2, 1), np.zeros((4, 2)), np.zeros((4, 1)))
    for seed in args.seeds:
        for case, make in cases.items():
            old, new, score = make(seed)
            k = per_epoch[next(key for key in per_epoch if case.startswith(key))]
            runs = [("hand loop (before)", old), ("Trainer (after)", new)]
            if seed % 2:
                runs.reverse()  # alternate the order, so that neither always runs first
            best, modules = {label: math.inf for label, _ in runs}, {}
            for _ in range(REPEATS):  # the best of a few runs (other jobs only ever add time), the two
                for label, fn in runs:  # columns interleaved so that a burst of other jobs hits both alike
                    spent, modules[label] = cpu_seconds(fn)
                    best[label] = min(best[label], spent)
            for label, _ in runs:
                times.add(case, label, best[label] / k, ours=label.startswith("Trainer"))
                scores.add(case, label, score(modules[label]), ours=label.startswith("Trainer"))
    for case in cases:
        ratio = times.mean(case, "Trainer (after)") / times.mean(case, "hand loop (before)")
        times.bar(f"{case}: training layer / hand loop, CPU seconds per epoch (target: the shared layer's overhead "
                  "at most 10 %)", ratio, 1.1)
    times.note(f"Process CPU time with one torch thread, best of {REPEATS} runs per seed, the two columns' runs "
               "interleaved.")
    scores.note("Same initial weights, data and batch order in both columns; the layer runs every epoch here "
                "(n_iter_no_change = max_iter).")
    emit([times, scores], args, estimators=["CoxSurvival", "DoRARegressor", "PrototypeSurvival"])


if __name__ == "__main__":
    main()
