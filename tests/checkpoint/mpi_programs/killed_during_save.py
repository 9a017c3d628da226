"""Under `mpirun -n 4`: save step 1, then start step 2, during which rank 2 is killed after
writing one of its chunks (SIGKILL: no clean-up code runs)."""

import os
import signal
import sys

import numpy as np

import xla_spmd as xs
from xla_spmd.checkpoint import writer

root = sys.argv[1]
mesh = xs.make_mesh({"x": 4})
sharding = xs.NamedSharding(mesh, xs.P("x", None))
first = {"w": xs.device_put(np.arange(32.0).reshape(8, 4), sharding),
         "v": xs.device_put(np.arange(8.0), xs.NamedSharding(mesh, xs.P("x")))}
xs.checkpoint.save(root, first, step=1, async_=False)

if xs.process_index() == 2:
    write_chunks = writer._SaveJob._write

    def write_one_and_die(job):
        job.writes = job.writes[:1]
        write_chunks(job)
        os.kill(os.getpid(), signal.SIGKILL)

    writer._SaveJob._write = write_one_and_die
second = {"w": xs.device_put(np.ones((8, 4)), sharding),
          "v": xs.device_put(np.ones(8), xs.NamedSharding(mesh, xs.P("x")))}
xs.checkpoint.save(root, second, step=2).wait()
print("unreachable: the save of step 2 completed")
