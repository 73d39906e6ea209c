"""Bounded, restarted least-squares fit of saturating power laws on log loss (the Chinchilla practice).

The fit runs in rescaled compute ``x = C / s`` (``s`` the median compute) on
log residuals ``log E_hat - log E``, with a Huber (or squared) loss, bounded
parameters and random restarts. Per shape the parameters are
``theta = (log a', b, c, d')`` with ``a' = a s^-b`` and ``d' = d / s``; shared
parameters are one entry of the optimisation vector ``z`` used by several
shapes, written as a linear map ``theta_P = M_P z + t_P``. Sharing ``a``
shares it in raw compute units: ``log a'_P = log a - b_P log s``.
"""

import numpy as np
from scipy.optimize import least_squares

from ._forms import FREE_PARAMS

_THETA = ("a", "b", "c", "d")
#: Upper bound of ``d'``: ``d`` is at most this many times the median compute.
D_MAX = 10.0
#: Restarts stop once this many of them agree (relative 1e-6) on the best loss.
_AGREE = 3


class LawProblem:
    """The optimisation vector's layout, bounds and residuals for one set of shapes."""

    def __init__(self, xs, ys, *, form, share, b_bounds, log_scale):
        self.b_bounds = b_bounds
        self.xs = [np.asarray(x, dtype=float) for x in xs]
        self.logys = [np.log(np.asarray(y, dtype=float)) for y in ys]
        self.ymins = [float(np.min(y)) for y in ys]
        self.form = form
        free = FREE_PARAMS[form]
        n_shapes = len(xs)
        self.slots = []  # (param name, shape index or None when shared)
        for name in _THETA:
            if name not in free:
                continue
            if name in share:
                self.slots.append((name, None))
            else:
                self.slots.extend((name, k) for k in range(n_shapes))
        n_z = len(self.slots)
        self.M = np.zeros((n_shapes, 4, n_z))
        for j, (name, k) in enumerate(self.slots):
            row = _THETA.index(name)
            for p in range(n_shapes) if k is None else (k,):
                self.M[p, row, j] = 1.0
        if "a" in share:  # log a'_P = log a - b_P log s
            for p in range(n_shapes):
                self.M[p, 0, self._slot("b", p)] -= log_scale
        lo, hi = [], []
        for name, k in self.slots:
            if name == "a":
                lo.append(-np.inf), hi.append(np.inf)
            elif name == "b":
                lo.append(b_bounds[0]), hi.append(b_bounds[1])
            elif name == "c":
                ymin = min(self.ymins) if k is None else self.ymins[k]
                lo.append(0.0), hi.append(ymin)
            else:
                lo.append(0.0), hi.append(D_MAX)
        self.lower, self.upper = np.array(lo), np.array(hi)

    def _slot(self, name, shape):
        for j, (n, k) in enumerate(self.slots):
            if n == name and (k is None or k == shape):
                return j
        raise KeyError(name)

    def thetas(self, z):
        """``(n_shapes, 4)`` array of ``(log a', b, c, d')``."""
        return self.M @ z

    def _log_terms(self, p, th):
        """``log t`` and ``log pred`` of shape ``p``, with ``t = a' (x + d')^-b``, ``pred = t + c``."""
        la, b, c, d = th
        xd = self.xs[p] + d
        log_t = la - b * np.log(xd)
        log_pred = np.logaddexp(log_t, np.log(c) if c > 0 else -np.inf)
        return xd, log_t, log_pred

    def residuals(self, z):
        out = []
        for p, th in enumerate(self.thetas(z)):
            _, _, log_pred = self._log_terms(p, th)
            out.append(log_pred - self.logys[p])
        return np.concatenate(out)

    def jacobian(self, z):
        blocks = []
        for p, th in enumerate(self.thetas(z)):
            b = th[1]
            xd, log_t, log_pred = self._log_terms(p, th)
            share = np.exp(log_t - log_pred)  # t / pred
            J = np.column_stack([share, -share * np.log(xd), np.exp(-log_pred), -b * share / xd])
            blocks.append(J @ self.M[p])
        return np.vstack(blocks)

    def _fill_log_a(self, z):
        """Set the ``log a`` slots to their least-squares value given ``b``, ``c``, ``d'`` (in place)."""
        for j, (name, k) in enumerate(self.slots):
            if name != "a":
                continue
            vals = []
            for p in range(len(self.xs)) if k is None else (k,):
                th = self.thetas(z)[p]
                gap = np.exp(self.logys[p]) - th[2]
                log_a_p = np.mean(np.log(np.maximum(gap, 1e-300)) + th[1] * np.log(self.xs[p] + th[3]))
                vals.append(log_a_p - (th[0] - z[j]))  # a shared ``a`` takes the mean over shapes
            z[j] = float(np.mean(vals))
        return z

    def random_start(self, rng):
        """A random feasible start: b, c, d' drawn in their boxes, log a' by least squares given them."""
        z = np.zeros(len(self.slots))
        for j, (name, _) in enumerate(self.slots):
            lo, hi = self.lower[j], self.upper[j]
            if name == "b":
                z[j] = np.exp(rng.uniform(np.log(lo), np.log(hi)))
            elif name == "c":
                z[j] = rng.uniform(0.0, 0.9) * hi
            elif name == "d":
                z[j] = np.exp(rng.uniform(np.log(1e-3), np.log(hi)))
        return self._fill_log_a(np.clip(z, self.lower, self.upper))

    def grid_start(self):
        """The best start of a profile grid: per shape, ``(b, d')`` on a grid, ``(a', c)`` by weighted least squares.

        For fixed ``b`` and ``d'`` the law is linear in ``a'`` and ``c``; weighting the
        squared residuals by ``1 / E^2`` approximates the log residuals. Shared
        parameters start at the mean of the per-shape values.
        """
        free = FREE_PARAMS[self.form]
        lo, hi = self.b_bounds
        b_grid = np.exp(np.linspace(np.log(lo), np.log(hi), 48))
        d_grid = np.concatenate([[0.0], np.exp(np.linspace(np.log(1e-3), np.log(D_MAX), 24))]) if "d" in free \
            else np.array([0.0])
        B, D = (g.ravel() for g in np.meshgrid(b_grid, d_grid, indexing="ij"))
        per_shape = []
        for x, logy, ymin in zip(self.xs, self.logys, self.ymins):
            y = np.exp(logy)
            w = 1.0 / y ** 2
            U = (x[None, :] + D[:, None]) ** (-B[:, None])
            if "c" in free:
                sw, su, sy = w.sum(), (w * U).sum(1), (w * y).sum()
                suu, suy = (w * U * U).sum(1), (w * U * y).sum(1)
                det = sw * suu - su ** 2
                with np.errstate(divide="ignore", invalid="ignore"):
                    c = np.where(det > 0, (suu * sy - su * suy) / det, 0.0)
                c = np.clip(np.nan_to_num(c), 0.0, ymin * (1 - 1e-9))
            else:
                c = np.zeros(len(B))
            with np.errstate(divide="ignore", invalid="ignore"):
                a = (w * U * (y[None, :] - c[:, None])).sum(1) / (w * U * U).sum(1)
            ok = np.isfinite(a) & (a > 0)
            pred = np.where(ok[:, None], np.maximum(a, 1e-300)[:, None] * U + c[:, None], 1.0)
            with np.errstate(divide="ignore", invalid="ignore"):
                cost = np.where(ok, ((np.log(pred) - logy[None, :]) ** 2).sum(1), np.inf)
            i = int(np.nanargmin(np.nan_to_num(cost, nan=np.inf)))
            per_shape.append({"b": B[i], "c": c[i], "d": D[i]})
        z = np.zeros(len(self.slots))
        for j, (name, k) in enumerate(self.slots):
            if name != "a":
                z[j] = np.mean([v[name] for v in per_shape]) if k is None else per_shape[k][name]
        z = np.clip(z, self.lower, self.upper)
        return self._fill_log_a(z)


