"""DoRALinear, LoRALinear, apply_adapters, merge_adapters and the magnitude/direction diagnostic."""

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

from sklearn_icml.finetune import (  # noqa: E402
    DoRALinear,
    LoRALinear,
    apply_adapters,
    magnitude_direction_shift,
    merge_adapters,
)
from sklearn_icml.utils._sklearn_private import InvalidParameterError  # noqa: E402


def _base(n_in=64, n_out=48, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    layer = torch.nn.utils.skip_init(nn.Linear, n_in, n_out, dtype=dtype)
    with torch.no_grad():
        layer.weight.copy_(torch.randn(n_out, n_in, generator=g, dtype=dtype) / np.sqrt(n_in))
        layer.bias.copy_(torch.randn(n_out, generator=g, dtype=dtype))
    return layer


def _perturb(layer, seed=1):
    """Give an adapter non-trivial B (and m) so that tests see more than the identity."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        layer.lora_B.copy_(0.3 * torch.randn(layer.lora_B.shape, generator=g, dtype=layer.lora_B.dtype))
        if hasattr(layer, "magnitude"):
            noise = torch.randn(layer.magnitude.shape, generator=g, dtype=layer.magnitude.dtype)
            layer.magnitude.mul_(1 + 0.2 * noise)
    return layer


def _dense_dora(layer, x):
    """DoRA from the paper's equation, with nothing reused: m * V / ||V||_row, V = W0 + s B A."""
    V = layer.base_layer.weight + layer.scaling * layer.lora_B @ layer.lora_A
    W = (layer.magnitude / torch.linalg.vector_norm(V, dim=1))[:, None] * V
    return x @ W.T + layer.base_layer.bias


# -- the layers on their own ------------------------------------------------------------------------


@pytest.mark.parametrize("cls", [DoRALinear, LoRALinear])
def test_adapter_is_exactly_the_base_at_start(cls):
    base = _base()
    layer = cls(copy.deepcopy(base), r=4)
    x = torch.randn(32, 64, generator=torch.Generator().manual_seed(2))
    assert torch.equal(layer(x), base(x))
    assert torch.equal(layer.merged_weight(), base.weight)
    if cls is DoRALinear:
        assert torch.equal(layer.magnitude, torch.linalg.vector_norm(base.weight, dim=1))


def test_dora_forward_is_the_papers_equation_and_merge_is_exact():
    layer = _perturb(DoRALinear(_base(dtype=torch.float64), r=4, alpha=8))
    x = torch.randn(16, 64, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    expected = _dense_dora(layer, x)
    torch.testing.assert_close(layer(x), expected, rtol=0, atol=1e-12)
    merged = layer.merged_linear()
    torch.testing.assert_close(merged(x), expected, rtol=0, atol=1e-12)
    assert torch.equal(merged.bias, layer.base_layer.bias)
    # the layer's output moved: the test is not comparing the identity with itself
    assert (expected - layer.base_layer(x)).abs().max() > 0.1


def test_lora_forward_and_merge():
    layer = _perturb(LoRALinear(_base(dtype=torch.float64), r=3, alpha=5))
    x = torch.randn(16, 64, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    W = layer.base_layer.weight + (5 / 3) * layer.lora_B @ layer.lora_A
    torch.testing.assert_close(layer(x), x @ W.T + layer.base_layer.bias, rtol=0, atol=1e-12)
    torch.testing.assert_close(layer.merged_linear().weight, W, rtol=0, atol=1e-14)


@pytest.mark.parametrize("use_rslora, expected", [(False, 16 / 4), (True, 16 / 2)])
def test_scaling_and_default_alpha(use_rslora, expected):
    assert DoRALinear(_base(), r=4, alpha=16, use_rslora=use_rslora).scaling == expected
    layer = LoRALinear(_base(), r=4)
    assert layer.alpha == 8 and layer.scaling == 2.0


def test_factored_norm_equals_dense_norm_and_gives_the_same_gradients():
    dense = _perturb(DoRALinear(_base(dtype=torch.float64), r=4, norm="dense"))
    factored = copy.deepcopy(dense)
    factored.norm = "factored"
    torch.testing.assert_close(factored.weight_norm(), dense.weight_norm(), rtol=1e-12, atol=0)
    x = torch.randn(8, 64, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    for layer in (dense, factored):
        layer(x).pow(2).sum().backward()
    for name in ("lora_A", "lora_B", "magnitude"):
        torch.testing.assert_close(getattr(factored, name).grad, getattr(dense, name).grad, rtol=1e-10, atol=0)
    # float32: within float32 rounding of the dense norm
    d32 = _perturb(DoRALinear(_base(), r=4))
    f32 = copy.deepcopy(d32)
    f32.norm = "factored"
    torch.testing.assert_close(f32.weight_norm(), d32.weight_norm(), rtol=1e-6, atol=0)


def test_factored_norm_is_exact_at_start_and_handles_a_dead_unit():
    base = _base(n_in=5, n_out=3)
    with torch.no_grad():
        base.weight[1] = 0.0
    layer = DoRALinear(base, r=2, norm="factored")
    x = torch.randn(4, 5, generator=torch.Generator().manual_seed(0))
    out = layer(x)
    assert torch.isfinite(out).all()
    assert torch.equal(out, base(x))


def test_detached_norm_gets_no_gradient_and_undetached_follows_the_full_formula():
    x = torch.randn(8, 64, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    detached = _perturb(DoRALinear(_base(dtype=torch.float64), r=4))
    full = copy.deepcopy(detached)
    full.detach_norm = False
    assert not detached.weight_norm().requires_grad
    assert full.weight_norm().requires_grad
    # undetached: the autograd gradient of the dense equation
    A = full.lora_A.detach().clone().requires_grad_()
    _dense_dora(_Proxy(full, A), x).pow(2).sum().backward()
    full(x).pow(2).sum().backward()
    torch.testing.assert_close(full.lora_A.grad, A.grad, rtol=1e-10, atol=1e-12)
    detached(x).pow(2).sum().backward()
    assert not torch.allclose(detached.lora_A.grad, full.lora_A.grad)


class _Proxy:
    """The attributes _dense_dora reads, with lora_A swapped for a leaf tensor."""

    def __init__(self, layer, A):
        self.base_layer, self.scaling, self.lora_B, self.magnitude, self.lora_A = (
            layer.base_layer, layer.scaling, layer.lora_B.detach(), layer.magnitude.detach(), A)


def test_dropout_recomputes_w0x_and_uses_the_given_generator():
    layer = _perturb(DoRALinear(_base(dtype=torch.float64), r=4, dropout=0.5)).train()
    x = torch.randn(16, 64, dtype=torch.float64, generator=torch.Generator().manual_seed(6))
    state = torch.random.get_rng_state()
    layer.dropout_generator = torch.Generator().manual_seed(7)
    out = layer(x)
    assert torch.equal(torch.random.get_rng_state(), state), "the global generator was used"
    keep = torch.empty_like(x).bernoulli_(0.5, generator=torch.Generator().manual_seed(7))
    xd = x * keep / 0.5
    V = layer.base_layer.weight + layer.scaling * layer.lora_B @ layer.lora_A
    ratio = layer.magnitude / torch.linalg.vector_norm(V, dim=1)
    expected = (layer.base_layer(x) + (ratio - 1) * (xd @ layer.base_layer.weight.T)
                + ratio * layer.scaling * (xd @ (layer.lora_B @ layer.lora_A).T))
    torch.testing.assert_close(out, expected, rtol=0, atol=1e-12)
    # eval mode: no dropout, the merged equation
    torch.testing.assert_close(layer.eval()(x), _dense_dora(layer, x), rtol=0, atol=1e-12)


def test_adapters_take_batched_sequences():
    layer = _perturb(DoRALinear(_base(n_in=6, n_out=5), r=2))
    x = torch.randn(3, 7, 6, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(layer(x), layer.merged_linear()(x), rtol=1e-5, atol=1e-6)


def test_only_adapter_parameters_are_trainable():
    layer = DoRALinear(_base(n_in=10, n_out=6), r=3)
    trainable = {n: p.numel() for n, p in layer.named_parameters() if p.requires_grad}
    assert trainable == {"lora_A": 30, "lora_B": 18, "magnitude": 6}
    assert not LoRALinear(_base(n_in=10, n_out=6), r=3).base_layer.weight.requires_grad


def test_layer_argument_errors():
    with pytest.raises(TypeError, match="DoRALinear wraps an nn.Linear"):
        DoRALinear(nn.Conv1d(2, 2, 1))
    with pytest.raises(ValueError, match="r must be an integer >= 1; got 0"):
        DoRALinear(_base(), r=0)
    with pytest.raises(ValueError, match="dropout must be in"):
        LoRALinear(_base(), dropout=1.0)
    with pytest.raises(ValueError, match="norm must be 'dense' or 'factored'; got 'svd'"):
        DoRALinear(_base(), norm="svd")


def test_adapter_on_device_draws_a_like_on_cpu(device):
    base = _base(n_in=8, n_out=4)
    cpu = DoRALinear(copy.deepcopy(base), r=2, generator=torch.Generator().manual_seed(0))
    dev = DoRALinear(copy.deepcopy(base).to(device), r=2, generator=torch.Generator().manual_seed(0))
    assert dev.lora_A.device.type == device
    torch.testing.assert_close(dev.lora_A.cpu(), cpu.lora_A)
    x = torch.randn(5, 8)
    torch.testing.assert_close(dev(x.to(device)).cpu(), base(x), rtol=1e-5, atol=1e-6)


# -- apply_adapters / merge_adapters -----------------------------------------------------------------


def _net():
    g = torch.Generator().manual_seed(0)
    net = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Sequential(nn.Linear(16, 16), nn.ReLU()), nn.Linear(16, 3))
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.5)
    return net


def test_apply_adapters_default_targets_all_but_the_head_and_freezes_the_rest():
    net = _net()
    names = apply_adapters(net, "dora", r=2, random_state=0)
    assert names == ["0", "2.0"]
    assert isinstance(net[0], DoRALinear) and isinstance(net[2][0], DoRALinear)
    assert type(net[3]) is nn.Linear
    trainable = sum(p.numel() for p in net.parameters() if p.requires_grad)
    assert trainable == (2 * (6 + 16) + 16) + (2 * (16 + 16) + 16)


@pytest.mark.parametrize("targets, expected", [
    (["3"], ["3"]),
    (["0", "3"], ["0", "3"]),
    ("2\\.0|3", ["2.0", "3"]),
    (lambda name, layer: layer.out_features == 16, ["0", "2.0"]),
    (["0"], ["0"]),
])
def test_apply_adapters_target_selection(targets, expected):
    net = _net()
    assert apply_adapters(net, "lora", target_modules=targets, r=1) == expected
    assert [n for n, m in net.named_modules() if isinstance(m, LoRALinear)] == expected


def test_apply_adapters_matches_dotted_suffix():
    outer = nn.Sequential(_net())
    assert apply_adapters(outer, target_modules=["2.0"], r=1) == ["0.2.0"]


def test_apply_adapters_is_seeded_and_leaves_the_global_generator_alone():
    a, b, c = _net(), _net(), _net()  # nn.Linear's own init uses the global generator: build first
    state = torch.random.get_rng_state()
    apply_adapters(a, random_state=3)
    apply_adapters(b, random_state=3)
    apply_adapters(c, random_state=4)
    assert torch.equal(torch.random.get_rng_state(), state)
    assert torch.equal(a[0].lora_A, b[0].lora_A)
    assert not torch.equal(a[0].lora_A, c[0].lora_A)


def test_apply_adapters_errors():
    with pytest.raises(ValueError, match="no nn.Linear named 'fc'"):
        apply_adapters(_net(), target_modules=["fc"])
    with pytest.raises(ValueError, match="selects no nn.Linear layer"):
        apply_adapters(_net(), target_modules="nothing")
    with pytest.raises(ValueError, match="wrap the nn.Linear"):
        apply_adapters(nn.Linear(3, 2))
    net = _net()
    apply_adapters(net)
    with pytest.raises(ValueError, match="already holds adapters"):
        apply_adapters(net)
    with pytest.raises(InvalidParameterError, match="method"):
        apply_adapters(_net(), "vera")
    with pytest.raises(InvalidParameterError, match="module"):
        apply_adapters(np.zeros(3))


@pytest.mark.parametrize("method", ["dora", "lora"])
def test_merge_adapters_gives_plain_linears_with_the_same_function_and_parameter_count(method):
    base = _net()
    net = copy.deepcopy(base)
    apply_adapters(net, method, target_modules=["0", "2.0", "3"], r=2, random_state=0)
    for layer in (net[0], net[2][0], net[3]):
        _perturb(layer)
    x = torch.randn(20, 6, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        adapted = net(x)
    assert merge_adapters(net) is net
    assert all(type(m) is nn.Linear for m in net.modules() if isinstance(m, nn.Linear))
    assert not any(isinstance(m, (DoRALinear, LoRALinear)) for m in net.modules())
    assert [(n, p.shape) for n, p in net.named_parameters()] == [(n, p.shape) for n, p in base.named_parameters()]
    with torch.no_grad():
        torch.testing.assert_close(net(x), adapted, rtol=1e-5, atol=1e-5)
    for new, old in ((net[0], base[0]), (net[2][0], base[2][0]), (net[3], base[3])):
        assert torch.equal(new.bias, old.bias), "the bias is untouched"
        assert not torch.equal(new.weight, old.weight)


# -- the magnitude/direction diagnostic --------------------------------------------------------------


def test_magnitude_direction_shift_separates_the_two_components():
    rng = np.random.default_rng(0)
    W0 = rng.standard_normal((5, 7))
    scale = np.array([1.0, 2.0, 0.5, 1.5, 3.0])
    dm, dd = magnitude_direction_shift(W0, scale[:, None] * W0)
    np.testing.assert_allclose(dm, np.mean(np.abs(scale - 1) * np.linalg.norm(W0, axis=1)))
    assert dd == pytest.approx(0.0, abs=1e-15)
    # a rotation in the plane of two input coordinates keeps the row norms
    c, s = np.cos(0.3), np.sin(0.3)
    R = np.eye(7)
    R[:2, :2] = [[c, -s], [s, c]]
    W = W0 @ R
    dm, dd = magnitude_direction_shift(W0, W)
    assert dm == pytest.approx(0.0, abs=1e-12)
    cos = np.sum(W0 * W, axis=1) / np.linalg.norm(W0, axis=1) ** 2
    np.testing.assert_allclose(dd, np.mean(1 - cos))
    assert dd > 0.01


def test_magnitude_direction_shift_takes_tensors_linears_and_adapters():
    base = _base(n_in=6, n_out=4)
    layer = _perturb(DoRALinear(copy.deepcopy(base), r=2))
    expected = magnitude_direction_shift(base.weight.detach().numpy(), layer.merged_weight().detach().numpy())
    assert magnitude_direction_shift(base, layer) == pytest.approx(expected)
    assert magnitude_direction_shift(base.weight, layer.merged_linear()) == pytest.approx(expected)
    dm, _ = expected
    m0 = torch.linalg.vector_norm(base.weight, dim=1)
    assert dm == pytest.approx(float((layer.magnitude - m0).abs().mean().detach()), rel=1e-5)


def test_magnitude_direction_shift_errors():
    with pytest.raises(ValueError, match="shapes differ"):
        magnitude_direction_shift(np.ones((2, 3)), np.ones((3, 2)))
    with pytest.raises(ValueError, match="must be 2-D"):
        magnitude_direction_shift(np.ones(3), np.ones(3))
    with pytest.raises(TypeError, match="must be a weight matrix"):
        magnitude_direction_shift(nn.ReLU(), np.ones((2, 2)))
