"""Patch-size resizing (FlexiViT's pseudo-inverse rule) and the small ViT of the patch-size schedules."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sklearn_icml.scaling import (  # noqa: E402
    Segment,
    make_patch_vit,
    patch_vit_flops,
    resize_patch_embedding,
    resize_patch_vit,
    resize_position_embedding,
    train_adaptive,
)


def _upsample(patch, k):
    """Nearest-neighbour upsampling of (..., p, p) by k, written out pixel by pixel."""
    p = patch.shape[-1]
    out = np.empty(patch.shape[:-2] + (p * k, p * k))
    for i in range(p * k):
        for j in range(p * k):
            out[..., i, j] = patch[..., i // k, j // k]
    return out


def _token(W, patch):
    """The token of a (channels, p, p) patch under a (width, channels * p * p) weight, as an explicit sum."""
    c, p, _ = patch.shape
    tok = np.zeros(W.shape[0])
    for ch in range(c):
        for i in range(p):
            for j in range(p):
                tok += W[:, ch * p * p + i * p + j] * patch[ch, i, j]
    return tok


@pytest.mark.parametrize("channels", [1, 3])
@pytest.mark.parametrize("p,new_p", [(4, 8), (2, 8), (8, 4), (8, 2)])
def test_patch_embedding_keeps_the_token_of_resampled_patches(channels, p, new_p):
    rng = np.random.RandomState(0)
    W = rng.normal(size=(5, channels * p * p))
    W_new = resize_patch_embedding(W, new_p, channels=channels)
    assert W_new.shape == (5, channels * new_p * new_p)
    for _ in range(3):
        if new_p > p:  # the nearest-upsampled copy of a p x p patch has the old token
            small = rng.normal(size=(channels, p, p))
            np.testing.assert_allclose(_token(W_new, _upsample(small, new_p // p)), _token(W, small), atol=1e-12)
            # and so does any new_p x new_p patch, against its average-pooled p x p patch
            big = rng.normal(size=(channels, new_p, new_p))
            k = new_p // p
            pooled = big.reshape(channels, p, k, p, k).mean(axis=(2, 4))
            np.testing.assert_allclose(_token(W_new, big), _token(W, pooled), atol=1e-12)
        else:  # a p x p patch constant on k x k blocks: its block values, as a new_p patch, have the old token
            blocks = rng.normal(size=(channels, new_p, new_p))
            np.testing.assert_allclose(_token(W_new, blocks), _token(W, _upsample(blocks, p // new_p)),
                                       atol=1e-12)
    # a generic patch does not keep its token going down (the assertion above can fail)
    if new_p < p:
        generic = rng.normal(size=(channels, p, p))
        sub = generic.reshape(channels, new_p, p // new_p, new_p, p // new_p).mean(axis=(2, 4))
        assert not np.allclose(_token(W_new, sub), _token(W, generic))


def test_patch_embedding_torch_conv_and_numpy_layouts_agree():
    rng = np.random.RandomState(1)
    W = rng.normal(size=(4, 3 * 4 * 4))
    flat = resize_patch_embedding(W, 2, channels=3)
    conv = resize_patch_embedding(W.reshape(4, 3, 4, 4), 2)
    tensor = resize_patch_embedding(torch.as_tensor(W), 2, channels=3)
    np.testing.assert_allclose(conv.reshape(4, -1), flat)
    assert isinstance(tensor, torch.Tensor)
    np.testing.assert_allclose(tensor.numpy(), flat)
    np.testing.assert_allclose(resize_patch_embedding(resize_patch_embedding(W, 8, channels=3), 4, channels=3), W)
    with pytest.raises(ValueError, match="multiple or a divisor"):
        resize_patch_embedding(W, 3, channels=3)
    with pytest.raises(ValueError, match="channels"):
        resize_patch_embedding(W, 2, channels=2)
    with pytest.raises(TypeError, match="numpy array or a torch tensor"):
        resize_patch_embedding(W.tolist(), 2)


def test_position_embedding_nearest_and_bilinear():
    rng = np.random.RandomState(2)
    pos = rng.normal(size=(1, 16, 3))
    fine = resize_position_embedding(pos, 8)
    grid = pos[0].reshape(4, 4, 3)
    assert fine.shape == (1, 64, 3)
    np.testing.assert_array_equal(fine[0].reshape(8, 8, 3)[5, 2], grid[2, 1])
    np.testing.assert_allclose(resize_position_embedding(fine, 4), pos)
    np.testing.assert_allclose(resize_position_embedding(pos, 2)[0, 3], grid[2:, 2:].mean(axis=(0, 1)))
    bil = resize_position_embedding(torch.as_tensor(pos), 8, mode="bilinear")
    assert bil.shape == (1, 64, 3) and not np.allclose(bil.numpy(), fine)
    with pytest.raises(ValueError, match="mode"):
        resize_position_embedding(pos, 8, mode="cubic")


def _vit(patch, **kw):
    return make_patch_vit(patch, image_size=16, width=16, depth=2, n_heads=2, n_outputs=3, random_state=0,
                          **kw).double()


def test_vit_output_kept_on_images_constant_on_the_old_patches():
    vit8 = _vit(8)
    with torch.no_grad():  # train-like state: non-trivial positions, so that duplication is what is tested
        vit8.pos_embed.normal_(0, 0.5, generator=torch.Generator().manual_seed(3))
    gen = torch.Generator().manual_seed(0)
    coarse = torch.rand(4, 1, 2, 2, generator=gen, dtype=torch.float64)
    x = coarse.repeat_interleave(8, 2).repeat_interleave(8, 3)  # constant on each 8 x 8 patch
    vit4 = resize_patch_vit(vit8, 4)
    vit2 = resize_patch_vit(vit4, 2)
    assert (vit4.grid, vit2.grid, vit2.shape) == (4, 8, 2)
    with torch.no_grad():
        out8 = vit8(x)
        np.testing.assert_allclose(vit4(x).numpy(), out8.numpy(), rtol=0, atol=1e-10)
        np.testing.assert_allclose(vit2(x).numpy(), out8.numpy(), rtol=0, atol=1e-10)
        # images constant on 4 x 4 patches (a nearest-upsampled 4 x 4 image) keep vit4's output at patch 2
        x4 = torch.rand(4, 1, 4, 4, generator=gen, dtype=torch.float64).repeat_interleave(4, 2).repeat_interleave(
            4, 3)
        np.testing.assert_allclose(vit2(x4).numpy(), vit4(x4).numpy(), rtol=0, atol=1e-10)
        # a generic image, or bilinear positions, change the output (the assertions above can fail)
        noise = torch.rand(4, 1, 16, 16, generator=gen, dtype=torch.float64)
        assert not torch.allclose(vit4(noise), vit8(noise), atol=1e-6)
        assert not torch.allclose(resize_patch_vit(vit8, 4, position="bilinear")(x), out8, atol=1e-6)
    # the input model is untouched, the other parameters are shared values
    assert vit8.patch_size == 8 and vit8.patch_embed.in_features == 64
    assert torch.equal(vit2.head.weight, vit8.head.weight)


def test_make_patch_vit_is_seeded_and_checks_arguments():
    a, b = make_patch_vit(4, image_size=8, width=8, n_heads=2, random_state=5), make_patch_vit(
        4, image_size=8, width=8, n_heads=2, random_state=5)
    state = torch.random.get_rng_state()
    for p, q in zip(a.parameters(), b.parameters()):
        assert torch.equal(p, q)
    make_patch_vit(4, image_size=8, width=8, n_heads=2, random_state=6)
    assert torch.equal(state, torch.random.get_rng_state())  # the global generator is not used
    with pytest.raises(ValueError, match="patch_size must divide"):
        make_patch_vit(3, image_size=8)
    with pytest.raises(ValueError, match="n_heads"):
        make_patch_vit(4, image_size=8, width=10, n_heads=4)
    with pytest.raises(ValueError, match="multiple or a divisor"):
        resize_patch_vit(a, 8 * 3)
    with pytest.raises(TypeError, match="make_patch_vit"):
        resize_patch_vit(torch.nn.Linear(2, 2), 2)


def test_patch_vit_flops_counts_by_hand():
    vit = make_patch_vit(8, image_size=32, width=64, depth=2, n_heads=4, mlp_ratio=2.0, n_outputs=10,
                         random_state=0)
    w, f = 64, 128
    block = (3 * w * w + 3 * w) + (w * w + w) + (w * f + f) + (f * w + w) + 4 * w
    for p in (8, 4, 2):
        T = (32 // p) ** 2
        per_token = (p * p + 1) * w + 2 * block + 2 * w
        expected = 6 * 32 * (T * per_token + (w * 10 + 10)) + 12 * 2 * T * T * w * 32
        assert patch_vit_flops(vit, 32, patch_size=p) == pytest.approx(expected, rel=1e-12)
    assert patch_vit_flops(resize_patch_vit(vit, 4), 32) == patch_vit_flops(vit, 32, patch_size=4)


def test_train_adaptive_switches_the_patch_size():
    rng = np.random.RandomState(0)
    X = rng.rand(64, 1, 8, 8).astype(np.float32)
    y = (X[:, 0, :4].mean(axis=(1, 2)) > X[:, 0, 4:].mean(axis=(1, 2))).astype(np.int64)
    vit = make_patch_vit(4, image_size=8, width=8, depth=1, n_heads=2, n_outputs=2, random_state=0)
    Xt, yt = torch.as_tensor(X), torch.as_tensor(y)

    def evaluate(model):
        with torch.no_grad():
            return float(torch.nn.functional.cross_entropy(model(Xt), yt))

    plan = [Segment(4, 1.0, evaluate(vit) + 1.0, 0, 0), Segment(2, 0.0, 0.0, 0, 0)]  # switch at the 1st eval
    res = train_adaptive(vit, resize_patch_vit, plan, (X, y), target_loss=1e-6, loss_fn=torch.nn.functional.
                         cross_entropy, eval_fn=evaluate, flops_per_step=lambda p: patch_vit_flops(vit, 16,
                                                                                                    patch_size=p),
                         batch_size=16, max_steps=6, eval_every=lambda p: 2 if p == 4 else 1, random_state=0)
    assert res.module.patch_size == 2 and [sw[2:4] for sw in res.switches] == [(4, 2)]
    assert [s for _, _, s in res.history] == [4, 2, 2, 2, 2]
    expected = 2 * patch_vit_flops(vit, 16) + 4 * patch_vit_flops(vit, 16, patch_size=2)
    assert res.history[-1][0] == pytest.approx(expected)
    assert vit.patch_size == 4  # the caller's model is untouched
