"""AdaptiveShapeScheduler: switch points against analytic crossings, compute against quadrature and statics."""

import numpy as np
import pytest

from sklearn_icml.scaling import AdaptiveShapeScheduler, ScalingLawRegressor, Segment


def _data(truths, lo=0, hi=4, n=25):
    X, y = [], []
    for shape, p in truths.items():
        C = np.logspace(lo, hi, n)
        X.append(np.column_stack([C, np.full(n, shape)]))
        y.append(p["a"] * (C + p["d"]) ** -p["b"] + p["c"])
    return np.vstack(X), np.concatenate(y)


# cheap-but-poor shape 1, then 2, then 3: each reaches lower losses more efficiently (a patch-size-like family)
POWER_OFFSET = {1: dict(a=1.0, b=0.5, c=0.10, d=0.0), 2: dict(a=3.2, b=0.7, c=0.05, d=0.0),
                3: dict(a=20.7, b=0.9, c=0.02, d=0.0)}
SATURATING = {1: dict(a=1.0, b=0.5, c=0.10, d=0.5), 2: dict(a=3.2, b=0.7, c=0.05, d=2.0),
              3: dict(a=20.7, b=0.9, c=0.02, d=6.0)}


def _marginal(E, p):
    E = np.asarray(E, dtype=float)
    gap = E - p["c"]
    out = np.full(E.shape, np.inf)
    ok = gap > 0
    out[ok] = (gap[ok] / p["a"]) ** (-1 / p["b"] - 1) / (p["a"] * p["b"])
    return out


def _compute(E, p):
    if E <= p["c"]:
        return np.inf
    return ((E - p["c"]) / p["a"]) ** (-1 / p["b"]) - p["d"]


def _fit(truths, **kwargs):
    form = "saturating" if any(p["d"] > 0 for p in truths.values()) else "power_offset"
    X, y = _data(truths)
    return AdaptiveShapeScheduler(ScalingLawRegressor(form, shape_column=1, n_restarts=2, random_state=0),
                                  **kwargs).fit(X, y)


def _crossing_same_floor(p, q, c):
    """``-dC_P/dE = -dC_Q/dE`` solved in closed form when both laws share the floor ``c`` (linear in log(E - c))."""
    kp, kq = 1 / p["b"] + 1, 1 / q["b"] + 1
    log_gap = (np.log(q["a"] * q["b"]) - np.log(p["a"] * p["b"]) + kp * np.log(p["a"]) - kq * np.log(q["a"])) \
        / (kp - kq)
    return c + np.exp(log_gap)


def test_switch_losses_equal_the_analytic_crossings():
    # built so that the marginals cross at E - c = 0.1 (1 -> 2) and 0.01 (2 -> 3)
    truths = {1: dict(a=1.0, b=0.5, c=0.05, d=0.0), 2: dict(a=3.179, b=0.7, c=0.05, d=0.0),
              3: dict(a=20.68, b=0.9, c=0.05, d=0.0)}
    sched = _fit(truths)
    laws = sched.law_.params_
    segments = sched.schedule(0.052)
    assert [s.shape for s in segments] == [1, 2, 3]
    expected = [_crossing_same_floor(laws[1], laws[2], laws[1]["c"]),
                _crossing_same_floor(laws[2], laws[3], laws[2]["c"])]
    got = [segments[0].loss_to, segments[1].loss_to]
    np.testing.assert_allclose(got, expected, rtol=1e-6)  # the bar is 1%


def test_switch_points_with_different_floors_equalise_the_marginals():
    sched = _fit(SATURATING)
    laws = sched.law_.params_
    segments = sched.schedule(0.03)
    assert [s.shape for s in segments] == [1, 2, 3]
    for before, after in zip(segments, segments[1:]):
        e = before.loss_to
        np.testing.assert_allclose(_marginal(e, laws[before.shape]), _marginal(e, laws[after.shape]), rtol=1e-6)


def _envelope_quadrature(laws, shapes, target, start, n=400_001):
    """Independent check: trapezoid rule of min_P |dC_P/dE| on a dense grid in log(E - c_min)."""
    base = min(laws[s]["c"] for s in shapes) * (1 - 1e-12)
    u = np.linspace(np.log(target - base), np.log(start - base), n)
    E = base + np.exp(u)
    env = np.min([_marginal(E, laws[s]) for s in shapes], axis=0)
    f = env * (E - base)
    return float(np.sum((f[1:] + f[:-1]) / 2 * np.diff(u)))


