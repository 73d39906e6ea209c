"""Shape changes that keep a network's function: MLP width growth, input-resolution and patch-size resizing.

These are the state-keeping operators an adaptive-shape schedule needs (the
paper's assumption is that a switch keeps the loss). One rule, the
pseudo-inverse resize (PI-resize) of FlexiViT under nearest-neighbour
resampling, serves the input resolution of a first layer and the patch size of
a patch embedding: going to a larger grid each weight is spread evenly over
its sub-pixels, going to a smaller one the sub-pixel weights are summed.
torch is imported when a function is called; :func:`resize_patch_embedding`
and :func:`resize_position_embedding` also take numpy arrays.
"""

from numbers import Integral

import numpy as np

from ..utils._random import SEED_MAX
from ..utils._torch import torch_generator

__all__ = ["resize_input_resolution", "resize_patch_embedding", "resize_position_embedding", "widen_mlp"]


def _linears(model):
    import torch

    if not isinstance(model, torch.nn.Sequential):
        raise TypeError(f"widen_mlp: model must be a torch.nn.Sequential of Linear layers and element-wise "
                        f"activations; got {type(model).__name__}.")
    idx = [i for i, m in enumerate(model) if isinstance(m, torch.nn.Linear)]
    if len(idx) < 2:
        raise ValueError("widen_mlp: model needs at least two Linear layers (one hidden layer).")
    return idx


def widen_mlp(model, width, *, method="fresh", init_scale=1.0, random_state=None):
    """Grow the hidden layers of an MLP without changing the function it computes.

    Parameters
    ----------
    model : torch.nn.Sequential
        Linear layers with element-wise activations between them (``Tanh``,
        ``ReLU``, ...). Not modified.
    width : int or sequence of int
        New width of every hidden layer, or one per hidden layer; each at least
        the current width.
    method : {"fresh", "duplicate"}, default="fresh"
        ``"fresh"``: old units kept, new units get random incoming weights (the
        default ``nn.Linear`` initialisation times ``init_scale``) and zero
        outgoing weights. ``"duplicate"`` (Net2WiderNet): each new unit copies
        an existing unit's incoming weights, and the outgoing weights of a unit
        and its copies are split at random fractions summing to one, which
        keeps the function and breaks the copies' symmetry.
    init_scale : float, default=1.0
        Scale of the new units' random incoming weights (``"fresh"``).
    random_state : int, RandomState instance or None, default=None
        Seeds the new weights and, for ``"duplicate"``, the copied units and
        the split fractions.

    Returns
    -------
    wider : torch.nn.Sequential
        A new network with the same outputs on every input (up to rounding).

    Examples
    --------
    >>> import torch
    >>> from sklearn_icml.scaling import widen_mlp
    >>> net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    >>> wide = widen_mlp(net, 16, random_state=0)
    >>> wide[0].out_features, bool(torch.allclose(wide(torch.ones(2, 3)), net(torch.ones(2, 3))))
    (16, True)
    """
    import copy

    import torch

    if method not in ("fresh", "duplicate"):
        raise ValueError(f"widen_mlp: method must be 'fresh' or 'duplicate'; got {method!r}.")
    idx = _linears(model)
    hidden = [model[i].out_features for i in idx[:-1]]
    widths = [width] * len(hidden) if isinstance(width, Integral) else list(width)
    if len(widths) != len(hidden) or any(int(w) < h for w, h in zip(widths, hidden)):
        raise ValueError(f"widen_mlp: width must be one int or one per hidden layer, each at least the current "
                         f"widths {hidden}; got {width!r}.")
    gen = torch_generator(random_state)
    rng = np.random.RandomState(int(torch.randint(SEED_MAX, (1,), generator=gen)))
    wider = copy.deepcopy(model)
    in_map, in_frac = None, None  # for the previous layer's units: source unit and share of its outgoing weight
    for pos, i in enumerate(idx):
        old = model[i]
        W, b = old.weight.detach(), None if old.bias is None else old.bias.detach()
        n_out = int(widths[pos]) if pos < len(hidden) else old.out_features
        n_in = old.in_features if in_map is None else len(in_map)
        new = torch.nn.Linear(n_in, n_out, bias=b is not None, device=W.device, dtype=W.dtype)
        with torch.no_grad():
            if method == "fresh":
                new.weight.zero_()
                new.weight[:W.shape[0], :W.shape[1]] = W
                if n_out > W.shape[0]:  # new units: random incoming weights from every input
                    bound = init_scale / np.sqrt(n_in)
                    rand = (torch.rand(n_out - W.shape[0], n_in, generator=gen, dtype=W.dtype) * 2 - 1) * bound
                    new.weight[W.shape[0]:] = rand.to(W.device)
                if b is not None:
                    new.bias.zero_()
                    new.bias[:b.shape[0]] = b
                    if n_out > b.shape[0]:
                        bound = init_scale / np.sqrt(n_in)
                        rand = (torch.rand(n_out - b.shape[0], generator=gen, dtype=W.dtype) * 2 - 1) * bound
                        new.bias[b.shape[0]:] = rand.to(W.device)
            else:
                out_map = np.arange(W.shape[0]) if n_out == W.shape[0] else np.concatenate(
                    [np.arange(W.shape[0]), rng.randint(W.shape[0], size=n_out - W.shape[0])])
                cols = np.arange(W.shape[1]) if in_map is None else in_map
                frac = np.ones(W.shape[1]) if in_frac is None else in_frac
                Wn = W[torch.as_tensor(out_map, device=W.device)][:, torch.as_tensor(cols, device=W.device)]
                new.weight.copy_(Wn * torch.as_tensor(frac, dtype=W.dtype, device=W.device)[None, :])
                if b is not None:
                    new.bias.copy_(b[torch.as_tensor(out_map, device=W.device)])
                in_map = out_map
                in_frac = _split_fractions(out_map, rng)
        if method == "fresh":
            in_map = np.arange(n_out)
        wider[i] = new
    return wider


