"""A tabulated hyper-parameter optimisation family: elastic-net SGD on variants of scikit-learn's datasets.

The validation losses of 12 related tasks are evaluated once on a dense
quasi-random design of the 4-D search space and shipped as
``data/tabular_hpo_sgd.npz``; a run of an optimiser then looks them up (nearest
design point or inverse-distance interpolation), so a benchmark costs seconds,
in the spirit of HPO-B's tabular and surrogate benchmarks.

``python -m sklearn_icml.datasets._tabular_hpo`` recomputes the table (a few
minutes on one core).
"""

import os
import warnings
from numbers import Integral

import numpy as np
from sklearn.utils import Bunch, check_random_state, resample

from ..utils._sklearn_private import Interval, StrOptions, validate_params

__all__ = ["make_tabular_hpo_tasks"]

_TABLE = os.path.join(os.path.dirname(__file__), "data", "tabular_hpo_sgd.npz")
#: The search space: (name, scale, low, high); the unit cube maps linearly (or log10-linearly) onto it.
SPACE = (("alpha", "log10", -6.0, 0.0), ("l1_ratio", "linear", 0.0, 1.0), ("eta0", "log10", -4.0, 0.0),
         ("power_t", "linear", 0.05, 0.95))
_BASES = ("breast_cancer", "digits", "iris", "wine")
_VARIANTS = 3
_N_POINTS = 512
_MAX_LOSS = -np.log(1e-3)  # probabilities are clipped to [1e-3, 1 - 1e-3]


def decode(x):
    """Hyper-parameters of points ``x`` of the unit cube, shape (n, 4) -> list of dicts."""
    x = np.atleast_2d(np.asarray(x, dtype=np.float64))
    out = []
    for row in x:
        params = {}
        for value, (name, scale, lo, hi) in zip(row, SPACE):
            v = lo + float(np.clip(value, 0.0, 1.0)) * (hi - lo)
            params[name] = 10.0 ** v if scale == "log10" else v
        out.append(params)
    return out


def _binary_base(name):
    from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine

    X, y = {"breast_cancer": load_breast_cancer, "digits": load_digits, "iris": load_iris,
            "wine": load_wine}[name](return_X_y=True)
    # binary problems: malignant/benign, digits 0-4 against 5-9, versicolor against the rest, cultivar 1 against
    y = {"breast_cancer": y, "digits": (y >= 5).astype(int), "iris": (y == 1).astype(int),
         "wine": (y == 0).astype(int)}[name]
    return X.astype(np.float64), y


