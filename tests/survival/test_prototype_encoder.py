"""PrototypeEncoder: K-means prototypes and per-bag MAP-EM, checked against a direct numpy implementation."""

import numpy as np
import pytest
from scipy.special import logsumexp

from sklearn_icml.survival import PrototypeEncoder, pad_bags


def _numpy_map_em(bag, m, V, tau, n_iter):
    """The MAP-EM of the paper, one bag at a time, written directly from the update equations."""
    K, d = m.shape
    pi, mu, var = np.full(K, 1.0 / K), m.copy(), V.copy()
    for _ in range(n_iter):
        log_lik = np.stack([-0.5 * (d * np.log(2 * np.pi) + np.log(var[k]).sum()
                                    + (((bag - mu[k]) ** 2) / var[k]).sum(1)) for k in range(K)], axis=1)
        log_post = log_lik + np.log(pi)
        q = np.exp(log_post - logsumexp(log_post, axis=1, keepdims=True))
        n_k = q.sum(0)
        pi = (n_k + tau) / (n_k + tau).sum()
        mu = (q.T @ bag + tau * m) / (n_k + tau)[:, None]
        var = np.maximum((q.T @ bag ** 2 + tau * (V + m ** 2)) / (n_k + tau)[:, None] - mu ** 2, 1e-6 * V.min())
    return np.concatenate([pi[:, None], mu, var], axis=1).ravel()


def _bags(seed=0, n=12, d=4):
    rng = np.random.RandomState(seed)
    centers = rng.normal(scale=3, size=(3, d))
    return [centers[rng.randint(3, size=m)] + rng.normal(size=(m, d)) for m in rng.randint(1, 40, size=n)]


@pytest.mark.parametrize("em_iter", [1, 3])
@pytest.mark.parametrize("tau", [0.1, 1.0, 10.0])
def test_allcat_matches_numpy_map_em(em_iter, tau):
    bags = _bags()
    enc = PrototypeEncoder(3, em_iter=em_iter, tau=tau, var_init=0.7, batch_size=5, random_state=0).fit(bags)
    expected = np.array([_numpy_map_em(b, enc.prototypes_, enc.prior_var_, tau, em_iter) for b in bags])
    np.testing.assert_allclose(enc.transform(bags), expected, rtol=1e-5, atol=1e-8)


def test_outputs_shapes_names_and_weights():
    bags = _bags(d=2)
    K, d = 3, 2
    widths = {"pi": 1, "pi_mu": 1 + d, "allcat": 1 + 2 * d}
    full = PrototypeEncoder(K, random_state=0).fit(bags).transform(bags).reshape(len(bags), K, -1)
    for output, width in widths.items():
        enc = PrototypeEncoder(K, output=output, random_state=0).fit(bags)
        out = enc.transform(bags)
        assert out.shape == (len(bags), K * width)
        np.testing.assert_allclose(out.reshape(len(bags), K, width), full[:, :, :width])
        names = enc.get_feature_names_out()
        assert len(names) == K * width and names[0] == "proto0_pi"
        np.testing.assert_allclose(out.reshape(len(bags), K, width)[:, :, 0].sum(1), 1.0)
    assert list(PrototypeEncoder(2, output="allcat", random_state=0).fit(bags).get_feature_names_out()[:5]) == [
        "proto0_pi", "proto0_mu0", "proto0_mu1", "proto0_var0", "proto0_var1"]


def test_prototypes_separate_a_mixture_a_mean_cannot():
    # bags with the same mean: half "midpoint" instances, or a 50/50 mix of the two ends
    rng = np.random.RandomState(0)
    a, b = np.array([-4.0, 0.0]), np.array([4.0, 0.0])
    mid = [(a + b) / 2 + 0.3 * rng.normal(size=(50, 2)) for _ in range(10)]
    ends = [np.vstack([a + 0.3 * rng.normal(size=(25, 2)), b + 0.3 * rng.normal(size=(25, 2))]) for _ in range(10)]
    bags = mid + ends
    enc = PrototypeEncoder(3, output="pi", random_state=0).fit(bags)
    pi = enc.transform(bags)
    k_mid = np.argmin(np.abs(enc.prototypes_[:, 0]))
    assert pi[:10, k_mid].min() > 0.9 and pi[10:, k_mid].max() < 0.1
    means = np.array([bag.mean(0) for bag in bags])
    assert np.abs(means[:10].mean(0) - means[10:].mean(0)).max() < 0.3


def test_tau_pulls_towards_the_prior():
    bags = _bags()
    weak = PrototypeEncoder(3, output="pi", tau=1e-3, random_state=0).fit(bags).transform(bags)
    strong = PrototypeEncoder(3, output="pi", tau=1e4, random_state=0).fit(bags).transform(bags)
    np.testing.assert_allclose(strong, 1 / 3, atol=1e-2)
    assert np.abs(weak - 1 / 3).max() > 0.3


def test_forms_subsampling_determinism_and_compression():
    bags = _bags(n=20)
    enc = PrototypeEncoder(3, random_state=0).fit(bags)
    padded, _ = pad_bags(bags)
    np.testing.assert_allclose(enc.transform(padded), enc.transform(bags), atol=1e-12)
    np.testing.assert_array_equal(PrototypeEncoder(3, random_state=0).fit(bags).transform(bags), enc.transform(bags))
    assert enc.mean_bag_size_ == pytest.approx(np.mean([len(b) for b in bags]))
    small = PrototypeEncoder(3, max_fit_instances=30, random_state=0).fit(bags)
    assert small.n_fit_instances_ == 30
    # float32 bags are encoded in float32
    assert enc.transform([b.astype(np.float32) for b in bags]).dtype == np.float32


def test_errors():
    with pytest.raises(ValueError, match="n_prototypes=5 needs at least"):
        PrototypeEncoder(5).fit([np.ones((2, 3)), np.zeros((1, 3))])
    enc = PrototypeEncoder(2, random_state=0).fit(_bags(d=4))
    with pytest.raises(ValueError, match="expecting 4 features"):
        enc.transform([np.ones((3, 5))])
    with pytest.raises(ValueError, match="empty"):
        enc.transform([np.ones((3, 4)), np.ones((0, 4))])
    # the tokens' variances are second moments: instances whose squares overflow the bags' dtype are refused
    with pytest.raises(ValueError, match=r"PrototypeEncoder: X holds values up to 1e\+300.*squares"):
        PrototypeEncoder(2).fit([np.ones((3, 4)), np.full((2, 4), 1e300)])
    with pytest.raises(ValueError, match=r"PrototypeEncoder: X holds values up to 1e\+17.*float32"):
        enc.transform([np.full((3, 4), 1e17, dtype=np.float32)])


def test_device_parity(device):
    bags = _bags(n=30)
    cpu = PrototypeEncoder(3, random_state=0).fit(bags)
    other = PrototypeEncoder(3, device=device, random_state=0).fit(bags)
    np.testing.assert_allclose(other.transform(bags), cpu.transform(bags), rtol=1e-6, atol=1e-9)
