"""MetaLFBOClassifier: MALIBO's meta-learned likelihood-free classifier with a Laplace-approximated task head.

Meta-training (torch) learns a residual feature network ``phi``, a linear mean
head ``m`` and one embedding ``z_t`` per earlier task so that
``sigmoid(m(phi(x)) + z_t . phi(x))`` classifies each task's likelihood-free
training set. It runs through the library's training layer
(:class:`~sklearn_icml.utils.Trainer`) with MALIBO's regularised
multi-task loss as a custom train step (see ``_meta_lfbo_net``). Adaptation to
a new task is Bayesian logistic regression on the frozen features: prior
``z ~ N(0, I / prior_precision)``, MAP by Newton's method and a Laplace
posterior. The fitted network is kept as numpy arrays, so prediction needs
neither torch nor a GPU.
"""

import math
import time
from numbers import Integral, Real

import numpy as np
from scipy.linalg import cho_factor, cho_solve, solve_triangular
from scipy.special import expit
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted, validate_data

from ..utils._sklearn_private import Interval, StrOptions, _check_sample_weight, _fit_context
from ..utils._torch import as_numpy, to_numpy, torch_generator
from ..utils._torch_base import TorchEstimatorMixin
from ..utils._validation import check_float32_range, standardization
from ._lfbo import _lfbo_rows
from ._tasks import check_task_list, is_task_list, split_by_groups

__all__ = ["MetaLFBOClassifier"]

_NEWTON_MAX_ITER = 100


def _elu(h):
    return np.where(h > 0, h, np.expm1(np.minimum(h, 0.0)))


def _features(X, state):
    """``(phi(X), m(phi(X)))`` of standardised-by-``state`` inputs, in numpy float64."""
    h = (X - state["x_mean"]) / state["x_scale"]
    coefs, intercepts = state["coefs"], state["intercepts"]
    h = _elu(h @ coefs[0] + intercepts[0])
    for W, b in zip(coefs[1:-1], intercepts[1:-1]):
        h = _elu(h + h @ W + b)
    phi = _elu(h @ coefs[-1] + intercepts[-1])
    return phi, phi @ state["mean_coef"] + state["mean_intercept"]


