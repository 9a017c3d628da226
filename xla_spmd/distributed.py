"""Multi-process set-up: `xla_spmd.distributed.initialize()` under `mpirun`.

Launchers are detected from their environment, so calling this is only needed where the
launcher is not recognised; afterwards each rank owns one device and device id = rank.
"""

from xla_spmd.runtime.devices import Topology, initialize_mpi


def initialize() -> Topology:
    """Own one device per MPI rank (device id = rank)."""
    return initialize_mpi()
