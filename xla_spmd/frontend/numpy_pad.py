"""`pad` of `xla_spmd.numpy`, with numpy's modes (constant, edge, reflect, symmetric, wrap,
linear_ramp, maximum, minimum, mean, median, empty).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xla_spmd.errors import XlaSpmdError
from xla_spmd.frontend import lax, numpy_index, numpy_reductions, numpy_shape
from xla_spmd.frontend import numpy_core as xnp
from xla_spmd.frontend.tracing import ArrayLike, Value


def _pairs(value, ndim: int, what: str) -> list[tuple]:
    """numpy's per-axis (before, after) pairs from a scalar, a pair or one pair per axis."""
    array = np.asarray(value, dtype=object)
    if array.ndim == 0:
        return [(value, value)] * ndim
    if array.ndim == 1 and len(array) == 2 and ndim != 2 or array.shape == (1, 2):
        return [tuple(array.reshape(2))] * ndim
    if array.ndim == 1 and len(array) == 1:
        return [(array[0], array[0])] * ndim
    if array.shape == (ndim, 2):
        return [tuple(row) for row in array]
    if array.shape == (2,):  # ndim == 2: one pair for both axes
        return [tuple(array)] * ndim
    raise XlaSpmdError(f"pad: {what} {value!r} does not give (before, after) for {ndim} axes")


def _pad_index(mode: str, n: int, before: int, after: int) -> np.ndarray:
    """For the index-mapping modes, where each padded position reads from."""
    j = np.arange(-before, n + after)
    if mode == "edge":
        return np.clip(j, 0, n - 1)
    if mode == "wrap":
        return j % n
    if mode == "symmetric":
        m = j % (2 * n)
        return np.where(m < n, m, 2 * n - 1 - m)
    if n == 1:  # reflect of one element repeats it
        return np.zeros_like(j)
    m = j % (2 * n - 2)
    return np.where(m < n, m, 2 * n - 2 - m)


def _pad_axis(x, axis: int, before: int, after: int, mode: str, options: dict):
    n = x.shape[axis]
    if before == 0 and after == 0:
        return x
    if mode in ("edge", "wrap", "reflect", "symmetric"):
        if n == 0:
            raise XlaSpmdError(f"pad: mode {mode!r} needs a non-empty axis {axis}")
        index = _pad_index(mode, n, before, after).astype(np.int32)
        return numpy_index.take(x, index, axis=axis)
    if mode in ("maximum", "minimum", "mean", "median"):
        stat = {"maximum": numpy_reductions.max, "minimum": numpy_reductions.min,
                "mean": numpy_reductions.mean,
                "median": _median}[mode]
        value = stat(x, axis, keepdims=True)
        if value.dtype != x.dtype:  # integers: the rounded mean, as numpy
            value = xnp.astype(xnp.round(value), x.dtype)
        shape = list(x.shape)
        parts = []
        for count in (before, None, after):
            if count is None:
                parts.append(x)
            elif count:
                shape[axis] = count
                parts.append(xnp.broadcast_to(value, tuple(shape)))
        return numpy_shape.concatenate(parts, axis)
    if mode == "linear_ramp":
        low, high = options["end_values"][axis]
        edges = [lax.slice_in_dim(x, 0, 1, 1, axis), lax.slice_in_dim(x, n - 1, n, 1, axis)]
        parts = []
        for count, end, edge, rising in ((before, low, edges[0], True),
                                         (after, high, edges[1], False)):
            if not count:
                parts.append(None)
                continue
            # the fraction of the edge value at each padded position, from the outside in
            steps = np.arange(count) / count if rising else \
                (count - 1 - np.arange(count)) / count
            steps = steps.astype(np.float32 if x.dtype != np.float64 else np.float64)
            shape = [1] * x.ndim
            shape[axis] = count
            ramp = numpy_shape.reshape(steps, shape)
            edge_f = xnp.astype(edge, ramp.dtype)
            parts.append(xnp.astype(end + (edge_f - end) * ramp, x.dtype))
        return numpy_shape.concatenate([p for p in (parts[0], x, parts[1]) if p is not None], axis)
    raise XlaSpmdError(f"pad: unknown mode {mode!r}; expected constant, edge, wrap, reflect, "
                       "symmetric, maximum, minimum, mean, median, linear_ramp or empty")


def _median(x, axis, keepdims=True):
    ordered = numpy_shape.sort(x, axis)
    n = x.shape[axis]
    low = lax.slice_in_dim(ordered, (n - 1) // 2, (n - 1) // 2 + 1, 1, axis)
    high = lax.slice_in_dim(ordered, n // 2, n // 2 + 1, 1, axis)
    return xnp.true_divide(xnp.add(low, high), 2)


def pad(x: ArrayLike, pad_width: Any, mode: str = "constant", constant_values: ArrayLike = 0,
        end_values: ArrayLike = 0) -> Value:
    """numpy's pad, every mode: constant (per-axis values too), edge, wrap, reflect,
    symmetric, maximum, minimum, mean, median (over the whole axis), linear_ramp and empty
    (zeros)."""
    x = xnp.asarray(x)
    widths = [(int(lo), int(hi)) for lo, hi in _pairs(pad_width, x.ndim, "pad_width")]
    if any(lo < 0 or hi < 0 for lo, hi in widths):
        raise XlaSpmdError(f"pad: negative pad_width {pad_width!r}")
    if mode == "empty":
        mode, constant_values = "constant", 0
    if mode == "constant":
        values = _pairs(constant_values, x.ndim, "constant_values")
        if len({v for pair in values for v in pair}) == 1:
            value = xnp._to(values[0][0], x.aval.dtype)
            return lax.pad(x, value, [(lo, hi, 0) for lo, hi in widths])
        for axis, ((lo, hi), (v_lo, v_hi)) in enumerate(zip(widths, values)):
            config = [(0, 0, 0)] * x.ndim
            config[axis] = (lo, 0, 0)
            x = lax.pad(x, xnp._to(v_lo, x.aval.dtype), config)
            config[axis] = (0, hi, 0)
            x = lax.pad(x, xnp._to(v_hi, x.aval.dtype), config)
        return x
    options = {"end_values": _pairs(end_values, x.ndim, "end_values")}
    for axis, (lo, hi) in enumerate(widths):
        x = _pad_axis(x, axis, lo, hi, mode, options)
    return x
