"""
=====================================================
Choosing FreeBind's mixing factor, from a single fit
=====================================================

A unified space (ImageBind-like) embeds audio, text and images in one space, but its audio encoder
is weak; an expert audio-text space (CLAP-like) is excellent at audio-text matching but has no
image encoder. FreeBind's **combination bond** learns projectors from the expert space into the
unified one and mixes them in on the unit sphere:
``x = normalize(beta * normalize(P(e)) + (1 - beta) * u)``, for the rows (audio, text) that have an
expert embedding. Images keep their unified embedding.

The mixing factor ``beta`` is read at transform time, so one fit gives the whole curve: recall at 1
of the three cross-modal tasks on held-out items as ``beta`` goes from 0 (the unified space) to 1
(the projected expert alone). Audio-to-text climbs steeply, audio-to-image rides along (the
projector maps expert audio into semantics the unified space aligns with images), while
text-to-image falls at large ``beta``: the expert knows nothing about images, which is why the
factor exists and can differ per modality ("customised inference").
"""

# %%
# Synthetic three-modality embeddings
# -----------------------------------
import matplotlib.pyplot as plt
import numpy as np

from sklearn_icml.datasets import make_multimodal_embeddings
from sklearn_icml.metrics import recall_at_k
from sklearn_icml.multimodal import SpaceBond

data = make_multimodal_embeddings(3000, random_state=0)
train, test = data.item < 2000, data.item >= 2000
X_test, modality = data.X[test], data.modality[test]
print(data.X.shape, "rows [unified (64) | expert (32)]; image rows have a NaN expert part")

# %%
# One fit, the whole mixing curve
# -------------------------------
bond = SpaceBond(n_base_features=data.n_base_features).fit(data.X[train])
betas = np.linspace(0.0, 1.0, 11)
audio, text, image = (X_test[modality == m] for m in ("audio", "text", "image"))
curves = {
    "audio -> text": bond.mixing_curve(audio, text, betas),
    "audio -> image": bond.mixing_curve(audio, image, betas),
    "text -> image": bond.mixing_curve(text, image, betas),
}

# %%
# Customised inference: a factor per modality
# -------------------------------------------
# Audio gets beta = 0.5, text only 0.2, so text keeps most of what the unified space knows about
# images. ``set_params`` changes the factors without refitting the projectors.
bond.set_params(mixing={"audio": 0.5, "text": 0.2, "image": 0.0})
Z = bond.transform(X_test, groups=modality)
custom = {
    "audio -> text": recall_at_k(Z[modality == "audio"], Z[modality == "text"]),
    "audio -> image": recall_at_k(Z[modality == "audio"], Z[modality == "image"]),
    "text -> image": recall_at_k(Z[modality == "text"], Z[modality == "image"]),
}
for task, r in custom.items():
    print(f"{task:15s} R@1 unified {curves[task][0]:.3f}  beta=0.5 {curves[task][5]:.3f}  custom {r:.3f}")

# %%
# Projectors and pseudo pairs at beta = 0.5
# -----------------------------------------
# The default Procrustes projector keeps the expert's angles (audio-text); ridge regresses towards
# the unified space's own semantics (audio-image). With ``pseudo_pairs="retrieval"`` the training
# images, which the expert does not cover, are paired with the expert embeddings of their nearest
# audio and captions in the unified space, FreeBind's pseudo dataset.
variants = {
    "procrustes (default)": SpaceBond(n_base_features=data.n_base_features),
    "ridge": SpaceBond(n_base_features=data.n_base_features, projector="ridge"),
    "procrustes + pseudo pairs": SpaceBond(n_base_features=data.n_base_features, pseudo_pairs="retrieval"),
}
for label, variant in variants.items():
    Zv = variant.fit(data.X[train]).transform(X_test)
    at = recall_at_k(Zv[modality == "audio"], Zv[modality == "text"])
    av = recall_at_k(Zv[modality == "audio"], Zv[modality == "image"])
    print(f"{label:26s} A->T {at:.3f}  A->V {av:.3f}  ({variant.n_pseudo_pairs_} pseudo pairs)")

# %%
# The figure
# ----------
fig, ax = plt.subplots(figsize=(6.4, 4.2))
for (task, curve), color in zip(curves.items(), ("C0", "C1", "C2")):
    ax.plot(betas, curve, "o-", color=color, label=task)
    ax.axhline(custom[task], color=color, ls=":", lw=1)
ax.set_xlabel("mixing factor beta (0: unified space, 1: projected expert)")
ax.set_ylabel("recall at 1 (1000 held-out items)")
ax.set_title("One SpaceBond fit; dotted: audio 0.5 / text 0.2")
ax.legend()
fig.tight_layout()
plt.show()
