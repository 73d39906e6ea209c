"""Bad input over the whole collection: a clear error, or a finite result that is documented.

Two tables. The first is generic: every estimator of ``all_estimators()`` whose
data contract is a 2-D float ``X`` (the demo data of ``tests/_params.py``) is
fitted on that data spoiled one way at a time (NaN, infinity, no sample, one
sample, values of 1e300, a predict-time ``X`` one column short) and with each
real-valued hyper-parameter set to a non-finite or a 1e300 value. The verdict
for each case: a ``ValueError``/``TypeError`` whose message names the
estimator, the parameter or what is wrong, or a fit whose outputs are all
finite. New estimators join the table by themselves; those whose data are not
a 2-D float array are listed in ``NON_TABULAR`` with the reason, and get the
parameter cases on their own demo data and the data cases of their kind of
input (missing or self-battling competitors, impossible token ids, texts that
are not strings, objects that are not problems, no sample, one sample).

The second table holds the cases of public functions and non-tabular methods,
each with its expected outcome; the third, bad inputs by kind thrown at every
function and method that takes that kind (battle logs, token sequences, loss
levels, torch models, ...).
"""

import copy
import math
import re
import warnings
from numbers import Real

import joblib
import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from sklearn_icml.utils._sklearn_private import Interval

from ._params import fit_data, harness_classes, make_instance

#: Estimators whose data are not a 2-D float array, and why.
NON_TABULAR = {
    "BradleyTerryRanker": "battles: competitor ids of any hashable type in columns 0-1",
    "EloRater": "battles: competitor ids of any hashable type in columns 0-1",
    "InContextNGram": "integer token sequences padded with -1 (tests/language/)",
    "NGramTransformerLM": "integer token sequences padded with -1 (tests/language/)",
    "CPSATScheduler": "a StageSchedulingProblem (a DAG with node costs), not an array",
    "GreedyStageScheduler": "a StageSchedulingProblem (a DAG with node costs), not an array",
    "GumbelScheduler": "a StageSchedulingProblem (a DAG with node costs), not an array",
    "PrivateEvolutionText": "a 1-D sequence of strings",
}

#: Known open defects of estimators owned by other families: (estimator, case) -> what goes wrong. Each runs as a
#: strict xfail, so the entry has to go once the estimator is fixed.
KNOWN_DEFECTS = {}

_OUTPUT_METHODS = ("predict", "predict_proba", "decision_function", "transform", "score_samples")
_CLEAR_WORDS = r"nan|inf|finite|empty|sample|feature|column|shape|large|overflow|class|at least|must"


def _tabular(name, X):
    return isinstance(X, np.ndarray) and X.ndim == 2 and X.dtype.kind == "f" and name not in NON_TABULAR


def _estimators():
    out = []
    for name, cls in harness_classes():
        if name.startswith("Reference"):
            continue
        est = make_instance(cls)
        X, y = fit_data(est)
        if _tabular(name, X):
            out.append((name, est, X, y))
    return out


ESTIMATORS = _estimators()


def _own_input_estimators():
    """The estimators of NON_TABULAR with their own kind of demo data (battles, sequences, DAGs, texts)."""
    out = []
    for name, cls in harness_classes():
        if name in NON_TABULAR:
            est = make_instance(cls)
            out.append((name, est, *fit_data(est)))
    return out


OWN_INPUT = _own_input_estimators()


def _spoiled(X, y):
    """The data cases: name -> (fit X, fit y, predict X or None)."""
    nan = X.copy()
    nan[0, 0] = np.nan
    inf = X.copy()
    inf[0, 0] = np.inf

    def cut(n):
        return None if y is None else y[:n]

    return {
        "nan_in_X": (nan, y, None),
        "inf_in_X": (inf, y, None),
        "empty_X": (X[:0], cut(0), None),
        "one_sample": (X[:1], cut(1), None),
        "huge_X": (X * 1e300, y, None),
        "wrong_width_at_predict": (X, y, X[:, :-1]),
    }


def _real_params(est):
    return [p for p, cons in getattr(type(est), "_parameter_constraints", {}).items()
            if any(isinstance(c, Interval) and c.type is Real for c in cons)]


def _cases():
    params = []
    for name, est, X, y in ESTIMATORS:
        for case in _spoiled(X, y):
            marks = ()
            if (name, case) in KNOWN_DEFECTS:
                marks = pytest.mark.xfail(strict=True, raises=AssertionError, reason=KNOWN_DEFECTS[(name, case)])
            params.append(pytest.param(name, case, None, id=f"{name}-{case}", marks=marks))
        for p in _real_params(est):
            for value in (np.inf, -np.inf, np.nan, 1e300, -1e300):
                params.append(pytest.param(name, f"{p}={value}", (p, value), id=f"{name}-{p}={value}"))
    # the parameter cases apply to every estimator, whatever its input: those of NON_TABULAR on their own data
    for name, est, _, _ in OWN_INPUT:
        for p in _real_params(est):
            for value in (np.inf, -np.inf, np.nan, 1e300, -1e300):
                case = f"{p}={value}"
                marks = ()
                if (name, case) in KNOWN_DEFECTS:
                    marks = pytest.mark.xfail(strict=True, raises=AssertionError, reason=KNOWN_DEFECTS[(name, case)])
                params.append(pytest.param(name, case, (p, value), id=f"{name}-{case}", marks=marks))
    return params


def _outputs_finite(est, X):
    for method in _OUTPUT_METHODS:
        if hasattr(est, method):
            out = np.asarray(getattr(est, method)(X))
            if out.dtype.kind in "fc":
                assert np.all(np.isfinite(out)), f"{type(est).__name__}.{method} returned non-finite values"


