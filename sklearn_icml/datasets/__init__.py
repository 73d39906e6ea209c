"""Small, seeded data generators for every family (``make_*``), and demo data for the tour.

Each generator is fast (well under a second), deterministic under
``random_state`` and returns plain numpy arrays in the shape its family's
estimators take.
"""

__all__ = []
