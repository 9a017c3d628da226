"""`xla_spmd.nn`: activations, normalizations and losses over the numpy-like API.

>>> import numpy as np
>>> np.asarray(relu(np.array([-1.0, 2.0], np.float32))).tolist()
[0.0, 2.0]
"""

from __future__ import annotations

import math

from xla_spmd.frontend import lax
from xla_spmd.frontend import numpy_api as xnp
from xla_spmd.ir import S32


def relu(x):
    return xnp.maximum(x, 0.0)


def sigmoid(x):
    return xnp.sigmoid(x)


def silu(x):
    return x * xnp.sigmoid(x)


swish = silu


def gelu(x, approximate: bool = True):
    """GELU; the tanh approximation by default, as ``jax.nn.gelu``."""
    x = xnp.asarray(x)
    if approximate:
        inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * (x * x * x))
        return 0.5 * x * (1.0 + xnp.tanh(inner))
    return 0.5 * x * (1.0 + xnp.erf(x / math.sqrt(2.0)))


def logsumexp(x, axis=None, keepdims: bool = False):
    """log(sum(exp(x))) over `axis` (default: all of `x`, as ``jax.nn.logsumexp``)."""
    x = xnp.asarray(x)
    # As JAX: the shift cancels, so it is a constant to autodiff (no max-tie bookkeeping).
    shift = lax.stop_gradient(xnp.max(x, axis, keepdims=True))
    out = xnp.log(xnp.sum(xnp.exp(x - shift), axis, keepdims=True)) + shift
    if keepdims:
        return out
    return xnp.squeeze(out, tuple(range(x.ndim)) if axis is None else axis)


def softmax(x, axis=-1):
    x = xnp.asarray(x)
    unnormalized = xnp.exp(x - lax.stop_gradient(xnp.max(x, axis, keepdims=True)))
    return unnormalized / xnp.sum(unnormalized, axis, keepdims=True)


def log_softmax(x, axis=-1):
    x = xnp.asarray(x)
    shifted = x - lax.stop_gradient(xnp.max(x, axis, keepdims=True))
    return shifted - xnp.log(xnp.sum(xnp.exp(shifted), axis, keepdims=True))


def layer_norm(x, scale=None, bias=None, axis=-1, epsilon: float = 1e-5):
    """Normalize over `axis` to zero mean and unit variance, then scale and shift."""
    mean = xnp.mean(x, axis, keepdims=True)
    centered = x - mean
    variance = xnp.mean(centered * centered, axis, keepdims=True)
    out = centered * xnp.rsqrt(variance + epsilon)
    if scale is not None:
        out = out * scale
    if bias is not None:
        out = out + bias
    return out


def rms_norm(x, scale=None, axis=-1, epsilon: float = 1e-6):
    out = x * xnp.rsqrt(xnp.mean(x * x, axis, keepdims=True) + epsilon)
    return out * scale if scale is not None else out


def one_hot(labels, num_classes: int, dtype=xnp.float32):
    labels = xnp.asarray(labels)
    classes = lax.iota(S32, labels.shape + (num_classes,), labels.ndim)
    return xnp.astype(xnp.expand_dims(labels, -1) == classes, dtype)


def softmax_cross_entropy(logits, labels, axis=-1):
    """Cross-entropy of `logits` against probability (e.g. one-hot) `labels`, per example."""
    return -xnp.sum(labels * log_softmax(logits, axis), axis)


def softmax_cross_entropy_with_integer_labels(logits, labels):
    """Cross-entropy of `logits` [..., classes] against integer class `labels` [...]."""
    logits = xnp.asarray(logits)
    return softmax_cross_entropy(logits, one_hot(labels, logits.shape[-1], logits.dtype))
