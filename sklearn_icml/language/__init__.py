"""In-context language learning: in-context n-gram predictors, n-gram heads, automaton-language metrics.

Seed paper S6: Akyürek, Wang, Kim and Andreas, "In-Context Language Learning: Architectures and
Algorithms", ICML 2024. Data: :func:`sklearn_icml.datasets.make_regular_languages`.
"""

from ._counts import ngram_head_histograms
from ._in_context_ngram import InContextNGram
from ._metrics import dfa_accuracy, model_agreement, next_token_tvd
from ._ngram_transformer import NGramTransformerLM

__all__ = ["InContextNGram", "NGramTransformerLM", "dfa_accuracy", "model_agreement", "next_token_tvd",
           "ngram_head_histograms"]
