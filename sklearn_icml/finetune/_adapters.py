"""DoRA and LoRA adapter layers, their injection and merging, and the magnitude/direction diagnostic.

Written from the equations of Liu et al. (ICML 2024). A frozen ``nn.Linear``
of weight ``W0`` (shape ``(out, in)``) and bias ``b`` becomes

* LoRA:  ``y = W0 x + b + s B A x``
* DoRA:  ``y = (m / ||W0 + s B A||_row) * (W0 x + s B A x) + b``

with ``A`` of shape ``(r, in)`` drawn like an ``nn.Linear`` weight
(Kaiming-uniform, ``a=sqrt(5)``), ``B`` of shape ``(out, r)`` set to zero,
``s = alpha / r`` (``alpha / sqrt(r)`` with rsLoRA) and, for DoRA, the magnitude
``m`` of shape ``(out,)`` set to the row norms of ``W0``; one norm per output
unit, taken over the input dimension. The bias is frozen and never rescaled.

This module imports torch at import time; it is reached only through the lazily
imported :mod:`sklearn_icml.finetune`.
"""

import math
import re
from numbers import Integral, Real

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..utils._sklearn_private import HasMethods, Interval, StrOptions, validate_params
from ..utils._torch import as_numpy, torch_generator

__all__ = ["DoRALinear", "LoRALinear", "apply_adapters", "magnitude_direction_shift", "merge_adapters"]


def _check_layer_args(base, r, alpha, dropout, cls_name):
    if not isinstance(base, nn.Linear):
        raise TypeError(f"{cls_name} wraps an nn.Linear; got {type(base).__name__}.")
    if isinstance(r, bool) or not isinstance(r, Integral) or r < 1:
        raise ValueError(f"{cls_name}: r must be an integer >= 1; got {r!r}.")
    if alpha is not None and (isinstance(alpha, bool) or not isinstance(alpha, Real) or not 0 < alpha < math.inf):
        raise ValueError(f"{cls_name}: alpha must be a finite positive number or None; got {alpha!r}.")
    if isinstance(dropout, bool) or not isinstance(dropout, Real) or not 0 <= dropout < 1:
        raise ValueError(f"{cls_name}: dropout must be in [0, 1); got {dropout!r}.")


class _AdapterLinear(nn.Module):
    """What LoRA and DoRA share: the frozen base, the factors A and B, scaling and dropout."""

    def _check_width(self, x):
        if x.shape[-1] != self.in_features:
            raise ValueError(f"{type(self).__name__}: the input has {x.shape[-1]} features in its last dimension; "
                             f"the layer takes {self.in_features}.")

    def __init__(self, base, r=8, *, alpha=None, dropout=0.0, use_rslora=False, generator=None):
        super().__init__()
        _check_layer_args(base, r, alpha, dropout, type(self).__name__)
        self.base_layer = base
        for p in base.parameters():
            p.requires_grad_(False)
        self.in_features = base.in_features
        self.out_features = base.out_features
        self.r = int(r)
        self.alpha = float(2 * r if alpha is None else alpha)
        self.use_rslora = bool(use_rslora)
        self.scaling = self.alpha / (math.sqrt(self.r) if self.use_rslora else self.r)
        largest = torch.finfo(base.weight.dtype).max if base.weight.dtype.is_floating_point else math.inf
        if self.scaling >= largest:
            raise ValueError(f"{type(self).__name__}: alpha={alpha!r} gives the scaling {self.scaling:g}, beyond "
                             f"the largest {base.weight.dtype} ({largest:g}); give a smaller alpha.")
        self.dropout = float(dropout)
        # optional torch.Generator (on the input's device) for the dropout masks;
        # None uses torch's global generator, as nn.Dropout does
        self.dropout_generator = None
        W0 = base.weight
        self.lora_A = nn.Parameter(torch.empty(self.r, self.in_features, dtype=W0.dtype))
        self.lora_B = nn.Parameter(torch.zeros(self.out_features, self.r, dtype=W0.dtype, device=W0.device))
        # drawn on the CPU from `generator`, so CPU and GPU layers start alike
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5), generator=generator)
        self.lora_A.data = self.lora_A.data.to(W0.device)

    def _dropout(self, x):
        if not (self.training and self.dropout > 0):
            return x
        if self.dropout_generator is None:
            return F.dropout(x, self.dropout, training=True)
        keep = torch.empty_like(x).bernoulli_(1.0 - self.dropout, generator=self.dropout_generator)
        return x * keep / (1.0 - self.dropout)

    def delta_weight(self):
        """The low-rank update ``s B A``.

        Returns
        -------
        torch.Tensor of shape (out_features, in_features)
            The scaled product of the adapter factors (differentiable).
        """
        return self.scaling * (self.lora_B @ self.lora_A)

    def merged_linear(self):
        """A plain ``nn.Linear`` computing what this adapter computes in eval mode.

        Returns
        -------
        torch.nn.Linear
            A new layer on the base's device and dtype, weight
            :meth:`merged_weight`, bias a copy of the base's bias.
        """
        W0 = self.base_layer.weight
        layer = torch.nn.utils.skip_init(nn.Linear, self.in_features, self.out_features,
                                         bias=self.base_layer.bias is not None, device=W0.device,
                                         dtype=W0.dtype)
        with torch.no_grad():
            layer.weight.copy_(self.merged_weight())
            if self.base_layer.bias is not None:
                layer.bias.copy_(self.base_layer.bias)
        return layer

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, r={self.r}, "
                f"alpha={self.alpha:g}, scaling={self.scaling:.4g}, dropout={self.dropout:g}")