def _split_fractions(units, rng):
    """Random positive fractions summing to one over the copies of each source unit."""
    frac = np.ones(len(units))
    for u in np.unique(units):
        where = np.flatnonzero(units == u)
        if len(where) > 1:
            share = rng.uniform(0.25, 1.0, size=len(where))
            frac[where] = share / share.sum()
    return frac


def resize_input_resolution(layer, size, new_size, *, channels=1):
    """Resize a first layer on flattened average-pooled images to another resolution (PI-resize).

    The layer reads ``channels x size x size`` images flattened row-major.
    Going up by an integer factor ``k``, each weight is spread evenly over its
    ``k x k`` sub-pixels: on the finer image the layer computes exactly what it
    computed on the average-pooled one. Going down, the sub-pixel weights are
    summed: exact for images that are constant on each ``k x k`` block (the
    pseudo-inverse resize of FlexiViT for this linear map).

    Parameters
    ----------
    layer : torch.nn.Linear
        First layer with ``channels * size * size`` inputs. Not modified.
    size : int
        Current image side.
    new_size : int
        New image side; a multiple or a divisor of ``size``.
    channels : int, default=1
        Image channels.

    Returns
    -------
    resized : torch.nn.Linear
        A new layer with ``channels * new_size * new_size`` inputs, same bias.

    References
    ----------
    .. [1] L. Beyer et al., "FlexiViT: One Model for All Patch Sizes", CVPR 2023.

    Examples
    --------
    >>> import torch
    >>> from sklearn_icml.scaling import resize_input_resolution
    >>> coarse = torch.nn.Linear(4, 3)                       # 2x2 images
    >>> fine = resize_input_resolution(coarse, 2, 4)         # 4x4 images
    >>> x = torch.rand(5, 1, 4, 4)
    >>> pooled = torch.nn.functional.avg_pool2d(x, 2).flatten(1)
    >>> bool(torch.allclose(fine(x.flatten(1)), coarse(pooled), atol=1e-6))
    True
    """
    import torch

    if not isinstance(layer, torch.nn.Linear):
        raise TypeError(f"resize_input_resolution: layer must be a torch.nn.Linear; got {type(layer).__name__}.")
    size, new_size, channels = int(size), int(new_size), int(channels)
    if layer.in_features != channels * size * size:
        raise ValueError(f"resize_input_resolution: layer has {layer.in_features} inputs, not channels*size*size "
                         f"= {channels * size * size}.")
    if size < 1 or new_size < 1 or (new_size % size and size % new_size):
        raise ValueError(f"resize_input_resolution: new_size must be a multiple or a divisor of size; got size="
                         f"{size}, new_size={new_size}.")
    W = layer.weight.detach().reshape(layer.out_features, channels, size, size)
    Wn = _pi_resize(W, new_size)
    new = torch.nn.Linear(channels * new_size * new_size, layer.out_features, bias=layer.bias is not None,
                          device=W.device, dtype=W.dtype)
    with torch.no_grad():
        new.weight.copy_(Wn.reshape(layer.out_features, -1))
        if layer.bias is not None:
            new.bias.copy_(layer.bias.detach())
    return new


