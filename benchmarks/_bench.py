"""Shared helpers for ``benchmarks/bench_<method>.py``: arguments, timing, and the markdown table.

Every benchmark follows the rules in ``benchmarks/README.md``: our method and
the peers run side by side in one process, on the same data and seeds, over
several seeds; the table gives mean and spread per (case, method) and the ratio
of each row to the best peer of its case; rows where we lose stay in.

Usage in a benchmark script::

    from _bench import Table, bench_args, emit, timed

    args = bench_args(__doc__)
    table = Table("Fit time, 10^6 battles", metric="seconds", higher_is_better=False)
    for seed in args.seeds:
        table.add("n=10^6", "ours", timed(fit_ours, X, y), ours=True)
        table.add("n=10^6", "choix", timed(fit_choix, X, y))
    emit(table, args)
"""

import argparse
import math
import statistics
import sys
import time
from collections import defaultdict

__all__ = ["Table", "bench_args", "emit", "timed"]


def bench_args(description, argv=None, *, default_seeds=5, quick_seeds=2):
    """Parse the options every benchmark takes.

    ``--quick`` (small sizes, ``quick_seeds`` seeds: about a minute),
    ``--seeds N`` (``default_seeds`` by default), ``--device {cpu,auto,cuda}``
    for the rows that run in torch, and ``--output FILE`` to append the tables
    to a markdown file as well as printing them.
    The returned namespace has ``seeds`` as a list of ints ``0..N-1``.
    """
    first_line = (description or "").strip().splitlines()[0] if description else None
    parser = argparse.ArgumentParser(description=first_line)
    parser.add_argument("--quick", action="store_true", help="small sizes and few seeds (about a minute)")
    parser.add_argument("--seeds", type=int, default=None, help=f"number of seeds (default {default_seeds})")
    parser.add_argument("--device", choices=["cpu", "auto", "cuda"], default="cpu",
                        help="device for the torch rows (default cpu)")
    parser.add_argument("--output", default=None, help="also append the tables to this markdown file")
    args = parser.parse_args(argv)
    n = args.seeds if args.seeds is not None else (quick_seeds if args.quick else default_seeds)
    if n < 1:
        parser.error("--seeds must be at least 1")
    args.seeds = list(range(n))
    return args


def timed(fn, *args, repeat=1, **kwargs):
    """Wall-clock seconds of ``fn(*args, **kwargs)``: the best of ``repeat`` calls."""
    best = math.inf
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args, **kwargs)
        best = min(best, time.perf_counter() - start)
    return best


def _fmt(x):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    if x == 0 or 1e-3 <= abs(x) < 1e5:
        return f"{x:.4g}"
    return f"{x:.3e}"


class Table:
    """One benchmark table: values per (case, method) over seeds.

    Parameters
    ----------
    title : str
        What is measured, with sizes.
    metric : str
        Name and unit of the value (``"seconds"``, ``"ARI"``, ...).
    higher_is_better : bool
        Direction of the metric; decides the best peer and the verdict.
    verdicts : bool, default=True
        Say win/tie/loss on our rows. Turn off for tables that compare values
        rather than race (ratios are still given). Means within a relative
        1e-9 of the best peer's count as a tie.
    """

    def __init__(self, title, metric, *, higher_is_better, verdicts=True):
        self.title = title
        self.metric = metric
        self.higher_is_better = higher_is_better
        self.verdicts = verdicts
        self._values = defaultdict(list)
        self._ours = {}
        self._cases = []
        self._notes = []

    def add(self, case, method, value, *, ours=False):
        """Record one measurement (one seed) of ``method`` on ``case``.

        A failed run can be recorded as ``float("nan")``; it shows as n/a and
        never counts as best.
        """
        if case not in self._cases:
            self._cases.append(case)
        key = (case, method)
        if key in self._ours and self._ours[key] != ours:
            raise ValueError(f"{method!r} on {case!r} recorded both as ours and as a peer")
        self._ours[key] = ours
        self._values[key].append(float(value))

    def note(self, text):
        """Add a line printed under the table (a caveat, a bar, a loss explained)."""
        self._notes.append(text)

    def _stats(self, key):
        vals = [v for v in self._values[key] if not math.isnan(v)]
        if not vals:
            return math.nan, math.nan, 0
        spread = statistics.stdev(vals) if len(vals) > 1 else 0.0
        return statistics.fmean(vals), spread, len(vals)

    def rows(self):
        """List of dicts (case, method, ours, mean, std, n, ratio, verdict), ours first per case.

        ``ratio`` is the row's mean over the best peer's mean of the same case
        (best = highest or lowest by ``higher_is_better``); ``verdict`` says, for
        our rows, whether we beat that peer.
        """
        out = []
        for case in self._cases:
            methods = [m for (c, m) in self._values if c == case]
            stats = {m: self._stats((case, m)) for m in methods}
            peers = [m for m in methods if not self._ours[(case, m)] and stats[m][2] > 0]
            best = None
            if peers:
                pick = max if self.higher_is_better else min
                best = pick(peers, key=lambda m: stats[m][0])
            order = sorted(methods, key=lambda m: (not self._ours[(case, m)], methods.index(m)))
            for m in order:
                mean, std, n = stats[m]
                ratio = verdict = None
                if best is not None and n > 0:
                    ref = stats[best][0]
                    ratio = mean / ref if ref != 0 else math.nan
                    if self._ours[(case, m)] and self.verdicts:
                        if abs(mean - ref) <= 1e-9 * max(abs(ref), 1e-300):
                            verdict = "tie"
                        else:
                            better = mean > ref if self.higher_is_better else mean < ref
                            verdict = "win" if better else "loss"
                out.append(dict(case=case, method=m, ours=self._ours[(case, m)], mean=mean, std=std,
                                n=n, ratio=ratio, best_peer=best, verdict=verdict))
        return out

    def to_markdown(self):
        """The table as markdown, with title, direction and notes."""
        direction = "higher is better" if self.higher_is_better else "lower is better"
        lines = [f"### {self.title}", "", f"{self.metric} ({direction}); mean ± std over seeds; "
                 "ratio = row mean / best peer mean of the case.", "",
                 "| case | method | mean | ± std | seeds | ratio to best peer | vs best peer |",
                 "|---|---|---|---|---|---|---|"]
        for r in self.rows():
            name = f"**{r['method']}** (ours)" if r["ours"] else r["method"]
            vs = f"{r['verdict']} vs {r['best_peer']}" if r["verdict"] else ""
            lines.append(f"| {r['case']} | {name} | {_fmt(r['mean'])} | {_fmt(r['std'])} | {r['n']} | "
                         f"{_fmt(r['ratio'])} | {vs} |")
        lines += [""] + [f"- {n}" for n in self._notes]
        return "\n".join(lines).rstrip() + "\n"


def emit(tables, args=None, file=None):
    """Print the tables (markdown) and append them to ``args.output`` when given."""
    if isinstance(tables, Table):
        tables = [tables]
    text = "\n".join(t.to_markdown() for t in tables)
    print(text, file=file or sys.stdout, flush=True)
    if args is not None and getattr(args, "output", None):
        with open(args.output, "a", encoding="utf-8") as f:
            f.write(text + "\n")
    return text
