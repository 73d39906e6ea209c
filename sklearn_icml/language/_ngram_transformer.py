"""NGramTransformerLM: a causal Transformer language model with hard-wired n-gram heads (S6)."""

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator

from ..utils._docstrings import fill_doc
from ..utils._sklearn_private import Interval, StrOptions, _fit_context
from ..utils._torch import to_numpy, to_tensor
from ..utils._torch_base import TorchEstimatorMixin
from ..utils._validation import check_decoupled_weight_decay
from ._base import NextTokenPredictorMixin
from ._counts import head_histograms
from ._sequences import next_token_targets, scored_positions

__all__ = ["NGramTransformerLM"]

_IGNORE = -100


def _histograms(X, orders, vocab_size):
    """Head histograms of every order, stacked: (n_sequences, n_orders, L, vocab_size) float32."""
    return np.stack([head_histograms(X, order, vocab_size) for order in orders], axis=1)


@fill_doc
class NGramTransformerLM(NextTokenPredictorMixin, TorchEstimatorMixin, BaseEstimator):
    """Causal Transformer LM with hard-wired n-gram heads for in-context language learning (ICML 2024).

    A pre-norm Transformer with learned positions is trained on next-token
    cross-entropy over the letters of the training sequences (targets at the
    separator are not scored, as in the paper). ``ngram_orders`` adds one
    n-gram head per order: a parameter-free attention from each position to the
    earlier positions whose preceding ``n`` tokens match its last ``n`` tokens,
    reading the token after each match; the layer outputs
    ``Linear0(average) + Linear1(h)``. ``ngram_orders=()`` is the vanilla model.

    Read more in the :ref:`User Guide <language>`.

    Parameters
    ----------
    d_model : int, default=64
        Width of the residual stream.
    n_layers : int, default=2
        Transformer blocks.
    n_heads : int, default=2
        Attention heads per block (``d_model`` must be divisible by it).
    ngram_orders : tuple of int, default=(1, 2, 3)
        Orders of the hard-wired n-gram heads; empty for a vanilla Transformer.
    ngram_heads_on : {"embedding", "hidden"}, default="embedding"
        "embedding": the heads average token embeddings, computed as
        (in-context histogram) @ (embedding matrix) from histograms built once
        per batch of sequences in O(L); "hidden": the heads sit after the first
        block and attend over hidden states with an ``L x L`` match matrix (the
        paper's placement).
    max_len : int, default=256
        Longest sequence (size of the position table).
    dropout : float, default=0.0
        Dropout of the Transformer blocks.
    learning_rate : float, default=1e-3
        AdamW learning rate.
    weight_decay : float, default=0.01
        AdamW weight decay; ``learning_rate * weight_decay`` must be below 1
        (each step multiplies the weights by one minus it).
    batch_size : int, default=16
        Sequences per optimiser step.
    max_iter : int, default=10
        Epochs over the training sequences (``ceil(n_sequences / batch_size)``
        optimiser steps each).
    {{early_stopping_parameters}}
    separator : int, default=18
        Token id joining the strings of a sequence.
    vocab_size : int, default=None
        Number of token ids; by default one more than the largest id seen in
        ``fit`` (at least ``separator + 1``).
    device : {"cpu", "auto", "cuda"}, "cuda:<index>" or torch.device, default="cpu"
        Where the Transformer trains and predicts.
    random_state : int, RandomState instance or None, default=None
        Seeds the initial weights and the batch order.
    verbose : int, default=0
        Per-epoch progress.

    Attributes
    ----------
    module_ : torch.nn.Module
        The trained network, on the CPU.
    vocab_size_ : int
        Number of token ids.
    loss_curve_ : list of float
        Training cross-entropy per epoch.
    validation_scores_ : list of float or None
        Validation cross-entropy per epoch (lower is better) with
        ``early_stopping``, else None.
    n_iter_ : int
        Epochs run.
    device_ : str
        Where the work ran.

    See Also
    --------
    InContextNGram : The in-context n-gram statistic the heads hard-wire.

    Notes
    -----
    The paper trains with AdamW and a cosine schedule for many more steps; the
    defaults here are sized for a CPU (2 layers, ``d_model=64``). ``max_iter``
    counts epochs, the library's training-layer convention: with 2000 training
    sequences and ``batch_size=16`` an epoch is 125 optimiser steps. On
    embeddings every head reads the token embeddings (not the output of the
    previous head), and ``Linear1`` starts as the identity so an untrained head
    leaves the residual stream unchanged; both are our choices where the paper
    leaves them open.

    Input: ``X`` is a 2-D integer array of token sequences padded with -1.

    References
    ----------
    .. [1] Akyürek, E., Wang, B., Kim, Y. and Andreas, J. "In-Context Language
       Learning: Architectures and Algorithms", ICML 2024.

    Examples
    --------
    >>> from sklearn_icml.datasets import make_regular_languages
    >>> from sklearn_icml.language import NGramTransformerLM
    >>> data = make_regular_languages(32, max_len=64, random_state=0)
    >>> lm = NGramTransformerLM(d_model=16, max_len=64, max_iter=2, random_state=0).fit(data.sequences)
    >>> lm.predict_proba(data.sequences).shape
    (32, 64, 19)
    """

    _parameter_constraints: dict = {
        "d_model": [Interval(Integral, 1, None, closed="left")],
        "n_layers": [Interval(Integral, 0, None, closed="left")],
        "n_heads": [Interval(Integral, 1, None, closed="left")],
        "ngram_orders": [tuple, list],
        "ngram_heads_on": [StrOptions({"embedding", "hidden"})],
        "max_len": [Interval(Integral, 2, None, closed="left")],
        "dropout": [Interval(Real, 0, 1, closed="left")],
        "learning_rate": [Interval(Real, 0, 10, closed="neither")],
        "weight_decay": [Interval(Real, 0, 1e6, closed="left")],
        "separator": [Interval(Integral, 0, None, closed="left")],
        "vocab_size": [Interval(Integral, 2, None, closed="left"), None],
        "random_state": ["random_state"],
    }

    def __init__(self, d_model=64, n_layers=2, n_heads=2, ngram_orders=(1, 2, 3), *, ngram_heads_on="embedding",
                 max_len=256, dropout=0.0, learning_rate=1e-3, weight_decay=0.01, batch_size=16, max_iter=10,
                 early_stopping=False, validation_fraction=0.1, n_iter_no_change=10, tol=1e-4, separator=18,
                 vocab_size=None, device="cpu", random_state=None, verbose=0):
        self.d_model = d_model
        self.n_layers = n_layers
        self.n_heads = n_heads
        self.ngram_orders = ngram_orders
        self.ngram_heads_on = ngram_heads_on
        self.max_len = max_len
        self.dropout = dropout
        self.learning_rate = learning_rate
        self.weight_decay = weight_decay
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.tol = tol
        self.separator = separator
        self.vocab_size = vocab_size
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    def _check_params(self):
        orders = tuple(self.ngram_orders)
        if not all(isinstance(n, Integral) and 1 <= n <= 12 for n in orders):
            raise ValueError(f"NGramTransformerLM: ngram_orders must hold ints in [1, 12]; got {orders!r}.")
        if self.d_model % self.n_heads:
            raise ValueError(f"NGramTransformerLM: d_model={self.d_model} is not divisible by "
                             f"n_heads={self.n_heads}.")
        return orders

    def _check_length(self, X):
        if X.shape[1] > self.max_len:
            raise ValueError(f"NGramTransformerLM: sequences of length {X.shape[1]} exceed max_len={self.max_len}.")
        return X

    def _inputs(self, X):
        if self.ngram_orders and self.ngram_heads_on == "embedding":
            return (X, _histograms(X, tuple(self.ngram_orders), self.vocab_size_))
        return (X,)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Train the language model on next-letter prediction.

        Parameters
        ----------
        X : array-like of shape (n_sequences, max_len)
            Training sequences (token ids padded with -1).
        y : None
            Ignored (``valid_next`` masks may be passed and are ignored).

        Returns
        -------
        self : NGramTransformerLM
            The fitted model.
        """
        from ..utils import Trainer
        from ._modules import NGramTransformer, build_seeded

        check_decoupled_weight_decay(type(self).__name__, self.learning_rate, self.weight_decay)
        with self._torch_fit_context() as ctx:
            orders = self._check_params()
            X = self._check_length(self._validate_fit(X))
            targets = np.where(scored_positions(X, self.separator), next_token_targets(X), _IGNORE)
            if not (targets != _IGNORE).any():
                raise ValueError("NGramTransformerLM: no position of X is followed by a letter; nothing to learn.")
            net = build_seeded(lambda: NGramTransformer(self.vocab_size_, self.d_model, self.n_layers, self.n_heads,
                                                        self.max_len, orders, self.ngram_heads_on, self.dropout),
                               ctx.generator)
            result = Trainer(
                loss=_sequence_cross_entropy, max_iter=self.max_iter, batch_size=self.batch_size,
                learning_rate=self.learning_rate, optimizer="adamw", weight_decay=self.weight_decay,
                early_stopping=self.early_stopping, validation_fraction=self.validation_fraction,
                n_iter_no_change=self.n_iter_no_change, tol=self.tol, device=ctx.device,
                random_state=self.random_state, verbose=self.verbose, name="NGramTransformerLM",
            ).fit(net, self._inputs(X), targets)
        self.module_ = result.module
        self.loss_curve_ = list(result.loss_curve)
        self.validation_scores_ = result.validation_scores
        self.n_iter_ = result.n_iter
        return self

    def predict_proba(self, X, batch_size=64):
        """Next-token distribution at every position.

        Parameters
        ----------
        X : array-like of shape (n_sequences, max_len)
            Token ids padded with -1.
        batch_size : int, default=64
            Sequences per forward pass.

        Returns
        -------
        ndarray of shape (n_sequences, max_len, `vocab_size_`)
            Row ``t`` is the distribution of ``X[i, t + 1]`` after reading
            ``X[i, :t + 1]``; rows past a sequence's end are 0.
        """
        import torch

        if isinstance(batch_size, bool) or not isinstance(batch_size, Integral) or batch_size < 1:
            raise ValueError(f"NGramTransformerLM.predict_proba: batch_size must be a positive integer; got "
                             f"{batch_size!r}.")
        X = self._check_length(self._validate_predict(X))
        inputs = self._inputs(X)
        out = []
        with self._torch_context() as ctx, torch.no_grad():
            device = ctx.device
            net = self.module_.to(device)
            for lo in range(0, len(X), batch_size):
                batch = [to_tensor(a[lo:lo + batch_size], device) for a in inputs]
                out.append(to_numpy(torch.softmax(net(*batch), dim=-1), dtype=np.float64))
            self.module_.to("cpu")
        proba = np.concatenate(out)
        proba[X < 0] = 0.0
        return proba


def _sequence_cross_entropy(logits, targets):
    """Mean next-token cross-entropy over the scored positions of a batch."""
    import torch.nn.functional as F

    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=_IGNORE)
