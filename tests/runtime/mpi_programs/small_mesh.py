"""Under mpirun -n 4: a mesh of 2 devices runs on ranks 0 and 1; every rank reads the result."""
import numpy as np

import xla_spmd as xs
from xla_spmd import NamedSharding, P

mesh = xs.make_mesh({"x": 2}, axis_types=xs.AxisType.Auto)
x = np.arange(16.0, dtype=np.float32).reshape(4, 4)
f = xs.jit(lambda a: (a @ a.T).sum(0), in_shardings=NamedSharding(mesh, P("x")))
result = np.asarray(f(x))
assert np.array_equal(result, (x @ x.T).sum(0)), result
held = xs.device_put(x, NamedSharding(mesh, P(None, "x")))
print(f"rank {xs.process_index()}: {result.tolist()} shards {len(held.addressable_shards)}")