class LoRALinear(_AdapterLinear):
    """Low-rank adapter around a frozen ``nn.Linear``: ``y = W0 x + b + s B A x``.

    Read more in the :ref:`User Guide <finetune>`.

    The baseline of DoRA, built exactly like :class:`DoRALinear` (same
    initialisation of ``A`` and ``B``, same scaling, same dropout) so that the
    two compare fairly.

    Parameters
    ----------
    base : torch.nn.Linear
        The pre-trained layer. It is kept as ``base_layer`` (not copied) and
        its parameters are frozen.
    r : int, default=8
        Rank of the update.
    alpha : float, default=None
        Scale numerator; ``None`` means ``2 * r``, the pairing of the DoRA paper.
    dropout : float, default=0.0
        Dropout on the adapter's input during training.
    use_rslora : bool, default=False
        Scale the update by ``alpha / sqrt(r)`` (rank-stabilised LoRA) instead
        of ``alpha / r``.
    generator : torch.Generator, default=None
        CPU generator for the draw of ``A``; ``None`` uses torch's global one.

    Attributes
    ----------
    base_layer : torch.nn.Linear
        The frozen pre-trained layer.
    lora_A : torch.nn.Parameter of shape (r, in_features)
        Down-projection, Kaiming-uniform at start.
    lora_B : torch.nn.Parameter of shape (out_features, r)
        Up-projection, zero at start (the layer starts as the base).
    scaling : float
        ``alpha / r`` or ``alpha / sqrt(r)``.
    dropout_generator : torch.Generator or None
        Generator of the dropout masks, on the input's device; ``None`` uses
        torch's global generator.

    See Also
    --------
    DoRALinear : The weight-decomposed adapter.
    apply_adapters : Put adapters in place of the Linear layers of a network.

    References
    ----------
    .. [1] Liu, S.-Y., Wang, C.-Y., Yin, H., Molchanov, P., Wang, Y.-C. F.,
       Cheng, K.-T. and Chen, M.-H., "DoRA: Weight-Decomposed Low-Rank
       Adaptation", ICML 2024.

    Examples
    --------
    >>> import torch
    >>> from sklearn_icml.finetune import LoRALinear
    >>> layer = LoRALinear(torch.nn.Linear(4, 3), r=2)
    >>> x = torch.ones(5, 4)
    >>> bool(torch.equal(layer(x), layer.base_layer(x)))
    True
    """

    def forward(self, x):
        """Base output plus the scaled low-rank update.

        Parameters
        ----------
        x : torch.Tensor of shape (..., in_features)
            Input.

        Returns
        -------
        torch.Tensor of shape (..., out_features)
            ``W0 x + b + s B A dropout(x)``.
        """
        self._check_width(x)
        update = F.linear(F.linear(self._dropout(x), self.lora_A), self.lora_B)
        return self.base_layer(x) + self.scaling * update

    def merged_weight(self):
        """The weight of the equivalent plain layer, ``W0 + s B A``.

        Returns
        -------
        torch.Tensor of shape (out_features, in_features)
            Merged weight (differentiable in ``A`` and ``B``).
        """
        return self.base_layer.weight + self.delta_weight()


