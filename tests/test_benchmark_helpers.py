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
    for seed, v in enumerate((1.0, 3.0, 2.0)):
        t.add("small", "ours", v, ours=True, seed=seed)
    for seed in range(3):
        t.add("small", "peerA", 4.0, seed=seed)
        t.add("small", "peerB", 1.0, seed=seed)
    return t


def test_lower_is_better_ratios_and_a_kept_loss():
    rows = {r["method"]: r for r in _table(higher=False).rows()}
    assert rows["ours"]["mean"] == 2.0 and rows["ours"]["std"] == pytest.approx(1.0)
    assert rows["ours"]["best_peer"] == "peerB"
    # paired differences (0, 2, 1): the 95 % interval 1 +- 4.30 * 1 / sqrt(3) holds 0, so a tie
    assert rows["ours"]["ratio"] == 2.0 and rows["ours"]["verdict"] == "tie"
    assert rows["peerA"]["ratio"] == 4.0 and rows["peerA"]["verdict"] is None
    assert [r["method"] for r in _table(False).rows()][0] == "ours"


def test_higher_is_better_picks_the_largest_peer():
    rows = {r["method"]: r for r in _table(higher=True).rows()}
    assert rows["ours"]["best_peer"] == "peerA"
    # paired differences (-3, -1, -2) against peerA's (4, 4, 4): interval -2 +- 2.48 holds 0
    assert rows["ours"]["ratio"] == 0.5 and rows["ours"]["verdict"] == "tie"


def test_two_pairs_give_no_verdict():
    # a difference that is clearly one-sided on two seeds is still no verdict: a comparison needs 3 paired seeds
    t = bench.Table("t", "seconds", higher_is_better=False)
    for seed, (ours, peer) in enumerate(((1.0, 5.0), (1.1, 5.2))):
        t.add("c", "ours", ours, ours=True, seed=seed)
        t.add("c", "peer", peer, seed=seed)
    assert {r["method"]: r for r in t.rows()}["ours"]["verdict"] == "unpaired"
    t.add("c", "ours", 0.9, ours=True, seed=2)
    t.add("c", "peer", 4.9, seed=2)
    assert {r["method"]: r for r in t.rows()}["ours"]["verdict"] == "win"


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
    assert "| small | **ours** (ours) | 2 | 1 | 3 | 2 | tie vs peerB |" in printed
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
    for seed, noise in enumerate((1e-17, -1e-17, 0.0)):  # rounding-level differences of both signs
        t.add("c", "ours", 0.1 + noise, ours=True, seed=seed)
        t.add("c", "peer", 0.1, seed=seed)
    assert t.rows()[0]["verdict"] == "tie"
    v = bench.Table("t", "ECE", higher_is_better=False, verdicts=False)
    v.add("c", "ours", 0.2, ours=True)
    v.add("c", "peer", 0.1)
    assert v.rows()[0]["verdict"] is None and v.rows()[0]["ratio"] == 2.0


# ---- paired verdicts, targets, claims and the saved results file


def _paired_table(ours, peer, higher=False):
    t = bench.Table("t", "s", higher_is_better=higher)
    for seed, (a, b) in enumerate(zip(ours, peer)):
        t.add("c", "ours", a, ours=True, seed=seed)
        t.add("c", "peer", b, seed=seed)
    return t.rows()[0]


@pytest.mark.parametrize("ours, peer", [
    ([1.0, 1.1, 0.9, 1.05], [2.0, 2.2, 1.8, 2.1]),  # clearly lower: a win when lower is better
    ([1.0, 3.0, 0.5, 2.0], [1.5, 1.0, 2.5, 1.8]),  # noisy: the interval holds 0
    ([2.0, 2.1, 2.2, 2.05], [1.0, 1.1, 1.2, 1.0]),  # clearly higher: a loss
])
def test_verdict_is_the_paired_t_interval(ours, peer):
    from scipy.stats import ttest_rel

    row = _paired_table(ours, peer)
    low, high = ttest_rel(ours, peer).confidence_interval(0.95)
    expected = "tie" if low <= 0 <= high else ("win" if high < 0 else "loss")
    assert row["verdict"] == expected
    assert row["interval"] == pytest.approx((low, high))
    assert row["n_pairs"] == 4


