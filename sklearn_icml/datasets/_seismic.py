"""Layered-earth velocity models, normal-incidence seismograms and an OpenFWI reader (S5).

:func:`make_layered_earth` draws velocity logs (1-D) or maps with gently
dipping interfaces (2-D); :func:`convolutional_seismogram` is the classic
convolutional forward model of reflection seismology, applied to every model
and column at once; :func:`load_openfwi` memory-maps OpenFWI ``.npy`` files a
user already has.
"""

import os
import re
from numbers import Integral, Real

import numpy as np
from sklearn.utils import Bunch, check_random_state

__all__ = ["OPENFWI_DATASETS", "convolutional_seismogram", "load_openfwi", "make_layered_earth", "ricker_wavelet"]

#: The OpenFWI datasets (Deng et al., NeurIPS 2022) :func:`load_openfwi` recognises.
OPENFWI_DATASETS = ("FlatVel-A", "FlatVel-B", "CurveVel-A", "CurveVel-B", "FlatFault-A", "FlatFault-B",
                    "CurveFault-A", "CurveFault-B", "Style-A", "Style-B")


def make_layered_earth(n_models, n_cells=64, dz=10.0, n_layers=(2, 5), v_range=(2000.0, 3500.0), n_columns=1,
                       *, max_dip=0.15, random_state=None):
    """Generate layered velocity models: 1-D logs, or 2-D maps with gently dipping interfaces.

    Each model has ``k`` layers, ``k`` drawn uniformly from the integers of
    ``n_layers`` (both ends included). The ``k - 1`` interface depths are
    uniform over ``(dz, (n_cells - 1) * dz)``; the layer velocities are uniform
    over ``v_range`` and sorted so that velocity increases with depth (a
    compacting sedimentary column). A cell takes the velocity of the layer its
    centre lies in. With ``n_columns > 1`` every interface gets its own dip:
    its depth changes linearly across the columns, by at most ``max_dip``
    cells per column, and the interfaces are re-sorted per column, so layers
    pinch out where two of them cross.

    Parameters
    ----------
    n_models : int
        Number of models.
    n_cells : int, default=64
        Cells in depth.
    dz : float, default=10.0
        Cell height in metres.
    n_layers : tuple of two ints, default=(2, 5)
        Smallest and largest number of layers.
    v_range : tuple of two floats, default=(2000.0, 3500.0)
        Range of the layer velocities in m/s.
    n_columns : int, default=1
        Columns (lateral positions) of a 2-D map; 1 gives velocity logs.
    max_dip : float, default=0.15
        Largest interface slope, in cells of depth per column (2-D only).
    random_state : int, RandomState instance or None, default=None
        Seeds every draw.

    Returns
    -------
    V : ndarray of shape (n_models, n_cells) or (n_models, n_cells, n_columns)
        Velocities in m/s, depth along axis 1 (the second shape when
        ``n_columns > 1``). Flatten 2-D maps with ``V.reshape(n_models, -1)``
        for the estimators.

    See Also
    --------
    convolutional_seismogram : The seismic traces of these models.

    Examples
    --------
    >>> from sklearn_icml.datasets import make_layered_earth
    >>> V = make_layered_earth(3, n_cells=16, random_state=0)
    >>> V.shape, bool((V >= 2000).all() and (V <= 3500).all())
    ((3, 16), True)
    >>> bool((np.diff(V, axis=1) >= 0).all())  # velocity increases with depth
    True
    >>> make_layered_earth(2, n_cells=16, n_columns=8, random_state=0).shape
    (2, 16, 8)
    """
    name = "make_layered_earth"
    for label, value, low in (("n_models", n_models, 1), ("n_cells", n_cells, 2), ("n_columns", n_columns, 1)):
        if not isinstance(value, Integral) or isinstance(value, bool) or value < low:
            raise ValueError(f"{name}: {label} must be an int >= {low}; got {value!r}.")
    lo_layers, hi_layers = (int(k) for k in n_layers)
    if not 1 <= lo_layers <= hi_layers:
        raise ValueError(f"{name}: n_layers must be (low, high) with 1 <= low <= high; got {n_layers!r}.")
    v_lo, v_hi = (float(v) for v in v_range)
    if not 0 < v_lo <= v_hi:
        raise ValueError(f"{name}: v_range must be (low, high) with 0 < low <= high; got {v_range!r}.")
    if not (isinstance(dz, Real) and dz > 0):
        raise ValueError(f"{name}: dz must be a float > 0; got {dz!r}.")
    if not (isinstance(max_dip, Real) and max_dip >= 0):
        raise ValueError(f"{name}: max_dip must be a float >= 0; got {max_dip!r}.")
    rng = check_random_state(random_state)
    n_if = hi_layers - 1
    k = rng.randint(lo_layers, hi_layers + 1, size=n_models)
    velocities = np.sort(rng.uniform(v_lo, v_hi, size=(n_models, hi_layers)), axis=1)
    # interfaces beyond a model's k - 1 are placed below the model (never crossed)
    depth = rng.uniform(dz, (n_cells - 1) * dz, size=(n_models, n_if))
    active = np.arange(n_if)[None, :] < (k - 1)[:, None]
    depth = np.where(active, depth, np.inf)
    dip = rng.uniform(-max_dip, max_dip, size=(n_models, n_if)) * dz
    offset = np.arange(n_columns) - (n_columns - 1) / 2.0
    # (n_models, n_columns, n_if): interface depths per column, re-sorted so that layers stay ordered
    depth_col = np.sort(depth[:, None, :] + (dip[:, None, :] * offset[None, :, None] if n_columns > 1 else 0.0),
                        axis=2)
    centres = (np.arange(n_cells) + 0.5) * dz
    layer = np.zeros((n_models, n_cells, n_columns), dtype=np.intp)
    for i in range(n_if):  # a handful of interfaces; everything else is vectorised
        layer += centres[None, :, None] >= depth_col[:, None, :, i]
    # the lowest velocities go to the top layers of each model
    V = np.take_along_axis(velocities, layer.reshape(n_models, -1), axis=1).reshape(n_models, n_cells, n_columns)
    return V[:, :, 0] if n_columns == 1 else V


