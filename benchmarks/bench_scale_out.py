"""Scaling out: BradleyTerryRanker, PrivateKMeans and LS-ECE on Dask collections, a planning table.

Each method reads a Dask collection generated lazily, partition by partition, on the workers of a
``LocalCluster`` (worker processes bound to 127.0.0.1, one thread each): no partition is ever
materialised on the client. Measured per method: wall time of the call, rows per second per worker,
the client's peak resident memory during the call (sampled every 20 ms, above its level before the
call) and each worker's peak resident memory (over the run so far); beside it, one read of the same
lazily generated data (generate every partition and sum it: the floor of any pass), and the same
method in memory on a smaller size (data already in memory, generation not timed).

1. ``BradleyTerryRanker(ci_method="bootstrap", n_bootstrap=100)`` on ``--battles`` battles among 50
   competitors drawn from a Bradley-Terry model (10 % ties); the resamples run on the workers.
2. ``PrivateKMeans(n_clusters=8, epsilon=1, bounds=(-12, 12))`` on ``--points`` points in 10-D
   (8 Gaussian blobs); every pass re-generates the partitions (nothing is persisted).
3. ``ls_ece(sigma=0.1)`` on ``--scores`` binary scores (calibrated up to a temperature).

Sizes are options (``--battles``, ``--points``, ``--scores``, ``--memory-size`` for the in-memory
rows, ``--chunk`` rows per partition, ``--workers``); the targets are 10^8 battles, 10^8 x 10 points and 10^9 scores.
``--quick`` runs 10^6 of each. ``--only`` runs some of the methods; the rows of the others are then
kept from the saved results of the earlier run (said in a note with that run's command and load).
One seed: these are planning figures, not a race.

The points and scores are drawn with numpy's ``Generator`` (PCG64, seeded by ``[seed, partition]``);
the battles with the legacy ``RandomState``. Only the streams differ between the two: the laws are
those stated above.
"""

import argparse
import json
import math
import os
import resource
import sys
import threading
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _bench import Table, bench_args, emit, results_path  # noqa: E402

N_ITEMS = 50
TIE = 0.1


# ----------------------------------------------------------------------------------------------
# lazily generated data (one numpy block per partition, from its own seed)


def _battle_block(block_id, n, seed):
    rng = np.random.RandomState([seed, block_id])
    strength = np.random.RandomState(seed).normal(0, 1, N_ITEMS)
    a = rng.randint(0, N_ITEMS, n)
    b = (a + 1 + rng.randint(0, N_ITEMS - 1, n)) % N_ITEMS
    p = 1.0 / (1.0 + np.exp(strength[b] - strength[a]))
    u = rng.uniform(size=n)
    outcome = np.where(u < TIE, 2, np.where(u < TIE + (1 - TIE) * p, 1, 0))  # 2: tie, 1: first won
    return np.column_stack([a, b, outcome]).astype(np.int64)


def _point_block(block_id, n, seed, d=10, k=8):
    # numpy's Generator (PCG64, ziggurat normals) from the seed sequence [seed, block]: twice the speed of the
    # legacy RandomState's normals; the law is the same (a uniform blob, then N(0, I) around its centre)
    rng = np.random.default_rng([seed, block_id])
    centres = np.random.RandomState(seed).uniform(-8, 8, size=(k, d))
    labels = rng.integers(0, k, n)
    X = rng.standard_normal((n, d))
    for start in range(0, n, 1 << 15):  # in slices: no full-size temporary
        X[start:start + (1 << 15)] += centres[labels[start:start + (1 << 15)]]
    return X


def _score_block(block_id, n, seed):
    rng = np.random.default_rng([seed, block_id])
    logit = rng.normal(0, 2, n)
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-logit / 1.3))).astype(np.float64)
    return np.column_stack([1 / (1 + np.exp(-logit)), y])


def _lazy(make_block, n_rows, chunk, n_cols, seed, dtype):
    import dask.array as da

    sizes = [chunk] * (n_rows // chunk) + ([n_rows % chunk] if n_rows % chunk else [])

    def block(block_info=None):
        i = block_info[None]["chunk-location"][0]
        return make_block(i, block_info[None]["chunk-shape"][0], seed)

    return da.map_blocks(block, chunks=(tuple(sizes), (n_cols,)), dtype=dtype, meta=np.empty((0, n_cols), dtype))


def _in_memory(make_block, n_rows, chunk, seed):
    return np.concatenate([make_block(i, min(chunk, n_rows - i * chunk), seed)
                           for i in range(math.ceil(n_rows / chunk))])


# ----------------------------------------------------------------------------------------------
# measuring


def _rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class _PeakRSS:
    """Peak resident memory of this process during a block, above its level at the start (sampled)."""

    def __enter__(self):
        self.start = _rss()
        self.peak = self.start
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def _watch(self):
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, _rss())

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss())
        self.extra = self.peak - self.start


