"""Fault scenarios under mpirun, selected by argv[1]:

* ``raise``: rank 2 raises while the others wait in an all-reduce; with
  ``install_abort_on_error`` the job must stop at once with the error printed once.
* ``timeout``: rank 3 never joins an all-reduce; the others must fail with a
  ``CommunicationError`` naming the collective and group after the 2 s timeout.
* ``stall``: every rank makes a blocking all-reduce large enough to have payload stages,
  and rank 3 stops inside it, after the header exchange; the others must time out on the
  payload stage after 2 s and stop the job, reported once.
* ``stall-shared``: the same in a blocking all-reduce through shared memory (the slots made
  by an earlier one), which runs in one frame: rank 3 stops in its fold, after the header
  exchange; the others must time out in the barrier after 2 s, reported once.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from xla_spmd.collectives.mpi import MpiCommunicator, install_abort_on_error


def main(mode: str) -> None:
    install_abort_on_error()
    comm = MpiCommunicator(timeout=60.0)
    everyone = tuple(range(comm.size))
    if mode == "raise":
        if comm.rank == 2:
            time.sleep(0.2)
            raise RuntimeError("boom on rank 2")
        comm.all_reduce(np.ones(4), everyone, "sum")
    elif mode == "timeout":
        if comm.rank == 3:
            time.sleep(30)
        else:
            # Ranks 0-2 enter the all-reduce together, however slowly each process started,
            # so the report's content does not depend on the machine's load.
            comm.barrier(tuple(range(comm.size - 1)))
            comm.timeout = 2.0
            comm.all_reduce(np.ones(4), everyone, "sum")
    elif mode == "stall":
        comm.barrier(everyone)
        comm.timeout = 2.0
        if comm.rank == 3:
            post = MpiCommunicator._post

            def stuck(self, *args):
                time.sleep(30)
                return post(self, *args)

            MpiCommunicator._post = stuck
        comm.all_reduce(np.ones(1 << 16, np.float32), everyone, "sum")
    elif mode == "stall-shared":
        x = np.ones(1 << 16, np.float32)
        comm.all_reduce(x, everyone, "sum")  # makes the group's shared slots
        comm.barrier(everyone)
        comm.timeout = 2.0
        if comm.rank == 3:
            fold = MpiCommunicator._fold_shared

            def stuck(*args):
                time.sleep(30)
                return fold(*args)

            MpiCommunicator._fold_shared = staticmethod(stuck)
        comm.all_reduce(x, everyone, "sum")
    print(f"rank {comm.rank} finished, which it should not", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
