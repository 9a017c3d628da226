"""Multi-process set-up: `xla_spmd.distributed.initialize()` under `mpirun`.

Launchers are detected from their environment, so calling this is only needed where the
launcher is not recognised; afterwards each rank owns one device and device id = rank.
Outside a launcher, don't call it: the process uses in-process devices
(`xs.set_num_devices(n)`).
"""

from xla_spmd.errors import XlaSpmdError
from xla_spmd.runtime.devices import Topology, initialize_mpi, launched_by_mpi

NOT_LAUNCHED = ("xla_spmd.distributed.initialize(): not launched by mpirun: run "
                "`mpirun -n N python …`, or use in-process devices without calling "
                "initialize() (xs.set_num_devices(n))")


def initialize() -> Topology:
    """Own one device per MPI rank (device id = rank).

    Raises XlaSpmdError outside a launcher (MPI reports a world of one process and no
    launcher variables are set), rather than silently running on a single device.
    """
    if not launched_by_mpi():
        try:
            from mpi4py import MPI
        except ImportError:
            raise XlaSpmdError(NOT_LAUNCHED) from None
        if MPI.COMM_WORLD.Get_size() == 1:
            raise XlaSpmdError(NOT_LAUNCHED)
    return initialize_mpi()
