"""ExpandAndCluster: a network's widths and weights recovered from its input-output map (S18)."""

import time
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, RegressorMixin, TransformerMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted, validate_data

from ..utils._sklearn_private import Interval, StrOptions, _fit_context
from ..utils._torch import as_numpy, is_torch_tensor
from ..utils._torch_base import TorchEstimatorMixin
from ..utils._training import ProgressReporter
from ..utils._validation import check_float32_range
from ._clustering import cluster_units, collapse_clusters
from ._symmetry import ACTIVATIONS, activate, canonical_units

__all__ = ["ExpandAndCluster"]

#: L-BFGS iterations of one polish.
POLISH_MAX_ITER = 500
#: A unit "carries output" when its outgoing weight norm times its activation's spread over the probes is at
#: least this fraction of the largest of its layer (units below it are near-dead spares of a wide student).
OUTPUT_SHARE = 0.01
#: scikit-learn MLP names of the activations MLPRegressor supports.
_SKLEARN_ACTIVATIONS = {"relu": "relu", "tanh": "tanh", "sigmoid": "logistic", "identity": "identity"}


def _forward(coefs, intercepts, activation, X, n_layers=None):
    """Numpy forward pass in MLPRegressor's layout; hidden activations of the first ``n_layers`` if given."""
    h = X
    last = len(coefs) - 1
    for layer in range(last + 1 if n_layers is None else n_layers):
        h = h @ coefs[layer] + intercepts[layer]
        if layer < last:
            h = activate(activation, h)
    return h


def _mse(coefs, intercepts, activation, X, Y):
    return float(((_forward(coefs, intercepts, activation, X) - Y) ** 2).mean())


def _output_lstsq(coefs, intercepts, activation, X, Y):
    """Refit the output layer by least squares on the last hidden layer's activations."""
    H = _forward(coefs, intercepts, activation, X, n_layers=len(coefs) - 1)
    sol = np.linalg.lstsq(np.column_stack([H, np.ones(len(H))]), Y, rcond=None)[0]
    return [*coefs[:-1], sol[:-1]], [*intercepts[:-1], sol[-1]]


def _to_batched(coefs, intercepts):
    return [c.T[None] for c in coefs], [b[None] for b in intercepts]


def _from_batched(module, student=0):
    weights = [w.detach().double().numpy()[student].T.copy() for w in module.weights]
    biases = [b.detach().double().numpy()[student].copy() for b in module.biases]
    return weights, biases


def _units_outside_clusters(weights, biases, losses, layer, labels, activation, X):
    """(units of the best student of ``layer`` that carry output and are in no kept cluster, the layer's width).

    A unit carries output when the norm of its outgoing weights times the standard deviation of its activation
    over the probes is at least ``OUTPUT_SHARE`` times the largest of the layer (the rows of ``labels`` are the
    students' units, student by student).
    """
    best = int(np.argmin(losses))
    width = biases[layer].shape[1]
    coefs = [w[best].T for w in weights]
    intercepts = [b[best] for b in biases]
    H = _forward(coefs, intercepts, activation, X, n_layers=layer + 1)
    out = np.linalg.norm(weights[layer + 1][best], axis=0) * H.std(axis=0)
    carries = out >= OUTPUT_SHARE * out.max() if out.max() > 0 else np.zeros(width, dtype=bool)
    outside = labels[best * width:(best + 1) * width] < 0
    return int(np.sum(carries & outside)), width


