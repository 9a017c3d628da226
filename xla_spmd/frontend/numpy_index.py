"""Indexing: basic slices (static slice ops), integer-array indexing (gather), ``x.at[idx]``
updates (scatter or dynamic-update-slice), `take` and `take_along_axis`.

Advanced indices follow numpy: their broadcast shape replaces them in place when they are
adjacent, and goes first otherwise.

>>> import numpy as np
>>> import xla_spmd.numpy as xnp
>>> x = np.arange(12, dtype=np.float32).reshape(3, 4)
>>> np.asarray(xnp.asarray(x)[np.array([2, 0]), 1:3]).tolist()
[[9.0, 10.0], [1.0, 2.0]]
>>> np.asarray(xnp.asarray(x).at[1, 0].set(-1.0))[1, 0]
np.float32(-1.0)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xla_spmd.errors import XlaSpmdError
from xla_spmd.frontend import lax, numpy_reductions, numpy_shape
from xla_spmd.frontend import numpy_core as xnp
from xla_spmd.frontend.sharding_types import with_out_sharding
from xla_spmd.frontend.tracing import Array, ArrayLike, Tracer, Value, bind, reducer
from xla_spmd.ir import S32


def _is_array_index(i) -> bool:
    return isinstance(i, (Value, np.ndarray, list)) and not isinstance(i, bool)


def _host_constant(entry):
    """An array of the runtime used as an index (a ``ShardedArray`` captured by a jitted
    function, anything with ``__array__`` that is not traced) is a constant: its value."""
    if hasattr(entry, "__array__") and not isinstance(entry, (Value, np.ndarray, np.generic)):
        return np.asarray(entry)
    return entry


def _expand(index, ndim: int) -> list:
    """The index as a list with the ellipsis expanded (None entries kept)."""
    index = [_host_constant(i) for i in (index if isinstance(index, tuple) else [index])]
    consumed = sum(1 for i in index if not (i is None or i is Ellipsis))
    ellipses = [k for k, i in enumerate(index) if i is Ellipsis]
    if len(ellipses) > 1:
        raise XlaSpmdError("an index can only have one ellipsis ('...')")
    if ellipses:
        at = ellipses[0]
        index[at:at + 1] = [slice(None)] * (ndim - consumed)
    else:
        index += [slice(None)] * (ndim - consumed)
    if consumed > ndim:
        raise XlaSpmdError(f"too many indices ({consumed}) for an array of rank {ndim}")
    return index


def _clamped(i: int, n: int) -> int:
    """A static index read as JAX reads it: negative from the end, then clamped into the
    dim (``x[10]`` of 8 rows is ``x[7]``, ``x[-10]`` is ``x[0]``), as gathers clamp."""
    return min(max(i + n if i < 0 else i, 0), n - 1)


def _basic(x, index: list):
    """Apply static ints, slices and None; array indices stay as (position, array) pairs."""
    starts, limits, strides, reverse = [], [], [], []
    dim = 0
    for entry in index:
        if entry is None:
            continue
        n = x.shape[dim]
        if isinstance(entry, slice):
            start, stop, step = entry.indices(n)
            if step < 0:
                count = len(range(start, stop, step))
                first = start + (count - 1) * step if count else 0
                starts.append(first)
                limits.append(first + (count - 1) * -step + 1 if count else 0)
                strides.append(-step)
                reverse.append(dim)
            else:
                starts.append(start)
                limits.append(max(start, stop))
                strides.append(step)
        elif isinstance(entry, (int, np.integer)) and not isinstance(entry, bool):
            if n == 0:
                raise IndexError(f"index {int(entry)} is out of bounds for axis {dim} with "
                                 "size 0")
            i = _clamped(int(entry), n)
            starts.append(i)
            limits.append(i + 1)
            strides.append(1)
        elif _is_array_index(entry):
            starts.append(0)
            limits.append(n)
            strides.append(1)
            pass  # gathered after the static slicing
        else:
            raise XlaSpmdError(f"unsupported index {entry!r} (boolean masks have "
                               "data-dependent shapes; use xnp.where)")
        dim += 1
    if (starts, limits, strides) != ([0] * len(starts), list(x.shape), [1] * len(starts)):
        x = lax.slice(x, starts, limits, strides)
    if reverse:
        x = lax.rev(x, reverse)
    return x


def _is_mask(entry) -> bool:
    dtype = getattr(entry, "dtype", None)
    return dtype is not None and np.dtype(dtype) == np.bool_ and np.ndim(entry) > 0


def getitem(x: ArrayLike, index: Any) -> Value:
    x = xnp.asarray(x)
    entries = index if isinstance(index, tuple) else (index,)
    if any(_is_mask(e) for e in entries):  # a data-dependent shape: concrete values only
        if isinstance(x, Tracer) or any(isinstance(e, Tracer) for e in entries):
            raise XlaSpmdError("indexing with a boolean mask gives a data-dependent shape; "
                               "use xnp.where(mask, x, 0) or nonzero(mask, size=...)")
        concrete = tuple(np.asarray(e) if hasattr(e, "dtype") else e for e in entries)
        return Array(np.asarray(x)[concrete])
    index = _expand(index, x.ndim)
    sliced = _basic(x, index)
    # Positions (in `sliced`) of integer and array entries, and the final shape.
    dim, arrays, ints, new_axes = 0, [], [], []
    out_pos = 0
    for entry in index:
        if entry is None:
            new_axes.append(out_pos)
            out_pos += 1
            continue
        if _is_array_index(entry):
            arrays.append((dim, entry))
        elif not isinstance(entry, slice):
            ints.append(dim)
        else:
            out_pos += 1
        dim += 1
    if arrays:
        advanced = sorted([(d, a) for d, a in arrays] + [(d, np.int32(0)) for d in ints])
        out = _gather_advanced(sliced, advanced)
    else:
        out = sliced
        if ints:
            out = lax.reshape(out, [n for d, n in enumerate(out.shape) if d not in ints])
    if new_axes and not arrays:
        shape = list(out.shape)
        for a in new_axes:
            shape.insert(a, 1)
        out = lax.reshape(out, shape)
    elif new_axes:
        raise XlaSpmdError("indexing with both None and integer arrays is unsupported")
    return out


def _index_arrays(x, advanced):
    """Broadcast the advanced indices (negative ones wrapped) into one s32 index array of
    shape batch + (k,)."""
    arrays = []
    for d, a in advanced:
        a = xnp.asarray(np.asarray(a) if isinstance(a, list) else a)
        if a.aval.dtype.is_float or a.aval.dtype.is_pred:
            raise XlaSpmdError(f"array index must be integers, got {a.aval}")
        a = lax.convert(a, S32)
        n = x.shape[d]
        a = xnp.where(a < 0, a + n, a)
        arrays.append(a)
    batch = xnp.broadcast_shapes(*(a.shape for a in arrays))
    arrays = [xnp.broadcast_to(a, batch) for a in arrays]
    stacked = lax.concatenate([lax.reshape(a, batch + (1,)) for a in arrays], len(batch))
    return stacked, batch


def _layout(x, dims, batch):
    """Where the batch dims go in the result (numpy rule) and the offset dims."""
    adjacent = dims == list(range(dims[0], dims[0] + len(dims)))
    at = dims[0] if adjacent else 0
    rest = [d for d in range(x.ndim) if d not in dims]
    offset_dims = [i if i < at else i + len(batch) for i in range(len(rest))]
    return offset_dims, rest


def _gather_advanced(x, advanced):
    dims = [d for d, _ in advanced]
    indices, batch = _index_arrays(x, advanced)
    offset_dims, rest = _layout(x, dims, batch)
    slice_sizes = [1 if d in dims else x.shape[d] for d in range(x.ndim)]
    return bind("gather", x, indices, offset_dims=tuple(offset_dims),
                collapsed_slice_dims=tuple(dims), start_index_map=tuple(dims),
                index_vector_dim=len(batch), slice_sizes=tuple(slice_sizes))


def take(x: ArrayLike, indices: ArrayLike, axis: int | None = None) -> Value:
    x = xnp.asarray(x)
    if axis is None:
        x, axis = numpy_shape.ravel(x), 0
    dim: int = axis % x.ndim
    return getitem(x, (slice(None),) * dim + (xnp.asarray(indices),))


def take_along_axis(x: ArrayLike, indices: ArrayLike, axis: int) -> Value:
    """``x[..., indices, ...]`` matched elementwise along `axis` (a gather of all dims)."""
    x, indices = xnp.asarray(x), xnp.asarray(indices)
    axis %= x.ndim
    shape = xnp.broadcast_shapes(
        tuple(1 if d == axis else n for d, n in enumerate(x.shape)), indices.shape)
    shape = tuple(indices.shape[d] if d == axis else n for d, n in enumerate(shape))
    indices = lax.convert(indices, S32)
    indices = xnp.where(indices < 0, indices + x.shape[axis], indices)
    indices = xnp.broadcast_to(indices, shape)
    columns = [indices if d == axis else lax.iota(S32, shape, d) for d in range(x.ndim)]
    stacked = lax.concatenate([lax.reshape(c, shape + (1,)) for c in columns], len(shape))
    dims = tuple(range(x.ndim))
    return bind("gather", x, stacked, offset_dims=(), collapsed_slice_dims=dims,
                start_index_map=dims, index_vector_dim=len(shape),
                slice_sizes=(1,) * x.ndim)


# ---------------------------------------------------------------------------------------------
# x.at[index].set / add / max / min / mul


class IndexUpdateHelper:
    """``x.at[index]``: functional updates, as in JAX."""

    def __init__(self, x):
        self.x = x

    def __getitem__(self, index):
        return IndexUpdateRef(self.x, index)


class IndexUpdateRef:
    """``x.at[index]``; each method takes JAX's ``out_sharding=`` (the result's sharding
    type, where Explicit axes leave it ambiguous)."""

    def __init__(self, x, index):
        self.x, self.index = x, index

    def _run(self, compute, out_sharding, what: str):
        return with_out_sharding(compute, out_sharding, (self.x,), what)

    def set(self, values: ArrayLike, *, out_sharding: Any = None) -> Value:
        return self._run(lambda: _update(self.x, self.index, values, "set"), out_sharding,
                         "at[].set")

    def add(self, values: ArrayLike, *, out_sharding: Any = None) -> Value:
        return self._run(lambda: _update(self.x, self.index, values, "add"), out_sharding,
                         "at[].add")

    def multiply(self, values: ArrayLike, *, out_sharding: Any = None) -> Value:
        return self._run(lambda: _update(self.x, self.index, values, "mul"), out_sharding,
                         "at[].multiply")

    def max(self, values: ArrayLike, *, out_sharding: Any = None) -> Value:
        return self._run(lambda: _update(self.x, self.index, values, "max"), out_sharding,
                         "at[].max")

    def min(self, values: ArrayLike, *, out_sharding: Any = None) -> Value:
        return self._run(lambda: _update(self.x, self.index, values, "min"), out_sharding,
                         "at[].min")

    def get(self, *, out_sharding: Any = None) -> Value:
        return self._run(lambda: getitem(self.x, self.index), out_sharding, "at[].get")


def _update(x, index, values, kind: str):
    x = xnp.asarray(x)
    index = _expand(index, x.ndim)
    if any(i is None for i in index):
        raise XlaSpmdError("x.at[...] with None in the index is unsupported")
    values = xnp._to(values, x.aval.dtype)
    if not any(_is_array_index(i) for i in index):
        return _update_basic(x, index, values, kind)
    advanced = []
    for d, entry in enumerate(index):
        if isinstance(entry, slice):
            if entry.indices(x.shape[d]) != (0, x.shape[d], 1):
                raise XlaSpmdError("x.at[...] mixing integer arrays with partial slices is "
                                   "unsupported; index the full dim with ':'")
        else:
            advanced.append((d, entry))
    dims = [d for d, _ in advanced]
    indices, batch = _index_arrays(x, advanced)
    offset_dims, rest = _layout(x, dims, batch)
    update_shape = [0] * (len(batch) + len(rest))
    for i, d in zip(offset_dims, rest):
        update_shape[i] = x.shape[d]
    batch_positions = [i for i in range(len(update_shape)) if i not in offset_dims]
    for i, n in zip(batch_positions, batch):
        update_shape[i] = n
    updates = xnp.broadcast_to(values, tuple(update_shape))
    return bind("scatter", x, indices, updates, update_window_dims=tuple(offset_dims),
                inserted_window_dims=tuple(dims), scatter_dims_to_operand_dims=tuple(dims),
                index_vector_dim=len(batch), to_apply=reducer(kind, x.aval.dtype))


def _update_basic(x, index, values, kind: str):
    """Static ints and unit-stride slices: read the region, combine, write it back. An
    out-of-range static int drops the update, as JAX's scatters drop them."""
    if any(isinstance(entry, (int, np.integer)) and not isinstance(entry, bool)
           and not -n <= int(entry) < n for entry, n in zip(index, x.shape)):
        return x
    starts, sizes, region_shape = [], [], []
    for d, entry in enumerate(index):
        n = x.shape[d]
        if isinstance(entry, slice):
            start, stop, step = entry.indices(n)
            if step != 1:
                raise XlaSpmdError("x.at[...] with strided slices is unsupported")
            starts.append(start)
            sizes.append(max(stop - start, 0))
            region_shape.append(max(stop - start, 0))
        elif isinstance(entry, Value):  # a traced scalar index
            starts.append(entry)
            sizes.append(1)
        else:
            starts.append(int(entry) % n)
            sizes.append(1)
    update = lax.reshape(xnp.broadcast_to(values, tuple(region_shape)), sizes)
    if kind != "set":
        current = lax.dynamic_slice(x, starts, sizes)
        update = {"add": xnp.add, "mul": xnp.multiply, "max": xnp.maximum,
                  "min": xnp.minimum}[kind](current, update)
    return lax.dynamic_update_slice(x, update, starts)


