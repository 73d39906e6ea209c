"""InContextNGram and NGramTransformerLM: the paper's figures at small scale, metrics, search, bad input."""

import pickle

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV, KFold

from sklearn_icml.datasets import make_regular_languages
from sklearn_icml.language import InContextNGram, NGramTransformerLM, dfa_accuracy, model_agreement, next_token_tvd


@pytest.fixture(scope="module")
def regbench():
    return make_regular_languages(300, random_state=0)


def test_metrics_equal_their_definitions():
    rng = np.random.RandomState(0)
    X = np.array([[0, 1, 2, 0, -1], [1, 2, 1, 0, 1]])
    valid = rng.rand(2, 5, 3) < 0.6
    valid[..., 2] = False
    proba = rng.dirichlet(np.ones(3), size=(2, 5))
    hits, tvds = [], []
    for i in range(2):
        for t in range(4):
            nxt = X[i, t + 1]
            if nxt < 0 or nxt == 2:
                continue
            hits.append(valid[i, t, proba[i, t].argmax()])
            law = valid[i, t] / max(valid[i, t].sum(), 1)
            tvds.append(0.5 * np.abs(proba[i, t] - law).sum())
    assert dfa_accuracy(X, valid, proba, separator=2) == pytest.approx(np.mean(hits))
    assert next_token_tvd(X, valid, proba, separator=2) == pytest.approx(np.mean(tvds))
    assert model_agreement(proba, proba, X, separator=2) == pytest.approx(1.0)
    other = rng.dirichlet(np.ones(3), size=(2, 5))
    assert 0 <= model_agreement(proba, other, X, separator=2) < 1


def test_in_context_trigram_reaches_the_paper_level(regbench):
    """REGBENCH, 300 languages: DFA accuracy >= 0.90 and >= the unigram's + 0.35 (pilot: 0.93 / 0.47)."""
    X, valid = regbench.sequences, regbench.valid_next
    tri = InContextNGram(order=3).fit(X)
    uni = InContextNGram(order=1).fit(X)
    acc3, acc1 = tri.score(X, valid), uni.score(X, valid)
    assert acc3 >= 0.90
    assert acc3 >= acc1 + 0.35
    assert next_token_tvd(X, valid, tri.predict_proba(X)) < next_token_tvd(X, valid, uni.predict_proba(X))


def test_predict_is_the_argmax_and_padding_is_minus_one(regbench):
    X = regbench.sequences[:5]
    model = InContextNGram().fit(X)
    proba = model.predict_proba(X)
    pred = model.predict(X)
    real = X >= 0
    np.testing.assert_array_equal(pred[real], proba.argmax(-1)[real])
    assert (pred[~real] == -1).all()


def test_learned_smoothing_trains_and_predicts_distributions(regbench):
    X = regbench.sequences[:80]
    model = InContextNGram(smoothing="learned", hidden_layer_sizes=(32,), max_iter=3, random_state=0).fit(X)
    proba = model.predict_proba(regbench.sequences[80:90])
    real = regbench.sequences[80:90] >= 0
    np.testing.assert_allclose(proba[real].sum(-1), 1.0, atol=1e-6)
    assert (proba[..., 18] == 0).all()
    assert len(model.loss_curve_) == model.n_iter_ == 3 and model.device_ == "cpu"
    again = InContextNGram(smoothing="learned", hidden_layer_sizes=(32,), max_iter=3, random_state=0).fit(X)
    np.testing.assert_allclose(again.predict_proba(regbench.sequences[80:90]), proba)
    loaded = pickle.loads(pickle.dumps(model))
    np.testing.assert_allclose(loaded.predict_proba(regbench.sequences[80:90]), proba)


class _RisingHeldOut(InContextNGram):
    """Planted: the held-out loss (computed without gradients) rises at every epoch."""

    def _smoother_loss(self, logits, target):
        import torch

        if torch.is_grad_enabled():
            return super()._smoother_loss(logits, target)
        self.held_out_calls_ = getattr(self, "held_out_calls_", 0) + 1
        return logits.sum() * 0.0 + float(self.held_out_calls_)


def test_learned_smoother_early_stopping_stops_on_a_rising_held_out_loss(regbench):
    X = regbench.sequences[:40]
    params = dict(smoothing="learned", hidden_layer_sizes=(16,), early_stopping=True, n_iter_no_change=2,
                  batch_size=100_000, random_state=0)  # one batch per epoch: one held-out evaluation per epoch
    model = _RisingHeldOut(max_iter=50, **params).fit(X)
    # epoch 1 is the best; 2 more are tolerated, the 4th stops
    assert model.n_iter_ == 4 and model.validation_scores_ == [1.0, 2.0, 3.0, 4.0]
    assert model.best_validation_score_ == 1.0 and len(model.loss_curve_) == 4
    first = _RisingHeldOut(max_iter=1, **params).fit(X)  # the same split and seed, one epoch
    np.testing.assert_array_equal(model.predict_proba(X[:5]), first.predict_proba(X[:5]))
    plain = InContextNGram(smoothing="learned", hidden_layer_sizes=(16,), max_iter=2, random_state=0).fit(X)
    assert plain.validation_scores_ is None and plain.best_validation_score_ is None


