"""Under mpirun -n 4 (one device per rank): each rank supplies only its own rows of a
global batch (make_array_from_process_local_data) or its shard (make_array_from_callback);
the jitted sum over the assembled arrays equals numpy's on the whole batch."""
import numpy as np

import xla_spmd as xs
from xla_spmd import NamedSharding, P

mesh = xs.make_mesh({"x": 4})
rank = xs.process_index()
X = np.arange(40.0, dtype=np.float32).reshape(8, 5)
rows = NamedSharding(mesh, P("x"))
local = X[2 * rank:2 * rank + 2]  # what this process would read from its own input files
a = xs.make_array_from_process_local_data(rows, local)
b = xs.make_array_from_callback(X.shape, rows, lambda index: X[index] * 2.0)
assert a.shape == (8, 5) and len(a.addressable_shards) == 1
total = float(xs.jit(lambda u, v: (u + v).sum(axis=1).max())(a, b))
assert total == float((X * 3.0).sum(axis=1).max()), total
print(f"rank {rank}: {total}")
