"""Survival targets and metrics: Surv, the accepted y forms, c-index, Kaplan-Meier, Brier scores."""

import numpy as np
import pytest

from sklearn_icml.survival import (
    Surv,
    brier_score,
    concordance_index,
    integrated_brier_score,
    kaplan_meier,
)
from sklearn_icml.survival._target import check_survival_target


def _naive_cindex(event, time, risk, tol=1e-8):
    num = den = 0.0
    for i in range(len(time)):
        if not event[i]:
            continue
        for j in range(len(time)):
            if time[j] > time[i] or (time[j] == time[i] and not event[j]):
                den += 1
                if abs(risk[i] - risk[j]) <= tol:
                    num += 0.5
                elif risk[i] > risk[j]:
                    num += 1
    return num / den


def _random_target(rng, n, n_times=None, n_risks=None):
    time = rng.randint(1, n_times, size=n).astype(float) if n_times else rng.exponential(size=n)
    event = rng.rand(n) < 0.6
    event[0] = True
    risk = rng.randint(0, n_risks, size=n).astype(float) if n_risks else rng.normal(size=n)
    return event, time, risk


def test_surv_from_arrays_and_dataframe():
    y = Surv.from_arrays(event=[1, 0, 1], time=[3, 2, 1])
    assert y.dtype == np.dtype([("event", "?"), ("time", "<f8")])
    np.testing.assert_array_equal(y["event"], [True, False, True])
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"status": [True, False], "days": [5, 7]})
    y2 = Surv.from_dataframe("status", "days", frame)
    assert y2.dtype.names == ("status", "days")
    with pytest.raises(ValueError, match="only 0 and 1"):
        Surv.from_arrays(event=[2, 0, 1], time=[1, 2, 3])
    with pytest.raises(ValueError, match="must differ"):
        Surv.from_arrays([1], [1], name_event="t", name_time="t")


@pytest.mark.peers
def test_surv_dtype_equals_scikit_survival():
    sksurv_util = pytest.importorskip("sksurv.util")
    ours = Surv.from_arrays(event=[True, False, True], time=[10, 25, 15])
    theirs = sksurv_util.Surv.from_arrays(event=[True, False, True], time=[10, 25, 15])
    assert ours.dtype == theirs.dtype
    np.testing.assert_array_equal(ours, theirs)


def test_target_forms_agree():
    event = np.array([True, False, True, True])
    time = np.array([5.0, 3.0, 2.0, 8.0])
    structured = Surv.from_arrays(event, time)
    # field order and names do not matter: the boolean field is the event
    swapped = np.empty(4, dtype=[("days", "<f8"), ("dead", "?")])
    swapped["days"], swapped["dead"] = time, event
    two_col = np.column_stack([time, event.astype(float)])
    for y in (structured, swapped, two_col):
        e, t = check_survival_target(y)
        np.testing.assert_array_equal(e, event)
        np.testing.assert_array_equal(t, time)
    e, t = check_survival_target(time)
    assert e.all() and np.array_equal(t, time)
    # times that are all equal to 1 (or 0 and 2) are times: only a 0/1 mix reads as labels
    for times in (np.ones(3), np.array([0.0, 2.0, 2.0])):
        e, t = check_survival_target(times)
        assert e.all() and np.array_equal(t, times)


@pytest.mark.parametrize("y, error, match", [
    (None, ValueError, "requires y to be passed"),
    (Surv.from_arrays([True, True], [1.0, -2.0]), ValueError, "non-negative"),
    (Surv.from_arrays([False, False], [1.0, 2.0]), ValueError, "every sample is censored"),
    (np.array([[1.0, 2.0], [2.0, 1.0]]), ValueError, "only 0 and 1"),
    (np.array([1.0, np.nan]), ValueError, "finite"),
    (np.array([True, False]), TypeError, "pass the times too"),
    (np.array([0, 1, 1, 0]), ValueError, "only 0 and 1, which read as class labels"),
    (np.array([1.0, 0.0, 1.0]), ValueError, "only 0 and 1, which read as class labels"),
    (np.zeros(3, dtype=[("a", "<f8"), ("b", "<f8")]), TypeError, "one boolean field"),
    (np.ones((3, 3)), ValueError, "got shape"),
])
def test_bad_targets(y, error, match):
    with pytest.raises(error, match=match):
        check_survival_target(y, estimator="CoxSurvival")