def _init_network(rng, n_in, n_hidden, n_layers, n_features):
    """Weights drawn like torch's ``nn.Linear`` default: U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
    sizes = [n_in] + [n_hidden] * (n_layers - 1) + [n_features]
    coefs, intercepts = [], []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        bound = 1.0 / math.sqrt(fan_in)
        coefs.append(rng.uniform(-bound, bound, size=(fan_in, fan_out)))
        intercepts.append(rng.uniform(-bound, bound, size=fan_out))
    bound = 1.0 / math.sqrt(n_features)
    return coefs, intercepts, rng.uniform(-bound, bound, size=n_features), float(rng.uniform(-bound, bound))


def _null_penalty_scales(rng, n_tasks, n_features, n_draws=64):
    """Weights making each penalty term equal 0.5 on average for truly N(0, I) embeddings."""
    import torch

    from ._meta_lfbo_net import embedding_penalty_terms

    draws = torch.from_numpy(rng.standard_normal((n_draws, n_tasks, n_features)))
    ks, cov = zip(*(embedding_penalty_terms(d) for d in draws))
    ks_mean, cov_mean = float(torch.stack(ks).mean()), float(torch.stack(cov).mean())
    return 0.5 / max(ks_mean, 1e-12), (0.5 / cov_mean if cov_mean > 0 else 0.0)


def _observation_table(tasks, gamma, weight_type):
    """Per observation of the stacked tasks: task index, label-0 weight, label-1 weight, rows (1 or 2).

    The likelihood-free training set of a task holds each observation once
    with label 0 and, below the threshold, once more with label 1; this table
    keeps the two rows of an observation together (label-1 weight 0 when it
    has no second row).
    """
    task, w_neg, w_pos, n_rows = [], [], [], []
    for t, (X_t, y_t) in enumerate(tasks):
        index, labels, weights, _ = _lfbo_rows(y_t, gamma, weight_type)
        n = X_t.shape[0]
        neg, pos = np.zeros(n), np.zeros(n)
        neg[index[labels == 0]] = weights[labels == 0]
        pos[index[labels == 1]] = weights[labels == 1]
        task.append(np.full(n, t))
        w_neg.append(neg)
        w_pos.append(pos)
        n_rows.append(1.0 + (np.bincount(index[labels == 1], minlength=n) > 0))
    return np.concatenate(task), np.concatenate(w_neg), np.concatenate(w_pos), np.concatenate(n_rows)


def _row_table(tasks, gamma, weight_type):
    """The stacked likelihood-free training sets, one item per row: point, task index, label, weight."""
    X, task, labels, weights = [], [], [], []
    for t, (X_t, y_t) in enumerate(tasks):
        index, lab, w, _ = _lfbo_rows(y_t, gamma, weight_type)
        X.append(X_t[index])
        task.append(np.full(index.size, t))
        labels.append(lab.astype(np.float64))
        weights.append(w)
    return np.concatenate(X), np.concatenate(task), np.concatenate(labels), np.concatenate(weights)


class MetaLFBOClassifier(ClassifierMixin, TorchEstimatorMixin, BaseEstimator):
    """Meta-learned likelihood-free acquisition classifier with a Bayesian task head (MALIBO).

    The classifier of MALIBO [1]_. Its logit for a point ``x`` of task ``t``
    is ``m(phi(x)) + z_t . phi(x)``: ``phi`` is a residual feed-forward
    feature network (``n_layers`` linear layers, ``n_hidden`` units, ELU,
    ``n_features`` outputs), ``m`` a linear mean head and ``z_t`` a task
    embedding.

    * :meth:`meta_fit` learns ``phi``, ``m`` and the embeddings of earlier
      tasks from their raw observations (each task's observations become its
      likelihood-free training set, see :func:`likelihood_free_training_set`),
      minimising the weighted cross-entropy plus ``embedding_loss_weight``
      times a regulariser that pulls the embeddings' distribution towards
      the prior ``N(0, I)``, with Gaussian noise on the embeddings, Adam,
      an exponential learning-rate decay and early stopping on a held-out
      share of the rows, through the library's training layer.
    * :meth:`fit` adapts to a new task: Bayesian logistic regression of the
      labels on the frozen features with prior ``z ~ N(0, I /
      prior_precision)`` and the mean head as offset; the MAP comes from
      Newton's method and the Laplace approximation gives the posterior
      ``N(coef_, posterior_covariance_)``.
    * :meth:`predict_proba` uses the probit approximation of the posterior
      predictive (``prediction="mean"``) or one posterior draw of ``z`` made
      in :meth:`fit` (``prediction="thompson"``), as MALIBO's Thompson
      sampling does; :meth:`sample_proba` gives any number of draws.

    Without :meth:`meta_fit` the network keeps its random initialisation (a
    random-feature Bayesian logistic regression on standardised inputs), so
    the estimator is a working binary classifier on its own.

    Read more in the :ref:`User Guide <optimize>`.

    Parameters
    ----------
    n_features : int, default=16
        Output dimension of ``phi`` (and of the task embeddings). MALIBO's
        paper uses 50.
    n_hidden : int, default=32
        Width of the hidden layers (the paper: 64).
    n_layers : int, default=3
        Number of linear layers of ``phi``: one input layer, ``n_layers - 2``
        residual layers, one output layer (the paper: 5).
    gamma : float, default=1/3
        Quantile of the likelihood-free labels in :meth:`meta_fit`.
    weight_type : {"ei", "pi"}, default="ei"
        Weights of the likelihood-free labels in :meth:`meta_fit`.
    embedding_loss_weight : float, default=0.1
        Weight of the embedding regulariser in the meta-training loss.
    embedding_noise : float, default=0.1
        Standard deviation of the Gaussian noise added to the task embeddings
        during meta-training.
    max_iter : int, default=300
        Maximum number of meta-training epochs (the paper: 2048).
    batch_size : int, default=256
        Mini-batch size of meta-training, in rows of the likelihood-free
        training sets.
    learning_rate : float, default=1e-3
        Adam learning rate.
    lr_decay : float, default=0.999
        Factor of the exponential learning-rate decay, applied every epoch.
    early_stopping : bool, default=True
        Hold out ``validation_fraction`` of the rows of the earlier tasks'
        likelihood-free training sets and stop meta-training when their loss has not improved by more than
        ``tol`` for more than ``n_iter_no_change`` epochs; the weights of
        the best epoch are kept. Otherwise the same rule applies to the
        training loss and the last weights are kept (set
        ``n_iter_no_change=max_iter`` to always train ``max_iter`` epochs).
    validation_fraction : float, default=0.2
        Share of the rows of the earlier tasks' likelihood-free training sets
        held out when ``early_stopping``.
    n_iter_no_change : int, default=20
        Epochs without an improvement tolerated before meta-training stops.
    tol : float, default=0.0
        Smallest decrease of the monitored loss counted as an improvement.
    prior_precision : float, default=1.0
        Precision of the Gaussian prior on the task head ``z``.
    prediction : {"mean", "thompson"}, default="mean"
        What :meth:`predict_proba` returns: the probit-approximated
        posterior-mean probability, or the probability under one posterior
        draw of ``z`` made in :meth:`fit`.
    device : {"cpu", "auto", "cuda"}, "cuda:<index>" or torch.device, default="cpu"
        Where meta-training runs. Adaptation and prediction are small numpy
        computations.
    dtype : {"float64", "float32"}, default="float64"
        Precision of meta-training (MALIBO trains in float64).
    random_state : int, RandomState instance or None, default=None
        Seeds the initial weights, the validation split, the mini-batches,
        the embedding noise and the Thompson draw.
    verbose : int, default=0
        Print the meta-training loss (and validation loss) of each epoch
        when positive.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Class labels; the second one is the positive class ("below the
        threshold").
    coef_ : ndarray of shape (n_features,)
        MAP of the task head ``z``.
    posterior_precision_ : ndarray of shape (n_features, n_features)
        Laplace precision of ``z`` at the MAP.
    posterior_covariance_ : ndarray of shape (n_features, n_features)
        Its inverse.
    thompson_coef_ : ndarray of shape (n_features,)
        The posterior draw of ``z`` used by ``prediction="thompson"``; only
        set in that mode.
    coefs_ : list of ndarray
        Weight matrices of ``phi`` (meta-learned or random).
    intercepts_ : list of ndarray
        Bias vectors of ``phi``.
    mean_coef_ : ndarray of shape (n_features,)
        Weights of the mean head ``m``.
    mean_intercept_ : float
        Bias of the mean head.
    x_mean_ : ndarray of shape (`n_features_in_`,)
        Offset of the input standardisation.
    x_scale_ : ndarray of shape (`n_features_in_`,)
        Scale of the input standardisation.
    task_embeddings_ : ndarray of shape (`n_meta_tasks_`, n_features)
        Learned embeddings of the earlier tasks (empty without meta-training).
    n_meta_tasks_ : int
        Number of earlier tasks seen by :meth:`meta_fit` (0 without it).
    loss_curve_ : list of float
        Training loss per meta-training epoch (empty without
        :meth:`meta_fit`).
    validation_scores_ : list of float or None
        Validation loss per meta-training epoch (lower is better; None
        without early stopping or meta-training).
    n_meta_iter_ : int
        Meta-training epochs run (0 without :meth:`meta_fit`).
    meta_fit_seconds_ : float
        Wall-clock time of :meth:`meta_fit`.
    n_iter_ : int
        Newton iterations of the last adaptation (:meth:`fit`).
    device_ : str
        The resolved ``device`` (``"cpu"`` or ``"cuda"``) where meta-training
        runs.
    n_features_in_ : int
        Number of input dimensions.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Input names, when ``X`` had string column names.

    See Also
    --------
    MetaBayesianOptimizer : Bayesian optimisation with this classifier as acquisition.
    likelihood_free_training_set : The labels and weights of the classification set.

    Notes
    -----
    Assumptions and choices, from the MALIBO description (the official code is
    AGPL and was not used):

    * The embedding regulariser is the mean squared Kolmogorov-Smirnov
      distance of each embedding dimension to the standard normal plus the
      mean squared difference between the embeddings' covariance and the
      identity; each term is scaled so that it averages 0.5 over 64 draws of
      truly ``N(0, I)`` embeddings.
    * The adaptation MAP is found by Newton's method (MALIBO uses L-BFGS; the
      optimum is the same) and the Laplace precision is the exact Hessian
      ``prior_precision * I + sum_n w_n p_n (1 - p_n) phi_n phi_n^T`` of the
      weighted objective. The reference code multiplies each term by
      ``y_n w_n + 1`` instead; the exact Hessian makes a sample weight ``k``
      equivalent to ``k`` repeated rows.
    * The default network (16 features, 32 hidden units, 3 layers, at most
      300 epochs) is smaller than the paper's (50, 64, 5, 2048): about a
      tenth of the arithmetic per observation and at most a seventh of the
      epochs; the regret it reaches is compared with the paper's default in
      the benchmark page. The paper's network is
      ``MetaLFBOClassifier(50, 64, 5, max_iter=2048)``.
    * Meta-training minimises the weighted cross-entropy per row of the
      earlier tasks' likelihood-free training sets, stacked over the tasks.
      As in MALIBO's code, mini-batches, the validation split and the
      embedding noise are drawn over these *rows* (the two rows of an
      observation below the threshold, labels 0 and 1, are drawn
      independently), as the method's per-row loss implies; the
      alternative layout (both rows of an observation together, one noise
      draw) is compared on :doc:`the benchmark page </benchmarks/meta_bo>`.
    * ``n_iter_`` counts the Newton iterations of :meth:`fit` (the
      estimator's own solver, as in
      :class:`~sklearn.linear_model.LogisticRegression`); the meta-training
      epochs are ``n_meta_iter_``, with ``max_iter``, ``loss_curve_`` and
      ``validation_scores_`` named as in
      :class:`~sklearn.neural_network.MLPClassifier`.
    * Inputs are standardised: by the earlier tasks' observations after
      :meth:`meta_fit`, by the (weighted) training data otherwise, without
      overflow up to the float64 limit (when the plain moments overflow they
      are taken on the inputs divided by their column peaks; a column whose
      spread is rounding noise gets scale 1). Meta-training with
      ``dtype="float32"`` refuses inputs beyond float32's range with a
      ``ValueError``.
    * After :meth:`meta_fit` alone the classifier predicts with the prior
      (``coef_ = 0``): the zero-shot acquisition.
    * Meta-training is a pre-training stage. Like
      :class:`~sklearn.frozen.FrozenEstimator`, :func:`~sklearn.base.clone`
      carries the meta-learned network over to the clone, so
      :class:`~sklearn.model_selection.GridSearchCV`, cross-validation and a
      :class:`~sklearn.ensemble.GradientBoostingClassifier` ``init`` adapt the
      same prior; :meth:`fit` only redoes the task adaptation. The
      meta-training parameters take effect at the next :meth:`meta_fit`.

    References
    ----------
    .. [1] J. Pan, S. Falkner, F. Berkenkamp and J. Vanschoren, "MALIBO:
       Meta-learning for Likelihood-free Bayesian Optimization", Proceedings of
       the 41st International Conference on Machine Learning (ICML), PMLR 235,
       pp. 39102-39134, 2024.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.optimize import MetaLFBOClassifier
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(size=(40, 2))
    >>> y = (X[:, 0] + X[:, 1] > 1).astype(int)
    >>> clf = MetaLFBOClassifier(n_features=16, n_hidden=16, n_layers=3, random_state=0).fit(X, y)
    >>> clf.predict_proba(X[:2]).shape
    (2, 2)
    >>> float(clf.score(X, y)) > 0.8
    True
    """

    _parameter_constraints = {
        "n_features": [Interval(Integral, 1, None, closed="left")],
        "n_hidden": [Interval(Integral, 1, None, closed="left")],
        "n_layers": [Interval(Integral, 2, None, closed="left")],
        "gamma": [Interval(Real, 0, 1, closed="neither")],
        "weight_type": [StrOptions({"ei", "pi"})],
        "embedding_loss_weight": [Interval(Real, 0, None, closed="left")],
        "embedding_noise": [Interval(Real, 0, None, closed="left")],
        "lr_decay": [Interval(Real, 0, 1, closed="right")],
        "prior_precision": [Interval(Real, 0, None, closed="neither")],
        "prediction": [StrOptions({"mean", "thompson"})],
        "dtype": [StrOptions({"float64", "float32"})],
        "random_state": ["random_state"],
    }

    def __init__(self, n_features=16, n_hidden=32, n_layers=3, *, gamma=1 / 3, weight_type="ei",
                 embedding_loss_weight=0.1, embedding_noise=0.1, max_iter=300, batch_size=256,
                 learning_rate=1e-3, lr_decay=0.999, early_stopping=True, validation_fraction=0.2,
                 n_iter_no_change=20, tol=0.0, prior_precision=1.0, prediction="mean", device="cpu",
                 dtype="float64", random_state=None, verbose=0):
        self.n_features = n_features
        self.n_hidden = n_hidden
        self.n_layers = n_layers
        self.gamma = gamma
        self.weight_type = weight_type
        self.embedding_loss_weight = embedding_loss_weight
        self.embedding_noise = embedding_noise
        self.max_iter = max_iter
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.lr_decay = lr_decay
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.tol = tol
        self.prior_precision = prior_precision
        self.prediction = prediction
        self.device = device
        self.dtype = dtype
        self.random_state = random_state
        self.verbose = verbose

    # meta-training data layout: MALIBO's rows; "observations" (each observation with both its rows, one noise
    # draw per observation or, with _meta_noise_per_row, per row) is the alternative layout, private: only the
    # benchmark's layout comparison sets it (see the benchmark page)
    _meta_layout = "rows"
    _meta_noise_per_row = False

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags

    def __sklearn_clone__(self):
        clone = super().__sklearn_clone__()
        if hasattr(self, "_meta_state"):
            clone._meta_state = self._meta_state  # read-only arrays, shared
        return clone

    # -- meta-training -----------------------------------------------------------------------------
    def meta_fit(self, X, y=None, *, groups=None):
        """Meta-train the feature network, the mean head and the task embeddings on earlier tasks.

        Parameters
        ----------
        X : list of (X_t, y_t) pairs, dict of such pairs, or array-like of shape (n_observations, n_dims)
            The earlier tasks' observations: per task, evaluated points
            ``X_t`` of shape ``(n_t, n_dims)`` and objective values ``y_t``
            (lower is better). Or all observations stacked, with ``y`` and
            ``groups``.
        y : array-like of shape (n_observations,), default=None
            Objective values, when ``X`` is a stacked array.
        groups : array-like of shape (n_observations,), default=None
            Task of each stacked observation; None means one task.

        Returns
        -------
        self : object
            The meta-trained classifier; it predicts with the prior until
            :meth:`fit` adapts it to a task.
        """
        self._validate_params()
        name = type(self).__name__
        with self._torch_fit_context() as ctx:
            start = time.perf_counter()
            if is_task_list(X, y):
                tasks, n_dims = check_task_list(X, name)
                self.n_features_in_ = n_dims
                if hasattr(self, "feature_names_in_"):
                    del self.feature_names_in_
            else:
                X, y = validate_data(self, as_numpy(X), as_numpy(y), dtype=np.float64, y_numeric=True)
                tasks = split_by_groups(X, y, groups, name)
            state = self._meta_train(tasks, ctx.device)
        state["fit_seconds"] = time.perf_counter() - start
        for value in state.values():
            if isinstance(value, np.ndarray):
                value.flags.writeable = False
        self._meta_state = state
        return self._set_prior()

    def _set_prior(self):
        """Fitted state of the meta-trained network with the prior ``z ~ N(0, I / prior_precision)`` as head."""
        state = self._meta_state
        self._set_network_attributes(state)
        self.n_features_in_ = state["n_dims"]
        n = state["mean_coef"].shape[0]
        self.classes_ = np.array([0, 1])
        self.coef_ = np.zeros(n)
        self.posterior_precision_ = self.prior_precision * np.eye(n)
        self.posterior_covariance_ = np.eye(n) / self.prior_precision
        if self.prediction == "thompson":
            self.thompson_coef_ = check_random_state(self.random_state).standard_normal(n) \
                / math.sqrt(self.prior_precision)
        elif hasattr(self, "thompson_coef_"):
            del self.thompson_coef_
        self.n_iter_ = 0
        return self

    def _meta_train(self, tasks, device):
        import torch

        from ..utils import Trainer
        from ..utils._mlp import mlp_coefs
        from ._meta_lfbo_net import MALIBONetwork, make_train_step

        rng = check_random_state(self.random_state)
        tdtype = torch.float64 if self.dtype == "float64" else torch.float32
        n_dims = tasks[0][0].shape[1]
        n_tasks = len(tasks)

        X_all = np.concatenate([X_t for X_t, _ in tasks])
        if self.dtype == "float32":
            check_float32_range(X_all, name=type(self).__name__, reason="meta-training runs in float32; "
                                "dtype='float64' standardises any finite X")
        x_mean, x_scale = standardization(X_all)

        if self._meta_layout == "rows":  # MALIBO's: batches, validation split and noise draws over rows
            data, batch_size = _row_table(tasks, self.gamma, self.weight_type), self.batch_size
        else:  # over observations, an observation's two rows together (batch_size: rows on average)
            data = (X_all,) + _observation_table(tasks, self.gamma, self.weight_type)
            batch_size = max(1, round(self.batch_size * X_all.shape[0] / float(data[-1].sum())))

        coefs, intercepts, mean_coef, mean_intercept = _init_network(rng, n_dims, self.n_hidden,
                                                                     self.n_layers, self.n_features)
        ks_scale, cov_scale = _null_penalty_scales(rng, n_tasks, self.n_features)
        generator = torch_generator(rng)  # batches, validation split and embedding noise
        module = MALIBONetwork(coefs, intercepts, mean_coef, mean_intercept, n_tasks, x_mean=x_mean,
                               x_scale=x_scale, dtype=tdtype)
        step = make_train_step(embedding_loss_weight=self.embedding_loss_weight, ks_scale=ks_scale,
                               cov_scale=cov_scale, embedding_noise=self.embedding_noise, generator=generator,
                               layout=self._meta_layout, noise_per_row=self._meta_noise_per_row)
        result = Trainer(
            train_step=step, max_iter=self.max_iter, batch_size=batch_size, learning_rate=self.learning_rate,
            optimizer="adam",
            lr_schedule=lambda opt: torch.optim.lr_scheduler.ExponentialLR(opt, gamma=self.lr_decay),
            early_stopping=self.early_stopping and data[0].shape[0] >= 2,
            validation_fraction=self.validation_fraction, n_iter_no_change=self.n_iter_no_change, tol=self.tol,
            device=device, random_state=generator, verbose=self.verbose, name=type(self).__name__,
        ).fit(module, data, None)
        net = result.module
        coefs, intercepts = mlp_coefs(net.phi)
        return dict(
            coefs=coefs, intercepts=intercepts,
            mean_coef=to_numpy(net.mean_coef, np.float64), mean_intercept=float(net.mean_intercept.detach()[0]),
            task_embeddings=to_numpy(net.embeddings, np.float64),
            x_mean=x_mean, x_scale=x_scale, n_meta_tasks=n_tasks, n_dims=n_dims,
            loss_curve=list(result.loss_curve), validation_scores=result.validation_scores,
            n_epochs=result.n_iter,
        )

    def _set_network_attributes(self, state):
        self.coefs_ = list(state["coefs"])
        self.intercepts_ = list(state["intercepts"])
        self.mean_coef_ = state["mean_coef"]
        self.mean_intercept_ = state["mean_intercept"]
        self.x_mean_ = state["x_mean"]
        self.x_scale_ = state["x_scale"]
        self.task_embeddings_ = state["task_embeddings"]
        self.n_meta_tasks_ = state["n_meta_tasks"]
        self.loss_curve_ = list(state["loss_curve"])
        self.validation_scores_ = None if state["validation_scores"] is None else list(state["validation_scores"])
        self.n_meta_iter_ = state["n_epochs"]
        self.meta_fit_seconds_ = state.get("fit_seconds", 0.0)

    def _network(self):
        return dict(coefs=self.coefs_, intercepts=self.intercepts_, mean_coef=self.mean_coef_,
                    mean_intercept=self.mean_intercept_, x_mean=self.x_mean_, x_scale=self.x_scale_)

    # -- adaptation to the target task ---------------------------------------------------------------
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Adapt the task head to one task: Bayesian logistic regression with a Laplace posterior.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_dims)
            Points of the task (for Bayesian optimisation: the
            likelihood-free training set).
        y : array-like of shape (n_samples,)
            Binary labels; the larger one (in sorted order) is the positive
            class.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the samples in the likelihood (the EI-type weights).

        Returns
        -------
        self : object
            The adapted classifier.
        """
        meta = getattr(self, "_meta_state", None)
        with self._torch_fit_context():  # device resolved and recorded; the adaptation itself is numpy
            X, y = validate_data(self, as_numpy(X), as_numpy(y), dtype=[np.float64, np.float32])
            if meta is not None and X.shape[1] != meta["n_dims"]:
                raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is expecting "
                                 f"{meta['n_dims']} features as input (the dimension of the earlier tasks).")
            X = X.astype(np.float64, copy=False)
            check_classification_targets(y)
            y_type = type_of_target(y, input_name="y", raise_unknown=True)
            classes, y_idx = np.unique(y, return_inverse=True)
            if len(classes) < 2:
                raise ValueError(f"{type(self).__name__} needs samples of 2 classes; got 1 class "
                                 f"({classes[0]!r}).")
            if y_type != "binary":
                raise ValueError(f"Only binary classification is supported. The type of the target is {y_type}; "
                                 f"{type(self).__name__} got {len(classes)} classes.")
            sw = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
            rng = check_random_state(self.random_state)

            if meta is None:
                coefs, intercepts, mean_coef, mean_intercept = _init_network(
                    rng, X.shape[1], self.n_hidden, self.n_layers, self.n_features)
                x_mean, x_scale = standardization(X, sample_weight=sw)
                # random features, no learned mean: the head alone carries the task
                state = dict(coefs=coefs, intercepts=intercepts, mean_coef=np.zeros(self.n_features),
                             mean_intercept=0.0, x_mean=x_mean, x_scale=x_scale, task_embeddings=np.empty(
                                 (0, self.n_features)), n_meta_tasks=0, loss_curve=[], validation_scores=None,
                             n_epochs=0)
            else:
                state = meta
            self._set_network_attributes(state)
            phi, offset = _features(X, state)
            self.coef_, self.posterior_precision_, self.n_iter_ = self._newton(phi, offset, y_idx.astype(float), sw)
            self.posterior_covariance_ = cho_solve(cho_factor(self.posterior_precision_), np.eye(self.n_features))
            if self.prediction == "thompson":
                self.thompson_coef_ = self._draw(rng, 1)[0]
            elif hasattr(self, "thompson_coef_"):
                del self.thompson_coef_
            self.classes_ = classes
        return self

    def _newton(self, phi, offset, t, w):
        lam = self.prior_precision
        z = np.zeros(phi.shape[1])
        eye = np.eye(phi.shape[1])

        def objective(z):
            a = offset + phi @ z
            return float(np.sum(w * (np.logaddexp(0.0, a) - t * a)) + 0.5 * lam * z @ z)

        obj = objective(z)
        n_iter = 0
        while n_iter < _NEWTON_MAX_ITER:
            n_iter += 1
            p = expit(offset + phi @ z)
            grad = phi.T @ (w * (p - t)) + lam * z
            H = (phi * (w * p * (1 - p))[:, None]).T @ phi + lam * eye
            step = cho_solve(cho_factor(H), grad)
            decrement = float(grad @ step)
            if decrement < 1e-20:
                break
            s = 1.0
            while True:
                z_new = z - s * step
                obj_new = objective(z_new)
                if obj_new <= obj - 1e-4 * s * decrement or s < 1e-10:
                    break
                s *= 0.5
            z, obj = z_new, obj_new
            if decrement < 1e-16:
                break
        p = expit(offset + phi @ z)
        H = (phi * (w * p * (1 - p))[:, None]).T @ phi + lam * eye
        return z, H, n_iter

    def _draw(self, rng, n_samples):
        """Posterior draws of ``z``: ``coef_ + L^{-T} eps`` with ``L L^T`` the posterior precision."""
        L = np.linalg.cholesky(self.posterior_precision_)
        eps = rng.standard_normal((self.coef_.shape[0], n_samples))
        return (self.coef_[:, None] + solve_triangular(L.T, eps, lower=False)).T

    # -- prediction ------------------------------------------------------------------------------------
    def _logits(self, X):
        phi, offset = _features(X, self._network())
        if self.prediction == "thompson":
            return offset + phi @ self.thompson_coef_
        mean = offset + phi @ self.coef_
        var = np.sum((phi @ self.posterior_covariance_) * phi, axis=1)
        return mean / np.sqrt(1.0 + np.pi / 8.0 * var)

    def _check_X(self, X):
        X = validate_data(self, as_numpy(X), reset=False, dtype=[np.float64, np.float32])
        return X.astype(np.float64, copy=False)

    def predict_proba(self, X):
        """Probability of each class.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_dims)
            Points.

        Returns
        -------
        proba : ndarray of shape (n_samples, 2)
            Probabilities of ``classes_[0]`` and ``classes_[1]``: the probit
            approximation of the posterior predictive, or the probability under
            the posterior draw ``thompson_coef_`` (``prediction="thompson"``).
        """
        check_is_fitted(self)
        p = expit(self._logits(self._check_X(X)))
        return np.column_stack([1.0 - p, p])

    def predict(self, X):
        """Most probable class.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_dims)
            Points.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predicted labels.
        """
        check_is_fitted(self)
        return self.classes_[(self._logits(self._check_X(X)) > 0).astype(int)]

    def sample_proba(self, X, n_samples=1, random_state=None):
        """Positive-class probabilities under independent posterior draws of the task head (Thompson sampling).

        Parameters
        ----------
        X : array-like of shape (n_points, n_dims)
            Points.
        n_samples : int, default=1
            Number of posterior draws.
        random_state : int, RandomState instance or None, default=None
            Seeds the draws.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_points)
            ``sigmoid(m(phi(x)) + z_s . phi(x))`` for each draw ``z_s`` from the
            Laplace posterior.
        """
        check_is_fitted(self)
        X = self._check_X(X)
        if not isinstance(n_samples, Integral) or n_samples < 1:
            raise ValueError(f"{type(self).__name__}.sample_proba: n_samples must be a positive integer; "
                             f"got {n_samples!r}.")
        phi, offset = _features(X, self._network())
        Z = self._draw(check_random_state(random_state), n_samples)
        return expit(offset[None, :] + Z @ phi.T)
