"""Adaptive model shapes: follow the lower envelope of the per-shape marginal compute (Anagnostidis et al. 2024)."""

from collections import namedtuple
from numbers import Integral, Real

import numpy as np
from scipy.integrate import quad
from scipy.optimize import brentq
from sklearn.base import BaseEstimator, clone
from sklearn.utils.validation import check_is_fitted, validate_data

from ..utils._sklearn_private import HasMethods, Interval, _fit_context
from ._forms import check_loss_level, law_compute, law_loss, law_marginal, zero_compute_loss
from ._law import ScalingLawRegressor, _shape_key

__all__ = ["AdaptiveShapeScheduler", "Segment"]

Segment = namedtuple("Segment", ["shape", "loss_from", "loss_to", "compute_from", "compute_to"])
Segment.__doc__ = """One stretch of an adaptive schedule: train ``shape`` from ``loss_from`` down to ``loss_to``.

Parameters
----------
shape : int or float
    The shape id to train on this stretch.
loss_from : float
    Loss at the start of the stretch (the higher one).
loss_to : float
    Loss at its end, where the schedule switches shape or reaches its target.
compute_from : float
    Cumulative compute of the adaptive run at ``loss_from``, in the law's units.
compute_to : float
    Cumulative compute at ``loss_to``.
"""

#: With no zero-compute loss (d = 0), the envelope starts where every shape's compute is this share of the target's.
_TOP_SHARE = 1e-12


def _integrate_marginal(p, lo, hi):
    """``integral_lo^hi -dC/dE dE`` by adaptive quadrature in ``u = log(E - c)``, where it is smooth."""
    a, b, c = p["a"], p["b"], p["c"]

    def integrand(u):  # (E - c) |dC/dE| at E = c + e^u, from its logarithm (no overflow far out)
        with np.errstate(over="ignore", under="ignore"):
            return float(np.exp(-np.log(a * b) + (-1.0 / b - 1.0) * (u - np.log(a)) + u))

    upper = np.log(hi - c) if np.isfinite(hi) else np.inf
    value, _ = quad(integrand, np.log(lo - c), upper, epsabs=0.0, epsrel=1e-9, limit=200)
    return float(value)