def _worker_peak():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


def _measure(fn):
    with _PeakRSS() as mem:
        t0 = time.perf_counter()
        out = fn()
        seconds = time.perf_counter() - t0
    return out, seconds, mem.extra


#: The first words of the cases of each method.
METHODS = {"ranker": "BradleyTerryRanker", "kmeans": "PrivateKMeans", "ece": "ls_ece"}


def _keep_earlier(args, tables, skipped):
    """Copy the rows, notes and bars of the ``skipped`` methods from the saved results into ``tables``."""
    path = results_path(args)
    if not skipped or path is None or not path.exists():
        return
    old = json.loads(path.read_text(encoding="utf-8"))
    prefixes = tuple(METHODS[m] for m in skipped)
    kept = set()
    for table, saved in zip(tables, old["tables"]):
        for row in saved["rows"]:
            if row["case"].startswith(prefixes):
                kept.add(row["case"].split(",")[0])
                for v in row["values"]:
                    table.add(row["case"], row["method"], v["value"], ours=row["ours"], seed=v["seed"])
        for bar in saved["bars"]:
            if any(p in bar["text"] for p in prefixes) or ("ranker" in skipped and "ranker's" in bar["text"]):
                table.bar(bar["text"], bar["measured"], bar["threshold"], op=bar["op"])
        for text in saved["notes"]:
            if text.startswith(prefixes):
                table.note(text)
    # a method's rows keep the note of the run that measured them (carried over from run to run)
    earlier = [text for saved in old["tables"] for text in saved["notes"] if text.startswith("Rows of ")]
    prov = old["provenance"]
    load = prov["hardware"]
    for name in sorted(kept):
        carried = next((text for text in earlier if name in text.split(" kept from ")[0]), None)
        tables[0].note(carried or f"Rows of {name} kept from the earlier run of {prov['command']} "
                                  f"({prov['start'][:10]}, load {load['load_start'][0]:.1f} at the start, "
                                  f"{load['load_end'][0]:.1f} at the end).")


def _fmt_n(n):
    e = int(round(math.log10(n)))
    return f"10^{e}" if 10 ** e == n else f"{n:.3g}"


# ----------------------------------------------------------------------------------------------


