"""Leak test of the private estimators: fitted on data where one record holds unique values and a unique label,
no published attribute (fitted, trailing underscore, not documented as non-private) reveals any data value or
that label. The walker's power is shown on the non-private opt-ins, which it must catch."""

import warnings

import numpy as np
import pytest

from sklearn_icml.cluster import PrivateKMeans
from sklearn_icml.generative import PrivateEvolution, SyntheticDataClassifier
from sklearn_icml.privacy import PrivacyLeakWarning

#: attributes documented as computed from the raw data and not private (publish the release, not the object)
NON_PRIVATE = {"labels_", "inertia_", "n_users_"}
#: shape and column names of the input: public by the estimators' contract
PUBLIC_SHAPE = {"n_features_in_", "feature_names_in_"}
SECRET_LABEL = "the-only-one"


def _data(seed=0):
    rng = np.random.RandomState(seed)
    centers = np.array([[-4.0, -4.0], [4.0, 4.0]])
    y = rng.randint(2, size=3000)
    X = centers[y] + rng.normal(size=(3000, 2))
    X[0] = [7.123456789, -6.987654321]  # one person's unusual values, inside the sparse tails
    labels = np.array(["a", "b"], dtype=object)[y]
    labels[0] = SECRET_LABEL
    return X, labels


def _published(obj, name="", depth=0):
    """(path, value) of every number and string reachable from the published attributes of ``obj``."""
    if depth > 6:
        return
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind in "fiu":
            yield name, obj.astype(np.float64).ravel()
        else:
            for i, v in enumerate(obj.ravel()[:100000]):
                yield from _published(v, f"{name}[{i}]", depth + 1)
    elif isinstance(obj, (bool, np.bool_)):
        return
    elif isinstance(obj, (int, float, np.integer, np.floating)):
        yield name, np.array([float(obj)])
    elif isinstance(obj, str):
        yield name, obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _published(v, f"{name}[{k!r}]", depth + 1)
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            yield from _published(v, f"{name}[{i}]", depth + 1)
    elif hasattr(obj, "__dict__") and not callable(obj):
        for k, v in vars(obj).items():
            fitted = k.endswith("_") and not k.startswith("_")
            if depth == 0 and not fitted:
                continue  # the estimator's parameters are the caller's, not a release
            if k in NON_PRIVATE or k in PUBLIC_SHAPE or k.startswith("_"):
                continue
            if depth > 0 and hasattr(obj, "get_params") and not fitted:
                continue  # a nested estimator's parameters
            yield from _published(v, f"{name}.{k}", depth + 1)


def _leaks(est, X):
    found = []
    values = np.unique(X)
    for path, value in _published(est):
        if isinstance(value, str):
            if value == SECRET_LABEL:
                found.append(path)
        elif np.isin(value, values).any():
            found.append(path)
    return found


def _fits(X, labels):
    yield "PrivateKMeans", PrivateKMeans(2, epsilon=2.0, random_state=0).fit(X)
    yield "PrivateKMeans lloyd", PrivateKMeans(2, epsilon=2.0, algorithm="lloyd", random_state=0).fit(X)
    yield "PrivateKMeans boosting", PrivateKMeans(2, epsilon=2.0, n_repeats=2, random_state=0).fit(X)
    yield "PrivateKMeans stream", PrivateKMeans(2, epsilon=2.0, max_steps=2, random_state=0).partial_fit(X)
    yield "PrivateEvolution", PrivateEvolution(64, n_iterations=3, epsilon=2.0, random_state=0).fit(X)
    yield "PrivateEvolution per class", PrivateEvolution(32, n_iterations=2, epsilon=2.0, class_conditional=True,
                                                         random_state=0).fit(X, labels)
    yield "SyntheticDataClassifier", SyntheticDataClassifier(
        PrivateEvolution(32, n_iterations=2, epsilon=2.0, random_state=0)).fit(X, labels)


@pytest.mark.parametrize("seed", [0, 1])
def test_no_published_attribute_reveals_a_unique_value_or_label(seed):
    X, labels = _data(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the defaults neither leak nor warn
        for name, est in _fits(X, labels):
            assert not _leaks(est, X), (name, _leaks(est, X))
            assert est.epsilon_spent_ <= 2.0


def test_the_walker_catches_the_non_private_opt_ins():
    X, labels = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        km = PrivateKMeans(2, epsilon=2.0, bounds="data", random_state=0).fit(X)
        pe = PrivateEvolution(32, n_iterations=2, epsilon=2.0, bounds="data", random_state=0).fit(X)
    assert any(p.startswith(".bounds_") for p in _leaks(km, X))
    assert any(p.startswith(".bounds_") for p in _leaks(pe, X))
    # the label set taken as public knowledge publishes it, unique label included: caught
    public = PrivateEvolution(32, n_iterations=2, epsilon=2.0, class_conditional=True, classes=np.unique(labels),
                              random_state=0).fit(X, labels)
    assert any(p.startswith(".classes_") for p in _leaks(public, X))