def _solve(problem, z0, *, loss, huber_delta, tol, max_nfev):
    return least_squares(problem.residuals, z0, jac=problem.jacobian, bounds=(problem.lower, problem.upper),
                         method="trf", loss="huber" if loss == "huber_log" else "linear", f_scale=huber_delta,
                         x_scale="jac", xtol=tol, ftol=tol, gtol=tol, max_nfev=max_nfev)


def _objective(problem, z, loss, huber_delta):
    r = np.abs(problem.residuals(z))
    if loss != "huber_log":
        return 0.5 * float(np.sum(r ** 2))
    return float(np.sum(np.where(r <= huber_delta, 0.5 * r ** 2, huber_delta * (r - 0.5 * huber_delta))))


def fit_law(problem, *, loss, huber_delta, n_restarts, rng):
    """Best of up to ``n_restarts`` bounded trust-region fits, then polished; returns ``(z, objective)``.

    The first start is the profile-grid start, the others random. Each start
    is first brought into its basin by a squared-log fit to a loose tolerance
    (a Huber loss converges slowly far from the optimum, where it is linear);
    the starts are ranked by the requested loss, and the best is polished on
    that loss to machine precision. The restarts stop early once ``_AGREE`` of
    them reach the same best objective.
    """
    best, values = None, []
    for k in range(n_restarts):
        z0 = problem.grid_start() if k == 0 else problem.random_start(rng)
        res = _solve(problem, z0, loss="squared_log", huber_delta=huber_delta, tol=1e-8, max_nfev=100)
        value = _objective(problem, res.x, loss, huber_delta)
        if not np.isfinite(value):
            continue
        values.append(value)
        if best is None or value < best[1]:
            best = (res.x, value)
        if sum(v <= best[1] * (1 + 1e-6) + 1e-300 for v in values) >= _AGREE:
            break  # enough starts found the same best loss: the others would too
    if best is None:
        raise FloatingPointError("every restart of the scaling-law fit ended on a non-finite objective")
    res = _solve(problem, best[0], loss=loss, huber_delta=huber_delta, tol=1e-15, max_nfev=2000)
    value = _objective(problem, res.x, loss, huber_delta)
    if not (np.isfinite(value) and value <= best[1]):
        return best
    return res.x, value


def slots_at_bound(problem, z, rtol=1e-6):
    """``[(name, shape index or None)]`` of the slots that ended on a box limit set by the fitter.

    ``b`` at either end, ``c`` at the smallest observed loss, ``d`` at ``10 x`` the
    median compute; ``c = 0`` and ``d = 0`` are the law's own limits (no floor, no
    offset), not artefacts of the box, and are not reported.
    """
    out = []
    for j, (name, k) in enumerate(problem.slots):
        lo, hi = problem.lower[j], problem.upper[j]
        width = rtol * max(abs(hi), abs(lo), 1e-12)
        hit_hi = np.isfinite(hi) and z[j] >= hi - width
        hit_lo = name == "b" and z[j] <= lo + width
        if name in ("b", "c", "d") and (hit_hi or hit_lo):
            out.append((name, k))
    return out
