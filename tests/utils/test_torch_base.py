"""The torch estimator base: constraints merged, device resolved and recorded, threads scoped, generator seeded."""

from numbers import Integral

import numpy as np
import pytest
from sklearn.base import BaseEstimator, clone
from sklearn.utils.estimator_checks import check_param_validation

from sklearn_icml.utils._sklearn_private import Interval, InvalidParameterError, _fit_context
from sklearn_icml.utils._torch import DEVICE_CONSTRAINT
from sklearn_icml.utils._torch_base import TorchEstimatorMixin
from sklearn_icml.utils._training import TRAINING_PARAMETER_CONSTRAINTS

torch = pytest.importorskip("torch")


class _Net(TorchEstimatorMixin, BaseEstimator):
    """A minimal torch estimator: fit draws weights from the context's generator."""

    _parameter_constraints = {"random_state": ["random_state"], "fail": ["boolean"]}

    def __init__(self, max_iter=3, batch_size=8, tol=1e-4, device="cpu", random_state=None, fail=False):
        self.max_iter = max_iter
        self.batch_size = batch_size
        self.tol = tol
        self.device = device
        self.random_state = random_state
        self.fail = fail

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        with self._torch_fit_context() as ctx:
            self.threads_inside_ = torch.get_num_threads()
            self.seen_device_ = ctx.device
            w = torch.randn(np.shape(X)[1], generator=ctx.generator)
            w2 = torch.randn(2, generator=ctx.generator)  # the same generator all along the block
            if self.fail:
                raise RuntimeError("planted failure inside fit")
            self.coef_ = w.numpy().copy()
            self.extra_ = w2.numpy().copy()
        return self

    def predict(self, X):
        with self._torch_context() as ctx:
            self.predict_threads = ctx.n_threads
            return np.asarray(X) @ self.coef_


class _OwnMaxIter(_Net):
    _parameter_constraints = {**_Net._parameter_constraints, "max_iter": [Interval(Integral, 0, None, closed="left")]}


@pytest.fixture
def four_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(4)
    yield
    torch.set_num_threads(before)


X = np.arange(12.0).reshape(4, 3)


def test_constraints_merged_for_the_parameters_the_estimator_has():
    constraints = _Net._parameter_constraints
    assert set(constraints) == set(_Net().get_params())  # nothing for parameters it lacks (early_stopping, ...)
    assert constraints["max_iter"] is TRAINING_PARAMETER_CONSTRAINTS["max_iter"]
    assert constraints["device"] is DEVICE_CONSTRAINT
    # the estimator's own entry wins over the shared one, and the parent's dict is not touched
    assert _OwnMaxIter._parameter_constraints["max_iter"][0].left == 0
    assert _Net._parameter_constraints["max_iter"][0].left == 1
    _OwnMaxIter(max_iter=0).fit(X)
    with pytest.raises(InvalidParameterError, match="max_iter"):
        _Net(max_iter=0).fit(X)


def test_merged_constraints_pass_scikit_learns_param_validation_check():
    check_param_validation("_Net", _Net(random_state=0))


@pytest.mark.parametrize("device", ["cpu", "auto", "cuda", "cuda:0", "cuda:1"], ids=lambda d: f"device={d}")
def test_device_strings_torch_accepts_are_valid_parameters(device):
    assert DEVICE_CONSTRAINT[0].is_satisfied_by(device)


@pytest.mark.parametrize("device", ["gpu", "cuda:", "cuda:x", "cuda0", "mps", "", None, 0])
def test_other_device_values_are_rejected_by_validation(device):
    assert not DEVICE_CONSTRAINT[0].is_satisfied_by(device)
    with pytest.raises(InvalidParameterError, match="'device' parameter of _Net must be"):
        _Net(device=device).fit(X)


def test_torch_device_objects_are_valid():
    assert DEVICE_CONSTRAINT[0].is_satisfied_by(torch.device("cpu"))
    assert DEVICE_CONSTRAINT[0].is_satisfied_by(torch.device("cuda", 1))
    assert not DEVICE_CONSTRAINT[0].is_satisfied_by(torch.device("meta"))
    assert _Net(device=torch.device("cpu")).fit(X).device_ == "cpu"


