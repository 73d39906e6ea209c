"""The layered-earth generator, the convolutional seismogram (against a per-trace loop) and the OpenFWI reader."""

import numpy as np
import pytest

from sklearn_icml.datasets import convolutional_seismogram, load_openfwi, make_layered_earth
from sklearn_icml.datasets._seismic import ricker_wavelet


def test_layered_earth_logs_are_sorted_layers_in_range():
    V = make_layered_earth(200, n_cells=40, n_layers=(2, 4), v_range=(2000, 3500), random_state=0)
    assert V.shape == (200, 40)
    assert V.min() >= 2000 and V.max() <= 3500
    assert np.all(np.diff(V, axis=1) >= 0)
    n_distinct = np.array([len(np.unique(v)) for v in V])
    assert n_distinct.min() >= 1 and n_distinct.max() <= 4
    assert np.mean(n_distinct >= 2) > 0.9  # interfaces are rarely all below the model
    np.testing.assert_array_equal(V, make_layered_earth(200, n_cells=40, n_layers=(2, 4), random_state=0))


def test_layered_earth_maps_dip_and_stay_ordered():
    V = make_layered_earth(30, n_cells=32, n_columns=16, random_state=1)
    assert V.shape == (30, 32, 16)
    assert np.all(np.diff(V, axis=1) >= 0)  # every column increases with depth
    # with dips, the first and last columns differ for most models
    assert np.mean(np.any(V[:, :, 0] != V[:, :, -1], axis=1)) > 0.5
    with pytest.raises(ValueError, match="make_layered_earth: n_layers"):
        make_layered_earth(3, n_layers=(3, 2))


def _seismogram_loop(v, dt, n_samples, f0, dz):
    """Brute force, one trace: walk down the cells, drop each reflection on the grid, convolve."""
    refl = np.zeros(n_samples + 1)
    t = 0.0
    for k in range(len(v) - 1):
        t += 2 * dz / v[k]
        r = (v[k + 1] - v[k]) / (v[k + 1] + v[k])
        i = int(np.floor(t / dt))
        frac = t / dt - i
        if i < n_samples:
            refl[i] += r * (1 - frac)
        if i + 1 < n_samples:
            refl[i + 1] += r * frac
    lags = np.arange(-(n_samples - 1), n_samples) * dt
    full = np.convolve(refl[:n_samples], ricker_wavelet(lags, f0))
    return full[n_samples - 1:2 * n_samples - 1]


def test_convolutional_seismogram_matches_a_per_trace_loop():
    V = make_layered_earth(12, n_cells=50, random_state=2)
    S = convolutional_seismogram(V, dt=0.004, n_samples=80, f0=12.0, dz=8.0)
    expected = np.array([_seismogram_loop(v, 0.004, 80, 12.0, 8.0) for v in V])
    np.testing.assert_allclose(S, expected, atol=1e-12)
    # a constant model reflects nothing
    np.testing.assert_allclose(convolutional_seismogram(np.full((2, 10), 2500.0)), 0.0, atol=1e-15)


def test_convolutional_seismogram_of_maps_is_per_column():
    V = make_layered_earth(4, n_cells=24, n_columns=5, random_state=3)
    S = convolutional_seismogram(V, n_samples=60)
    assert S.shape == (4, 60, 5)
    for c in range(5):
        np.testing.assert_allclose(S[:, :, c], convolutional_seismogram(V[:, :, c], n_samples=60), atol=1e-14)
    with pytest.raises(ValueError, match="convolutional_seismogram: velocities"):
        convolutional_seismogram(-V)


def test_load_openfwi_reads_pairs_of_files(tmp_path):
    folder = tmp_path / "CurveFault_A"
    folder.mkdir()
    rng = np.random.RandomState(0)
    parts = []
    for i in (2, 1):  # written out of order: read in the order of their numbers
        s = rng.normal(size=(3, 5, 20, 7)).astype(np.float32)
        v = rng.uniform(1500, 4500, size=(3, 1, 7, 7)).astype(np.float32)
        np.save(folder / f"seis{i}_1_0.npy", s)
        np.save(folder / f"vel{i}_1_0.npy", v)
        parts.append((i, s, v))
    parts.sort(key=lambda p: p[0])
    data = load_openfwi(tmp_path, "curvefault-a")
    assert data.dataset == "CurveFault-A"
    np.testing.assert_array_equal(data.seismic, np.concatenate([p[1] for p in parts]))
    np.testing.assert_array_equal(data.velocity, np.concatenate([p[2] for p in parts]))
    one = load_openfwi(folder, "CurveFault-A", max_files=1)
    assert isinstance(one.seismic, np.memmap) and one.seismic.shape == (3, 5, 20, 7)
    np.testing.assert_array_equal(one.velocity, parts[0][2])


def test_load_openfwi_errors(tmp_path):
    with pytest.raises(ValueError, match="unknown dataset"):
        load_openfwi(tmp_path, "FlatVel-Z")
    with pytest.raises(ValueError, match="no pairs"):
        load_openfwi(tmp_path, "FlatVel-A")
    np.save(tmp_path / "data1.npy", np.zeros((3, 5, 10, 4)))
    np.save(tmp_path / "model1.npy", np.zeros((2, 1, 4, 4)))
    with pytest.raises(ValueError, match="holds 3 samples"):
        load_openfwi(tmp_path, "FlatVel-A")
