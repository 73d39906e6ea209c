"""Task families of the ``optimize`` family: Forrester functions (plain and shifted) and an HPO family."""

from numbers import Integral, Real

import numpy as np
from scipy.optimize import minimize_scalar
from sklearn.utils import Bunch, check_random_state, resample

from ..utils._sklearn_private import Interval, StrOptions, validate_params

__all__ = ["make_forrester_tasks", "make_hpo_tasks"]


class ForresterFunction:
    """One Forrester task ``a (6u - 2)^2 sin(12u - 4) + b (u - 0.5) - c`` with ``u = (x + s) / (1 + 2 s_max)``.

    Callable on one point ``x`` of shape ``(1,)`` (returns a float) or on a
    batch of shape ``(n, 1)`` (returns an array). ``minimum`` and ``argmin``
    are the minimum over ``[0, 1]``, found on a fine grid and refined.
    """

    def __init__(self, a, b, c, s=0.0, scale=1.0):
        self.a, self.b, self.c, self.s, self.scale = float(a), float(b), float(c), float(s), float(scale)
        grid = np.linspace(0.0, 1.0, 20001)
        values = self._f(grid)
        i = int(np.argmin(values))
        lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
        res = minimize_scalar(self._f, bounds=(lo, hi), method="bounded", options={"xatol": 1e-12})
        x_best, f_best = (res.x, float(res.fun)) if res.fun < values[i] else (grid[i], float(values[i]))
        self.argmin = float(x_best)
        self.minimum = f_best

    def _f(self, x):
        u = (np.asarray(x, dtype=np.float64) + self.s) / self.scale
        return self.a * (6 * u - 2) ** 2 * np.sin(12 * u - 4) + self.b * (u - 0.5) - self.c

    def __call__(self, x):
        x = np.asarray(x, dtype=np.float64)
        if x.ndim <= 1:
            return float(self._f(x.reshape(-1)[0]))
        return self._f(x[:, 0])

    def __repr__(self):
        return f"ForresterFunction(a={self.a:.3g}, b={self.b:.3g}, c={self.c:.3g}, s={self.s:.3g})"


