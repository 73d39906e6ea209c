"""LS-ECE: the exact plug-in value, the paper's Monte Carlo estimator, the torch path, edge cases."""

import numpy as np
import pytest
from scipy.special import expit, logit
from scipy.stats import norm
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_icml.metrics import binned_ece, ls_ece
from sklearn_icml.utils._sklearn_private import InvalidParameterError


def _quadrature(z, y, w, sigma, noise, n_points=60_001):
    """Reference: the plug-in integral by brute-force quadrature on a very fine grid."""
    t = np.linspace(z.min() - 12 * sigma, z.max() + 12 * sigma, n_points)
    A, B = np.zeros_like(t), np.zeros_like(t)
    for i in range(0, len(z), 200):
        d = t[:, None] - z[None, i:i + 200]
        K = norm.pdf(d, scale=sigma) if noise == "gaussian" else (np.abs(d) <= sigma / 2) / sigma
        A += K @ (w * y)[i:i + 200]
        B += K @ w[i:i + 200]
    return np.trapezoid(np.abs(A - expit(t) * B), t) / w.sum()


def _toy(n=400, seed=0):
    rng = np.random.RandomState(seed)
    p = rng.beta(2, 2, n)
    y = (rng.uniform(size=n) < p ** 1.4).astype(int)
    return y, p


@pytest.mark.parametrize("sigma", [0.02, 0.1, 1.0])
def test_grid_equals_the_plugin_integral_gaussian(sigma):
    y, p = _toy(n=200)
    w = np.random.RandomState(1).uniform(0.5, 2, len(y))
    ref = _quadrature(logit(p), y, w, sigma, "gaussian")
    assert ls_ece(y, p, sigma=sigma, sample_weight=w) == pytest.approx(ref, rel=5e-5)


@pytest.mark.parametrize("sigma", [0.05, 0.5])
def test_uniform_noise_is_computed_in_closed_form(sigma):
    y, p = _toy(n=150)
    ref = _quadrature(logit(p), y, np.ones(len(y)), sigma, "uniform", n_points=400_001)
    # the reference quadrature of a discontinuous integrand is the inexact one here
    assert ls_ece(y, p, sigma=sigma, noise="uniform") == pytest.approx(ref, rel=1e-4)


@pytest.mark.parametrize("noise", ["gaussian", "uniform"])
def test_grid_equals_the_mean_of_many_monte_carlo_runs(noise):
    X, y = load_digits(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.4, random_state=0)
    P = GaussianNB().fit(Xtr, ytr).predict_proba(Xte)
    grid = ls_ece(yte, P, sigma=1 / 15, noise=noise)
    runs = np.array([ls_ece(yte, P, sigma=1 / 15, noise=noise, estimator="mc", n_samples=5_000, random_state=s)
                     for s in range(20)])
    standard_error = runs.std(ddof=1) / np.sqrt(len(runs))
    assert abs(grid - runs.mean()) <= 3 * standard_error
    assert runs.std() > 0  # the Monte Carlo draws do differ


def test_paper_synthetic_example_binned_ece_jumps_ls_ece_does_not():
    # Chidambaram et al. 2024, synthetic: y ~ Bernoulli(1/2), logit = 1e-3 (y - 1/2)
    rng = np.random.RandomState(0)
    y = rng.binomial(1, 0.5, 1000)
    logits = 1e-3 * (y - 0.5)
    p = expit(logits)
    ece10, ece11 = binned_ece(y, p, n_bins=10), binned_ece(y, p, n_bins=11)
    ls10, ls11 = ls_ece(y, p, sigma=1 / 10), ls_ece(y, p, sigma=1 / 11)
    assert ece10 - ece11 > 0.40  # 0.5 is a bin edge at 10 bins, inside a bin at 11
    assert abs(ls10 - ls11) < 0.005
    assert ls_ece(y, logits, sigma=1 / 10, response="logits") == pytest.approx(ls10, rel=1e-9)


