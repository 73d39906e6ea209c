"""Tour entry of the multimodal family: audio-to-text retrieval after a combination bond, against the unified space."""

from ._base import TourEntry, TourResult, fit_timed


def _run_space_bond(device="cpu", quick=False):
    from ..datasets import make_multimodal_embeddings
    from ..metrics import recall_at_k
    from ..multimodal import SpaceBond

    n_items = 900 if quick else 3000
    n_train = 2 * n_items // 3
    data = make_multimodal_embeddings(n_items, random_state=0)
    train, test = data.item < n_train, data.item >= n_train
    bond, seconds = fit_timed(SpaceBond(n_base_features=data.n_base_features, mixing=0.5), data.X[train])
    Z, modality = bond.transform(data.X[test]), data.modality[test]
    return TourResult(metric="audio->text R@1", score=recall_at_k(Z[modality == "audio"], Z[modality == "text"]),
                      baseline="unified space alone",
                      baseline_score=recall_at_k(data.unified_audio[n_train:], data.unified_text[n_train:]),
                      fit_seconds=seconds)


TOUR_ENTRIES = [
    TourEntry("SpaceBond", "S8", "bind an audio-text expert space to a unified one", _run_space_bond),
]