class DoRALinear(_AdapterLinear):
    """Weight-decomposed low-rank adapter (DoRA) around a frozen ``nn.Linear``.

    Read more in the :ref:`User Guide <finetune>`.

    The adapted weight is ``W' = m * V / ||V||_row`` with ``V = W0 + s B A``:
    the low-rank update moves the direction, the vector ``m`` (one entry per
    output unit) sets the magnitude. At start ``B = 0`` and ``m = ||W0||_row``,
    so the layer computes exactly what the base computes.

    Parameters
    ----------
    base : torch.nn.Linear
        The pre-trained layer. It is kept as ``base_layer`` (not copied) and
        its parameters are frozen.
    r : int, default=8
        Rank of the direction update.
    alpha : float, default=None
        Scale numerator; ``None`` means ``2 * r``, the pairing of the paper.
    dropout : float, default=0.0
        Dropout on the adapter's input during training. With dropout active,
        ``W0 x`` is recomputed on the dropped-out input (one more matmul);
        without it, the base output is reused.
    use_rslora : bool, default=False
        Scale the update by ``alpha / sqrt(r)`` instead of ``alpha / r``.
    norm : {"dense", "factored"}, default="dense"
        How the row norms of ``W0 + s B A`` are computed. ``"dense"`` builds
        the ``(out, in)`` matrix; ``"factored"`` uses
        ``||W0_i||^2 + 2 s (W0 A^T)_i . B_i + s^2 B_i (A A^T) B_i^T``, which needs
        ``O(out r + r^2)`` extra memory and never builds ``W0 + s B A``.
    detach_norm : bool, default=True
        Treat the norm as a constant in backpropagation (Section 4.3 of the
        paper; what peft always does). ``False`` backpropagates through it.
    generator : torch.Generator, default=None
        CPU generator for the draw of ``A``; ``None`` uses torch's global one.

    Attributes
    ----------
    base_layer : torch.nn.Linear
        The frozen pre-trained layer.
    lora_A : torch.nn.Parameter of shape (r, in_features)
        Down-projection, Kaiming-uniform at start.
    lora_B : torch.nn.Parameter of shape (out_features, r)
        Up-projection, zero at start.
    magnitude : torch.nn.Parameter of shape (out_features,)
        The magnitude vector ``m``, the row norms of ``W0`` at start.
    scaling : float
        ``alpha / r`` or ``alpha / sqrt(r)``.
    dropout_generator : torch.Generator or None
        Generator of the dropout masks, on the input's device; ``None`` uses
        torch's global generator.

    See Also
    --------
    LoRALinear : The same adapter without the magnitude.
    apply_adapters : Put adapters in place of the Linear layers of a network.
    merge_adapters : Fold adapters back into plain Linear layers.

    Notes
    -----
    The forward pass reuses the base output:
    ``y = base(x) + (m/n - 1) * W0 x + (m/n) * s B A dropout(x)``, where
    ``n = ||W0 + s B A||_row`` and ``W0 x = base(x) - b`` when dropout is
    inactive. A norm of exactly zero (a dead unit) is clamped to the smallest
    positive float, so such a unit keeps its zero output instead of NaN.
    The factored norm is computed as ``||W0_i|| * sqrt(1 + c_i / ||W0_i||^2)``
    (``c_i`` the cross and quadratic terms), in float32 at least, which gives
    exactly ``||W0_i||`` when ``B = 0``.

    References
    ----------
    .. [1] Liu, S.-Y., Wang, C.-Y., Yin, H., Molchanov, P., Wang, Y.-C. F.,
       Cheng, K.-T. and Chen, M.-H., "DoRA: Weight-Decomposed Low-Rank
       Adaptation", ICML 2024.

    Examples
    --------
    >>> import torch
    >>> from sklearn_icml.finetune import DoRALinear
    >>> base = torch.nn.Linear(4, 3)
    >>> layer = DoRALinear(base, r=2)
    >>> x = torch.ones(5, 4)
    >>> bool(torch.equal(layer(x), base(x)))
    True
    >>> layer.merged_linear()
    Linear(in_features=4, out_features=3, bias=True)
    """

    def __init__(self, base, r=8, *, alpha=None, dropout=0.0, use_rslora=False, norm="dense",
                 detach_norm=True, generator=None):
        super().__init__(base, r, alpha=alpha, dropout=dropout, use_rslora=use_rslora, generator=generator)
        if norm not in ("dense", "factored"):
            raise ValueError(f"DoRALinear: norm must be 'dense' or 'factored'; got {norm!r}.")
        self.norm = norm
        self.detach_norm = bool(detach_norm)
        with torch.no_grad():
            m0 = torch.linalg.vector_norm(base.weight, dim=1)
        self.magnitude = nn.Parameter(m0.clone())

    def _row_norm(self):
        W0 = self.base_layer.weight
        if self.norm == "dense":
            n = torch.linalg.vector_norm(W0 + self.delta_weight(), dim=1)
        else:
            work = torch.promote_types(W0.dtype, torch.float32)
            W0w, A, B = W0.to(work), self.lora_A.to(work), self.lora_B.to(work)
            s = self.scaling
            n0 = torch.linalg.vector_norm(W0w, dim=1)
            cross = (B * (W0w @ A.T)).sum(dim=1)
            quad = ((B @ (A @ A.T)) * B).sum(dim=1)
            corr = 2.0 * s * cross + (s * s) * quad
            safe = torch.where(n0 > 0, n0, torch.ones_like(n0))
            rel = torch.sqrt(torch.clamp(1.0 + corr / (safe * safe), min=0.0))
            n = torch.where(n0 > 0, n0 * rel, torch.sqrt(torch.clamp(corr, min=0.0))).to(W0.dtype)
        return torch.clamp(n, min=torch.finfo(n.dtype).tiny)

    def weight_norm(self):
        """Row norms ``||W0 + s B A||_row`` (detached when ``detach_norm``).

        Returns
        -------
        torch.Tensor of shape (out_features,)
            One norm per output unit, over the input dimension.
        """
        if self.detach_norm:
            with torch.no_grad():
                return self._row_norm()
        return self._row_norm()

    def forward(self, x):
        """The DoRA output, reusing the base output when dropout is inactive.

        Parameters
        ----------
        x : torch.Tensor of shape (..., in_features)
            Input.

        Returns
        -------
        torch.Tensor of shape (..., out_features)
            ``(m / ||W0 + s B A||_row) * (W0 x + s B A dropout(x)) + b``.
        """
        self._check_width(x)
        base_out = self.base_layer(x)
        xd = self._dropout(x)
        if xd is x:
            bias = self.base_layer.bias
            w0x = base_out if bias is None else base_out - bias
        else:
            w0x = F.linear(xd, self.base_layer.weight)
        update = F.linear(F.linear(xd, self.lora_A), self.lora_B)
        ratio = self.magnitude / self.weight_norm()
        return base_out + (ratio - 1.0) * w0x + ratio * (self.scaling * update)

    def merged_weight(self):
        """The weight of the equivalent plain layer, ``m * (W0 + s B A) / ||W0 + s B A||_row``.

        Returns
        -------
        torch.Tensor of shape (out_features, in_features)
            Merged weight.
        """
        V = self.base_layer.weight + self.delta_weight()
        return (self.magnitude / self.weight_norm())[:, None] * V

    def extra_repr(self):
        return super().extra_repr() + f", norm={self.norm!r}, detach_norm={self.detach_norm}"


