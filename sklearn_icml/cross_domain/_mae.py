"""MaskedAutoencoder: a self-supervised encoder-decoder of one domain, trained by masked reconstruction (S5).

Trained through :class:`~sklearn_icml.utils.Trainer` with a custom
train step (mask random inputs or patches, reconstruct the whole row).
``max_iter`` counts optimiser steps, as in the Auto-Linear notes; it is turned
into whole epochs of the layer (``ceil(max_iter / batches per epoch)``).
"""

import copy
import math
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from ..utils._sklearn_private import Interval, StrOptions, _fit_context
from ..utils._torch import as_numpy, to_numpy, to_tensor
from ..utils._torch_base import TorchEstimatorMixin
from ..utils._validation import standardization

__all__ = ["MaskedAutoencoder"]

_INFERENCE_ROWS = 4096


#: Constraints of the masked-autoencoder settings :class:`AutoLinear` passes through.
MAE_CONSTRAINTS = {
    "architecture": [StrOptions({"mlp", "conv"})],
    "hidden_layer_sizes": [tuple, list],
    "mask_ratio": [Interval(Real, 0, 1, closed="left")],
    "patch_size": [Interval(Integral, 1, None, closed="left")],
    # the networks train in float32: a larger step size cannot even be represented
    "learning_rate": [Interval(Real, 0, float(np.finfo(np.float32).max), closed="neither")],
    "random_state": ["random_state"],
}


def check_scale(A, name, label):
    """ValueError naming the estimator when the columns of ``A`` are too large to standardise in float64."""
    with np.errstate(over="ignore", invalid="ignore"):
        finite = np.all(np.isfinite(A.std(axis=0))) and np.all(np.isfinite(A.mean(axis=0)))
    if not finite:
        raise ValueError(f"{name}: the values of {label} are too large to standardise (largest magnitude "
                         f"{float(np.abs(A).max()):.3g}); rescale them.")


def check_layer_sizes(name, sizes, label="hidden_layer_sizes"):
    """``sizes`` as a tuple of positive ints, or a ValueError naming the estimator."""
    sizes = tuple(sizes)
    if not all(isinstance(h, Integral) and not isinstance(h, bool) and h >= 1 for h in sizes):
        raise ValueError(f"{name}: {label} must hold positive integers; got {sizes!r}.")
    return sizes


