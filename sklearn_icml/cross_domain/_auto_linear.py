"""AutoLinear: self-supervised encoders per domain, linear maps between their latent codes (S5)."""

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, RegressorMixin, TransformerMixin, clone
from sklearn.decomposition import PCA
from sklearn.exceptions import NotFittedError
from sklearn.metrics import r2_score
from sklearn.utils import check_array, check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from ..utils._random import draw_seed
from ..utils._sklearn_private import HasMethods, Interval, StrOptions, _fit_context
from ..utils._torch import as_numpy
from ..utils._torch_base import TorchEstimatorMixin
from ._bridges import fit_bridge, refine_in_output_space
from ._mae import MAE_CONSTRAINTS, MaskedAutoencoder, check_layer_sizes, check_scale

__all__ = ["AutoLinear"]

_ENCODER = [StrOptions({"mae", "pca"}), HasMethods(["fit", "transform", "inverse_transform"])]


class AutoLinear(ClassNamePrefixFeaturesOutMixin, RegressorMixin, TransformerMixin, TorchEstimatorMixin,
                 BaseEstimator):
    """Auto-Linear: one self-supervised encoder-decoder per domain, linear maps between the latent codes.

    Read more in the :ref:`User Guide <cross_domain>`.

    ``X`` holds measurements (e.g. seismic traces), ``y`` the property behind
    them (e.g. velocity logs). Each domain gets its own encoder-decoder
    (``encoder_x``, ``encoder_y``: masked autoencoders by default), trained
    without supervision on that domain's rows only: the paired rows' own half
    plus any unpaired pool (``X_unpaired``, ``y_unpaired``, of any lengths).
    The pairs then fit nothing but two linear maps between the frozen latent
    codes: ``bridge_inverse_`` (``z_x -> z_y``) and ``bridge_forward_``
    (``z_y -> z_x``). :meth:`predict` is inverse modelling,
    ``D_y(A E_x(x) + a)``; :meth:`predict_forward` is forward modelling,
    ``D_x(B E_y(y) + b)``.

    Parameters
    ----------
    encoder_x : {"mae", "pca"} or transformer, default="mae"
        Encoder-decoder of the measurements: a :class:`MaskedAutoencoder`
        with the settings below, :class:`~sklearn.decomposition.PCA`, or any
        transformer with ``inverse_transform`` (cloned and fitted when
        ``refit_encoders``, else used as fitted).
    encoder_y : {"mae", "pca"} or transformer, default="mae"
        Encoder-decoder of the property, as ``encoder_x``. Unused when ``y``
        has a single column: the target is then its own latent code.
    n_components_x : int, default=32
        Latent size of the measurements' encoder ("mae", "pca"), clipped to the
        data (features; rows for PCA).
    n_components_y : int, default=16
        Latent size of the property's encoder, clipped likewise.
    bridge : {"ridge", "pls", "linear"}, default="ridge"
        The linear maps: :class:`~sklearn.linear_model.RidgeCV` over
        ``bridge_alphas`` (leave-one-out choice of the penalty),
        partial least squares (the model of
        :class:`~sklearn.cross_decomposition.PLSRegression`, its weights by an
        SVD so that no power iteration can stop short; as many components as
        the smaller latent space, at most ``n_pairs - 1``, fewer where the
        residuals are already uncorrelated; always fitted on the latent codes)
        or least squares.
    bridge_alphas : array-like of float, default=None
        Penalties tried by the ridge bridges; ``None``: ``np.logspace(-4, 4, 17)``.
    bridge_space : {"output", "latent"}, default="output"
        Where the ridge and least-squares bridges are fitted. ``"latent"``:
        on the latent codes only (closed form). ``"output"``: from that fit,
        the map is refined through the frozen decoder of the target domain,
        so that the decoded predictions match the target rows (mean squared
        error over the standardised features plus the ridge penalty chosen
        on the latent codes, by L-BFGS). Applies where the target's decoder
        is a :class:`MaskedAutoencoder`; a linear orthonormal decoder (PCA)
        makes both the same up to the penalty's scaling, so PCA and other
        encoders keep the latent fit. Which to pick: with convolutional
        encoders on 2-D grids and few pairs (tens of pairs for maps of a
        thousand cells), choose ``"latent"``: the refinement then fits every
        decoded cell from too few pairs and inverts worse. On 1-D traces and
        logs both invert alike; ``"output"`` models the forward direction
        better, ``"latent"`` gives smoother (higher-SSIM) logs. The
        benchmark page compares both in both regimes.
    refit_encoders : bool, default=True
        Fit the encoders in :meth:`fit`. ``False``: ``encoder_x`` and
        ``encoder_y`` must be fitted transformers, kept frozen (the paper's
        pre-trained encoders); the unpaired pools are then not needed.
    architecture : {"mlp", "conv"}, default="mlp"
        Masked autoencoders' architecture (see :class:`MaskedAutoencoder`).
    input_shape_x, input_shape_y : tuple of int, default=None
        Grids of a row of ``X`` and of ``y`` for ``"conv"`` and patch masking.
    hidden_layer_sizes : tuple of int, default=(128, 128)
        Masked autoencoders' hidden widths ("mlp") or channels ("conv").
    mask_ratio : float, default=0.25
        Masked autoencoders' masking ratio.
    patch_size : int, default=1
        Masked autoencoders' patch side.
    max_iter : int, default=1500
        Masked autoencoders' optimiser steps, each.
    batch_size : int, default=128
        Masked autoencoders' rows per step.
    learning_rate : float, default=2e-3
        Masked autoencoders' initial step size.
    early_stopping : bool, default=False
        Masked autoencoders' early stopping on held-out rows (see
        :class:`MaskedAutoencoder`; their ``validation_scores_`` record it).
    validation_fraction : float, default=0.1
        Masked autoencoders' share of held-out rows under ``early_stopping``.
    n_iter_no_change : int, default=10
        Masked autoencoders' epochs without improvement tolerated under
        ``early_stopping``.
    tol : float, default=1e-4
        Masked autoencoders' minimal improvement of the validation loss.
    device : {"cpu", "auto", "cuda"}, "cuda:<index>" or torch.device, default="cpu"
        Where the masked autoencoders train and encode; the bridges are
        closed-form on the CPU.
    random_state : int, RandomState instance or None, default=None
        Seeds the two masked autoencoders (one seed each) and PCA.
    verbose : int, default=0
        Training logs of the masked autoencoders when positive.

    Attributes
    ----------
    encoder_x_ : transformer
        Fitted encoder-decoder of the measurements.
    encoder_y_ : transformer or None
        Fitted encoder-decoder of the property; None for a single target.
    bridge_inverse_ : estimator
        Linear map from ``X``'s latent codes to ``y``'s.
    bridge_forward_ : estimator
        Linear map from ``y``'s latent codes to ``X``'s.
    latent_r2_ : float
        R² of the inverse map fitted on the latent codes (before any
        output-space refinement) on the pairs' latent codes, variance
        weighted over the latent dimensions: the share of the property's
        latent variance that is linear in the measurements' latent code (how
        "auto-linear" the two latent spaces are).
    n_components_x_ : int
        Latent size of ``X`` (after clipping).
    n_iter_ : int
        Optimiser steps of the masked autoencoders fitted here (the larger
        of the two; 0 when none was fitted).
    n_components_y_ : int
        Latent size of ``y`` (1 for a single target).
    n_outputs_ : int
        Number of target columns.
    device_ : str
        Where the masked autoencoders ran.
    n_features_in_ : int
        Number of features seen in fit.
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Feature names, when X had string column names.

    See Also
    --------
    MaskedAutoencoder : The default encoder-decoder of each domain.
    sklearn.cross_decomposition.PLSRegression : A linear map between two linear latent spaces, fitted on pairs.

    Notes
    -----
    The unpaired pools are fit parameters declared through metadata routing:
    with ``sklearn.set_config(enable_metadata_routing=True)``, call
    ``set_fit_request(X_unpaired=True, y_unpaired=True)`` and
    :class:`~sklearn.pipeline.Pipeline` or
    :class:`~sklearn.model_selection.GridSearchCV` pass them to :meth:`fit`.
    Cross-validation splits fit parameters whose length equals the number of
    pairs like the pairs themselves; a pool of another length is passed whole.

    The paper learns the converters as linear layers between ViT token
    latents; its exact form (full, low-rank or factorised) was not available
    to us [verify]. Here the latent codes are vectors and each bridge is a
    full affine map, first fitted in closed form on the raw latent codes
    (by default ridge regression whose penalty is chosen by efficient
    leave-one-out on the pairs). The paper trains the converters on the
    pairs between frozen, pre-trained encoders *and decoders*; we read this
    as a loss on the decoded output [verify], so by default
    (``bridge_space="output"``) each map is then refined through the frozen
    decoder of its target domain, with the latent fit's penalty: the
    refinement fits what is compared (the decoded output), at the price of
    less smooth decoded logs; ``bridge_space="latent"`` keeps the
    closed-form maps. The default latent sizes (32 values for the
    measurements, 16 for the property) are those of the method's 1-D
    setting. :doc:`The benchmark page </benchmarks/auto_linear>` compares
    the masked-autoencoder and PCA codes with ridge regression on the raw
    traces at each number of pairs.
    With ``encoder_x="pca"``, ``encoder_y="pca"`` and no unpaired data,
    :meth:`predict` is PCA, then RidgeCV, then inverse PCA (reduced-rank
    ridge regression). A single target column is predicted
    from ``X``'s latent code directly (no ``y`` encoder); ``y_unpaired`` is
    then unused (a warning says so).

    References
    ----------
    .. [1] Feng, Y., Chen, Y., Jin, P., Feng, S. and Lin, Y. "Auto-Linear
       Phenomenon in Subsurface Imaging", Proceedings of the 41st
       International Conference on Machine Learning (ICML), PMLR 235, 2024.

    Examples
    --------
    >>> from sklearn_icml.cross_domain import AutoLinear
    >>> from sklearn_icml.datasets import convolutional_seismogram, make_layered_earth
    >>> V = make_layered_earth(300, n_cells=32, random_state=0)
    >>> S = convolutional_seismogram(V, n_samples=96)
    >>> model = AutoLinear(encoder_x="pca", encoder_y="pca", n_components_x=16, n_components_y=8)
    >>> model.fit(S[:200], V[:200]).predict(S[200:]).shape
    (100, 32)
    >>> model.predict_forward(V[200:]).shape
    (100, 96)
    >>> bool(0 < model.latent_r2_ <= 1)
    True
    """

    _parameter_constraints = {
        "encoder_x": _ENCODER,
        "encoder_y": _ENCODER,
        "n_components_x": [Interval(Integral, 1, None, closed="left")],
        "n_components_y": [Interval(Integral, 1, None, closed="left")],
        "bridge": [StrOptions({"ridge", "pls", "linear"})],
        "bridge_alphas": ["array-like", None],
        "bridge_space": [StrOptions({"output", "latent"})],
        "refit_encoders": ["boolean"],
        "input_shape_x": [tuple, list, None],
        "input_shape_y": [tuple, list, None],
        **MAE_CONSTRAINTS,
    }

    def __init__(self, encoder_x="mae", encoder_y="mae", *, n_components_x=32, n_components_y=16, bridge="ridge",
                 bridge_alphas=None, bridge_space="output", refit_encoders=True, architecture="mlp", input_shape_x=None,
                 input_shape_y=None, hidden_layer_sizes=(128, 128), mask_ratio=0.25, patch_size=1, max_iter=1500,
                 batch_size=128, learning_rate=2e-3, early_stopping=False, validation_fraction=0.1, n_iter_no_change=10,
                 tol=1e-4, device="cpu", random_state=None, verbose=0):
        self.encoder_x = encoder_x
        self.encoder_y = encoder_y
        self.n_components_x = n_components_x
        self.n_components_y = n_components_y
        self.bridge = bridge
        self.bridge_alphas = bridge_alphas
        self.bridge_space = bridge_space
        self.refit_encoders = refit_encoders
        self.architecture = architecture
        self.input_shape_x = input_shape_x
        self.input_shape_y = input_shape_y
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

    # -- encoders ------------------------------------------------------------------------------------

    def _make_encoder(self, spec, n_components, input_shape, seed, device):
        if isinstance(spec, str) and spec == "mae":
            return MaskedAutoencoder(
                n_components=n_components, architecture=self.architecture, input_shape=input_shape,
                hidden_layer_sizes=self.hidden_layer_sizes, mask_ratio=self.mask_ratio, patch_size=self.patch_size,
                max_iter=self.max_iter, batch_size=self.batch_size, learning_rate=self.learning_rate,
                early_stopping=self.early_stopping, validation_fraction=self.validation_fraction,
                n_iter_no_change=self.n_iter_no_change, tol=self.tol, device=device, random_state=seed,
                verbose=self.verbose)
        if isinstance(spec, str) and spec == "pca":
            return PCA(n_components=n_components, random_state=seed)
        return clone(spec)

    def _fitted_encoder(self, spec, label, pool, n_components, input_shape, seed, device):
        name = type(self).__name__
        if not self.refit_encoders:
            if isinstance(spec, str):
                raise ValueError(f"{name}: refit_encoders=False needs fitted transformers as {label}; got {spec!r}.")
            try:
                check_is_fitted(spec)
            except NotFittedError as exc:
                raise ValueError(f"{name}: refit_encoders=False but {label} is not fitted.") from exc
            return spec
        return self._make_encoder(spec, n_components, input_shape, seed, device).fit(pool)

    @staticmethod
    def _clip(n_components, spec, pool):
        limit = pool.shape[1]
        if isinstance(spec, str) and spec == "pca":
            limit = min(limit, pool.shape[0])
        return int(min(n_components, limit))

    def _check_pool(self, pool, label, width, domain):
        name = type(self).__name__
        if pool is None:
            return None
        pool = check_array(as_numpy(pool), dtype=np.float64, ensure_2d=False, input_name=label)
        if pool.ndim == 1:
            pool = pool.reshape(-1, 1) if width == 1 else pool.reshape(1, -1)
        if pool.ndim != 2 or pool.shape[1] != width:
            raise ValueError(f"{name}: {label} must have {width} columns like {domain}; got shape {pool.shape}.")
        return pool

    # -- fit -----------------------------------------------------------------------------------------

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, X_unpaired=None, y_unpaired=None):
        """Fit the encoders on each domain's rows, then the two linear maps on the pairs.

        Parameters
        ----------
        X : array-like of shape (n_pairs, n_features)
            Measurements of the pairs.
        y : array-like of shape (n_pairs,) or (n_pairs, n_outputs)
            Properties of the pairs.
        X_unpaired : array-like of shape (n_x_unpaired, n_features), default=None
            More measurements without properties; they only train
            ``encoder_x``.
        y_unpaired : array-like of shape (n_y_unpaired, n_outputs), default=None
            More properties without measurements (from other models); they
            only train ``encoder_y``.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        name = type(self).__name__
        if self.bridge_alphas is not None:
            alphas = np.asarray(self.bridge_alphas, dtype=object).reshape(-1)
            if alphas.size == 0 or not all(isinstance(a, Real) and not isinstance(a, bool) and 0 < a < np.inf
                                           for a in alphas):
                raise ValueError(f"{name}: bridge_alphas must be a non-empty list of positive finite penalties (or "
                                 f"None for the default grid); got {self.bridge_alphas!r}.")
        with self._torch_fit_context():
            X, y = validate_data(self, as_numpy(X), as_numpy(y), dtype=np.float64, multi_output=True, y_numeric=True,
                                 ensure_min_samples=2)
            single = y.ndim == 1 or y.shape[1] == 1
            Y = y.reshape(len(y), -1)
            self.n_outputs_ = Y.shape[1]
            X_unpaired = self._check_pool(X_unpaired, "X_unpaired", X.shape[1], "X")
            y_unpaired = self._check_pool(y_unpaired, "y_unpaired", Y.shape[1], "y")
            for label, A in (("X", X), ("y", Y), ("X_unpaired", X_unpaired), ("y_unpaired", y_unpaired)):
                if A is not None:
                    check_scale(A, name, label)
            if single and y_unpaired is not None:
                warnings.warn(f"{name}: y has a single column, which is its own latent code; y_unpaired is unused.",
                              UserWarning, stacklevel=2)
            check_layer_sizes(name, self.hidden_layer_sizes)
            rng = check_random_state(self.random_state)
            seed_x, seed_y = draw_seed(rng), draw_seed(rng)
            device_name = self.device_  # the resolved device, passed on to the encoders

            pool_x = X if X_unpaired is None else np.vstack([X, X_unpaired])
            self.encoder_x_ = self._fitted_encoder(self.encoder_x, "encoder_x", pool_x,
                                                   self._clip(self.n_components_x, self.encoder_x, pool_x),
                                                   self.input_shape_x, seed_x, device_name)
            Z_x = np.asarray(self.encoder_x_.transform(X), dtype=np.float64)
            if single:
                self.encoder_y_ = None
                Z_y = Y[:, 0]
            else:
                pool_y = Y if y_unpaired is None else np.vstack([Y, y_unpaired])
                self.encoder_y_ = self._fitted_encoder(self.encoder_y, "encoder_y", pool_y,
                                                       self._clip(self.n_components_y, self.encoder_y, pool_y),
                                                       self.input_shape_y, seed_y, device_name)
                Z_y = np.asarray(self.encoder_y_.transform(Y), dtype=np.float64)
            self.n_components_x_ = Z_x.shape[1]
            self.n_components_y_ = 1 if Z_y.ndim == 1 else Z_y.shape[1]
            Z_y2 = Z_y.reshape(len(Z_y), -1)
            latent_inverse, self.bridge_inverse_ = self._bridge(Z_x, Z_y, Y, self.encoder_y_)
            _, self.bridge_forward_ = self._bridge(Z_y2, Z_x, X, self.encoder_x_)
            self.n_iter_ = max([getattr(e, "n_iter_", 0) for e in (self.encoder_x_, self.encoder_y_)
                                if isinstance(e, MaskedAutoencoder)] or [0])
            self.latent_r2_ = float(r2_score(Z_y, latent_inverse.predict(Z_x), multioutput="variance_weighted"))
            self._y_1d = y.ndim == 1
        return self

    def _bridge(self, Z_in, Z_out, rows_out, decoder):
        """The latent fit, and the map used: that fit refined through ``decoder`` where ``bridge_space="output"``."""
        latent = fit_bridge(self.bridge, Z_in, Z_out, self.bridge_alphas)
        if self.bridge_space == "output" and self.bridge != "pls" and isinstance(decoder, MaskedAutoencoder):
            return latent, refine_in_output_space(self.bridge, latent, Z_in, rows_out, decoder, self.bridge_alphas)
        return latent, latent

    # -- prediction ----------------------------------------------------------------------------------

    def transform(self, X):
        """Latent codes of measurements.

        Parameters
        ----------
        X : array-like of shape (n_samples, ``n_features_in_``)
            Measurements.

        Returns
        -------
        ndarray of shape (n_samples, ``n_components_x_``)
            ``encoder_x_.transform(X)``.
        """
        check_is_fitted(self)
        X = validate_data(self, as_numpy(X), dtype=np.float64, reset=False)
        return np.asarray(self.encoder_x_.transform(X), dtype=np.float64)

    def latent_y(self, y):
        """Latent codes of properties.

        Parameters
        ----------
        y : array-like of shape (n_samples, ``n_outputs_``) or (n_samples,)
            Properties.

        Returns
        -------
        ndarray of shape (n_samples, ``n_components_y_``)
            ``encoder_y_.transform(y)``, or ``y`` itself as a column for a
            single target.
        """
        check_is_fitted(self)
        Y = self._check_targets(y)
        if self.encoder_y_ is None:
            return Y
        return np.asarray(self.encoder_y_.transform(Y), dtype=np.float64)

    def _check_targets(self, y):
        Y = check_array(as_numpy(y), dtype=np.float64, ensure_2d=False, input_name="y")
        Y = Y.reshape(-1, 1) if Y.ndim == 1 and self.n_outputs_ == 1 else Y
        if Y.ndim != 2 or Y.shape[1] != self.n_outputs_:
            raise ValueError(f"{type(self).__name__}: y must have {self.n_outputs_} columns, as in fit; got shape "
                             f"{Y.shape}.")
        return Y

    def predict(self, X):
        """Inverse modelling: properties from measurements, ``D_y(A E_x(x) + a)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, ``n_features_in_``)
            Measurements.

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, ``n_outputs_``)
            Predicted properties (1-D when ``y`` was 1-D in fit).
        """
        check_is_fitted(self)
        Z_y = self.bridge_inverse_.predict(self.transform(X))
        if self.encoder_y_ is None:
            out = np.asarray(Z_y, dtype=np.float64).reshape(-1, 1)
        else:
            out = np.asarray(self.encoder_y_.inverse_transform(Z_y.reshape(len(Z_y), -1)), dtype=np.float64)
        return out[:, 0] if self._y_1d else out

    def predict_forward(self, y):
        """Forward modelling: measurements from properties, ``D_x(B E_y(y) + b)``.

        Parameters
        ----------
        y : array-like of shape (n_samples, ``n_outputs_``) or (n_samples,)
            Properties.

        Returns
        -------
        ndarray of shape (n_samples, ``n_features_in_``)
            Predicted measurements.
        """
        check_is_fitted(self)
        Z_y = self.latent_y(y)
        Z_x = np.asarray(self.bridge_forward_.predict(Z_y), dtype=np.float64).reshape(len(Z_y), -1)
        return np.asarray(self.encoder_x_.inverse_transform(Z_x), dtype=np.float64)

    @property
    def _n_features_out(self):
        return self.n_components_x_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = True
        return tags