_ADAPTERS = {"dora": DoRALinear, "lora": LoRALinear}


def _linear_layers(module):
    """(name, layer) of every nn.Linear of ``module`` that is not inside an adapter."""
    adapters = [name for name, m in module.named_modules() if isinstance(m, _AdapterLinear)]
    if adapters:
        raise ValueError(f"apply_adapters: the module already holds adapters at {adapters}; "
                         "merge them first with merge_adapters.")
    return [(name, m) for name, m in module.named_modules() if isinstance(m, nn.Linear)]


def _select(layers, target_modules):
    if target_modules is None:
        return [name for name, _ in layers[:-1]]
    if isinstance(target_modules, str):
        try:
            pattern = re.compile(target_modules)
        except re.error as exc:
            raise ValueError(f"apply_adapters: target_modules={target_modules!r} is not a valid regular "
                             f"expression ({exc}).") from None
        return [name for name, _ in layers if pattern.fullmatch(name)]
    if callable(target_modules):
        return [name for name, m in layers if target_modules(name, m)]
    names = [name for name, _ in layers]
    chosen = []
    for key in target_modules:
        if not isinstance(key, str):
            raise TypeError(f"apply_adapters: target_modules entries are module names; got {key!r}.")
        hits = [n for n in names if n == key] or [n for n in names if n.endswith("." + key)]
        if not hits:
            raise ValueError(f"apply_adapters: no nn.Linear named {key!r}; the Linear layers are {names}.")
        chosen.extend(h for h in hits if h not in chosen)
    return [n for n in names if n in chosen]


