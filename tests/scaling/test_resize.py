"""The resize operators keep the network's outputs."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sklearn_icml.scaling import resize_input_resolution, widen_mlp  # noqa: E402


def _mlp(sizes, act=None, seed=0):
    gen = torch.Generator().manual_seed(seed)
    layers = []
    for i, (n_in, n_out) in enumerate(zip(sizes, sizes[1:])):
        lin = torch.nn.Linear(n_in, n_out)
        with torch.no_grad():
            lin.weight.copy_(torch.randn(n_out, n_in, generator=gen))
            lin.bias.copy_(torch.randn(n_out, generator=gen))
        layers.append(lin)
        if i < len(sizes) - 2:
            layers.append((act or torch.nn.Tanh)())
    return torch.nn.Sequential(*layers).double()


@pytest.mark.parametrize("method", ["fresh", "duplicate"])
@pytest.mark.parametrize("sizes,width", [((5, 4, 2), 16), ((5, 3, 6, 1), (7, 9)), ((3, 8, 2), 8)])
def test_widen_mlp_keeps_outputs(method, sizes, width):
    net = _mlp(sizes)
    before = [p.detach().clone() for p in net.parameters()]
    x = torch.randn(64, sizes[0], generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    wide = widen_mlp(net, width, method=method, random_state=0)
    torch.testing.assert_close(wide(x), net(x), rtol=1e-12, atol=1e-12)
    widths = [width] * (len(sizes) - 2) if isinstance(width, int) else list(width)
    assert [m.out_features for m in wide if isinstance(m, torch.nn.Linear)][:-1] == widths
    for p, q in zip(before, net.parameters()):  # the input network is untouched
        assert torch.equal(p, q)


def test_widened_units_are_not_inert():
    net = _mlp((4, 3, 1), act=torch.nn.ReLU)
    x = torch.randn(32, 4, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    fresh = widen_mlp(net, 6, random_state=0)
    assert torch.all(fresh[2].weight[:, 3:] == 0) and torch.any(fresh[0].weight[3:] != 0)
    dup = widen_mlp(net, 6, method="duplicate", random_state=0)
    # copies carry different shares of the outgoing weight, so gradients differ and symmetry breaks
    out_w = dup[2].weight.detach()
    assert torch.unique(out_w.round(decimals=12)).numel() > 3
    torch.testing.assert_close(dup(x), net(x))


def test_widen_mlp_rejects_bad_arguments():
    net = _mlp((4, 6, 1))
    with pytest.raises(ValueError, match="at least the current"):
        widen_mlp(net, 3)
    with pytest.raises(ValueError, match="method"):
        widen_mlp(net, 8, method="noise")
    with pytest.raises(TypeError, match="Sequential"):
        widen_mlp(net[0], 8)


@pytest.mark.parametrize("size,new_size", [(2, 4), (2, 8), (4, 8), (1, 8)])
@pytest.mark.parametrize("channels", [1, 3])
def test_going_up_is_exact_on_every_image(size, new_size, channels):
    gen = torch.Generator().manual_seed(0)
    coarse = torch.nn.Linear(channels * size * size, 5).double()
    fine = resize_input_resolution(coarse, size, new_size, channels=channels)
    x = torch.rand(20, channels, new_size, new_size, generator=gen, dtype=torch.float64)
    pooled = torch.nn.functional.avg_pool2d(x, new_size // size)
    torch.testing.assert_close(fine(x.flatten(1)), coarse(pooled.flatten(1)), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("size,new_size", [(8, 4), (8, 2), (4, 2)])
def test_going_down_is_exact_on_piecewise_constant_images(size, new_size):
    gen = torch.Generator().manual_seed(0)
    fine = torch.nn.Linear(size * size, 3).double()
    coarse = resize_input_resolution(fine, size, new_size)
    blocks = torch.rand(10, 1, new_size, new_size, generator=gen, dtype=torch.float64)
    k = size // new_size
    x = blocks.repeat_interleave(k, dim=2).repeat_interleave(k, dim=3)  # constant on k x k blocks
    torch.testing.assert_close(coarse(blocks.flatten(1)), fine(x.flatten(1)), rtol=1e-12, atol=1e-12)
    # and up-then-down gives the coarse layer back
    back = resize_input_resolution(resize_input_resolution(coarse, new_size, size), size, new_size)
    torch.testing.assert_close(back.weight, coarse.weight)


def test_resize_input_resolution_rejects_bad_sizes():
    layer = torch.nn.Linear(16, 2)
    with pytest.raises(ValueError, match="channels"):
        resize_input_resolution(layer, 3, 6)
    with pytest.raises(ValueError, match="multiple or a divisor"):
        resize_input_resolution(layer, 4, 6)
    with pytest.raises(TypeError, match="Linear"):
        resize_input_resolution(torch.nn.Conv2d(1, 2, 3), 4, 8)
    np.testing.assert_equal(resize_input_resolution(layer, 4, 4).weight.detach().numpy(),
                            layer.weight.detach().numpy())