@pytest.mark.parametrize(
    "model, per_split_bar",
    [(make_pipeline(StandardScaler(), LogisticRegression(max_iter=500)), None), (GaussianNB(), 0.005)],
    ids=["LogisticRegression", "GaussianNB"],
)
def test_ls_ece_tracks_15_bin_ece_on_digits(model, per_split_bar):
    X, y = load_digits(return_X_y=True)
    gaps = []
    for seed in range(6):
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.4, random_state=seed)
        P = model.fit(Xtr, ytr).predict_proba(Xte)
        gaps.append(abs(ls_ece(yte, P, sigma=1 / 15) - binned_ece(yte, P, n_bins=15)))
    # The bar is 0.005. It holds on average over six splits for both models and
    # on every split for GaussianNB. LogisticRegression's confident predictions miss it on
    # some splits (measured up to 0.0104): 15 bins average over- and under-confidence
    # inside [14/15, 1], which LS-ECE at sigma=1/15 (in logit units) still resolves.
    assert np.mean(gaps) <= 0.005
    if per_split_bar is not None:
        assert max(gaps) <= per_split_bar


def test_atoms_at_probability_zero_and_one_are_exact():
    y = np.array([1, 0, 0, 1])
    p = np.array([1.0, 1.0, 0.0, 0.0])
    assert ls_ece(y, p) == pytest.approx(0.5, abs=1e-15)
    assert ls_ece(y, p, estimator="mc", random_state=0) == pytest.approx(0.5, abs=1e-15)
    # mixed: atoms plus a smooth part
    y2, p2 = np.r_[y, _toy(50)[0]], np.r_[p, _toy(50)[1]]
    smooth = ls_ece(_toy(50)[0], _toy(50)[1])
    assert ls_ece(y2, p2) == pytest.approx((2 + 50 * smooth) / 54, rel=1e-12)


def test_top_label_from_saturated_logits_needs_no_clipping():
    logits = np.array([[0.0, 45.0, 0.0], [0.0, 0.0, 800.0], [2.0, 1.0, 0.0]])
    y = np.array([1, 2, 0])
    value = ls_ece(y, logits, response="logits", sigma=0.1)  # warnings are errors: no overflow warning
    # rows 0 and 1 are right with confidence ~1 (row 1 exactly 1: a +inf atom), row 2 is right
    conf2 = 1 / (1 + np.exp(-1) + np.exp(-2))
    expected = ls_ece(np.ones(3), np.array([expit(45.0), 1.0, conf2]), sigma=0.1)
    assert value == pytest.approx(expected, rel=1e-9)


def test_probability_input_keeps_precision_near_one():
    # 1 - p_max computed as the sum of the others, not as 1 - p_max
    P = np.array([[1 - 2e-17, 1e-17, 1e-17], [0.2, 0.3, 0.5]])
    L = np.log(P)
    y = np.array([0, 2])
    assert ls_ece(y, P, labels=[0, 1, 2]) == pytest.approx(ls_ece(y, L, response="logits", labels=[0, 1, 2]), rel=1e-9)


def test_integer_weights_equal_repetition_and_order_does_not_matter():
    y, p = _toy(120)
    w = np.random.RandomState(0).randint(0, 4, len(y))
    rep = np.repeat(np.arange(len(y)), w)
    assert ls_ece(y, p, sample_weight=w) == pytest.approx(ls_ece(y[rep], p[rep]), rel=1e-9)
    perm = np.random.RandomState(1).permutation(len(y))
    assert ls_ece(y[perm], p[perm]) == pytest.approx(ls_ece(y, p), rel=1e-12)


def test_classwise_is_the_mean_of_one_vs_rest_problems():
    X, y = load_digits(n_class=4, return_X_y=True)
    P = GaussianNB().fit(X[::2], y[::2]).predict_proba(X[1::2])
    yt = y[1::2]
    per_class = [ls_ece(yt == c, P[:, c]) for c in range(4)]
    assert ls_ece(yt, P, multiclass="classwise") == pytest.approx(np.mean(per_class), rel=1e-9)
    L = np.log(np.clip(P, 1e-300, None))
    assert ls_ece(yt, L, multiclass="classwise", response="logits") == pytest.approx(np.mean(per_class), rel=1e-6)


