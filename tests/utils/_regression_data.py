"""A small seeded regression problem, its network and torch's L-BFGS run by hand, shared by the training-layer tests."""

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


def reference_lbfgs(module, X, y, **options):
    """torch's L-BFGS as one long step call, by hand: (iterations, objective evaluations) it ran."""
    Xt, yt = torch.as_tensor(X), torch.as_tensor(y)
    opt = torch.optim.LBFGS(module.parameters(), lr=1.0, line_search_fn="strong_wolfe", **options)

    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(module(Xt), yt)
        loss.backward()
        return loss

    opt.step(closure)
    state = opt.state[opt.param_groups[0]["params"][0]]
    return state["n_iter"], state["func_evals"]
