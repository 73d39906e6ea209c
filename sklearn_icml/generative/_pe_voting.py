"""Private Evolution's only contact with private data: the noisy nearest-neighbour histogram.

Every private point votes for its nearest synthetic point; Gaussian noise and
a threshold make the vote counts differentially private. Voting is a blocked
matmul argmin (``|x|^2 - 2 x.s + |s|^2``), never a full ``n x S`` matrix, in
numpy or in torch on the estimator's device.
"""

import numpy as np

__all__ = ["nearest_votes", "noisy_histogram"]

_BLOCK = 8192


def _nearest_numpy(private, synthetic):
    sq = np.einsum("ij,ij->i", synthetic, synthetic)
    out = np.empty(len(private), dtype=np.int64)
    for lo in range(0, len(private), _BLOCK):
        block = private[lo:lo + _BLOCK]
        out[lo:lo + _BLOCK] = np.argmin(sq[None, :] - 2.0 * block @ synthetic.T, axis=1)
    return out


def _nearest_torch(private, synthetic, device):
    import torch

    from ..utils._torch import to_numpy, to_tensor

    # float32: twice the matmul throughput of float64, and a vote's argmin is insensitive at that precision
    syn = to_tensor(synthetic, device, dtype=torch.float32)
    sq = (syn * syn).sum(1)
    out = []
    with torch.no_grad():
        for lo in range(0, len(private), _BLOCK):
            block = to_tensor(private[lo:lo + _BLOCK], device, dtype=syn.dtype)
            out.append(to_numpy(torch.argmin(sq[None, :] - 2.0 * block @ syn.T, dim=1)))
    return np.concatenate(out) if out else np.empty(0, dtype=np.int64)


def nearest_votes(private, synthetic, device="cpu"):
    """Index of the nearest synthetic point (Euclidean) for every private point.

    Parameters
    ----------
    private : ndarray of shape (n_private, d)
        Private embeddings.
    synthetic : ndarray of shape (n_synthetic, d)
        Synthetic embeddings.
    device : torch.device, str or None, default="cpu"
        Vote in torch on this device; in numpy when None.

    Returns
    -------
    ndarray of shape (n_private,)
        Indices into ``synthetic``.
    """
    private = np.ascontiguousarray(private, dtype=np.float64)
    synthetic = np.ascontiguousarray(synthetic, dtype=np.float64)
    if device is None:
        return _nearest_numpy(private, synthetic)
    return _nearest_torch(private, synthetic, device)


def noisy_histogram(votes, n_bins, *, noise_std, threshold, rng):
    """Vote counts plus Gaussian noise, minus the threshold, clipped at 0.

    Parameters
    ----------
    votes : ndarray of int
        One bin index per (capped) private record.
    n_bins : int
        Number of synthetic points.
    noise_std : float
        Standard deviation of the Gaussian noise per bin.
    threshold : float
        Subtracted from every noisy count before clipping.
    rng : numpy.random.RandomState
        Source of the noise.

    Returns
    -------
    counts : ndarray of shape (n_bins,)
        The exact counts (private: never stored by the estimator).
    released : ndarray of shape (n_bins,)
        The differentially private, thresholded counts.
    """
    counts = np.bincount(votes, minlength=n_bins).astype(np.float64)
    released = np.maximum(counts + rng.normal(0.0, noise_std, size=n_bins) - threshold, 0.0)
    return counts, released