def main():
    extra = argparse.ArgumentParser(add_help=False)
    extra.add_argument("--battles", type=float, default=1e8)
    extra.add_argument("--points", type=float, default=1e8)
    extra.add_argument("--scores", type=float, default=1e9)
    extra.add_argument("--memory-size", type=float, default=1e7, help="rows of the in-memory comparison")
    extra.add_argument("--chunk", type=float, default=1e6, help="rows per partition")
    extra.add_argument("--workers", type=int, default=2)
    extra.add_argument("--only", default="ranker,kmeans,ece")
    extra.add_argument("--bootstrap-resample", default="counts", choices=["counts", "battles"],
                       help="the ranker's bootstrap_resample (battles: Poisson bootstrap of the rows on Dask)")
    own, rest = extra.parse_known_args()
    args = bench_args(__doc__, rest, default_seeds=1, quick_seeds=1)
    if args.quick:
        own.battles = own.points = own.scores = own.memory_size = 1e6
        own.chunk = 2.5e5
    chunk = int(own.chunk)
    only = set(own.only.split(","))

    import distributed

    from sklearn_icml.cluster import PrivateKMeans
    from sklearn_icml.metrics import ls_ece
    from sklearn_icml.ranking import BradleyTerryRanker

    cluster = distributed.LocalCluster(n_workers=own.workers, threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address=":0", memory_limit="4GiB")
    client = distributed.Client(cluster)
    seed = 0
    time_t = Table(f"Wall time of one call, Dask on {own.workers} workers against in memory", "seconds",
                   higher_is_better=False, verdicts=False)
    rate_t = Table(f"Throughput, rows per second per worker ({own.workers} workers; in memory: one process)",
                   "rows / s / worker", higher_is_better=True, verdicts=False)
    mem_t = Table("Peak resident memory during the call: the client (above its level before the call) and the "
                  "largest worker", "MiB", higher_is_better=False, verdicts=False)

    def run_case(case, n_rows, arr, dask_call, memory_call, n_memory):
        _, read_seconds, _ = _measure(lambda: arr.sum().compute())
        time_t.add(case, "one read of the Dask data (generate + sum)", read_seconds, seed=seed)
        _, seconds, client_extra = _measure(dask_call)
        worker_peaks = client.run(_worker_peak)
        time_t.add(case, "Dask", seconds, ours=True, seed=seed)
        rate_t.add(case, "Dask", n_rows / seconds / own.workers, ours=True, seed=seed)
        mem_t.add(case, "Dask client", client_extra / 2 ** 20, ours=True, seed=seed)
        mem_t.add(case, "Dask worker (largest)", max(worker_peaks.values()) / 2 ** 20, ours=True, seed=seed)
        data = [memory_call[0]()]
        _, m_seconds, m_extra = _measure(lambda: memory_call[1](data[0]))
        data.clear()
        mcase = f"{case} (in memory: {_fmt_n(n_memory)})"
        time_t.add(mcase, "in memory", m_seconds, seed=seed)
        rate_t.add(mcase, "in memory", n_memory / m_seconds, seed=seed)
        mem_t.add(mcase, "in memory (above the data)", m_extra / 2 ** 20, seed=seed)
        print(f"{case}: Dask {seconds:.1f} s, client +{client_extra / 2 ** 20:.0f} MiB; in memory "
              f"{_fmt_n(n_memory)} {m_seconds:.1f} s", file=sys.stderr, flush=True)
        return client_extra

    n_mem = int(own.memory_size)
    if "ranker" in only:
        n = int(own.battles)
        arr = _lazy(_battle_block, n, chunk, 3, seed, np.int64)
        resample = own.bootstrap_resample
        ranker = BradleyTerryRanker(ci_method="bootstrap", n_bootstrap=100, random_state=0,
                                    tie_labels=(2,), win_labels=(1, 0), bootstrap_resample=resample)
        what = "" if resample == "counts" else ", bootstrap of the rows"
        extra_mem = run_case(f"BradleyTerryRanker, {_fmt_n(n)} battles{what}", n, arr,
                             lambda: ranker.fit(arr[:, :2], arr[:, 2]),
                             (lambda: _in_memory(_battle_block, n_mem, chunk, seed),
                              lambda d: BradleyTerryRanker(ci_method="bootstrap", n_bootstrap=100, random_state=0,
                                                           tie_labels=(2,), win_labels=(1, 0),
                                                           bootstrap_resample=resample).fit(d[:, :2], d[:, 2])),
                             n_mem)
        mem_t.bar(f"client memory of the ranker's Dask fit on {_fmt_n(n)} battles, MiB (target: under 1 GB)",
                  extra_mem / 2 ** 20, 1024.0, op="<")
    if "kmeans" in only:
        n = int(own.points)
        arr = _lazy(_point_block, n, chunk, 10, seed, np.float64)
        km = PrivateKMeans(n_clusters=8, epsilon=1.0, bounds=(-12, 12), random_state=0)
        extra_mem = run_case(f"PrivateKMeans, {_fmt_n(n)} x 10 points", n, arr, lambda: km.fit(arr),
                             (lambda: _in_memory(_point_block, n_mem, chunk, seed),
                              lambda d: PrivateKMeans(n_clusters=8, epsilon=1.0, bounds=(-12, 12),
                                                      random_state=0).fit(d)),
                             n_mem)
        mem_t.bar(f"client memory of PrivateKMeans's Dask fit on {_fmt_n(n)} x 10 points, MiB (target: under 1 GB)",
                  extra_mem / 2 ** 20, 1024.0, op="<")
        time_t.note(f"PrivateKMeans read the data {km.n_levels_ + 2} times ({km.n_levels_} tree levels, cluster "
                    "totals, inertia; the size is the array's shape), regenerating every partition each time.")
    if "ece" in only:
        n = int(own.scores)
        arr = _lazy(_score_block, n, chunk, 2, seed, np.float64)
        extra_mem = run_case(f"ls_ece, {_fmt_n(n)} scores", n, arr, lambda: ls_ece(arr[:, 1], arr[:, 0], sigma=0.1),
                             (lambda: _in_memory(_score_block, n_mem, chunk, seed),
                              lambda d: ls_ece(d[:, 1], d[:, 0], sigma=0.1)),
                             n_mem)
        mem_t.bar(f"client memory of ls_ece on {_fmt_n(n)} Dask scores, MiB (target: under 1 GB)",
                  extra_mem / 2 ** 20, 1024.0, op="<")
    rate_t.note("Throughput per worker is the planning figure: every pass is parallel over partitions and the "
                "reduced statistics do not grow with the rows, so a cluster of W such workers reads about W times "
                "these rows per second, plus the fixed client-side finish (the in-memory solver on the reduced "
                "statistics), while the partitions outnumber the workers.")
    _keep_earlier(args, [time_t, rate_t, mem_t], [m for m in METHODS if m not in only])
    emit([time_t, rate_t, mem_t], args, estimators=["BradleyTerryRanker", "PrivateKMeans"])
    client.close()
    cluster.close()


if __name__ == "__main__":
    main()
