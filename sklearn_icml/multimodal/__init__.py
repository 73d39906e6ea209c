"""Binding embedding spaces: FreeBind's space bonds between a unified multimodal space and expert spaces.

Seed paper S8: Wang et al., "FreeBind: Free Lunch in Unified Multimodal Space via Knowledge Fusion",
ICML 2024.
"""

from ._free_bind import FreeBind
from ._space_bond import SpaceBond

__all__ = ["FreeBind", "SpaceBond"]