def _same_data(a, b):
    """Arrays compare by value (NaN equal to NaN); other inputs (a DAG object, object arrays) by their pickle."""
    if isinstance(a, np.ndarray) and a.dtype.kind != "O":  # object arrays (ids, texts): NaN ids by the pickle
        return a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
    return joblib.hash(a) == joblib.hash(b)


def _assert_clear(exc, name, extra=()):
    message = str(exc)
    assert isinstance(exc, (ValueError, TypeError)), f"{name}: {type(exc).__name__}: {message}"
    named = name in message or any(word in message for word in extra)
    assert named or re.search(_CLEAR_WORDS, message, re.IGNORECASE), f"{name}: unclear message {message!r}"


@pytest.mark.parametrize("name, case, param", _cases())
def test_estimator_bad_input_gets_a_clear_error_or_a_finite_result(name, case, param):
    _, est, X, y = next(row for row in ESTIMATORS + OWN_INPUT if row[0] == name)
    est = clone(est)
    if param is not None:
        est.set_params(**{param[0]: param[1]})
        X_fit, y_fit, X_pred = X, y, None
    else:
        X_fit, y_fit, X_pred = _spoiled(X, y)[case]
    X_fit_before = copy.deepcopy(X_fit)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # warnings are allowed, except numpy's overflow on the way to a result
        try:
            est.fit(X_fit, y_fit) if y_fit is not None else est.fit(X_fit)
            if X_pred is None:
                _outputs_finite(est, X_fit)
            else:
                if not any(hasattr(est, m) for m in _OUTPUT_METHODS):
                    return  # nothing is computed from a new X
                for method in _OUTPUT_METHODS:  # every output method refuses the spoiled X on its own
                    if hasattr(est, method):
                        with pytest.raises((ValueError, TypeError)) as info:
                            getattr(est, method)(X_pred)
                        _assert_clear(info.value, name)
        except AssertionError:
            raise
        except Exception as exc:  # noqa: BLE001 - the point is to look at every error
            if param is not None:  # the value of one parameter is wrong: the message names that parameter
                assert isinstance(exc, (ValueError, TypeError)), f"{name}: {type(exc).__name__}: {exc}"
                assert param[0] in str(exc), f"{name}: {case} refused without naming {param[0]!r}: {exc}"
            elif case in ("one_sample", "huge_X"):
                _assert_clear(exc, name)
            elif case in ("nan_in_X", "inf_in_X"):
                assert isinstance(exc, ValueError), f"{name}: {type(exc).__name__}: {exc}"
                assert re.search(r"nan|inf", str(exc), re.IGNORECASE), f"{name}: {exc}"
            else:
                _assert_clear(exc, name)
        else:
            if case in ("nan_in_X", "inf_in_X"):
                assert est.__sklearn_tags__().input_tags.allow_nan, f"{name} accepted {case} without a word"
            assert case != "empty_X", f"{name} fitted an empty X"
            overflow = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)
                        and re.search("overflow|invalid value", str(w.message))]
            assert not overflow, f"{name} returned a result after numpy warned: {overflow[:2]}"
    assert _same_data(X_fit, X_fit_before), f"{name} modified the caller's data"


def _own_spoiled(X, y):
    """Data cases of an estimator whose input is not a feature matrix, by its kind of input: case -> (fit X, fit y,
    what the error must say, or None where a clear error or a fit with finite outputs are both answers)."""
    if isinstance(X, np.ndarray) and X.dtype == object and X.ndim == 2:  # battles: ids in columns 0 and 1
        def with_first(value):
            bad = X.copy()
            bad[1, 0] = value
            return bad

        self_battle = X.copy()
        self_battle[1, 1] = self_battle[1, 0]
        missing = r"None, NaN or infinite"
        return {"none_id": (with_first(None), y, missing), "nan_id": (with_first(np.nan), y, missing),
                "inf_id": (with_first(np.inf), y, missing), "self_battle": (self_battle, y, r"itself \(row\(s\) 1\b"),
                "empty": (X[:0], y[:0], r"0 sample"), "one_battle": (X[:1], y[:1], None)}
    if isinstance(X, np.ndarray) and X.dtype.kind in "iu":  # token sequences padded with -1
        negative, huge, nan = X.copy(), X.copy(), X.astype(np.float64)
        negative[0, 0], huge[0, 0], nan[0, 0] = -5, 2**40, np.nan
        return {"negative_id": (negative, None, "negative"), "huge_id": (huge, None, "too large"),
                "nan_id": (nan, None, "NaN"), "empty": (X[:0], None, "0 sample"), "one_sequence": (X[:1], None, None)}
    if isinstance(X, np.ndarray) and X.ndim == 1:  # texts
        none = X.copy()
        none[0] = None
        return {"none_text": (none, None, "strings"), "number_texts": (np.full(len(X), 1.5, dtype=object), None,
                                                                      "strings"),
                "empty": (X[:0], None, "no text"), "one_text": (X[:1], None, None)}
    # a problem object (a DAG to schedule)
    return {"array_not_problem": (np.ones((5, 3)), None, "StageSchedulingProblem"),
            "empty_list": ([], None, "empty")}


def _own_data_cases():
    return [pytest.param(name, case, id=f"{name}-{case}") for name, _, X, y in OWN_INPUT
            for case in _own_spoiled(X, y)]


