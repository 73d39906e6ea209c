"""The shared MLP builder against a numpy forward pass and torch's own initialisation."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sklearn_icml.utils._mlp import StandardizedMLP, mlp_coefs  # noqa: E402


def _numpy_forward(net, X, act, residual=False, output_activation=False):
    coefs, intercepts = mlp_coefs(net)
    h = (X - net.x_mean.numpy()) / net.x_scale.numpy()
    for k, (W, b) in enumerate(zip(coefs[:-1], intercepts)):
        z = h @ W + b
        h = act(h + z) if residual and k > 0 and W.shape[0] == W.shape[1] else act(z)
    out = h @ coefs[-1] + (intercepts[len(coefs) - 1] if len(intercepts) == len(coefs) else 0.0)
    if output_activation:
        out = act(out)
    return out * net.y_scale.numpy() + net.y_mean.numpy()


def _elu(z):
    return np.where(z > 0, z, np.expm1(np.minimum(z, 0)))


@pytest.mark.parametrize("residual, output_activation, output_bias", [
    (False, False, True), (True, True, True), (False, False, False)])
def test_forward_matches_numpy(residual, output_activation, output_bias):
    rng = np.random.RandomState(0)
    X = rng.normal(size=(7, 3))
    net = StandardizedMLP(3, [5, 5, 5], 2, activation="elu", x_mean=[1.0, 0.0, -1.0], x_scale=[2.0, 1.0, 0.5],
                          y_mean=[3.0, -3.0], y_scale=[10.0, 0.1], generator=torch.Generator().manual_seed(0),
                          output_bias=output_bias, output_activation=output_activation, residual=residual,
                          dtype=torch.float64)
    with torch.no_grad():
        out = net(torch.as_tensor(X)).numpy()
    np.testing.assert_allclose(out, _numpy_forward(net, X, _elu, residual, output_activation), rtol=1e-12)
    assert (net.head.bias is not None) == output_bias


def test_init_is_torchs_default_distribution_from_the_generator_only():
    state = torch.random.get_rng_state()
    a = StandardizedMLP(400, [300], 1, generator=torch.Generator().manual_seed(1))
    b = StandardizedMLP(400, [300], 1, generator=torch.Generator().manual_seed(1))
    assert torch.equal(torch.random.get_rng_state(), state)
    assert torch.equal(a.body[0].weight, b.body[0].weight)
    w = a.body[0].weight.detach().numpy()
    bound = 1 / np.sqrt(400)  # nn.Linear's default: U(-1/sqrt(fan_in), 1/sqrt(fan_in))
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.99 * bound
    assert w.std() == pytest.approx(bound / np.sqrt(3), rel=0.02)


def test_set_coefs_round_trip_and_shape_check():
    net = StandardizedMLP(3, [4], 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    rng = np.random.RandomState(0)
    coefs = [rng.normal(size=(3, 4)), rng.normal(size=(4, 2))]
    intercepts = [rng.normal(size=4), rng.normal(size=2)]
    net.set_coefs(coefs, intercepts)
    got_c, got_i = mlp_coefs(net)
    for a, b in zip(got_c + got_i, coefs + intercepts):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="3 matrices for 2 layers"):
        net.set_coefs(coefs + coefs[:1], intercepts)
