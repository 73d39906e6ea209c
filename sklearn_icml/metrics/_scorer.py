"""Scorers for GridSearchCV / cross_validate built on the calibration metrics."""

import numpy as np
from sklearn import get_config
from sklearn.utils.metadata_routing import UNCHANGED, MetadataRequest
from sklearn.utils.validation import check_is_fitted

from ._binned_ece import binned_ece
from ._ls_ece import ls_ece


def estimator_scores(estimator, X, response_method, caller):
    """Scores of a fitted classifier on X, and the metric arguments that match them to its classes.

    Returns ``(scores, kwargs)``: for a binary classifier the positive
    column (``classes_[1]``) with ``pos_label``, otherwise all columns with
    ``labels=classes_``, so a cross-validation fold missing a class still
    reads the right columns; ``response`` says whether they are
    probabilities or logits.
    """
    check_is_fitted(estimator)
    if not hasattr(estimator, response_method):
        raise AttributeError(f"{type(estimator).__name__} has no {response_method}; {caller} needs it.")
    scores = np.asarray(getattr(estimator, response_method)(X))
    classes = np.asarray(estimator.classes_)
    kwargs = {"response": "proba" if response_method == "predict_proba" else "logits"}
    if classes.size == 2:
        if scores.ndim == 2:
            scores = scores[:, 1]
        kwargs["pos_label"] = classes[1]
    else:
        kwargs["labels"] = classes
    return scores, kwargs


class _CalibrationScorer:
    """A scorer returning minus a calibration error (greater is better).

    Unlike ``make_scorer``, it reads ``estimator.classes_``, so the columns of
    ``predict_proba``/``decision_function`` are matched with their classes even
    when a cross-validation fold lacks a class, and the positive class of a
    binary problem is the estimator's ``classes_[1]``.

    Parameters
    ----------
    estimator : fitted classifier
        Has ``classes_`` and the response method.
    X : array-like of shape (n_samples, n_features)
        Input data.
    y_true : array-like of shape (n_samples,)
        True labels.
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights.

    Returns
    -------
    float
        Minus the calibration error.

    Notes
    -----
    Metadata routing: like scikit-learn's scorers, it consumes
    ``sample_weight`` in ``score`` once asked to with
    ``set_score_request(sample_weight=True)`` (routing enabled), so
    ``cross_validate(..., params={"sample_weight": w})`` weights the error.
    """

    def __init__(self, metric, response_method, **kwargs):
        self.metric = metric
        self.response_method = response_method
        self.kwargs = kwargs

    def __call__(self, estimator, X, y_true, sample_weight=None):
        scores, kwargs = estimator_scores(estimator, X, self.response_method, "this scorer")
        return -float(self.metric(y_true, scores, **self.kwargs, **kwargs, sample_weight=sample_weight))

    def set_score_request(self, *, sample_weight=UNCHANGED):
        """Ask for ``sample_weight`` to be routed to this scorer (metadata routing).

        Parameters
        ----------
        sample_weight : bool, None, str or UNCHANGED, default=UNCHANGED
            ``True``: the scorer receives ``sample_weight`` when it is passed
            (e.g. ``cross_validate(..., params={"sample_weight": w})``);
            ``False``: it never does; ``None`` (the initial state): passing
            ``sample_weight`` is an error; a string: route the metadata of that
            name as ``sample_weight``.

        Returns
        -------
        self : callable
            This scorer, changed in place as scikit-learn's scorers are. The
            module-level scorers (:data:`ls_ece_scorer`, ...) are shared by
            every caller: set requests on one of your own,
            ``make_calibration_scorer(...).set_score_request(sample_weight=True)``.

        Raises
        ------
        RuntimeError
            When metadata routing is not enabled
            (``sklearn.set_config(enable_metadata_routing=True)``).
        """
        if not get_config().get("enable_metadata_routing", False):
            raise RuntimeError("set_score_request is only available when metadata routing is enabled; enable it "
                               "with sklearn.set_config(enable_metadata_routing=True).")
        if sample_weight is not UNCHANGED:
            # validates the value as scikit-learn does (True, False, None or an alias string)
            MetadataRequest(owner=repr(self)).score.add_request(param="sample_weight", alias=sample_weight)
            self._sample_weight_request = sample_weight
        return self

    def get_metadata_routing(self):
        """The metadata this scorer consumes: ``sample_weight`` in ``score``, as requested.

        Returns
        -------
        routing : sklearn.utils.metadata_routing.MetadataRequest
            Its ``score`` method requests ``sample_weight`` with the alias set
            by :meth:`set_score_request` (None until then).
        """
        request = MetadataRequest(owner=repr(self))
        request.score.add_request(param="sample_weight", alias=getattr(self, "_sample_weight_request", None))
        return request

    def __repr__(self):
        extra = "".join(f", {k}={v!r}" for k, v in self.kwargs.items())
        return f"make_calibration_scorer({self.metric.__name__}, response_method={self.response_method!r}{extra})"


