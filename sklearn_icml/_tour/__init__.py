"""The tour: fit every registered method on its demo data and print one table.

The entries live here, one module per family (``sklearn_icml/_tour/<family>.py``),
each holding a list ``TOUR_ENTRIES`` of :class:`TourEntry` and importing the
family's public names only. The tour reads every module of this package, so
adding a method to the tour never touches this file.

Run it with ``python -m sklearn_icml tour [--device auto] [--quick]``.
"""

import argparse
import importlib
import pkgutil
import sys
import time
import traceback

from ._base import TourEntry, TourResult, fit_timed

__all__ = ["PAPERS", "TourEntry", "TourResult", "collect_entries", "fit_timed", "format_table", "main", "verdict"]

#: The seed papers (ICML 2024) by their code, as the tour's legend names them.
PAPERS = {
    "S1": "DoRA: weight-decomposed low-rank adaptation",
    "S2": "Left-invertible Wasserstein GAN",
    "S3": "Unified differentially private clustering",
    "S4": "DySLIM: learning chaotic dynamics with an invariant-measure objective",
    "S5": "Auto-Linear: self-supervised encoders with a linear latent map",
    "S6": "In-context language learning and in-context n-gram heads",
    "S7": "Dynamic correlation clustering in vertex streams",
    "S8": "FreeBind: binding expert embedding spaces into a unified space",
    "S9": "PrE-Text: differentially private synthetic text by Private Evolution",
    "S10": "Optimal convex combinations of feature attributions",
    "S11": "Borda regret minimisation for generalized linear dueling bandits",
    "S12": "Position: publish negative results",
    "S13": "MALIBO: meta-learning Bayesian optimisation without a surrogate",
    "S14": "Differentiable combinatorial scheduling with the constrained Gumbel trick",
    "S15": "Multimodal prototyping for survival (histology and pathway prototypes)",
    "S16": "How flawed is ECE? Logit-smoothed ECE (LS-ECE)",
    "S17": "Chatbot Arena: Bradley-Terry ranking from pairwise human votes",
    "S18": "Expand-and-Cluster: identifying a network's weights from its input-output map",
    "S19": "Adaptive model shapes: compute-optimal training across scaling laws",
}

#: Widest line of the table and legend.
MAX_WIDTH = 120
#: Relative difference under which a contest is a tie.
TIE_TOL = 0.01
#: Relative difference under which an agreement check agrees.
AGREE_TOL = 0.25


def collect_entries():
    """Every :class:`TourEntry` of the entry modules, sorted by paper number then name."""
    entries = []
    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("_"):
            entries.extend(importlib.import_module(f"{__name__}.{info.name}").TOUR_ENTRIES)
    return sorted(entries, key=lambda e: (int(e.paper.lstrip("S")), e.name))


_COLUMNS = ["estimator", "paper", "metric", "goal", "ours", "baseline", "theirs", "verdict", "fit s"]
#: Columns whose text may be cut (with "~") to keep the table within MAX_WIDTH: metric, baseline, estimator.
_SHRINKABLE = (2, 5, 0)
_NUMERIC = (4, 6, 8)


def verdict(result):
    """``"better"``, ``"worse"`` or ``"tie"`` (within TIE_TOL); ``"agrees"``/``"differs"`` for agreement rows."""
    ours, theirs = float(result.score), float(result.baseline_score)
    gap = abs(ours - theirs) / max(abs(ours), abs(theirs), 1e-12)
    if result.agreement:
        return "agrees" if gap <= AGREE_TOL else "differs"
    if gap <= TIE_TOL:
        return "tie"
    return "better" if (ours > theirs) == result.higher_is_better else "worse"


def _fmt(value):
    if isinstance(value, float):
        if 1e4 <= abs(value) < 1e9:
            return f"{value:.0f}"  # 15110, not 1.511e+04
        return f"{value:.4g}"
    return str(value)


def _seconds(value):
    return f"{value:.2f}" if isinstance(value, float) else value


def _cut(text, width):
    return text if len(text) <= width else text[:width - 1] + "~"


