"""Private Evolution's only contact with private data: the noisy nearest-neighbour histogram.

Every private point votes for its nearest synthetic point; Gaussian noise and
a threshold make the vote counts differentially private. Voting is an exact
blocked matmul argmin (``|s|^2 - 2 x.s``: ``|x|^2`` does not change the
argmin), never a full ``n x S`` matrix, in numpy or in torch on the
estimator's device. :class:`NearestVoter` prepares the private embeddings
once (the float32 copy on the device) and reuses them every round; in torch
each block is one fused ``addmm`` (the squared norms are GEMM's ``beta``
term) and its argmin, written into buffers allocated once.
"""

import numpy as np

__all__ = ["NearestVoter", "nearest_votes", "noisy_histogram"]

_BLOCK = 8192


class NearestVoter:
    """Exact nearest-neighbour votes of a fixed private set against changing synthetic sets.

    Parameters
    ----------
    private : ndarray of shape (n_private, d)
        Private embeddings, prepared once: converted to a float32 tensor on
        ``device`` (torch), or to float64 (numpy).
    device : torch.device, str or None, default="cpu"
        Vote in torch on this device; in numpy when None.
    block_size : int, default=8192
        Private rows per distance block (the block is ``block_size x n_synthetic``).
    """

    def __init__(self, private, device="cpu", block_size=_BLOCK):
        self.device = device
        self.block_size = int(block_size)
        self.n_private = len(private)
        if device is None:
            self._private = np.ascontiguousarray(private, dtype=np.float64)
            return
        import torch

        from ..utils._torch import to_tensor

        # float32: twice the matmul throughput of float64, and a vote's argmin is insensitive at that precision
        self._private = to_tensor(private, device, dtype=torch.float32)

    def __call__(self, synthetic):
        """Index of the nearest synthetic point (Euclidean) for every private point.

        Parameters
        ----------
        synthetic : ndarray of shape (n_synthetic, d)
            Synthetic embeddings.

        Returns
        -------
        ndarray of shape (n_private,)
            Indices into ``synthetic``.
        """
        if self.device is None:
            return self._votes_numpy(np.ascontiguousarray(synthetic, dtype=np.float64))
        return self._votes_torch(synthetic)

    def _votes_numpy(self, synthetic):
        sq = np.einsum("ij,ij->i", synthetic, synthetic)
        syn_t = synthetic.T
        out = np.empty(self.n_private, dtype=np.int64)
        buf = np.empty((min(self.block_size, self.n_private), len(synthetic)))
        for lo in range(0, self.n_private, self.block_size):
            block = self._private[lo:lo + self.block_size]
            dist = buf[:len(block)]
            np.matmul(block, syn_t, out=dist)
            dist *= -2.0  # exact (a power of two), so sq + dist rounds like sq - 2 x.s
            dist += sq
            np.argmin(dist, axis=1, out=out[lo:lo + len(block)])
        return out

    def _votes_torch(self, synthetic):
        import torch

        from ..utils._torch import to_numpy, to_tensor

        private = self._private
        syn = to_tensor(synthetic, private.device, dtype=torch.float32)
        sq = (syn * syn).sum(1)
        out = torch.empty(self.n_private, dtype=torch.int64, device=private.device)
        buf = torch.empty((min(self.block_size, self.n_private), len(syn)), dtype=syn.dtype, device=private.device)
        with torch.no_grad():
            for lo in range(0, self.n_private, self.block_size):
                block = private[lo:lo + self.block_size]
                dist = buf[:len(block)]
                torch.addmm(sq, block, syn.T, alpha=-2.0, out=dist)  # sq - 2 x.s in one GEMM
                torch.argmin(dist, dim=1, out=out[lo:lo + len(block)])
        return to_numpy(out)


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
    return NearestVoter(private, device)(synthetic)


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