def _pi_resize(W, new_size):
    """PI-resize of the trailing two (square) axes of ``W`` (torch tensor or numpy array) to ``new_size``.

    Up by an integer factor ``k``: every entry repeated over a ``k x k`` block
    and divided by ``k**2``; down: ``k x k`` blocks summed.
    """
    size = W.shape[-1]
    lead = tuple(W.shape[:-2])
    if new_size >= size:
        k = new_size // size
        if isinstance(W, np.ndarray):
            return np.repeat(np.repeat(W, k, axis=-2), k, axis=-1) / (k * k)
        return W.repeat_interleave(k, dim=-2).repeat_interleave(k, dim=-1) / (k * k)
    k = size // new_size
    blocks = W.reshape(lead + (new_size, k, new_size, k))
    axes = (len(lead) + 1, len(lead) + 3)
    return blocks.sum(axis=axes) if isinstance(W, np.ndarray) else blocks.sum(dim=axes)


def _as_array(x, name, what):
    if isinstance(x, np.ndarray):
        return x
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency of the torch extras
        torch = None
    if torch is not None and isinstance(x, torch.Tensor):
        return x.detach()
    raise TypeError(f"{name}: {what} must be a numpy array or a torch tensor; got {type(x).__name__}.")


def _check_sides(name, size, new_size, label):
    if size < 1 or new_size < 1 or (new_size % size and size % new_size):
        raise ValueError(f"{name}: {label} must be a multiple or a divisor of the current one; got {size} -> "
                         f"{new_size}.")


def resize_patch_embedding(weight, new_patch_size, *, channels=1):
    """Resize a ViT patch embedding to another patch size by FlexiViT's pseudo-inverse rule.

    The embedding maps a ``channels x p x p`` patch ``x`` to the token
    ``W x``. Resizing to ``p' = k p`` (a larger patch) spreads each weight
    evenly over its ``k x k`` sub-pixels (divided by ``k**2``); resizing to
    ``p' = p / k`` (a smaller patch) sums the ``k x k`` sub-pixel weights: the
    rule of :func:`resize_input_resolution`, applied per patch.

    Parameters
    ----------
    weight : ndarray or torch.Tensor of shape (width, channels * p * p) or (width, channels, p, p)
        The embedding's weight: an ``nn.Linear`` on patches flattened
        row-major (channel, row, column), or a ``Conv2d`` kernel. Not modified.
    new_patch_size : int
        The new patch side ``p'``; a multiple or a divisor of ``p``.
    channels : int, default=1
        Channels of the image, for a 2-D ``weight``.

    Returns
    -------
    new_weight : ndarray or torch.Tensor
        The resized weight, of the same kind and layout as ``weight``. The
        bias, when there is one, stays as it is.

    See Also
    --------
    resize_position_embedding : The matching resize of the position embeddings.
    resize_patch_vit : Both applied to a whole :func:`make_patch_vit` model.

    Notes
    -----
    Where the token is preserved exactly (bias included, for any weight):

    - to a larger patch ``k p``: the token of a ``k p x k p`` patch equals the
      old token of its ``k x k`` average-pooled ``p x p`` patch, so in
      particular the token of the nearest-upsampled (each pixel repeated over
      ``k x k``) copy of a ``p x p`` patch equals the old token of that patch;
    - to a smaller patch ``p / k``: the token of a ``p/k x p/k`` patch ``u``
      equals the old token of its nearest-upsampled ``p x p`` copy, i.e. the
      old token of every ``p x p`` patch that is constant on ``k x k`` blocks.
      A ``p x p`` patch that is constant altogether gives each of its
      ``k x k`` sub-patches the old token.

    These are the pseudo-inverse resize of Beyer et al. (2023) when the image
    resize between the two patch sizes is nearest-neighbour (its transpose is
    the block sum); the paper's version resizes with bilinear interpolation,
    whose pseudo-inverse is not a block operation. Other patches get a token
    that is close but not equal. [verify] Anagnostidis et al. (2024) follow
    FlexiViT for the patch-size schedule; that they resize this way between
    patch sizes 8, 4 and 2 (integer factors) is our assumption.

    References
    ----------
    .. [1] L. Beyer et al., "FlexiViT: One Model for All Patch Sizes", CVPR 2023.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.scaling import resize_patch_embedding
    >>> W = np.arange(8.0).reshape(2, 4)               # 2 x 2 patches, width 2
    >>> resize_patch_embedding(W, 1)                   # 1 x 1 patches: sums
    array([[ 6.],
           [22.]])
    >>> resize_patch_embedding(W, 4).shape             # 4 x 4 patches: spread over sub-pixels
    (2, 16)
    """
    name = "resize_patch_embedding"
    W = _as_array(weight, name, "weight")
    channels, new_patch_size = int(channels), int(new_patch_size)
    if W.ndim == 4:
        size = W.shape[-1]
        if W.shape[-2] != size:
            raise ValueError(f"{name}: a 4-D weight must be (width, channels, p, p); got shape {tuple(W.shape)}.")
        _check_sides(name, size, new_patch_size, "new_patch_size")
        return _pi_resize(W, new_patch_size)
    if W.ndim != 2:
        raise ValueError(f"{name}: weight must be 2-D or 4-D; got {W.ndim}-D.")
    size = int(round((W.shape[1] / max(channels, 1)) ** 0.5))
    if channels < 1 or channels * size * size != W.shape[1]:
        raise ValueError(f"{name}: weight has {W.shape[1]} inputs, not channels * p * p for channels={channels}.")
    _check_sides(name, size, new_patch_size, "new_patch_size")
    resized = _pi_resize(W.reshape(W.shape[0], channels, size, size), new_patch_size)
    return resized.reshape(W.shape[0], channels * new_patch_size * new_patch_size)