@pytest.mark.parametrize("name, case", _own_data_cases())
def test_estimators_of_other_inputs_get_their_kind_of_bad_data(name, case):
    """The data cases of the first table for the estimators whose input is not a feature matrix, spoiled the way
    their own kind of input goes wrong (missing or self-battling competitors, impossible token ids, texts that are
    not strings, objects that are not problems, no sample, one sample)."""
    _, est, X, y = next(row for row in OWN_INPUT if row[0] == name)
    X_fit, y_fit, match = _own_spoiled(X, y)[case]
    X_before = copy.deepcopy(X_fit)
    est = clone(est)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            est.fit(X_fit, y_fit)
        except (ValueError, TypeError) as exc:
            _assert_clear(exc, name)
            if match is not None:
                assert re.search(match, str(exc)), f"{name} {case}: {exc}"
        else:
            assert match is None, f"{name} accepted {case}"
            _outputs_finite(est, X_fit)
    assert _same_data(X_fit, X_before), f"{name} modified the caller's data"


def _layouts(X):
    """A valid X in other memory layouts and dtypes: case -> X."""
    wide = np.zeros((X.shape[0], 2 * X.shape[1]))
    wide[:, ::2] = X
    return {"fortran_X": np.asfortranarray(X), "strided_X": wide[:, ::2], "float32_X": X.astype(np.float32)}


_LAYOUT_CASES = ["fortran_X", "strided_X", "float32_X", "one_row_at_predict"]


@pytest.mark.parametrize("name, case", [pytest.param(row[0], case, id=f"{row[0]}-{case}") for row in ESTIMATORS
                                        for case in _LAYOUT_CASES])
def test_valid_data_in_any_layout_fits_and_predicts(name, case):
    """Not bad input: Fortran-ordered, strided (non-contiguous) and float32 X fit with finite outputs (a view taken
    on an array of another layout, or a dtype assumed, would raise here), and a single row at prediction gives
    the first row of the outputs on the whole X (no batch-size dependence)."""
    _, est, X, y = next(row for row in ESTIMATORS if row[0] == name)
    est = clone(est)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        X_fit = X if case == "one_row_at_predict" else _layouts(X)[case]
        X_before = X_fit.copy()
        est.fit(X_fit, y) if y is not None else est.fit(X_fit)
        _outputs_finite(est, X_fit)
        assert _same_data(X_fit, X_before), f"{name} modified the caller's data"
        if case != "one_row_at_predict":
            return
        for method in _OUTPUT_METHODS:
            if hasattr(est, method):
                whole, one = np.asarray(getattr(est, method)(X)), np.asarray(getattr(est, method)(X[:1]))
                assert one.shape == (1,) + whole.shape[1:], f"{name}.{method}: shape {one.shape} for one row"
                if whole.dtype.kind in "fc":
                    np.testing.assert_allclose(one, whole[:1], rtol=1e-5, atol=1e-7, err_msg=f"{name}.{method}")
                else:
                    np.testing.assert_array_equal(one, whole[:1], err_msg=f"{name}.{method}")


def test_the_tables_name_existing_estimators():
    """Entries of NON_TABULAR and KNOWN_DEFECTS that name no estimator any more are stale."""
    names = {name for name, _ in harness_classes()}
    assert not set(NON_TABULAR) - names
    assert not {name for name, _ in KNOWN_DEFECTS} - names
    tabular = {row[0] for row in ESTIMATORS}
    assert not tabular & set(NON_TABULAR)
    assert len(tabular) >= 15  # the generic table covers most of the collection
    assert {row[0] for row in OWN_INPUT} == set(NON_TABULAR)  # the others join it with their own data


# ---- second table: public functions and non-tabular methods -------------------------------------------------
_KEEP = object()


def _battles(first=_KEEP):
    X = np.array([["a", "b"], ["b", "c"], ["c", "a"], ["a", "c"]], dtype=object)
    if first is not _KEEP:
        X[0, 0] = first
    return X, np.array(["model_a", "model_b", "model_a", "model_b"])


def _bt(first, **params):
    from sklearn_icml.ranking import BradleyTerryRanker

    return BradleyTerryRanker(alpha=1.0, **params).fit(*_battles(first))


def _elo(first=_KEEP, **params):
    from sklearn_icml.ranking import EloRater

    return EloRater(**params).fit(*_battles(first))


def _sampler_fit(first):
    from sklearn_icml.ranking import ActivePairSampler

    X = np.array([[first, "b"], [first, "c"], ["b", "c"]], dtype=object)
    return ActivePairSampler().fit(X, ["model_a", "model_b", "model_a"])


def _anomaly(X=None, y=None, groups=None, fit=True):
    from sklearn_icml.ranking import RaterAnomalyDetector

    det = RaterAnomalyDetector(random_state=0)
    if fit:
        det.fit(*_battles())
    X = _battles()[0] if X is None else X
    y = _battles()[1] if y is None else y
    return det.test(X, y, np.arange(len(y)) if groups is None else groups)


def _shift(base, tuned):
    from sklearn_icml.finetune import magnitude_direction_shift

    return magnitude_direction_shift(base, tuned)


def _adapter(kind, **params):
    import torch

    from sklearn_icml.finetune import DoRALinear, LoRALinear

    return {"lora": LoRALinear, "dora": DoRALinear}[kind](torch.nn.Linear(3, 2), **params)


def _surv(event, time):
    from sklearn_icml.survival import Surv

    return Surv.from_arrays(event=event, time=time)


def _ibs(survival, y=None):
    from sklearn_icml.survival import integrated_brier_score

    y = _surv([True, True, False, True], [1.0, 2.0, 3.0, 4.0]) if y is None else y
    return integrated_brier_score(y, y, survival, [1.0, 2.0, 3.0])


def _fit(est, X, y, **kwargs):
    return est.fit(X, y, **kwargs)


def _design(scale):
    from sklearn_icml.bandits import g_optimal_design

    F = np.random.RandomState(0).randn(6, 3)
    weights, lev = g_optimal_design(F * scale)
    base, base_lev = g_optimal_design(F)
    np.testing.assert_allclose(weights, base, atol=1e-8)
    return weights, lev, base_lev


