"""LeftInvertibleWGAN: a Wasserstein GAN whose generator keeps a Lipschitz left inverse (S2).

The estimator: validation, standardisation, the certified bound and the
public methods. The adversarial loop is in :mod:`._wgan_training` (it cannot
be the training layer's ``Trainer``; that module says why), the networks
and their Lipschitz bounds in :mod:`._wgan_nets`, the bound in :mod:`._wgan_bound`.
"""

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_array, check_is_fitted, validate_data

from ..utils._sklearn_private import Interval, StrOptions, _fit_context
from ..utils._torch import as_numpy, forward_float64, to_numpy, to_tensor, torch_generator
from ..utils._torch_base import TorchEstimatorMixin
from ..utils._validation import standardization

__all__ = ["LeftInvertibleWGAN"]

#: Latent draws of the Monte Carlo estimate of the inverse error.
N_MONTE_CARLO = 10_000


class LeftInvertibleWGAN(ClassNamePrefixFeaturesOutMixin, TransformerMixin, TorchEstimatorMixin, BaseEstimator):
    """Wasserstein GAN with a left-invertible generator, which keeps away from its training data.

    The generator ``g`` maps a latent law U on R^d to the data space and is
    trained as a WGAN with a gradient penalty, plus a penalty for lacking a
    Lipschitz left inverse: an inverse network ``h``, trained on generated
    points only, and the term ``inverse_penalty * E ||h(g(z)) - z||^2`` in the
    generator's loss (LIPERM, Vardanyan et al., ICML 2024). A left-invertible
    generator cannot collapse onto the n training points: after fitting,
    :attr:`lower_bound_` certifies how far ``g#U`` stays from them in W1.

    Read more in the :ref:`User Guide <wgan>`.

    Parameters
    ----------
    latent_dim : int or "auto", default="auto"
        Latent dimension d; ``"auto"`` is ``min(2, n_features)``. It may not
        exceed the number of features (no continuous map from a higher
        dimension has a left inverse).
    latent_distribution : {"gaussian", "uniform"}, default="gaussian"
        The latent law: standard normal, or uniform on ``[0, 1]^d``.
    architecture : {"mlp", "injective_mlp"}, default="mlp"
        ``"mlp"``: ReLU perceptrons for the generator and the critic and a
        LeakyReLU perceptron for the learned inverse (the paper's practice). ``"injective_mlp"``: a
        generator of full-column-rank layers of non-decreasing width (from d
        to n_features, each hidden width clipped to that range) with an exact
        inverse by pseudo-inverses; the inverse penalty then weighs
        ``sum_i max(0, log(1 / sigma_min(A_i)))``.
    hidden_layer_sizes : array-like of int, default=(128, 128, 128)
        Hidden widths of the generator and the critic (reversed for the
        inverse network).
    inverse_penalty : float, default=2.0
        The weight lambda of the inverse penalty; 0 gives a plain WGAN-GP (the inverse network is then still
        fitted to the generated points, for :meth:`transform` and the bound,
        but never moves the generator).
    gradient_penalty : float, default=1.0
        Coefficient of the critic's ``E (||grad D(x)|| - 1)^2``.
    gp_at : {"real", "interpolate"}, default="real"
        Where the gradient penalty is evaluated: the real points (the
        authors' code) or random interpolations of real and generated points
        (Gulrajani et al.).
    critic_loss : {"wasserstein", "hinge"}, default="wasserstein"
        The critic's objective, gradient penalty added: ``"wasserstein"``
        minimises ``E D(g(z)) - E D(x)`` (the form the paper's analysis
        assumes); ``"hinge"`` minimises ``E relu(1 - D(x)) + E relu(1 +
        D(g(z)))`` (the form of the authors' code). The generator minimises
        ``-E D(g(z))`` with either.
    n_critic : int, default=5
        Critic steps per generator iteration.
    learning_rate : float, default=1e-4
        Adam's step size for the three networks.
    betas : tuple of float, default=(0.5, 0.999)
        Adam's betas.
    batch_size : int, default=200
        Real rows per critic step and latent draws per step (clipped to the
        number of samples).
    max_iter : int, default=2000
        Generator iterations (each after ``n_critic`` critic steps).
    early_stopping : bool, default=False
        Hold out ``validation_fraction`` of the rows (at most 2000 of them
        are used) and measure the exact W1 distance between them and the
        generator's image of a fixed latent sample of the same size (the
        measure of :meth:`score`) every ``max(1, max_iter // 100)`` generator
        iterations; stop when it has not decreased by at least ``tol`` for
        more than ``n_iter_no_change`` of these checks and keep the networks
        of the best check. Off, all ``max_iter`` iterations run (see Notes).
    validation_fraction : float in (0, 1), default=0.1
        Share of the rows held out for early stopping (drawn from
        ``random_state``); the generator trains on, and :attr:`lower_bound_`
        certifies against, the other rows.
    n_iter_no_change : int >= 1, default=10
        Checks of the held-out W1 without an improvement tolerated (with
        the default 100 checks per fit, a tenth of ``max_iter``).
    tol : float >= 0, default=1e-4
        Minimal decrease of the held-out W1 (in X's units) that counts as an
        improvement.
    standardize : bool, default=True
        Train on standardised features (the outputs are in X's units either
        way).
    device : {"cpu", "auto", "cuda"}, "cuda:<index>" or torch.device, default="cpu"
        Where to train.
    random_state : int, RandomState instance or None, default=None
        Seeds the weights, the batches, the latent draws and the bound's
        Monte Carlo draws.
    verbose : int, default=0
        About 20 progress lines during the fit (every iteration at 2).

    Attributes
    ----------
    generator_ : torch.nn.Module
        g, from standardised latent codes to standardised features (CPU,
        eval mode).
    inverse_ : torch.nn.Module
        h, from standardised features to latent codes: the learned network,
        or the exact inverse of the injective generator.
    critic_ : torch.nn.Module
        The critic D.
    latent_dim_ : int
        The latent dimension used.
    mean_ : ndarray of shape (n_features,)
        Feature means subtracted before training (0 when not ``standardize``).
    scale_ : ndarray of shape (n_features,)
        Feature scales divided out (1 when not ``standardize`` or for a
        constant feature).
    loss_history_ : dict of ndarray
        Per generator iteration: ``"critic"`` (critic loss with the gradient
        penalty, mean over its steps, in the form of ``critic_loss``), ``"wasserstein"`` (the critic's
        estimate ``E D(real) - E D(fake)``), ``"generator"`` (``-E D(g(z))``)
        and ``"inverse"`` (mean squared ``h(g(z)) - z``, or the singular-value
        penalty of the injective generator).
    n_iter_ : int
        Generator iterations run.
    loss_curve_ : ndarray of shape (``n_iter_``,)
        The critic's Wasserstein estimate ``E D(real) - E D(fake)`` per
        generator iteration (``loss_history_["wasserstein"]``): the distance
        the generator minimises, as the critic of that iteration sees it.
    validation_scores_ : list of float or None
        The held-out W1 distance (X's units, lower is better) at each check
        with ``early_stopping``; None otherwise.
    best_validation_score_ : float or None
        Its smallest value, that of the networks kept; None without
        ``early_stopping``.
    inverse_error_ : float
        Monte Carlo estimate of ``E ||h(g(Z)) - Z||`` (latent units, 10,000
        draws).
    inverse_error_upper_ : float
        Its upper confidence bound (level 0.999, normal approximation): the
        eps of the bound.
    quantization_error_lower_ : float
        Lower bound on the n-point quantisation error e_n(U) of the latent
        law (ball covering; n the number of training rows).
    lipschitz_inverse_upper_ : float
        Upper bound on the Lipschitz constant of :meth:`transform` (X's units
        to latent codes): product of the spectral norms of h's layers (or of
        the pseudo-inverses over the slopes) over the smallest feature scale.
    lower_bound_ : float
        Certified lower bound on W1(g#U, training data) in X's units:
        ``max(0, (quantization_error_lower_ - inverse_error_upper_) /
        lipschitz_inverse_upper_)``.
    n_features_in_ : int
        Number of features.
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Names of the features, when X has string column names.
    device_ : str
        Where the fit ran.

    See Also
    --------
    sklearn_icml.metrics.wasserstein1 : The distance of :meth:`score`.
    sklearn_icml.metrics.dcr_ratio : Distance-to-closest-record ratio (replication check).
    sklearn_icml.metrics.replication_score : Share of near copies of training points.
    sklearn.mixture.GaussianMixture : A density model that also samples.

    Notes
    -----
    The bound (our derivation from the paper's argument): for an L-Lipschitz
    h and ``eps = E ||h(g(Z)) - Z||``, ``e_n(U) <= W1(U, h#P_n) <= eps + L *
    W1(g#U, P_n)``, because ``h#P_n`` sits on n points. e_n(U) is at least
    ``d / (d + 1) (n V_d f_max)^{-1/d}`` (``V_d`` the unit-ball volume,
    ``f_max`` the latent density's maximum). It never exceeds the truth up to
    the 0.999 confidence of the Monte Carlo bound on eps. With a learned
    inverse in low dimension it is usually 0 (eps exceeds e_n); the
    injective architecture has eps at rounding level and a positive bound.
    W1 between a finite sample of the generator and the training points is
    on average at least W1(g#U, P_n), so the bound is also below the sampled
    distance that :func:`~sklearn_icml.metrics.wasserstein1` measures.

    As in the authors' Swiss-roll code: ReLU generator and critic, a
    LeakyReLU(0.2) inverse network of the generator's widths trained only
    on generated points, the
    plain mean squared inverse error weighted by ``inverse_penalty``
    (2 on the roll), the penalty ``(||grad D(x)|| - 1)^2`` at the real points
    with coefficient 1, 5 critic steps per generator step, Adam (1e-4,
    betas (0.5, 0.999)) for the three networks, batch 200, and one joint
    step of the generator and the inverse on
    ``-D(g(z)) + inverse_penalty * ||h(g(z)) - z||^2``. Where we differ:
    the networks default to width 128 instead of 512 (CPU budgets); by
    default the critic minimises the Wasserstein form ``E D(g(z)) - E D(x)``
    that the paper's W1 analysis assumes, whereas the code the authors ran
    (labml's WGAN losses) minimises the hinge form ``E relu(1 - D(x)) + E
    relu(1 + D(g(z)))``: ``critic_loss="hinge"`` trains as their code does.
    While every critic score lies in (-1, 1) the two forms differ by the
    constant 2 and take the same steps; the hinge form stops pushing a score
    once it is past the margin. Our own choices: the injective
    generator's LeakyReLU slope is 0.5 (its inverse's Lipschitz bound grows
    as slope^{-(K-1)}) and its penalty is clipped at 0 so it never rewards
    growing singular values.

    :meth:`sample`, :meth:`transform`, :meth:`inverse_transform` and
    :meth:`score` compute in float64 on the CPU.

    By default training runs ``max_iter`` generator iterations: the critic's
    loss estimates a distance that every generator step moves, so neither
    training loss is a quantity whose stall means convergence (as in the
    WGAN literature, the number of iterations is the budget), and there is
    no stopping on them. ``early_stopping`` stops instead on a measure the
    training does not move by itself: the exact W1 distance from held-out
    rows to the generator's image of a fixed latent sample (no critic
    involved, so it does not drift with the critic; the latent sample is
    fixed, so it changes only when the generator does).

    References
    ----------
    .. [1] Vardanyan, E., Hunanyan, S., Galstyan, T., Minasyan, A. and
       Dalalyan, A. S. "Statistically Optimal Generative Modeling with Maximum
       Deviation from the Empirical Distribution", ICML 2024.
    .. [2] Gulrajani, I., Ahmed, F., Arjovsky, M., Dumoulin, V. and Courville,
       A. "Improved Training of Wasserstein GANs", NeurIPS 2017.

    Examples
    --------
    >>> from sklearn_icml.datasets import make_swiss_roll_2d
    >>> from sklearn_icml.generative import LeftInvertibleWGAN
    >>> X, _ = make_swiss_roll_2d(200, random_state=0)
    >>> gan = LeftInvertibleWGAN(hidden_layer_sizes=(16, 16), max_iter=20, random_state=0).fit(X)
    >>> gan.sample(5).shape, gan.transform(X[:3]).shape
    ((5, 2), (3, 2))
    >>> gan.lower_bound_ >= 0.0
    True
    """

    _parameter_constraints: dict = {
        "latent_dim": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "latent_distribution": [StrOptions({"gaussian", "uniform"})],
        "architecture": [StrOptions({"mlp", "injective_mlp"})],
        "hidden_layer_sizes": ["array-like"],
        "inverse_penalty": [Interval(Real, 0, 1e6, closed="both")],
        "gradient_penalty": [Interval(Real, 0, 1e6, closed="both")],
        "gp_at": [StrOptions({"real", "interpolate"})],
        "critic_loss": [StrOptions({"wasserstein", "hinge"})],
        "n_critic": [Interval(Integral, 1, None, closed="left")],
        "learning_rate": [Interval(Real, 0, 10, closed="right")],
        "betas": [tuple, list],
        "standardize": ["boolean"],
        "random_state": ["random_state"],
    }

    def __init__(self, *, latent_dim="auto", latent_distribution="gaussian", architecture="mlp",
                 hidden_layer_sizes=(128, 128, 128), inverse_penalty=2.0, gradient_penalty=1.0, gp_at="real",
                 critic_loss="wasserstein", n_critic=5, learning_rate=1e-4, betas=(0.5, 0.999), batch_size=200,
                 max_iter=2000, early_stopping=False, validation_fraction=0.1, n_iter_no_change=10, tol=1e-4,
                 standardize=True, device="cpu", random_state=None, verbose=0):
        self.latent_dim = latent_dim
        self.latent_distribution = latent_distribution
        self.architecture = architecture
        self.hidden_layer_sizes = hidden_layer_sizes
        self.inverse_penalty = inverse_penalty
        self.gradient_penalty = gradient_penalty
        self.gp_at = gp_at
        self.critic_loss = critic_loss
        self.n_critic = n_critic
        self.learning_rate = learning_rate
        self.betas = betas
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.tol = tol
        self.standardize = standardize
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    # -- validation --------------------------------------------------------------------------------

    def _hidden(self):
        hidden = np.asarray(self.hidden_layer_sizes, dtype=object).ravel()
        if not all(isinstance(h, Integral) and not isinstance(h, bool) and 1 <= h <= 1_000_000 for h in hidden):
            raise ValueError(f"{type(self).__name__}: hidden_layer_sizes must be positive ints; "
                             f"got {self.hidden_layer_sizes!r}.")
        return tuple(int(h) for h in hidden)

    def _betas(self):
        betas = tuple(self.betas)
        if len(betas) != 2 or not all(isinstance(b, Real) and 0.0 <= b < 1.0 for b in betas):
            raise ValueError(f"{type(self).__name__}: betas must be two floats in [0, 1); got {self.betas!r}.")
        return tuple(float(b) for b in betas)

    def _latent_dim(self, n_features):
        if self.latent_dim == "auto":
            return min(2, n_features)
        if self.latent_dim > n_features:
            raise ValueError(f"{type(self).__name__}: latent_dim={self.latent_dim} is above n_features="
                             f"{n_features}; a generator from a higher dimension has no left inverse.")
        return int(self.latent_dim)

    # -- fit ---------------------------------------------------------------------------------------

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Train the generator, its inverse and the critic on ``X``, then certify the bound.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : None
            Ignored.

        Returns
        -------
        self : LeftInvertibleWGAN
            The fitted generator.
        """
        from ._wgan_training import train_wgan

        with self._torch_fit_context() as ctx:
            # one row is no distribution to learn (and has no spread to standardise by)
            X = validate_data(self, as_numpy(X), dtype=np.float64, ensure_min_samples=2)
            hidden, betas = self._hidden(), self._betas()
            d = self._latent_dim(X.shape[1])
            rng = check_random_state(self.random_state)
            if self.standardize:
                self.mean_, self.scale_ = standardization(X)
            else:
                self.mean_, self.scale_ = np.zeros(X.shape[1]), np.ones(X.shape[1])
            Z = (X - self.mean_) / self.scale_
            if not np.all(np.abs(Z) < 1e30):
                raise ValueError(f"{type(self).__name__}: the training values reach {np.abs(Z).max():.3g}, beyond the "
                                 "float32 range the networks train in; rescale X or use standardize=True.")
            validation = self._held_out_w1(X, d, rng, ctx.device) if self.early_stopping else None
            if validation is not None:
                validation, Z = validation
            result = train_wgan(Z, latent_dim=d,
                                latent_distribution=self.latent_distribution, architecture=self.architecture,
                                hidden=hidden, inverse_penalty=self.inverse_penalty,
                                gradient_penalty=self.gradient_penalty, gp_at=self.gp_at,
                                critic_loss=self.critic_loss, n_critic=self.n_critic,
                                learning_rate=self.learning_rate, betas=betas, batch_size=self.batch_size,
                                max_iter=self.max_iter, device=ctx.device, generator=torch_generator(rng),
                                verbose=self.verbose, name=type(self).__name__, validation=validation,
                                check_every=max(1, self.max_iter // 100), n_iter_no_change=self.n_iter_no_change,
                                tol=self.tol)
            self.latent_dim_ = d
            self.generator_, self.critic_ = result.generator, result.critic
            self.loss_history_ = result.history
            self.loss_curve_ = result.history["wasserstein"]
            self.n_iter_ = result.n_iter
            self.validation_scores_ = result.validation_scores
            self.best_validation_score_ = result.best_validation_score
            if self.architecture == "injective_mlp":
                from ._wgan_nets import ExactInverse

                self.inverse_ = ExactInverse(self.generator_).eval()
            else:
                self.inverse_ = result.inverse
            self._certify(len(Z), rng)
        return self

    def _held_out_w1(self, X, d, rng, device):
        """The held-out measure of early stopping and the standardised training rows.

        Returns ``(validation, Z_train)``: ``validation(g)`` is the exact W1
        distance, in X's units, between up to 2000 held-out rows and g's image
        of as many fixed latent draws.
        """
        from ..utils._distances import wasserstein1
        from ._wgan_training import draw_latent

        n = len(X)
        n_valid = int(np.ceil(self.validation_fraction * n))
        if n - n_valid < 2:
            raise ValueError(f"{type(self).__name__}: early_stopping holds out validation_fraction="
                             f"{self.validation_fraction!r} of {n} rows and leaves fewer than 2 to train on.")
        order = rng.permutation(n)
        held = X[order[:n_valid][:2000]]
        z = draw_latent(len(held), d, self.latent_distribution, torch_generator(rng)).to(device)

        def validation(g):
            out = to_numpy(g(z)).astype(np.float64) * self.scale_ + self.mean_
            return wasserstein1(out, held, max_samples=None)

        return validation, (X[order[n_valid:]] - self.mean_) / self.scale_

    def _certify(self, n_train, rng):
        from ._wgan_bound import certified_lower_bound, inverse_error_upper, quantization_error_lower
        from ._wgan_nets import mlp_lipschitz_upper
        from ._wgan_training import draw_latent

        z = draw_latent(N_MONTE_CARLO, self.latent_dim_, self.latent_distribution, torch_generator(rng)).double()
        z_back = forward_float64(self.inverse_, forward_float64(self.generator_, z))
        errors = to_numpy((z_back - z).norm(dim=1))
        self.inverse_error_, self.inverse_error_upper_ = inverse_error_upper(errors)
        self.quantization_error_lower_ = quantization_error_lower(n_train, self.latent_dim_, self.latent_distribution)
        if self.architecture == "injective_mlp":
            lip = self.inverse_.lipschitz_upper()
        else:
            lip = mlp_lipschitz_upper(self.inverse_)
        self.lipschitz_inverse_upper_ = float(lip / self.scale_.min())
        self.lower_bound_ = certified_lower_bound(self.quantization_error_lower_, self.inverse_error_upper_,
                                                  self.lipschitz_inverse_upper_)

    # -- after fit ---------------------------------------------------------------------------------

    @property
    def _n_features_out(self):
        return self.latent_dim_

    def sample(self, n_samples=1, random_state=None):
        """Draw points from the fitted generator, in X's units.

        Parameters
        ----------
        n_samples : int, default=1
            Number of points.
        random_state : int, RandomState instance or None, default=None
            Seeds the latent draws; None uses the estimator's ``random_state``
            (so an int ``random_state`` gives the same points at each call,
            like :meth:`sklearn.mixture.GaussianMixture.sample`).

        Returns
        -------
        ndarray of shape (n_samples, ``n_features_in_``)
            The points.
        """
        from ._wgan_training import draw_latent

        check_is_fitted(self)
        if isinstance(n_samples, bool) or not isinstance(n_samples, Integral) or n_samples < 1:
            raise ValueError(f"{type(self).__name__}.sample: n_samples must be an int >= 1; got {n_samples!r}.")
        rs = self.random_state if random_state is None else random_state
        with self._torch_context():
            z = draw_latent(int(n_samples), self.latent_dim_, self.latent_distribution, torch_generator(rs))
            X = to_numpy(forward_float64(self.generator_, z.double()))
        return X * self.scale_ + self.mean_

    def transform(self, X):
        """Latent codes h(X) given by the left inverse.

        Parameters
        ----------
        X : array-like of shape (n_samples, ``n_features_in_``)
            Points in X's units.

        Returns
        -------
        ndarray of shape (n_samples, ``latent_dim_``)
            Their latent codes.
        """
        check_is_fitted(self)
        X = validate_data(self, as_numpy(X), dtype=np.float64, reset=False)
        with self._torch_context():
            return to_numpy(forward_float64(self.inverse_, to_tensor((X - self.mean_) / self.scale_, "cpu")))

    def inverse_transform(self, X):
        """Generated points g(Z) of latent codes, in X's units.

        Parameters
        ----------
        X : array-like of shape (n_samples, ``latent_dim_``)
            Latent codes.

        Returns
        -------
        ndarray of shape (n_samples, ``n_features_in_``)
            The generator's points.
        """
        check_is_fitted(self)
        Z = check_array(as_numpy(X), dtype=np.float64, input_name="X")
        if Z.shape[1] != self.latent_dim_:
            raise ValueError(f"{type(self).__name__}.inverse_transform: X has {Z.shape[1]} columns but the "
                             f"latent dimension latent_dim_ is {self.latent_dim_}.")
        with self._torch_context():
            out = to_numpy(forward_float64(self.generator_, to_tensor(Z, "cpu")))
        return out * self.scale_ + self.mean_

    def score(self, X, y=None):
        """Minus the exact W1 distance between ``len(X)`` generated points and ``X``.

        Higher is better; on held-out data it measures fidelity to the
        distribution rather than to the training points, so
        :class:`~sklearn.model_selection.GridSearchCV` can tune
        ``inverse_penalty`` with it.

        Parameters
        ----------
        X : array-like of shape (n_samples, ``n_features_in_``)
            Data to compare with (both samples subsampled to 2000 rows).
        y : None
            Ignored.

        Returns
        -------
        float
            ``-wasserstein1(self.sample(len(X)), X)``.
        """
        from ..utils._distances import wasserstein1

        check_is_fitted(self)
        X = validate_data(self, as_numpy(X), dtype=np.float64, reset=False)
        return -wasserstein1(self.sample(min(len(X), 2000)), X, max_samples=2000, random_state=self.random_state)

