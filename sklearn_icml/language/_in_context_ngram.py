"""InContextNGram: the in-context n-gram predictor the paper measures architectures against (S6)."""

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator

from ..utils._sklearn_private import Interval, StrOptions, _fit_context
from ..utils._torch import to_numpy, to_tensor
from ..utils._torch_base import TorchEstimatorMixin
from ._base import NextTokenPredictorMixin
from ._ngram import ngram_histograms, ngram_probabilities
from ._sequences import next_token_targets, scored_positions

__all__ = ["InContextNGram"]


def _smoothing_net(n_inputs, hidden_layer_sizes, n_outputs, generator):
    """The learned smoother: an MLP from the order-wise histograms to next-token logits."""
    from ._modules import build_seeded, make_mlp

    return build_seeded(lambda: make_mlp(n_inputs, hidden_layer_sizes, n_outputs), generator)


class InContextNGram(NextTokenPredictorMixin, TorchEstimatorMixin, BaseEstimator):
    """In-context n-gram next-token predictor with backoff (Akyürek et al., ICML 2024).

    At each position the model counts the n-grams of the strings read so far
    in *this* sequence (each string starting afresh) and predicts the next
    letter from the last ``order - 1`` tokens. Nothing is learned across
    sequences unless ``smoothing="learned"``: it is the statistic the paper
    shows Transformers compute in context, and the reference it compares every
    architecture with.

    Read more in the :ref:`User Guide <language>`.

    Parameters
    ----------
    order : int, default=3
        The n of the n-gram.
    backoff : {"katz", "stupid", "none"}, default="katz"
        "katz": letters never seen after the context share the left-over mass
        in proportion to the shorter context's backed-off estimate (the
        authors' rule); "stupid": Brants et al.'s stupid backoff, normalised;
        "none": full-order counts only.
    add_k : float, default=0.0
        Additive smoothing of observed continuations (the release's add-one
        is ``add_k=1``).
    smoothing : {"none", "learned"}, default="none"
        "learned" trains an MLP from the order-wise in-context histograms
        (:meth:`ngram_features`) to the next letter, across the training
        sequences (the authors' learned smoother); "none" uses the backoff
        estimate.
    hidden_layer_sizes : tuple of int, default=(256,)
        Hidden widths of the learned smoother.
    max_iter : int, default=20
        Epochs of the learned smoother.
    batch_size : int, default=4096
        Positions per mini-batch of the learned smoother.
    learning_rate : float, default=1e-3
        Adam learning rate of the learned smoother.
    early_stopping : bool, default=False
        Hold out ``validation_fraction`` of the scored positions and stop the
        learned smoother's training when their cross-entropy has not
        decreased by at least ``tol`` for more than ``n_iter_no_change``
        epochs (the smoother of the best epoch is kept); otherwise stop on
        the training loss by the same rule (scikit-learn's MLP rules).
    validation_fraction : float in (0, 1), default=0.1
        Share of the scored positions held out for early stopping.
    n_iter_no_change : int >= 1, default=10
        Epochs without an improvement of at least ``tol`` tolerated.
    tol : float >= 0, default=1e-4
        Minimal decrease of the monitored loss that counts as an improvement.
    separator : int, default=18
        Token id joining the strings of a sequence.
    vocab_size : int, default=None
        Number of token ids; by default one more than the largest id seen in
        ``fit`` (at least ``separator + 1``).
    device : {"cpu", "auto", "cuda"}, "cuda:<index>" or torch.device, default="cpu"
        Where the learned smoother trains and predicts.
    random_state : int, RandomState instance or None, default=None
        Seeds the learned smoother.
    verbose : int, default=0
        Progress of the learned smoother's training.

    Attributes
    ----------
    vocab_size_ : int
        Number of token ids.
    smoother_ : torch.nn.Module or None
        The learned smoother (on the CPU), or None.
    loss_curve_ : list of float
        Training loss per epoch of the learned smoother (empty without one).
    validation_scores_ : list of float or None
        Held-out cross-entropy per epoch with ``early_stopping`` (lower is
        better); None otherwise or without a learned smoother.
    best_validation_score_ : float or None
        Its smallest value, that of the smoother kept.
    n_iter_ : int
        Epochs run (0 without a learned smoother).
    device_ : str
        Where the work ran.

    See Also
    --------
    NGramTransformerLM : A Transformer with hard-wired n-gram heads.
    dfa_accuracy : The score.

    Notes
    -----
    Like the release, the model predicts letters only (never the separator),
    over the letters seen in context; the left-over mass of the Katz rule
    comes from occurrences of the context that were not continued (the
    current one and string ends). When every seen letter already followed the
    context the left-over is dropped and the row renormalised (the release
    leaves it unnormalised; the argmax is the same). A position before any
    letter is read gets the uniform law over the letters.

    Input: ``X`` is a 2-D integer array of token sequences padded with -1
    (see :func:`~sklearn_icml.datasets.make_regular_languages`); ``y`` of
    :meth:`score` is the ``valid_next`` mask.

    References
    ----------
    .. [1] Akyürek, E., Wang, B., Kim, Y. and Andreas, J. "In-Context Language
       Learning: Architectures and Algorithms", ICML 2024.

    Examples
    --------
    >>> from sklearn_icml.datasets import make_regular_languages
    >>> from sklearn_icml.language import InContextNGram
    >>> data = make_regular_languages(20, random_state=0)
    >>> model = InContextNGram(order=3).fit(data.sequences)
    >>> model.predict_proba(data.sequences).shape
    (20, 256, 19)
    >>> round(model.score(data.sequences, data.valid_next), 2) > 0.8
    True
    """

    _parameter_constraints: dict = {
        "order": [Interval(Integral, 1, 12, closed="both")],
        "backoff": [StrOptions({"katz", "stupid", "none"})],
        "add_k": [Interval(Real, 0, None, closed="left")],
        "smoothing": [StrOptions({"none", "learned"})],
        "hidden_layer_sizes": [tuple, list],
        "learning_rate": [Interval(Real, 0, 10, closed="neither")],
        "separator": [Interval(Integral, 0, None, closed="left")],
        "vocab_size": [Interval(Integral, 2, None, closed="left"), None],
        "random_state": ["random_state"],
    }

    def __init__(self, order=3, *, backoff="katz", add_k=0.0, smoothing="none", hidden_layer_sizes=(256,),
                 max_iter=20, batch_size=4096, learning_rate=1e-3, early_stopping=False, validation_fraction=0.1,
                 n_iter_no_change=10, tol=1e-4, separator=18, vocab_size=None, device="cpu", random_state=None,
                 verbose=0):
        self.order = order
        self.backoff = backoff
        self.add_k = add_k
        self.smoothing = smoothing
        self.hidden_layer_sizes = hidden_layer_sizes
        self.max_iter = max_iter
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.tol = tol
        self.separator = separator
        self.vocab_size = vocab_size
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Record the vocabulary; with ``smoothing="learned"``, train the smoother on ``X``.

        Parameters
        ----------
        X : array-like of shape (n_sequences, max_len)
            Training sequences (token ids padded with -1).
        y : None
            Ignored (``valid_next`` masks may be passed and are ignored).

        Returns
        -------
        self : InContextNGram
            The fitted model.
        """
        with self._torch_fit_context() as ctx:
            sizes = tuple(self.hidden_layer_sizes)
            if not all(isinstance(h, Integral) and h >= 1 for h in sizes):
                raise ValueError(f"InContextNGram: hidden_layer_sizes must hold positive ints; got {sizes!r}.")
            X = self._validate_fit(X)
            self.smoother_, self.loss_curve_, self.n_iter_ = None, [], 0
            self.validation_scores_ = self.best_validation_score_ = None
            if self.smoothing == "learned":
                self._fit_smoother(X, sizes, ctx)
        return self

    def _fit_smoother(self, X, sizes, ctx):
        from ..utils import Trainer

        mask = scored_positions(X, self.separator)
        if not mask.any():
            raise ValueError("InContextNGram: smoothing='learned' needs at least one position followed by a letter.")
        features = self.ngram_features(X)[mask]
        targets = next_token_targets(X)[mask]
        net = _smoothing_net(features.shape[1], sizes, self.vocab_size_, ctx.generator)
        result = Trainer(
            loss=self._smoother_loss, max_iter=self.max_iter, batch_size=self.batch_size,
            learning_rate=self.learning_rate, optimizer="adam", early_stopping=self.early_stopping,
            validation_fraction=self.validation_fraction, n_iter_no_change=self.n_iter_no_change, tol=self.tol,
            device=ctx.device, random_state=self.random_state, verbose=self.verbose, name="InContextNGram",
        ).fit(net, features, targets)
        self.smoother_ = result.module
        self.loss_curve_ = list(result.loss_curve)
        self.validation_scores_ = result.validation_scores
        self.best_validation_score_ = result.best_validation_score
        self.n_iter_ = result.n_iter

    def _smoother_loss(self, logits, target):
        import torch.nn.functional as F

        return F.cross_entropy(self._mask_separator(logits), target)

    def _mask_separator(self, logits):
        masked = logits.clone()
        masked[..., self.separator] = float("-inf")
        return masked

    def ngram_features(self, X):
        """Order-wise in-context next-token histograms.

        Parameters
        ----------
        X : array-like of shape (n_sequences, max_len)
            Token ids padded with -1.

        Returns
        -------
        ndarray of shape (n_sequences, max_len, order * `vocab_size_`)
            Block ``k`` (``k = 0 .. order - 1``) is the normalised histogram of
            the tokens that followed, earlier in the sequence, the ``k`` tokens
            ending at each position (0 where that context was never
            continued). Built in O(L) per sequence by hashing contexts.
        """
        X = self._validate_predict(X)
        return ngram_histograms(X, self.order, self.vocab_size_, self.separator)

    def predict_proba(self, X):
        """Next-token distribution at every position.

        Parameters
        ----------
        X : array-like of shape (n_sequences, max_len)
            Token ids padded with -1.

        Returns
        -------
        ndarray of shape (n_sequences, max_len, `vocab_size_`)
            Row ``t`` is the distribution of ``X[i, t + 1]`` after reading
            ``X[i, :t + 1]``; rows past a sequence's end are 0.
        """
        X = self._validate_predict(X)
        if self.smoother_ is None:
            return ngram_probabilities(X, self.order, self.vocab_size_, self.separator, backoff=self.backoff,
                                       add_k=self.add_k)
        import torch

        features = ngram_histograms(X, self.order, self.vocab_size_, self.separator)
        out = np.zeros((*X.shape, self.vocab_size_))
        real = X >= 0
        with self._torch_context() as ctx, torch.no_grad():
            device = ctx.device
            net = self.smoother_.to(device)
            rows = features[real]
            probs = []
            for lo in range(0, len(rows), 65536):
                logits = net(to_tensor(rows[lo:lo + 65536], device, dtype=torch.float32))
                probs.append(to_numpy(torch.softmax(self._mask_separator(logits), dim=-1), dtype=np.float64))
            self.smoother_.to("cpu")
        out[real] = np.concatenate(probs) if probs else 0.0
        return out
