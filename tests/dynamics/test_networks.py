"""The periodic_conv network: a dilated circular convolution against a loop written from its definition, the
receptive field against the dependencies autograd finds, shift equivariance, and the estimator on a field."""

import numpy as np
import pytest

from sklearn_icml.datasets import make_kuramoto_sivashinsky
from sklearn_icml.dynamics import DySLIMRegressor, make_rollout_dataset


def test_dilated_circular_convolution_by_a_loop():
    torch = pytest.importorskip("torch")
    from sklearn_icml.dynamics._networks import _conv1d

    g = torch.Generator().manual_seed(0)
    n, k, d = 11, 5, 2
    layer = _conv1d(2, 3, k, g, dilation=d).double()
    x = torch.randn(4, 2, n, generator=g, dtype=torch.float64)
    w, b = layer.weight.detach().numpy(), layer.bias.detach().numpy()
    xn = x.numpy()
    ref = np.empty((4, 3, n))
    for i in range(n):  # out[o, i] = b[o] + sum_{c, j} w[o, c, j] x[c, (i + d (j - k // 2)) mod n]
        taps = [(i + d * (j - k // 2)) % n for j in range(k)]
        ref[:, :, i] = b + np.einsum("ocj,scj->so", w, xn[:, :, taps])
    np.testing.assert_allclose(layer(x).detach().numpy(), ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n_grid, n_blocks", [(16, 1), (64, 1), (64, 2), (100, 3)])
def test_receptive_field_covers_the_grid_with_the_fewest_levels(n_grid, n_blocks):
    """Every output point depends on every input point; one level fewer leaves points out (autograd's
    dependencies, not the formula)."""
    torch = pytest.importorskip("torch")
    from sklearn_icml.dynamics import _networks

    def support(levels):
        original = _networks.dilation_levels
        _networks.dilation_levels = lambda *a, **kw: levels
        try:
            net = _networks.PeriodicConvNet((3,) * n_blocks, n_grid,
                                            generator=torch.Generator().manual_seed(1)).double()
        finally:
            _networks.dilation_levels = original
        x = torch.randn(1, n_grid, dtype=torch.float64, generator=torch.Generator().manual_seed(2),
                        requires_grad=True)
        net(x)[0, 0].backward()
        return int((x.grad[0] != 0).sum())

    L = _networks.dilation_levels(n_grid, n_blocks)
    assert _networks.PeriodicConvNet((3,) * n_blocks, n_grid).levels == L
    assert support(L) == n_grid
    if L > 1:
        assert support(L - 1) < n_grid


def test_periodic_conv_is_shift_equivariant_and_blocks_may_change_width():
    torch = pytest.importorskip("torch")
    from sklearn_icml.dynamics._networks import PeriodicConvNet

    net = PeriodicConvNet((4, 6), 24, generator=torch.Generator().manual_seed(0)).double()
    x = torch.randn(3, 24, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    for shift in (1, 5, 13):
        torch.testing.assert_close(net(torch.roll(x, shift, dims=1)), torch.roll(net(x), shift, dims=1))
    assert net.blocks[0].skip is None and net.blocks[1].skip is not None  # 4 -> 6 channels: a 1x1 projection


def test_periodic_conv_estimator_on_a_field():
    u = make_kuramoto_sivashinsky(3, 12, n_grid=16, spin_up=20.0, random_state=0)
    X, y = make_rollout_dataset(u)
    kw = dict(network="periodic_conv", hidden_layer_sizes=(4,), max_iter=5, random_state=0)
    est = DySLIMRegressor(**kw).fit(X, y)
    assert est.module_.net.levels == 2
    R = est.rollout(X[:2], 4)
    assert R.shape == (2, 4, 16) and np.isfinite(R).all()
    np.testing.assert_allclose(R[:, 0], est.predict(X[:2]), rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="periodic_conv"):
        DySLIMRegressor(**{**kw, "hidden_layer_sizes": ()}).fit(X, y)
    with pytest.raises(ValueError, match="periodic_conv"):
        DySLIMRegressor(**kw).fit(X[:, :1], y[:, :1])
