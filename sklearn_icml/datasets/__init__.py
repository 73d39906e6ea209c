"""Small, seeded data generators for every family (``make_*``), and demo data for the tour.

Each generator is fast (well under a second), deterministic under
``random_state`` and returns plain numpy arrays in the shape its family's
estimators take.
"""

__all__ = []

from ._finetune import make_weight_shift_tasks  # noqa: E402

__all__ += ["make_weight_shift_tasks"]

from ._survival import make_multimodal_survival  # noqa: E402

__all__ += ["make_multimodal_survival"]

from ._ranking import make_arena_battles, simulate_sampled_battles  # noqa: E402

__all__ += ["make_arena_battles", "simulate_sampled_battles"]

from ._correlation import make_planted_partition, make_vertex_stream  # noqa: E402

__all__ += ["make_planted_partition", "make_vertex_stream"]

from ._calibration import make_ece_pathology  # noqa: E402

__all__ += ["make_ece_pathology"]

from ._private_kmeans import make_bounded_blobs  # noqa: E402

__all__ += ["make_bounded_blobs"]

from ._inspection import make_attribution_task  # noqa: E402

__all__ += ["make_attribution_task"]

from ._bandits import make_glm_duels, make_glm_instance  # noqa: E402

__all__ += ["make_glm_duels", "make_glm_instance"]

from ._optimize import make_forrester_tasks, make_hpo_tasks  # noqa: E402

__all__ += ["make_forrester_tasks", "make_hpo_tasks"]

from ._tabular_hpo import make_tabular_hpo_tasks  # noqa: E402

__all__ += ["make_tabular_hpo_tasks"]

from ._scheduling import load_dcs_graph, make_scheduling_dag  # noqa: E402

__all__ += ["load_dcs_graph", "make_scheduling_dag"]

from ._regular_languages import make_regular_languages  # noqa: E402

__all__ += ["make_regular_languages"]

from ._scaling import make_scaling_runs  # noqa: E402

__all__ += ["make_scaling_runs"]

from ._topics import make_topic_corpus, topic_of  # noqa: E402

__all__ += ["make_topic_corpus", "topic_of"]

from ._seismic import convolutional_seismogram, load_openfwi, make_layered_earth  # noqa: E402

__all__ += ["convolutional_seismogram", "load_openfwi", "make_layered_earth"]

from ._swiss_roll import make_swiss_roll_2d  # noqa: E402

__all__ += ["make_swiss_roll_2d"]

from ._multimodal import make_multimodal_embeddings  # noqa: E402

__all__ += ["make_multimodal_embeddings"]

from ._dynamics import make_kuramoto_sivashinsky, make_lorenz63  # noqa: E402

__all__ += ["make_kuramoto_sivashinsky", "make_lorenz63"]
