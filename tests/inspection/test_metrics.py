"""Attribution quality metrics: definitions, invariances, and equality with captum's."""

import numpy as np
import pytest

from sklearn_icml.inspection import (
    avg_sensitivity,
    faithfulness_correlation,
    infidelity,
    max_sensitivity,
    saliency,
)

torch = pytest.importorskip("torch")

W = np.array([1.0, -2.0, 0.5, 3.0, 0.0])


def linear(X):
    return X @ W + 1.0


def _X(n=6, d=5, seed=0):
    return np.random.RandomState(seed).standard_normal((n, d))


def _torch_mlp(d=5, k=3, seed=0):
    gen = torch.Generator().manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(d, 8), torch.nn.Tanh(), torch.nn.Linear(8, k)).double()
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float64))
    return net.eval()


def test_infidelity_definition_and_scale_invariance():
    X = _X()
    b = np.full(5, 0.2)
    # I' phi = f(x) - f(x - I) for every I exactly when phi is the gradient of a linear model (Yeh et al.)
    exact = np.tile(W, (6, 1))
    assert np.allclose(infidelity(linear, X, exact, baseline=b, random_state=0), 0, atol=1e-20)
    assert np.allclose(infidelity(linear, X, exact, baseline=b, normalize=False, random_state=0), 0, atol=1e-20)
    # an attribution-form map (x - b) * w is not exact under I' phi, unless rescaled on a constant x - b
    assert infidelity(linear, X, (X - b) * W, baseline=b, random_state=0).min() > 1e-3
    Xc = np.full((2, 5), 1.2)
    assert np.allclose(infidelity(linear, Xc, (Xc - b) * W, baseline=b, random_state=0), 0, atol=1e-20)
    # optimal rescaling: invariant to the map's scale (and sign); without it, not
    rng = np.random.RandomState(1)
    A = rng.standard_normal(X.shape)
    ref = infidelity(linear, X, A, baseline=b, random_state=0)
    np.testing.assert_allclose(infidelity(linear, X, -7.5 * A, baseline=b, random_state=0), ref, rtol=1e-10)
    assert not np.allclose(infidelity(linear, X, 7.5 * A, baseline=b, normalize=False, random_state=0),
                           infidelity(linear, X, A, baseline=b, normalize=False, random_state=0))
    # by hand on explicit perturbations
    I = rng.standard_normal((6, 7, 5))
    df = linear(X)[:, None] - linear((X[:, None, :] - I).reshape(-1, 5)).reshape(6, 7)
    a = np.einsum("nmd,nd->nm", I, A)
    beta = (a * df).sum(1) / (a * a).sum(1)
    np.testing.assert_allclose(infidelity(linear, X, A, perturbations=I),
                               ((beta[:, None] * a - df) ** 2).mean(1), rtol=1e-12)
    np.testing.assert_allclose(infidelity(linear, X, A, perturbations=I, normalize=False),
                               ((a - df) ** 2).mean(1), rtol=1e-12)


def test_faithfulness_correlation():
    X = _X(4, 5)
    b = np.zeros(5)
    exact = (X - b) * W
    # exact attributions: the subset mass is the output drop, correlation one (zero-weight feature aside)
    np.testing.assert_allclose(faithfulness_correlation(linear, X, exact, random_state=0), 1.0, atol=1e-12)
    A = np.random.RandomState(2).standard_normal(X.shape)
    I = np.random.RandomState(3).standard_normal((4, 9, 5)) * (np.random.RandomState(4).rand(4, 9, 5) < 0.5)
    df = linear(X)[:, None] - linear((X[:, None, :] - I).reshape(-1, 5)).reshape(4, 9)
    mass = np.einsum("nmd,nd->nm", (I != 0).astype(float), A)
    expected = [np.corrcoef(mass[i], df[i])[0, 1] for i in range(4)]
    np.testing.assert_allclose(faithfulness_correlation(linear, X, A, perturbations=I), expected, rtol=1e-10)
    # constant attributions: undefined correlation
    assert np.isnan(faithfulness_correlation(linear, X, np.zeros_like(X), random_state=0)).all()