def _rng(n, d):
    return np.random.RandomState(0).randn(n, d)


def _cases_table():
    from sklearn_icml.bandits import PairwiseGLMClassifier, g_optimal_design
    from sklearn_icml.finetune import DoRAClassifier
    from sklearn_icml.metrics import binned_ece, ls_ece, make_calibration_scorer
    from sklearn_icml.optimize import LikelihoodFreeOptimizer
    from sklearn_icml.ranking import ActivePairSampler
    from sklearn_icml.survival import CoxSurvival, concordance_index, kaplan_meier

    X3 = _rng(40, 3)
    y_bin = (X3[:, 0] > 0).astype(int)
    y01, p = np.array([0, 1, 1, 0]), np.array([0.2, 0.8, 0.6, 0.4])
    err, ok = "error", "result"
    return [
        # ranking (S17): competitor ids, self-battles, before fit, empty input
        ("BradleyTerryRanker id None", lambda: _bt(None), err, ValueError, "competitor ids"),
        ("BradleyTerryRanker id inf", lambda: _bt(np.inf), err, ValueError, "competitor ids"),
        ("BradleyTerryRanker id NaN", lambda: _bt(np.nan), err, ValueError, "competitor ids"),
        ("BradleyTerryRanker self-battle", lambda: _bt("b"), err, ValueError, r"BradleyTerryRanker: .*row\(s\) 0"),
        ("BradleyTerryRanker unknown id at predict",
         lambda: _bt("a", handle_unknown="error").predict_proba(np.array([["a", "zz"]], object)),
         err, ValueError, "zz"),
        ("BradleyTerryRanker None id at predict",
         lambda: _bt("a").predict_proba(np.array([["a", None]], object)), err, ValueError, "competitor ids"),
        ("EloRater id None", lambda: _elo(None), err, ValueError, "competitor ids"),
        ("EloRater id inf", lambda: _elo(np.inf), err, ValueError, "competitor ids"),
        ("EloRater self-battle", lambda: _elo("b"), err, ValueError, r"EloRater: .*row\(s\) 0"),
        ("EloRater k=1e300", lambda: _elo(k=1e300).ratings_, ok, None, None),
        ("EloRater k=inf", lambda: _elo(k=np.inf), err, ValueError, "'k'"),
        ("EloRater init_rating=nan", lambda: _elo(init_rating=np.nan), err, ValueError, "'init_rating'"),
        ("ActivePairSampler NaN id", lambda: _sampler_fit(np.nan), err, ValueError, "competitor ids"),
        ("ActivePairSampler None item", lambda: ActivePairSampler(items=["a", None]).fit(), err, ValueError,
         "competitor ids"),
        ("ActivePairSampler prior=1e300", lambda: ActivePairSampler(prior=1e300).fit(*_battles()), err, ValueError,
         "'prior'"),
        ("ActivePairSampler.sample before fit", lambda: ActivePairSampler().sample(), err, NotFittedError,
         "not fitted"),
        ("RaterAnomalyDetector.test before fit", lambda: _anomaly(fit=False), err, NotFittedError, "not fitted"),
        ("RaterAnomalyDetector.test on no votes",
         lambda: np.asarray([len(_anomaly(np.empty((0, 2), object), np.array([], object), np.array([])))], float),
         ok, None, None),
        # finetune (S1)
        ("magnitude_direction_shift NaN", lambda: _shift(np.full((2, 2), np.nan), np.ones((2, 2))), err,
         ValueError, "base_weight contains NaN"),
        ("magnitude_direction_shift inf", lambda: _shift(np.ones((2, 2)), np.full((2, 2), np.inf)), err,
         ValueError, "weight contains NaN or infinity"),
        ("magnitude_direction_shift empty", lambda: _shift(np.ones((0, 2)), np.ones((0, 2))), err, ValueError,
         "empty"),
        ("LoRALinear alpha=inf", lambda: _adapter("lora", alpha=np.inf), err, ValueError, "alpha"),
        ("DoRALinear alpha=inf", lambda: _adapter("dora", alpha=np.inf), err, ValueError, "alpha"),
        ("DoRALinear alpha=nan", lambda: _adapter("dora", alpha=np.nan), err, ValueError, "alpha"),
        ("DoRAClassifier learning_rate=1e300", lambda: _fit(DoRAClassifier(learning_rate=1e300), X3, y_bin),
         err, ValueError, "'learning_rate'"),
        ("DoRAClassifier lora_alpha=inf", lambda: _fit(DoRAClassifier(lora_alpha=np.inf), X3, y_bin),
         err, ValueError, "'lora_alpha'"),
        # survival (S15)
        ("CoxSurvival alpha=1e300",
         lambda: _fit(CoxSurvival(alpha=1e300), X3, _surv(X3[:, 0] > 0, np.abs(X3[:, 1]) + 0.1)),
         err, ValueError, "'alpha'"),
        ("kaplan_meier empty", lambda: kaplan_meier(_surv([], [])), err, ValueError, "kaplan_meier: y is empty"),
        ("concordance_index empty", lambda: concordance_index(_surv([], []), []), err, ValueError, "empty"),
        ("concordance_index NaN risk", lambda: concordance_index(_surv([True, True], [1.0, 2.0]), [np.nan, 1.0]),
         err, ValueError, "NaN"),
        ("integrated_brier_score empty", lambda: _ibs(np.ones((0, 3)), _surv([], [])), err, ValueError, "empty"),
        ("integrated_brier_score survival 5.0", lambda: _ibs(np.full((4, 3), 5.0)), err, ValueError, r"\[0, 1\]"),
        ("integrated_brier_score survival -0.1", lambda: _ibs(np.full((4, 3), -0.1)), err, ValueError,
         r"\[0, 1\]"),
        ("integrated_brier_score NaN", lambda: _ibs(np.full((4, 3), np.nan)), err, ValueError, "NaN"),
        # bandits (S11)
        ("PairwiseGLMClassifier negative weights",
         lambda: _fit(PairwiseGLMClassifier(), X3, y_bin, sample_weight=-np.ones(40)), err, ValueError,
         "sample_weight"),
        ("PairwiseGLMClassifier 1e300 features", lambda: _fit(PairwiseGLMClassifier(), X3 * 1e300, y_bin), err,
         ValueError, "too large"),
        ("g_optimal_design tiny features", lambda: _design(1e-200)[0], ok, None, None),
        ("g_optimal_design huge features", lambda: _design(1e200)[0], ok, None, None),
        ("g_optimal_design NaN", lambda: g_optimal_design(np.full((3, 2), np.nan)), err, ValueError, "NaN"),
        ("g_optimal_design empty", lambda: g_optimal_design(np.ones((0, 2))), err, ValueError, "non-empty"),
        ("g_optimal_design all zero", lambda: g_optimal_design(np.zeros((3, 2))), err, ValueError, "zero"),
        # optimize (S13)
        ("LikelihoodFreeOptimizer.minimize n_iter=0",
         lambda: LikelihoodFreeOptimizer([(-1.0, 1.0)], random_state=0).minimize(lambda x: float(x @ x), 0),
         err, ValueError, "n_iter"),
        ("LikelihoodFreeOptimizer.minimize func returns NaN",
         lambda: LikelihoodFreeOptimizer([(-1.0, 1.0)], random_state=0).minimize(lambda x: np.nan, 2),
         err, ValueError, "nan"),
        # metrics (S16)
        ("ls_ece NaN score", lambda: ls_ece(y01, np.array([np.nan, 0.8, 0.6, 0.4])), err, ValueError, "NaN"),
        ("ls_ece inf score", lambda: ls_ece(y01, np.array([np.inf, 0.8, 0.6, 0.4])), err, ValueError, "infinity"),
        ("ls_ece empty", lambda: ls_ece(y01[:0], p[:0]), err, ValueError, "0 sample"),
        ("ls_ece probability 5", lambda: ls_ece(y01, np.array([5.0, 0.8, 0.6, 0.4])), err, ValueError,
         r"\[0, 1\]"),
        ("ls_ece sigma=inf", lambda: ls_ece(y01, p, sigma=np.inf), err, ValueError, "'sigma'"),
        ("ls_ece sigma=1e300", lambda: np.asarray([ls_ece(y01, p, sigma=1e300)]), ok, None, None),
        ("ls_ece negative weights", lambda: ls_ece(y01, p, sample_weight=-np.ones(4)), err, ValueError,
         "sample_weight"),
        ("ls_ece wrong length", lambda: ls_ece(y01, p[:3]), err, ValueError, "inconsistent|length|samples"),
        ("binned_ece NaN score", lambda: binned_ece(y01, np.array([np.nan, 0.8, 0.6, 0.4])), err, ValueError,
         "NaN"),
        ("binned_ece n_bins=0", lambda: binned_ece(y01, p, n_bins=0), err, ValueError, "'n_bins'"),
        ("make_calibration_scorer unknown metric", lambda: make_calibration_scorer("ece2"), err, ValueError,
         "metric"),
    ]