def ricker_wavelet(t, f0=10.0):
    """The Ricker (Mexican-hat) wavelet ``(1 - 2 (pi f0 t)^2) exp(-(pi f0 t)^2)``.

    Parameters
    ----------
    t : array-like
        Times in seconds (0 at the wavelet's peak).
    f0 : float, default=10.0
        Peak frequency in Hz.

    Returns
    -------
    ndarray
        The wavelet at ``t`` (peak 1 at ``t = 0``).

    Examples
    --------
    >>> from sklearn_icml.datasets._seismic import ricker_wavelet
    >>> float(ricker_wavelet(0.0)), round(float(ricker_wavelet(0.1, f0=10.0)), 4)
    (1.0, -0.001)
    """
    a = (np.pi * f0 * np.asarray(t, dtype=np.float64)) ** 2
    return (1.0 - 2.0 * a) * np.exp(-a)


def convolutional_seismogram(V, dt=0.004, n_samples=192, f0=10.0, *, dz=10.0):
    """Normal-incidence seismic traces of velocity models by the convolutional model.

    Per column of each model: two-way travel time down to each interface,
    ``t_k = 2 * sum_{j <= k} dz / v_j`` (the time-depth warp), reflection
    coefficient ``r_k = (v_{k+1} - v_k) / (v_{k+1} + v_k)`` (acoustic impedance
    with constant density) placed at ``t_k`` on the time grid by linear
    interpolation between the two nearest samples, then convolved with a
    zero-phase Ricker wavelet of peak frequency ``f0``. The operator is
    nonlinear in the velocities (through the warp and the ratio). All models
    and columns are computed at once: the reflectivity is scattered with one
    ``bincount`` and the convolution is one matrix product.

    Parameters
    ----------
    V : array-like of shape (n_models, n_cells) or (n_models, n_cells, n_columns)
        Velocities in m/s, depth along axis 1 (as :func:`make_layered_earth`
        returns them).
    dt : float, default=0.004
        Time sampling in seconds.
    n_samples : int, default=192
        Samples per trace; reflections later than ``(n_samples - 1) * dt`` are
        cut.
    f0 : float, default=10.0
        Peak frequency of the Ricker wavelet in Hz.
    dz : float, default=10.0
        Cell height in metres (that of the models).

    Returns
    -------
    S : ndarray of shape (n_models, n_samples) or (n_models, n_samples, n_columns)
        Traces, time along axis 1.

    See Also
    --------
    make_layered_earth : Velocity models to feed in.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.datasets import convolutional_seismogram
    >>> V = np.array([[2000.0] * 10 + [3000.0] * 10])  # one interface at 100 m
    >>> S = convolutional_seismogram(V, n_samples=64)
    >>> int(np.argmax(S[0])), round(float(S[0].max()), 2)  # two-way time 0.1 s: sample 25, r = 0.2
    (25, 0.2)
    """
    name = "convolutional_seismogram"
    V = np.asarray(V, dtype=np.float64)
    if V.ndim not in (2, 3):
        raise ValueError(f"{name}: V must be 2-D (n_models, n_cells) or 3-D (n_models, n_cells, n_columns); "
                         f"got shape {V.shape}.")
    if not np.all(np.isfinite(V)) or np.any(V <= 0):
        raise ValueError(f"{name}: velocities must be finite and > 0.")
    if not isinstance(n_samples, Integral) or n_samples < 1:
        raise ValueError(f"{name}: n_samples must be an int >= 1; got {n_samples!r}.")
    for label, value in (("dt", dt), ("f0", f0), ("dz", dz)):
        if not (isinstance(value, Real) and value > 0):
            raise ValueError(f"{name}: {label} must be a float > 0; got {value!r}.")
    three_d = V.ndim == 3
    n_models, n_cells = V.shape[:2]
    logs = np.moveaxis(V, 1, -1).reshape(-1, n_cells) if three_d else V  # (n_traces, n_cells)
    n_traces = logs.shape[0]
    # interface k lies at the bottom of cell k, reached after 2 * sum_{j<=k} dz / v_j seconds
    t_interface = 2.0 * np.cumsum(dz / logs[:, :-1], axis=1)
    r = (logs[:, 1:] - logs[:, :-1]) / (logs[:, 1:] + logs[:, :-1])
    pos = t_interface / dt
    lo = np.floor(pos).astype(np.int64)
    w_hi = pos - lo
    rows = np.repeat(np.arange(n_traces)[:, None], n_cells - 1, axis=1)
    reflectivity = np.zeros(n_traces * (n_samples + 1))
    for idx, weight in ((lo, 1.0 - w_hi), (lo + 1, w_hi)):
        keep = idx < n_samples
        flat = rows[keep] * (n_samples + 1) + idx[keep]
        reflectivity += np.bincount(flat, weights=(r * weight)[keep], minlength=reflectivity.size)
    reflectivity = reflectivity.reshape(n_traces, n_samples + 1)[:, :n_samples]
    lags = np.arange(n_samples)
    wavelet = ricker_wavelet((lags[None, :] - lags[:, None]) * dt, f0)  # W[i, j] = w((j - i) dt)
    traces = reflectivity @ wavelet
    if three_d:
        return np.moveaxis(traces.reshape(n_models, -1, n_samples), -1, 1)
    return traces