# ---------------------------------------------------------------------------------------------
# Data-dependent sizes made static: nonzero, argwhere and unique take `size` (as in JAX);
# without it they need a concrete array.


def _concrete(a, what: str) -> np.ndarray:
    if not isinstance(a, Array) and not hasattr(a, "addressable_shards"):
        raise XlaSpmdError(f"{what} of a traced array has a data-dependent shape; pass a "
                           "static size= (and fill_value=), as in JAX")
    return np.asarray(a)


def _compact(mask, values, size: int, fill):
    """The entries of flat `values` where flat `mask` holds, in order, in an array of `size`
    (extra ones dropped, missing ones `fill`)."""
    count = mask.shape[0]
    rank = numpy_reductions.cumsum(xnp.astype(mask, np.int32)) - 1
    target = xnp.where(mask, rank, count + size)  # out of range: the update is dropped
    filled = xnp.full((size,), fill, values.dtype)
    return _update(filled, (target,), values, "set")


def nonzero(a: ArrayLike, *, size: int | None = None, fill_value: ArrayLike = None
            ) -> tuple[Value, ...]:
    """The indices of the non-zero entries, one array per dim; with a static `size`, padded
    with `fill_value` (default 0) or truncated."""
    a = xnp.asarray(a)
    if size is None:
        return tuple(Array(i.astype(np.int32)) for i in np.nonzero(_concrete(a, "nonzero")))
    flat = numpy_shape.reshape(xnp.not_equal(a, lax.zeros_like(a)), (-1,))
    positions = _compact(flat, xnp.arange(flat.shape[0], dtype=np.int32), size, -1)
    fills = fill_value if isinstance(fill_value, tuple) else (fill_value or 0,) * a.ndim
    out, stride = [], 1
    strides = []
    for n in reversed(a.shape):
        strides.append(stride)
        stride *= n
    for n, step, fill in zip(a.shape, reversed(strides), fills):
        coordinate = xnp.remainder(xnp.floor_divide(positions, step), n)
        out.append(xnp.where(positions < 0, fill, coordinate))
    return tuple(out)


