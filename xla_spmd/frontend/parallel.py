"""The collectives of per-device code (JAX's ``lax.parallel``): `psum`, `pmean`, `pmax`,
`pmin`, `all_gather`, `psum_scatter`, `all_to_all`, `ppermute`, `axis_index`, `axis_size`
and `pvary`, bound inside a manual region (`Manual`, the context a `shard_map` body is traced
in).

Each gets replica groups of the named mesh axes (flattened device ids,
``use_global_device_ids=true``), a channel id, and the frontend attribute `COLLECTIVE_AXES`
naming the axes (what `xla_spmd.frontend.vma` reads to type values).

>>> from xla_spmd.frontend.shard_map import shard_map
>>> from xla_spmd.mesh import make_mesh
>>> from xla_spmd.sharding import P
>>> import numpy as np
>>> f = shard_map(lambda x: pmax(x, "x"), make_mesh({"x": 1}), P("x"), P("x"))
>>> np.asarray(f(np.arange(2, dtype=np.float32))).tolist()
[0.0, 1.0]
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from xla_spmd.errors import XlaSpmdError
from xla_spmd.frontend import lax
from xla_spmd.frontend.numpy_core import asarray
from xla_spmd.frontend.numpy_shape import moveaxis
from xla_spmd.frontend.pytree import tree_flatten, tree_map, tree_unflatten
from xla_spmd.frontend.tracing import ArrayLike, AxisName, Value, bind, current_trace, reducer
from xla_spmd.ir import S32, U32, ReplicaGroups
from xla_spmd.ir.custom_calls import PVARY
from xla_spmd.mesh import Mesh

COLLECTIVE_AXES = "xla_spmd.collective_axes"
"""Frontend attribute of a collective bound in a shard_map body: the manual axes it spans
(comma-separated)."""


@dataclass
class Manual:
    """The manual region a trace is in: its mesh, manual axes and channel ids."""

    mesh: Mesh
    axes: tuple[str, ...]
    channels: itertools.count = field(default_factory=lambda: itertools.count(1))
    check_vma: bool = True  # values typed by the axes they vary over (frontend.vma)


def _manual(what: str) -> Manual:
    trace = current_trace()
    manual = trace.manual if trace is not None else None
    if manual is None:
        raise XlaSpmdError(f"{what} is only meaningful inside shard_map (per-device code); "
                           "call it in the body of a shard_map over a mesh with that axis")
    return manual


def _axes(axis_name) -> tuple[str, ...]:
    return (axis_name,) if isinstance(axis_name, str) else tuple(axis_name)


def _groups(manual: Manual, axis_name) -> ReplicaGroups:
    axes = _axes(axis_name)
    for a in axes:
        if a not in manual.axes:
            raise XlaSpmdError(f"axis {a!r} is not a manual axis of this shard_map "
                               f"({list(manual.axes)})")
    return ReplicaGroups.from_device_groups(manual.mesh.device_groups(axes))


def _group_kwargs(manual: Manual, axis_name, global_ids: bool = True) -> dict:
    kwargs = {"replica_groups": _groups(manual, axis_name),
              "channel_id": next(manual.channels),
              "frontend_attributes": ((COLLECTIVE_AXES, ",".join(_axes(axis_name))),)}
    if global_ids:
        kwargs["use_global_device_ids"] = True
    return kwargs


def _all_reduce(kind: str, x, axis_name):
    """One all-reduce per leaf of `x`, or a single variadic (tuple) all-reduce when the leaves
    share an element type (as JAX binds one psum for a pytree)."""
    manual = _manual({"add": "lax.psum", "max": "lax.pmax", "min": "lax.pmin"}[kind])
    leaves, tree = tree_flatten(x)
    leaves = [asarray(v) for v in leaves]
    dtypes = {v.aval.dtype for v in leaves}
    if len(leaves) > 1 and len(dtypes) == 1:
        out = bind("all-reduce", *leaves, to_apply=reducer(kind, leaves[0].aval.dtype),
                   **_group_kwargs(manual, axis_name))
        return tree_unflatten(tree, [lax.get_tuple_element(out, k) for k in range(len(leaves))])

    def one(v):
        return bind("all-reduce", v, to_apply=reducer(kind, v.aval.dtype),
                    **_group_kwargs(manual, axis_name))
    return tree_unflatten(tree, [one(v) for v in leaves])


def pvary(x: Any, axis_name: AxisName) -> Any:
    """JAX's ``lax.pvary``: `x` (a pytree) unchanged, typed as varying over `axis_name` (with
    ``check_vma``); its transpose is a ``psum`` over those axes. With ``check_vma=False`` it
    is the identity both ways."""
    manual = _manual("lax.pvary")
    axes = _axes(axis_name)
    _groups(manual, axes)  # checks the names
    if not manual.check_vma:
        return x

    def one(v):
        v = asarray(v)
        return bind("custom-call", v, shape=v.aval, custom_call_target=PVARY,
                    frontend_attributes=((COLLECTIVE_AXES, ",".join(axes)),))
    return tree_map(one, x)


def psum(x: Any, axis_name: AxisName) -> Any:
    """Sum over the devices along `axis_name` (a mesh axis or a tuple of them)."""
    return _all_reduce("add", x, axis_name)


def pmax(x: Any, axis_name: AxisName) -> Any:
    return _all_reduce("max", x, axis_name)


def pmin(x: Any, axis_name: AxisName) -> Any:
    return _all_reduce("min", x, axis_name)


def axis_size(axis_name: AxisName) -> int:
    manual = _manual("lax.axis_size")
    return int(np.prod([manual.mesh.axis_size(a) for a in _axes(axis_name)]))


def pmean(x: Any, axis_name: AxisName) -> Any:
    _manual("lax.pmean")
    n = axis_size(axis_name)
    return tree_map(lambda v: v / float(n), psum(x, axis_name))


def all_gather(x: ArrayLike, axis_name: AxisName, axis: int = 0, tiled: bool = False) -> Value:
    """Concatenate (tiled) or stack the devices' `x` along `axis`."""
    manual = _manual("lax.all_gather")
    if not tiled:
        x = lax.reshape(x, x.shape[:axis] + (1,) + x.shape[axis:])
    return bind("all-gather", x, dimensions=(axis,), **_group_kwargs(manual, axis_name))


