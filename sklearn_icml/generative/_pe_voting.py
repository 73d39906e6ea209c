"""Private Evolution's only contact with private data: the noisy nearest-neighbour histogram.

Every private point votes for its nearest synthetic point; Gaussian noise and
a threshold make the vote counts differentially private. Voting is an exact
blocked matmul argmin (``|s|^2 - 2 x.s``: ``|x|^2`` does not change the
argmin), never a full ``n x S`` matrix. :class:`NearestVoter` prepares the
private embeddings once and reuses them every round: on the CPU a float32
copy voted on by numpy's BLAS (OpenBLAS's single-precision GEMM runs close to
a core's peak, ahead of torch's on the CPU), each
block one GEMM against ``-2 s`` (exact: a power of two) into a buffer
allocated once, then ``+ |s|^2`` and the argmin; on a GPU a float32 tensor
on the device, each block one fused ``addmm`` (the squared norms as GEMM's
``beta`` term) and its argmin. BLAS threads follow the thread rule (torch's
intra-op thread count in force, see ``utils._torch.torch_threads``).
"""

import numpy as np

from ..privacy import add_noise, gaussian_on_grid

__all__ = ["NearestVoter", "nearest_votes", "noisy_histogram"]

# private rows per distance block: on the CPU an 8 MB float32 block at 1024 synthetic points, so the add and the
# argmin read it from cache; on a GPU larger blocks launch fewer kernels
_BLOCK_CPU, _BLOCK_GPU = 2048, 8192


class NearestVoter:
    """Exact nearest-neighbour votes of a fixed private set against changing synthetic sets.

    Parameters
    ----------
    private : ndarray of shape (n_private, d)
        Private embeddings, prepared once: a float32 copy (numpy on the CPU,
        a tensor on another device), or float64 (numpy) when ``device`` is None.
    device : torch.device, str or None, default="cpu"
        "cpu": float32 in numpy; another torch device: float32 in torch on
        it; None: float64 in numpy (the reference).
    block_size : int or None, default=None
        Private rows per distance block (the block is ``block_size x n_synthetic``);
        None: 2048 in numpy, 8192 in torch.
    """

    def __init__(self, private, device="cpu", block_size=None):
        self.device = device
        self.n_private = len(private)
        self._numpy = device is None or str(device) == "cpu"
        self.block_size = int(block_size or (_BLOCK_CPU if self._numpy else _BLOCK_GPU))
        if self._numpy:
            # float32 on the CPU: twice the GEMM throughput of float64; votes change only at exact near-ties
            dtype = np.float64 if device is None else np.float32
            self._private = np.ascontiguousarray(private, dtype=dtype)
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
        if not self._numpy:
            return self._votes_torch(synthetic)
        import torch
        from threadpoolctl import threadpool_limits

        # the thread rule in force (``torch_threads`` in a fit) sets torch's intra-op count: BLAS follows it
        with threadpool_limits(limits=torch.get_num_threads(), user_api="blas"):
            return self._votes_numpy(np.ascontiguousarray(synthetic, dtype=self._private.dtype))

    def _votes_numpy(self, synthetic):
        sq = np.einsum("ij,ij->i", synthetic, synthetic)
        # -2 s is exact (a power of two), so x.(-2 s) + |s|^2 rounds like |s|^2 - 2 x.s
        minus_two_t = (-2.0 * synthetic).T
        out = np.empty(self.n_private, dtype=np.int64)
        buf = np.empty((min(self.block_size, self.n_private), len(synthetic)), dtype=synthetic.dtype)
        for lo in range(0, self.n_private, self.block_size):
            block = self._private[lo:lo + self.block_size]
            dist = buf[:len(block)]
            np.matmul(block, minus_two_t, out=dist)
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
        "cpu": float32 in numpy; another torch device: float32 in torch on
        it; None: float64 in numpy (the reference).

    Returns
    -------
    ndarray of shape (n_private,)
        Indices into ``synthetic``.
    """
    return NearestVoter(private, device)(synthetic)


def noisy_histogram(votes, n_bins, *, noise_std, threshold, rng):
    """Vote counts plus discrete Gaussian noise, minus the threshold, clipped at 0.

    The noise is exact discrete Gaussian noise on a power-of-two grid of
    step at most 1 (see :func:`~sklearn_icml.privacy.gaussian_on_grid`), so the integer counts lie on it;
    its standard deviation is ``noise_std`` rounded up to a multiple of the
    step (a relative ``2**-13`` at most).

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
        Source of the noise (see ``privacy.noise_random_state``).

    Returns
    -------
    counts : ndarray of shape (n_bins,)
        The exact counts (private: never stored by the estimator).
    released : ndarray of shape (n_bins,)
        The differentially private, thresholded counts.
    """
    counts = np.bincount(votes, minlength=n_bins).astype(np.float64)
    noise = gaussian_on_grid(noise_std)
    released = np.maximum(add_noise(counts, noise, rng) - threshold, 0.0)
    return counts, released