def test_pairs_follow_the_seeds_not_the_order():
    t = bench.Table("t", "s", higher_is_better=False)
    # peer recorded in reverse seed order: paired by seed the differences are constant -1 (a win)
    for seed, v in enumerate([1.0, 5.0, 9.0]):
        t.add("c", "ours", v, ours=True, seed=seed)
    for seed, v in reversed(list(enumerate([2.0, 6.0, 10.0]))):
        t.add("c", "peer", v, seed=seed)
    assert t.rows()[0]["verdict"] == "win"


def test_one_seed_has_no_interval_and_is_unpaired():
    row = _paired_table([1.0], [5.0])
    assert row["verdict"] == "unpaired" and row["interval"] is None and row["ratio"] == 0.2
    assert row["n_pairs"] == 1


@pytest.mark.parametrize("peer_seeds, expected", [
    ([0], "unpaired"),  # a single-seed peer: never a tie, whatever the gap
    ([0, 1, 2], "unpaired"),  # 3 pairs, but our seeds 3 and 4 have no partner
    ([0, 1, 2, 3, 4], "loss"),  # every seed paired: the interval decides
    ([0, 1, 2, 3, 4, 5, 6], "loss"),  # a peer with more seeds than ours pairs on ours
])
def test_a_peer_on_fewer_seeds_gives_no_verdict(peer_seeds, expected):
    # ours is 80x the peer's time: a clear loss when paired, unpaired otherwise (never a tie)
    t = bench.Table("t", "s", higher_is_better=False)
    for seed in range(5):
        t.add("c", "ours", 80.0 + 0.1 * seed, ours=True, seed=seed)
    for seed in peer_seeds:
        t.add("c", "peer", 1.0 + 0.2 * seed, seed=seed)
    row = t.rows()[0]
    assert row["verdict"] == expected
    assert row["n_pairs"] == min(5, len(peer_seeds))
    assert (row["interval"] is None) == (expected == "unpaired")
    assert "unpaired" in t.to_markdown() or expected != "unpaired"


def test_a_failed_peer_seed_counts_as_a_missing_seed():
    t = bench.Table("t", "s", higher_is_better=True)
    for seed, (a, b) in enumerate([(1.0, 2.0), (1.1, float("nan")), (0.9, 2.1)]):
        t.add("c", "ours", a, ours=True, seed=seed)
        t.add("c", "peer", b, seed=seed)
    assert t.rows()[0]["verdict"] == "unpaired" and t.rows()[0]["n_pairs"] == 2


@pytest.mark.parametrize("mean, best, higher, expected", [
    (1.1, 1.0, False, 0.1), (0.9, 1.0, False, 0.0), (0.8, 1.0, True, 0.2), (1.2, 1.0, True, 0.0),
    (-0.8, -1.0, False, 0.2), (-1.2, -1.0, False, 0.0),
    (0.5, 0.0, False, math.inf), (0.0, 0.0, False, 0.0), (float("nan"), 1.0, True, 0.0),
])
def test_worse_by_is_the_gap_relative_to_the_best(mean, best, higher, expected):
    assert bench.worse_by(mean, best, higher_is_better=higher) == pytest.approx(expected)


def test_bars_and_claims():
    t = bench.Table("t", "s", higher_is_better=False)
    assert t.bar("at most 1 s", 0.5, 1.0) is True
    assert t.bar("at least 2x", 1.5, 2.0, op=">=") is False
    assert t.bar("nan misses", float("nan"), 1.0) is False
    with pytest.raises(ValueError, match="op must be one of"):
        t.bar("x", 1, 1, op="=<")
    assert t.claim("slope negative", paper="-0.3", reproduced="no", measured=0.1) == "no"
    with pytest.raises(ValueError, match="reproduced must be one of"):
        t.claim("x", paper="p", reproduced="maybe", measured="m")
    md = t.to_markdown()
    assert "at most 1 s: 0.5 <= 1: met" in md and "at least 2x: 1.5 >= 2: MISSED" in md
    assert "reproduced no" in md
    saved = t.to_dict()
    assert [b["met"] for b in saved["bars"]] == [True, False, False] and saved["bars"][2]["measured"] is None


def _run(tmp_path, argv, name="demo"):
    args = bench.bench_args("Demo benchmark.", ["--results-dir", str(tmp_path)] + argv, name=name)
    t = bench.Table("fit time", "seconds", higher_is_better=False)
    for seed in args.seeds:
        t.add("n=10", "ours", 1.0 + seed, ours=True)  # the old call, no seed: seeds counted
        t.add("n=10", "peer", float("nan") if seed == 1 else 2.0 + seed)
    return args, t


