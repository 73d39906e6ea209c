"""`python -m sklearn_icml tour`: the registry, the table, failures and the CLI."""

import subprocess
import sys

import pytest

from sklearn_icml import _tour
from sklearn_icml._tour import TourEntry, TourResult, collect_entries, main


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
    header = out.out.splitlines()[0]
    assert header.startswith("| estimator ") and "| paper " in header and "| baseline score " in header
    for entry in collect_entries():
        assert f"| {entry.name} " in out.out
        assert entry.name in out.err  # progress on stderr


def test_failing_entry_is_reported_and_exit_code_is_one(fake_registry, capsys):
    assert main(["tour"]) == 1
    out = capsys.readouterr()
    assert "| Bad " in out.out and "error" in out.out
    assert "| Good " in out.out and "LogisticRegression" in out.out
    assert "RuntimeError: boom" in out.err
    assert out.out.index("| Bad ") < out.out.index("| Good ")  # sorted by paper


def test_only_and_list(fake_registry, capsys):
    assert main(["tour", "--only", "Good"]) == 0
    assert "| Bad " not in capsys.readouterr().out
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
