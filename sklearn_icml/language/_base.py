"""What the family's next-token predictors share: the sequence contract, ``predict`` and ``score``."""

from sklearn.utils.validation import check_is_fitted

from ._metrics import dfa_accuracy
from ._sequences import PAD, check_sequences

__all__ = ["NextTokenPredictorMixin"]


class NextTokenPredictorMixin:
    """``fit`` preamble, ``predict`` and ``score`` of a next-token predictor over padded token sequences.

    Subclasses define ``predict_proba(X)`` returning
    ``(n_sequences, max_len, vocab_size_)`` and call :meth:`_validate_fit`
    at the start of ``fit``.
    """

    def _validate_fit(self, X):
        name = type(self).__name__
        X = check_sequences(X, vocab_size=self.vocab_size, caller=name)
        vocab_size = self.vocab_size if self.vocab_size is not None else max(int(X.max()) + 1, self.separator + 1)
        if self.separator >= vocab_size:
            raise ValueError(f"{name}: separator={self.separator} is not below vocab_size={vocab_size}.")
        self.vocab_size_ = int(vocab_size)
        return X

    def _validate_predict(self, X):
        check_is_fitted(self)
        return check_sequences(X, vocab_size=self.vocab_size_, caller=type(self).__name__)

    def predict(self, X):
        """Most likely next token at every position.

        Parameters
        ----------
        X : array-like of shape (n_sequences, max_len)
            Token ids padded with -1.

        Returns
        -------
        ndarray of shape (n_sequences, max_len)
            ``predict(X)[i, t]`` is the predicted ``X[i, t + 1]``; -1 past the
            end of each sequence.
        """
        proba = self.predict_proba(X)
        out = proba.argmax(axis=-1)
        out[proba.sum(axis=-1) == 0] = PAD
        return out

    def score(self, X, y):
        """DFA accuracy of the argmax predictions (:func:`~sklearn_icml.language.dfa_accuracy`).

        Parameters
        ----------
        X : array-like of shape (n_sequences, max_len)
            Token ids padded with -1.
        y : array-like of bool, shape (n_sequences, max_len, vocab_size)
            The letters the automaton allows after each prefix
            (``valid_next`` of :func:`~sklearn_icml.datasets.make_regular_languages`).

        Returns
        -------
        float
            Share of the scored positions whose argmax is allowed.
        """
        return dfa_accuracy(X, y, self.predict_proba(X), separator=self.separator)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = False
        # X holds token sequences (integer ids padded with -1), categorical data and not a feature matrix: columns
        # are positions, and sequences of another length are valid at predict time. scikit-learn's data checks
        # (random real matrices) do not apply; its API checks and the house checks run on real sequences
        tags.input_tags.two_d_array = False
        tags.input_tags.categorical = True
        return tags

