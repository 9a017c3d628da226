"""The tracing frontend: a numpy-like API (`xla_spmd.numpy`), `lax`, `nn`, `random`, pytrees,
autodiff (`grad`, `value_and_grad`, `vjp`), `jit`, sharding constraints and `shard_map`.

Functions only bind IR ops; the current trace decides what happens (see `tracing`).

>>> import numpy as np
>>> import xla_spmd as xs
>>> import xla_spmd.numpy as xnp
>>> f = xs.jit(lambda x: xnp.sum(x ** 2))
>>> float(f(np.arange(3.0, dtype=np.float32)))
5.0
>>> float(xs.grad(lambda x: xnp.sum(x ** 2))(np.float32(3.0)))
6.0
"""

# The numpy layer installs the array operators on `Value` (array_methods.py); sharding in
# types for Explicit mesh axes installs its rule into tracing's bind (sharding_types.py).
from xla_spmd.frontend import array_methods, sharding_types  # noqa: E402,F401