def test_sensitivity_definitions():
    X = _X(3, 5)
    eps = np.random.RandomState(0).uniform(-0.1, 0.1, size=(3, 4, 5))

    def explain(Z):
        return np.sin(Z) * 2.0

    diff = np.linalg.norm(explain(X)[:, None, :] - explain(X[:, None, :] + eps), axis=2)
    norm = np.linalg.norm(explain(X), axis=1)[:, None]
    np.testing.assert_allclose(avg_sensitivity(explain, X, perturbations=eps), (diff / norm).mean(1))
    np.testing.assert_allclose(max_sensitivity(explain, X, perturbations=eps), (diff / norm).max(1))
    np.testing.assert_allclose(avg_sensitivity(explain, X, perturbations=eps, relative=False, squared=True),
                               (diff ** 2).mean(1))
    # a constant explanation is perfectly robust; drawn perturbations are seeded
    assert np.all(max_sensitivity(lambda Z: np.ones_like(Z), X, random_state=0) == 0)
    np.testing.assert_array_equal(avg_sensitivity(explain, X, random_state=3, noise="gaussian"),
                                  avg_sensitivity(explain, X, random_state=3, noise="gaussian"))


def test_metric_errors():
    X = _X(3, 5)
    with pytest.raises(ValueError, match=r"attributions must have the shape of X, \(3, 5\)"):
        infidelity(linear, X, np.ones((3, 4)))
    with pytest.raises(ValueError, match=r"perturbations must have shape \(n_samples, n_perturbations, n_features\)"):
        infidelity(linear, X, np.ones((3, 5)), perturbations=np.ones((3, 5)))
    with pytest.raises(ValueError, match="explain must return an array of shape"):
        avg_sensitivity(lambda Z: Z[:, :2], X)


@pytest.mark.peers
def test_infidelity_equals_captum_on_the_same_perturbations():
    captum_metrics = pytest.importorskip("captum.metrics")
    net = _torch_mlp()
    X = _X(5, 5, seed=1)
    A = np.random.RandomState(2).standard_normal(X.shape)
    m = 11
    I = np.random.RandomState(3).standard_normal((5, m, 5)) * 0.5
    targets = [0, 2, 1, 1, 0]
    I_flat = torch.tensor(I.reshape(-1, 5))  # captum stacks the copies input-major (repeat_interleave)

    def perturb(inputs):
        return I_flat, inputs - I_flat

    for normalize in (True, False):
        theirs = captum_metrics.infidelity(net, perturb, torch.tensor(X), torch.tensor(A), target=targets,
                                           n_perturb_samples=m, normalize=normalize).detach().numpy()
        ours = infidelity(net, X, A, perturbations=I, target=targets, normalize=normalize)
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-12)


@pytest.mark.peers
@pytest.mark.filterwarnings("ignore:Input Tensor 0 did not already require gradients:UserWarning")
def test_max_sensitivity_equals_captum_on_the_same_perturbations():
    captum = pytest.importorskip("captum")
    from captum.attr import Saliency

    net = _torch_mlp(seed=3)
    X = _X(4, 5, seed=5)
    m = 6
    eps = np.random.RandomState(6).uniform(-0.2, 0.2, size=(4, m, 5))
    eps_flat = torch.tensor(eps.reshape(-1, 5))
    targets = np.array([1, 0, 2, 2])

    def perturb(inputs, radius):
        return inputs + eps_flat

    theirs = captum.metrics.sensitivity_max(Saliency(net).attribute, torch.tensor(X), perturb_func=perturb,
                                            n_perturb_samples=m, target=torch.tensor(targets)).detach().numpy()

    def explain(Z):
        return saliency(net, Z, target=targets if len(Z) == 4 else np.repeat(targets, m))

    np.testing.assert_allclose(max_sensitivity(explain, X, perturbations=eps), theirs, rtol=1e-9, atol=1e-12)