TABLE = _cases_table()


@pytest.mark.parametrize("label, call, outcome, exc_type, match", TABLE, ids=[row[0] for row in TABLE])
def test_function_bad_input(label, call, outcome, exc_type, match):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if outcome == "error":
            with pytest.raises(exc_type, match=match):
                call()
        else:
            result = np.asarray(call(), dtype=float)
            assert np.all(np.isfinite(result)), f"{label}: {result!r}"


def test_table_sizes():
    """The two tables: about a thousand generic cases and every case of the second table."""
    assert len(_cases()) >= 300
    assert len(TABLE) >= 50
    assert len(_own_data_cases()) >= 4 * len(NON_TABULAR)  # every estimator of other inputs gets data cases too


# ---- third table: bad inputs by kind, thrown at every function and method that takes that kind ---------------
def _languages():
    from sklearn_icml.datasets import make_regular_languages

    d = make_regular_languages(6, max_len=32, random_state=0)
    return d.sequences, d.valid_next, int(d.separator)


def _language_models():
    from sklearn_icml.language import InContextNGram, NGramTransformerLM

    return [InContextNGram(), NGramTransformerLM(d_model=16, n_layers=1, n_heads=2, max_iter=1, random_state=0)]


def _language_functions(X, valid, sep):
    from sklearn_icml.language import dfa_accuracy, model_agreement, next_token_tvd, ngram_head_histograms

    proba = np.full(valid.shape, 1.0 / valid.shape[2])
    return {
        "dfa_accuracy": lambda X=X, valid=valid: dfa_accuracy(X, valid, proba, separator=sep),
        "next_token_tvd": lambda X=X, valid=valid: next_token_tvd(X, valid, proba, separator=sep),
        "model_agreement": lambda X=X, valid=valid: model_agreement(proba, proba, X, separator=sep),
        "ngram_head_histograms": lambda X=X: ngram_head_histograms(X, 2),
    }


#: label -> (the id, how the message writes it)
_BAD_TOKEN_IDS = {"1e300": (1e300, "1e+300"), "1e19": (1e19, "1e+19"), "2**40": (2**40, "1099511627776"),
                  "-5": (-5, "-5")}


