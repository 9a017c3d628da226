"""``xla_spmd.debug``: JAX's ``jax.debug.print`` and ``jax.debug.callback``, from inside
traced code (see `xla_spmd.frontend.debugging`), and ``visualize_array_sharding``.

>>> import numpy as np
>>> import xla_spmd as xs
>>> _ = xs.jit(lambda x: (xs.debug.print("x: {}", x), x)[1])(np.float32(2.0))
x: 2.0
"""

from xla_spmd.frontend.debugging import callback, print  # noqa: F401,A004
from xla_spmd.sharding import visualize_sharding


def visualize_array_sharding(array, **kwargs) -> None:
    """Print how `array` is laid out on the devices (JAX's
    ``jax.debug.visualize_array_sharding``; the same as `xla_spmd.visualize_sharding`)."""
    visualize_sharding(array, **kwargs)
