"""SpaceBond: FreeBind's space combination and space displacement bonds between two embedding spaces."""

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from ..utils._sklearn_private import Interval, StrOptions, _fit_context
from ..utils._torch import as_numpy
from ..utils._torch_base import TorchEstimatorMixin
from ._layout import block_widths, check_blocks, l2_normalize, resolve_mixing
from ._projectors import fit_projectors, mean_projection, projection_sum
from ._pseudo_pairs import pseudo_expert_embeddings

__all__ = ["SpaceBond"]


def _check_groups(groups, n_rows, name):
    if groups is None:
        return None
    groups = np.asarray(as_numpy(groups))
    if groups.shape != (n_rows,):
        raise ValueError(f"{name}: groups must have one entry per row of X ({n_rows}); got shape {groups.shape}.")
    return groups


class SpaceBond(ClassNamePrefixFeaturesOutMixin, TransformerMixin, TorchEstimatorMixin, BaseEstimator):
    """Bind an expert embedding space to a unified one with small projectors (FreeBind's space bonds).

    Read more in the :ref:`User Guide <multimodal>`.

    No encoder is retrained: projectors learned on paired embeddings of the
    same items carry one space's knowledge into the other, and the two are
    mixed on the unit sphere.

    * **Combination bond** (``bond="combination"``): projectors map the expert
      space into the unified one, and a row with both parts becomes
      ``normalize(beta * normalize(mean_j normalize(P_j(e))) + (1 - beta) * u)``
      (the width of the unified part); a row without an expert part keeps
      ``normalize(u)``.
    * **Displacement bond** (``bond="displacement"``): projectors map the
      unified space into the expert one, which becomes the base: a row with
      both parts becomes ``normalize(alpha * normalize(mean_j normalize(P_j(u)))
      + (1 - alpha) * e)`` (the width of the expert part); a row without an
      expert part becomes ``normalize(mean_j normalize(P_j(u)))``.

    Here ``u`` and ``e`` are the row's unified and expert parts, L2-normalised,
    and ``beta`` / ``alpha`` is ``mixing``, read at transform time: changing
    it with ``set_params`` needs no refit ("customised inference").

    Parameters
    ----------
    bond : {"combination", "displacement"}, default="combination"
        Which space is the base of the output (see above).
    n_base_features : int or None, default=None
        Width of the unified part, the first columns of ``X``; None: the
        first half (the larger half for an odd width), with a warning that
        says so (the widths of the embeddings cannot be read from ``X``).
    projector : {"procrustes", "ridge", "mlp"}, default="procrustes"
        The (semi-)orthogonal Procrustes map (closed form, no intercept: it
        keeps the angles of the source space), closed-form ridge regression
        (with intercept), or FreeBind's ``Proj_Head_mini`` (Linear(in, 2048) -
        BatchNorm - ReLU - Linear(2048, out) - BatchNorm - L2, Xavier-uniform
        weights) trained in torch. The default is the projector with the best
        mean recall over the retrieval tasks of the FreeBind benchmark (see
        the user guide).
    loss : {"infonce", "mse", "cosine"}, default="infonce"
        Objective of the MLP projector between the projected source and the
        target of each pair: symmetric InfoNCE over the batch (in-batch
        negatives, ``temperature``), squared error or one minus the cosine,
        all on L2-normalised vectors.
    temperature : float, default=0.05
        InfoNCE temperature.
    n_projectors : int, default=1
        Size of the mixture of projectors when ``fit`` gets no groups: one
        projector on all pairs when 1, else each on a bootstrap resample of
        the pairs. Their normalised outputs are averaged on the sphere. With
        ``groups`` in ``fit`` one projector is trained per group value
        instead (FreeBind's pseudo-dataset modes), and ``n_projectors`` must
        be 1.
    mixing : float in [0, 1] or dict, default=0.5
        ``beta`` (combination) or ``alpha`` (displacement); a dict ``{group:
        factor}`` gives each group of rows its own factor (e.g. ``{"audio":
        0.5, "text": 0.1}``) and needs ``groups`` in :meth:`transform`.
    pseudo_pairs : {None, "retrieval"}, default=None
        How ``fit`` uses the rows without an expert part (items of a modality
        the expert lacks). None: they are skipped, and the projectors see only
        the direct pairs. ``"retrieval"``: FreeBind's pseudo dataset; each such
        row is paired with a pseudo expert embedding, the softmax-weighted
        (``pseudo_temperature``) mean of the normalised expert parts of its
        ``n_neighbors`` nearest direct pairs, by cosine similarity of the
        unified parts (e.g. an image gets the expert embeddings of the audio
        and captions nearest to it in the unified space), and the pseudo pairs
        join the direct ones. With ``groups`` in ``fit`` they keep their own
        group, hence their own projector (a pseudo-dataset mode).
    n_neighbors : int, default=5
        Direct pairs retrieved per pseudo pair (``pseudo_pairs="retrieval"``);
        at most the number of direct pairs.
    pseudo_temperature : float, default=0.05
        Softmax temperature over the cosine similarities of the retrieved
        pairs; small values approach the nearest pair alone.
    ridge_alpha : float, default=1e-2
        L2 penalty of the ridge projector (scikit-learn's
        :class:`~sklearn.linear_model.Ridge` ``alpha``).
    max_iter : int, default=100
        Epochs of each MLP projector.
    batch_size : int, default=256
        Pairs per MLP mini-batch (the InfoNCE negatives), and rows per chunk
        when the MLP projects in :meth:`transform`.
    learning_rate : float, default=1e-3
        AdamW step size of the MLP projector.
    early_stopping : bool, default=False
        Hold out ``validation_fraction`` of each MLP projector's pairs and
        stop when their loss has not improved by ``tol`` for more than
        ``n_iter_no_change`` epochs; the head of the best validation loss is
        kept. Without it every one of the ``max_iter`` epochs runs (the
        contrastive loss over reshuffled batches is too noisy to stop on).
    validation_fraction : float, default=0.1
        Share of the pairs held out when ``early_stopping``.
    n_iter_no_change : int, default=10
        Epochs without an improvement of at least ``tol`` tolerated (with
        ``early_stopping``).
    tol : float, default=1e-4
        Minimal decrease of the validation loss counted as an improvement.
    device : {"cpu", "auto", "cuda"}, "cuda:<index>" or torch.device, default="cpu"
        Where the MLP projectors train and project. Ridge and Procrustes are
        closed-form numpy.
    random_state : int, RandomState instance or None, default=None
        Seeds the bootstrap resamples, the MLP initialisation and batch order.
    verbose : int, default=0
        Per-epoch progress of the MLP projectors when positive.

    Attributes
    ----------
    projectors_ : list
        The fitted projectors: affine maps (``coef``, ``intercept``) for ridge
        and Procrustes, trained CPU torch heads (``module``,
        ``loss_curve``, and ``validation_scores`` under ``early_stopping``)
        for the MLP.
    n_base_features_ : int
        Width of the unified part of ``X``.
    n_expert_features_ : int
        Width of the expert part of ``X``.
    n_pairs_ : int
        Rows with both parts (the direct pairs).
    n_pseudo_pairs_ : int
        Rows without an expert part that were given a pseudo expert embedding
        and trained on (0 unless ``pseudo_pairs="retrieval"``).
    n_iter_ : int
        Epochs run by the MLP projectors (the most among them); 1 for the
        closed-form projectors (one solve).
    device_ : str
        Where the MLP projectors trained (``"cpu"`` for the closed forms
        unless another device was asked for).
    n_features_in_ : int
        Number of features seen in fit.
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Feature names, when X had string column names.

    See Also
    --------
    FreeBind : Sequential and parallel compositions of several bonds.
    sklearn_icml.metrics.recall_at_k : Cross-modal retrieval score.
    sklearn_icml.datasets.make_multimodal_embeddings : Synthetic three-modality data.

    Notes
    -----
    Data contract: ``X`` is the column-wise concatenation ``[unified |
    expert]`` of paired embeddings of the same item; a row whose expert part
    is entirely NaN is an item of a modality the expert lacks (an image for an
    audio-text expert). Only the expert part may be NaN (the ``allow_nan``
    tag); a NaN in the unified part, or in only some expert columns, is a
    ValueError. ``fit`` trains the projectors on the rows with both parts.

    The official code (zehanwang01/FreeBind) is inference-only; its training
    and pseudo-dataset construction were never released. Here the projectors
    are trained on the pairs the user provides (the same item embedded by
    both spaces), and optionally on pseudo pairs retrieved for the items the
    expert does not cover (``pseudo_pairs="retrieval"``, after the C-MCR /
    Ex-MCR construction the paper builds on: retrieval in the space the item
    lives in, softmax-weighted mean of the neighbours). Choices of ours: the InfoNCE temperature 0.05 (the paper's
    value could not be verified); the linear projectors act on L2-normalised
    inputs and targets; the official displacement projectors are
    ``Reaction_Head_mini`` heads with a projection per modality, which a
    per-group mixture (``groups`` in ``fit``) plays here. Rows missing the
    expert in a displacement bond get the projection, as in the fine-tuned
    official variant (one official class returns the unprojected embedding).

    References
    ----------
    .. [1] Wang, Z., Zhang, Z., Cheng, X., Huang, R., Liu, L., Ye, Z., Huang,
       H., Zhao, Y., Jin, T., Gao, P. and Zhao, Z. "FreeBind: Free Lunch in
       Unified Multimodal Space via Knowledge Fusion", Proceedings of the 41st
       International Conference on Machine Learning (ICML), PMLR 235, 2024.

    Examples
    --------
    >>> from sklearn_icml.datasets import make_multimodal_embeddings
    >>> from sklearn_icml.metrics import recall_at_k
    >>> from sklearn_icml.multimodal import SpaceBond
    >>> data = make_multimodal_embeddings(600, random_state=0)
    >>> train, test = data.item < 400, data.item >= 400
    >>> bond = SpaceBond(n_base_features=data.n_base_features).fit(data.X[train])
    >>> Z = bond.transform(data.X[test])
    >>> audio, text = Z[data.modality[test] == "audio"], Z[data.modality[test] == "text"]
    >>> round(recall_at_k(data.unified_audio[400:], data.unified_text[400:]), 2), round(recall_at_k(audio, text), 2)
    (0.21, 0.95)

    Pseudo pairs for the images, which the audio-text expert does not cover
    (FreeBind's pseudo dataset: each image is paired with the expert
    embeddings of its nearest audio and captions in the unified space):

    >>> pseudo = SpaceBond(n_base_features=data.n_base_features, pseudo_pairs="retrieval", n_neighbors=5)
    >>> pseudo = pseudo.fit(data.X[train])
    >>> pseudo.n_pairs_, pseudo.n_pseudo_pairs_
    (800, 400)
    """

    _parameter_constraints = {
        "bond": [StrOptions({"combination", "displacement"})],
        "n_base_features": [Interval(Integral, 1, None, closed="left"), None],
        "projector": [StrOptions({"ridge", "procrustes", "mlp"})],
        "loss": [StrOptions({"infonce", "mse", "cosine"})],
        "temperature": [Interval(Real, 0, None, closed="neither")],
        "n_projectors": [Interval(Integral, 1, None, closed="left")],
        "mixing": [Interval(Real, 0, 1, closed="both"), dict],
        "pseudo_pairs": [StrOptions({"retrieval"}), None],
        "n_neighbors": [Interval(Integral, 1, None, closed="left")],
        "pseudo_temperature": [Interval(Real, 0, None, closed="neither")],
        "ridge_alpha": [Interval(Real, 0, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(self, bond="combination", *, n_base_features=None, projector="procrustes", loss="infonce",
                 temperature=0.05, n_projectors=1, mixing=0.5, pseudo_pairs=None, n_neighbors=5,
                 pseudo_temperature=0.05, ridge_alpha=1e-2, max_iter=100, batch_size=256, learning_rate=1e-3,
                 early_stopping=False, validation_fraction=0.1, n_iter_no_change=10, tol=1e-4, device="cpu",
                 random_state=None, verbose=0):
        self.bond = bond
        self.n_base_features = n_base_features
        self.projector = projector
        self.loss = loss
        self.temperature = temperature
        self.n_projectors = n_projectors
        self.mixing = mixing
        self.pseudo_pairs = pseudo_pairs
        self.n_neighbors = n_neighbors
        self.pseudo_temperature = pseudo_temperature
        self.ridge_alpha = ridge_alpha
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

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # only the expert part, and only as a whole (checked in fit/transform)
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

    def _validate(self, X, reset):
        name = type(self).__name__
        X = validate_data(self, X, reset=reset, dtype=[np.float64, np.float32], ensure_all_finite="allow-nan")
        if reset:
            widths = block_widths(X.shape[1], self.n_base_features, None, 1, name)
        else:
            widths = [self.n_base_features_, self.n_expert_features_]
        blocks, present = check_blocks(X, widths, name)
        return blocks[0], blocks[1], present[0]

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, groups=None):
        """Fit the projectors on the rows of ``X`` that have both parts.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Paired embeddings ``[unified | expert]``; rows whose expert part
            is entirely NaN are skipped.
        y : None
            Ignored.
        groups : array-like of shape (n_samples,), default=None
            A group per row (e.g. the modality or the pseudo-dataset of each
            pair): one projector is fitted per group value.

        Returns
        -------
        self : object
            Fitted bond.
        """
        name = type(self).__name__
        with self._torch_fit_context() as ctx:
            u, e, present = self._validate(X, reset=True)
            groups = _check_groups(groups, u.shape[0], name)
            if groups is not None and self.n_projectors != 1:
                raise ValueError(f"{name}: with groups in fit one projector is fitted per group value, so "
                                 f"n_projectors must be 1; got n_projectors={self.n_projectors}.")
            if not present.any():
                raise ValueError(f"{name}: no row of X has an expert part (columns {u.shape[1]}.."
                                 f"{u.shape[1] + e.shape[1] - 1} are all NaN); fit needs paired rows.")
            rows, e = self._training_pairs(u, e, present, name)
            source, target = (e, u[rows]) if self.bond == "combination" else (u[rows], e)
            self.projectors_ = fit_projectors(
                source, target, projector=self.projector, n_projectors=self.n_projectors,
                groups=None if groups is None else groups[rows], ridge_alpha=self.ridge_alpha, loss=self.loss,
                temperature=self.temperature, max_iter=self.max_iter, batch_size=self.batch_size,
                learning_rate=self.learning_rate, device=ctx.device, rng=check_random_state(self.random_state),
                verbose=self.verbose, name=name,
                stopping=dict(early_stopping=self.early_stopping, validation_fraction=self.validation_fraction,
                              n_iter_no_change=self.n_iter_no_change, tol=self.tol))
            self.n_base_features_ = u.shape[1]
            self.n_expert_features_ = e.shape[1]
            self.n_pairs_ = int(present.sum())
            self.n_pseudo_pairs_ = int(rows.sum()) - self.n_pairs_
            self.n_iter_ = max((len(getattr(p, "loss_curve", [None])) for p in self.projectors_), default=1)
            self._n_features_out = self.n_base_features_ if self.bond == "combination" else self.n_expert_features_
        return self

    def _training_pairs(self, u, e, present, name):
        """``(rows, e_rows)``: the rows the projectors train on and their expert parts, pseudo ones included."""
        if self.pseudo_pairs is None or present.all():
            return present, e[present]
        n_pairs = int(present.sum())
        if self.n_neighbors > n_pairs:
            raise ValueError(f"{name}: n_neighbors={self.n_neighbors} exceeds the {n_pairs} direct pair(s) that "
                             "pseudo pairs are retrieved from; lower n_neighbors or give more paired rows.")
        e = e.copy()  # the caller's X is not touched
        e[~present] = pseudo_expert_embeddings(u[~present], u[present], e[present], n_neighbors=self.n_neighbors,
                                               temperature=self.pseudo_temperature)
        return np.ones_like(present), e

    def _project_device(self, ctx):
        return ctx.device if self.projector == "mlp" else "cpu"

    def _projection_sum(self, Z):
        """``sum_j normalize(P_j(normalize(Z)))`` over this bond's projectors (for parallel composition)."""
        with self._torch_context() as ctx:
            return projection_sum(self.projectors_, Z, self._project_device(ctx), self.batch_size)

    def _parts(self, X):
        """What the output mixes: ``(out, rows, projected, anchor)`` of validated ``X``.

        ``out`` holds the output of the rows that are not mixed; the rows of
        the mask ``rows`` become ``normalize(m * projected + (1 - m) * anchor)``.
        """
        u, e, present = self._validate(X, reset=False)
        with self._torch_context() as ctx:
            device = self._project_device(ctx)
            if self.bond == "combination":
                out = l2_normalize(u)
                projected = (mean_projection(self.projectors_, e[present], device, self.batch_size)
                             if present.any() else np.empty((0, u.shape[1])))
                return out, present, projected.astype(u.dtype, copy=False), out[present]
            out = mean_projection(self.projectors_, u, device, self.batch_size).astype(u.dtype, copy=False)
            anchor = l2_normalize(e[present]) if present.any() else np.empty((0, e.shape[1]), dtype=e.dtype)
            return out, present, out[present], anchor

    @staticmethod
    def _blend(parts, factors):
        out, rows, projected, anchor = parts
        out = out.copy()
        if rows.any():
            f = factors[rows].astype(out.dtype)
            out[rows] = l2_normalize(f * projected + (1.0 - f) * anchor)
        return out

    def transform(self, X, groups=None):
        """Embed the rows of ``X`` in the bonded space.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows ``[unified | expert]``; an entirely NaN expert part marks an
            item the expert does not cover.
        groups : array-like of shape (n_samples,), default=None
            The group of each row, to look up its factor when ``mixing`` is a
            dict.

        Returns
        -------
        X_new : ndarray of shape (n_samples, ``n_base_features_``) or (n_samples, ``n_expert_features_``)
            L2-normalised embeddings: in the unified space for a combination
            bond, in the expert space for a displacement bond; float32 for
            float32 input, else float64.
        """
        check_is_fitted(self)
        name = type(self).__name__
        parts = self._parts(X)
        groups = _check_groups(groups, parts[0].shape[0], name)
        return self._blend(parts, resolve_mixing(self.mixing, groups, parts[0].shape[0], name))

    def fit_transform(self, X, y=None, groups=None):
        """Fit the projectors, then transform ``X`` (with the same ``groups``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Paired embeddings ``[unified | expert]``.
        y : None
            Ignored.
        groups : array-like of shape (n_samples,), default=None
            Used by both :meth:`fit` and :meth:`transform`.

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_features_out)
            The transformed rows.
        """
        return self.fit(X, y, groups=groups).transform(X, groups=groups)

    def mixing_curve(self, X_query, X_gallery, values, *, k=1, groups_query=None, groups_gallery=None):
        """Recall at ``k`` of query row ``i`` retrieving gallery row ``i``, for each mixing value, from one fit.

        The projections are computed once; only the mixing on the sphere is
        redone per value.

        Parameters
        ----------
        X_query : array-like of shape (n_queries, n_features)
            Query rows ``[unified | expert]`` (e.g. the audio of test items).
        X_gallery : array-like of shape (n_gallery, n_features)
            Gallery rows; row ``i`` matches query ``i`` (e.g. their captions).
        values : iterable of float or dict
            Mixing values to try (as the ``mixing`` parameter).
        k : int, default=1
            Cut-off rank.
        groups_query, groups_gallery : array-like, default=None
            Groups of the rows, for dict values.

        Returns
        -------
        recalls : ndarray of shape (n_values,)
            Recall at ``k`` for each value.
        """
        from ..utils._distances import recall_at_k

        check_is_fitted(self)
        name = type(self).__name__
        q_parts, g_parts = self._parts(X_query), self._parts(X_gallery)
        groups_query = _check_groups(groups_query, q_parts[0].shape[0], name)
        groups_gallery = _check_groups(groups_gallery, g_parts[0].shape[0], name)
        recalls = []
        for value in values:
            q = self._blend(q_parts, resolve_mixing(value, groups_query, q_parts[0].shape[0], name, "values"))
            g = self._blend(g_parts, resolve_mixing(value, groups_gallery, g_parts[0].shape[0], name, "values"))
            recalls.append(recall_at_k(q, g, k=k))
        return np.asarray(recalls)
