"""The thread rule (torch_threads) and the global configuration (set_config / config_context)."""

import os

import pytest

import sklearn_icml
from sklearn_icml.utils import _torch

torch = pytest.importorskip("torch")


@pytest.fixture
def four_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(4)
    yield
    torch.set_num_threads(before)


def test_config_roundtrip_and_validation():
    assert sklearn_icml.get_config() == {"n_threads": None}
    with sklearn_icml.config_context(n_threads=3):
        assert sklearn_icml.get_config()["n_threads"] == 3
        sklearn_icml.set_config()  # no argument: unchanged
        assert sklearn_icml.get_config()["n_threads"] == 3
    assert sklearn_icml.get_config()["n_threads"] is None
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="n_threads must be None or an int >= 1"):
            sklearn_icml.set_config(n_threads=bad)


def test_importing_the_package_config_does_not_import_torch():
    import subprocess
    import sys

    code = "import sys, sklearn_icml; sklearn_icml.set_config(n_threads=2); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_threads_are_limited_inside_and_restored_after(four_threads):
    with _torch.torch_threads(2) as n:
        assert n == 2 == torch.get_num_threads()
    assert torch.get_num_threads() == 4


def test_threads_restored_after_an_exception(four_threads):
    with pytest.raises(RuntimeError):
        with _torch.torch_threads(1):
            raise RuntimeError("boom")
    assert torch.get_num_threads() == 4


def test_default_never_exceeds_the_affinity(four_threads, monkeypatch):
    monkeypatch.setattr(_torch, "_in_parallel_worker", lambda: False)
    monkeypatch.setattr(_torch, "_machine_is_oversubscribed", lambda: False)
    monkeypatch.setattr(_torch, "_available_cpus", lambda: 2)
    with _torch.torch_threads() as n:
        assert n == 2 == torch.get_num_threads()
    monkeypatch.setattr(_torch, "_available_cpus", lambda: 16)
    with _torch.torch_threads() as n:
        assert n == 4  # never more than torch's own setting


def test_available_cpus_is_the_affinity_mask():
    if hasattr(os, "sched_getaffinity"):
        assert _torch._available_cpus() == len(os.sched_getaffinity(0))


def test_one_thread_in_a_worker_and_the_global_override_wins(four_threads, monkeypatch):
    monkeypatch.setattr(_torch, "_in_parallel_worker", lambda: True)
    with _torch.torch_threads() as n:
        assert n == 1
    with sklearn_icml.config_context(n_threads=3), _torch.torch_threads() as n:
        assert n == 3 == torch.get_num_threads()
    assert torch.get_num_threads() == 4


def _worker_threads():
    from sklearn_icml.utils._torch import default_n_threads, torch_threads

    with torch_threads() as n:
        return n, default_n_threads()


def test_loky_worker_gets_one_thread():
    joblib = pytest.importorskip("joblib")
    results = joblib.Parallel(n_jobs=2)(joblib.delayed(_worker_threads)() for _ in range(2))
    assert results == [(1, 1), (1, 1)]


def test_not_a_worker_in_the_main_process():
    assert _torch._in_parallel_worker() is False


def test_bad_n_threads():
    with pytest.raises(ValueError, match="n_threads"):
        with _torch.torch_threads(0):
            pass


def test_one_thread_on_an_oversubscribed_machine(four_threads, monkeypatch):
    monkeypatch.setattr(_torch, "_in_parallel_worker", lambda: False)
    monkeypatch.setattr(_torch, "_available_cpus", lambda: 4)
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    monkeypatch.setattr(os, "getloadavg", lambda: (5.0, 1.0, 1.0))
    assert _torch._machine_is_oversubscribed() and _torch.default_n_threads() == 1
    monkeypatch.setattr(os, "getloadavg", lambda: (4.5, 9.0, 9.0))  # our own threads alone: not oversubscribed
    assert not _torch._machine_is_oversubscribed() and _torch.default_n_threads() == 4
    with sklearn_icml.config_context(n_threads=2):
        monkeypatch.setattr(os, "getloadavg", lambda: (50.0, 1.0, 1.0))
        assert _torch.default_n_threads() == 2  # the global setting wins
