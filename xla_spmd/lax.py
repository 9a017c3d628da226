"""``xla_spmd.lax``: exact op wrappers, structured control flow and, for shard_map bodies,
collectives (as ``jax.lax``).

>>> import numpy as np
>>> import xla_spmd.lax as lax
>>> float(lax.fori_loop(0, 3, lambda i, x: x + 1.0, np.float32(0.0)))
3.0
"""

from xla_spmd.frontend import lax_linalg as linalg  # noqa: F401
from xla_spmd.frontend.constraints import with_sharding_constraint  # noqa: F401
from xla_spmd.frontend.control import cond, fori_loop, scan, switch, while_loop  # noqa: F401
from xla_spmd.frontend.lax import *  # noqa: F401,F403
from xla_spmd.frontend.lax import (  # noqa: F401
    dynamic_slice,
    dynamic_update_slice,
    reduce_window,
    select,
    top_k,
)
from xla_spmd.frontend.parallel import (  # noqa: F401
    all_gather,
    all_to_all,
    axis_index,
    axis_size,
    pmax,
    pmean,
    pmin,
    ppermute,
    psum,
    psum_scatter,
    pvary,
)
