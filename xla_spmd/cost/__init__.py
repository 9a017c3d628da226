"""The cost model: per-device time (roofline compute, alpha-beta collectives, the schedule)
and memory (liveness) of a partitioned program, priced with a calibrated machine profile."""

from xla_spmd.cost.model import CostReport, OpCost, estimate, flops, live_bytes, source_of
from xla_spmd.cost.profile import DEFAULT_PROFILE, Profile, load_profile

__all__ = ["CostReport", "OpCost", "estimate", "flops", "live_bytes", "source_of",
           "DEFAULT_PROFILE", "Profile", "load_profile"]
