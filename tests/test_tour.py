"""`python -m sklearn_icml tour`: the registry, the table, failures and the CLI."""

import subprocess
import sys

import pytest

from sklearn_icml import _tour
from sklearn_icml._tour import PAPERS, TourEntry, TourResult, collect_entries, format_table, main, verdict


def _ok(device, quick):
    return TourResult(metric="accuracy", score=0.9, baseline="LogisticRegression",
                      baseline_score=0.8, fit_seconds=0.01)


def _boom(device, quick):
    raise RuntimeError("boom")


@pytest.fixture
def fake_registry(monkeypatch):
    entries = [TourEntry("Good", "S17", "ranking", _ok), TourEntry("Bad", "S3", "clustering", _boom)]
    monkeypatch.setattr(_tour, "collect_entries", lambda: sorted(entries, key=lambda e: int(e.paper[1:])))
    return entries


def test_registered_entries_are_well_formed():
    entries = collect_entries()
    names = [e.name for e in entries]
    assert len(names) == len(set(names))
    for e in entries:
        assert e.paper.startswith("S") and 1 <= int(e.paper[1:]) <= 19
        assert callable(e.run)


def test_real_tour_quick_runs_every_entry(capsys):
    assert main(["tour", "--quick"]) == 0
    out = capsys.readouterr()
    lines = out.out.splitlines()
    assert lines[0].split() == ["estimator", "paper", "metric", "goal", "ours", "baseline", "theirs", "verdict",
                                "fit", "s"]
    assert max(map(len, lines)) <= 120
    for entry in collect_entries():
        assert any(line.startswith(entry.name + " ") for line in lines)
        assert entry.name in out.err  # progress on stderr
        assert f"  {entry.paper:<4} {PAPERS[entry.paper]}" in out.out  # the legend names the paper
    # the LS-ECE row is an agreement check (binned ECE tracks LS-ECE), not a contest
    ls_row = next(line for line in lines if line.startswith("ls_ece "))
    assert "agrees" in ls_row.split()
    assert lines[-1].startswith("Total: ") and "s wall time" in lines[-1]


def test_verdicts():
    def res(ours, theirs, higher=True, agreement=False):
        return TourResult("m", ours, "b", theirs, 0.1, higher_is_better=higher, agreement=agreement)

    assert verdict(res(0.9, 0.8)) == "better"
    assert verdict(res(0.9, 0.8, higher=False)) == "worse"
    assert verdict(res(100.0, 100.5)) == "tie"  # within 1 %
    assert verdict(res(0.16, 0.17, agreement=True)) == "agrees"
    assert verdict(res(0.1, 0.2, agreement=True)) == "differs"


def test_table_stays_within_120_characters_and_cuts_long_text():
    long = ["DynamicCorrelationClustering", "S7", "a very long metric description " * 3, "min", 0.123456,
            "a very long baseline description " * 2, 1234567.0, "better", "12.34"]
    table = format_table([long, ["X", "S1", "m", "max", 1.0, "b", 2.0, "worse", "0.01"]])
    lines = table.splitlines()
    assert max(map(len, lines)) <= 120
    assert "DynamicCorrelationClustering" in lines[2]  # names are cut last
    assert "~" in lines[2] and "0.1235" in lines[2] and "1234567" in lines[2]


def test_failing_entry_is_reported_and_exit_code_is_one(fake_registry, capsys):
    assert main(["tour"]) == 1
    out = capsys.readouterr()
    assert "\nBad " in out.out and "error" in out.out
    assert "\nGood " in out.out and "LogisticRegression" in out.out and "better" in out.out
    assert "RuntimeError: boom" in out.err
    assert out.out.index("\nBad ") < out.out.index("\nGood ")  # sorted by paper
    assert "Total: 1 better, 1 error;" in out.out


def test_only_and_list(fake_registry, capsys):
    assert main(["tour", "--only", "Good"]) == 0
    assert "\nBad " not in capsys.readouterr().out
    assert main(["tour", "--list"]) == 0
    assert capsys.readouterr().out.splitlines() == ["Bad\tS3\tclustering", "Good\tS17\tranking"]
    with pytest.raises(SystemExit):
        main(["tour", "--only", "Nope"])


def test_cuda_request_without_gpu_is_a_usage_error(capsys):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(SystemExit) as exc:
        main(["tour", "--device", "cuda"])
    assert exc.value.code == 2
    assert "no CUDA device" in capsys.readouterr().err


def test_module_entry_point():
    proc = subprocess.run([sys.executable, "-m", "sklearn_icml", "tour", "--list"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [f"{e.name}\t{e.paper}\t{e.task}" for e in collect_entries()]