def resize_position_embedding(pos, new_grid, *, mode="nearest"):
    """Resize learned position embeddings on a square grid of patches to another grid side.

    Parameters
    ----------
    pos : ndarray or torch.Tensor of shape (g * g, width) or (1, g * g, width)
        One embedding per patch, row-major over the ``g x g`` grid (no class
        token). Not modified.
    new_grid : int
        The new grid side. With ``mode="nearest"``, a multiple or a divisor of ``g``.
    mode : {"nearest", "bilinear"}, default="nearest"
        ``"nearest"``: to a finer grid each embedding is repeated over its
        ``k x k`` block, to a coarser one each block is averaged.
        ``"bilinear"``: ``torch.nn.functional.interpolate`` with
        ``align_corners=False`` (FlexiViT's choice; torch tensors only).

    Returns
    -------
    new_pos : ndarray or torch.Tensor of shape (new_grid**2, width) or (1, new_grid**2, width)
        Same kind and layout as ``pos``.

    See Also
    --------
    resize_patch_embedding : The matching resize of the patch embedding.

    Notes
    -----
    With ``"nearest"`` to a finer grid, the tokens of a patch constant on
    its old (larger) patch are ``k**2`` exact copies of the old token, and a
    transformer with mean pooling or a class token computes the same output
    on such copies (softmax attention over a set whose members are each
    repeated ``k**2`` times gives the same weights); this is what keeps a
    patch-size switch exact in :func:`resize_patch_vit`. Going back (block
    mean) returns the original grid. [verify] FlexiViT resizes position
    embeddings bilinearly; we default to nearest for the exactness above and
    offer bilinear.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.scaling import resize_position_embedding
    >>> pos = np.arange(4.0).reshape(4, 1)             # a 2 x 2 grid, width 1
    >>> resize_position_embedding(pos, 4)[:, 0].reshape(4, 4)[:2]
    array([[0., 0., 1., 1.],
           [0., 0., 1., 1.]])
    """
    name = "resize_position_embedding"
    P = _as_array(pos, name, "pos")
    if mode not in ("nearest", "bilinear"):
        raise ValueError(f"{name}: mode must be 'nearest' or 'bilinear'; got {mode!r}.")
    batched = P.ndim == 3
    if P.ndim not in (2, 3) or (batched and P.shape[0] != 1):
        raise ValueError(f"{name}: pos must be (g * g, width) or (1, g * g, width); got shape {tuple(P.shape)}.")
    grid_tokens, width = P.shape[-2], P.shape[-1]
    g, new_grid = int(round(grid_tokens ** 0.5)), int(new_grid)
    if g * g != grid_tokens:
        raise ValueError(f"{name}: pos has {grid_tokens} tokens, not a square grid.")
    is_np = isinstance(P, np.ndarray)
    grid = P.reshape(g, g, width)
    if mode == "nearest":
        _check_sides(name, g, new_grid, "new_grid")
        if new_grid >= g:
            k = new_grid // g
            new = (np.repeat(np.repeat(grid, k, 0), k, 1) if is_np
                   else grid.repeat_interleave(k, dim=0).repeat_interleave(k, dim=1))
        else:
            k = g // new_grid
            blocks = grid.reshape(new_grid, k, new_grid, k, width)
            new = blocks.mean(axis=(1, 3)) if is_np else blocks.mean(dim=(1, 3))
    else:
        if is_np:
            raise TypeError(f"{name}: mode='bilinear' needs a torch tensor.")
        import torch

        img = grid.permute(2, 0, 1).unsqueeze(0)
        new = torch.nn.functional.interpolate(img, size=(new_grid, new_grid), mode="bilinear",
                                              align_corners=False)[0].permute(1, 2, 0)
    new = new.reshape(new_grid * new_grid, width)
    return new[None] if batched else new
