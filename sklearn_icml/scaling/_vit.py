"""A small vision transformer whose patch size is a shape: build, resize (FlexiViT), count FLOPs.

The paper's own adaptive shape is the patch size of a ViT (Anagnostidis et
al., ICML 2024): large patches (few tokens) are cheap and learn fast early,
small patches (many tokens) reach lower losses. :func:`make_patch_vit` builds
a seeded model, :func:`resize_patch_vit` switches its patch size keeping the
training state (the patch embedding by the pseudo-inverse rule, the position
embeddings interpolated, everything else unchanged), and
:func:`patch_vit_flops` counts the compute of a training step. The three plug
into :func:`~sklearn_icml.scaling.train_adaptive`. torch is imported when a
function is called.
"""

import copy
from numbers import Integral, Real

from ._resize import resize_patch_embedding, resize_position_embedding

__all__ = ["make_patch_vit", "patch_vit_flops", "resize_patch_vit"]


def _check_int(name, label, value, low=1):
    if not isinstance(value, Integral) or isinstance(value, bool) or value < low:
        raise ValueError(f"{name}: {label} must be an int >= {low}; got {value!r}.")


def make_patch_vit(patch_size=8, *, image_size=32, channels=1, width=64, depth=2, n_heads=4, mlp_ratio=2.0,
                   n_outputs=10, random_state=None):
    """A small seeded vision transformer on square images, with the patch size as its shape.

    Parameters
    ----------
    patch_size : int, default=8
        Patch side; must divide ``image_size``.
    image_size : int, default=32
        Image side.
    channels : int, default=1
        Image channels.
    width : int, default=64
        Token width.
    depth : int, default=2
        Number of ``torch.nn.TransformerEncoderLayer`` blocks (pre-norm, GELU,
        no dropout).
    n_heads : int, default=4
        Attention heads; must divide ``width``.
    mlp_ratio : float, default=2.0
        Hidden width of each block's MLP over ``width``.
    n_outputs : int, default=10
        Outputs of the linear head (class logits).
    random_state : int, RandomState instance or None, default=None
        Seeds every initial weight (the global torch generator is not used).

    Returns
    -------
    model : torch.nn.Module
        A ``PatchViT``: ``forward`` takes ``(n, channels, image_size,
        image_size)`` images or the same flattened; ``model.shape`` is the
        patch size; the patch embedding is ``model.patch_embed`` (an
        ``nn.Linear`` on patches flattened row-major), the position
        embeddings ``model.pos_embed`` (``(1, grid**2, width)``, no class
        token); the output is the head applied to the mean of the final
        normalised tokens.

    See Also
    --------
    resize_patch_vit : Switch the patch size keeping the training state.
    patch_vit_flops : Compute of a training step.

    Examples
    --------
    >>> import torch
    >>> from sklearn_icml.scaling import make_patch_vit
    >>> vit = make_patch_vit(8, random_state=0)
    >>> vit.shape, vit.grid, tuple(vit(torch.zeros(3, 1, 32, 32)).shape)
    (8, 4, (3, 10))
    """
    from ..utils._torch import torch_generator

    name = "make_patch_vit"
    for label, value in (("patch_size", patch_size), ("image_size", image_size), ("channels", channels),
                         ("width", width), ("depth", depth), ("n_heads", n_heads), ("n_outputs", n_outputs)):
        _check_int(name, label, value)
    if image_size % patch_size:
        raise ValueError(f"{name}: patch_size must divide image_size; got patch_size={patch_size}, "
                         f"image_size={image_size}.")
    if width % n_heads:
        raise ValueError(f"{name}: n_heads must divide width; got n_heads={n_heads}, width={width}.")
    if not isinstance(mlp_ratio, Real) or isinstance(mlp_ratio, bool) or mlp_ratio <= 0:
        raise ValueError(f"{name}: mlp_ratio must be a positive number; got {mlp_ratio!r}.")
    from ._vit_module import PatchViT

    return PatchViT(image_size, patch_size, channels, width, depth, n_heads, float(mlp_ratio), n_outputs,
                    torch_generator(random_state))


def _check_vit(name, model):
    from ._vit_module import PatchViT

    if not isinstance(model, PatchViT):
        raise TypeError(f"{name}: model must be a model of make_patch_vit; got {type(model).__name__}.")


