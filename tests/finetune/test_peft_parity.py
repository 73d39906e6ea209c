"""DoRALinear/LoRALinear against peft's LoRA and DoRA (``LoraConfig(use_dora=True)``), with the same A, B, m.

Bars (issue 11): forward within 1e-5, gradients within 1e-5 relative, merged
weights within 1e-6, and exact identity at initialisation.
"""

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")
peft = pytest.importorskip("peft")

from torch import nn  # noqa: E402

from sklearn_icml.finetune import DoRALinear, LoRALinear, apply_adapters, merge_adapters  # noqa: E402

pytestmark = pytest.mark.peers


def _pair(use_dora, r=4, alpha=8, use_rslora=False, n_in=64, n_out=48, seed=0, perturb=True, norm="dense"):
    """Our adapter and peft's on copies of one Linear, holding the same A, B and m."""
    g = torch.Generator().manual_seed(seed)
    base = torch.nn.utils.skip_init(nn.Linear, n_in, n_out)
    with torch.no_grad():
        base.weight.copy_(torch.randn(n_out, n_in, generator=g) / np.sqrt(n_in))
        base.bias.copy_(torch.randn(n_out, generator=g))
    config = peft.LoraConfig(r=r, lora_alpha=alpha, target_modules=["0"], use_dora=use_dora,
                             use_rslora=use_rslora, lora_dropout=0.0)
    theirs = peft.get_peft_model(nn.Sequential(copy.deepcopy(base)), config)
    kwargs = dict(alpha=alpha, use_rslora=use_rslora, generator=g)
    ours = DoRALinear(copy.deepcopy(base), r, norm=norm, **kwargs) if use_dora else LoRALinear(
        copy.deepcopy(base), r, **kwargs)
    peft_layer = theirs.base_model.model[0]
    with torch.no_grad():
        if perturb:
            ours.lora_B.copy_(0.3 * torch.randn(n_out, r, generator=g))
            if use_dora:
                ours.magnitude.mul_(1 + 0.2 * torch.randn(n_out, generator=g))
        peft_layer.lora_A["default"].weight.copy_(ours.lora_A)
        peft_layer.lora_B["default"].weight.copy_(ours.lora_B)
        if use_dora:
            peft_layer.lora_magnitude_vector["default"].weight.copy_(ours.magnitude)
    assert peft_layer.scaling["default"] == ours.scaling
    return base, ours, theirs


def _peft_params(theirs, use_dora):
    layer = theirs.base_model.model[0]
    params = {"lora_A": layer.lora_A["default"].weight, "lora_B": layer.lora_B["default"].weight}
    if use_dora:
        params["magnitude"] = layer.lora_magnitude_vector["default"].weight
    return params


def _x(n=64, n_in=64, seed=1):
    return torch.randn(n, n_in, generator=torch.Generator().manual_seed(seed)) * 2


@pytest.mark.parametrize("use_dora", [True, False])
def test_identity_at_initialisation(use_dora):
    base, ours, theirs = _pair(use_dora, perturb=False)
    x = _x()
    with torch.no_grad():
        assert torch.equal(ours(x), base(x))
        assert torch.equal(theirs(x), base(x))
        if use_dora:
            assert torch.equal(ours.magnitude, _peft_params(theirs, True)["magnitude"])


@pytest.mark.parametrize("use_rslora", [False, True])
@pytest.mark.parametrize("use_dora", [True, False])
def test_forward_and_gradients_match_peft(use_dora, use_rslora):
    _, ours, theirs = _pair(use_dora, use_rslora=use_rslora)
    x = _x()
    out_ours, out_theirs = ours(x), theirs(x)
    assert (out_ours - x @ ours.base_layer.weight.T - ours.base_layer.bias).abs().max() > 0.1, "adapters are active"
    assert (out_ours - out_theirs).abs().max().item() <= 1e-5
    w = torch.randn(out_ours.shape, generator=torch.Generator().manual_seed(2))
    (out_ours * w).sum().backward()
    (out_theirs * w).sum().backward()
    for name, theirs_param in _peft_params(theirs, use_dora).items():
        g_ours, g_theirs = getattr(ours, name).grad, theirs_param.grad
        rel = ((g_ours - g_theirs).abs().max() / g_theirs.abs().max()).item()
        assert rel <= 1e-5, (name, rel)


def test_factored_norm_matches_peft_too():
    _, ours, theirs = _pair(True, norm="factored")
    x = _x()
    assert (ours(x) - theirs(x)).abs().max().item() <= 1e-5


@pytest.mark.parametrize("use_dora", [True, False])
def test_merged_weights_match_peft_merge_and_unload(use_dora):
    _, ours, theirs = _pair(use_dora)
    with torch.no_grad():
        ours_merged = merge_adapters(ours)
    theirs_merged = theirs.merge_and_unload()[0]
    assert type(ours_merged) is nn.Linear
    assert (ours_merged.weight - theirs_merged.weight).abs().max().item() <= 1e-6
    assert torch.equal(ours_merged.bias, theirs_merged.bias)


@pytest.mark.parametrize("use_dora", [True, False])
def test_whole_network_matches_peft_after_training_steps(use_dora):
    """apply_adapters on a network vs get_peft_model, with the same A: 20 Adam steps keep them together."""
    g = torch.Generator().manual_seed(0)
    net = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 2))
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.4)
    ours = copy.deepcopy(net)
    names = apply_adapters(ours, "dora" if use_dora else "lora", r=2, alpha=4, random_state=0)
    theirs = peft.get_peft_model(copy.deepcopy(net), peft.LoraConfig(r=2, lora_alpha=4, target_modules=names,
                                                                     use_dora=use_dora))
    for name in names:
        with torch.no_grad():
            theirs.base_model.model.get_submodule(name).lora_A["default"].weight.copy_(
                ours.get_submodule(name).lora_A)
    X = torch.randn(64, 8, generator=g)
    Y = torch.randn(64, 2, generator=g)
    for model in (ours, theirs):
        opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-2)
        for _ in range(20):
            opt.zero_grad()
            ((model(X) - Y) ** 2).mean().backward()
            opt.step()
    with torch.no_grad():
        trained = ours(X)
        assert (trained - net(X)).abs().max() > 1e-2, "training moved the network"
        assert (trained - theirs(X)).abs().max().item() <= 1e-4
        merge_adapters(ours)
        merged_theirs = theirs.merge_and_unload()
        for name in names:
            assert (ours.get_submodule(name).weight - merged_theirs.get_submodule(name).weight).abs().max() <= 1e-5