@pytest.mark.parametrize("value", list(_BAD_TOKEN_IDS), ids=list(_BAD_TOKEN_IDS))
def test_token_sequences_with_an_impossible_id_are_refused_by_every_taker(value):
    """Ids too large for any vocabulary, or negative, are named as such (not wrapped around to a negative int)."""
    X, valid, sep = _languages()
    token, written = _BAD_TOKEN_IDS[value]
    bad = X.astype(np.float64) if isinstance(token, float) else X.astype(np.int64)
    bad[0, 0] = token
    word = "negative" if token < 0 else "too large"
    for est in _language_models():
        with pytest.raises(ValueError, match=word) as info:
            clone(est).fit(bad)
        assert written in str(info.value)  # the id as given, not wrapped around
        fitted = clone(est).fit(X)
        with pytest.raises(ValueError, match=word):
            fitted.predict_proba(bad)
    for call in _language_functions(bad, valid, sep).values():
        with pytest.raises(ValueError, match=word):
            call()


def test_a_mask_that_is_not_boolean_is_refused():
    """NaN (or 0.5) in ``valid_next`` is not a mask: scoring it would count NaN as allowed."""
    X, valid, sep = _languages()
    for spoil in (np.nan, 0.5):
        bad = valid.astype(np.float64)
        bad[0, 0, 0] = spoil
        for est in _language_models():
            fitted = clone(est).fit(X)
            with pytest.raises(ValueError, match="boolean mask"):
                fitted.score(X, bad)
        for name in ("dfa_accuracy", "next_token_tvd"):
            with pytest.raises(ValueError, match="boolean mask"):
                _language_functions(X, bad, sep)[name]()


@pytest.mark.parametrize("batch_size", [0, -1, 1.5, True])
def test_predict_batch_sizes_are_checked(batch_size):
    X, _, _ = _languages()
    model = _language_models()[1].fit(X)
    with pytest.raises(ValueError, match="batch_size"):
        model.predict_proba(X, batch_size=batch_size)


def test_dropout_is_seeded_by_random_state():
    """Two fits with dropout and the same random_state are equal; another random_state gives another model."""
    from sklearn_icml.language import NGramTransformerLM

    X, _, _ = _languages()
    fit = lambda rs: NGramTransformerLM(d_model=16, n_layers=1, n_heads=2, max_iter=2, dropout=0.5,  # noqa: E731
                                        random_state=rs).fit(X).predict_proba(X)
    first = fit(0)
    np.testing.assert_array_equal(first, fit(0))
    assert not np.array_equal(first, fit(1))


def _fitted_scaling():
    from sklearn_icml.scaling import AdaptiveShapeScheduler, ScalingLawRegressor

    from ._params import fit_data, make_instance

    out = []
    for cls in (ScalingLawRegressor, AdaptiveShapeScheduler):
        est = make_instance(cls)
        out.append(est.fit(*fit_data(est)))
    return out


def test_loss_levels_must_be_numbers_everywhere():
    """Every public method of the scaling family that takes a loss level refuses NaN instead of returning inf."""
    law, scheduler = _fitted_scaling()
    calls = {
        "ScalingLawRegressor.compute_to_reach": lambda v: law.compute_to_reach(v),
        "ScalingLawRegressor.marginal_compute": lambda v: law.marginal_compute(v),
        "AdaptiveShapeScheduler.static_compute": lambda v: scheduler.static_compute(v),
        "AdaptiveShapeScheduler.schedule": lambda v: scheduler.schedule(v),
        "AdaptiveShapeScheduler.predicted_compute": lambda v: scheduler.predicted_compute(v),
        "AdaptiveShapeScheduler.savings": lambda v: scheduler.savings(v),
    }
    for label, call in calls.items():
        with pytest.raises(ValueError, match="NaN|target_loss") as info:
            call(np.nan)
        assert label.split(".")[0] in str(info.value)
        with pytest.raises((ValueError, TypeError)):
            call("low")


def _torch_net(width=3):
    import torch

    return torch.nn.Sequential(torch.nn.Linear(width, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2)).eval()


def _attribution_functions():
    from sklearn_icml import inspection

    return {name: getattr(inspection, name) for name in (
        "saliency", "input_x_gradient", "integrated_gradients", "smoothgrad", "vargrad", "gradient_shap",
        "feature_ablation", "kernel_shap")}


@pytest.mark.parametrize("name", list(_attribution_functions()))
def test_torch_models_given_the_wrong_width_get_a_clear_error(name):
    X = np.random.RandomState(0).randn(4, 5)
    with pytest.raises(ValueError, match="5 features"):
        _attribution_functions()[name](_torch_net(3), X)


@pytest.mark.parametrize("kind", ["lora", "dora"])
def test_adapter_layers_check_width_and_scaling(kind):
    import torch

    layer = _adapter(kind)
    assert layer(torch.ones(2, 3)).shape == (2, 2)
    with pytest.raises(ValueError, match="5 features"):
        layer(torch.ones(2, 5))
    with pytest.raises(ValueError, match="alpha"):
        _adapter(kind, alpha=1e300)
    # the largest scaling that float32 holds is accepted and keeps the output finite at initialisation
    assert torch.isfinite(_adapter(kind, alpha=1e30)(torch.ones(2, 3))).all()


def test_regular_expressions_are_checked():
    from sklearn_icml.finetune import apply_adapters

    with pytest.raises(ValueError, match="regular expression"):
        apply_adapters(_torch_net(), target_modules="[")


