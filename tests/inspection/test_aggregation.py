"""aggregate_attributions (AGG_mean, AGG_var) and the AGG_var column of AttributionCombiner.evaluate."""

import numpy as np
import pytest
from sklearn.linear_model import Ridge

from sklearn_icml.datasets import make_attribution_task
from sklearn_icml.inspection import AttributionCombiner, aggregate_attributions, avg_sensitivity, infidelity

METHODS = ("saliency", "input_x_gradient", ("integrated_gradients", {"n_steps": 8}), "feature_ablation")


def test_agg_var_by_the_definition_feature_by_feature():
    rng = np.random.RandomState(0)
    maps = rng.standard_normal((3, 4, 5))
    out = aggregate_attributions(maps, method="variance", variance_offset=0.3)
    for n in range(3):
        for j in range(5):
            column = maps[n, :, j]
            var = np.sum((column - column.mean()) ** 2) / (len(column) - 1)
            assert out[n, j] == pytest.approx(np.sum(column) / 4 / (var + 0.3))
    np.testing.assert_allclose(aggregate_attributions(maps), maps.mean(axis=1))
    # agreeing methods are averaged with weight 1 / c, disagreement damps a feature
    agree = np.ones((1, 3, 2))
    np.testing.assert_allclose(aggregate_attributions(agree, method="variance"), [[1 / 0.226, 1 / 0.226]])
    single = aggregate_attributions(maps[:, :1], method="variance")
    np.testing.assert_allclose(single, maps[:, 0] / 0.226)


def test_aggregate_attributions_errors():
    with pytest.raises(ValueError, match="shape"):
        aggregate_attributions(np.ones((3, 4)))
    with pytest.raises(ValueError, match="NaN"):
        aggregate_attributions(np.full((1, 2, 2), np.nan))
    with pytest.raises(ValueError, match="method"):
        aggregate_attributions(np.ones((1, 2, 2)), method="median")


def test_evaluate_scores_agg_var_like_any_map():
    X, y = make_attribution_task(n_samples=80, n_features=5, random_state=0)
    # a single-output regressor: the explained output does not depend on a target class
    comb = AttributionCombiner(Ridge(), methods=METHODS, criterion="robustness", n_robustness_samples=6,
                               n_faithfulness_samples=15, random_state=0).fit(X, y.astype(float))
    Xe = X[:6]
    quality = comb.evaluate(Xe)
    k = len(METHODS)
    assert quality.names[k + 2] == "inverse_variance"
    res = comb._explain_full(Xe, evaluate=("infidelity", "sensitivity"))
    draws = res["draws"]
    _, _, base = comb.explain(Xe, return_weights=True)  # normalised base maps (robustness: no rescaling)
    agg = aggregate_attributions(base, method="variance")
    I = draws["masks_eval"][None] * (Xe - comb.baseline_)[:, None, :]
    np.testing.assert_allclose(quality.infidelity[:, k + 2], infidelity(comb.estimator_, Xe, agg, perturbations=I),
                               rtol=1e-8)

    def explain_var(Z):
        return aggregate_attributions(comb.explain(Z, return_weights=True)[2], method="variance")

    eps = np.broadcast_to(draws["eps_eval"][None], (len(Xe),) + draws["eps_eval"].shape)
    sens = avg_sensitivity(explain_var, Xe, perturbations=eps, relative=False, squared=True)
    np.testing.assert_allclose(quality.sensitivity[:, k + 2], sens, rtol=1e-6)