def test_one_sample_is_the_expected_distance_under_the_noise():
    z, sigma = 0.7, 0.5
    xi = np.linspace(-10 * sigma, 10 * sigma, 200_001)
    expected = np.trapezoid(norm.pdf(xi, scale=sigma) * np.abs(1 - expit(z + xi)), xi)
    assert ls_ece([1], [z], response="logits", sigma=sigma) == pytest.approx(expected, rel=1e-5)


def test_string_labels_and_labels_argument():
    y = np.array(["cat", "dog", "dog", "cat"])
    p = np.array([0.2, 0.7, 0.9, 0.4])
    assert ls_ece(y, p, pos_label="dog") == pytest.approx(ls_ece((y == "dog").astype(int), p))
    P = np.array([[0.1, 0.7, 0.2], [0.5, 0.3, 0.2], [0.2, 0.2, 0.6]])
    yy = np.array(["b", "a", "a"])  # "c" never occurs
    value = ls_ece(yy, P, labels=["a", "b", "c"])
    assert value == pytest.approx(ls_ece(np.array([1, 1, 0]), P.max(1)), rel=1e-9)


@pytest.mark.parametrize(
    "y_true, y_score, kwargs, match",
    [
        ([0, 1, 1], [0.1, np.nan, 0.3], {}, "NaN or infinity"),
        ([0, 1, 1], [0.1, np.inf, 0.3], {"response": "logits"}, "NaN or infinity"),
        ([0, 1, 1], [0.1, 1.2, 0.3], {}, r"must lie in \[0, 1\]"),
        ([0, 1], [[0.5, 0.6], [0.5, 0.5]], {}, "must sum to 1"),
        ([0, 1], np.zeros((2, 2, 2)), {}, "1-D .* or 2-D"),
        ([0, 1, 1], [0.1, 0.3], {}, "3 samples but y_score has 2"),
        ([0, 1, 2], [0.1, 0.2, 0.3], {}, "1-D .* 3 classes"),
        ([0, 1, 1], [[0.2, 0.3, 0.5]] * 3, {}, "pass labels="),
        ([0, 1, 3], [[0.2, 0.3, 0.5]] * 3, {"labels": [0, 1, 2]}, "not in labels"),
        (["a", "b"], [0.2, 0.4], {}, "pass pos_label"),
        ([0, 1], [0.2, 0.4], {"sample_weight": [0, 0]}, "ls_ece: bad sample_weight: .*non-zero"),
        ([0, 1], [0.2, 0.4], {"sample_weight": [1, -1]}, "(?i)ls_ece: bad sample_weight: .*negative"),
        ([], [], {}, "0 sample"),
        ([0, 1], [[1.0], [0.0]], {"labels": [0]}, None),  # (n, 1) is binary: accepted
    ],
)
def test_bad_input_is_a_clear_error(y_true, y_score, kwargs, match):
    if match is None:
        ls_ece(y_true, y_score)
        return
    with pytest.raises(ValueError, match=match):
        ls_ece(y_true, y_score, **kwargs)


def test_bad_parameters_raise_invalid_parameter_error():
    with pytest.raises(InvalidParameterError, match="sigma"):
        ls_ece([0, 1], [0.2, 0.8], sigma=0)
    with pytest.raises(InvalidParameterError, match="noise"):
        ls_ece([0, 1], [0.2, 0.8], noise="laplace")


def test_a_grid_too_large_for_memory_is_refused_with_advice():
    with pytest.raises(ValueError, match="estimator='mc'"):
        ls_ece([0, 1], [-1e6, 1e6], response="logits", sigma=1e-3)
    assert 0 <= ls_ece([0, 1], [-1e6, 1e6], response="logits", sigma=1e-3, estimator="mc", n_samples=10,
                       random_state=0) <= 1


def test_inputs_are_not_modified():
    y, p = _toy(50)
    P = np.c_[1 - p, p]
    P_before, y_before = P.copy(), y.copy()
    ls_ece(y, P)
    ls_ece(y, P, multiclass="classwise")
    np.testing.assert_array_equal(P, P_before)
    np.testing.assert_array_equal(y, y_before)


# ---------------------------------------------------------------- torch path