class ExpandAndCluster(ClassNamePrefixFeaturesOutMixin, TransformerMixin, RegressorMixin, TorchEstimatorMixin,
                       BaseEstimator):
    """Recover a network's hidden widths and weights from input-output queries (Expand-and-Cluster).

    Read more in the :ref:`User Guide <neural_network>`.

    Given probe inputs ``X`` and a teacher network's outputs ``y`` (the number
    of hidden layers and the activation are known, the widths are not), the
    method trains ``n_students`` over-parameterised students on ``(X, y)``.
    Hidden units that most students share, once the activation's symmetry is
    removed, are the teacher's: layer by layer, bottom-up, the students' units
    are clustered, clusters present in most students whose members are
    aligned are kept, each is collapsed to one unit, the layer is installed in
    every student and the layers above are fine-tuned. The output layer is
    then fitted by least squares and the recovered network fine-tuned and
    polished. With ``prune=True`` redundant units are finally removed one at a
    time while the training loss stays at or below the best student's.

    Parameters
    ----------
    n_hidden_layers : int, default=1
        Number of hidden layers of the teacher (known).
    activation : {"relu", "leaky_relu", "tanh", "sigmoid", "softplus", "gelu", "silu", "identity"}, \
            default="tanh"
        The teacher's hidden activation (known). ``leaky_relu`` has slope 0.01.
    n_students : int, default=10
        Number of students ``N``.
    student_width : int, list of int or None, default=None
        Width of the students' hidden layers (the over-parameterised guess of
        the teacher's widths): one int for every layer or one per layer.
        None means ``4 * n_features_in_``.
    gamma : float in (0, 1], default=0.8
        A cluster is a teacher unit candidate when it is present in at least
        ``gamma * n_students`` students (``count="students"``) or holds at
        least ``gamma * n_students`` units (``count="units"``).
    beta : float in [0, pi], default=pi/6
        Clusters whose median pairwise angle exceeds ``beta`` are dropped as
        unaligned.
    count : {"students", "units"}, default="students"
        How a cluster's size is counted: distinct students present in it, or
        units (duplicates included, the official code's rule; use it with
        ``gamma=0.5``).
    linkage : {"average", "complete", "single", "weighted"}, default="average"
        Linkage of the hierarchical clustering (scipy).
    distance : {"cosine", "l2"}, default="cosine"
        Distance between canonical unit vectors ``[w, b]``: ``"cosine"``
        compares their directions only, ``"l2"`` (the official code's) also
        their norms.
    prune : bool, default=True
        After the polish, remove the unit whose removal costs least, one at a
        time, while the re-fitted training loss stays at or below the best
        student's (re-fits use float64 L-BFGS even when ``polish=None``).
    fallback_ratio : float >= 1, default=2.0
        The rebuilt network is kept when its training MSE is at most
        ``fallback_ratio`` times the best student's. Otherwise a unit was lost
        on the way: the best student is returned as it was trained (full
        width) with a :class:`~sklearn.exceptions.ConvergenceWarning` that
        names, per hidden layer, how many of the best student's units are in
        no kept cluster, and ``recovered_`` is False. Above 1, the margin
        lets a right-sized network fit noisy outputs a little worse than an
        over-parameterised student does; ``np.inf`` turns the check off.
    student_max_iter : int or None, default=None
        Adam steps of the students (cosine schedule). None means
        ``3000 * n_hidden_layers``: the students of a deeper teacher need
        longer to agree on its units.
    student_lr : float, default=1e-2
        Students' initial learning rate.
    student_polish_max_iter : int or None, default=None
        With ``polish="lbfgs"``, the students are then polished together in
        float64 by L-BFGS for at most this many iterations, to the near-zero
        training loss at which the paper clusters their units (0: no student
        polish). None means ``1000 * (2 * n_hidden_layers - 1)`` (1000 for one
        hidden layer, 3000 for two).
    finetune_max_iter : int, default=1500
        Adam steps of each fine-tune (the layers above a recovered layer, and
        the recovered network).
    finetune_lr : float, default=1e-3
        Fine-tunes' initial learning rate (cosine schedule).
    polish : {"lbfgs"} or None, default="lbfgs"
        A full-batch float64 L-BFGS pass over the students (at most
        ``student_polish_max_iter`` iterations) and over the recovered network
        (at most 500 iterations), or none.
    batch_size : int or None, default=None
        Rows per mini-batch; None means the full batch (then one step is one
        epoch). With mini-batches the step counts become
        ``ceil(steps / batches per epoch)`` epochs.
    device : {"cpu", "auto", "cuda"}, "cuda:<index>" or torch.device, default="cpu"
        Where the students, fine-tunes and polish run; the clustering is
        scipy on the CPU.
    random_state : int, RandomState instance or None, default=None
        Seeds the students' initial weights and the batch order.
    verbose : int, default=0
        Print per-epoch losses and one line per recovered layer when positive.

    Attributes
    ----------
    coefs_ : list of ndarray
        Recovered weight matrices, ``coefs_[i]`` of shape (fan_in, fan_out),
        output layer last (:class:`~sklearn.neural_network.MLPRegressor`'s layout).
    intercepts_ : list of ndarray
        Recovered biases, one per layer.
    hidden_layer_sizes_ : tuple of int
        Recovered hidden widths.
    n_outputs_ : int
        Number of outputs.
    loss_curve_ : list of float
        Training MSE of each step of the final fine-tune, then that of the
        recovered network after the polish and pruning.
    loss_ : float
        Final training MSE.
    student_losses_ : ndarray of shape (n_students,)
        Each student's training MSE after its training.
    student_timings_ : dict
        The cost of training the students (all ``n_students`` together):
        ``"adam_seconds"`` and ``"adam_cpu_seconds"`` (wall-clock and CPU
        seconds of the Adam steps), ``"polish_seconds"`` and
        ``"polish_cpu_seconds"`` (of the float64 L-BFGS polish; 0 without
        one), ``"polish_n_iter"`` and ``"polish_n_evaluations"`` (L-BFGS's
        iterations and loss evaluations; 0 without a polish or when it
        failed and the students kept their Adam weights).
    cluster_sizes_ : list of ndarray
        Per hidden layer, the count (students or units) of each kept cluster.
    cluster_median_angle_ : list of ndarray
        Per hidden layer, the median pairwise angle (radians) of each kept
        cluster.
    n_dropped_clusters_ : ndarray of shape (n_hidden_layers,)
        Per hidden layer, the clusters over the count threshold dropped as
        unaligned.
    n_pruned_ : int
        Units removed by the pruning.
    recovered_ : bool
        Whether the returned network is the rebuilt one; False when the best
        student was returned instead (no cluster in a layer, or the rebuilt
        network fitted worse than ``fallback_ratio`` times the best student).
    rebuilt_loss_ : float
        Training MSE of the rebuilt network, pruning included (NaN when a
        layer had no cluster and nothing was rebuilt).
    linkage_matrices_ : list of ndarray
        Per clustered layer, scipy's linkage matrix.
    cut_heights_ : list of float
        Per clustered layer, the height of the tree cut.
    student_units_ : list of ndarray
        Per clustered layer, the students' canonical unit vectors ``[w, b]``,
        student by student (the rows the clustering saw).
    unit_labels_ : list of ndarray
        Per clustered layer, the kept cluster of each row of
        ``student_units_`` (-1: none).
    device_ : str
        Where the training ran.
    n_features_in_ : int
        Number of features seen in fit.
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Feature names, when X had string column names.

    See Also
    --------
    sklearn.neural_network.MLPRegressor : The network trained directly, given its width.
    unit_alignment : The paper's evaluation of a recovered network against the teacher.

    Notes
    -----
    Choices beyond the official code (flavio-martinelli/expand-and-cluster),
    each tested:

    * ``count="students"`` with ``gamma=0.8`` is the default: with the official
      rule (units, ``gamma=0.5``) a teacher unit's cluster holds about
      ``rho * N`` members and splits into sub-clusters that each pass the
      threshold, which over-counts the width.
    * ``distance="cosine"`` is the default (the official code uses the
      Euclidean distance): near-zero-loss students often hold a teacher unit
      as two units pointing the same way at different scales (together they
      imitate the teacher's unit); the Euclidean distance, which also
      compares norms, can then split that teacher unit's cluster in two and
      leave another teacher unit in no kept cluster, as seen on deep
      teachers. The collapse and the fine-tunes that follow absorb the
      scale.
    * The pruning step is ours: on several teachers clustering alone left a
      spurious unit or two; the pruning stops as soon as removing a unit would
      fit worse than the best student.
    * A cluster collapses to the best-loss student's unit in that student's
      own orientation (not the canonical one), so the recovered network needs
      no affine term for the sigmoid and even-linear symmetries; the output
      layer is then refitted by least squares on ``[h, 1]`` (the official code
      also fits a linear term for softplus-type activations, which an MLP
      cannot hold).
    * Students are Kaiming-normal initialised and trained by Adam with a cosine
      schedule, full batch, at ``student_lr``, then (``polish="lbfgs"``)
      polished together by float64 L-BFGS. The paper clusters students
      trained to near-zero loss (the official code: batch 512, lr 1e-3 with a
      plateau schedule, 25000 epochs, suited to MNIST-sized probes); 3000
      Adam steps leave an MSE of about 1e-5 to 1e-4 of a unit-scale teacher,
      where a teacher unit with a small outgoing weight is still learned by
      only some students and is lost to the clustering. The polish takes the
      students to 1e-7 or below at the cost of about 1000 more passes.
    * The students' budgets grow with the depth by default (3000 Adam steps
      and 1000 polish iterations for one hidden layer; 6000 and 3000 for
      two): a weakly weighted first-layer unit of a two-layer teacher is
      found by too few students at the one-layer budget.

    There is no early stopping and no ``validation_scores_``: the students
    and the fine-tunes run their whole step budgets (``student_max_iter``,
    ``finetune_max_iter``) on all probes, because the clustering needs
    students that interpolate the teacher's outputs, and holding probes out
    or stopping on a plateau leaves them short of it. The budgets are the
    knobs; ``loss_curve_`` and ``student_losses_`` show where they ended.

    The returned network never fits the probes worse than ``fallback_ratio``
    times the best student without a warning. When no cluster of a layer
    survives, or when the rebuilt network fits worse than that (a teacher
    unit was in no kept cluster, typically of a deep layer whose students
    disagree), a :class:`~sklearn.exceptions.ConvergenceWarning` says which
    layers lost units and how many, and the best student is returned exactly
    as it was trained (full width, ``recovered_`` False).

    References
    ----------
    .. [1] Martinelli, F., Şimşek, B., Gerstner, W. and Brea, J.
       "Expand-and-Cluster: Parameter Recovery of Neural Networks",
       Proceedings of the 41st International Conference on Machine Learning
       (ICML), PMLR 235, 2024.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.neural_network import ExpandAndCluster
    >>> rng = np.random.RandomState(0)
    >>> X = rng.normal(size=(300, 2))
    >>> W, a = np.array([[1.5, -1.0], [0.5, 2.0]]), np.array([1.0, -1.0])
    >>> y = np.tanh(X @ W + [0.3, -0.2]) @ a
    >>> ec = ExpandAndCluster(n_students=4, student_width=4, student_max_iter=600, student_lr=3e-2,
    ...                       student_polish_max_iter=100, finetune_max_iter=50, random_state=0).fit(X, y)
    >>> ec.hidden_layer_sizes_
    (2,)
    >>> bool(ec.score(X, y) > 0.999)
    True
    """

    _parameter_constraints = {
        "n_hidden_layers": [Interval(Integral, 1, None, closed="left")],
        "activation": [StrOptions(set(ACTIVATIONS))],
        "n_students": [Interval(Integral, 1, None, closed="left")],
        "student_width": [Interval(Integral, 1, None, closed="left"), list, tuple, None],
        "gamma": [Interval(Real, 0, 1, closed="right")],
        "beta": [Interval(Real, 0, np.pi, closed="both")],
        "count": [StrOptions({"students", "units"})],
        "linkage": [StrOptions({"average", "complete", "single", "weighted"})],
        "distance": [StrOptions({"l2", "cosine"})],
        "prune": ["boolean"],
        "fallback_ratio": [Interval(Real, 1, None, closed="both")],
        "student_max_iter": [Interval(Integral, 1, None, closed="left"), None],
        # above float32's range the optimiser cannot even store the learning rate
        "student_lr": [Interval(Real, 0, 1e6, closed="right")],
        "student_polish_max_iter": [Interval(Integral, 0, None, closed="left"), None],
        "finetune_max_iter": [Interval(Integral, 1, None, closed="left")],
        "finetune_lr": [Interval(Real, 0, 1e6, closed="right")],
        "polish": [StrOptions({"lbfgs"}), None],
        "batch_size": [Interval(Integral, 1, None, closed="left"), None],
        "random_state": ["random_state"],
    }

    def __init__(self, n_hidden_layers=1, *, activation="tanh", n_students=10, student_width=None, gamma=0.8,
                 beta=np.pi / 6, count="students", linkage="average", distance="cosine", prune=True,
                 fallback_ratio=2.0, student_max_iter=None, student_lr=1e-2, student_polish_max_iter=None,
                 finetune_max_iter=1500, finetune_lr=1e-3, polish="lbfgs", batch_size=None, device="cpu",
                 random_state=None, verbose=0):
        self.n_hidden_layers = n_hidden_layers
        self.activation = activation
        self.n_students = n_students
        self.student_width = student_width
        self.gamma = gamma
        self.beta = beta
        self.count = count
        self.linkage = linkage
        self.distance = distance
        self.prune = prune
        self.fallback_ratio = fallback_ratio
        self.student_max_iter = student_max_iter
        self.student_lr = student_lr
        self.student_polish_max_iter = student_polish_max_iter
        self.finetune_max_iter = finetune_max_iter
        self.finetune_lr = finetune_lr
        self.polish = polish
        self.batch_size = batch_size
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    def __sklearn_tags__(self):
        from sklearn.utils import TransformerTags

        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        tags.transformer_tags = TransformerTags(preserves_dtype=["float64"])  # transform: hidden activations
        return tags

    # -- construction from a teacher --------------------------------------------------------------

    @classmethod
    def from_teacher(cls, teacher, X, **params):
        """Query ``teacher`` on the probes ``X`` and fit on its outputs.

        Parameters
        ----------
        teacher : callable, fitted MLPRegressor or torch.nn.Module
            The network to identify: a function of an ``(n, d)`` array, a
            fitted :class:`~sklearn.neural_network.MLPRegressor` (its
            ``predict``; its activation and layer count are used unless given
            in ``params``) or a torch module (called on a tensor of its dtype).
        X : array-like of shape (n_samples, n_features)
            Probe inputs.
        **params : dict
            Constructor parameters of :class:`ExpandAndCluster`.

        Returns
        -------
        estimator : ExpandAndCluster
            Fitted on ``(X, teacher(X))``.
        """
        from sklearn.neural_network import MLPRegressor

        X = np.asarray(as_numpy(X), dtype=np.float64)
        if isinstance(teacher, MLPRegressor):
            check_is_fitted(teacher)
            names = {v: k for k, v in _SKLEARN_ACTIVATIONS.items()}
            params.setdefault("activation", names[teacher.activation])
            params.setdefault("n_hidden_layers", len(teacher.coefs_) - 1)
            y = teacher.predict(X)
        elif _is_torch_module(teacher):
            import torch

            dtype = next((p.dtype for p in teacher.parameters()), torch.float32)
            with torch.no_grad():
                out = teacher(torch.as_tensor(X, dtype=dtype))
            y = out.detach().cpu().double().numpy() if is_torch_tensor(out) else np.asarray(out)
        elif callable(teacher):
            y = np.asarray(as_numpy(teacher(X)), dtype=np.float64)
        else:
            raise TypeError(f"{cls.__name__}.from_teacher: teacher must be a callable, a fitted MLPRegressor or a "
                            f"torch module; got {type(teacher).__name__}.")
        if y.ndim == 2 and y.shape[1] == 1:
            y = y[:, 0]
        return cls(**params).fit(X, y)

    # -- fit ----------------------------------------------------------------------------------------

    def _widths(self, n_features):
        width = self.student_width
        if width is None:
            return [4 * n_features] * self.n_hidden_layers
        if isinstance(width, Integral):
            return [int(width)] * self.n_hidden_layers
        widths = list(width)
        if len(widths) != self.n_hidden_layers or not all(
                isinstance(w, Integral) and not isinstance(w, bool) and w >= 1 for w in widths):
            raise ValueError(f"{type(self).__name__}: student_width must be an int >= 1 or one int >= 1 per hidden "
                             f"layer ({self.n_hidden_layers}); got {width!r}.")
        return [int(w) for w in widths]

    def _student_budget(self):
        """(Adam steps, L-BFGS polish iterations) of the students, the depth-aware defaults filled in."""
        steps = 3000 * self.n_hidden_layers if self.student_max_iter is None else self.student_max_iter
        polish = (1000 * (2 * self.n_hidden_layers - 1) if self.student_polish_max_iter is None
                  else self.student_polish_max_iter)
        return int(steps), int(polish)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Train the students, cluster their units layer by layer and build the recovered network.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Probe inputs.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            The teacher's outputs on ``X``.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        from ._students import fit_students, init_students, polish_students, student_losses

        with self._torch_fit_context() as ctx:
            X, y = validate_data(self, as_numpy(X), as_numpy(y), multi_output=True, y_numeric=True,
                                 dtype=np.float64)
            name = type(self).__name__
            widths = self._widths(X.shape[1])
            Y = y.reshape(len(y), -1).astype(np.float64)
            check_float32_range(X, Y, name=name, labels=("X", "y"), reason="the students train in float32")
            self.n_outputs_ = Y.shape[1]
            reporter = ProgressReporter(name, verbose=self.verbose)
            device, generator = ctx.device, ctx.generator
            n_students, act = self.n_students, self.activation
            for attr in ("cluster_sizes_", "cluster_median_angle_", "linkage_matrices_", "cut_heights_",
                         "student_units_", "unit_labels_"):
                setattr(self, attr, [])
            dropped = []
            students = init_students(n_students, X.shape[1], widths, self.n_outputs_, act, generator)
            steps, polish_iter = self._student_budget()
            wall, cpu = time.perf_counter(), time.process_time()
            students = fit_students(students, X, Y, steps=steps, learning_rate=self.student_lr,
                                    batch_size=self.batch_size, device=device, random_state=generator,
                                    verbose=self.verbose, name=name).module
            timings = dict(adam_seconds=time.perf_counter() - wall, adam_cpu_seconds=time.process_time() - cpu,
                           polish_seconds=0.0, polish_cpu_seconds=0.0, polish_n_iter=0, polish_n_evaluations=0)
            reporter.tick(1, stage=f"{n_students} students trained")
            if self.polish == "lbfgs" and polish_iter > 0:
                wall, cpu = time.perf_counter(), time.process_time()
                students, (n_iter, n_evals) = polish_students(students, X, Y, max_iter=polish_iter, device=device,
                                                              random_state=generator, name=name,
                                                              return_counts=True)
                timings.update(polish_seconds=time.perf_counter() - wall,
                               polish_cpu_seconds=time.process_time() - cpu, polish_n_iter=int(n_iter or 0),
                               polish_n_evaluations=int(n_evals or 0))
                reporter.tick(2, stage="students polished")
            self.student_timings_ = timings
            self.student_losses_ = student_losses(students, X, Y)
            reporter.message(f"students' MSE: best {self.student_losses_.min():.3g}, "
                             f"median {np.median(self.student_losses_):.3g}")
            losses = self.student_losses_
            weights = [w.detach().double().numpy().copy() for w in students.weights]
            biases = [b.detach().double().numpy().copy() for b in students.biases]
            trained = ([w.copy() for w in weights], [b.copy() for b in biases])  # the students as fitted
            missed = []  # per clustered layer: (clusters kept, best student's output units in none, its width)
            for layer in range(self.n_hidden_layers):
                clusters, units = self._cluster_layer(weights, biases, layer)
                dropped.append(clusters.n_dropped)
                missed.append((len(clusters.members),
                               *_units_outside_clusters(weights, biases, losses, layer, clusters.labels, act, X)))
                reporter.message(f"layer {layer + 1}: {len(clusters.members)} clusters kept, "
                                 f"{clusters.n_dropped} dropped as unaligned")
                if not clusters.members:
                    self.n_dropped_clusters_ = np.asarray(dropped, dtype=int)
                    self.rebuilt_loss_ = float("nan")
                    return self._fall_back(X, Y, self.student_losses_, *trained, layer)
                V, factor, student_ids, unit_ids = units
                W, b, outgoing, shift = collapse_clusters(clusters, V, factor, student_ids, unit_ids, losses,
                                                          weights[layer + 1], act, self.beta)
                weights[layer] = np.broadcast_to(W, (n_students, *W.shape)).copy()
                biases[layer] = np.broadcast_to(b, (n_students, *b.shape)).copy()
                weights[layer + 1], biases[layer + 1] = outgoing, biases[layer + 1] + shift
                if layer + 1 < self.n_hidden_layers:
                    losses, weights, biases = self._finetune_upper(weights, biases, layer + 1, X, Y, device,
                                                                   generator, name)
                reporter.tick(3 + layer, stage=f"layer {layer + 1} recovered")
            self.n_dropped_clusters_ = np.asarray(dropped, dtype=int)
            coefs = [w[0].T.copy() for w in weights]
            intercepts = [b_[0].copy() for b_ in biases]
            coefs, intercepts = _output_lstsq(coefs, intercepts, act, X, Y)
            self._finish(coefs, intercepts, X, Y, device, generator, name, finetune=True)
            self.rebuilt_loss_ = self.loss_
            if not self.loss_ <= self.fallback_ratio * self.student_losses_.min():
                self._fall_back_worse(X, Y, *trained, missed)
        return self

    def _cluster_layer(self, weights, biases, layer):
        """Canonical vectors of every student's units of ``layer`` and their clusters."""
        n_students, width = biases[layer].shape
        parts = [canonical_units(weights[layer][s], biases[layer][s], weights[layer + 1][s], self.activation)
                 for s in range(n_students)]
        V = np.vstack([p[0] for p in parts])
        factor = np.concatenate([p[3] for p in parts])
        student_ids = np.repeat(np.arange(n_students), width)
        unit_ids = np.tile(np.arange(width), n_students)
        clusters = cluster_units(V, student_ids, n_students, gamma=self.gamma, beta=self.beta, count=self.count,
                                 method=self.linkage, distance=self.distance)
        self.cluster_sizes_.append(clusters.sizes)
        self.cluster_median_angle_.append(clusters.median_angles)
        self.linkage_matrices_.append(clusters.linkage)
        self.cut_heights_.append(clusters.cut_height)
        self.student_units_.append(V)
        self.unit_labels_.append(clusters.labels)
        return clusters, (V, factor, student_ids, unit_ids)

    def _finetune_upper(self, weights, biases, n_frozen, X, Y, device, generator, name):
        """Install the recovered layers in every student and fine-tune the layers above them."""
        from ._students import batched_module, fit_students, student_losses

        students = batched_module(weights, biases, self.activation).freeze(n_frozen)
        students = fit_students(students, X, Y, steps=self.finetune_max_iter, learning_rate=self.finetune_lr,
                                batch_size=self.batch_size, device=device, random_state=generator,
                                verbose=self.verbose, name=name).module
        weights = [w.detach().double().numpy().copy() for w in students.weights]
        biases = [b.detach().double().numpy().copy() for b in students.biases]
        return student_losses(students, X, Y), weights, biases

    def _fall_back(self, X, Y, losses, weights, biases, layer):
        """The best student as trained (before any layer was collapsed), with a warning saying what was lost."""
        lost = (f"; the layer(s) 1 to {layer} recovered before it are not used either" if layer else "")
        warnings.warn(f"{type(self).__name__}: no cluster of layer {layer + 1} is present in at least gamma * "
                      f"n_students = {self.gamma * self.n_students:g} students with a median angle under beta="
                      f"{self.beta:.3g}, so the teacher was not recovered{lost}; the best student is returned as "
                      "it was trained (full width). Train the students longer (student_max_iter), or lower "
                      "gamma.", ConvergenceWarning, stacklevel=3)
        return self._best_student(X, Y, losses, weights, biases)

    def _best_student(self, X, Y, losses, weights, biases):
        best = int(np.argmin(losses))
        coefs = [w[best].T.copy() for w in weights]
        intercepts = [b[best].copy() for b in biases]
        self._set_network(coefs, intercepts, X, Y, [], n_pruned=0)
        self.recovered_ = False
        return self

    def _fall_back_worse(self, X, Y, weights, biases, missed):
        """The best student as trained, with a warning naming the layers whose units were not recovered."""
        best = float(self.student_losses_.min())
        lost = [f"layer {layer + 1} ({kept} unit{'s' * (kept != 1)} kept; {n_out} of the best student's {width} "
                f"units that carry output are in no kept cluster)"
                for layer, (kept, n_out, width) in enumerate(missed) if n_out]
        where = ("not recovered: " + ", ".join(lost) if lost else
                 "not recovered, although every unit of the best students that carries output is in a kept "
                 "cluster (a unit was lost in the collapse or the fine-tunes)")
        warnings.warn(f"{type(self).__name__}: the rebuilt network (hidden widths {self.hidden_layer_sizes_}) fits "
                      f"the probes worse than the best student (training MSE {self.loss_:.3g} against {best:.3g}, "
                      f"more than fallback_ratio={self.fallback_ratio:g} times), so the teacher was {where}. The "
                      f"best student is returned as it was trained (hidden widths "
                      f"{tuple(b.shape[1] for b in biases[:-1])}) and recovered_ is False. Train the students "
                      "longer (student_max_iter, student_polish_max_iter), train more students, or lower gamma.",
                      ConvergenceWarning, stacklevel=3)
        return self._best_student(X, Y, self.student_losses_, weights, biases)

    def _finish(self, coefs, intercepts, X, Y, device, generator, name, finetune):
        """Final fine-tune of the recovered network, polish, pruning."""
        from ._students import batched_module, fit_students

        curve = []
        if finetune:
            net = batched_module(*_to_batched(coefs, intercepts), self.activation)
            result = fit_students(net, X, Y, steps=self.finetune_max_iter, learning_rate=self.finetune_lr,
                                  batch_size=self.batch_size, device=device, random_state=generator,
                                  verbose=self.verbose, name=name)
            tuned = _from_batched(result.module)
            if _mse(*tuned, self.activation, X, Y) <= _mse(coefs, intercepts, self.activation, X, Y):
                coefs, intercepts = tuned
            curve = list(result.loss_curve)
        if self.polish == "lbfgs":
            coefs, intercepts = self._polish(coefs, intercepts, X, Y, device, generator, name)
        n_pruned = 0
        if self.prune:
            coefs, intercepts, n_pruned = self._prune(coefs, intercepts, X, Y, device, generator, name)
        self._set_network(coefs, intercepts, X, Y, curve, n_pruned)

    def _polish(self, coefs, intercepts, X, Y, device, generator, name):
        from ._students import batched_module, polish_module

        net = batched_module(*_to_batched(coefs, intercepts), self.activation, dtype="float64")
        try:
            polished = _from_batched(polish_module(net, X, Y, max_iter=POLISH_MAX_ITER, device=device,
                                                   random_state=generator, name=name).module)
        except ValueError:
            return coefs, intercepts
        if np.isfinite(_mse(*polished, self.activation, X, Y)) and (
                _mse(*polished, self.activation, X, Y) <= _mse(coefs, intercepts, self.activation, X, Y)):
            return polished
        return coefs, intercepts

    def _prune(self, coefs, intercepts, X, Y, device, generator, name):
        """Drop the cheapest unit while the re-fitted loss stays at or below the best student's."""
        threshold = float(self.student_losses_.min())
        act, n_pruned = self.activation, 0
        reporter = ProgressReporter(name, verbose=self.verbose)
        while sum(c.shape[1] for c in coefs[:-1]) > len(coefs) - 1:
            best = None
            for layer in range(len(coefs) - 1):
                width = coefs[layer].shape[1]
                if width == 1:
                    continue
                for unit in range(width):
                    keep = np.delete(np.arange(width), unit)
                    trial_c = [*coefs[:layer], coefs[layer][:, keep], coefs[layer + 1][keep], *coefs[layer + 2:]]
                    trial_b = [*intercepts[:layer], intercepts[layer][keep], *intercepts[layer + 1:]]
                    if layer == len(coefs) - 2:
                        trial_c, trial_b = _output_lstsq(trial_c, trial_b, act, X, Y)
                    cost = _mse(trial_c, trial_b, act, X, Y)
                    if best is None or cost < best[0]:
                        best = (cost, trial_c, trial_b)
            trial_c, trial_b = self._polish(best[1], best[2], X, Y, device, generator, name)
            loss = _mse(trial_c, trial_b, act, X, Y)
            if not loss <= threshold:
                reporter.message(f"pruning stops: removing one more unit gives MSE {loss:.3g} > best student's "
                                 f"{threshold:.3g}")
                break
            coefs, intercepts, n_pruned = trial_c, trial_b, n_pruned + 1
            reporter.message(f"pruned a unit: widths {tuple(c.shape[1] for c in coefs[:-1])}, MSE {loss:.3g}")
        return coefs, intercepts, n_pruned

    def _set_network(self, coefs, intercepts, X, Y, curve, n_pruned):
        self.coefs_ = [np.ascontiguousarray(c, dtype=np.float64) for c in coefs]
        self.intercepts_ = [np.ascontiguousarray(b, dtype=np.float64) for b in intercepts]
        self.hidden_layer_sizes_ = tuple(int(c.shape[1]) for c in coefs[:-1])
        self.loss_ = _mse(self.coefs_, self.intercepts_, self.activation, X, Y)
        self.loss_curve_ = [*curve, self.loss_]
        self.n_pruned_ = int(n_pruned)
        self.recovered_ = True

    @property
    def _n_features_out(self):
        """Width of the last recovered hidden layer (the columns of :meth:`transform`)."""
        return self.hidden_layer_sizes_[-1]

    # -- inference -----------------------------------------------------------------------------------

    def predict(self, X):
        """Predict with the recovered network.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.

        Returns
        -------
        y : ndarray of shape (n_samples,) or (n_samples, n_outputs)
            Predictions (1-D for a single output, like MLPRegressor).
        """
        check_is_fitted(self)
        X = validate_data(self, as_numpy(X), reset=False, dtype=np.float64)
        out = _forward(self.coefs_, self.intercepts_, self.activation, X)
        return out.ravel() if self.n_outputs_ == 1 else out

    def transform(self, X):
        """Compute the activations of the recovered network's last hidden layer.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.

        Returns
        -------
        H : ndarray of shape (n_samples, ``hidden_layer_sizes_[-1]``)
            Hidden activations.
        """
        check_is_fitted(self)
        X = validate_data(self, as_numpy(X), reset=False, dtype=np.float64)
        return _forward(self.coefs_, self.intercepts_, self.activation, X, n_layers=len(self.coefs_) - 1)

    def to_mlp_regressor(self):
        """Build a fitted scikit-learn MLPRegressor carrying the recovered weights.

        Returns
        -------
        mlp : sklearn.neural_network.MLPRegressor
            Predicts as this estimator does. Only for the activations
            MLPRegressor supports (relu, tanh, sigmoid as "logistic",
            identity).
        """
        from sklearn.neural_network import MLPRegressor

        check_is_fitted(self)
        if self.activation not in _SKLEARN_ACTIVATIONS:
            raise ValueError(f"{type(self).__name__}.to_mlp_regressor: MLPRegressor has no {self.activation!r} "
                             f"activation (it supports {sorted(_SKLEARN_ACTIVATIONS)}).")
        mlp = MLPRegressor(hidden_layer_sizes=self.hidden_layer_sizes_,
                           activation=_SKLEARN_ACTIVATIONS[self.activation])
        mlp.coefs_ = [c.copy() for c in self.coefs_]
        mlp.intercepts_ = [b.copy() for b in self.intercepts_]
        mlp.n_features_in_ = self.n_features_in_
        if hasattr(self, "feature_names_in_"):
            mlp.feature_names_in_ = self.feature_names_in_
        mlp.n_outputs_ = self.n_outputs_
        mlp.n_layers_ = len(self.coefs_) + 1
        mlp.out_activation_ = "identity"
        mlp.n_iter_ = len(self.loss_curve_)
        mlp.t_ = 0
        mlp.loss_ = self.loss_ / 2  # MLPRegressor's squared loss is half the MSE
        mlp.loss_curve_ = [v / 2 for v in self.loss_curve_]
        mlp.best_loss_ = min(mlp.loss_curve_)
        return mlp


def _is_torch_module(obj):
    return any(k.__module__.startswith("torch.nn") and k.__name__ == "Module" for k in type(obj).__mro__)
