"""The shared benchmark helper (benchmarks/_bench.py): statistics, ratios, verdicts, losses kept."""

import importlib.util
import math
import pathlib

import pytest

_PATH = pathlib.Path(__file__).resolve().parents[1] / "benchmarks" / "_bench.py"
_spec = importlib.util.spec_from_file_location("_bench", _PATH)
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def _table(higher):
    t = bench.Table("t", "seconds", higher_is_better=higher)
    for v in (1.0, 3.0):
        t.add("small", "ours", v, ours=True)
    for v in (4.0, 4.0):
        t.add("small", "peerA", v)
    for v in (1.0, 1.0):
        t.add("small", "peerB", v)
    return t


def test_lower_is_better_ratios_and_a_kept_loss():
    rows = {r["method"]: r for r in _table(higher=False).rows()}
    assert rows["ours"]["mean"] == 2.0 and rows["ours"]["std"] == pytest.approx(math.sqrt(2))
    assert rows["ours"]["best_peer"] == "peerB"
    assert rows["ours"]["ratio"] == 2.0 and rows["ours"]["verdict"] == "loss"
    assert rows["peerA"]["ratio"] == 4.0 and rows["peerA"]["verdict"] is None
    assert [r["method"] for r in _table(False).rows()][0] == "ours"


def test_higher_is_better_picks_the_largest_peer():
    rows = {r["method"]: r for r in _table(higher=True).rows()}
    assert rows["ours"]["best_peer"] == "peerA"
    assert rows["ours"]["ratio"] == 0.5 and rows["ours"]["verdict"] == "loss"


def test_failed_runs_and_missing_peers():
    t = bench.Table("t", "ARI", higher_is_better=True)
    t.add("c", "ours", 0.9, ours=True)
    t.add("c", "broken-peer", float("nan"))
    (ours, peer) = t.rows()
    assert ours["ratio"] is None and peer["n"] == 0
    md = t.to_markdown()
    assert "n/a" in md and "**ours** (ours)" in md


def test_markdown_and_output_file(tmp_path, capsys):
    args = bench.bench_args("doc", ["--quick", "--output", str(tmp_path / "out.md")])
    assert args.seeds == [0, 1] and args.device == "cpu"
    t = _table(False)
    t.note("peerB is a C extension")
    bench.emit(t, args)
    printed = capsys.readouterr().out
    assert "| small | **ours** (ours) | 2 | 1.414 | 2 | 2 | loss vs peerB |" in printed
    assert "- peerB is a C extension" in printed
    assert (tmp_path / "out.md").read_text() == printed


def test_inconsistent_roles_are_rejected():
    t = bench.Table("t", "s", higher_is_better=False)
    t.add("c", "m", 1.0, ours=True)
    with pytest.raises(ValueError, match="both as ours and as a peer"):
        t.add("c", "m", 1.0)


def test_timed_takes_the_best_of_repeats():
    calls = []
    assert bench.timed(calls.append, 1, repeat=3) >= 0 and calls == [1, 1, 1]


def test_near_equal_means_are_a_tie_and_verdicts_can_be_off():
    t = bench.Table("t", "ECE", higher_is_better=False)
    t.add("c", "ours", 0.1 + 1e-17, ours=True)
    t.add("c", "peer", 0.1)
    assert t.rows()[0]["verdict"] == "tie"
    v = bench.Table("t", "ECE", higher_is_better=False, verdicts=False)
    v.add("c", "ours", 0.2, ours=True)
    v.add("c", "peer", 0.1)
    assert v.rows()[0]["verdict"] is None and v.rows()[0]["ratio"] == 2.0
