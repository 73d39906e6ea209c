"""A small seeded regression problem and network shared by the training-layer tests."""

import numpy as np
import torch


def regression_data(n=60, d=3, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, d))
    y = X @ rng.normal(size=(d, 1)) + 0.1 * rng.normal(size=(n, 1))
    return X, y


def regression_net(d=3, seed=0):
    torch.manual_seed(seed)  # tests only: the library never touches the global RNG
    return torch.nn.Sequential(torch.nn.Linear(d, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)).double()
