"""
=====================================================================
Velocity logs from seismic traces with Auto-Linear, and back again
=====================================================================

Auto-Linear (Feng et al., ICML 2024) trains one masked autoencoder per domain on *unpaired* data
(seismic traces on one side, velocity logs from other earth models on the other) and uses the few
paired examples only for two linear maps between the frozen latent codes: seismic to velocity
(inverse modelling) and velocity to seismic (forward modelling).

We pre-train the two autoencoders once, then fit
:class:`~sklearn_icml.cross_domain.AutoLinear` with frozen encoders for growing numbers of pairs,
and compare it with ridge regression on the raw traces fitted on the same pairs.
"""

# %%
# Unpaired pools, pairs and test models
# -------------------------------------
# Layered earths of 64 cells (10 m each) with 2 to 5 layers whose velocity grows with depth; the
# traces come from the normal-incidence convolutional model with a 10 Hz Ricker wavelet.
import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import RidgeCV

from sklearn_icml.cross_domain import AutoLinear, MaskedAutoencoder
from sklearn_icml.datasets import convolutional_seismogram, make_layered_earth

rng = np.random.RandomState(0)
V_pool = make_layered_earth(1500, random_state=rng)  # velocity logs without traces
S_pool = convolutional_seismogram(make_layered_earth(1500, random_state=rng))  # traces of other models
V_pairs = make_layered_earth(400, random_state=rng)
S_pairs = convolutional_seismogram(V_pairs)
V_test = make_layered_earth(300, random_state=rng)
S_test = convolutional_seismogram(V_test)

# %%
# One masked autoencoder per domain
# ---------------------------------
# A quarter of each row is masked at every step and the network learns to fill it in. Only the
# domain's own rows are used. (The benchmark trains longer, on 3000 rows per domain.)
settings = dict(hidden_layer_sizes=(128, 128), max_iter=400, random_state=0)
encoder_s = MaskedAutoencoder(n_components=32, **settings).fit(S_pool)
encoder_v = MaskedAutoencoder(n_components=16, **settings).fit(V_pool)

# %%
# Linear maps from a few pairs
# ----------------------------
# With ``refit_encoders=False`` the encoders stay frozen and each fit is two ridge regressions on the
# latent codes, each refined through the frozen decoder of its target domain.
sizes = [25, 100, 400]
errors = {"Auto-Linear": [], "RidgeCV on traces": []}
models = {}
for n in sizes:
    model = models[n] = AutoLinear(encoder_s, encoder_v, refit_encoders=False).fit(S_pairs[:n], V_pairs[:n])
    ridge = RidgeCV(alphas=np.logspace(-4, 4, 17)).fit(S_pairs[:n], V_pairs[:n])
    errors["Auto-Linear"].append(np.abs(model.predict(S_test) - V_test).mean())
    errors["RidgeCV on traces"].append(np.abs(ridge.predict(S_test) - V_test).mean())
    print(f"{n:4d} pairs: latent R2 {model.latent_r2_:.2f}, inverse MAE Auto-Linear "
          f"{errors['Auto-Linear'][-1]:.0f} m/s, RidgeCV {errors['RidgeCV on traces'][-1]:.0f} m/s")

model = models[100]
ridge = RidgeCV(alphas=np.logspace(-4, 4, 17)).fit(S_pairs[:100], V_pairs[:100])

# %%
# Inverted logs, error against pairs, forward traces
# --------------------------------------------------
depth = (np.arange(64) + 0.5) * 10.0
time = np.arange(192) * 0.004
fig, axes = plt.subplots(1, 4, figsize=(13, 4.2))
for k, ax in zip(range(2), axes[:2]):
    ax.step(V_test[k], depth, "k", label="true", where="mid")
    ax.plot(model.predict(S_test[k:k + 1])[0], depth, label="Auto-Linear")
    ax.plot(ridge.predict(S_test[k:k + 1])[0], depth, "--", label="RidgeCV")
    ax.invert_yaxis()
    ax.set(xlabel="velocity (m/s)", ylabel="depth (m)", title=f"test model {k}, 100 pairs")
axes[0].legend(fontsize=8)
for name, values in errors.items():
    axes[2].plot(sizes, values, "o-", label=name)
axes[2].axhline(np.abs(V_pairs.mean(axis=0) - V_test).mean(), color="grey", ls=":", label="mean log")
axes[2].set(xscale="log", xlabel="pairs", ylabel="inverse MAE (m/s)", title="error against pairs")
axes[2].legend(fontsize=8)
forward = model.predict_forward(V_test[:1])[0]
axes[3].plot(S_test[0], time, "k", label="true trace")
axes[3].plot(forward, time, label="Auto-Linear forward")
axes[3].invert_yaxis()
axes[3].set(xlabel="amplitude", ylabel="two-way time (s)", title="forward modelling")
axes[3].legend(fontsize=8)
fig.tight_layout()
plt.show()