@pytest.mark.parametrize(
    "case",
    ["binary-proba", "binary-logits", "top-label-logits", "top-label-proba", "classwise-logits", "uniform",
     "mc", "mc-uniform", "weights"],
)
def test_torch_path_equals_numpy(device, case):
    torch = pytest.importorskip("torch")
    rng = np.random.RandomState(0)
    n, k = 300, 5
    L = rng.normal(scale=2, size=(n, k))
    y_multi = rng.randint(0, k, n)
    y_bin, p_bin = _toy(n)
    kwargs = {}
    if case.startswith("binary") or case in ("uniform", "mc", "mc-uniform", "weights"):
        y, s = y_bin, (p_bin if case != "binary-logits" else logit(p_bin))
        kwargs["response"] = "logits" if case == "binary-logits" else "proba"
    else:
        y = y_multi
        s = L if "logits" in case else np.exp(L) / np.exp(L).sum(1, keepdims=True)
        kwargs["response"] = "logits" if "logits" in case else "proba"
        kwargs["multiclass"] = "classwise" if case.startswith("classwise") else "top_label"
    if case in ("uniform", "mc-uniform"):
        kwargs["noise"] = "uniform"
    if case.startswith("mc"):
        kwargs.update(estimator="mc", n_samples=2000, random_state=3)
    if case == "weights":
        kwargs["sample_weight"] = rng.uniform(0, 2, n)
    expected = ls_ece(y, s, **kwargs)
    got = ls_ece(torch.tensor(y, device=device), torch.tensor(s, device=device), **kwargs)
    assert isinstance(got, torch.Tensor) and got.device.type == device
    assert float(got) == pytest.approx(expected, abs=1e-6)


def test_float32_tensors_match_float64_numpy():
    torch = pytest.importorskip("torch")
    rng = np.random.RandomState(0)
    L = rng.normal(scale=3, size=(500, 10)).astype(np.float32)
    y = rng.randint(0, 10, 500)
    assert float(ls_ece(y, torch.from_numpy(L), response="logits")) == pytest.approx(
        ls_ece(y, L.astype(np.float64), response="logits"), abs=1e-6)


def test_monte_carlo_ls_ece_is_a_differentiable_regulariser(device):
    """Temperature scaling by gradient descent on the MC LS-ECE lowers the LS-ECE."""
    torch = pytest.importorskip("torch")
    X, y = load_digits(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.5, random_state=0)
    logits = LogisticRegression(C=100, max_iter=3000).fit(Xtr, ytr).decision_function(Xte)
    L = torch.tensor(logits, device=device)
    yt = torch.tensor(yte, device=device)
    log_t = torch.zeros((), dtype=torch.float64, device=device, requires_grad=True)
    opt = torch.optim.Adam([log_t], lr=0.1)
    before = float(ls_ece(yt, L, response="logits", sigma=0.1))
    for step in range(30):
        loss = ls_ece(yt, L / log_t.exp(), response="logits", sigma=0.1, estimator="mc", n_samples=2000,
                      random_state=step)
        opt.zero_grad()
        loss.backward()
        assert torch.isfinite(log_t.grad)
        opt.step()
    after = float(ls_ece(yt, L / log_t.exp().detach(), response="logits", sigma=0.1))
    assert after < 0.8 * before


def test_documented_grid_step_is_the_step_the_code_uses():
    """The docstrings state the grid step as sigma/N with N read from the code, and the grid uses that step."""
    from sklearn_icml.metrics import _calibration_kernels as _ls_ece
    from sklearn_icml.metrics._backend import get_ops

    steps = _ls_ece._STEPS_PER_SIGMA
    assert f"sigma/{steps}" in " ".join(ls_ece.__doc__.split())
    assert f"sigma/{steps}" in _ls_ece._gaussian_grid_sums.__doc__
    z = np.array([-1.0, 0.0, 2.5])
    t, _, _, h = _ls_ece._gaussian_grid_sums(get_ops(z), z, np.array([0.0, 1.0, 1.0]), np.ones(3), 0.2)
    assert h == 0.2 / steps
    np.testing.assert_allclose(np.diff(t), 0.2 / steps, rtol=1e-9)
