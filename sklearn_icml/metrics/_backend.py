"""Two array backends, numpy and torch, behind one small interface.

The calibration metrics are written once against :class:`_Ops`; numpy inputs
compute with :class:`_NumpyOps`, torch tensors with :class:`_TorchOps` on the
tensor's own device (and keep the autograd graph, so a torch result can be
differentiated). All computation is in float64.
"""

import numpy as np
from scipy import fft as sp_fft
from scipy.special import expit

from ..utils._torch import as_numpy, is_torch_tensor


class _NumpyOps:
    name = "numpy"

    def asarray(self, x):
        return np.asarray(x, dtype=np.float64)

    def from_numpy(self, x, dtype=np.float64):
        return np.asarray(x, dtype=dtype)

    def to_numpy(self, x):
        return np.asarray(x)

    def arange(self, n):
        return np.arange(n, dtype=np.float64)

    def zeros(self, n):
        return np.zeros(n, dtype=np.float64)

    def scatter_add(self, size, index, values):
        return np.bincount(index, weights=values, minlength=size)

    def exp(self, x):
        return np.exp(x)

    def as_float(self, mask):
        return mask.astype(np.float64)

    def sigmoid(self, x):
        return expit(x)

    def softplus(self, x):
        return np.logaddexp(0.0, x)

    def logit(self, p):
        with np.errstate(divide="ignore"):
            return np.log(p) - np.log1p(-p)

    def log(self, x):
        with np.errstate(divide="ignore"):
            return np.log(x)

    def cat(self, arrays):
        return np.concatenate(arrays)

    def argsort(self, x):
        return np.argsort(x, kind="stable")

    def cumsum(self, x):
        return np.cumsum(x)

    def clip(self, x, lo, hi):
        return np.minimum(np.maximum(x, lo), hi)

    def floor_int(self, x):
        return np.floor(x).astype(np.int64)

    def isfinite(self, x):
        return np.isfinite(x)

    def searchsorted(self, a, v, side):
        return np.searchsorted(a, v, side=side)

    def scatter_set(self, size, index, values):
        out = np.empty(size, dtype=values.dtype)
        out[index] = values
        return out

    def shift_right(self, x):
        out = np.empty_like(x)
        out[0] = 0
        out[1:] = x[:-1]
        return out

    def fft_convolve(self, signal, kernel):
        """Full linear convolution (length len(signal) + len(kernel) - 1)."""
        n = signal.shape[0] + kernel.shape[0] - 1
        size = sp_fft.next_fast_len(n, real=True)
        return sp_fft.irfft(sp_fft.rfft(signal, size) * sp_fft.rfft(kernel, size), size)[:n]

    def item(self, x):
        return float(x)

    def result(self, x):
        return float(x)


class _TorchOps:
    name = "torch"

    def __init__(self, device):
        import torch

        self.torch = torch
        self.device = device

    def asarray(self, x):
        torch = self.torch
        if is_torch_tensor(x):
            return x.to(device=self.device, dtype=torch.float64)
        return torch.as_tensor(np.asarray(x, dtype=np.float64), device=self.device)

    def from_numpy(self, x, dtype=np.float64):
        x = np.ascontiguousarray(x, dtype=dtype)
        return self.torch.from_numpy(x.copy()).to(self.device)

    def to_numpy(self, x):
        return as_numpy(x)

    def arange(self, n):
        return self.torch.arange(n, dtype=self.torch.float64, device=self.device)

    def zeros(self, n):
        return self.torch.zeros(n, dtype=self.torch.float64, device=self.device)

    def scatter_add(self, size, index, values):
        return self.zeros(size).index_add(0, index, values)

    def exp(self, x):
        return self.torch.exp(x)

    def as_float(self, mask):
        return mask.to(self.torch.float64)

    def sigmoid(self, x):
        return self.torch.sigmoid(x)

    def softplus(self, x):
        return self.torch.logaddexp(self.torch.zeros_like(x), x)

    def logit(self, p):
        return self.torch.log(p) - self.torch.log1p(-p)

    def log(self, x):
        return self.torch.log(x)

    def cat(self, arrays):
        return self.torch.cat(arrays)

    def argsort(self, x):
        return self.torch.argsort(x, stable=True)

    def cumsum(self, x):
        return self.torch.cumsum(x, dim=0)

    def clip(self, x, lo, hi):
        torch = self.torch
        lo = lo if is_torch_tensor(lo) else torch.as_tensor(lo, dtype=x.dtype, device=x.device)
        hi = hi if is_torch_tensor(hi) else torch.as_tensor(hi, dtype=x.dtype, device=x.device)
        return torch.minimum(torch.maximum(x, lo), hi)

    def floor_int(self, x):
        return self.torch.floor(x).to(self.torch.int64)

    def isfinite(self, x):
        return self.torch.isfinite(x)

    def searchsorted(self, a, v, side):
        return self.torch.searchsorted(a.contiguous(), v.contiguous(), side=side)

    def scatter_set(self, size, index, values):
        return self.zeros(size).index_copy(0, index, values)

    def shift_right(self, x):
        return self.torch.cat([x[:1] * 0, x[:-1]])

    def fft_convolve(self, signal, kernel):
        """Full linear convolution (length len(signal) + len(kernel) - 1)."""
        fft = self.torch.fft
        n = signal.shape[0] + kernel.shape[0] - 1
        size = 1 << max(int(n - 1).bit_length(), 1)
        return fft.irfft(fft.rfft(signal, size) * fft.rfft(kernel, size), size)[:n]

    def item(self, x):
        return float(x.detach().cpu())

    def result(self, x):
        return x


def get_ops(*arrays):
    """The backend for these inputs: torch (on the first tensor's device) if any is a tensor."""
    for a in arrays:
        if is_torch_tensor(a):
            return _TorchOps(a.device)
    return _NumpyOps()
