"""LSReliabilityDisplay: the smooth (LS) reliability diagram beside the binned one."""

from ..utils._torch import as_numpy
from ._binned_ece import binned_ece, binned_reliability
from ._calibration_input import prepare_binary_problems
from ._ls_ece import ls_ece
from ._reliability import ls_reliability_curve
from ._scorer import estimator_scores


def _pyplot(caller):
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - matplotlib is in the doc extra
        raise ImportError(f"{caller} needs matplotlib: pip install matplotlib") from exc
    return plt


class LSReliabilityDisplay:
    """Smooth reliability diagram of LS-ECE, plotted beside the binned diagram.

    Read more in the :ref:`User Guide <metrics>`.

    Build it with :meth:`from_estimator` or :meth:`from_predictions`; like
    scikit-learn's :class:`~sklearn.calibration.CalibrationDisplay`, the
    constructor only stores precomputed values and :meth:`plot` draws them.

    Parameters
    ----------
    prob_true : ndarray of shape (n_points,)
        Smoothed outcome frequency ``E[Y | T = t]`` along the curve.
    prob_pred : ndarray of shape (n_points,)
        Smoothed predicted probability ``sigmoid(t)`` along the curve.
    binned_prob_true : ndarray of shape (n_nonempty_bins,)
        Outcome frequency in each non-empty bin.
    binned_prob_pred : ndarray of shape (n_nonempty_bins,)
        Mean confidence in each non-empty bin.
    ls_ece : float
        The LS-ECE of the predictions.
    binned_ece : float
        The binned ECE of the predictions.
    sigma : float, default=None
        Noise scale used for the curve.
    n_bins : int, default=None
        Number of bins of the binned diagram.
    estimator_name : str, default=None
        Name shown in the legend.

    Attributes
    ----------
    line_ : matplotlib Line2D
        The smooth curve.
    binned_line_ : matplotlib Line2D or None
        The binned diagram's markers, when drawn.
    ax_ : matplotlib Axes
        The axes.
    figure_ : matplotlib Figure
        The figure.

    See Also
    --------
    ls_reliability_curve : The curve's values.
    sklearn.calibration.CalibrationDisplay : Scikit-learn's binned diagram.

    Notes
    -----
    For 2-D scores the diagram is the top-label one (confidence of the
    predicted class against its accuracy), as in the paper; for 1-D scores it
    is the positive-class diagram.

    References
    ----------
    .. [1] M. Chidambaram, H. Lee, C. McSwiggen, S. Rezchikov, "How Flawed Is
       ECE? An Analysis via Logit Smoothing", ICML 2024.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.naive_bayes import GaussianNB
    >>> from sklearn_icml.metrics import LSReliabilityDisplay
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> disp = LSReliabilityDisplay.from_estimator(GaussianNB().fit(X, y), X, y, sigma=0.1)
    >>> round(disp.ls_ece, 3) > 0
    True
    """

    def __init__(self, prob_true, prob_pred, binned_prob_true, binned_prob_pred, ls_ece, binned_ece, *,
                 sigma=None, n_bins=None, estimator_name=None):
        self.prob_true = prob_true
        self.prob_pred = prob_pred
        self.binned_prob_true = binned_prob_true
        self.binned_prob_pred = binned_prob_pred
        self.ls_ece = ls_ece
        self.binned_ece = binned_ece
        self.sigma = sigma
        self.n_bins = n_bins
        self.estimator_name = estimator_name

    def plot(self, *, ax=None, name=None, ref_line=True, show_binned=True, **kwargs):
        """Draw the smooth curve, the binned markers and the diagonal.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
            Axes to draw on; a new figure when None.
        name : str, default=None
            Legend name; defaults to ``estimator_name``.
        ref_line : bool, default=True
            Draw the diagonal of perfect calibration.
        show_binned : bool, default=True
            Draw the binned diagram's markers too.
        **kwargs : dict
            Passed to ``ax.plot`` for the smooth curve.

        Returns
        -------
        display : LSReliabilityDisplay
            The display, with ``line_``, ``ax_`` and ``figure_`` set.
        """
        plt = _pyplot("LSReliabilityDisplay.plot")
        if ax is None:
            _, ax = plt.subplots()
        name = self.estimator_name if name is None else name
        label = f"LS-ECE (sigma={self.sigma:.3g}) = {self.ls_ece:.4f}"
        if name:
            label = f"{name}: {label}"
        line_kwargs = {"label": label, "linewidth": 2, **kwargs}
        if ref_line:
            ax.plot([0, 1], [0, 1], "k:", linewidth=1, label="perfectly calibrated")
        (self.line_,) = ax.plot(self.prob_pred, self.prob_true, **line_kwargs)
        self.binned_line_ = None
        if show_binned:
            (self.binned_line_,) = ax.plot(self.binned_prob_pred, self.binned_prob_true, "s", markersize=5,
                                           alpha=0.7, color=self.line_.get_color(),
                                           label=f"{self.n_bins}-bin ECE = {self.binned_ece:.4f}")
        ax.set(xlabel="predicted probability (confidence)", ylabel="observed frequency", xlim=(-0.02, 1.02),
               ylim=(-0.02, 1.02))
        ax.legend(loc="upper left", fontsize="small")
        self.ax_, self.figure_ = ax, ax.figure
        return self

    @classmethod
    def from_predictions(cls, y_true, y_score, *, sigma=0.1, n_bins=15, noise="gaussian", response="proba",
                         labels=None, pos_label=None, n_points=100, name=None, ax=None, ref_line=True,
                         show_binned=True, **kwargs):
        """Compute the diagrams from scores and plot them.

        Parameters
        ----------
        y_true : array-like of shape (n_samples,)
            True labels.
        y_score : array-like of shape (n_samples,) or (n_samples, n_classes)
            Probabilities or logits, read as in :func:`ls_ece` (2-D: top-label).
        sigma : float, default=0.1
            Noise scale in logit units.
        n_bins : int, default=15
            Number of equal-width bins of the binned diagram.
        noise : {"gaussian", "uniform"}, default="gaussian"
            Noise distribution.
        response : {"proba", "logits"}, default="proba"
            Whether ``y_score`` holds probabilities or logits.
        labels : array-like of shape (n_classes,), default=None
            The class of each column of a 2-D ``y_score``.
        pos_label : int, float, bool or str, default=None
            For 1-D scores, the label whose probability ``y_score`` is.
        n_points : int, default=100
            Points on the smooth curve.
        name : str, default=None
            Legend name.
        ax : matplotlib Axes, default=None
            Axes to draw on.
        ref_line : bool, default=True
            Draw the diagonal.
        show_binned : bool, default=True
            Draw the binned markers.
        **kwargs : dict
            Passed to ``ax.plot`` for the smooth curve.

        Returns
        -------
        display : LSReliabilityDisplay
            The plotted display.
        """
        y_true, y_score = as_numpy(y_true), as_numpy(y_score)
        common = dict(response=response, labels=labels, pos_label=pos_label)
        prob_true, prob_pred = ls_reliability_curve(y_true, y_score, sigma=sigma, noise=noise, n_points=n_points,
                                                    **common)
        _, (problem,) = prepare_binary_problems(y_true, y_score, multiclass="top_label", sample_weight=None,
                                                caller="LSReliabilityDisplay", **common)
        bin_pred, bin_true, _ = binned_reliability(problem.prob, problem.y, problem.w, n_bins, "uniform")
        disp = cls(prob_true, prob_pred, bin_true, bin_pred,
                   ls_ece(y_true, y_score, sigma=sigma, noise=noise, **common),
                   binned_ece(y_true, y_score, n_bins=n_bins, **common),
                   sigma=sigma, n_bins=n_bins, estimator_name=name)
        return disp.plot(ax=ax, ref_line=ref_line, show_binned=show_binned, **kwargs)

    @classmethod
    def from_estimator(cls, estimator, X, y, *, sigma=0.1, n_bins=15, noise="gaussian",
                       response_method="predict_proba", n_points=100, name=None, ax=None, ref_line=True,
                       show_binned=True, **kwargs):
        """Compute the diagrams from a fitted classifier and plot them.

        Parameters
        ----------
        estimator : fitted classifier
            A classifier with ``classes_`` and ``predict_proba`` (or
            ``decision_function`` giving logits).
        X : array-like of shape (n_samples, n_features)
            Input data.
        y : array-like of shape (n_samples,)
            True labels.
        sigma : float, default=0.1
            Noise scale in logit units.
        n_bins : int, default=15
            Number of equal-width bins of the binned diagram.
        noise : {"gaussian", "uniform"}, default="gaussian"
            Noise distribution.
        response_method : {"predict_proba", "decision_function"}, default="predict_proba"
            Which output to read; ``decision_function`` is read as logits.
        n_points : int, default=100
            Points on the smooth curve.
        name : str, default=None
            Legend name; the estimator's class name by default.
        ax : matplotlib Axes, default=None
            Axes to draw on.
        ref_line : bool, default=True
            Draw the diagonal.
        show_binned : bool, default=True
            Draw the binned markers.
        **kwargs : dict
            Passed to ``ax.plot`` for the smooth curve.

        Returns
        -------
        display : LSReliabilityDisplay
            The plotted display.
        """
        if response_method not in ("predict_proba", "decision_function"):
            raise ValueError("LSReliabilityDisplay: response_method must be 'predict_proba' or "
                             f"'decision_function'; got {response_method!r}.")
        scores, extra = estimator_scores(estimator, X, response_method, "LSReliabilityDisplay")
        name = type(estimator).__name__ if name is None else name
        return cls.from_predictions(y, scores, sigma=sigma, n_bins=n_bins, noise=noise, n_points=n_points,
                                    name=name, ax=ax, ref_line=ref_line, show_binned=show_binned, **extra,
                                    **kwargs)