def test_concordance_index_by_hand_and_against_naive_loop():
    y = Surv.from_arrays([True, True, False, True], [1.0, 3.0, 4.0, 5.0])
    # comparable: (1,3) (1,4) (1,5) (3,4) (3,5); concordant: all but (3,4): risk 1.0 < 1.5
    assert concordance_index(y, [2.0, 1.0, 1.5, 0.0]) == pytest.approx(0.8)
    rng = np.random.RandomState(0)
    for _ in range(20):
        event, time, risk = _random_target(rng, 40, n_times=8, n_risks=5)
        assert concordance_index(Surv.from_arrays(event, time), risk) == pytest.approx(
            _naive_cindex(event, time, risk), abs=1e-12)


def test_concordance_index_blocks_do_not_change_the_value(monkeypatch):
    from sklearn_icml.survival import _metrics

    rng = np.random.RandomState(1)
    event, time, risk = _random_target(rng, 300, n_times=30, n_risks=20)
    y = Surv.from_arrays(event, time)
    full = concordance_index(y, risk)
    monkeypatch.setattr(_metrics, "_BLOCK", 500)
    assert concordance_index(y, risk) == full


@pytest.mark.peers
def test_concordance_index_equals_scikit_survival_with_ties():
    metrics = pytest.importorskip("sksurv.metrics")
    rng = np.random.RandomState(42)
    for trial in range(100):
        n = rng.randint(5, 80)
        event, time, risk = _random_target(rng, n, n_times=rng.randint(2, 12), n_risks=rng.randint(2, 8))
        if trial % 3 == 0:  # also continuous risks, and risks closer than tied_tol
            risk = rng.normal(size=n)
            risk[: n // 3] = risk[0] + 1e-9
        try:
            expected = metrics.concordance_index_censored(event, time, risk)[0]
        except Exception:  # no comparable pair: ours raises too
            with pytest.raises(ValueError, match="no comparable pair"):
                concordance_index(Surv.from_arrays(event, time), risk)
            continue
        assert concordance_index(Surv.from_arrays(event, time), risk) == pytest.approx(expected, abs=1e-12)


def test_no_comparable_pair_is_a_clear_error():
    y = Surv.from_arrays([False, True, True], [1.0, 4.0, 4.0])  # events only at the last time, tied
    with pytest.raises(ValueError, match="no comparable pair"):
        concordance_index(y, [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="1-D risk"):
        concordance_index(Surv.from_arrays([True, False], [1, 2]), np.ones((2, 2)))


@pytest.mark.peers
def test_kaplan_meier_equals_scikit_survival():
    nonparametric = pytest.importorskip("sksurv.nonparametric")
    rng = np.random.RandomState(3)
    event, time, _ = _random_target(rng, 60, n_times=15)
    for reverse in (False, True):
        t1, s1 = kaplan_meier(Surv.from_arrays(event, time), reverse=reverse)
        t2, s2 = nonparametric.kaplan_meier_estimator(event, time, reverse=reverse)
        np.testing.assert_allclose(t1, t2)
        np.testing.assert_allclose(s1, s2, atol=1e-12)


def test_brier_scores_of_constant_predictions():
    y = Surv.from_arrays([True, True, False, True, False], [1.0, 2.0, 3.0, 4.0, 5.0])
    # a constant 0.5 costs 0.25 per sample, and the censoring weights average to 1 here
    np.testing.assert_allclose(brier_score(y, y, np.full((5, 2), 0.5), [1.5, 2.5]), [0.25, 0.25])
    assert integrated_brier_score(y, y, np.full((5, 3), 0.5), [1.0, 2.0, 3.0]) == pytest.approx(0.25)
    with pytest.raises(ValueError, match="follow-up"):
        brier_score(y, y, np.full((5, 1), 0.5), [5.0])
    with pytest.raises(ValueError, match="at least two times"):
        integrated_brier_score(y, y, np.full((5, 1), 0.5), [2.0])


@pytest.mark.peers
def test_brier_and_integrated_brier_equal_scikit_survival():
    metrics = pytest.importorskip("sksurv.metrics")
    rng = np.random.RandomState(7)
    event, time, _ = _random_target(rng, 120, n_times=40)
    y_train = Surv.from_arrays(event, time)
    event_te, time_te, _ = _random_target(rng, 50, n_times=35)
    y_test = Surv.from_arrays(event_te, time_te)
    times = np.arange(2.0, 30.0, 1.5)
    surv = np.sort(rng.uniform(size=(50, len(times))), axis=1)[:, ::-1]
    np.testing.assert_allclose(brier_score(y_train, y_test, surv, times),
                               metrics.brier_score(y_train, y_test, surv, times)[1], atol=1e-12)
    assert integrated_brier_score(y_train, y_test, surv, times) == pytest.approx(
        metrics.integrated_brier_score(y_train, y_test, surv, times), abs=1e-12)