def _task_data(random_state=0):
    """The 12 tasks: per base dataset 3 variants (rows, a feature subset, label noise), split 50/50."""
    from sklearn.model_selection import train_test_split

    rng = check_random_state(random_state)
    tasks, names = [], []
    for name in _BASES:
        X, y = _binary_base(name)
        for _ in range(_VARIANTS):
            n = min(300, y.size)
            rows = np.sort(resample(np.arange(y.size), n_samples=n, replace=False, stratify=y, random_state=rng))
            n_keep = rng.randint((X.shape[1] + 1) // 2, X.shape[1] + 1)
            cols = np.sort(rng.choice(X.shape[1], size=n_keep, replace=False))
            Xt, yt = X[np.ix_(rows, cols)], y[rows].copy()
            flip = rng.uniform(size=yt.size) < rng.uniform(0.0, 0.15)
            yt[flip] = 1 - yt[flip]
            split = train_test_split(Xt, yt, test_size=0.5, stratify=yt, random_state=rng.randint(2 ** 31))
            tasks.append(split)
            names.append(name)
    return tasks, names


def _validation_loss(split, params, seed=0):
    """Validation log loss of ``StandardScaler + SGDClassifier(elastic net, log loss)`` with ``params``."""
    from sklearn.linear_model import SGDClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X_tr, X_va, y_tr, y_va = split
    model = make_pipeline(StandardScaler(), SGDClassifier(
        loss="log_loss", penalty="elasticnet", learning_rate="invscaling", max_iter=30, tol=None,
        random_state=seed, **params))
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            p = model.fit(X_tr, y_tr).predict_proba(X_va)[:, 1]
    except (ValueError, FloatingPointError):  # a diverged run
        return _MAX_LOSS
    if not np.all(np.isfinite(p)):
        return _MAX_LOSS
    p = np.clip(p, 1e-3, 1 - 1e-3)
    return float(-np.mean(y_va * np.log(p) + (1 - y_va) * np.log(1 - p)))


def _design(n_points=_N_POINTS, seed=0):
    from scipy.stats import qmc

    return qmc.Sobol(d=len(SPACE), scramble=True, seed=seed).random(n_points)


def _compute_table(n_points=_N_POINTS, random_state=0, verbose=0):
    """Evaluate every task at every design point: (design (n_points, 4), losses (n_tasks, n_points), names)."""
    design = _design(n_points, random_state)
    tasks, names = _task_data(random_state)
    params = decode(design)
    losses = np.empty((len(tasks), n_points))
    for t, split in enumerate(tasks):
        losses[t] = [_validation_loss(split, p) for p in params]
        if verbose:
            print(f"task {t} ({names[t]}) done", flush=True)
    return design, losses, names


def _load_table():
    with np.load(_TABLE, allow_pickle=False) as data:
        return data["design"], data["losses"], [str(n) for n in data["names"]]


class TabularObjective:
    """One tabulated task: the validation loss at any point of the unit cube, looked up in the design.

    ``lookup="nearest"`` returns the loss of the nearest design point;
    ``"idw"`` the inverse-squared-distance average over the ``k=8`` nearest
    ones (exact at the design points). Either way no point scores below the
    table's minimum, which is ``minimum`` (at ``argmin``). Callable on one
    point of shape ``(4,)`` (returns a float) or a batch ``(n, 4)``.
    """

    def __init__(self, design, losses, lookup="nearest", k=8):
        self.design, self.losses, self.lookup, self.k = design, losses, lookup, int(k)
        i = int(np.argmin(losses))
        self.minimum, self.argmin = float(losses[i]), design[i].copy()

    def _values(self, X):
        d2 = ((X[:, None, :] - self.design[None, :, :]) ** 2).sum(axis=2)
        if self.lookup == "nearest":
            return self.losses[np.argmin(d2, axis=1)]
        idx = np.argsort(d2, axis=1)[:, :self.k]
        near = np.take_along_axis(d2, idx, axis=1)
        w = 1.0 / np.maximum(near, 1e-24)
        values = (w * self.losses[idx]).sum(axis=1) / w.sum(axis=1)
        exact = near[:, 0] < 1e-24
        values[exact] = self.losses[idx[exact, 0]]
        return values

    def __call__(self, x):
        x = np.asarray(x, dtype=np.float64)
        if x.ndim <= 1:
            return float(self._values(x.reshape(1, -1))[0])
        return self._values(x)

    def __repr__(self):
        return f"TabularObjective(n_points={len(self.losses)}, lookup={self.lookup!r}, minimum={self.minimum:.4g})"


@validate_params(
    {
        "n_samples": [Interval(Integral, 0, None, closed="left"), None],
        "lookup": [StrOptions({"nearest", "idw"})],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_tabular_hpo_tasks(n_samples=64, *, lookup="nearest", random_state=None):
    """A tabulated HPO family: elastic-net SGD with 4 continuous hyper-parameters on 12 related datasets.

    Each task is a binary problem made from a dataset that ships with
    scikit-learn (breast cancer, digits 0-4 against 5-9, iris versicolor
    against the rest, wine cultivar 1 against the rest; 3 variants each: a
    stratified subsample of at most 300 rows, a random subset of at least
    half of the features, a random share of up to 15 % of flipped labels),
    split 50/50 into training and validation halves. The model is
    ``make_pipeline(StandardScaler(), SGDClassifier(loss="log_loss",
    penalty="elasticnet", learning_rate="invscaling", max_iter=30))`` and the
    objective the validation log loss (probabilities clipped to
    ``[1e-3, 1 - 1e-3]``, so a diverged run scores ``-log(1e-3)``). The
    search space is the unit cube ``[0, 1]^4`` mapped onto ``alpha`` in
    ``[1e-6, 1]`` (log), ``l1_ratio`` in ``[0, 1]``, ``eta0`` in
    ``[1e-4, 1]`` (log) and ``power_t`` in ``[0.05, 0.95]``.

    The losses were evaluated once on a scrambled Sobol design of 512
    points and ship with the package; ``functions[t](x)`` looks them up, so
    an optimisation run costs what the optimiser costs. Tasks from the same
    base dataset are related; the label noise and feature subsets shift
    where the good settings are.

    Parameters
    ----------
    n_samples : int or None, default=64
        Design points observed per task (the meta-data ``tasks``), drawn
        without replacement; None gives all 512.
    lookup : {"nearest", "idw"}, default="nearest"
        How ``functions`` serve a point: the loss of the nearest design
        point, or the inverse-squared-distance average of the 8 nearest.
    random_state : int, RandomState instance or None, default=None
        Seeds which design points are observed.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        ``tasks``: list of 12 ``(X_t, y_t)``, ``X_t`` of shape
        ``(n_samples, 4)`` in the unit cube, ``y_t`` the losses;
        ``functions``: the 12 callables; ``minima`` and ``argmins``: the
        smallest loss of each table and where it is; ``names``: the base
        dataset of each task; ``param_names``; ``decode``: maps points of
        the unit cube to hyper-parameter dicts; ``design`` (512, 4) and
        ``losses`` (12, 512): the whole table; ``bounds``: ``[(0.0, 1.0)] * 4``.

    See Also
    --------
    make_hpo_tasks : A grid-search family on the same datasets (an RBF SVM).
    make_forrester_tasks : A 1-D synthetic family.

    Notes
    -----
    The table is reproducible: ``python -m sklearn_icml.datasets._tabular_hpo``
    recomputes it (the tests recompute some entries). Losses of diverged runs
    and of the clipping make the surface flat in the region of large learning
    rates; the regret of a run is its best loss minus the table's minimum.

    Examples
    --------
    >>> from sklearn_icml.datasets import make_tabular_hpo_tasks
    >>> data = make_tabular_hpo_tasks(n_samples=16, random_state=0)
    >>> len(data.tasks), data.tasks[0][0].shape, data.param_names
    (12, (16, 4), ['alpha', 'l1_ratio', 'eta0', 'power_t'])
    >>> bool(data.functions[0](data.argmins[0]) == data.minima[0])
    True
    """
    design, losses, names = _load_table()
    rng = check_random_state(random_state)
    n_points = design.shape[0]
    tasks = []
    for t in range(losses.shape[0]):
        if n_samples is None:
            idx = np.arange(n_points)
        else:
            idx = np.sort(rng.choice(n_points, size=min(n_samples, n_points), replace=False))
        tasks.append((design[idx].copy(), losses[t, idx].copy()))
    functions = [TabularObjective(design, losses[t], lookup=lookup) for t in range(losses.shape[0])]
    return Bunch(tasks=tasks, functions=functions, minima=np.array([f.minimum for f in functions]),
                 argmins=np.array([f.argmin for f in functions]), names=names,
                 param_names=[s[0] for s in SPACE], decode=decode, design=design, losses=losses,
                 bounds=[(0.0, 1.0)] * len(SPACE))


if __name__ == "__main__":  # pragma: no cover - regenerates the shipped table
    design, losses, names = _compute_table(verbose=1)
    np.savez_compressed(_TABLE, design=design, losses=losses, names=np.array(names))
    print(f"wrote {_TABLE}: {losses.shape[0]} tasks x {losses.shape[1]} points")
