import numpy as np
import pytest

from sklearn_icml.utils._torch import (
    as_numpy,
    is_torch_tensor,
    resolve_device,
    to_numpy,
    to_tensor,
    torch_generator,
    torch_seed,
)

torch = pytest.importorskip("torch")


def test_resolve_cpu():
    assert resolve_device("cpu") == torch.device("cpu")


@pytest.mark.parametrize("available, expected", [(True, "cuda"), (False, "cpu")])
def test_resolve_auto_follows_cuda_availability(monkeypatch, available, expected):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: available)
    assert resolve_device("auto").type == expected


def test_resolve_cuda_without_gpu_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match="device='cuda' was requested but torch sees no CUDA device"):
        resolve_device("cuda")


def test_resolve_cuda_with_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolve_device("cuda") == torch.device("cuda")


@pytest.mark.parametrize("bad", ["gpu", "cuda:", "cuda0", "", None])
def test_resolve_rejects_other_values(bad):
    with pytest.raises(ValueError, match="device must be one of"):
        resolve_device(bad)


@pytest.mark.parametrize("device, expected", [("cuda:0", "cuda:0"), ("cuda:1", "cuda:1"), ("cuda", "cuda")])
def test_resolve_indexed_cuda_devices(monkeypatch, device, expected):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert resolve_device(device) == torch.device(expected)
    assert resolve_device(torch.device(expected)) == torch.device(expected)


@pytest.mark.parametrize("device", ["cuda:0", "cuda:1", torch.device("cuda", 0)])
def test_resolve_indexed_cuda_without_gpu_is_the_same_clear_error(monkeypatch, device):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match=r"device='cuda:[01]' was requested but torch sees no CUDA device"):
        resolve_device(device)


def test_resolve_rejects_devices_other_than_cpu_and_cuda():
    with pytest.raises(ValueError, match="CPU or CUDA device"):
        resolve_device(torch.device("meta"))


def test_generator_is_seeded_from_random_state_and_leaves_global_rng_alone():
    state = torch.random.get_rng_state()
    a = torch.randn(5, generator=torch_generator(0))
    b = torch.randn(5, generator=torch_generator(0))
    c = torch.randn(5, generator=torch_generator(1))
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert torch.equal(state, torch.random.get_rng_state())
    assert torch_generator(None).device.type == "cpu"
    rs = np.random.RandomState(3)
    assert torch_seed(rs) != torch_seed(rs)  # a RandomState advances, as in scikit-learn


def test_tensor_detection_without_import():
    assert is_torch_tensor(torch.zeros(2))
    assert is_torch_tensor(torch.nn.Parameter(torch.zeros(2)))
    assert not is_torch_tensor(np.zeros(2))
    assert not is_torch_tensor([1, 2])


def test_as_numpy_detaches_grad_tensors():
    t = torch.ones(3, requires_grad=True) * 2
    out = as_numpy(t)
    assert isinstance(out, np.ndarray)
    np.testing.assert_array_equal(out, [2, 2, 2])
    lst = [[1, 2]]
    assert as_numpy(lst) is lst


def test_to_tensor_handles_read_only_input_without_warning():
    X = np.arange(6, dtype=np.float64).reshape(2, 3)
    X.setflags(write=False)
    t = to_tensor(X, "cpu", torch.float32)  # warnings are errors in this suite
    assert t.dtype == torch.float32
    t += 1
    np.testing.assert_array_equal(X, np.arange(6).reshape(2, 3))


def test_to_tensor_handles_non_contiguous_input():
    X = np.arange(12, dtype=np.float64).reshape(3, 4)[:, ::2]
    np.testing.assert_array_equal(to_tensor(X, "cpu").numpy(), X)


def test_to_numpy_returns_an_independent_copy():
    t = torch.arange(4.0)
    out = to_numpy(t)
    out[0] = 100
    assert t[0].item() == 0
    assert to_numpy(t, dtype=np.float32).dtype == np.float32


@pytest.mark.cuda
def test_roundtrip_on_cuda():
    X = np.random.RandomState(0).rand(4, 3)
    t = to_tensor(X, resolve_device("cuda"))
    assert t.device.type == "cuda"
    np.testing.assert_array_equal(to_numpy(t), X)
    np.testing.assert_array_equal(as_numpy(t), X)


def test_forward_float64_leaves_the_module_alone_and_is_row_independent():
    import torch

    from sklearn_icml.utils._torch import forward_float64

    net = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    X = np.random.RandomState(0).normal(size=(20, 3))
    out = forward_float64(net, X)
    assert out.dtype == torch.float64 and not out.requires_grad
    assert next(net.parameters()).dtype == torch.float32  # the fitted module keeps its dtype
    # the definition: the same weights in float64, row by row
    W1, b1 = net[0].weight.detach().double().numpy(), net[0].bias.detach().double().numpy()
    W2, b2 = net[2].weight.detach().double().numpy(), net[2].bias.detach().double().numpy()
    expected = np.tanh(X @ W1.T + b1) @ W2.T + b2
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(forward_float64(net, torch.as_tensor(X[:5])).numpy(), out.numpy()[:5])