class AdaptiveShapeScheduler(BaseEstimator):
    """Schedule of model shapes that reaches a target loss with the least compute, from per-shape scaling laws.

    Read more in the :ref:`User Guide <scaling>`.

    A model whose shape can change during training (patch size, width,
    context length) can, at every loss level ``E``, train in the shape that
    needs the least compute per unit of loss decrease, ``min_P |dC_P/dE|``:
    the lower envelope of the inverted laws (Anagnostidis et al. 2024, Fig. 3).
    The compute to reach ``E*`` from the start level ``E0`` is then
    ``integral_{E*}^{E0} min_P |dC_P/dE| dE``, never more than the best static
    shape's, under the paper's assumption that a shape change keeps the loss.

    ``fit(X, y)`` fits the laws (``X[:, 0]`` compute, ``X[:, 1]`` shape ids by
    default, ``y`` loss); :meth:`schedule` returns the switch points as
    :class:`Segment` tuples; :meth:`predicted_compute`, :meth:`static_compute`
    and :meth:`savings` compare it with static shapes; :meth:`predict` gives
    the shape to train at each cumulative compute.

    Parameters
    ----------
    law : ScalingLawRegressor or None, default=None
        The law to fit (cloned); None means ``ScalingLawRegressor(shape_column=1)``.
        It must fit several shapes (``shape_column`` set).
    shapes : sequence of shape ids or None, default=None
        The shapes the schedule may use, in the order it may move through them
        when ``monotone``; None means every fitted shape, sorted.
    monotone : bool, default=True
        Shapes only move forward in the order of ``shapes`` (a network can be
        grown, not shrunk). The best such path is found by dynamic programming
        on the loss grid; without the constraint the pointwise minimum is used.
    grid_size : int, default=2000
        Points of the loss grid on which the path is chosen; the switch points
        are then refined to the exact crossings of the marginal computes.
    switch_margin : float, default=0.0
        A shape is left, at the latest, when the loss reaches ``c_P (1 + margin)``
        (its asymptote is never approached closer than that). A margin that
        puts every exit at or above the start loss leaves nothing to train
        for and is refused by ``fit``.

    Attributes
    ----------
    law_ : ScalingLawRegressor
        The fitted laws.
    shapes_ : ndarray of shape (n_shapes,)
        The shapes the schedule uses, in order.
    start_loss_ : float
        Default start of the schedules: the lowest loss any shape's law gives
        at zero compute (``inf`` for laws without an offset ``d``).
    compute_max_ : float
        Largest compute seen in fit (sets how far :meth:`predict` plans).
    n_features_in_ : int
        Number of columns of ``X`` seen in fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of the columns, when ``X`` had string column names.

    See Also
    --------
    ScalingLawRegressor : The per-shape laws.
    train_adaptive : Trains a torch model along a schedule.

    Notes
    -----
    The schedule assumes, as the paper does, that after a switch the model
    continues on the new shape's law from the same loss. That holds only as
    far as the shape change keeps the training state: a function-preserving
    operator keeps the loss but not necessarily the speed of training (see the
    benchmark pages). Between switch points the compute is integrated with
    adaptive quadrature (:func:`scipy.integrate.quad`) of the marginal
    compute; switch points solve ``|dC_P/dE| = |dC_Q/dE|`` by Brent's method
    inside the grid cell where the path changes shape, or sit at a forced
    exit ``c_P (1 + switch_margin)``. Static shapes are counted over the same
    range of losses, from the start loss down (a law's loss at zero compute
    is an extrapolation, and shapes whose laws start higher would otherwise
    be charged for a stretch the adaptive run never trains). With
    ``switch_margin = 0`` the predicted compute is at most that of every
    static shape.

    References
    ----------
    .. [1] S. Anagnostidis, G. Bachmann, I. Schlag, T. Hofmann, "Navigating
       Scaling Laws: Compute Optimality in Adaptive Model Training", ICML 2024.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.scaling import AdaptiveShapeScheduler
    >>> C = np.logspace(0, 4, 20)
    >>> runs = [(C, 1.0 * C ** -0.5), (C, 3.0 * C ** -0.6)]  # cheap shape, then an efficient one
    >>> X = np.vstack([np.column_stack([c, np.full(20, s)]) for s, (c, _) in enumerate(runs)])
    >>> y = np.concatenate([e for _, e in runs])
    >>> sched = AdaptiveShapeScheduler().fit(X, y)
    >>> [seg.shape for seg in sched.schedule(1e-3)]
    [0, 1]
    >>> bool(sched.predicted_compute(1e-3) < sched.static_compute(1e-3))
    True
    """

    _parameter_constraints: dict = {
        "law": [HasMethods(["fit", "compute_to_reach", "marginal_compute"]), None],
        "shapes": ["array-like", None],
        "monotone": ["boolean"],
        "grid_size": [Interval(Integral, 10, None, closed="left")],
        "switch_margin": [Interval(Real, 0, None, closed="left")],
    }

    def __init__(self, law=None, *, shapes=None, monotone=True, grid_size=2000, switch_margin=0.0):
        self.law = law
        self.shapes = shapes
        self.monotone = monotone
        self.grid_size = grid_size
        self.switch_margin = switch_margin

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y):
        """Fit the per-shape laws.

        Parameters
        ----------
        X : array-like of shape (n_runs, n_features)
            Column 0: compute (> 0); the law's shape column (1 by default): shape ids.
        y : array-like of shape (n_runs,)
            Loss (> 0).

        Returns
        -------
        self : AdaptiveShapeScheduler
            The fitted scheduler.
        """
        name = type(self).__name__
        law = ScalingLawRegressor(shape_column=1) if self.law is None else clone(self.law)
        if getattr(law, "shape_column", 0) is None:
            raise ValueError(f"{name}: the law must fit one law per shape; set its shape_column.")
        self.law_ = law.fit(X, y)
        fitted = list(self.law_.params_)
        if self.shapes is None:
            order = fitted
        else:
            order = [_shape_key(s) for s in np.asarray(self.shapes, dtype=float).ravel()]
            missing = [s for s in order if s not in self.law_.params_]
            if missing or len(set(order)) != len(order) or not order:
                raise ValueError(f"{name}: shapes must be distinct fitted shape ids; got {self.shapes!r} "
                                 f"(fitted: {fitted}).")
        self.shapes_ = np.array(order, dtype=float)
        self.n_features_in_ = self.law_.n_features_in_
        if hasattr(self.law_, "feature_names_in_"):
            self.feature_names_in_ = self.law_.feature_names_in_
        self.compute_max_ = float(np.max(np.asarray(X, dtype=float)[:, 0]))
        self.start_loss_ = float(min(zero_compute_loss(p) for p in self._laws()))
        floors = self._floors()
        if not floors.min() < self.start_loss_:
            lowest = min(p["c"] for p in self._laws())
            raise ValueError(f"{type(self).__name__}: switch_margin={self.switch_margin!r} leaves no loss to train "
                             f"for: every shape is left at c (1 + switch_margin) >= {floors.min():.6g}, not below the "
                             f"start loss {self.start_loss_:.6g}; give switch_margin < "
                             f"{self.start_loss_ / lowest - 1.0:.6g}.")
        return self

    # -- the envelope -------------------------------------------------------------------------------------------

    def _laws(self):
        return [self.law_.params_[_shape_key(s)] for s in self.shapes_]

    def _floors(self):
        return np.array([p["c"] * (1.0 + self.switch_margin) for p in self._laws()])

    def _check_levels(self, target_loss, start_loss):
        check_is_fitted(self)
        name = type(self).__name__
        target = float(check_loss_level(target_loss, "target_loss", name))
        start = self.start_loss_ if start_loss is None else float(check_loss_level(start_loss, "start_loss", name))
        floors = self._floors()
        if not np.isfinite(target) or target <= floors.min():
            raise ValueError(f"{name}: target_loss={target_loss!r} is not reachable: every shape's law stays above "
                             f"{floors.min():.6g} (its asymptote c times 1 + switch_margin).")
        if not (target < start <= self.start_loss_):
            raise ValueError(f"{name}: need target_loss < start_loss <= {self.start_loss_:.6g} (the lowest "
                             f"zero-compute loss); got target_loss={target_loss!r}, start_loss={start_loss!r}.")
        return target, start

    def _plan(self, target, start):
        """Shape runs from high to low loss: ``[(k, loss_from, loss_to)]``, switch points refined."""
        laws, floors = self._laws(), self._floors()
        top = start
        if not np.isfinite(start):
            c_star = min(float(law_compute(target, p)) for p in laws)
            top = max(float(law_loss(_TOP_SHARE * c_star, p)) for p in laws)
        base = min(p["c"] for p in laws)
        grid = base + np.geomspace(target - base, top - base, self.grid_size)
        inner = floors[(floors > target) & (floors < top)]
        grid = np.unique(np.clip(np.concatenate([grid, inner, [target, top]]), target, top))
        # exact compute of each shape on each cell [grid[i], grid[i+1]]; inf where the shape is not allowed
        C = np.array([law_compute(grid, p) for p in laws])
        with np.errstate(invalid="ignore"):
            cost = C[:, :-1] - C[:, 1:]
        cost[~np.isfinite(cost)] = np.inf
        cost[grid[None, :-1] < floors[:, None] * (1 + 1e-12)] = np.inf
        if not np.isfinite(start):  # the open cell [top, inf) of laws without a zero-compute loss
            cost = np.column_stack([cost, C[:, -1]])
        path = self._best_path(cost[:, ::-1])[::-1]  # DP runs from high loss down; cell i starts at grid[i]
        runs, hi = [], start
        for i in range(len(path) - 1, -1, -1):
            if i == 0 or path[i - 1] != path[i]:
                lo = target if i == 0 else min(max(self._refine(path[i], path[i - 1], grid, i, floors),
                                                   grid[i - 1]), hi)
                runs.append((int(path[i]), hi, lo))
                hi = lo
        return runs

    def _best_path(self, cost):
        """Shape per cell minimising the summed cost, moving forward only when ``monotone``."""
        n_shapes, n_cells = cost.shape
        if not self.monotone:
            return np.argmin(cost, axis=0)
        best = cost[:, 0].copy()
        back = np.zeros((n_cells, n_shapes), dtype=int)
        back[0] = np.arange(n_shapes)
        for i in range(1, n_cells):
            arg = np.zeros(n_shapes, dtype=int)
            running, where = np.inf, 0
            prefix = np.empty(n_shapes)
            for k in range(n_shapes):
                if best[k] < running:
                    running, where = best[k], k
                prefix[k], arg[k] = running, where
            best = prefix + cost[:, i]
            back[i] = arg
        path = np.empty(n_cells, dtype=int)
        path[-1] = int(np.argmin(best))
        for i in range(n_cells - 1, 0, -1):
            path[i - 1] = back[i, path[i]]
        return path

    def _refine(self, upper, lower, grid, i, floors):
        """Exact switch loss between ``upper`` (trained above) and ``lower`` near ``grid[i]``."""
        laws = self._laws()
        p, q = laws[upper], laws[lower]
        if abs(grid[i] - floors[upper]) <= 1e-12 * max(grid[i], 1e-300):
            return float(floors[upper])  # forced exit at the asymptote margin

        def gap(e):
            # marginals that both under- or overflow (compute of 1e300) leave the gap undefined (nan):
            # the switch then stays at the grid point
            with np.errstate(invalid="ignore", divide="ignore"):
                return float(np.log(law_marginal(e, p)) - np.log(law_marginal(e, q)))

        lo_edge = max(floors[upper], floors[lower])
        lo = max(grid[max(i - 2, 0)], lo_edge * (1 + 1e-12)) if lo_edge > 0 else grid[max(i - 2, 0)]
        hi = grid[min(i + 2, len(grid) - 1)]
        if lo < hi and np.isfinite(gap(lo)) and np.isfinite(gap(hi)) and gap(lo) * gap(hi) < 0:
            return float(brentq(gap, lo, hi, xtol=1e-14 * hi, rtol=1e-14))
        return float(grid[i])

    # -- public API ---------------------------------------------------------------------------------------------

    def schedule(self, target_loss, start_loss=None):
        """The shapes to train, from ``start_loss`` down to ``target_loss``.

        Parameters
        ----------
        target_loss : float
            Loss to reach; above the asymptote of at least one shape.
        start_loss : float or None, default=None
            Loss the schedule starts from; None means :attr:`start_loss_`.

        Returns
        -------
        segments : list of Segment
            ``Segment(shape, loss_from, loss_to, compute_from, compute_to)``,
            from high loss to low, with cumulative compute.
        """
        target, start = self._check_levels(target_loss, start_loss)
        laws = self._laws()
        segments, total = [], 0.0
        for k, hi, lo in self._plan(target, start):
            p = laws[k]
            part = _integrate_marginal(p, lo, hi)
            segments.append(Segment(_shape_key(self.shapes_[k]), float(hi), float(lo), total, total + part))
            total += part
        return segments

    def predicted_compute(self, target_loss, start_loss=None):
        """Compute of the adaptive schedule to reach ``target_loss``: the integral of the envelope.

        Parameters
        ----------
        target_loss : float
            Loss to reach.
        start_loss : float or None, default=None
            Loss to start from; None means :attr:`start_loss_`.

        Returns
        -------
        compute : float
            ``integral_{target}^{start} min_P |dC_P/dE| dE`` along the schedule.
        """
        return float(self.schedule(target_loss, start_loss)[-1].compute_to)

    def static_compute(self, target_loss, shape=None, start_loss=None):
        """Compute a static shape needs to go from the start loss down to ``target_loss``.

        Parameters
        ----------
        target_loss : float
            Loss to reach.
        shape : shape id or None, default=None
            The shape; None means the best of :attr:`shapes_`.
        start_loss : float or None, default=None
            Loss the run starts from, as in :meth:`schedule`; None means
            :attr:`start_loss_`. The adaptive and the static compute are thus
            counted over the same range of losses.

        Returns
        -------
        compute : float
            ``C_P(target_loss) - C_P(start_loss)`` (``inf`` at or below the shape's
            asymptote).
        """
        check_is_fitted(self)
        caller = f"{type(self).__name__}.static_compute"
        target_loss = float(check_loss_level(target_loss, "target_loss", caller))
        start = self.start_loss_ if start_loss is None else float(check_loss_level(start_loss, "start_loss", caller))
        if shape is not None:
            p = self.law_._params_for(shape)
            return float(law_compute(float(target_loss), p) - law_compute(start, p))
        return float(min(law_compute(float(target_loss), p) - law_compute(start, p) for p in self._laws()))

    def savings(self, target_loss, start_loss=None):
        """Share of the best static shape's compute the adaptive schedule saves: ``1 - adaptive / static``.

        Parameters
        ----------
        target_loss : float
            Loss to reach.
        start_loss : float or None, default=None
            Loss both runs start from; None means :attr:`start_loss_`.

        Returns
        -------
        savings : float
            Between 0 and 1 with ``switch_margin = 0``.
        """
        return 1.0 - (self.predicted_compute(target_loss, start_loss)
                      / self.static_compute(target_loss, start_loss=start_loss))

    def predict(self, X):
        """Shape to train at each cumulative compute ``X[:, 0]`` along the schedule.

        The schedule runs from :attr:`start_loss_` down to the loss the best
        static shape reaches at 100x the largest compute seen in fit; past its
        end the last shape is kept.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Column 0: cumulative compute (>= 0).

        Returns
        -------
        shapes : ndarray of shape (n_samples,)
            Shape ids.
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        if np.any(X[:, 0] < 0):
            raise ValueError(f"{type(self).__name__}: compute (column 0 of X) must be >= 0.")
        target = min(float(law_loss(100.0 * self.compute_max_, p)) for p in self._laws())
        floors = self._floors()
        target = max(target, floors.min() * (1 + 1e-9) + 1e-300)
        segments = self.schedule(target)
        ends = np.array([s.compute_to for s in segments])
        idx = np.minimum(np.searchsorted(ends, X[:, 0], side="right"), len(segments) - 1)
        return np.array([segments[i].shape for i in idx], dtype=float)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.positive_only = True
        # X holds the runs of a scaling study (compute > 0, then a categorical shape id with at least 4 runs per
        # shape), not a feature matrix: random matrices never form a study, so scikit-learn's data checks do not
        # apply; its API checks and the house checks run on real runs
        tags.input_tags.two_d_array = False
        tags.input_tags.categorical = True
        tags.target_tags.required = True
        tags.target_tags.positive_only = True
        return tags
