"""`xla_spmd.numpy`: numpy-like functions over traced and concrete arrays, the namespace users
import as ``import xla_spmd.numpy as xnp`` (assembled here from `xla_spmd.frontend.numpy_*`).

Broadcasting follows numpy; dtypes follow JAX (`xla_spmd.frontend.dtypes`): 64-bit types are
off unless ``xs.config.update("enable_x64", True)`` (float64 inputs become f32), Python scalars
are weakly typed (``x * 2.0`` keeps x's f32), and types promote on JAX's lattice.

>>> import numpy as np
>>> import xla_spmd.numpy as xnp
>>> x = np.arange(6, dtype=np.float32).reshape(2, 3)
>>> np.asarray(xnp.sum(x * 2.0, axis=1)).tolist()
[6.0, 24.0]
"""

# ruff: noqa: F401 (the namespace re-exports)
from xla_spmd.frontend import numpy_core as _core
from xla_spmd.frontend import numpy_fft as fft
from xla_spmd.frontend import numpy_linalg as linalg
from xla_spmd.frontend.numpy_core import *  # noqa: F403
from xla_spmd.frontend.numpy_index import (
    argwhere,
    getitem,
    nonzero,
    searchsorted,
    take,
    take_along_axis,
    unique,
    where,
)
from xla_spmd.frontend.numpy_math import (
    allclose,
    arccos,
    arccosh,
    arcsin,
    arcsinh,
    arctan,
    arctanh,
    cosh,
    erfinv,
    isclose,
    isinf,
    isnan,
    log10,
    nan_to_num,
    nextafter,
    sinh,
)
from xla_spmd.frontend.numpy_pad import pad
from xla_spmd.frontend.numpy_reductions import (
    all,
    amax,
    amin,
    any,
    argmax,
    argmin,
    count_nonzero,
    cumprod,
    cumsum,
    max,
    mean,
    min,
    prod,
    std,
    sum,
    var,
)
from xla_spmd.frontend.numpy_shape import (
    argsort,
    array_split,
    concatenate,
    einsum,
    expand_dims,
    flip,
    moveaxis,
    outer,
    ravel,
    repeat,
    reshape,
    roll,
    sort,
    split,
    squeeze,
    stack,
    swapaxes,
    tile,
    transpose,
    vdot,
)

__all__ = [*_core.__all__, "linalg", *(
    name for name in dir() if not name.startswith("_") and name not in _core.__all__
    and name != "linalg")]
