"""Docstring pieces shared by several estimators, written once.

A docstring cites a piece by a line holding only ``{{name}}``; :func:`fill_doc`
replaces that line by the piece, indented like the line, when the class or
function is defined, so ``help()``, numpydoc and Sphinx see the full text.
"""

import re

__all__ = ["DOC_PIECES", "fill_doc"]

DOC_PIECES = {
    "chatbot_arena_reference": """\
.. [1] W.-L. Chiang, L. Zheng, Y. Sheng, A. N. Angelopoulos, T. Li, D. Li,
   B. Zhu, H. Zhang, M. I. Jordan, J. E. Gonzalez and I. Stoica, "Chatbot
   Arena: An Open Platform for Evaluating LLMs by Human Preference",
   Proceedings of the 41st International Conference on Machine Learning
   (ICML), PMLR 235, 2024.""",
    "grid_rounding_parameters": """\
n_rounded : int
    Most coordinates one record changes (each gains up to one grid step
    when rounded to the grid).
integer : bool, default=False
    Whether the query is integer-valued (no rounding slack while the
    grid step is at most 1).""",
    "noise_random_state": """\
random_state : int, RandomState instance or None, default=None
    Source of the noise: None draws it from the operating system's
    cryptographic generator; an int or a ``RandomState`` reproduces it
    (for testing: the noise of a known seed protects nothing).""",
    "torch_n_threads": """\
n_threads : int >= 1 or None, default=None
    Torch intra-op threads inside the block, passed to
    :func:`~sklearn_icml.utils.torch_threads` (None: its default rule).""",
    "early_stopping_parameters": """\
early_stopping : bool, default=False
    Hold out ``validation_fraction`` of the training samples and stop when
    the validation loss has not improved by ``tol`` for more than
    ``n_iter_no_change`` epochs; the network of the best validation loss is
    kept. Otherwise training stops on the training loss by the same rule
    (scikit-learn's MLP meaning).
validation_fraction : float, default=0.1
    Share of the training samples held out when ``early_stopping``.
n_iter_no_change : int, default=10
    Epochs without an improvement of at least ``tol`` tolerated; set it to
    ``max_iter`` to always run ``max_iter`` epochs.
tol : float, default=1e-4
    Minimal decrease of the monitored loss counted as an improvement.""",
}

_MARKER = re.compile(r"^(?P<indent>[ \t]*)\{\{(?P<name>[a-z_]+)\}\}[ \t]*$", re.MULTILINE)


def fill_doc(obj):
    """Replace each ``{{name}}`` line of ``obj.__doc__`` by ``DOC_PIECES[name]``.

    Parameters
    ----------
    obj : class or function
        Its docstring is rewritten in place.

    Returns
    -------
    obj : class or function
        The same object, so that ``fill_doc`` works as a decorator.
    """
    def piece(match):
        indent = match.group("indent")
        text = DOC_PIECES[match.group("name")]  # an unknown name is a KeyError at import: a typo fails loudly
        return "\n".join(indent + line if line else line for line in text.splitlines())

    if obj.__doc__:
        obj.__doc__ = _MARKER.sub(piece, obj.__doc__)
    return obj