@pytest.mark.parametrize("truths", [SATURATING, POWER_OFFSET], ids=["saturating", "power_offset"])
@pytest.mark.parametrize("target", [0.2, 0.12, 0.06, 0.03, 0.021])
def test_adaptive_compute_equals_quadrature_of_the_envelope(truths, target):
    sched = _fit(truths, monotone=False)
    laws = sched.law_.params_
    start = sched.start_loss_ if np.isfinite(sched.start_loss_) else 1e3
    expected = _envelope_quadrature(laws, [1, 2, 3], target, start)
    got = sched.predicted_compute(target, start_loss=start)
    assert got == pytest.approx(expected, rel=1e-4)  # the bar is 1%
    # and to the sum of the exact compute differences along the segments
    segments = sched.schedule(target, start_loss=start)
    exact = sum(_compute(s.loss_to, laws[s.shape]) - _compute(s.loss_from, laws[s.shape]) for s in segments)
    assert got == pytest.approx(exact, rel=1e-8)


@pytest.mark.parametrize("monotone", [True, False])
@pytest.mark.parametrize("order", [None, (3, 2, 1), (2, 1, 3)])
def test_predicted_compute_never_exceeds_a_static_shape(monotone, order):
    sched = _fit(SATURATING, monotone=monotone, shapes=order)
    for target in np.geomspace(0.0205, sched.start_loss_ * 0.99, 40):
        adaptive = sched.predicted_compute(target)
        statics = [sched.static_compute(target, shape=s) for s in (1, 2, 3)]
        laws, start = sched.law_.params_, sched.start_loss_
        for s, value in zip((1, 2, 3), statics):  # counted from the common start loss, by the definition
            assert value == pytest.approx(_compute(target, laws[s]) - max(_compute(start, laws[s]), 0.0), rel=1e-9)
        assert adaptive <= min(statics) * (1 + 1e-9)
        assert sched.static_compute(target) == pytest.approx(min(statics))


def test_monotone_schedules_move_forward_only():
    sched = _fit(SATURATING, shapes=(3, 2, 1))
    segments = sched.schedule(0.03)
    ranks = [(3, 2, 1).index(s.shape) for s in segments]
    assert ranks == sorted(ranks)
    # unconstrained, the same laws go 1 -> 2 -> 3, which the order (3, 2, 1) forbids
    assert [s.shape for s in _fit(SATURATING, shapes=(3, 2, 1), monotone=False).schedule(0.03)] == [1, 2, 3]


def test_segments_are_contiguous_and_savings_consistent():
    sched = _fit(SATURATING)
    segments = sched.schedule(0.03)
    assert all(isinstance(s, Segment) for s in segments)
    assert segments[0].loss_from == sched.start_loss_ and segments[-1].loss_to == 0.03
    assert segments[0].compute_from == 0.0
    for a, b in zip(segments, segments[1:]):
        assert a.loss_to == b.loss_from and a.compute_to == b.compute_from
        assert a.loss_from > a.loss_to
    assert sched.savings(0.03) == pytest.approx(1 - segments[-1].compute_to / sched.static_compute(0.03))
    assert 0 < sched.savings(0.03) < 1


def test_switch_margin_forces_the_exit_before_the_asymptote():
    sched = _fit(SATURATING, switch_margin=1.0)
    laws = sched.law_.params_
    segments = sched.schedule(0.045)
    # shape 1 may not train below 2 x its floor 0.1 = 0.2 -> its exit is at most there
    first = segments[0]
    assert first.shape == 1 and first.loss_to >= 2 * laws[1]["c"] * (1 - 1e-9)
    for s in segments:
        assert s.loss_to >= laws[s.shape]["c"] * 2 * (1 - 1e-9)
    with pytest.raises(ValueError, match="not reachable"):
        sched.schedule(0.035)  # below 2 x the lowest floor 0.02


def test_predict_follows_the_schedule():
    sched = _fit(SATURATING)
    compute = np.array([0.0, 1e-3, 1e1, 1e3, 1e5, 1e9])
    shapes = sched.predict(np.column_stack([compute, np.ones(6)]))
    assert shapes[0] == 1 and shapes[-1] == 3
    assert np.all(np.diff(shapes) >= 0)
    assert set(shapes) <= {1.0, 2.0, 3.0}


def test_bad_levels_and_laws_raise():
    sched = _fit(SATURATING)
    with pytest.raises(ValueError, match="start_loss"):
        sched.schedule(0.05, start_loss=0.04)
    with pytest.raises(ValueError, match="not reachable"):
        sched.schedule(0.01)
    X, y = _data(SATURATING)
    with pytest.raises(ValueError, match="shape_column"):
        AdaptiveShapeScheduler(ScalingLawRegressor()).fit(X, y)
    with pytest.raises(ValueError, match="shapes must be"):
        AdaptiveShapeScheduler(shapes=(1, 9)).fit(X, y)