def _normalise_name(name):
    return re.sub(r"[^a-z0-9]", "", str(name).lower())


def _numbered(files, prefixes):
    """``{suffix: path}`` of the ``.npy`` files whose names start with one of ``prefixes``."""
    out = {}
    for path in files:
        stem = os.path.splitext(os.path.basename(path))[0]
        for prefix in prefixes:
            if stem.lower().startswith(prefix):
                out[stem[len(prefix):]] = path
                break
    return out


def _suffix_key(suffix):
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", suffix)]


def load_openfwi(path, dataset, *, max_files=None, mmap_mode="r"):
    """Read OpenFWI seismic data and velocity maps from ``.npy`` files already on disk.

    OpenFWI (Deng et al., 2022) stores each dataset as pairs of files: seismic
    data (``data<i>.npy`` for the Vel and Style families, ``seis<i>.npy`` for
    the Fault family) of shape ``(500, 5, 1000, 70)`` (shots, sources, time
    samples, receivers) and velocity maps (``model<i>.npy`` / ``vel<i>.npy``)
    of shape ``(500, 1, 70, 70)``. This function finds the pairs in
    ``path/<dataset>`` (any spelling of the name: ``FlatVel-A``,
    ``flatvel_a``, ...), or in ``path`` itself, and memory-maps them. Nothing
    is ever downloaded: get the data from the OpenFWI site first.

    Parameters
    ----------
    path : str or path-like
        Folder holding the dataset's folder, or the dataset's files.
    dataset : str
        One of :data:`OPENFWI_DATASETS` (case and punctuation ignored).
    max_files : int, default=None
        Read at most this many file pairs, in the order of their numbers.
    mmap_mode : {"r", "c", None}, default="r"
        ``numpy.load``'s memory mapping; ``None`` reads the files into memory.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        ``seismic`` (n, n_sources, n_time, n_receivers) and ``velocity``
        (n, 1, height, width) arrays: the memory maps themselves when one
        pair is read, their concatenation (in memory) otherwise;
        ``seismic_files`` and ``velocity_files``, the paths read; ``dataset``,
        the canonical name. Flatten a sample for the estimators with
        ``reshape(n, -1)``; OpenFWI's evaluation rescales velocity to
        [-1, 1] by the dataset's minimum and maximum.

    Raises
    ------
    ValueError
        For an unknown dataset name, a folder without pairs, or files of
        the wrong dimensions or unequal numbers of samples.

    See Also
    --------
    make_layered_earth, convolutional_seismogram : Synthetic data of the same kind.

    References
    ----------
    .. [1] Deng, C., Feng, S., Wang, H., et al. "OpenFWI: Large-scale
       multi-structural benchmark datasets for full waveform inversion",
       NeurIPS Datasets and Benchmarks, 2022.

    Examples
    --------
    >>> import tempfile, pathlib, numpy as np
    >>> from sklearn_icml.datasets import load_openfwi
    >>> root = pathlib.Path(tempfile.mkdtemp()) / "flatvel_a"
    >>> root.mkdir()
    >>> np.save(root / "data1.npy", np.zeros((4, 5, 100, 7), dtype=np.float32))
    >>> np.save(root / "model1.npy", np.full((4, 1, 7, 7), 1500.0, dtype=np.float32))
    >>> d = load_openfwi(root.parent, "FlatVel-A")
    >>> d.seismic.shape, d.velocity.shape
    ((4, 5, 100, 7), (4, 1, 7, 7))
    """
    name = "load_openfwi"
    canonical = {_normalise_name(d): d for d in OPENFWI_DATASETS}
    key = _normalise_name(dataset)
    if key not in canonical:
        raise ValueError(f"{name}: unknown dataset {dataset!r}; expected one of {OPENFWI_DATASETS}.")
    if max_files is not None and (not isinstance(max_files, Integral) or max_files < 1):
        raise ValueError(f"{name}: max_files must be None or an int >= 1; got {max_files!r}.")
    if mmap_mode not in ("r", "c", None):
        raise ValueError(f"{name}: mmap_mode must be 'r', 'c' or None; got {mmap_mode!r}.")
    path = os.fspath(path)
    if not os.path.isdir(path):
        raise ValueError(f"{name}: {path!r} is not a folder.")
    folder = path
    for entry in sorted(os.listdir(path)):
        if _normalise_name(entry) == key and os.path.isdir(os.path.join(path, entry)):
            folder = os.path.join(path, entry)
            break
    files = [os.path.join(folder, f) for f in sorted(os.listdir(folder)) if f.lower().endswith(".npy")]
    seismic = _numbered(files, ("data", "seis"))
    velocity = _numbered(files, ("model", "vel"))
    common = sorted(set(seismic) & set(velocity), key=_suffix_key)
    if not common:
        raise ValueError(f"{name}: no pairs of seismic (data*/seis*.npy) and velocity (model*/vel*.npy) files "
                         f"with matching numbers in {folder!r}.")
    if max_files is not None:
        common = common[:max_files]
    seis_arrays, vel_arrays = [], []
    for suffix in common:
        s = np.load(seismic[suffix], mmap_mode=mmap_mode)
        v = np.load(velocity[suffix], mmap_mode=mmap_mode)
        if s.ndim != 4 or v.ndim != 4:
            raise ValueError(f"{name}: expected 4-D arrays (n, sources, time, receivers) and (n, 1, height, width); "
                             f"got {s.shape} in {seismic[suffix]!r} and {v.shape} in {velocity[suffix]!r}.")
        if s.shape[0] != v.shape[0]:
            raise ValueError(f"{name}: {seismic[suffix]!r} holds {s.shape[0]} samples but {velocity[suffix]!r} "
                             f"holds {v.shape[0]}.")
        seis_arrays.append(s)
        vel_arrays.append(v)
    if len(common) == 1:
        seis, vel = seis_arrays[0], vel_arrays[0]
    else:
        seis, vel = np.concatenate(seis_arrays), np.concatenate(vel_arrays)
    return Bunch(seismic=seis, velocity=vel, seismic_files=[seismic[s] for s in common],
                 velocity_files=[velocity[s] for s in common], dataset=canonical[key])