def argwhere(a: ArrayLike, *, size: int | None = None, fill_value: ArrayLike = None) -> Value:
    """The indices of the non-zero entries as rows, ``[count, ndim]`` (see `nonzero`)."""
    a = xnp.asarray(a)
    if size is None:
        return Array(np.argwhere(_concrete(a, "argwhere")).astype(np.int32))
    return numpy_shape.stack(nonzero(a, size=size, fill_value=fill_value), axis=1)


def unique(x: ArrayLike, *, size: int | None = None, fill_value: ArrayLike = None) -> Value:
    """The sorted distinct values of `x` (flattened); with a static `size`, padded with
    `fill_value` (default: the smallest value) or truncated."""
    x = xnp.asarray(x)
    if size is None:
        return Array(np.unique(_concrete(x, "unique")))
    ordered = numpy_shape.sort(numpy_shape.reshape(x, (-1,)))
    first = lax.full((1,), True, np.bool_)
    distinct = numpy_shape.concatenate([first, xnp.not_equal(ordered[1:], ordered[:-1])])
    fill = ordered[0] if fill_value is None else fill_value
    if isinstance(fill, Value) or not np.isscalar(fill):
        out = _compact(distinct, ordered, size, 0)
        count = numpy_reductions.sum(xnp.astype(distinct, np.int32))
        return xnp.where(xnp.arange(size) < count, out, fill)
    return _compact(distinct, ordered, size, fill)


