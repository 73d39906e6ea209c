"""Shared helpers for ``benchmarks/bench_<method>.py``: arguments, timing, tables, saved results.

Every benchmark follows the rules in ``benchmarks/README.md``: our method and
the peers run side by side in one process, on the same data and seeds, over
several seeds; the table gives mean and spread per (case, method) and the ratio
of each row to the best peer of its case; rows where we lose stay in.

Usage in a benchmark script::

    from _bench import Table, bench_args, emit, timed

    args = bench_args(__doc__)
    table = Table("Fit time, 10^6 battles", metric="seconds", higher_is_better=False)
    for seed in args.seeds:
        table.add("n=10^6", "ours", timed(fit_ours, X, y), ours=True, seed=seed)
        table.add("n=10^6", "choix", timed(fit_choix, X, y), seed=seed)
    table.bar("ours at most 1 s on 10^6 battles", table.mean("n=10^6", "ours"), 1.0, op="<=")
    emit(table, args, estimators=["BradleyTerryRanker"])

``emit`` prints the markdown tables and saves the run, raw values with their
seeds and the provenance, to ``benchmarks/results/<bench>.json``
(``<bench>.quick.json`` under ``--quick``); ``benchmarks/render_docs.py`` turns
the saved files into the documentation pages.
"""

import argparse
import datetime
import json
import math
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

__all__ = ["Table", "bench_args", "emit", "paired_verdict", "timed", "worse_by", "BAR_OPS", "CLAIM_OUTCOMES",
           "MIN_PAIRS", "SCHEMA_VERSION", "WORSE_BY", "git_state"]

SCHEMA_VERSION = 2
# Schema 2 (every run saved since): a published result must come from a committed tree, i.e. its provenance has
# a commit and no uncommitted changes to sklearn_icml/ or benchmarks/ (``render_docs.py --check`` fails otherwise).
# Schema 1 files are older runs, rendered with what their provenance says.
SCHEMA_VERSIONS = (1, 2)
ROOT = Path(__file__).resolve().parents[1]
# The library measured is the one of this source tree (an installed or editable copy elsewhere would not be the
# code of the commit the run records): its root goes first on the import path, before any script imports it.
if str(ROOT) not in sys.path[:1]:
    sys.path.insert(0, str(ROOT))

DEFAULT_RESULTS_DIR = Path(__file__).resolve().parent / "results"
BAR_OPS = {"<=": lambda a, b: a <= b, "<": lambda a, b: a < b, ">=": lambda a, b: a >= b,
           ">": lambda a, b: a > b}
CLAIM_OUTCOMES = ("yes", "partly", "no")
_BENCH_NAME = re.compile(r"^bench_(\w+)\.py$")


def bench_args(description, argv=None, *, default_seeds=5, quick_seeds=2, name=None):
    """Parse the options every benchmark takes.

    ``--quick`` (small sizes, ``quick_seeds`` seeds: about a minute),
    ``--seeds N`` (``default_seeds`` by default), ``--device {cpu,auto,cuda}``
    for the rows that run in torch, ``--output FILE`` to append the tables
    to a markdown file as well as printing them, ``--results-dir DIR`` (where
    the run is saved, default ``benchmarks/results``) and ``--no-save``.
    The returned namespace has ``seeds`` as a list of ints ``0..N-1``; the
    clock of the run starts here.

    ``name`` is the benchmark's name in its results file; by default it comes
    from the script's file name (``bench_dora.py`` -> ``dora``). A run whose
    script is not a ``bench_*.py`` file and that gives no ``name`` is not saved.
    """
    first_line = (description or "").strip().splitlines()[0] if description else None
    parser = argparse.ArgumentParser(description=first_line)
    parser.add_argument("--quick", action="store_true", help="small sizes and few seeds (about a minute)")
    parser.add_argument("--seeds", type=int, default=None, help=f"number of seeds (default {default_seeds})")
    parser.add_argument("--device", choices=["cpu", "auto", "cuda"], default="cpu",
                        help="device for the torch rows (default cpu)")
    parser.add_argument("--output", default=None, help="also append the tables to this markdown file")
    parser.add_argument("--results-dir", default=None,
                        help="save the run to DIR/<bench>.json (default benchmarks/results)")
    parser.add_argument("--no-save", action="store_true", help="print the tables, save nothing")
    args = parser.parse_args(argv)
    n = args.seeds if args.seeds is not None else (quick_seeds if args.quick else default_seeds)
    if n < 1:
        parser.error("--seeds must be at least 1")
    args.seeds = list(range(n))
    if name is None:
        match = _BENCH_NAME.match(os.path.basename(sys.argv[0] or ""))
        name = match.group(1) if match else None
    args.bench = name
    args._run = _Run(name, description)
    return args