def resize_patch_vit(model, patch_size, *, position="nearest"):
    """Switch a :func:`make_patch_vit` model to another patch size, keeping its training state.

    The patch embedding's weight is resized by :func:`resize_patch_embedding`
    (FlexiViT's pseudo-inverse rule: sub-pixel weights summed going to a
    smaller patch, spread evenly going to a larger one; bias kept), the
    position embeddings by :func:`resize_position_embedding` to the new grid;
    every other parameter (the transformer blocks, the final norm, the head)
    is kept as it is. Use it as the ``resize`` of
    :func:`~sklearn_icml.scaling.train_adaptive`.

    Parameters
    ----------
    model : torch.nn.Module
        A model of :func:`make_patch_vit`. Not modified.
    patch_size : int
        The new patch size: a multiple or a divisor of the current one that
        divides the image side.
    position : {"nearest", "bilinear"}, default="nearest"
        How the position embeddings are interpolated (see
        :func:`resize_position_embedding`).

    Returns
    -------
    resized : torch.nn.Module
        A new model (``model`` itself when the patch size is unchanged), on
        ``model``'s device and in its dtype.

    See Also
    --------
    make_patch_vit : Builds the model.
    resize_patch_embedding : The rule for the patch embedding.

    Notes
    -----
    Going to a smaller patch ``p / k`` with ``position="nearest"``, the
    output is exactly preserved on every image that is constant on each of
    the old ``p x p`` patches: each new token equals its old patch's token
    (the summed weights give a constant patch the same embedding, the
    nearest-interpolated position is its parent's), so the new sequence is
    the old one with every token repeated ``k**2`` times; softmax attention,
    the per-token layers and the mean pooling give the same output on such a
    sequence. Images upsampled by nearest neighbour from ``1/p`` of the side
    are such images. On other images (and after ``"bilinear"``, or going to
    a larger patch) the output changes, by as much as the images differ
    from constant patches; the switch then costs some loss, which the
    benchmark reports.

    Examples
    --------
    >>> import torch
    >>> from sklearn_icml.scaling import make_patch_vit, resize_patch_vit
    >>> vit = make_patch_vit(8, random_state=0).double()
    >>> blocks = torch.rand(2, 1, 4, 4, dtype=torch.float64)          # one value per 8 x 8 patch
    >>> x = blocks.repeat_interleave(8, 2).repeat_interleave(8, 3)
    >>> small = resize_patch_vit(vit, 4)
    >>> small.grid, bool(torch.allclose(small(x), vit(x), atol=1e-10))
    (8, True)
    """
    import torch

    name = "resize_patch_vit"
    _check_vit(name, model)
    _check_int(name, "patch_size", patch_size)
    if position not in ("nearest", "bilinear"):
        raise ValueError(f"{name}: position must be 'nearest' or 'bilinear'; got {position!r}.")
    old = model.patch_size
    if patch_size == old:
        return model
    if model.image_size % patch_size or (patch_size % old and old % patch_size):
        raise ValueError(f"{name}: patch_size must divide the image side {model.image_size} and be a multiple or "
                         f"a divisor of the current patch size {old}; got {patch_size}.")
    new = copy.deepcopy(model)
    grid = model.image_size // patch_size
    W = resize_patch_embedding(model.patch_embed.weight, patch_size, channels=model.channels)
    with torch.random.fork_rng(devices=[]):  # the default init draws globally: restored, and overwritten below
        embed = torch.nn.Linear(W.shape[1], W.shape[0], device=W.device, dtype=W.dtype)
    with torch.no_grad():
        embed.weight.copy_(W)
        embed.bias.copy_(model.patch_embed.bias.detach())
    new.patch_embed = embed
    new.pos_embed = torch.nn.Parameter(resize_position_embedding(model.pos_embed, grid, mode=position).clone())
    new.patch_size = int(patch_size)
    return new


def patch_vit_flops(model, batch_size=1, *, patch_size=None):
    """Count the FLOPs of one training step of a :func:`make_patch_vit` model (6 x parameters x tokens + attention).

    Parameters
    ----------
    model : torch.nn.Module
        A model of :func:`make_patch_vit` (only its sizes are read).
    batch_size : int, default=1
        Images per step.
    patch_size : int or None, default=None
        Count for this patch size instead of the model's.

    Returns
    -------
    flops : float
        ``6 B [T N_tok + N_head + 2 L T^2 w]`` with ``B`` the batch size,
        ``T`` the tokens per image, ``N_tok`` the parameters applied at every
        token (patch embedding, transformer blocks, final norm), ``N_head``
        those of the head (once per image), ``L`` the depth and ``w`` the
        width.

    Notes
    -----
    The rule of the scaling-law literature, as in the other experiments of
    this family (6 FLOPs per parameter and example: 2 forward, 4 backward),
    applied per token (Kaplan et al. 2020), plus the attention scores and
    their weighted sum, which no parameter counts: ``Q K^T`` and ``A V`` take
    ``2 T w`` multiply-adds each per token and layer, ``4 T w`` FLOPs forward
    per token, 3 times that for a training step, ``12 L T^2 w`` per image.
    Position embeddings are additions and are not counted. Softmax, norms
    and activations are left out.

    Examples
    --------
    >>> from sklearn_icml.scaling import make_patch_vit, patch_vit_flops
    >>> vit = make_patch_vit(8, random_state=0)
    >>> patch_vit_flops(vit, 32, patch_size=4) / patch_vit_flops(vit, 32) > 4   # 4x the tokens, more attention
    True
    """
    name = "patch_vit_flops"
    _check_vit(name, model)
    _check_int(name, "batch_size", batch_size)
    p = model.patch_size if patch_size is None else patch_size
    _check_int(name, "patch_size", p)
    tokens = (model.image_size // p) ** 2
    embed = (model.channels * p * p + 1) * model.width
    per_token = embed + sum(q.numel() for q in model.blocks.parameters()) + sum(
        q.numel() for q in model.norm.parameters())
    head = sum(q.numel() for q in model.head.parameters())
    return 6.0 * batch_size * (tokens * per_token + head + 2 * model.depth * tokens * tokens * model.width)
