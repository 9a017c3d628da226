"""The cost model: per-device time (roofline compute, alpha-beta collectives, the schedule)
and memory (liveness) of a partitioned program, priced with a calibrated machine profile."""

from xla_spmd.cost.model import (
    CostReport,
    MemoryStats,
    OpCost,
    estimate,
    live_bytes,
    memory_stats,
    source_of,
    totals,
)
from xla_spmd.cost.profile import (
    CPU_PROFILE,
    DEFAULT_PROFILE,
    Profile,
    default_profile,
    load_profile,
)
from xla_spmd.cost.work import flops

__all__ = ["CostReport", "MemoryStats", "OpCost", "estimate", "flops", "live_bytes",
           "memory_stats", "source_of", "totals",
           "CPU_PROFILE", "DEFAULT_PROFILE", "Profile", "default_profile", "load_profile"]
