"""Differential-privacy building blocks shared by the collection's private estimators.

* mechanisms: :func:`laplace_mechanism`, :func:`geometric_mechanism`,
  :func:`gaussian_mechanism` (analytic Gaussian, with
  :func:`gaussian_noise_scale` and :func:`gaussian_delta`);
* a private hierarchical histogram over a quadtree of a bounded box, in the
  central and local models (:func:`private_quadtree_histogram`, with
  :func:`olh_parameters` and :func:`olh_count_std` for local hashing) and
  under continual observation (:class:`ContinualQuadtreeHistogram`);
* noisy per-group counts and sums with the right sensitivities
  (:func:`noisy_group_sums`);
* the epsilon of repeated Gaussian rounds and its inverse, through
  dp-accounting (:func:`gaussian_rounds_epsilon`,
  :func:`gaussian_rounds_noise_multiplier`);
* budget bookkeeping: :class:`Accountant`, :func:`ledger_entry` and
  :func:`split_budget` (parts that never add up to more than the total);
* the exact discrete samplers underneath: :func:`grid_laplace`,
  :func:`gaussian_on_grid` and :func:`add_noise`, the exponential mechanism :func:`exponential_choice`,
  the noise sources :func:`noise_random_state` and :func:`secret_seed`;
* the parts of a release whose exact totals are reduced elsewhere (blocks of
  a Dask collection): :func:`release_group_totals`, and for the quadtree
  :func:`grow_tree`, :func:`noisy_tree_counts` and :func:`tree_count_ledger`;
* a private box for data without public bounds (:func:`private_bounds`, from
  the additive counts of :func:`grid_histogram`);
* :class:`PrivacyLeakWarning`.

Every release adds exact discrete noise (discrete Laplace or Gaussian, drawn from
uniform integers) on a power-of-two grid, so that its reachable outputs do not
depend on its input; ``random_state=None`` draws the integers from the
operating system's cryptographic generator, a seed reproduces them (for tests).

Neighbouring datasets differ by one record added or removed (unbounded DP);
replacing a record is two such steps, so a release that is ``epsilon``-DP
here is ``2 epsilon``-DP for replacement. Local randomisers hide a record
against any other (replacement). Every sensitivity is derived once, in
``_sensitivity.py``, with its worst-case pair; every public function checks
its input (finite data and bounds, ``0 < epsilon < inf``, ``0 <= delta < 1``).
"""

from ._accounting import Accountant, ledger_entry, split_budget
from ._bounds import PrivateBounds, grid_histogram, private_bounds
from ._continual import ContinualQuadtreeHistogram
from ._discrete import (
    add_noise,
    exponential_choice,
    gaussian_on_grid,
    grid_laplace,
    noise_random_state,
    secret_seed,
)
from ._exceptions import PrivacyLeakWarning
from ._local_hashing import olh_count_std, olh_parameters
from ._mechanisms import (
    gaussian_delta,
    gaussian_mechanism,
    gaussian_noise_scale,
    geometric_mechanism,
    laplace_mechanism,
)
from ._quadtree import (
    QuadtreeHistogram,
    grow_tree,
    noisy_tree_counts,
    private_quadtree_histogram,
    tree_count_ledger,
)
from ._rounds import gaussian_rounds_epsilon, gaussian_rounds_noise_multiplier
from ._sums import noisy_group_sums, release_group_totals

__all__ = [
    "Accountant",
    "ContinualQuadtreeHistogram",
    "PrivacyLeakWarning",
    "PrivateBounds",
    "QuadtreeHistogram",
    "add_noise",
    "exponential_choice",
    "gaussian_delta",
    "gaussian_mechanism",
    "gaussian_noise_scale",
    "gaussian_on_grid",
    "gaussian_rounds_epsilon",
    "gaussian_rounds_noise_multiplier",
    "geometric_mechanism",
    "grid_histogram",
    "grid_laplace",
    "grow_tree",
    "laplace_mechanism",
    "ledger_entry",
    "noise_random_state",
    "noisy_group_sums",
    "noisy_tree_counts",
    "olh_count_std",
    "olh_parameters",
    "private_bounds",
    "private_quadtree_histogram",
    "release_group_totals",
    "secret_seed",
    "split_budget",
    "tree_count_ledger",
]
