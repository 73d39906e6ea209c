"""Run smartnoise-synth's AIM on the jobs the benchmark wrote; runs in its own virtualenv.

smartnoise-synth pins its own torch, jax and OpenDP stack, so ``bench_private_evolution.py`` runs this file
with the interpreter of a virtualenv holding ``smartnoise-synth`` only. Input: an ``.npz`` with each job's
private rows (``X_<i>``, ``y_<i>``) and a JSON list of jobs (epsilon, delta, public bounds, bins per feature,
number of classes, rows to sample, seed, AIM's ``rounds`` and ``max_model_size``); output: an ``.npz``
with the sampled rows (bin midpoints and classes), the fit seconds and the number of AIM's rounds of
every job done (or the error of a fit that failed), rewritten after each job (so a run stopped early
keeps the jobs done). Every column is binned on public bounds
(``BinTransformer`` with ``lower``/``upper`` given, so no budget goes to the preprocessing), the class is one
more binned column, and AIM spends the whole (epsilon, delta). Only numpy, json and smartnoise-synth are
used here, so nothing of sklearn_icml is imported.
"""

import contextlib
import io
import json
import os
import sys
import time
import warnings

import numpy as np


def main(data_path, jobs_path, out_path):
    from importlib.metadata import version

    import snsynth.aim.aim as aim_module
    from snsynth.aim import AIMSynthesizer
    from snsynth.transform import BinTransformer, TableTransformer

    # AIM refits its graphical model once per round (plus once before and once after the rounds): count the refits
    estimation, refits = aim_module.estimation, []
    mirror_descent = estimation.mirror_descent

    def counted(*args, **kwargs):
        refits.append(1)
        return mirror_descent(*args, **kwargs)

    estimation.mirror_descent = counted

    data = np.load(data_path)
    with open(jobs_path) as f:
        jobs = json.load(f)
    out = {"smartnoise_synth_version": np.array(version("smartnoise-synth"))}
    for i, job in enumerate(jobs):
        X, y = data[f"X_{i}"], data[f"y_{i}"]
        lower, upper = job["bounds"]
        n_classes = job["n_classes"]
        table = np.column_stack([X, y]).tolist()
        transformer = TableTransformer(
            [BinTransformer(bins=job["bins"], lower=lower, upper=upper) for _ in range(X.shape[1])]
            + [BinTransformer(bins=n_classes, lower=-0.5, upper=n_classes - 0.5)])
        # AIM draws its Gaussian noise from OpenDP's sampler (no seed); numpy's global generator drives the rest
        np.random.seed(job["seed"])
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            refits.clear()
            synth = AIMSynthesizer(epsilon=job["epsilon"], delta=job["delta"], max_model_size=job["max_model_size"],
                                   rounds=job.get("rounds"))
            try:
                synth.fit(table, transformer=transformer, preprocessor_eps=0.0)
            except (ValueError, FloatingPointError) as exc:  # e.g. NaN selection probabilities: the job has no rows
                out[f"error_{i}"] = np.array(f"{type(exc).__name__}: {exc}")
                continue
            seconds = time.perf_counter() - start
            rows = np.asarray(synth.sample(job["n_samples"]), dtype=np.float64)
        out[f"X_{i}"] = rows[:, :-1]
        out[f"y_{i}"] = np.rint(rows[:, -1]).astype(np.int64)
        out[f"seconds_{i}"] = np.array(seconds)
        out[f"rounds_{i}"] = np.array(len(refits) - 2)
        np.savez(out_path + ".tmp.npz", **out)
        os.replace(out_path + ".tmp.npz", out_path)


if __name__ == "__main__":
    main(*sys.argv[1:4])