@pytest.mark.parametrize("scale", [1e-300, 1e300])
def test_magnitude_direction_shift_is_scale_equivariant(scale):
    """Shifts of weights scaled by s are s times the shifts (magnitude) and the same (direction): no overflow."""
    rng = np.random.RandomState(0)
    W0, W = rng.randn(4, 3), rng.randn(4, 3)
    dm, dd = _shift(W0, W)
    dm_s, dd_s = _shift(W0 * scale, W * scale)
    np.testing.assert_allclose(dm_s, dm * scale, rtol=1e-12)
    np.testing.assert_allclose(dd_s, dd, rtol=1e-12, atol=1e-15)


def test_overflowing_metrics_say_so():
    from sklearn_icml.inspection import avg_sensitivity, infidelity, max_sensitivity

    f = lambda Z: Z @ np.array([1.0, 2.0, 3.0])  # noqa: E731
    with pytest.raises(ValueError, match="overflows"):
        infidelity(f, np.full((2, 3), 1e300), np.full((2, 3), 1e300), random_state=0)
    nan_explainer = lambda Z: np.full_like(Z, np.nan)  # noqa: E731
    for metric in (avg_sensitivity, max_sensitivity):
        with pytest.raises(ValueError, match="non-finite"):
            metric(nan_explainer, np.ones((2, 3)), random_state=0)


def test_rater_anomaly_test_on_no_votes_warns():
    with pytest.warns(UserWarning, match="no votes"):
        report = _anomaly(np.empty((0, 2), object), np.array([], object), np.array([]))
    assert len(report) == 0



def test_rows_at_any_scale_are_unit_vectors_after_bonding():
    """Space bonds normalise rows: inputs scaled by 1e-300 (whose squares underflow) still give unit rows."""
    from sklearn_icml.multimodal import SpaceBond

    from ._params import fit_data, make_instance

    bond = make_instance(SpaceBond)
    X, _ = fit_data(bond)
    for scale in (1.0, 1e-300):
        out = clone(bond).fit(X * scale).transform(X * scale)
        np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-12)


@pytest.mark.parametrize("widths", [[4.5, 3.5], [0, 8], ["4", "4"], [True, 7]])
def test_block_widths_must_be_whole_numbers_of_columns(widths):
    from sklearn_icml.multimodal import FreeBind, SpaceBond

    X = np.random.RandomState(0).rand(20, 12)
    with pytest.raises(ValueError, match="expert_widths"):
        FreeBind([("a", SpaceBond()), ("b", SpaceBond())], expert_widths=widths).fit(X)


@pytest.mark.parametrize("alphas", [[], [0.0], [np.nan], [-1.0], ["a"]])
def test_penalty_grids_must_be_positive_and_finite(alphas):
    from sklearn_icml.cross_domain import AutoLinear

    from ._params import fit_data, make_instance

    est = make_instance(AutoLinear).set_params(bridge_alphas=alphas)
    with pytest.raises(ValueError, match="bridge_alphas"):
        est.fit(*fit_data(est))


@pytest.mark.parametrize("weight", [1e300, 1e200])
def test_scheduling_weights_whose_objective_overflows_are_refused(weight):
    """The objective squares stage loads: totals beyond 1e150 are refused by the problem, with the fix named."""
    from sklearn_icml.datasets import make_scheduling_dag
    from sklearn_icml.optimize import StageSchedulingProblem

    p = StageSchedulingProblem.from_dataset(make_scheduling_dag(20, random_state=0))
    with pytest.raises(ValueError, match="node_weight add up to .*Rescale"):
        StageSchedulingProblem(p.edges, np.full(p.n_nodes, weight), n_stages=4)
    with pytest.raises(ValueError, match="edge_weight add up to"):
        StageSchedulingProblem(p.edges, p.node_weight, np.full(p.n_edges, weight), n_stages=4)


def test_cpsat_refuses_weights_beyond_its_integers():
    pytest.importorskip("ortools")
    from sklearn_icml.datasets import make_scheduling_dag
    from sklearn_icml.optimize import CPSATScheduler, StageSchedulingProblem

    p = StageSchedulingProblem.from_dataset(make_scheduling_dag(20, random_state=0))
    huge = StageSchedulingProblem(p.edges, np.full(p.n_nodes, 1e100), n_stages=4)
    with pytest.raises(ValueError, match="64-bit integer"):
        CPSATScheduler(time_limit=1.0).fit(huge)


@pytest.mark.parametrize("epsilon", [51.0, 709.0, 1e6])
def test_local_hashing_never_rounds_away_the_noise(epsilon):
    """Beyond about 53 the keep probability of a local report would be exactly 1.0 in float64 (no randomisation):
    larger budgets are spent as 50, so every report stays randomised and within the budget asked for."""
    from sklearn_icml.privacy import olh_parameters

    g, p = olh_parameters(epsilon)
    assert (g, p) == olh_parameters(50.0)
    assert 0.5 < p < 1.0 and g >= 2
    assert math.log(p * (g - 1) / (1 - p)) <= 50.0 * (1 + 1e-9) <= epsilon


def _pe(**params):
    from sklearn_icml.generative import PrivateEvolution

    base = dict(bounds=(-5.0, 5.0), n_iterations=2, n_synthetic=20, random_state=0)
    return PrivateEvolution(**{**base, **params})


_BAD_CALLABLES = {
    "embedder returns too few rows": dict(embedder=lambda Z: Z[:3]),
    "embedder returns NaN": dict(embedder=lambda Z: np.full_like(Z, np.nan)),
    "embedder returns strings": dict(embedder=lambda Z: np.full(Z.shape, "x", dtype=object)),
    "variation returns NaN": dict(variation=lambda S, degree, rng: np.full_like(S, np.nan)),
    "variation changes the shape": dict(variation=lambda S, degree, rng: S[:, :1]),
}