def ensure_venv(path, requirements, what):
    """A peer's own virtualenv at ``path``, created with the base interpreter and ``requirements`` on first use.

    Returns the path of its python. A marker file records a finished install, so an interrupted one
    is redone on the next call.
    """
    python = os.path.join(path, "bin", "python")
    marker = os.path.join(path, ".sklearn-icml-ready")
    if os.path.exists(marker):
        return python
    print(f"# creating the {what} virtualenv in {path} (once) ...", file=sys.stderr, flush=True)
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", path], check=True)
    subprocess.run([python, "-m", "pip", "install", "-q", *requirements], check=True)
    with open(marker, "w") as f:
        f.write(" ".join(requirements) + "\n")
    return python


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


def _cpu_seconds():
    """CPU seconds of this process and of its finished children (a peer's own virtualenv)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def _t_quantile(p, df):
    from scipy.stats import t

    return float(t.ppf(p, df))


MIN_PAIRS = 3
WORSE_BY = 0.10


def paired_verdict(ours, peer, *, higher_is_better, level=0.95):
    """Verdict of our values against a peer's, paired by seed.

    ``ours`` and ``peer`` are lists of ``(seed, value)``; values of the same seed
    are paired (the k-th value of a seed with the k-th of the same seed), NaN
    pairs dropped. Returns ``(verdict, (low, high), n_pairs)``.

    A verdict needs every one of our values paired: when fewer than
    ``MIN_PAIRS`` (3) pairs form, or the peer has fewer values (not NaN) than
    we have, the verdict is ``"unpaired"`` and the interval ``None``: the row
    keeps its ratio but claims neither a win nor a tie. Otherwise ``"win"`` or
    ``"loss"`` only when the ``level`` t-interval of the mean paired difference
    (ours - peer) excludes 0, else ``"tie"``.
    """
    def by_seed(pairs):
        out = defaultdict(list)
        for seed, value in pairs:
            out[seed].append(value)
        return out

    a, b = by_seed(ours), by_seed(peer)
    diffs = []
    for seed in a:
        for x, y in zip(a[seed], b.get(seed, [])):
            if not (math.isnan(x) or math.isnan(y)):
                diffs.append(x - y)
    n = len(diffs)
    n_ours = sum(not math.isnan(v) for _, v in ours)
    n_peer = sum(not math.isnan(v) for _, v in peer)
    if n < MIN_PAIRS or n_peer < n_ours:
        return "unpaired", None, n
    mean = statistics.fmean(diffs)
    half = _t_quantile(0.5 + level / 2, n - 1) * statistics.stdev(diffs) / math.sqrt(n)
    low, high = mean - half, mean + half
    if low > 0 or high < 0:
        better = mean > 0 if higher_is_better else mean < 0
        return ("win" if better else "loss"), (low, high), n
    return "tie", (low, high), n


def worse_by(mean, best, *, higher_is_better):
    """How much worse ``mean`` is than ``best``, relative to ``|best|`` (0 when not worse; inf when best is 0).

    Used for unpaired rows: one at least ``WORSE_BY`` (10 %) worse than the best peer is a negative
    result even without a paired interval.
    """
    gap = (best - mean) if higher_is_better else (mean - best)
    if math.isnan(gap) or gap <= 0:
        return 0.0
    return gap / abs(best) if best != 0 else math.inf


def row_stats(values):
    """``(mean, std, n)`` of the non-NaN values (std is the sample std, 0 for one value)."""
    vals = [v for v in values if not math.isnan(v)]
    if not vals:
        return math.nan, math.nan, 0
    spread = statistics.stdev(vals) if len(vals) > 1 else 0.0
    return statistics.fmean(vals), spread, len(vals)


def compute_rows(cases, values, ours, *, higher_is_better, verdicts=True):
    """Rows of a table from raw values: the one computation shared by the table and the rendered pages.

    ``values`` maps ``(case, method)`` to a list of ``(seed, value)``; ``ours``
    maps the same keys to bool. Returns dicts (case, method, ours, mean, std, n,
    ratio, best_peer, verdict, interval, n_pairs, worse), ours first per case;
    ``worse`` is :func:`worse_by` against the best peer (our rows with a peer, else None).
    """
    out = []
    for case in cases:
        methods = [m for (c, m) in values if c == case]
        stats = {m: row_stats([v for _, v in values[(case, m)]]) for m in methods}
        peers = [m for m in methods if not ours[(case, m)] and stats[m][2] > 0]
        best = None
        if peers:
            pick = max if higher_is_better else min
            best = pick(peers, key=lambda m: stats[m][0])
        order = sorted(methods, key=lambda m: (not ours[(case, m)], methods.index(m)))
        for m in order:
            mean, std, n = stats[m]
            ratio = verdict = interval = worse = None
            n_pairs = 0
            if best is not None and n > 0:
                ref = stats[best][0]
                ratio = mean / ref if ref != 0 else math.nan
                if ours[(case, m)]:
                    worse = worse_by(mean, ref, higher_is_better=higher_is_better)
                if ours[(case, m)] and verdicts:
                    verdict, interval, n_pairs = paired_verdict(values[(case, m)], values[(case, best)],
                                                                higher_is_better=higher_is_better)
            out.append(dict(case=case, method=m, ours=ours[(case, m)], mean=mean, std=std, n=n, ratio=ratio,
                            best_peer=best, verdict=verdict, interval=interval, n_pairs=n_pairs,
                            worse=worse))
    return out


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
        Say win/tie/loss/unpaired on our rows. Turn off for tables that compare
        values rather than race (ratios are still given). A verdict pairs our
        values with the best peer's by seed: win or loss only when the 95 %
        interval of the paired difference excludes 0, else tie; unpaired when
        fewer than ``MIN_PAIRS`` (3) seeds pair up or the peer has fewer seeds than we have.
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
        self._bars = []
        self._claims = []
        self._wall_start = time.perf_counter()
        self._cpu_start = _cpu_seconds()
        self._wall = self._cpu = 0.0

    def touch(self):
        """Stamp the table's wall and CPU seconds so far (the CPU of child processes counts once they are reaped:
        a script that fills a table from worker processes touches it again after closing the pool)."""
        self._wall = time.perf_counter() - self._wall_start
        self._cpu = _cpu_seconds() - self._cpu_start

    def add(self, case, method, value, *, ours=False, seed=None):
        """Record one measurement (one seed) of ``method`` on ``case``.

        ``seed`` pairs the value with the peers' values of the same seed for the
        verdict; by default it is the count of values already recorded for this
        (case, method), i.e. the seed index when every seed adds once.
        A failed run can be recorded as ``float("nan")``; it shows as n/a and
        never counts as best.
        """
        if case not in self._cases:
            self._cases.append(case)
        key = (case, method)
        if key in self._ours and self._ours[key] != ours:
            raise ValueError(f"{method!r} on {case!r} recorded both as ours and as a peer")
        self._ours[key] = ours
        if seed is None:
            seed = len(self._values[key])
        self._values[key].append((int(seed), float(value)))
        self.touch()

    def note(self, text):
        """Add a line printed under the table (a caveat, a loss explained)."""
        self._notes.append(str(text))
        self.touch()

    def bar(self, text, measured, threshold, *, op="<="):
        """Record a target: ``measured op threshold``; returns whether it is met.

        ``text`` says what is measured and where the target comes from (the
        paper, a peer's figure, a physical limit). A NaN measurement misses.
        """
        if op not in BAR_OPS:
            raise ValueError(f"Table.bar: op must be one of {sorted(BAR_OPS)}, got {op!r}")
        measured, threshold = float(measured), float(threshold)
        met = (not math.isnan(measured)) and bool(BAR_OPS[op](measured, threshold))
        self._bars.append(dict(text=str(text), measured=measured, threshold=threshold, op=op, met=met))
        self.touch()
        return met

    def claim(self, text, *, paper, reproduced, measured):
        """Record a claim of the paper checked here: ``reproduced`` in "yes", "partly", "no".

        ``paper`` is the paper's figure or statement, ``measured`` ours (text
        or a number).
        """
        if reproduced not in CLAIM_OUTCOMES:
            raise ValueError(f"Table.claim: reproduced must be one of {CLAIM_OUTCOMES}, got {reproduced!r}")
        self._claims.append(dict(text=str(text), paper=str(paper), reproduced=reproduced,
                                 measured=measured if isinstance(measured, str) else float(measured)))
        self.touch()
        return reproduced

    def values(self, case, method):
        """The recorded values of ``method`` on ``case`` (seed order of recording)."""
        return [v for _, v in self._values[(case, method)]]

    def mean(self, case, method):
        """Mean of the non-NaN values of ``method`` on ``case`` (NaN when none)."""
        return row_stats(self.values(case, method))[0]

    def rows(self):
        """List of dicts (case, method, ours, mean, std, n, ratio, verdict, ...), ours first per case.

        ``ratio`` is the row's mean over the best peer's mean of the same case
        (best = highest or lowest mean by ``higher_is_better``); ``verdict`` says,
        for our rows, whether we beat that peer: win or loss when the 95 %
        t-interval of the paired (by seed) difference excludes 0, else tie;
        unpaired without at least ``MIN_PAIRS`` (3) pairs covering every one of our seeds.
        """
        return compute_rows(self._cases, self._values, self._ours, higher_is_better=self.higher_is_better,
                            verdicts=self.verdicts)

    def to_markdown(self):
        """The table as markdown, with title, direction, notes, targets and claims."""
        direction = "higher is better" if self.higher_is_better else "lower is better"
        lines = [f"### {self.title}", "", f"{self.metric} ({direction}); mean ± std over seeds; "
                 "ratio = row mean / best peer mean of the case; verdict from the 95 % interval of the "
                 f"paired difference (unpaired: fewer than {MIN_PAIRS} pairs, or the peer has fewer seeds).", "",
                 "| case | method | mean | ± std | seeds | ratio to best peer | vs best peer |",
                 "|---|---|---|---|---|---|---|"]
        for r in self.rows():
            name = f"**{r['method']}** (ours)" if r["ours"] else r["method"]
            vs = f"{r['verdict']} vs {r['best_peer']}" if r["verdict"] else ""
            lines.append(f"| {r['case']} | {name} | {_fmt(r['mean'])} | {_fmt(r['std'])} | {r['n']} | "
                         f"{_fmt(r['ratio'])} | {vs} |")
        lines += [""] + [f"- {n}" for n in self._notes]
        for b in self._bars:
            lines.append(f"- Target: {b['text']}: {_fmt(b['measured'])} {b['op']} {_fmt(b['threshold'])}: "
                         f"{'met' if b['met'] else 'MISSED'}")
        for c in self._claims:
            measured = c["measured"] if isinstance(c["measured"], str) else _fmt(c["measured"])
            lines.append(f"- Claim: {c['text']} (paper: {c['paper']}; here: {measured}): "
                         f"reproduced {c['reproduced']}")
        return "\n".join(lines).rstrip() + "\n"

    def to_dict(self):
        """The table as saved: raw values per row with their seeds, notes, bars, claims, cost."""
        rows = [dict(case=case, method=method, ours=self._ours[(case, method)],
                     values=[dict(seed=s, value=_json_float(v)) for s, v in vals])
                for (case, method), vals in self._values.items()]
        return dict(title=self.title, metric=self.metric,
                    direction="higher" if self.higher_is_better else "lower", verdicts=self.verdicts,
                    cases=list(self._cases), rows=rows, notes=list(self._notes),
                    bars=[dict(b, measured=_json_float(b["measured"]), threshold=_json_float(b["threshold"]))
                          for b in self._bars],
                    claims=[dict(c, measured=c["measured"] if isinstance(c["measured"], str)
                                 else _json_float(c["measured"])) for c in self._claims],
                    wall_seconds=round(self._wall, 3), cpu_seconds=round(self._cpu, 3))


def _json_float(x):
    """JSON has no NaN/inf: they are saved as null / "inf" / "-inf"."""
    x = float(x)
    if math.isnan(x):
        return None
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


# --------------------------------------------------------------------------------------------------
# provenance and saving


def _git(*cmd, cwd=ROOT):
    try:
        out = subprocess.run(["git", *cmd], cwd=cwd, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def git_state(root=ROOT):
    """``(commit, dirty)`` of the source tree at ``root``: ``(None, None)`` outside a git checkout.

    ``dirty`` says whether tracked files of ``sklearn_icml/`` or ``benchmarks/`` differ from the commit
    (saved results under ``benchmarks/results/`` do not count: a run may follow another not yet committed).
    """
    top = _git("rev-parse", "--show-toplevel", cwd=root)
    commit = _git("rev-parse", "--verify", "HEAD", cwd=root)
    if not top or not commit or Path(top).resolve() != Path(root).resolve():  # not the checkout of this tree
        return None, None
    status = _git("status", "--porcelain", "--untracked-files=no", "--", "sklearn_icml", "benchmarks",
                  ":(exclude)benchmarks/results", cwd=root)
    return commit, (bool(status) if status is not None else None)


def _cpu_model():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gib():
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        return None


def _load():
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _peer_distributions():
    """Names of the ``peers`` extra of pyproject.toml (the reference implementations)."""
    try:
        import tomllib

        with open(ROOT / "pyproject.toml", "rb") as f:
            extras = tomllib.load(f)["project"]["optional-dependencies"]
    except (OSError, KeyError, ImportError, ValueError):
        return []
    names = [re.split(r"[<>=!~;\[ ]", spec, maxsplit=1)[0].strip() for spec in extras.get("peers", [])]
    return sorted({n for n in names if n})


def _versions():
    from importlib import metadata

    def version(dist):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return None

    out = {"python": platform.python_version()}
    for dist in ("numpy", "scipy", "scikit-learn", "torch", "sklearn-icml"):
        out[dist] = version(dist)
    out["peers"] = {d: v for d in _peer_distributions() if (v := version(d)) is not None}
    return out


def _gpu(device):
    """GPU name and driver when the run used torch on a GPU, else None (torch is never imported here)."""
    if device == "cpu" or "torch" not in sys.modules:
        return None
    torch = sys.modules["torch"]
    try:
        if not torch.cuda.is_available():
            return None
        name = torch.cuda.get_device_name(0)
    except Exception:  # noqa: BLE001 - a broken driver means no GPU row
        return None
    driver = None
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
        driver = out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else None
    except (OSError, subprocess.SubprocessError, IndexError):
        pass
    return dict(name=name, driver=driver, cuda=getattr(torch.version, "cuda", None))


def _utc(ts):
    return datetime.datetime.fromtimestamp(ts, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class _Run:
    """Clock and provenance of one benchmark run (created by ``bench_args``)."""

    def __init__(self, name, description):
        self.name = name
        self.description = (description or "").strip()
        self.start = time.time()
        self.wall_start = time.perf_counter()
        self.cpu_start = _cpu_seconds()
        self.load_start = _load()
        self.commit, self.dirty = git_state()
        self.command = " ".join(["python", _relative(sys.argv[0])] + sys.argv[1:]) if sys.argv[0] else None
        self.tables = []

    def provenance(self, args):
        package = _package_dir()
        if package is not None and not _within(package, ROOT) and self.dirty is False:
            self.dirty = True  # the library measured is not the tree of the recorded commit
        gpu = _gpu(getattr(args, "device", "cpu"))
        device = "cuda" if gpu else "cpu"
        now = time.time()
        return dict(
            command=self.command, commit=self.commit, dirty=self.dirty, start=_utc(self.start), end=_utc(now),
            package=None if package is None else (_relative(package) if _within(package, ROOT) else str(package)),
            wall_seconds=round(time.perf_counter() - self.wall_start, 2),
            cpu_seconds=round(_cpu_seconds() - self.cpu_start, 2),
            seeds=list(args.seeds), quick=bool(args.quick),
            hardware=dict(cpu=_cpu_model(), cores=os.cpu_count(), memory_gib=_memory_gib(),
                          load_start=self.load_start, load_end=_load(), gpu=gpu, device=device,
                          threads=os.environ.get("OMP_NUM_THREADS")),
            versions=_versions(),
        )


def _package_dir():
    """The folder of the ``sklearn_icml`` the run imported, or None when it did not import it."""
    module = sys.modules.get("sklearn_icml")
    path = getattr(module, "__file__", None)
    return Path(path).resolve().parent if path else None


def _within(path, root):
    try:
        Path(path).resolve().relative_to(Path(root).resolve())
    except ValueError:
        return False
    return True


def _relative(path):
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return os.path.basename(path)


def results_path(args):
    """Where ``emit`` saves this run, or None when it is not saved."""
    if getattr(args, "no_save", False) or getattr(args, "bench", None) is None or not hasattr(args, "_run"):
        return None
    directory = Path(args.results_dir) if getattr(args, "results_dir", None) else DEFAULT_RESULTS_DIR
    return directory / (f"{args.bench}.quick.json" if args.quick else f"{args.bench}.json")


def _save(args, estimators, figures):
    path = results_path(args)
    if path is None:
        return None
    run = args._run
    provenance = run.provenance(args)
    # each table names the run that made it, so that a file whose tables come from several runs (a script's
    # --part, kept by merge_kept) shows the commit of every table
    tag = {key: provenance[key] for key in ("command", "commit", "dirty", "start")}
    doc = dict(schema=SCHEMA_VERSION, bench=args.bench, quick=bool(args.quick),
               script=_relative(sys.argv[0]) if sys.argv[0] else None,
               description=run.description.splitlines()[0] if run.description else "",
               provenance=provenance,
               estimators=sorted(set(estimators)), figures=[_relative(f) for f in figures],
               tables=[dict(t.to_dict(), run=tag) for t in run.tables], merged_runs=[])
    if path.exists():  # rows merged from other hardware stay; a saved run of other hardware moves there
        try:
            old = json.loads(path.read_text(encoding="utf-8"))
            merged = list(old.get("merged_runs", []))
            old_device = old.get("provenance", {}).get("hardware", {}).get("device")
            if old_device and old_device != doc["provenance"]["hardware"]["device"]:
                merged = [m for m in merged if m.get("key") != run_key(old)]
                merged.append(as_merged_run(old))
            doc["merged_runs"] = [m for m in merged if m.get("key") != run_key(doc)]
        except (ValueError, AttributeError):
            pass
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def run_key(doc):
    """The key of a saved run's rows: ``device`` and hardware (GPU name on a GPU, else CPU model)."""
    hw = doc["provenance"]["hardware"]
    gpu = hw.get("gpu") or {}
    return f"{hw.get('device', 'cpu')}: {gpu.get('name') or hw.get('cpu')}"