@pytest.mark.parametrize("device", ["cpu", torch.device("cpu")])
def test_fit_sets_device_as_a_string(device):
    est = _Net(device=device).fit(X)
    assert est.device_ == "cpu" and isinstance(est.device_, str)
    assert est.seen_device_ == torch.device("cpu")


@pytest.mark.parametrize("device", ["cuda", "cuda:0", "cuda:1", torch.device("cuda", 0)], ids=lambda d: f"device={d}")
def test_cuda_without_a_gpu_raises_before_any_work(monkeypatch, device):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    est = _Net(device=device)
    with pytest.raises(ValueError, match=r"device='cuda(:[01])?' was requested but torch sees no CUDA device"):
        est.fit(X)
    assert not hasattr(est, "device_") and not hasattr(est, "threads_inside_")


def test_cuda_index_beyond_the_visible_devices_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    with pytest.raises(ValueError, match=r"device='cuda:1' was requested but torch sees 1 CUDA device"):
        _Net(device="cuda:1").fit(X)


@pytest.mark.parametrize("available, expected", [(True, "cuda"), (False, "cpu")])
def test_auto_records_where_it_ran(monkeypatch, available, expected):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: available)
    est = _Net(device="auto")
    with est._torch_fit_context() as ctx:
        assert ctx.device.type == expected
    assert est.device_ == expected


def test_threads_scoped_in_fit_and_predict_and_restored(four_threads):
    import sklearn_icml

    with sklearn_icml.config_context(n_threads=2):
        est = _Net(random_state=0).fit(X)
        assert est.threads_inside_ == 2
        assert torch.get_num_threads() == 4
        est.predict(X)
        assert est.predict_threads == 2 and torch.get_num_threads() == 4


def test_threads_and_device_restored_when_fit_raises(four_threads):
    import sklearn_icml

    est = _Net(random_state=0)
    with sklearn_icml.config_context(n_threads=1):
        with pytest.raises(RuntimeError, match="planted failure"):
            est.set_params(fail=True).fit(X)
        assert torch.get_num_threads() == 4
        assert not hasattr(est, "device_")  # a failed first fit leaves no fitted attribute
        est.set_params(fail=False).fit(X)
        est.device_ = "cuda:7"  # a marker: a failing refit must leave the previous value
        with pytest.raises(RuntimeError):
            est.set_params(fail=True).fit(X)
        assert est.device_ == "cuda:7" and torch.get_num_threads() == 4


def test_generator_is_seeded_from_random_state():
    a, b, c = (_Net(random_state=s).fit(X) for s in (0, 0, 1))
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.extra_, b.extra_)
    assert not np.array_equal(a.coef_, c.coef_)
    # the context's generator is the documented one: torch_generator(random_state), drawn from in order
    from sklearn_icml.utils._torch import torch_generator

    g = torch_generator(0)
    np.testing.assert_array_equal(a.coef_, torch.randn(3, generator=g).numpy())
    np.testing.assert_array_equal(a.extra_, torch.randn(2, generator=g).numpy())


def test_generator_leaves_the_global_rng_alone_and_a_random_state_instance_advances():
    state = torch.random.get_rng_state()
    rs = np.random.RandomState(0)
    first, second = _Net(random_state=rs).fit(X).coef_, _Net(random_state=rs).fit(X).coef_
    assert not np.array_equal(first, second)
    assert torch.equal(state, torch.random.get_rng_state())
    assert clone(_Net(random_state=3)).fit(X).coef_.tolist() == _Net(random_state=3).fit(X).coef_.tolist()


#: Estimators with a ``device`` parameter that keep their own device check, with the reason.
OWN_DEVICE_CHECK = {}


def test_every_estimator_with_a_device_uses_the_base():
    from sklearn_icml.utils import all_estimators

    with_device = {name: cls for name, cls in all_estimators() if "device" in cls().get_params(deep=False)}
    assert set(OWN_DEVICE_CHECK) <= set(with_device)
    off_base = {name for name, cls in with_device.items() if not issubclass(cls, TorchEstimatorMixin)}
    assert off_base == set(OWN_DEVICE_CHECK), off_base ^ set(OWN_DEVICE_CHECK)
    for name, cls in with_device.items():
        if name not in OWN_DEVICE_CHECK:
            assert cls._parameter_constraints["device"] is DEVICE_CONSTRAINT, name