def test_grid_search_over_order_on_held_out_languages(regbench):
    X, valid = regbench.sequences[:60], regbench.valid_next[:60]
    search = GridSearchCV(InContextNGram(), {"order": [1, 3]}, cv=KFold(3)).fit(X, valid)
    assert search.best_params_ == {"order": 3}


def test_heads_beat_the_vanilla_transformer_after_equal_steps():
    train = make_regular_languages(160, max_len=96, random_state=0)
    test = make_regular_languages(40, max_len=96, exclude=train.automata, random_state=1)
    common = dict(d_model=32, max_len=96, max_iter=2, batch_size=16, random_state=0)
    heads = NGramTransformerLM(ngram_orders=(1, 2, 3), **common).fit(train.sequences)
    vanilla = NGramTransformerLM(ngram_orders=(), **common).fit(train.sequences)
    assert heads.n_iter_ == vanilla.n_iter_ == 2
    acc_heads = heads.score(test.sequences, test.valid_next)
    acc_vanilla = vanilla.score(test.sequences, test.valid_next)
    assert acc_heads >= acc_vanilla + 0.15, (acc_heads, acc_vanilla)


@pytest.mark.parametrize("heads_on", ["embedding", "hidden"])
def test_transformer_is_deterministic_causal_and_pickles(heads_on, device):
    data = make_regular_languages(20, max_len=48, random_state=0)
    params = dict(d_model=16, max_len=48, max_iter=1, ngram_heads_on=heads_on, device=device, random_state=0)
    lm = NGramTransformerLM(**params).fit(data.sequences)
    proba = lm.predict_proba(data.sequences)
    np.testing.assert_allclose(NGramTransformerLM(**params).fit(data.sequences).predict_proba(data.sequences),
                               proba, atol=1e-6)
    real = data.sequences >= 0
    np.testing.assert_allclose(proba[real].sum(-1), 1.0, atol=1e-5)
    # causal: changing the future does not change the past's predictions
    changed = data.sequences.copy()
    changed[:, 30:] = np.where(changed[:, 30:] >= 0, (changed[:, 30:] + 1) % 18, -1)
    np.testing.assert_allclose(lm.predict_proba(changed)[:, :30], proba[:, :30], atol=1e-5)
    loaded = pickle.loads(pickle.dumps(lm))
    assert next(loaded.module_.parameters()).device.type == "cpu"
    np.testing.assert_allclose(loaded.predict_proba(data.sequences), proba, atol=1e-6)


def test_transformer_early_stopping_on_held_out_sequences():
    data = make_regular_languages(40, max_len=24, random_state=0)
    common = dict(d_model=8, max_len=24, max_iter=8, random_state=0)
    plain = NGramTransformerLM(n_iter_no_change=8, tol=0.0, **common).fit(data.sequences)
    assert plain.validation_scores_ is None and plain.n_iter_ == 8
    full = NGramTransformerLM(early_stopping=True, n_iter_no_change=8, tol=0.0, **common).fit(data.sequences)
    assert full.n_iter_ == 8 == len(full.validation_scores_) == len(full.loss_curve_)
    assert all(np.isfinite(full.validation_scores_))
    # a tenth of the sequences is held out: the training losses are those of another training set
    assert not np.allclose(full.loss_curve_, plain.loss_curve_)
    # no epoch can improve by tol=1e3: training stops long before max_iter on the validation rule
    stopped = NGramTransformerLM(early_stopping=True, n_iter_no_change=1, tol=1e3,
                                 **{**common, "max_iter": 20}).fit(data.sequences)
    assert stopped.n_iter_ <= 3 and len(stopped.validation_scores_) == stopped.n_iter_


@pytest.mark.parametrize("Model", [InContextNGram, NGramTransformerLM])
@pytest.mark.parametrize("X, match", [
    (np.zeros((2, 3, 4), dtype=int), "2-D"),
    (np.array([[0.5, 1.0]]), "integer"),
    (np.array([[0, 25]]), "token id 25"),
    (np.array([[0, -1, 2]]), "after padding"),
    (np.array([[0, -4]]), "negative"),
    (np.array([[np.nan, 1.0]]), "NaN"),
])
def test_bad_sequences_are_refused_by_name(Model, X, match):
    with pytest.raises(ValueError, match=match):
        Model(vocab_size=19).fit(X)


def test_transformer_refuses_sequences_longer_than_max_len():
    lm = NGramTransformerLM(d_model=8, max_len=8, max_iter=1, random_state=0)
    with pytest.raises(ValueError, match="max_len=8"):
        lm.fit(np.zeros((2, 9), dtype=int))
    with pytest.raises(ValueError, match="divisible"):
        NGramTransformerLM(d_model=9, n_heads=2).fit(np.zeros((2, 5), dtype=int))


def test_fit_does_not_modify_the_input(regbench):
    X = regbench.sequences[:10].copy()
    before = X.copy()
    InContextNGram().fit(X).predict_proba(X)
    np.testing.assert_array_equal(X, before)
