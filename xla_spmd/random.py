"""``xla_spmd.random``: explicit keys, threefry `rng-bit-generator` (see
`xla_spmd.frontend.random`).

>>> import xla_spmd.random as xr
>>> xr.normal(xr.key(0), (2, 3)).shape
(2, 3)
"""

from xla_spmd.frontend.random import (  # noqa: F401
    PRNGKey,
    bernoulli,
    categorical,
    fold_in,
    key,
    normal,
    permutation,
    randint,
    random_bits,
    split,
    uniform,
)
