"""FreeBind: several space bonds composed in sequence (a chain of bases) or in parallel (experts averaged)."""

from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin, clone
from sklearn.utils.validation import check_is_fitted, validate_data

from ..utils._sklearn_private import Interval, StrOptions, _fit_context
from ._layout import block_widths, check_blocks, l2_normalize, resolve_mixing
from ._space_bond import SpaceBond, _check_groups

__all__ = ["FreeBind"]


class FreeBind(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Compose several :class:`SpaceBond` s over one unified space and several expert spaces.

    Read more in the :ref:`User Guide <multimodal>`.

    ``X`` holds per row ``[unified | expert_1 | expert_2 | ...]``, one column
    block per bond, an entirely NaN expert block marking an item that expert
    does not cover.

    * ``mode="sequential"``: the bonds form a chain. Bond 1 binds expert 1
      to the unified space, and its output becomes the base that bond 2
      binds expert 2 to, and so on; the output is the last base. FreeBind's
      InternVL_IB++ is such a chain: displace ImageBind by InternVL-C (the
      base becomes InternVL's space), then combine CLAP into it.
    * ``mode="parallel"``: every bond is a combination bond from its expert
      into the unified space, and all their projectors are averaged into one
      projection: ``normalize(beta * normalize(mean over every projector of
      every expert present of normalize(P(e_k))) + (1 - beta) * u)``, as
      ImageBind++ averages CLAP-General's and CLAP-Music's 7 + 7 projectors.
      A row without any expert keeps ``normalize(u)``.

    Parameters
    ----------
    bonds : list of (str, SpaceBond) tuples or None, default=None
        The bonds, in order: bond ``k`` binds expert block ``k``. Each is
        cloned and fitted with ``n_base_features`` set to the width of its
        base (a bond whose own ``n_base_features`` disagrees is refused).
        None: one default :class:`SpaceBond`. Their ``mixing`` is read at
        transform time (``set_params(<name>__mixing=...)`` needs no refit).
    mode : {"sequential", "parallel"}, default="sequential"
        How the bonds compose (see above).
    expert_widths : list of int or None, default=None
        Widths of the expert blocks, the unified block taking the remaining
        first columns. None: ``X`` splits into ``len(bonds) + 1`` blocks as
        equal as possible, with a warning that says so.
    mixing : float in [0, 1], dict or None, default=None
        Parallel mode: the factor ``beta`` (or ``{group: factor}``). None:
        the bonds' common ``mixing`` (they must agree). Unused in sequential
        mode, where each bond mixes with its own.

    Attributes
    ----------
    bonds_ : list of (str, SpaceBond) tuples
        The fitted bonds.
    block_widths_ : list of int
        Widths of the blocks ``[unified, expert_1, ...]`` of ``X``.
    n_features_in_ : int
        Number of features seen in fit.
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Feature names, when X had string column names.

    See Also
    --------
    SpaceBond : One combination or displacement bond.

    Notes
    -----
    ``groups`` in :meth:`fit` and :meth:`transform` are the rows' groups for
    dict mixing factors (e.g. the modality). Each bond is fitted without
    them (a mixture of ``n_projectors`` bootstrap projectors); a bond with one
    projector per group is a :meth:`SpaceBond.fit` feature. In sequential
    mode each bond is fitted on the previous bond's output for the base, so
    the chain's fit uses the mixing factors set at fit time; changing a
    factor later changes the input of the next bond without refitting its
    projectors (the official chains are used the same way).

    References
    ----------
    .. [1] Wang, Z., Zhang, Z., Cheng, X., Huang, R., Liu, L., Ye, Z., Huang,
       H., Zhao, Y., Jin, T., Gao, P. and Zhao, Z. "FreeBind: Free Lunch in
       Unified Multimodal Space via Knowledge Fusion", Proceedings of the 41st
       International Conference on Machine Learning (ICML), PMLR 235, 2024.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.multimodal import FreeBind, SpaceBond
    >>> rng = np.random.RandomState(0)
    >>> u = rng.normal(size=(50, 6))
    >>> X = np.hstack([u, u[:, :4] @ rng.normal(size=(4, 3)), np.tanh(u[:, 2:])])
    >>> fb = FreeBind([("a", SpaceBond()), ("b", SpaceBond(mixing=0.2))], expert_widths=[3, 4]).fit(X)
    >>> fb.transform(X).shape, fb.block_widths_
    ((50, 6), [6, 3, 4])
    """

    _parameter_constraints = {
        "bonds": [list, None],
        "mode": [StrOptions({"sequential", "parallel"})],
        "expert_widths": ["array-like", None],
        "mixing": [Interval(Real, 0, 1, closed="both"), dict, None],
    }

    def __init__(self, bonds=None, *, mode="sequential", expert_widths=None, mixing=None):
        self.bonds = bonds
        self.mode = mode
        self.expert_widths = expert_widths
        self.mixing = mixing

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # only the expert blocks, and only as a whole
        return tags

    # -- nested parameters, as Pipeline's steps: "<name>__<param>" -------------------------------

    def _named_bonds(self):
        name = type(self).__name__
        bonds = [("bond", SpaceBond())] if self.bonds is None else self.bonds
        if not bonds:
            raise ValueError(f"{name}: bonds is empty; give at least one (name, SpaceBond) tuple.")
        seen = set()
        for item in bonds:
            if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)):
                raise TypeError(f"{name}: bonds must be a list of (name, SpaceBond) tuples; got {item!r}.")
            label, bond = item
            if not isinstance(bond, SpaceBond):
                raise TypeError(f"{name}: bond {label!r} must be a SpaceBond; got {type(bond).__name__}.")
            if label in seen or "__" in label or not label:
                raise ValueError(f"{name}: bond names must be unique, non-empty and free of '__'; got {label!r}.")
            seen.add(label)
        return bonds

    def get_params(self, deep=True):
        """Parameters of this estimator and, with ``deep``, of its bonds (``<name>__<param>``).

        Parameters
        ----------
        deep : bool, default=True
            Also return the bonds and their parameters.

        Returns
        -------
        params : dict
            Parameter names mapped to their values.
        """
        params = super().get_params(deep=False)
        if deep and isinstance(self.bonds, list):
            for item in self.bonds:
                if isinstance(item, tuple) and len(item) == 2 and hasattr(item[1], "get_params"):
                    params[item[0]] = item[1]
                    params.update({f"{item[0]}__{k}": v for k, v in item[1].get_params(deep=True).items()})
        return params

    def set_params(self, **params):
        """Set parameters, including those of the bonds (``<name>__<param>``) and whole bonds (``<name>``).

        Parameters
        ----------
        **params : dict
            Estimator parameters.

        Returns
        -------
        self : object
            This estimator.
        """
        if "bonds" in params:
            self.bonds = params.pop("bonds")
        names = [b[0] for b in self.bonds if isinstance(b, tuple) and len(b) == 2] if isinstance(
            self.bonds, list) else []
        nested = {}
        for key in list(params):
            head, _, rest = key.partition("__")
            if head in names:
                value = params.pop(key)
                if rest:
                    nested.setdefault(head, {})[rest] = value
                else:
                    self.bonds = [(item[0], value) if isinstance(item, tuple) and item[0] == head else item
                                  for item in self.bonds]
        for head, sub in nested.items():
            next(item[1] for item in self.bonds if isinstance(item, tuple) and item[0] == head).set_params(**sub)
        return super().set_params(**params) if params else self

    # -- fit / transform ------------------------------------------------------------------------

    def _validate(self, X, reset):
        name = type(self).__name__
        X = validate_data(self, X, reset=reset, dtype=np.float64, ensure_all_finite="allow-nan")
        widths = (block_widths(X.shape[1], None, self.expert_widths, len(self._named_bonds()), name,
                               param="expert_widths")
                  if reset else self.block_widths_)
        blocks, present = check_blocks(X, widths, name)
        return widths, blocks, present

    def _parallel_mixing(self, bonds):
        if self.mixing is not None:
            return self.mixing
        first = bonds[0][1].mixing
        for label, bond in bonds[1:]:
            if bond.mixing != first:
                raise ValueError(f"{type(self).__name__}: in parallel mode the bonds share one mixing factor; "
                                 f"{bonds[0][0]!r} has {first!r} but {label!r} has {bond.mixing!r}. Set "
                                 "FreeBind(mixing=...) or give them the same mixing.")
        return first

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y=None, groups=None):
        """Fit every bond on its blocks (in a chain for ``mode="sequential"``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows ``[unified | expert_1 | ...]``.
        y : None
            Ignored.
        groups : array-like of shape (n_samples,), default=None
            Groups of the rows, for dict mixing factors in the chain.

        Returns
        -------
        self : object
            Fitted composition.
        """
        name = type(self).__name__
        bonds = self._named_bonds()
        if self.mode == "parallel":
            displacing = [label for label, b in bonds if b.bond != "combination"]
            if displacing:
                raise ValueError(f"{name}: mode='parallel' averages projections into the unified space, so every "
                                 f"bond must be a combination bond; {displacing} are displacement bonds.")
        widths, blocks, _ = self._validate(X, reset=True)
        groups = _check_groups(groups, blocks[0].shape[0], name)
        base = blocks[0]
        fitted = []
        for k, (label, bond) in enumerate(bonds, 1):
            if bond.n_base_features is not None and bond.n_base_features != base.shape[1]:
                raise ValueError(f"{name}: bond {label!r} has n_base_features={bond.n_base_features} but its base "
                                 f"is {base.shape[1]} wide.")
            bond = clone(bond).set_params(n_base_features=base.shape[1])
            Xk = np.hstack([base, blocks[k]])
            bond.fit(Xk)
            fitted.append((label, bond))
            if self.mode == "sequential" and k < len(bonds):
                parts = bond._parts(Xk)
                base = bond._blend(parts, resolve_mixing(bond.mixing, groups, Xk.shape[0], name,
                                                         f"{label}__mixing"))
        self.bonds_ = fitted
        self.block_widths_ = widths
        last = fitted[-1][1]
        self._n_features_out = (widths[0] if self.mode == "parallel" else last._n_features_out)
        return self

    def transform(self, X, groups=None):
        """Embed the rows of ``X`` in the composed space.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows ``[unified | expert_1 | ...]``.
        groups : array-like of shape (n_samples,), default=None
            Groups of the rows, for dict mixing factors.

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_features_out)
            L2-normalised embeddings.
        """
        check_is_fitted(self)
        name = type(self).__name__
        _, blocks, present = self._validate(X, reset=False)
        n = blocks[0].shape[0]
        groups = _check_groups(groups, n, name)
        current = dict(self._named_bonds())  # mixing factors are read now, from the bonds as set
        if self.mode == "sequential":
            base = blocks[0]
            for k, (label, bond) in enumerate(self.bonds_, 1):
                mixing = current[label].mixing if label in current else bond.mixing
                parts = bond._parts(np.hstack([base, blocks[k]]))
                base = bond._blend(parts, resolve_mixing(mixing, groups, n, name, f"{label}__mixing"))
            return base
        u = l2_normalize(blocks[0])
        total = np.zeros_like(u)
        count = np.zeros((n, 1))
        for k, (_, bond) in enumerate(self.bonds_, 1):
            rows = present[k - 1]
            if rows.any():
                total[rows] += bond._projection_sum(blocks[k][rows])
                count[rows] += len(bond.projectors_)
        mixed = count[:, 0] > 0
        beta = resolve_mixing(self._parallel_mixing([(label, current.get(label, b)) for label, b in self.bonds_]),
                              groups, n, name)
        out = u.copy()
        p = l2_normalize(total[mixed] / count[mixed])
        out[mixed] = l2_normalize(beta[mixed] * p + (1.0 - beta[mixed]) * u[mixed])
        return out

    def fit_transform(self, X, y=None, groups=None):
        """Fit the bonds, then transform ``X`` with the same ``groups``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows ``[unified | expert_1 | ...]``.
        y : None
            Ignored.
        groups : array-like of shape (n_samples,), default=None
            Groups of the rows, for dict mixing factors.

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_features_out)
            The transformed rows.
        """
        return self.fit(X, y, groups=groups).transform(X, groups=groups)