def as_merged_run(doc):
    """A saved run as an entry of another file's ``merged_runs``."""
    return dict(key=run_key(doc), schema=doc.get("schema", 1), provenance=doc["provenance"], tables=doc["tables"],
                estimators=doc.get("estimators", []), figures=doc.get("figures", []))


def emit(tables, args=None, file=None, *, estimators=(), figures=()):
    """Print the tables (markdown), append them to ``args.output``, and save the run.

    With ``args`` from :func:`bench_args`, the tables of every ``emit`` call of
    the run so far are saved to ``<results-dir>/<bench>.json`` (``.quick.json``
    under ``--quick``) with their raw values, seeds, targets, claims and the
    provenance; ``--no-save`` turns that off. ``estimators`` names our
    estimators the run measures (class names), ``figures`` the image files it
    wrote. Returns the markdown text.
    """
    if isinstance(tables, Table):
        tables = [tables]
    tables = list(tables)
    text = "\n".join(t.to_markdown() for t in tables)
    print(text, file=file or sys.stdout, flush=True)
    if args is not None and getattr(args, "output", None):
        with open(args.output, "a", encoding="utf-8") as f:
            f.write(text + "\n")
    if args is not None and hasattr(args, "_run"):
        run = args._run
        for t in tables:
            if not any(t is u for u in run.tables):
                run.tables.append(t)
        run.estimators = sorted(set(getattr(run, "estimators", ())) | set(estimators))
        run.figures = list(dict.fromkeys(list(getattr(run, "figures", ())) + [str(f) for f in figures]))
        path = _save(args, run.estimators, run.figures)
        if path is not None:
            print(f"saved {_relative(path)}", file=sys.stderr, flush=True)
    return text