class MaskedAutoencoder(ClassNamePrefixFeaturesOutMixin, TransformerMixin, TorchEstimatorMixin, BaseEstimator):
    """Masked autoencoder of one domain: self-supervised latent codes and a decoder back to the data.

    Read more in the :ref:`User Guide <cross_domain>`.

    During training a random ``mask_ratio`` of each row's inputs (single
    positions, or patches of ``patch_size``) is replaced by a learned mask
    token, and the network learns to reconstruct the whole row from the rest.
    :meth:`transform` encodes full rows into ``n_components`` latent values,
    :meth:`inverse_transform` decodes latent values back to rows in the units
    of ``X``. This is the per-domain encoder-decoder of Auto-Linear
    (:class:`AutoLinear`), usable on its own as a nonlinear, denoising
    alternative to :class:`~sklearn.decomposition.PCA`.

    Parameters
    ----------
    n_components : int, default=16
        Size of the latent code.
    architecture : {"mlp", "conv"}, default="mlp"
        ``"mlp"``: fully connected layers. ``"conv"``: strided convolutions
        over the grid ``input_shape`` (1-D signals or 2-D images; rows stay
        flat), a linear map to the latent code, and transposed convolutions
        back.
    input_shape : tuple of int, default=None
        Grid of a row for ``"conv"`` and for patch masking, ``(length,)`` or
        ``(height, width)`` with product ``n_features``; ``None`` means
        ``(n_features,)``.
    hidden_layer_sizes : tuple of int, default=(128, 128)
        ``"mlp"``: widths of the encoder's hidden layers (the decoder mirrors
        them). ``"conv"``: channels of the successive convolutions, each of
        which halves the grid.
    mask_ratio : float in [0, 1), default=0.25
        Share of the patches masked in each row at each step.
    patch_size : int, default=1
        Side of a masked patch on the grid (1: single positions).
    max_iter : int, default=1500
        Optimiser steps (mini-batches), rounded up to whole epochs.
    batch_size : int, default=128
        Rows per step (clipped to the number of rows).
    learning_rate : float, default=2e-3
        Adam's initial step size, annealed to 0 by a cosine schedule over the
        steps.
    early_stopping : bool, default=False
        Hold out ``validation_fraction`` of the rows and stop when their
        masked-reconstruction loss has not improved by ``tol`` for more than
        ``n_iter_no_change`` epochs; the network of the best validation loss
        is kept. Without it every step of ``max_iter`` runs: the training loss
        over fresh random masks is too noisy to stop on.
    validation_fraction : float, default=0.1
        Share of the rows held out when ``early_stopping``.
    n_iter_no_change : int, default=10
        Epochs without an improvement of at least ``tol`` tolerated (with
        ``early_stopping``).
    tol : float, default=1e-4
        Minimal decrease of the validation loss counted as an improvement.
    device : {"cpu", "auto", "cuda"}, "cuda:<index>" or torch.device, default="cpu"
        Where training and encoding run.
    random_state : int, RandomState instance or None, default=None
        Seeds the initial weights, the batch order and the masks.
    verbose : int, default=0
        Per-epoch training log when positive.

    Attributes
    ----------
    module_ : torch.nn.Module
        The trained encoder-decoder, on the CPU, in float64.
    mean_ : ndarray of shape (``n_features_in_``,)
        Subtracted before encoding ("mlp": per feature; "conv": one value
        repeated).
    scale_ : ndarray of shape (``n_features_in_``,)
        Divided after subtracting ``mean_``.
    n_components_ : int
        Size of the latent code.
    input_shape_ : tuple of int
        The grid of a row.
    loss_curve_ : list of float
        Mean masked-reconstruction loss (on standardised data) of each epoch.
    validation_scores_ : list of float or None
        Masked-reconstruction loss of the held-out rows at each epoch (lower
        is better) with ``early_stopping``, else None.
    n_iter_ : int
        Optimiser steps run (``max_iter`` rounded up to whole epochs, fewer
        when early stopping ends the training).
    device_ : str
        Where the network was trained.
    n_features_in_ : int
        Number of features seen in fit.
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Feature names, when X had string column names.

    See Also
    --------
    AutoLinear : Two such autoencoders joined by linear maps between their latent codes.
    sklearn.decomposition.PCA : The linear autoencoder.

    Notes
    -----
    The paper's masked autoencoders are vision transformers on OpenFWI's
    70 x 70 maps and 5 x 1000 x 70 shot gathers; their sizes and masking ratio
    were not available to us [verify]. Here the encoder is an MLP or a small
    convolutional network, and masking follows MAE (He et al., 2022): a fixed
    share of patches per row, drawn anew at every step, replaced by a learned
    mask token (one value per input position, since the networks see every
    position rather than a token subset). Unlike MAE, the loss averages the
    squared error over all positions, masked and visible: the encoder later
    meets full rows, and their codes must decode to the rows themselves.
    Inputs are standardised per feature ("mlp") or by one global mean and
    standard deviation ("conv", which keeps the grid's relative amplitudes,
    as OpenFWI's per-dataset normalisation does); decoding undoes it. Training
    runs in float32 with Adam and a cosine learning-rate schedule over the
    steps; the trained network is kept in float64 so that encoding does not
    depend on how rows are batched.

    References
    ----------
    .. [1] Feng, Y., Chen, Y., Jin, P., Feng, S. and Lin, Y. "Auto-Linear
       Phenomenon in Subsurface Imaging", Proceedings of the 41st
       International Conference on Machine Learning (ICML), PMLR 235, 2024.
    .. [2] He, K., Chen, X., Xie, S., Li, Y., Dollar, P. and Girshick, R.
       "Masked Autoencoders Are Scalable Vision Learners", CVPR 2022.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.cross_domain import MaskedAutoencoder
    >>> rng = np.random.RandomState(0)
    >>> X = rng.normal(size=(200, 3)) @ rng.normal(size=(3, 12))
    >>> mae = MaskedAutoencoder(n_components=3, hidden_layer_sizes=(32,), max_iter=200, batch_size=50,
    ...                         random_state=0).fit(X)
    >>> mae.transform(X).shape
    (200, 3)
    >>> bool(mae.score(X) > -0.1 * X.var(axis=0).mean())  # reconstructs most of the variance
    True
    """

    _parameter_constraints = {
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "input_shape": [tuple, list, None],
        **MAE_CONSTRAINTS,
    }

    def __init__(self, n_components=16, *, architecture="mlp", input_shape=None, hidden_layer_sizes=(128, 128),
                 mask_ratio=0.25, patch_size=1, max_iter=1500, batch_size=128, learning_rate=2e-3,
                 early_stopping=False, validation_fraction=0.1, n_iter_no_change=10, tol=1e-4, device="cpu",
                 random_state=None, verbose=0):
        self.n_components = n_components
        self.architecture = architecture
        self.input_shape = input_shape
        self.hidden_layer_sizes = hidden_layer_sizes
        self.mask_ratio = mask_ratio
        self.patch_size = patch_size
        self.max_iter = max_iter
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.tol = tol
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    def _check_shape(self, n_features):
        name = type(self).__name__
        if self.input_shape is None:
            return (n_features,)
        shape = check_layer_sizes(name, self.input_shape, "input_shape")
        if len(shape) not in (1, 2) or math.prod(shape) != n_features:
            raise ValueError(f"{name}: input_shape must be (length,) or (height, width) with product n_features="
                             f"{n_features}; got {self.input_shape!r}.")
        return shape

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Train the encoder and decoder by masked reconstruction of the rows of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows of one domain (unlabelled).
        y : None
            Ignored.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        import torch

        from ..utils import Trainer
        from ._mae_networks import ConvAutoencoder, MLPAutoencoder, masked_reconstruction_step

        name = type(self).__name__
        with self._torch_fit_context() as ctx:
            X = validate_data(self, as_numpy(X), dtype=np.float64)
            check_scale(X, name, "X")
            n, p = X.shape
            sizes = check_layer_sizes(name, self.hidden_layer_sizes)
            shape = self._check_shape(p)
            if self.architecture == "conv" and not sizes:
                raise ValueError(f"{name}: architecture='conv' needs at least one convolution in hidden_layer_sizes; "
                                 f"got {self.hidden_layer_sizes!r}.")
            if self.architecture == "mlp":
                self.mean_, self.scale_ = standardization(X)
            else:  # one mean and scale for the whole field, so the convolutions see its spatial structure
                self.mean_, self.scale_ = (np.full(p, m[0]) for m in standardization(X.reshape(-1, 1)))
            self.input_shape_ = shape
            self.n_components_ = int(self.n_components)
            generator = ctx.generator
            if self.architecture == "mlp":
                module = MLPAutoencoder(p, sizes, self.n_components_, generator)
            else:
                module = ConvAutoencoder(shape, sizes, self.n_components_, generator)
            batch_size = min(int(self.batch_size), n)
            batches = math.ceil(n / batch_size)
            epochs = math.ceil(self.max_iter / batches)
            step = masked_reconstruction_step(shape, int(self.patch_size), float(self.mask_ratio), generator)
            Xs = ((X - self.mean_) / self.scale_).astype(np.float32)
            result = Trainer(
                train_step=step, max_iter=epochs, batch_size=batch_size, learning_rate=self.learning_rate,
                optimizer="adam", early_stopping=self.early_stopping, validation_fraction=self.validation_fraction,
                n_iter_no_change=self.n_iter_no_change if self.early_stopping else epochs,
                tol=self.tol if self.early_stopping else 0.0, lr_schedule="cosine", lr_schedule_interval="batch",
                device=ctx.device, random_state=generator, verbose=self.verbose, name=name).fit(module, Xs, None)
            self.module_ = result.module.to(dtype=torch.float64)
        self.loss_curve_ = list(result.loss_curve)
        self.validation_scores_ = result.validation_scores
        self.n_iter_ = result.n_iter * batches
        return self

    def _inference_module(self):
        import torch

        if self.device_.startswith("cuda") and torch.cuda.is_available():
            return copy.deepcopy(self.module_).to(self.device_), torch.device(self.device_)
        return self.module_, torch.device("cpu")

    def _apply(self, A, method):
        import torch

        module, device = self._inference_module()
        out = []
        with self._torch_context(), torch.no_grad():
            for lo in range(0, A.shape[0], _INFERENCE_ROWS):
                chunk = to_tensor(A[lo:lo + _INFERENCE_ROWS], device, torch.float64)
                out.append(to_numpy(getattr(module, method)(chunk), np.float64))
        return np.concatenate(out) if out else np.zeros((0, self.n_components_ if method == "encode" else
                                                          self.n_features_in_))

    def transform(self, X):
        """Encode rows into their latent codes.

        Parameters
        ----------
        X : array-like of shape (n_samples, ``n_features_in_``)
            Rows of the domain.

        Returns
        -------
        ndarray of shape (n_samples, ``n_components_``)
            Latent codes.
        """
        check_is_fitted(self)
        X = validate_data(self, as_numpy(X), dtype=np.float64, reset=False)
        return self._apply((X - self.mean_) / self.scale_, "encode")

    def inverse_transform(self, X):
        """Decode latent codes into rows, in the units of the training data.

        Parameters
        ----------
        X : array-like of shape (n_samples, ``n_components_``)
            Latent codes.

        Returns
        -------
        ndarray of shape (n_samples, ``n_features_in_``)
            Decoded rows.
        """
        from sklearn.utils import check_array

        check_is_fitted(self)
        Z = check_array(as_numpy(X), dtype=np.float64)
        if Z.shape[1] != self.n_components_:
            raise ValueError(f"{type(self).__name__}: inverse_transform expects {self.n_components_} latent "
                             f"columns; got {Z.shape[1]}.")
        return self._apply(Z, "decode") * self.scale_ + self.mean_

    def score(self, X, y=None):
        """Negative mean squared reconstruction error of full (unmasked) rows, in the units of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, ``n_features_in_``)
            Rows of the domain.
        y : None
            Ignored.

        Returns
        -------
        float
            ``-mean((inverse_transform(transform(X)) - X) ** 2)``; higher is better.
        """
        check_is_fitted(self)
        X = validate_data(self, as_numpy(X), dtype=np.float64, reset=False)
        X_hat = self._apply(self._apply((X - self.mean_) / self.scale_, "encode"), "decode") * self.scale_ + self.mean_
        return -float(np.mean((X_hat - X) ** 2))

    @property
    def _n_features_out(self):
        return self.n_components_
