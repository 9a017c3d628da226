"""``xla_spmd.random``: JAX's ``jax.random``, bit for bit (threefry2x32 keys; see
`xla_spmd.frontend.random`).

>>> import xla_spmd.random as xr
>>> xr.normal(xr.PRNGKey(0), (2, 3)).shape
(2, 3)
"""

from xla_spmd.frontend.random import (  # noqa: F401
    PRNGKey,
    bernoulli,
    bits,
    categorical,
    fold_in,
    gumbel,
    key,
    key_data,
    normal,
    permutation,
    randint,
    random_bits,
    split,
    threefry2x32,
    truncated_normal,
    uniform,
    wrap_key_data,
)