def kept_tables(args, part_of, run):
    """The tables of the results file that the parts ``run`` now will not rewrite, and its estimators.

    For a script whose ``--part`` option runs some of its parts: ``part_of(title)`` names the part that
    writes a table (None: unknown, dropped). Pass what this returns to :func:`merge_kept` after each
    ``emit``, so that re-running one part replaces only that part's tables in the saved file.
    """
    path = results_path(args)
    if path is None or not path.exists():
        return [], []
    try:
        old = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        return [], []
    kept = [t for t in old.get("tables", []) if part_of(t["title"]) not in (None, *run)]
    return kept, (old.get("estimators", []) if kept else [])


def merge_kept(args, kept, estimators, parts, part_of):
    """Add the ``kept`` tables (see :func:`kept_tables`) to the results file just saved, ordered by ``parts``.

    The provenance of the file is this run's; each kept table keeps the ``run`` (command, commit, uncommitted
    changes, start) of the run that made it, which the pages show (a table saved before tables carried it has
    none, and its page says that its commit is not recorded).
    """
    path = results_path(args)
    if not kept or path is None or not path.exists():
        return
    doc = json.loads(path.read_text(encoding="utf-8"))
    order = {part: i for i, part in enumerate(parts)}
    doc["tables"] = sorted(doc["tables"] + list(kept), key=lambda t: order.get(part_of(t["title"]), len(parts)))
    doc["estimators"] = sorted(set(doc["estimators"]) | set(estimators))
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    tmp.replace(path)
