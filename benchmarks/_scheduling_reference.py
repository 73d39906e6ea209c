"""The per-node reference epoch of the scheduling benchmark's cost table (benchmark-only)."""


def per_node_epoch(problem, n_samples, tau, random_state=0):
    """One epoch shaped like the released generated script: a Python step per node and per parent.

    The reference structure of the cost table (the vectorised sampler of
    ``GumbelScheduler`` against the release's structure); returns the loss.
    It reads only the public attributes of a ``StageSchedulingProblem``.
    """
    import torch
    import torch.nn.functional as F

    gen = torch.Generator().manual_seed(int(random_state))
    D, n = problem.n_stages, problem.n_nodes
    parents = [[] for _ in range(n)]
    for u, v in problem.edges:
        parents[v].append(int(u))
    logits = [torch.zeros(n_samples, D, requires_grad=True) for _ in range(n)]
    bias = torch.log(torch.arange(D + 1, 1, -1, dtype=torch.float32))
    ys, cdfs = [None] * n, [None] * n
    for v in problem.topological_order:
        u = torch.rand(n_samples, D, generator=gen).clamp_min(1e-10)
        z = (logits[v] - torch.log(-torch.log(u))) / tau
        if not parents[v]:
            y = F.softmax(z, dim=-1)
            g = y
        else:
            g = F.softmax(z, dim=-1)
            for p in parents[v]:
                g = g * bias * cdfs[p]
            y = F.softmax(g, dim=-1)
        hard = torch.zeros_like(y).scatter_(-1, g.argmax(-1, keepdim=True), 1.0)
        ys[v] = hard - y.detach() + y
        cdfs[v] = torch.cumsum(ys[v], dim=-1)
    m = torch.as_tensor(problem.node_weight, dtype=torch.float32)
    loads = sum(ys[v] * m[v] for v in range(n))
    p = loads / m.sum()
    mem = (p * torch.log(p.clamp_min(1e-12))).sum(-1)
    comm = sum((cdfs[u][:, :-1] * (1 - cdfs[v][:, :-1])).sum(-1) for u, v in problem.data_edges)
    loss = (comm / max(len(problem.data_edges), 1) + problem.mem_weight * mem).mean()
    loss.backward()
    return float(loss.detach())
