"""The numpy-like API users import as ``import xla_spmd.numpy as xnp`` (see
`xla_spmd.frontend.numpy_api`).

>>> import numpy as np
>>> import xla_spmd.numpy as xnp
>>> np.asarray(xnp.maximum(np.arange(3), 1)).tolist()
[1, 1, 2]
"""

from xla_spmd.frontend.numpy_api import *  # noqa: F401,F403
from xla_spmd.frontend.numpy_api import __all__  # noqa: F401
