"""Shape functions of `xla_spmd.numpy`: reshape, transpose, concatenate, stack, split, pad,
sort, einsum, ...

>>> import numpy as np
>>> import xla_spmd.numpy as xnp
>>> xnp.reshape(np.zeros((2, 3)), (-1,)).shape
(6,)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xla_spmd.errors import XlaSpmdError
from xla_spmd.frontend import lax, numpy_reductions
from xla_spmd.frontend import numpy_core as xnp
from xla_spmd.frontend.sharding_types import takes_out_sharding
from xla_spmd.frontend.tracing import ArrayLike, Value
from xla_spmd.ir import S32


def _axis(axis: int, ndim: int) -> int:
    if not -ndim <= axis < max(ndim, 1):
        raise XlaSpmdError(f"axis {axis} is out of bounds for an array of rank {ndim}")
    return axis % ndim if ndim else 0


@takes_out_sharding
def reshape(x: ArrayLike, shape: Sequence[int]) -> Value:
    x = xnp.asarray(x)
    shape = (shape,) if isinstance(shape, int) else tuple(int(d) for d in shape)
    if shape.count(-1) > 1:
        raise XlaSpmdError(f"reshape: at most one -1 in {shape}")
    if -1 in shape:
        known = math.prod(d for d in shape if d != -1)
        if known == 0 or x.size % known:
            raise XlaSpmdError(f"cannot reshape {x.shape} into {shape}")
        shape = tuple(x.size // known if d == -1 else d for d in shape)
    if math.prod(shape) != x.size:
        raise XlaSpmdError(f"cannot reshape array of shape {x.shape} into shape {shape}")
    return lax.reshape(x, shape)


def ravel(x: ArrayLike) -> Value:
    return reshape(x, (-1,))


def transpose(x: ArrayLike, axes: Sequence[int] | None = None) -> Value:
    x = xnp.asarray(x)
    axes = tuple(reversed(range(x.ndim))) if axes is None else tuple(
        _axis(a, x.ndim) for a in axes)
    return lax.transpose(x, axes)


def swapaxes(x: ArrayLike, axis1: int, axis2: int) -> Value:
    x = xnp.asarray(x)
    perm = list(range(x.ndim))
    a, b = _axis(axis1, x.ndim), _axis(axis2, x.ndim)
    perm[a], perm[b] = perm[b], perm[a]
    return lax.transpose(x, perm)


def moveaxis(x: ArrayLike, source: int | Sequence[int], destination: int | Sequence[int]) -> Value:
    x = xnp.asarray(x)
    source = [source] if isinstance(source, int) else list(source)
    destination = [destination] if isinstance(destination, int) else list(destination)
    source = [_axis(a, x.ndim) for a in source]
    destination = [_axis(a, x.ndim) for a in destination]
    order = [a for a in range(x.ndim) if a not in source]
    for dest, src in sorted(zip(destination, source)):
        order.insert(dest, src)
    return lax.transpose(x, order)


def expand_dims(x: ArrayLike, axis: int | Sequence[int]) -> Value:
    x = xnp.asarray(x)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    ndim = x.ndim + len(axes)
    axes = sorted(_axis(a, ndim) for a in axes)
    shape = list(x.shape)
    for a in axes:
        shape.insert(a, 1)
    return lax.reshape(x, shape)


def squeeze(x: ArrayLike, axis: int | Sequence[int] | None = None) -> Value:
    x = xnp.asarray(x)
    if axis is None:
        axes = [i for i, n in enumerate(x.shape) if n == 1]
    else:
        axes = [_axis(a, x.ndim) for a in ((axis,) if isinstance(axis, int) else axis)]
        for a in axes:
            if x.shape[a] != 1:
                raise XlaSpmdError(f"cannot squeeze axis {a} of size {x.shape[a]}")
    return lax.reshape(x, [n for i, n in enumerate(x.shape) if i not in axes])


def concatenate(arrays: Sequence, axis: int | None = 0) -> Value:
    """Join `arrays` along `axis` (None: flattened first, as numpy)."""
    arrays = xnp._promote_dtype(*arrays)
    if axis is None:
        arrays, axis = [ravel(a) for a in arrays], 0
    axis = _axis(axis, arrays[0].ndim)
    return lax.concatenate(arrays, axis)


def roll(x: ArrayLike, shift: int | Sequence[int], axis: int | Sequence[int] | None = None
         ) -> Value:
    """Shift elements along `axis` (None: of the flattened array), wrapping around, as
    numpy; `shift` and `axis` may be tuples."""
    x = xnp.asarray(x)
    if axis is None:
        return reshape(roll(ravel(x), shift, 0), x.shape)
    shifts = (shift,) if isinstance(shift, int) else tuple(shift)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    if len(shifts) == 1:
        shifts = shifts * len(axes)
    if len(axes) == 1:
        axes = axes * len(shifts)
    if len(shifts) != len(axes):
        raise XlaSpmdError(f"roll: {len(shifts)} shifts for {len(axes)} axes")
    for s, a in zip(shifts, axes):
        a = _axis(a, x.ndim)
        n = x.shape[a]
        s = int(s) % n if n else 0
        if s:
            parts = split(x, [n - s], a)
            x = lax.concatenate([parts[1], parts[0]], a)
    return x


def stack(arrays: Sequence, axis: int = 0) -> Value:
    arrays = [xnp.asarray(a) for a in arrays]
    axis = _axis(axis, arrays[0].ndim + 1)
    return concatenate([expand_dims(a, axis) for a in arrays], axis)


def split(x: ArrayLike, indices_or_sections: int | Sequence[int], axis: int = 0) -> list[Value]:
    x = xnp.asarray(x)
    axis = _axis(axis, x.ndim)
    n = x.shape[axis]
    if isinstance(indices_or_sections, int):
        if n % indices_or_sections:
            raise XlaSpmdError(f"array of size {n} along axis {axis} does not split into "
                               f"{indices_or_sections} equal sections")
        step = n // indices_or_sections
        bounds = list(range(0, n + 1, step))
    else:
        bounds = [0] + [int(i) for i in indices_or_sections] + [n]
    return [lax.slice_in_dim(x, lo, hi, 1, axis) for lo, hi in zip(bounds[:-1], bounds[1:])]


def array_split(x: ArrayLike, indices_or_sections: int | Sequence[int], axis: int = 0
                ) -> list[Value]:
    """As `split`, but `indices_or_sections` sections need not divide the dim: the first
    ``n % sections`` pieces are one longer (numpy's rule)."""
    if not isinstance(indices_or_sections, int):
        return split(x, indices_or_sections, axis)
    x = xnp.asarray(x)
    n = x.shape[_axis(axis, x.ndim)]
    size, extra = divmod(n, indices_or_sections)
    bounds = [k * size + min(k, extra) for k in range(1, indices_or_sections)]
    return split(x, bounds, axis)


def flip(x: ArrayLike, axis: int | Sequence[int] | None = None) -> Value:
    x = xnp.asarray(x)
    axes = range(x.ndim) if axis is None else (
        [axis] if isinstance(axis, int) else axis)
    return lax.rev(x, [_axis(a, x.ndim) for a in axes])


def repeat(x: ArrayLike, repeats: int, axis: int | None = None) -> Value:
    x = xnp.asarray(x)
    if axis is None:
        x, axis = ravel(x), 0
    axis = _axis(axis, x.ndim)
    expanded = expand_dims(x, axis + 1)
    shape = list(expanded.shape)
    shape[axis + 1] = repeats
    tiled = xnp.broadcast_to(expanded, shape)
    out = list(x.shape)
    out[axis] *= repeats
    return lax.reshape(tiled, out)


def tile(x: ArrayLike, reps: int | Sequence[int]) -> Value:
    x = xnp.asarray(x)
    counts = (reps,) if isinstance(reps, int) else tuple(reps)
    x = lax.reshape(x, (1,) * (len(counts) - x.ndim) + x.shape) if len(counts) > x.ndim else x
    counts = (1,) * (x.ndim - len(counts)) + counts
    shape, dims = [], []
    for i, (r, n) in enumerate(zip(counts, x.shape)):
        shape += [r, n]
        dims.append(2 * i + 1)
    out = lax.broadcast_in_dim(x, shape, dims)
    return lax.reshape(out, [r * n for r, n in zip(counts, x.shape)])


def sort(x: ArrayLike, axis: int | None = -1) -> Value:
    x = xnp.asarray(x)
    if axis is None:
        x, axis = ravel(x), 0
    return lax.sort(x, _axis(axis, x.ndim))


def argsort(x: ArrayLike, axis: int | None = -1, stable: bool = True, descending: bool = False
            ) -> Value:
    x = xnp.asarray(x)
    if axis is None:
        x, axis = ravel(x), 0
    axis = _axis(axis, x.ndim)
    indices = lax.iota(S32, x.shape, axis)
    _, order = lax.sort([x, indices], axis, is_stable=True, num_keys=1,
                        descending=descending)
    return order


# ---------------------------------------------------------------------------------------------
# einsum


def _parse_subscripts(subscripts: str, operands):
    subscripts = subscripts.replace(" ", "")
    if "->" in subscripts:
        inputs, output = subscripts.split("->")
    else:
        inputs, output = subscripts, None
    specs = inputs.split(",")
    if len(specs) != len(operands):
        raise XlaSpmdError(f"einsum {subscripts!r} names {len(specs)} operands, got "
                           f"{len(operands)}")
    if any("." in s for s in specs):
        width = max(o.ndim - (len(s) - 3) for s, o in zip(specs, operands) if "..." in s)
        ellipsis = "".join(chr(0x391 + i) for i in range(width))  # Greek capitals
        specs = [s.replace("...", ellipsis[width - (o.ndim - (len(s) - 3)):])
                 if "..." in s else s for s, o in zip(specs, operands)]
        if output is not None:
            output = output.replace("...", ellipsis)
    if output is None:
        counts: dict[str, int] = {}
        for s in specs:
            for c in s:
                counts[c] = counts.get(c, 0) + 1
        greek = "".join(c for c in sorted(counts) if ord(c) >= 0x391)
        output = greek + "".join(c for c in sorted(counts) if counts[c] == 1 and c not in greek)
    for s, o in zip(specs, operands):
        if len(s) != o.ndim:
            raise XlaSpmdError(f"einsum operand spec {s!r} does not match rank {o.ndim}")
        if len(set(s)) != len(s):
            raise XlaSpmdError(f"einsum: repeated label in {s!r} (diagonals) is unsupported")
    return specs, output


def _sum_unneeded(x, spec: str, needed: set):
    drop = [i for i, c in enumerate(spec) if c not in needed]
    if drop:
        x = lax.reduce_sum(x, drop)
        spec = "".join(c for c in spec if c in needed)
    return x, spec


def einsum_impl(subscripts: str, operands: list) -> Value:
    specs, output = _parse_subscripts(subscripts, operands)
    operands = xnp._promote_dtype(*operands)
    sizes = {}
    for s, o in zip(specs, operands):
        for c, n in zip(s, o.shape):
            if sizes.setdefault(c, n) != n and n != 1 and sizes[c] != 1:
                raise XlaSpmdError(f"einsum: label {c!r} has sizes {sizes[c]} and {n}")
    x, spec = operands[0], specs[0]
    rest = list(zip(specs[1:], operands[1:]))
    needed_later = set(output).union(*(set(s) for s, _ in rest))
    x, spec = _sum_unneeded(x, spec, needed_later)
    for k, (spec_b, y) in enumerate(rest):
        needed = set(output).union(*(set(s) for s, _ in rest[k + 1:]))
        y, spec_b = _sum_unneeded(y, spec_b, needed | set(spec))
        batch = [c for c in spec if c in spec_b and c in needed]
        contract = [c for c in spec if c in spec_b and c not in needed]
        dims = (([spec.index(c) for c in contract], [spec_b.index(c) for c in contract]),
                ([spec.index(c) for c in batch], [spec_b.index(c) for c in batch]))
        x = lax.dot_general(x, y, dims)
        spec = ("".join(batch) + "".join(c for c in spec if c not in batch + contract)
                + "".join(c for c in spec_b if c not in batch + contract))
        x, spec = _sum_unneeded(x, spec, needed)
    x, spec = _sum_unneeded(x, spec, set(output))
    return lax.transpose(x, [spec.index(c) for c in output])


@takes_out_sharding
def einsum(subscripts: str, *operands: ArrayLike) -> Value:
    """General einsum by pairwise contraction, left to right (no repeated labels within one
    operand)."""
    return einsum_impl(subscripts, [xnp.asarray(o) for o in operands])


def vdot(a: ArrayLike, b: ArrayLike) -> Value:
    return numpy_reductions.sum(xnp.multiply(ravel(a), ravel(b)))


def outer(a: ArrayLike, b: ArrayLike) -> Value:
    return xnp.multiply(reshape(a, (-1, 1)), reshape(b, (1, -1)))
