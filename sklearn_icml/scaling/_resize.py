"""Shape changes that keep a network's function: MLP width growth and input-resolution resizing.

These are the state-keeping operators an adaptive-shape schedule needs (the
paper's assumption is that a switch keeps the loss). torch is imported when a
function is called.
"""

from numbers import Integral

import numpy as np

from ..utils._random import SEED_MAX
from ..utils._torch import torch_generator

__all__ = ["resize_input_resolution", "widen_mlp"]


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
    if new_size >= size:
        k = new_size // size
        Wn = W.repeat_interleave(k, dim=2).repeat_interleave(k, dim=3) / (k * k)
    else:
        k = size // new_size
        Wn = W.reshape(layer.out_features, channels, new_size, k, new_size, k).sum(dim=(3, 5))
    new = torch.nn.Linear(channels * new_size * new_size, layer.out_features, bias=layer.bias is not None,
                          device=W.device, dtype=W.dtype)
    with torch.no_grad():
        new.weight.copy_(Wn.reshape(layer.out_features, -1))
        if layer.bias is not None:
            new.bias.copy_(layer.bias.detach())
    return new
