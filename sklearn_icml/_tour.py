"""The tour: fit every registered method on its demo data and print one table.

A family registers its methods in a private ``_tour.py`` module holding a list
``TOUR_ENTRIES`` of :class:`TourEntry`. The tour finds those modules by walking
the family subpackages, so adding a method to the tour never touches this file.

Run it with ``python -m sklearn_icml tour [--device auto] [--quick]``.
"""

import argparse
import importlib
import importlib.util
import sys
import time
import traceback
from dataclasses import dataclass
from typing import Callable

__all__ = ["TourEntry", "TourResult", "collect_entries", "fit_timed", "format_table", "main"]


@dataclass(frozen=True)
class TourResult:
    """What one tour entry reports.

    ``score`` is the method's figure under ``metric``; ``baseline`` names the
    method it is compared with (scikit-learn's closest estimator, the classic
    algorithm the paper improves on, ...) and ``baseline_score`` its figure on
    the same data and seed. ``fit_seconds`` times our method's fit only.
    """

    metric: str
    score: float
    baseline: str
    baseline_score: float
    fit_seconds: float
    higher_is_better: bool = True


@dataclass(frozen=True)
class TourEntry:
    """One row of the tour.

    ``run(device, quick)`` builds the demo data from :mod:`sklearn_icml.datasets`,
    fits the method and its baseline, and returns a :class:`TourResult`.
    ``device`` is one of ``"cpu"``, ``"auto"``, ``"cuda"``; entries whose method
    has no ``device`` parameter ignore it.
    """

    name: str
    paper: str
    task: str
    run: Callable[..., TourResult]
    uses_device: bool = False


def fit_timed(estimator, *args, **kwargs):
    """Fit ``estimator`` and return ``(estimator, seconds)``."""
    start = time.perf_counter()
    estimator.fit(*args, **kwargs)
    return estimator, time.perf_counter() - start


def collect_entries():
    """Every :class:`TourEntry` registered by a family, sorted by paper number then name."""
    import sklearn_icml

    entries = []
    for family in sklearn_icml._SUBMODULES:
        module_name = f"sklearn_icml.{family}._tour"
        try:
            spec = importlib.util.find_spec(module_name)
        except ModuleNotFoundError:  # `family` is a plain module, not a package
            spec = None
        if spec is None:
            continue
        module = importlib.import_module(module_name)
        entries.extend(module.TOUR_ENTRIES)
    return sorted(entries, key=lambda e: (int(e.paper.lstrip("S")), e.name))


_COLUMNS = ["estimator", "paper", "task", "metric", "score", "baseline", "baseline score", "fit s"]


def _fmt(value):
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def format_table(rows):
    """Format tour rows (lists of cells) as a markdown table."""
    cells = [_COLUMNS] + [[_fmt(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(_COLUMNS))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |" for r in cells]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
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
            rows.append([entry.name, entry.paper, entry.task, "error", "", "", "", ""])
            continue
        arrow = "(higher better)" if res.higher_is_better else "(lower better)"
        rows.append([entry.name, entry.paper, entry.task, f"{res.metric} {arrow}", float(res.score),
                     res.baseline, float(res.baseline_score), float(res.fit_seconds)])
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
        from .utils._torch import resolve_device

        try:
            resolved = resolve_device(args.device)
        except ValueError as exc:
            parser.error(str(exc))
        print(f"device {args.device!r} resolves to {resolved}", file=sys.stderr)

    rows, n_failed = run_tour(entries, device=args.device, quick=args.quick)
    print(format_table(rows))
    if not entries:
        print("(no estimator is registered in the tour yet)")
    if n_failed:
        print(f"{n_failed} of {len(entries)} tour entries failed; see stderr.", file=sys.stderr)
        return 1
    return 0
