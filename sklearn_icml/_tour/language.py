"""Tour entry of the language family: the in-context 3-gram against the 1-gram on held-out languages."""

from ._base import TourEntry, TourResult, fit_timed


def _run_in_context_ngram(device="cpu", quick=False):
    from ..datasets import make_regular_languages
    from ..language import InContextNGram

    data = make_regular_languages(60 if quick else 300, random_state=0)
    trigram, seconds = fit_timed(InContextNGram(order=3), data.sequences)
    unigram = InContextNGram(order=1).fit(data.sequences)
    return TourResult(metric="DFA accuracy", score=trigram.score(data.sequences, data.valid_next),
                      baseline="in-context 1-gram", baseline_score=unigram.score(data.sequences, data.valid_next),
                      fit_seconds=seconds)


TOUR_ENTRIES = [
    TourEntry("InContextNGram", "S6", "predict the next letter of an unseen regular language in context",
              _run_in_context_ngram),
]