def _set_submodule(root, name, new):
    parent_name, _, child = name.rpartition(".")
    parent = root.get_submodule(parent_name) if parent_name else root
    setattr(parent, child, new)


@validate_params(
    {
        "module": [HasMethods(["named_modules", "get_submodule"])],
        "method": [StrOptions({"dora", "lora"})],
        "target_modules": [list, tuple, str, callable, None],
        "r": [Interval(Integral, 1, None, closed="left")],
        "alpha": [Interval(Real, 0, math.inf, closed="neither"), None],
        "dropout": [Interval(Real, 0, 1, closed="left")],
        "use_rslora": ["boolean"],
        "norm": [StrOptions({"dense", "factored"})],
        "freeze": ["boolean"],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def apply_adapters(module, method="dora", *, target_modules=None, r=8, alpha=None, dropout=0.0,
                   use_rslora=False, norm="dense", freeze=True, random_state=None):
    """Replace Linear layers of a torch network by DoRA or LoRA adapters, in place.

    Parameters
    ----------
    module : torch.nn.Module
        The network; modified in place (deep-copy it first to keep the
        original). It must not be an ``nn.Linear`` itself: wrap it in a
        container.
    method : {"dora", "lora"}, default="dora"
        Which adapter to put in place of each selected layer.
    target_modules : list of str, str, callable or None, default=None
        Which ``nn.Linear`` layers to adapt. ``None``: every one except the
        last in registration order (taken as the output head). A list: names
        as in ``module.named_modules()``; an entry that names no layer exactly
        selects the layers whose names end with ``"." + entry``. A string:
        a regular expression that must match the full name. A callable:
        ``f(name, layer) -> bool``.
    r : int, default=8
        Rank of the adapters.
    alpha : float, default=None
        Scale numerator; ``None`` means ``2 * r``.
    dropout : float, default=0.0
        Adapter dropout during training.
    use_rslora : bool, default=False
        Scale by ``alpha / sqrt(r)`` instead of ``alpha / r``.
    norm : {"dense", "factored"}, default="dense"
        Row-norm computation of the DoRA layers (ignored for LoRA).
    freeze : bool, default=True
        Freeze every parameter of ``module`` first, so that only the adapters
        (``A``, ``B`` and, for DoRA, ``m``) are trainable.
    random_state : int, RandomState instance or None, default=None
        Seeds the draws of the ``A`` factors (a CPU generator; torch's global
        generator is left alone).

    Returns
    -------
    names : list of str
        Names of the layers that now hold adapters, in registration order.

    See Also
    --------
    merge_adapters : Fold the adapters back into plain Linear layers.
    DoRALinear : The adapter layer.

    Examples
    --------
    >>> import torch
    >>> from sklearn_icml.finetune import apply_adapters, merge_adapters
    >>> net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    >>> apply_adapters(net, "dora", r=2, random_state=0)
    ['0']
    >>> sum(p.numel() for p in net.parameters() if p.requires_grad)
    32
    >>> merge_adapters(net)[0]
    Linear(in_features=4, out_features=8, bias=True)
    """
    if isinstance(module, nn.Linear):
        raise ValueError("apply_adapters replaces layers inside a container; wrap the nn.Linear, e.g. "
                         "torch.nn.Sequential(layer), and pass the container.")
    if not isinstance(module, nn.Module):
        raise TypeError(f"apply_adapters takes a torch.nn.Module; got {type(module).__name__}.")
    layers = _linear_layers(module)
    names = _select(layers, target_modules)
    if not names:
        raise ValueError(f"apply_adapters: target_modules={target_modules!r} selects no nn.Linear layer; "
                         f"the Linear layers are {[n for n, _ in layers]}.")
    if freeze:
        for p in module.parameters():
            p.requires_grad_(False)
    generator = torch_generator(random_state)
    cls = _ADAPTERS[method]
    kwargs = dict(alpha=alpha, dropout=dropout, use_rslora=use_rslora, generator=generator)
    if method == "dora":
        kwargs["norm"] = norm
    by_name = dict(layers)
    for name in names:
        _set_submodule(module, name, cls(by_name[name], r, **kwargs))
    return names


@validate_params({"module": [HasMethods(["named_modules"])]}, prefer_skip_nested_validation=True)
def merge_adapters(module):
    """Replace every DoRA/LoRA adapter of a network by the plain ``nn.Linear`` it computes.

    Parameters
    ----------
    module : torch.nn.Module
        The network, modified in place; or a single adapter layer.

    Returns
    -------
    module : torch.nn.Module
        The same network, now free of adapters (for a single adapter, a new
        ``nn.Linear``). The merged layers' weight and bias are trainable
        parameters; every other parameter keeps its ``requires_grad`` flag.

    See Also
    --------
    apply_adapters : Put adapters in place.

    Notes
    -----
    A merged DoRA layer has weight ``m * (W0 + s B A) / ||W0 + s B A||_row``
    and the base's bias, so the network computes what it computed with the
    adapters in eval mode, at the base network's cost.

    Examples
    --------
    >>> import torch
    >>> from sklearn_icml.finetune import DoRALinear, merge_adapters
    >>> merge_adapters(DoRALinear(torch.nn.Linear(3, 2), r=1))
    Linear(in_features=3, out_features=2, bias=True)
    """
    if isinstance(module, _AdapterLinear):
        return module.merged_linear()
    if not isinstance(module, nn.Module):
        raise TypeError(f"merge_adapters takes a torch.nn.Module; got {type(module).__name__}.")
    # outermost adapters first; adapters never nest (apply_adapters refuses)
    for name, layer in list(module.named_modules()):
        if isinstance(layer, _AdapterLinear):
            _set_submodule(module, name, layer.merged_linear())
    return module


def _weight_matrix(w, name):
    if isinstance(w, nn.Module):
        if hasattr(w, "merged_weight"):
            w = w.merged_weight()
        elif isinstance(w, nn.Linear):
            w = w.weight
        else:
            raise TypeError(f"magnitude_direction_shift: {name} must be a weight matrix, an nn.Linear or an "
                            f"adapter; got {type(w).__name__}.")
    w = np.asarray(as_numpy(w), dtype=np.float64)
    if w.ndim != 2:
        raise ValueError(f"magnitude_direction_shift: {name} must be 2-D (out_features, in_features); "
                         f"got shape {w.shape}.")
    if w.size == 0:
        raise ValueError(f"magnitude_direction_shift: {name} is empty (shape {w.shape}); it needs at least "
                         "one row and one column.")
    if not np.all(np.isfinite(w)):
        raise ValueError(f"magnitude_direction_shift: {name} contains NaN or infinity.")
    return w


def magnitude_direction_shift(base_weight, weight):
    """The paper's magnitude and direction shifts between a base weight and a tuned one.

    With one norm and one direction per output unit (row ``i`` of a weight
    of shape ``(out_features, in_features)``)::

        delta_m = mean_i | ||W_i|| - ||W0_i|| |
        delta_d = mean_i (1 - cos(W_i, W0_i))

    Plotting ``delta_d`` (x) against ``delta_m`` (y) over training steps and
    layers gives the paper's Figure 2: full fine-tuning and DoRA move along a
    negative slope, LoRA along a positive one.

    Parameters
    ----------
    base_weight : array-like, torch.Tensor or torch.nn.Module
        The pre-trained weight ``W0``, shape ``(out_features, in_features)``.
        An ``nn.Linear`` gives its weight; an adapter its merged weight.
    weight : array-like, torch.Tensor or torch.nn.Module
        The tuned weight, same shape.

    Returns
    -------
    delta_m : float
        Mean absolute change of the row norms.
    delta_d : float
        Mean cosine distance between matching rows.

    See Also
    --------
    DoRALinear : The adapter whose merged weight is compared here.

    Notes
    -----
    The paper writes the norm "column-wise" in its ``d x k`` notation; in the
    ``nn.Linear`` layout that is one norm per output unit (row), as in the
    official code and in peft. A row that is zero in either weight counts as
    cosine 0 (``1 - cos = 1``).

    References
    ----------
    .. [1] Liu, S.-Y. et al., "DoRA: Weight-Decomposed Low-Rank Adaptation",
       ICML 2024, Section 2 (weight decomposition analysis).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.finetune import magnitude_direction_shift
    >>> W0 = np.array([[3.0, 4.0], [1.0, 0.0]])
    >>> dm, dd = magnitude_direction_shift(W0, 2 * W0)
    >>> float(dm), float(dd)
    (3.0, 0.0)
    """
    W0 = _weight_matrix(base_weight, "base_weight")
    W = _weight_matrix(weight, "weight")
    if W0.shape != W.shape:
        raise ValueError(f"magnitude_direction_shift: shapes differ, base_weight {W0.shape} vs weight {W.shape}.")
    # both weights divided by one power of two (exact), so norms and products of huge weights do not overflow
    scale = float(np.ldexp(1.0, np.frexp(max(np.abs(W0).max(), np.abs(W).max(), np.finfo(float).tiny))[1] - 1))
    W0, W = W0 / scale, W / scale
    n0 = np.linalg.norm(W0, axis=1)
    n = np.linalg.norm(W, axis=1)
    denom = n0 * n
    cos = np.divide(np.einsum("ij,ij->i", W0, W), denom, out=np.zeros_like(denom), where=denom > 0)
    cos = np.clip(cos, -1.0, 1.0)
    with np.errstate(over="ignore"):
        delta_m = float(np.mean(np.abs(n - n0)) * scale)
    if not np.isfinite(delta_m):
        raise ValueError("magnitude_direction_shift: the change of the row norms overflows float64; the weights "
                         "are too large.")
    return delta_m, float(np.mean(1.0 - cos))
