"""Synthetic three-modality embeddings (audio, text, image) in a unified space and an audio-text expert space."""

from numbers import Integral, Real

import numpy as np
from sklearn.utils import Bunch, check_random_state

from ..utils._sklearn_private import Interval, validate_params

__all__ = ["make_multimodal_embeddings"]

MODALITIES = ("audio", "text", "image")


@validate_params(
    {
        "n_items": [Interval(Integral, 1, None, closed="left")],
        "n_shared": [Interval(Integral, 1, None, closed="left")],
        "n_visual": [Interval(Integral, 0, None, closed="left")],
        "n_audio": [Interval(Integral, 0, None, closed="left")],
        "n_unified_features": [Interval(Integral, 1, None, closed="left")],
        "n_expert_features": [Interval(Integral, 1, None, closed="left")],
        "n_experts": [Interval(Integral, 1, None, closed="left")],
        "unified_noise": [Interval(Real, 0, None, closed="left")],
        "audio_noise": [Interval(Real, 0, None, closed="left")],
        "expert_noise": [Interval(Real, 0, None, closed="left")],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_multimodal_embeddings(n_items=3000, *, n_shared=12, n_visual=6, n_audio=6, n_unified_features=64,
                               n_expert_features=32, n_experts=1, unified_noise=0.9, audio_noise=1.6,
                               expert_noise=0.25, random_state=None):
    """Paired embeddings of items in three modalities, in a unified space and an audio-text expert space.

    Every item has latent semantics ``s = [s_shared | s_visual | s_audio]``
    (standard normal). What each encoder sees is a mask of ``s``:

    * the **unified** space (an ImageBind-like space covering audio, text and
      image) embeds ``u_m = W_u (mask_m * s) / sqrt(n_m) + noise_m`` with one
      linear map ``W_u`` for all modalities (so the modalities are aligned):
      the image sees shared and visual semantics, the text all semantics,
      both with noise ``unified_noise``; the audio sees only the shared part,
      with the larger ``audio_noise`` (a weak audio encoder);
    * the **expert** space (a CLAP-like audio-text space that has no image
      encoder) embeds ``e_m = tanh(W_e (mask * s) / sqrt(n_e)) + noise``, a
      nonlinear map of the shared and audio semantics (no visual ones), with
      noise ``expert_noise``, for audio and text alike. With ``n_experts > 1``
      each further expert (a CLAP-Music beside CLAP-General) has its own
      map ``W_e`` and noise, and its block follows the previous one.

    Noise is isotropic Gaussian with a per-coordinate standard deviation of
    the given value divided by ``sqrt(n_features)``, so a noise level is a
    noise-to-signal ratio of norms.

    Parameters
    ----------
    n_items : int, default=3000
        Number of items; each has an audio, a text and an image embedding.
    n_shared : int, default=12
        Latent semantics every modality carries.
    n_visual : int, default=6
        Latent semantics only images (and texts) carry.
    n_audio : int, default=6
        Latent semantics only sounds (and texts) carry.
    n_unified_features : int, default=64
        Width of the unified space.
    n_expert_features : int, default=32
        Width of each expert space.
    n_experts : int, default=1
        Number of audio-text expert spaces; the first one does not depend on
        how many follow (the same ``random_state`` gives the same first
        expert).
    unified_noise : float, default=0.9
        Noise of the unified image and text encoders.
    audio_noise : float, default=1.6
        Noise of the unified audio encoder.
    expert_noise : float, default=0.25
        Noise of the expert encoders.
    random_state : int, RandomState instance or None, default=None
        Seed.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        With keys

        * ``X``: ndarray of shape (3 * n_items, n_unified_features +
          n_experts * n_expert_features), the paired fit matrix ``[unified |
          expert]`` (``[unified | expert_1 | expert_2 | ...]``):
          the audio rows of every item, then the text rows, then the image
          rows, whose expert part is NaN (the expert has no image encoder);
        * ``modality``: ndarray of str, ``"audio"``, ``"text"`` or
          ``"image"`` for each row of ``X``;
        * ``item``: ndarray of int, the item of each row of ``X``;
        * ``unified_audio``, ``unified_text``, ``unified_image``: ndarrays of
          shape (n_items, n_unified_features);
        * ``expert_audio``, ``expert_text``: ndarrays of shape (n_items,
          n_experts * n_expert_features), the expert blocks side by side;
        * ``semantics``: ndarray of shape (n_items, n_shared + n_visual +
          n_audio), the latent semantics;
        * ``n_base_features``: int, the width of the unified part of ``X``.

    See Also
    --------
    sklearn_icml.multimodal.SpaceBond : Binds the expert space to the unified one.

    Examples
    --------
    >>> from sklearn_icml.datasets import make_multimodal_embeddings
    >>> data = make_multimodal_embeddings(100, random_state=0)
    >>> data.X.shape, data.unified_audio.shape, data.expert_text.shape
    ((300, 96), (100, 64), (100, 32))
    >>> import numpy as np
    >>> sorted(set(data.modality.tolist())), bool(np.isnan(data.X[data.modality == "image", 64:]).all())
    (['audio', 'image', 'text'], True)
    """
    rng = check_random_state(random_state)
    n_latent = n_shared + n_visual + n_audio
    semantics = rng.standard_normal((n_items, n_latent))
    shared = np.arange(n_latent) < n_shared
    visual = (np.arange(n_latent) >= n_shared) & (np.arange(n_latent) < n_shared + n_visual)
    audio = np.arange(n_latent) >= n_shared + n_visual
    W_u = rng.standard_normal((n_latent, n_unified_features))
    W_e = rng.standard_normal((n_latent, n_expert_features))

    def encode(W, mask, noise):
        signal = (semantics * mask) @ W / np.sqrt(max(mask.sum(), 1) * W.shape[1])
        return signal, noise * rng.standard_normal(signal.shape) / np.sqrt(W.shape[1])

    def unified(mask, noise):
        signal, eps = encode(W_u, mask, noise)
        return signal + eps

    def expert(mask, W_e):
        signal, eps = encode(W_e, mask, expert_noise)
        # tanh of a unit-variance projection (scaled back to per-coordinate variance 1 before the tanh)
        return np.tanh(signal * np.sqrt(W_e.shape[1])) / np.sqrt(W_e.shape[1]) + eps

    u_audio = unified(shared, audio_noise)
    u_text = unified(shared | visual | audio, unified_noise)
    u_image = unified(shared | visual, unified_noise)
    e_audio = expert(shared | audio, W_e)
    e_text = expert(shared | audio, W_e)
    for _ in range(n_experts - 1):  # drawn after the first expert, which stays the same
        W_k = rng.standard_normal((n_latent, n_expert_features))
        e_audio = np.hstack([e_audio, expert(shared | audio, W_k)])
        e_text = np.hstack([e_text, expert(shared | audio, W_k)])
    e_image = np.full((n_items, n_experts * n_expert_features), np.nan)
    X = np.vstack([np.hstack([u_audio, e_audio]), np.hstack([u_text, e_text]), np.hstack([u_image, e_image])])
    return Bunch(
        X=X, modality=np.repeat(np.array(MODALITIES), n_items), item=np.tile(np.arange(n_items), 3),
        unified_audio=u_audio, unified_text=u_text, unified_image=u_image, expert_audio=e_audio,
        expert_text=e_text, semantics=semantics, n_base_features=n_unified_features,
    )
