"""Tour entries of the survival family (S15, MMP)."""

from ._base import TourEntry, TourResult


def _cohort(quick):
    import numpy as np
    from sklearn.model_selection import train_test_split

    from ..datasets import make_multimodal_survival

    n = 250 if quick else 500
    bags, genes, y, info = make_multimodal_survival(n, bag_size=(40, 120) if quick else (60, 200),
                                                    return_info=True, random_state=0)
    train, test = train_test_split(np.arange(n), test_size=0.4, stratify=y["event"], random_state=0)
    part = {"train": train, "test": test}
    return {k: ([bags[i] for i in idx], genes[idx], y[idx]) for k, idx in part.items()}, info


def _mean_pooled_baseline(data, info):
    import numpy as np
    from sklearn.preprocessing import StandardScaler

    from ..survival import BagPooler, CoxSurvival, PathwayEncoder

    (b_tr, g_tr, y_tr), (b_te, g_te, y_te) = data["train"], data["test"]
    pool, pe = BagPooler().fit(b_tr), PathwayEncoder(info.pathways).fit(g_tr)
    A = np.hstack([pool.transform(b_tr), pe.transform(g_tr)])
    B = np.hstack([pool.transform(b_te), pe.transform(g_te)])
    scaler = StandardScaler().fit(A)
    return CoxSurvival().fit(scaler.transform(A), y_tr).score(scaler.transform(B), y_te)


def _run_prototype_cox(device="cpu", quick=False):
    import time

    import numpy as np
    from sklearn.preprocessing import StandardScaler

    from ..survival import CoxSurvival, PathwayEncoder, PrototypeEncoder

    data, info = _cohort(quick)
    (b_tr, g_tr, y_tr), (b_te, g_te, y_te) = data["train"], data["test"]
    start = time.perf_counter()
    enc = PrototypeEncoder(8, output="pi", device=device, random_state=0).fit(b_tr)
    pe = PathwayEncoder(info.pathways).fit(g_tr)
    A = np.hstack([enc.transform(b_tr)[:, 1:], pe.transform(g_tr)])  # the 8 weights sum to one: keep 7
    scaler = StandardScaler().fit(A)
    cox = CoxSurvival().fit(scaler.transform(A), y_tr)
    seconds = time.perf_counter() - start
    B = scaler.transform(np.hstack([enc.transform(b_te)[:, 1:], pe.transform(g_te)]))
    return TourResult(metric="test c-index", score=cox.score(B, y_te),
                      baseline="mean-pooled bags", baseline_score=_mean_pooled_baseline(data, info),
                      fit_seconds=seconds)


def _run_fusion(device="cpu", quick=False):
    import time

    import numpy as np

    from ..survival import PathwayEncoder, PrototypeEncoder, PrototypeSurvival

    data, info = _cohort(quick)
    (b_tr, g_tr, y_tr), (b_te, g_te, y_te) = data["train"], data["test"]
    start = time.perf_counter()
    enc = PrototypeEncoder(8, output="allcat", device=device, random_state=0).fit(b_tr)
    pe = PathwayEncoder(info.pathways, summary="none").fit(g_tr)
    net = PrototypeSurvival(8, pathway_sizes=list(pe.pathway_sizes_), embed_dim=32,
                            id_embed_dim=8, learning_rate=3e-3, max_iter=40 if quick else 50, device=device,
                            random_state=0)
    net.fit(np.hstack([enc.transform(b_tr), pe.transform(g_tr)]), y_tr)
    seconds = time.perf_counter() - start
    score = net.score(np.hstack([enc.transform(b_te), pe.transform(g_te)]), y_te)
    return TourResult(metric="test c-index", score=score,
                      baseline="mean-pooled bags", baseline_score=_mean_pooled_baseline(data, info),
                      fit_seconds=seconds)


TOUR_ENTRIES = [
    TourEntry("PrototypeEncoder", "S15", "survival from bags of patches + genes (prototypes, Cox head)",
              _run_prototype_cox, uses_device=True),
    TourEntry("PrototypeSurvival", "S15", "survival from prototype and pathway tokens (fusion network)",
              _run_fusion, uses_device=True),
]
