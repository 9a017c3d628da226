"""Under mpirun -n 4: `xs.debug.print` inside jit prints once (rank 0, global value) by
default, and on every rank its own shard with ``partitioned=True`` or in a shard_map."""
import numpy as np

import xla_spmd as xs
from xla_spmd import NamedSharding, P

mesh = xs.make_mesh({"x": 4})
x = np.arange(8, dtype=np.float32)


def step(a):
    xs.debug.print("global {}", a * 2)
    xs.debug.print("rank {r} shard {}", a, r=str(xs.process_index()),
                   partitioned=True)  # a string: static, the program is the same on all ranks
    return a + 1


f = xs.jit(step, in_shardings=NamedSharding(mesh, P("x")))
np.asarray(f(x))
body = xs.shard_map(lambda b: (xs.debug.print("body {}", b.sum()), b)[1], mesh=mesh,
                    in_specs=P("x"), out_specs=P("x"))
np.asarray(xs.jit(body)(x))
