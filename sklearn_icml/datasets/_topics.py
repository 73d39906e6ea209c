"""A synthetic topic corpus for private text synthesis: public texts on many topics, private ones on a few."""

from numbers import Integral, Real

import numpy as np
from sklearn.utils import Bunch, check_random_state

from ..utils._sklearn_private import Interval, validate_params

__all__ = ["make_topic_corpus", "topic_of"]


def _vocabulary(n_topics, words_per_topic, n_general):
    topics = [[f"t{k:02d}w{j:02d}" for j in range(words_per_topic)] for k in range(n_topics)]
    return topics, [f"g{j:02d}" for j in range(n_general)]


@validate_params(
    {
        "n_public": [Interval(Integral, 1, None, closed="left")],
        "n_private": [Interval(Integral, 1, None, closed="left")],
        "n_topics": [Interval(Integral, 2, 100, closed="both")],
        "n_private_topics": [Interval(Integral, 1, None, closed="left")],
        "n_words": [Interval(Integral, 1, None, closed="left")],
        "words_per_topic": [Interval(Integral, 2, 100, closed="both")],
        "general_share": [Interval(Real, 0, 1, closed="left")],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_topic_corpus(n_public=5000, n_private=2000, *, n_topics=20, n_private_topics=2, n_words=12,
                      words_per_topic=30, general_share=0.3, random_state=None):
    """Short texts on numbered topics: a public pool over every topic, private texts on a few.

    A text of topic ``k`` has ``n_words`` words; each is, with probability
    ``general_share``, one of 50 general words shared by all topics, and
    otherwise one of topic ``k``'s own ``words_per_topic`` words, drawn with
    Zipf-like weights and a preference for the word that follows the previous
    one in the topic's list (so texts have bigram structure). The public pool
    spreads over all topics uniformly; the private texts use only the last
    ``n_private_topics`` topics.

    Parameters
    ----------
    n_public : int, default=5000
        Public texts.
    n_private : int, default=2000
        Private texts.
    n_topics : int, default=20
        Number of topics.
    n_private_topics : int, default=2
        Topics of the private texts (fewer than ``n_topics``).
    n_words : int, default=12
        Words per text.
    words_per_topic : int, default=30
        Vocabulary of each topic.
    general_share : float, default=0.3
        Probability that a word is a general word.
    random_state : int, RandomState instance or None, default=None
        Seed.

    Returns
    -------
    corpus : :class:`~sklearn.utils.Bunch`
        ``public`` and ``private`` (object arrays of strings),
        ``public_topics`` and ``private_topics`` (int arrays),
        ``private_topic_ids`` (the private topics) and ``topic_words`` (one
        list of words per topic), for :func:`topic_of`.

    Examples
    --------
    >>> from sklearn_icml.datasets import make_topic_corpus
    >>> corpus = make_topic_corpus(100, 50, random_state=0)
    >>> len(corpus.public), len(corpus.private), sorted(set(corpus.private_topics.tolist()))
    (100, 50, [18, 19])
    """
    if n_private_topics >= n_topics:
        raise ValueError(f"make_topic_corpus: n_private_topics={n_private_topics} must be below "
                         f"n_topics={n_topics}.")
    rng = check_random_state(random_state)
    topic_words, general = _vocabulary(n_topics, words_per_topic, 50)
    zipf = 1.0 / np.arange(1, words_per_topic + 1)
    zipf /= zipf.sum()

    def texts(topics):
        out = []
        for k in topics:
            words, prev = [], None
            for _ in range(n_words):
                if rng.uniform() < general_share:
                    words.append(general[rng.randint(50)])
                    continue
                if prev is not None and rng.uniform() < 0.5:
                    prev = (prev + 1) % words_per_topic
                else:
                    prev = int(rng.choice(words_per_topic, p=zipf))
                words.append(topic_words[k][prev])
            out.append(" ".join(words))
        return np.array(out, dtype=object)

    public_topics = rng.randint(n_topics, size=n_public)
    private_ids = np.arange(n_topics - n_private_topics, n_topics)
    private_topics = private_ids[rng.randint(n_private_topics, size=n_private)]
    return Bunch(public=texts(public_topics), private=texts(private_topics), public_topics=public_topics,
                 private_topics=private_topics, private_topic_ids=private_ids, topic_words=topic_words)


def topic_of(texts, topic_words):
    """The topic of each text: the one with most of its words (-1 when it has none).

    Parameters
    ----------
    texts : sequence of str
        Texts.
    topic_words : list of list of str
        Each topic's words (``make_topic_corpus(...).topic_words``).

    Returns
    -------
    ndarray of shape (n_texts,)
        Topic ids.
    """
    owner = {w: k for k, words in enumerate(topic_words) for w in words}
    out = np.full(len(texts), -1)
    for i, text in enumerate(texts):
        hits = np.bincount([owner[w] for w in str(text).split() if w in owner], minlength=len(topic_words))
        if hits.sum():
            out[i] = int(hits.argmax())
    return out
