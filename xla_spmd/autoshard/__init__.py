"""Auto-sharding: an integer program over per-op sharding choices with resharding costs on
the edges (HiGHS), or a greedy search for large graphs; the answer as PartitionSpecs."""

from xla_spmd.autoshard.api import Plan, auto_shard

__all__ = ["Plan", "auto_shard"]