def psum_scatter(x: ArrayLike, axis_name: AxisName, scatter_dimension: int = 0, tiled: bool = False
                 ) -> Value:
    """Sum over devices, each keeping its chunk of `scatter_dimension`."""
    manual = _manual("lax.psum_scatter")
    out = bind("reduce-scatter", x, dimensions=(scatter_dimension,),
               to_apply=reducer("add", x.aval.dtype), **_group_kwargs(manual, axis_name))
    if not tiled:
        if out.shape[scatter_dimension] != 1:
            raise XlaSpmdError("psum_scatter(tiled=False) needs the scatter dim to equal the "
                               "number of devices")
        out = lax.reshape(out, [n for d, n in enumerate(out.shape) if d != scatter_dimension])
    return out


def all_to_all(x: ArrayLike, axis_name: AxisName, split_axis: int, concat_axis: int,
               tiled: bool = False) -> Value:
    """Split `split_axis` into one chunk per device, exchange, concatenate the received
    chunks along `concat_axis` (HLO all-to-all plus reshape/transpose, as XLA lowers it)."""
    if not tiled:
        x1 = lax.reshape(x, x.shape + (1,))
        y = all_to_all(x1, axis_name, split_axis, x.ndim, tiled=True)
        y = lax.reshape(y, [n for d, n in enumerate(y.shape) if d != split_axis])
        return moveaxis(y, -1, concat_axis)
    manual = _manual("lax.all_to_all")
    n = axis_size(axis_name)
    kwargs = _group_kwargs(manual, axis_name, global_ids=False)
    y = bind("all-to-all", x, dimensions=(split_axis,), **kwargs)
    if split_axis == concat_axis:
        return y
    shape = list(y.shape)
    chunk = shape[split_axis] // n
    y = lax.reshape(y, shape[:split_axis] + [n, chunk] + shape[split_axis + 1:])
    order = [d for d in range(y.ndim) if d != split_axis]
    target = concat_axis if concat_axis < split_axis else concat_axis + 1
    order.insert(order.index(target), split_axis)
    y = lax.transpose(y, order)
    final = list(shape)
    final[split_axis] = chunk
    final[concat_axis] *= n
    return lax.reshape(y, final)


def ppermute(x: ArrayLike, axis_name: AxisName, perm: Iterable[tuple[int, int]]) -> Value:
    """Send each device's `x` to another along `axis_name`: `perm` lists (source, target)
    positions on the axis; devices that receive nothing get zeros."""
    manual = _manual("lax.ppermute")
    groups = manual.mesh.device_groups(_axes(axis_name)).groups
    pairs = tuple((g[s], g[t]) for g in groups for s, t in perm)
    return bind("collective-permute", x, source_target_pairs=pairs,
                channel_id=next(manual.channels))


def axis_index(axis_name: AxisName) -> Value | None:
    """This device's position along `axis_name` (s32), computed from partition-id."""
    manual = _manual("lax.axis_index")
    mesh = manual.mesh
    pid = bind("partition-id")
    index = None
    for a in _axes(axis_name):
        if mesh.is_iota:
            position = mesh.axis_names.index(a)
            stride = int(np.prod(mesh.axis_sizes[position + 1:]))
            coord = lax.div(pid, lax.constant(stride, U32))
            coord = bind("remainder", coord, lax.constant(mesh.axis_size(a), U32))
            coord = lax.convert(coord, S32)
        else:
            table = np.array([mesh.axis_coord(d, a) for d in range(mesh.size)], np.int32)
            coord = lax.reshape(lax.dynamic_slice(table, [pid], [1]), ())
        if index is None:
            index = coord
        else:
            index = lax.add(lax.mul(index, lax.constant(mesh.axis_size(a), S32)), coord)
    return index