def make_calibration_scorer(metric="ls_ece", *, response_method="predict_proba", **kwargs):
    """Build a scorer from :func:`ls_ece` or :func:`binned_ece` with chosen options.

    The scorer returns minus the error (greater is better, as
    ``neg_log_loss``), matches score columns with ``estimator.classes_`` and
    takes the positive class of a binary problem from ``classes_[1]``.

    Parameters
    ----------
    metric : {"ls_ece", "binned_ece"}, default="ls_ece"
        Which calibration error.
    response_method : {"predict_proba", "decision_function"}, default="predict_proba"
        Which output of the estimator is scored; ``decision_function`` is read
        as logits (right for logistic models, not for SVMs' one-vs-one scores).
    **kwargs : dict
        Options of the metric (``sigma``, ``noise``, ``multiclass``,
        ``n_bins``, ...).

    Returns
    -------
    callable
        ``scorer(estimator, X, y, sample_weight=None) -> float``.

    See Also
    --------
    ls_ece : The metric.

    Notes
    -----
    With metadata routing enabled, a weighted error inside model selection
    is ``make_calibration_scorer(...).set_score_request(sample_weight=True)``
    passed with ``cross_validate(..., params={"sample_weight": w})`` (the
    estimator states its own request, e.g.
    ``set_fit_request(sample_weight=False)``).

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.model_selection import cross_val_score
    >>> from sklearn_icml.metrics import make_calibration_scorer
    >>> X, y = load_iris(return_X_y=True)
    >>> scorer = make_calibration_scorer("ls_ece", sigma=1 / 15)
    >>> scores = cross_val_score(LogisticRegression(max_iter=500), X, y, scoring=scorer, cv=3)
    >>> bool((scores <= 0).all())
    True
    """
    metrics = {"ls_ece": ls_ece, "binned_ece": binned_ece}
    if metric not in metrics:
        raise ValueError(f"make_calibration_scorer: metric must be one of {sorted(metrics)}; got {metric!r}.")
    if response_method not in ("predict_proba", "decision_function"):
        raise ValueError("make_calibration_scorer: response_method must be 'predict_proba' or "
                         f"'decision_function'; got {response_method!r}.")
    for reserved in ("response", "labels", "pos_label", "sample_weight"):
        if reserved in kwargs:
            raise ValueError(f"make_calibration_scorer: {reserved!r} is set by the scorer from the estimator.")
    return _CalibrationScorer(metrics[metric], response_method, **kwargs)


#: Scorer: minus :func:`ls_ece` on ``predict_proba`` (sigma=0.1, top-label).
ls_ece_scorer = make_calibration_scorer("ls_ece", response_method="predict_proba")
#: Scorer: minus :func:`ls_ece` on ``decision_function`` read as logits.
ls_ece_logit_scorer = make_calibration_scorer("ls_ece", response_method="decision_function")
#: Scorer: minus the 15-bin :func:`binned_ece` on ``predict_proba``.
binned_ece_scorer = make_calibration_scorer("binned_ece", response_method="predict_proba")
