"""The runtime: devices, sharded arrays, and running compiled SPMD programs (a backend's
``Executable``) on in-process devices or MPI ranks. It ties the backends and the collectives
together; ``xs.jit`` (`xla_spmd.api`) sits above it.
"""

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
from xla_spmd.runtime.executable import execute
from xla_spmd.runtime.jit_runtime import Runner
from xla_spmd.runtime.sharded_array import Shard, ShardedArray, device_put

__all__ = ["Device", "Runner", "Shard", "ShardedArray", "device_count", "device_put", "devices",
           "execute", "local_devices", "process_count", "process_index", "set_num_devices",
           "topology"]