def test_emit_saves_raw_values_seeds_and_provenance(tmp_path, capsys):
    import json

    args, t = _run(tmp_path, ["--seeds", "3"])
    t.bar("ours under 5 s", t.mean("n=10", "ours"), 5.0)
    bench.emit(t, args, estimators=["DemoEstimator"], figures=["doc/benchmarks/x.png"])
    second = bench.Table("quality", "ARI", higher_is_better=True)
    second.add("c", "ours", 0.5, ours=True)
    bench.emit([second], args)  # a later emit of the same run adds its tables to the same file
    capsys.readouterr()
    saved = json.loads((tmp_path / "demo.json").read_text())
    assert [tb["title"] for tb in saved["tables"]] == ["fit time", "quality"]
    rows = {r["method"]: r for r in saved["tables"][0]["rows"]}
    assert rows["ours"]["values"] == [{"seed": s, "value": 1.0 + s} for s in range(3)]
    assert rows["peer"]["values"][1] == {"seed": 1, "value": None}
    assert saved["tables"][0]["direction"] == "lower" and saved["tables"][0]["bars"][0]["met"] is True
    assert saved["estimators"] == ["DemoEstimator"] and saved["figures"] == ["doc/benchmarks/x.png"]
    prov = saved["provenance"]
    for field in ("command", "commit", "dirty", "start", "end", "wall_seconds", "cpu_seconds", "hardware",
                  "versions"):
        assert field in prov
    assert prov["hardware"]["device"] == "cpu" and prov["hardware"]["cores"] >= 1
    assert prov["versions"]["numpy"] and prov["seeds"] == [0, 1, 2]


def test_quick_runs_and_no_save(tmp_path, capsys):
    args, t = _run(tmp_path, ["--quick"])
    bench.emit(t, args)
    assert (tmp_path / "demo.quick.json").exists() and not (tmp_path / "demo.json").exists()
    args, t = _run(tmp_path / "none", ["--no-save"])
    bench.emit(t, args)
    assert not (tmp_path / "none").exists()
    capsys.readouterr()


def test_a_new_cpu_run_keeps_the_rows_merged_from_a_gpu(tmp_path, capsys):
    import json

    args, t = _run(tmp_path, [])
    bench.emit(t, args)
    saved = json.loads((tmp_path / "demo.json").read_text())
    gpu = dict(saved, provenance=dict(saved["provenance"], hardware=dict(saved["provenance"]["hardware"],
                                                                      device="cuda", gpu={"name": "G"})))
    saved["merged_runs"] = [bench.as_merged_run(gpu)]
    (tmp_path / "demo.json").write_text(json.dumps(saved))
    args, t = _run(tmp_path, [])
    bench.emit(t, args)
    again = json.loads((tmp_path / "demo.json").read_text())
    assert [m["key"] for m in again["merged_runs"]] == ["cuda: G"]
    capsys.readouterr()


def test_a_benchmark_measures_the_library_of_its_own_tree(tmp_path):
    # a script run from elsewhere (or with another sklearn_icml installed) imports the library of the tree
    # that holds benchmarks/_bench.py, the tree whose commit the run records
    import subprocess
    import sys

    script = tmp_path / "bench_probe.py"
    script.write_text(f"import sys\nsys.path.insert(0, {str(_PATH.parent)!r})\nimport _bench\nimport sklearn_icml\n"
                      "print(sklearn_icml.__file__)\n")
    out = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert pathlib.Path(out.stdout.strip()).resolve().is_relative_to(_PATH.parents[1].resolve())


def test_a_library_from_outside_the_tree_is_not_the_recorded_commit(tmp_path, monkeypatch, capsys):
    import json

    monkeypatch.setattr(bench, "git_state", lambda root=None: ("f" * 40, False))
    args, t = _run(tmp_path, ["--seeds", "2"])
    monkeypatch.setattr(bench, "_package_dir", lambda: pathlib.Path("/elsewhere/sklearn_icml"))
    bench.emit(t, args)
    prov = json.loads((tmp_path / "demo.json").read_text())["provenance"]
    assert prov["commit"] == "f" * 40 and prov["dirty"] is True and prov["package"] == "/elsewhere/sklearn_icml"
    monkeypatch.setattr(bench, "_package_dir", lambda: bench.ROOT / "sklearn_icml")
    args, t = _run(tmp_path, ["--seeds", "2"])
    bench.emit(t, args)
    prov = json.loads((tmp_path / "demo.json").read_text())["provenance"]
    assert prov["dirty"] is False and prov["package"] == "sklearn_icml"
    capsys.readouterr()
