"""The runtime: devices, sharded arrays, and running SPMD programs on in-process devices or
MPI ranks. It ties the backends and the collectives together.
"""

from xla_spmd.frontend.jit import jit, set_executor
from xla_spmd.runtime.devices import (
                                      Device,
                                      device_count,
                                      devices,
                                      local_devices,
                                      process_count,
                                      process_index,
                                      set_num_devices,
                                      topology,
)
from xla_spmd.runtime.executable import SpmdExecutable
from xla_spmd.runtime.jit_runtime import CompiledStep, execute_lowered, partitioned_module
from xla_spmd.runtime.sharded_array import Shard, ShardedArray, device_put

# Jitted functions with shardings run on the devices from now on.
set_executor(execute_lowered, partitioned_module)

__all__ = ["CompiledStep", "Device", "Shard", "ShardedArray", "SpmdExecutable", "device_count",
           "device_put", "devices", "jit", "local_devices", "process_count", "process_index",
           "set_num_devices", "topology"]