@pytest.mark.parametrize("case", list(_BAD_CALLABLES), ids=list(_BAD_CALLABLES))
def test_callables_that_misbehave_are_named(case):
    X = np.random.RandomState(0).randn(100, 2)
    with pytest.raises(ValueError, match="embedder|variation"):
        _pe(**_BAD_CALLABLES[case]).fit(X)


@pytest.mark.parametrize("bounds", [("a", "b"), ([0.0, 0.0, 0.0], [1.0, 1.0, 1.0]), (0.0, 1.0, 2.0)])
def test_bounds_that_are_not_a_box_are_named(bounds):
    with pytest.raises(ValueError, match="bounds"):
        _pe(bounds=bounds).fit(np.random.RandomState(0).randn(100, 2))


def test_scores_that_overflow_say_so():
    X = np.random.RandomState(0).randn(100, 2)
    model = _pe().fit(X)
    assert np.isfinite(model.score(X))
    for scale in (1e20, 1e300):
        with pytest.raises(ValueError, match="score.*overflow"):
            model.score(X * scale)


def _battle_takers():
    """Every public method that takes a battle log (competitor ids in columns 0 and 1): label -> (the object it is
    called on, fresh or fitted on valid battles, and the call)."""
    from sklearn_icml.ranking import (
        ActivePairSampler,
        BradleyTerryRanker,
        EloRater,
        RaterAnomalyDetector,
        WinMatrixEstimator,
    )

    X, y = _battles()

    def fitted(est):
        return est.fit(X, y)

    return {
        "BradleyTerryRanker.fit": (lambda: BradleyTerryRanker(alpha=1.0), lambda o, A, b: o.fit(A, b)),
        "EloRater.fit": (EloRater, lambda o, A, b: o.fit(A, b)),
        "EloRater.partial_fit": (lambda: fitted(EloRater()), lambda o, A, b: o.partial_fit(A, b)),
        "ActivePairSampler.fit": (ActivePairSampler, lambda o, A, b: o.fit(A, b)),
        "ActivePairSampler.partial_fit": (lambda: fitted(ActivePairSampler(random_state=0)),
                                          lambda o, A, b: o.partial_fit(A, b)),
        "WinMatrixEstimator.fit": (WinMatrixEstimator, lambda o, A, b: o.fit(A, b)),
        "RaterAnomalyDetector.fit": (lambda: RaterAnomalyDetector(random_state=0), lambda o, A, b: o.fit(A, b)),
        "RaterAnomalyDetector.test": (lambda: fitted(RaterAnomalyDetector(random_state=0)),
                                      lambda o, A, b: o.test(A, b, np.arange(len(b)))),
    }


def _bad_battle_logs():
    """Battle logs spoiled by kind: kind -> (X, y, what the error must say)."""
    X, y = _battles()
    missing = r"None, NaN or infinite"
    self_battle = X.copy()
    self_battle[1] = ["newcomer", "newcomer"]  # a new competitor: a fitted object must not grow before refusing
    return {"None id": (_battles(None)[0], y, missing + "; X holds None"),
            "NaN id": (_battles(np.nan)[0], y, missing + "; X holds (None or NaN|nan)"),
            "inf id": (_battles(np.inf)[0], y, missing + "; X holds inf"),
            "self-battle": (self_battle, y, r"itself \(row\(s\) 1\b"),
            "no battle": (X[:0], y[:0], r"no battle|0 sample|at least 2|both outcome classes")}


@pytest.mark.parametrize("kind", list(_bad_battle_logs()))
@pytest.mark.parametrize("taker", list(_battle_takers()))
def test_every_taker_of_battles_refuses_bad_battle_logs(taker, kind):
    """Missing ids, self-battles and empty logs are refused by every method that takes battles, naming the class;
    a refused update leaves a fitted object as it was. Testing no new votes is the one documented exception (an
    empty report with a warning)."""
    make, call = _battle_takers()[taker]
    X, y, match = _bad_battle_logs()[kind]
    obj = make()
    before, X_before = joblib.hash(obj), copy.deepcopy(X)
    if taker == "RaterAnomalyDetector.test" and kind == "no battle":
        with pytest.warns(UserWarning, match="no votes"):
            assert len(call(obj, X, y)) == 0
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match=match) as info:
            call(obj, X, y)
    assert taker.split(".")[0] in str(info.value)
    if taker.endswith(("partial_fit", ".test")):
        assert joblib.hash(obj) == before, f"{taker} changed the fitted state before refusing {kind}"
    assert _same_data(X, X_before)


def _adamw_trainers():
    """Every estimator that trains with AdamW's decoupled weight decay, with data it fits on."""
    from sklearn_icml.finetune import DoRAClassifier, DoRARegressor
    from sklearn_icml.language import NGramTransformerLM
    from sklearn_icml.survival import PrototypeSurvival

    from ._params import fit_data, make_instance

    return [(make_instance(cls), fit_data(make_instance(cls)))
            for cls in (DoRAClassifier, DoRARegressor, NGramTransformerLM, PrototypeSurvival)]


@pytest.mark.parametrize("factor", [1.0, 2.5, 100.0])
def test_weight_decays_that_erase_the_weights_are_refused_by_every_adamw_trainer(factor):
    """AdamW multiplies the weights by 1 - learning_rate * weight_decay at every step: from 1 on, the weights are
    erased or flipped (then the loss goes NaN, which used to be reported as a learning-rate problem)."""
    for est, (X, y) in _adamw_trainers():
        est.set_params(weight_decay=factor / est.learning_rate)
        with pytest.raises(ValueError, match=r"weight_decay=.*learning_rate=.*weight_decay < 1 / learning_rate"):
            est.fit(X, y)
        assert not hasattr(est, "module_")  # refused before any training