@validate_params(
    {
        "n_tasks": [Interval(Integral, 1, None, closed="left")],
        "n_samples": [Interval(Integral, 0, None, closed="left")],
        "family": [StrOptions({"forrester", "shifted"})],
        "noise": [Interval(Real, 0, None, closed="left")],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_forrester_tasks(n_tasks=256, n_samples=32, *, family="forrester", noise=0.0, random_state=None):
    """A family of 1-D Forrester functions to minimise on ``[0, 1]``, with random observations of each.

    Task ``t`` is ``f_t(x) = a (6u - 2)^2 sin(12u - 4) + b (u - 0.5) - c``
    with ``a ~ U[0.2, 3]``, ``b ~ U[-5, 15]``, ``c ~ U[-5, 5]`` (the MALIBO
    demonstration family). For ``family="forrester"`` ``u = x``: the minimum
    sits near ``x = 0.76`` for most tasks, so re-evaluating earlier tasks'
    optima is already a strong strategy. For ``family="shifted"``
    ``u = (x + s) / 1.5`` with ``s ~ U[0, 0.5]``: the optimum moves with the
    task and copying earlier optima stops working.

    Parameters
    ----------
    n_tasks : int, default=256
        Number of tasks.
    n_samples : int, default=32
        Uniform random observations per task (the meta-data).
    family : {"forrester", "shifted"}, default="forrester"
        Which family.
    noise : float, default=0.0
        Standard deviation of Gaussian noise added to the observed values
        (the functions themselves stay noise-free).
    random_state : int, RandomState instance or None, default=None
        Seeds the task parameters and the observations.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        ``tasks``: list of ``(X_t, y_t)`` with ``X_t`` of shape
        ``(n_samples, 1)``; ``functions``: the callables ``f_t``;
        ``minima`` and ``argmins``: arrays of shape ``(n_tasks,)`` (the true
        minimum of each task on ``[0, 1]`` and where it is); ``params``:
        array of shape ``(n_tasks, 4)`` holding ``a, b, c, s``;
        ``bounds``: ``[(0.0, 1.0)]``.

    See Also
    --------
    make_hpo_tasks : A hyper-parameter optimisation family.

    Examples
    --------
    >>> from sklearn_icml.datasets import make_forrester_tasks
    >>> data = make_forrester_tasks(n_tasks=3, n_samples=5, random_state=0)
    >>> len(data.tasks), data.tasks[0][0].shape
    (3, (5, 1))
    >>> bool(data.functions[0](data.argmins[0]) == data.minima[0])
    True
    """
    rng = check_random_state(random_state)
    a = rng.uniform(0.2, 3.0, n_tasks)
    b = rng.uniform(-5.0, 15.0, n_tasks)
    c = rng.uniform(-5.0, 5.0, n_tasks)
    if family == "shifted":
        s, scale = rng.uniform(0.0, 0.5, n_tasks), 1.5
    else:
        s, scale = np.zeros(n_tasks), 1.0
    functions = [ForresterFunction(*p, scale=scale) for p in zip(a, b, c, s)]
    tasks = []
    for f in functions:
        X = rng.uniform(size=(n_samples, 1))
        y = f(X) if n_samples else np.empty(0)
        if noise:
            y = y + noise * rng.standard_normal(n_samples)
        tasks.append((X, y))
    return Bunch(tasks=tasks, functions=functions, minima=np.array([f.minimum for f in functions]),
                 argmins=np.array([f.argmin for f in functions]), params=np.column_stack([a, b, c, s]),
                 bounds=[(0.0, 1.0)])


def _base_datasets():
    from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine

    return {
        "breast_cancer": load_breast_cancer(return_X_y=True),
        "digits": load_digits(return_X_y=True),
        "iris": load_iris(return_X_y=True),
        "wine": load_wine(return_X_y=True),
    }


@validate_params(
    {
        "n_tasks": [Interval(Integral, 1, None, closed="left")],
        "n_samples": [Interval(Integral, 20, None, closed="left")],
        "grid_size": [Interval(Integral, 2, None, closed="left")],
        "label_noise": [Interval(Real, 0, 1, closed="left")],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_hpo_tasks(n_tasks=8, *, n_samples=150, grid_size=8, label_noise=0.05, random_state=None):
    """A hyper-parameter optimisation family: an RBF support-vector machine on variants of scikit-learn's datasets.

    Each task is a classification dataset made from one of the datasets that
    ship with scikit-learn (breast cancer, digits, iris, wine, in turn): a
    stratified random subsample of ``n_samples`` rows, a random subset of at
    least half of the features, and a share ``label_noise`` of labels
    replaced at random. The model is ``make_pipeline(StandardScaler(),
    SVC())`` and the search space a ``grid_size x grid_size`` log-spaced grid
    over ``C`` in ``[1e-2, 1e3]`` and ``gamma`` in ``[1e-4, 1e1]``. Tasks from
    the same base dataset share where the good settings are, so earlier
    searches tell something about a new one.

    Parameters
    ----------
    n_tasks : int, default=8
        Number of tasks (datasets).
    n_samples : int, default=150
        Rows per task (capped by the base dataset's size).
    grid_size : int, default=8
        Values per hyper-parameter in ``param_grid``.
    label_noise : float, default=0.05
        Share of labels replaced by a random class.
    random_state : int, RandomState instance or None, default=None
        Seeds the subsamples, feature subsets and label noise.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        ``datasets``: list of ``(X, y)``; ``names``: the base dataset of each
        task; ``estimator``: the unfitted pipeline; ``param_grid``: dict of
        the two grids (keys ``"svc__C"`` and ``"svc__gamma"``).

    See Also
    --------
    make_forrester_tasks : A 1-D synthetic family.

    Examples
    --------
    >>> from sklearn_icml.datasets import make_hpo_tasks
    >>> data = make_hpo_tasks(n_tasks=2, n_samples=60, grid_size=3, random_state=0)
    >>> data.names, data.datasets[0][0].shape[0]
    (['breast_cancer', 'digits'], 60)
    >>> sorted(data.param_grid)
    ['svc__C', 'svc__gamma']
    """
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    rng = check_random_state(random_state)
    bases = _base_datasets()
    names = sorted(bases)
    datasets, task_names = [], []
    for t in range(n_tasks):
        name = names[t % len(names)]
        X, y = bases[name]
        n = min(n_samples, X.shape[0])
        rows = np.sort(resample(np.arange(y.size), n_samples=n, replace=False, stratify=y, random_state=rng))
        n_keep = rng.randint((X.shape[1] + 1) // 2, X.shape[1] + 1)
        cols = np.sort(rng.choice(X.shape[1], size=n_keep, replace=False))
        Xt, yt = X[np.ix_(rows, cols)].astype(np.float64), y[rows].copy()
        flip = rng.uniform(size=yt.size) < label_noise
        yt[flip] = rng.choice(np.unique(y), size=int(flip.sum()))
        datasets.append((Xt, yt))
        task_names.append(name)
    grid = {"svc__C": list(np.logspace(-2, 3, grid_size)), "svc__gamma": list(np.logspace(-4, 1, grid_size))}
    return Bunch(datasets=datasets, names=task_names, estimator=make_pipeline(StandardScaler(), SVC()),
                 param_grid=grid)
