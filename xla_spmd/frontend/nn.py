"""`xla_spmd.nn`: activations, normalizations and losses over the numpy-like API.

>>> import numpy as np
>>> np.asarray(relu(np.array([-1.0, 2.0], np.float32))).tolist()
[0.0, 2.0]
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xla_spmd.frontend import lax, numpy_reductions, numpy_shape
from xla_spmd.frontend import numpy_core as xnp
from xla_spmd.frontend.dtypes import default_float
from xla_spmd.frontend.tracing import ArrayLike, DTypeLike, Value
from xla_spmd.ir import S32


def relu(x: ArrayLike) -> Value:
    return xnp.maximum(x, 0.0)


def sigmoid(x: ArrayLike) -> Value:
    return xnp.sigmoid(x)


def silu(x: ArrayLike) -> Value:
    return x * xnp.sigmoid(x)


swish = silu


def relu6(x: ArrayLike) -> Value:
    return xnp.minimum(xnp.maximum(x, 0.0), 6.0)


def softplus(x: ArrayLike) -> Value:
    """``log(1 + exp(x))``, computed as ``logaddexp(x, 0)`` (no overflow)."""
    x = xnp.asarray(x)
    return xnp.maximum(x, 0.0) + xnp.log1p(xnp.exp(-xnp.abs(x)))


def log_sigmoid(x: ArrayLike) -> Value:
    return -softplus(-xnp.asarray(x))


def leaky_relu(x: ArrayLike, negative_slope: float = 1e-2) -> Value:
    x = xnp.asarray(x)
    return xnp.where(x >= 0, x, negative_slope * x)


def elu(x: ArrayLike, alpha: float = 1.0) -> Value:
    x = xnp.asarray(x)
    safe = xnp.where(x > 0, 0.0, x)  # no exp overflow (nor inf * 0 in the gradient)
    return xnp.where(x > 0, x, alpha * xnp.expm1(safe))


def celu(x: ArrayLike, alpha: float = 1.0) -> Value:
    x = xnp.asarray(x)
    return xnp.maximum(x, 0.0) + alpha * xnp.expm1(xnp.minimum(x, 0.0) / alpha)


def selu(x: ArrayLike) -> Value:
    alpha, scale = 1.6732632423543772, 1.0507009873554805
    return scale * elu(x, alpha)


def hard_tanh(x: ArrayLike) -> Value:
    return xnp.clip(x, -1.0, 1.0)


def soft_sign(x: ArrayLike) -> Value:
    x = xnp.asarray(x)
    return x / (xnp.abs(x) + 1.0)


def standardize(x: ArrayLike, axis: int | Sequence[int] = -1, mean: ArrayLike = None,
                variance: ArrayLike = None, epsilon: float = 1e-5) -> Value:
    """`x` with zero mean and unit variance over `axis`, as ``jax.nn.standardize``."""
    x = xnp.asarray(x)
    if mean is None:
        mean = numpy_reductions.mean(x, axis, keepdims=True)
    if variance is None:
        variance = numpy_reductions.mean(xnp.square(x), axis, keepdims=True) - xnp.square(mean)
    return (x - mean) * xnp.rsqrt(variance + epsilon)


def dot_product_attention(query: ArrayLike, key: ArrayLike, value: ArrayLike,
                          bias: ArrayLike = None, mask: ArrayLike = None, *,
                          scale: float | None = None, is_causal: bool = False) -> Value:
    """Scaled dot-product attention over ``[batch, seq, heads, head_dim]`` arrays (the
    batch dim optional), as ``jax.nn.dot_product_attention``: ``softmax(q k^T * scale + bias,
    masked) v`` with scale ``1/sqrt(head_dim)`` by default; `key`/`value` may have fewer
    heads than `query` (grouped-query attention)."""
    query, key, value = xnp.asarray(query), xnp.asarray(key), xnp.asarray(value)
    batched = query.ndim == 4
    if not batched:
        query, key, value = (numpy_shape.expand_dims(t, 0) for t in (query, key, value))
    heads, kv_heads = query.shape[2], key.shape[2]
    if heads != kv_heads:
        key = numpy_shape.repeat(key, heads // kv_heads, axis=2)
        value = numpy_shape.repeat(value, heads // kv_heads, axis=2)
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    logits = numpy_shape.einsum("bqhd,bkhd->bhqk", query, key) * scale
    if bias is not None:
        logits = logits + bias
    keep = None
    if mask is not None:
        keep = xnp.astype(mask, xnp.bool_)
    if is_causal:
        q_len, k_len = logits.shape[-2], logits.shape[-1]
        causal = xnp.tri_mask(q_len, k_len, 0, True)
        keep = causal if keep is None else xnp.logical_and(keep, causal)
    if keep is not None:
        lowest = float(xnp.finfo(logits.dtype).min)
        logits = xnp.where(keep, logits, lowest)
    weights = softmax(logits, axis=-1)
    out = numpy_shape.einsum("bhqk,bkhd->bqhd", weights, value)
    return out if batched else numpy_shape.squeeze(out, 0)


def gelu(x: ArrayLike, approximate: bool = True) -> Value:
    """GELU; the tanh approximation by default, as ``jax.nn.gelu``."""
    x = xnp.asarray(x)
    if approximate:
        inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * (x * x * x))
        return 0.5 * x * (1.0 + xnp.tanh(inner))
    return 0.5 * x * (1.0 + xnp.erf(x / math.sqrt(2.0)))


def logsumexp(x: ArrayLike, axis: int | Sequence[int] | None = None, keepdims: bool = False
              ) -> Value:
    """log(sum(exp(x))) over `axis` (default: all of `x`, as ``jax.nn.logsumexp``)."""
    x = xnp.asarray(x)
    # As JAX: the shift cancels, so it is a constant to autodiff (no max-tie bookkeeping).
    shift = lax.stop_gradient(numpy_reductions.max(x, axis, keepdims=True))
    out = xnp.log(numpy_reductions.sum(xnp.exp(x - shift), axis, keepdims=True)) + shift
    if keepdims:
        return out
    return numpy_shape.squeeze(out, tuple(range(x.ndim)) if axis is None else axis)


def softmax(x: ArrayLike, axis: int | Sequence[int] = -1) -> Value:
    x = xnp.asarray(x)
    unnormalized = xnp.exp(x - lax.stop_gradient(numpy_reductions.max(x, axis, keepdims=True)))
    return unnormalized / numpy_reductions.sum(unnormalized, axis, keepdims=True)


def log_softmax(x: ArrayLike, axis: int | Sequence[int] = -1) -> Value:
    x = xnp.asarray(x)
    shifted = x - lax.stop_gradient(numpy_reductions.max(x, axis, keepdims=True))
    return shifted - xnp.log(numpy_reductions.sum(xnp.exp(shifted), axis, keepdims=True))


def layer_norm(x: ArrayLike, scale: ArrayLike = None, bias: ArrayLike = None,
               axis: int | Sequence[int] = -1, epsilon: float = 1e-5) -> Value:
    """Normalize over `axis` to zero mean and unit variance, then scale and shift."""
    mean = numpy_reductions.mean(x, axis, keepdims=True)
    centered = x - mean
    variance = numpy_reductions.mean(centered * centered, axis, keepdims=True)
    out = centered * xnp.rsqrt(variance + epsilon)
    if scale is not None:
        out = out * scale
    if bias is not None:
        out = out + bias
    return out


def rms_norm(x: ArrayLike, scale: ArrayLike = None, axis: int | Sequence[int] = -1,
             epsilon: float = 1e-6) -> Value:
    out = x * xnp.rsqrt(numpy_reductions.mean(x * x, axis, keepdims=True) + epsilon)
    return out * scale if scale is not None else out


def one_hot(labels: ArrayLike, num_classes: int, dtype: DTypeLike = None, axis: int = -1) -> Value:
    """`labels` as one-hot vectors of `num_classes` (the default float type)."""
    labels = xnp.asarray(labels)
    classes = lax.iota(S32, labels.shape + (num_classes,), labels.ndim)
    out = xnp.astype(numpy_shape.expand_dims(labels, -1) == classes, dtype or default_float())
    return out if axis in (-1, labels.ndim) else numpy_shape.moveaxis(out, -1, axis)


def softmax_cross_entropy(logits: ArrayLike, labels: ArrayLike, axis: int | Sequence[int] = -1
                          ) -> Value:
    """Cross-entropy of `logits` against probability (e.g. one-hot) `labels`, per example."""
    return -numpy_reductions.sum(labels * log_softmax(logits, axis), axis)


def softmax_cross_entropy_with_integer_labels(logits: ArrayLike, labels: ArrayLike) -> Value:
    """Cross-entropy of `logits` [..., classes] against integer class `labels` [...]."""
    logits = xnp.asarray(logits)
    return softmax_cross_entropy(logits, one_hot(labels, logits.shape[-1], logits.dtype))
