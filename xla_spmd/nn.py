"""``xla_spmd.nn``: activations, normalizations and losses (see `xla_spmd.frontend.nn`).

>>> import numpy as np
>>> import xla_spmd.nn as nn
>>> round(float(nn.logsumexp(np.zeros(4, np.float32))), 4)
1.3863
"""

from xla_spmd.frontend.nn import *  # noqa: F401,F403
from xla_spmd.frontend.nn import (  # noqa: F401
    celu,
    dot_product_attention,
    elu,
    gelu,
    hard_tanh,
    layer_norm,
    leaky_relu,
    log_sigmoid,
    log_softmax,
    logsumexp,
    one_hot,
    relu,
    relu6,
    rms_norm,
    selu,
    sigmoid,
    silu,
    soft_sign,
    softmax,
    softmax_cross_entropy,
    softmax_cross_entropy_with_integer_labels,
    softplus,
    standardize,
    swish,
)