def searchsorted(a: ArrayLike, v: ArrayLike, side: str = "left", sorter: ArrayLike = None) -> Value:
    """Where the values `v` would go in the sorted 1-D `a` (``side="left"``: before equal
    entries; ``"right"``: after them), by counting the entries below each value."""
    a, v = xnp.asarray(a), xnp.asarray(v)
    if sorter is not None:
        a = take(a, sorter)
    if a.ndim != 1:
        raise XlaSpmdError(f"searchsorted: a must be 1-D, got shape {a.shape}")
    if side not in ("left", "right"):
        raise XlaSpmdError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    expanded = numpy_shape.expand_dims(v, -1)
    below = xnp.less(a, expanded) if side == "left" else xnp.less_equal(a, expanded)
    return numpy_reductions.sum(xnp.astype(below, np.int32), axis=-1)


def where(condition: ArrayLike, x: ArrayLike = None, y: ArrayLike = None, *,
          size: int | None = None, fill_value: ArrayLike = None
          ) -> Value | tuple[Value, ...]:
    """`condition ? x : y` elementwise, broadcasting all three; ``where(condition)`` is
    ``nonzero(condition, size=..., fill_value=...)``."""
    if x is None and y is None:
        return nonzero(condition, size=size, fill_value=fill_value)
    if x is None or y is None:
        raise XlaSpmdError("where: give both x and y, or neither (for nonzero)")
    return xnp.where(condition, x, y)