def format_table(rows, *, max_width=MAX_WIDTH):
    """Format tour rows (lists of cells, as in ``_COLUMNS``) as an aligned table at most ``max_width`` wide.

    Columns are separated by two spaces; numbers are right-aligned. When the
    rows are too wide, the metric, baseline and estimator texts are cut
    (ending in ``~``), widest first.
    """
    cells = [_COLUMNS] + [[_fmt(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(_COLUMNS))]
    floor = {2: 16, 5: 14, 0: 12}
    while sum(widths) + 2 * (len(widths) - 1) > max_width:
        texts = [k for k in _SHRINKABLE[:2] if widths[k] > floor[k]]
        if texts:  # the wider of metric and baseline first; the estimator's name last
            widths[max(texts, key=lambda k: widths[k])] -= 1
        elif widths[0] > floor[0]:
            widths[0] -= 1
        else:
            break
    lines = []
    for r in cells:
        parts = [(_cut(c, w).rjust(w) if i in _NUMERIC and r is not cells[0] else _cut(c, w).ljust(w))
                 for i, (c, w) in enumerate(zip(r, widths))]
        lines.append("  ".join(parts).rstrip())
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def format_legend(papers, counts, seconds, fit_seconds, *, max_width=MAX_WIDTH):
    """The lines under the table: the papers of the rows, what the verdicts mean and the totals."""
    lines = ["", "Papers (ICML 2024):"]
    for code in sorted(set(papers), key=lambda c: int(c.lstrip("S"))):
        lines.append(_cut(f"  {code:<4} {PAPERS.get(code, '')}", max_width))
    lines += [
        "",
        "goal: whether the metric is minimised or maximised. verdict: ours against the baseline on the same data",
        f"and seed (tie: within {TIE_TOL:.0%}). 'agrees'/'differs' marks an agreement check, not a contest: the",
        f"baseline is a figure ours should match (within {AGREE_TOL:.0%}). fit s: the fit of our method alone.",
        "",
        "Total: " + ", ".join(f"{n} {k}" for k, n in counts.items() if n)
        + f"; {seconds:.1f} s wall time, {fit_seconds:.1f} s of it in our fits.",
    ]
    return "\n".join(lines)


def run_tour(entries, *, device="cpu", quick=False, err=None):
    """Run ``entries`` and return ``(rows, n_failed)``; progress goes to ``err`` (stderr)."""
    err = sys.stderr if err is None else err
    rows, n_failed = [], 0
    for i, entry in enumerate(entries, 1):
        print(f"[{i}/{len(entries)}] {entry.name} ({entry.paper}): {entry.task} ...",
              file=err, flush=True)
        start = time.perf_counter()
        try:
            res = entry.run(device=device, quick=quick)
        except Exception:  # report and go on with the other entries
            n_failed += 1
            traceback.print_exc(file=err)
            rows.append([entry.name, entry.paper, entry.task, "", "", "", "", "error", ""])
            continue
        rows.append([entry.name, entry.paper, res.metric, "max" if res.higher_is_better else "min", float(res.score),
                     res.baseline, float(res.baseline_score), verdict(res), _seconds(float(res.fit_seconds))])
        print(f"      done in {time.perf_counter() - start:.1f} s", file=err, flush=True)
    return rows, n_failed


def main(argv=None):
    """Command-line entry point of ``python -m sklearn_icml``."""
    parser = argparse.ArgumentParser(prog="python -m sklearn_icml",
                                     description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    tour = sub.add_parser("tour",
                          help="fit every registered estimator on its demo data and print a table")
    tour.add_argument("--device", choices=["cpu", "auto", "cuda"], default="cpu",
                      help="device for the estimators that compute in torch (default: cpu)")
    tour.add_argument("--quick", action="store_true", help="smaller demo data, for a smoke run")
    tour.add_argument("--only", action="append", metavar="NAME", help="run only this entry (repeatable)")
    tour.add_argument("--list", action="store_true", help="list the entries and exit")
    args = parser.parse_args(argv)

    entries = collect_entries()
    if args.only:
        unknown = sorted(set(args.only) - {e.name for e in entries})
        if unknown:
            parser.error(f"unknown tour entries {unknown}; known: {[e.name for e in entries]}")
        entries = [e for e in entries if e.name in args.only]
    if args.list:
        for e in entries:
            print(f"{e.name}\t{e.paper}\t{e.task}")
        return 0
    if args.device != "cpu":
        from ..utils._torch import resolve_device

        try:
            resolved = resolve_device(args.device)
        except ValueError as exc:
            parser.error(str(exc))
        print(f"device {args.device!r} resolves to {resolved}", file=sys.stderr)

    start = time.perf_counter()
    rows, n_failed = run_tour(entries, device=args.device, quick=args.quick)
    seconds = time.perf_counter() - start
    print(format_table(rows))
    if not entries:
        print("(no estimator is registered in the tour yet)")
    else:
        counts = {k: sum(r[7] == k for r in rows) for k in ("better", "tie", "worse", "agrees", "differs", "error")}
        fit_seconds = sum(float(r[8]) for r in rows if r[8])
        print(format_legend([r[1] for r in rows], counts, seconds, fit_seconds))
    if n_failed:
        print(f"{n_failed} of {len(entries)} tour entries failed; see stderr.", file=sys.stderr)
        return 1
    return 0
