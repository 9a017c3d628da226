"""``xla_spmd.debug``: JAX's ``jax.debug.print`` and ``jax.debug.callback``, from inside
traced code (see `xla_spmd.frontend.debugging`).

>>> import numpy as np
>>> import xla_spmd as xs
>>> _ = xs.jit(lambda x: (xs.debug.print("x: {}", x), x)[1])(np.float32(2.0))
x: 2.0
"""

from xla_spmd.frontend.debugging import callback, print  # noqa: F401,A004
