"""The SPMD partitioner: a module whose values all have shardings -> one SPMD module.

`partition(module)` rewrites every value to its per-device shape, inserting collectives with
replica groups where shardings disagree (see partitioner.py for the steps); it only
partitions: `xla_spmd.pipeline` propagates before it, and optimizes and verifies after it;
`specialize(module, device)` folds partition-id for one device; `plan_reshard` is the
resharding planner alone; `collective_table(module)` lists a module's collectives with the
bytes each device moves.
"""

# The handler modules fill the partition handler registry (registry.py) as they load.
from xla_spmd.partition import (  # noqa: F401
    handlers_contraction,
    handlers_control,
    handlers_elementwise,
    handlers_indexing,
    handlers_normalization,
    handlers_reduction,
    handlers_shape,
    handlers_windowed,
)
from xla_spmd.partition.partitioner import partition
from xla_spmd.partition.report import collective_bytes, collective_table, format_table
from xla_spmd.partition.reshard import Plan, Step, plan_reshard
from xla_spmd.partition.specialize import specialize
from xla_spmd.partition.values import PTuple, PValue

__all__ = ["PTuple", "PValue", "Plan", "Step", "collective_bytes", "collective_table",
           "format_table", "partition", "plan_reshard", "specialize"]
