"""Under mpirun -n 4: how many BLAS threads each rank's program runs with, and the cores each
rank may use (its affinity), one line per rank."""
import os

import numpy as np
from threadpoolctl import threadpool_info

import xla_spmd as xs
from xla_spmd import NamedSharding, P
from xla_spmd.backends.cpu.executable import CpuExecutable

seen = []
run = CpuExecutable.run


def recording_run(self, device, arguments, communicator):
    seen.append(max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"))
    return run(self, device, arguments, communicator)


CpuExecutable.run = recording_run
mesh = xs.make_mesh({"x": 4}, axis_types=xs.AxisType.Auto)
x = np.ones((8, 8), np.float32)
np.asarray(xs.jit(lambda a: (a @ a.T).sum(0), in_shardings=NamedSharding(mesh, P("x")))(x))
after = max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")
cores = sorted(os.sched_getaffinity(0))
print(f"rank {xs.process_index()} threads {seen} after {after} cores {cores}", flush=True)
