"""VJP rules of contractions, windows, gather/scatter, sort, collectives and custom-calls.

The dot and convolution rules are JAX's transposes of bilinear ops (`_dot_general_transpose_*`,
`_conv_general_dilated_transpose_*`, grouped convolutions included); gather and scatter-add
are each other's transposes; scatter-max/min route the cotangent to the winners, ties split
evenly (JAX's `_scatter_extremal_jvp`); max-pooling's transpose is select-and-scatter (one
strided slice per window position when the window is dilated, which JAX does not support);
all-gather and reduce-scatter transpose into each other, all-reduce(sum) and all-to-all are
self-adjoint, collective-permute inverts its pairs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from xla_spmd.frontend import lax, numpy_index, numpy_reductions, numpy_shape, sharding_types
from xla_spmd.frontend import numpy_core as xnp
from xla_spmd.frontend.ad import VJP
from xla_spmd.frontend.parallel import COLLECTIVE_AXES, psum
from xla_spmd.frontend.shard_map import transpose_boundary
from xla_spmd.frontend.sharding_types import type_of
from xla_spmd.frontend.tracing import (
    bind,
    current_trace,
    fresh_name,
    rebind,
    reducer,
)
from xla_spmd.frontend.vma import typed as vma_typed
from xla_spmd.ir import (
    PRED,
    S32,
    ArrayShape,
    Builder,
    ComparisonDirection,
    ConvDimensionNumbers,
    TupleShape,
    Window,
    reducer_kind,
)
from xla_spmd.ir.custom_calls import (
    FUNC_RESULT_SHARDING,
    MANUAL_BOUNDARIES,
    PROPAGATION_BARRIER,
    PVARY,
    SHARDING,
)

# ---------------------------------------------------------------------------------------------
# dot


def _ranges_like(*xs):
    start = 0
    for x in xs:
        yield list(range(start, start + len(x)))
        start += len(x)


def _dot_transpose_lhs(g, x, y, dims, swap_ans=False):
    """JAX's ``_dot_general_transpose_lhs``: the dot of `g` and `y` typed (under Explicit
    axes) with `x`'s type in its own dim order (JAX's ``out_sharding=``), transposed into
    `x`'s order."""
    x_aval = x.aval
    (x_contract, y_contract), (x_batch, y_batch) = dims
    x_ndim, y_ndim = len(x_aval.dims), y.ndim
    x_kept = [d for d in range(x_ndim) if d not in x_contract and d not in x_batch]
    y_kept = [d for d in range(y_ndim) if d not in y_contract and d not in y_batch]
    if swap_ans:
        ans_batch, ans_y, _ = _ranges_like(x_batch, y_kept, x_kept)
    else:
        ans_batch, _, ans_y = _ranges_like(x_batch, x_kept, y_kept)
    new_dims = ((ans_y, y_kept), (ans_batch, list(y_batch)))
    x_contract_sorted_by_y = list(np.take(x_contract, np.argsort(y_contract)).astype(int))
    unsorted = [int(d) for d in list(x_batch) + x_kept + x_contract_sorted_by_y]
    out_axes = np.argsort(unsorted).tolist()
    result = lax.dot_general(g, lax.convert(y, g.aval.dtype), new_dims,
                             out_sharding=sharding_types.type_for(x, type_of(x), unsorted))
    return lax.convert(lax.transpose(result, out_axes), x_aval.dtype)


@VJP.register("dot")
def _dot(ct, inst, ops, out):
    a = inst.attrs
    dims = ((list(a.lhs_contracting_dims), list(a.rhs_contracting_dims)),
            (list(a.lhs_batch_dims), list(a.rhs_batch_dims)))
    swapped = ((dims[0][1], dims[0][0]), (dims[1][1], dims[1][0]))
    lhs, rhs = ops
    return [_dot_transpose_lhs(ct, lhs, rhs, dims),
            _dot_transpose_lhs(ct, rhs, lhs, swapped, swap_ans=True)]


# ---------------------------------------------------------------------------------------------
# convolution


def _specs(dn: ConvDimensionNumbers):
    return ((dn.input_batch, dn.input_feature, *dn.input_spatial),
            (dn.kernel_output_feature, dn.kernel_input_feature, *dn.kernel_spatial),
            (dn.output_batch, dn.output_feature, *dn.output_spatial))


def _from_specs(lhs, rhs, out) -> ConvDimensionNumbers:
    return ConvDimensionNumbers(lhs[0], lhs[1], tuple(lhs[2:]), rhs[1], rhs[0], tuple(rhs[2:]),
                                out[0], out[1], tuple(out[2:]))


def _swap(spec):
    return (spec[1], spec[0], *spec[2:])


def _dilate(shape, dilation):
    return [0 if n == 0 else 1 + d * (n - 1) for n, d in zip(shape, dilation)]


def conv_vjp_lhs_padding(in_shape: Sequence[int], window: Sequence[int], strides: Sequence[int],
                         out_shape: Sequence[int], padding: Sequence[tuple[int, int]],
                         lhs_dilation: Sequence[int], rhs_dilation: Sequence[int]
                         ) -> list[tuple[int, int]]:
    lhs_dilated = _dilate(in_shape, lhs_dilation)
    rhs_dilated = _dilate(window, rhs_dilation)
    out_dilated = _dilate(out_shape, strides)
    before = [r - lo - 1 for r, (lo, _) in zip(rhs_dilated, padding)]
    after = [ld + r - 1 - od - b for ld, r, od, b in
             zip(lhs_dilated, rhs_dilated, out_dilated, before)]
    return list(zip(before, after))


def _conv_vjp_rhs_padding(in_shape, window, strides, out_shape, padding, lhs_dilation,
                          rhs_dilation):
    lhs_dilated = _dilate(in_shape, lhs_dilation)
    rhs_dilated = _dilate(window, rhs_dilation)
    out_dilated = _dilate(out_shape, strides)
    lows = [lo for lo, _ in padding]
    highs = [od - ld + r - lo - 1 for od, ld, r, lo in
             zip(out_dilated, lhs_dilated, rhs_dilated, lows)]
    return list(zip(lows, highs))


def _reshape_axis_out_of(axis: int, size: int, x):
    """Split dim `axis` of `x` into (size, rest), `size` major."""
    shape = list(x.shape)
    shape[axis:axis + 1] = [size, shape[axis] // size]
    return lax.reshape(x, shape)


def _reshape_axis_into(source: int, target: int, x):
    """Merge dim `source` into dim `target` (numbered after `source` is removed), major."""
    permutation = [d for d in range(x.ndim) if d != source]
    permutation.insert(target, source)
    shape = [n for d, n in enumerate(x.shape) if d != source]
    shape[target] *= x.shape[source]
    return lax.reshape(lax.transpose(x, permutation), shape)


@VJP.register("convolution")
def _convolution(ct, inst, ops, out):
    """JAX's `_conv_general_dilated_transpose_lhs/rhs`, grouped convolutions included: the
    transpose of a feature-grouped conv is feature-grouped in the lhs and batch-grouped in the
    rhs, and the other way round."""
    a = inst.attrs
    lhs, rhs = ops
    features, batches = a.feature_group_count, a.batch_group_count
    lhs_spec, rhs_spec, out_spec = _specs(a.dim_labels)
    w = a.window.dims
    strides = [d.stride for d in w]
    padding = [(d.padding_low, d.padding_high) for d in w]
    lhs_dilation = [d.lhs_dilation for d in w]
    rhs_dilation = [d.rhs_dilation for d in w]
    in_spatial = [lhs.shape[d] for d in lhs_spec[2:]]
    window = [rhs.shape[d] for d in rhs_spec[2:]]
    out_spatial = [ct.shape[d] for d in out_spec[2:]]
    kernel, groups = rhs, max(features, batches)
    if groups > 1:  # move the group axis from the kernel's output into its input features
        kernel = _reshape_axis_out_of(rhs_spec[0], groups, kernel)
        kernel = _reshape_axis_into(rhs_spec[0], rhs_spec[1], kernel)
    lhs_pads = conv_vjp_lhs_padding(in_spatial, window, strides, out_spatial, padding,
                                    lhs_dilation, rhs_dilation)
    lhs_ct = lax.conv_general_dilated(
        ct, lax.rev(kernel, rhs_spec[2:]), lhs_dilation, lhs_pads, strides, rhs_dilation,
        _from_specs(out_spec, _swap(rhs_spec), lhs_spec), feature_group_count=groups)
    if batches > 1:
        lhs_ct = _reshape_axis_out_of(lhs_spec[1], batches, lhs_ct)
        lhs_ct = _reshape_axis_into(lhs_spec[1], lhs_spec[0], lhs_ct)
    rhs_pads = _conv_vjp_rhs_padding(in_spatial, window, strides, out_spatial, padding,
                                     lhs_dilation, rhs_dilation)
    rhs_ct = lax.conv_general_dilated(
        lhs, ct, rhs_dilation, rhs_pads, lhs_dilation, strides,
        _from_specs(_swap(lhs_spec), _swap(out_spec), _swap(rhs_spec)),
        feature_group_count=batches, batch_group_count=features)
    return [lhs_ct, rhs_ct]


# ---------------------------------------------------------------------------------------------
# windows


@VJP.register("reduce-window")
def _reduce_window(ct, inst, ops, out):
    if len(ops) != 2:
        raise NotImplementedError("VJP of a variadic reduce-window")
    x = ops[0]
    w = inst.attrs.window.dims
    kind = reducer_kind(inst.attrs.to_apply)
    sizes = [d.size for d in w]
    strides = [d.stride for d in w]
    padding = [(d.padding_low, d.padding_high) for d in w]
    base_dilation = [d.lhs_dilation for d in w]
    window_dilation = [d.rhs_dilation for d in w]
    if kind == "add":  # JAX's _reduce_window_sum_transpose_rule
        pads = conv_vjp_lhs_padding(x.shape, sizes, strides, ct.shape, padding,
                                    base_dilation, window_dilation)
        padded = lax.pad(ct, lax.constant(0, ct.aval.dtype),
                         [(lo, hi, s - 1) for (lo, hi), s in zip(pads, strides)])
        return [lax.window_reduce(padded, "add", sizes, base_dilation, None, None,
                                  window_dilation), None]
    if kind in ("max", "min"):
        if any(d != 1 for d in window_dilation):
            return [_chooser_window_unrolled(ct, x, out, inst, kind), None]
        return [_chooser_window(ct, x, inst, kind, base_dilation), None]
    raise NotImplementedError(f"VJP of reduce-window with {inst.attrs.to_apply.name}")


def _chooser_window(ct, x, inst, kind: str, base_dilation):
    """Max/min pooling's transpose is select-and-scatter (the first winner of each window
    gets the cotangent); base dilation pads the holes with the identity first and strides
    them out after (JAX's `_select_and_gather_add_transpose`)."""
    dilated = any(d != 1 for d in base_dilation)
    operand = x
    if dilated:
        identity = lax.constant(lax.reduction_identity(kind, x.aval.dtype), x.aval.dtype)
        operand = lax.pad(x, identity, [(0, 0, d - 1) for d in base_dilation])
    window = Window(tuple(replace(d, lhs_dilation=1) for d in inst.attrs.window.dims))
    select = _select_computation(x.aval.dtype, "GE" if kind == "max" else "LE")
    result = bind("select-and-scatter", operand, ct, lax.constant(0, ct.aval.dtype),
                  window=window, select=select, scatter=reducer("add", ct.aval.dtype))
    if dilated:
        result = lax.slice(result, [0] * x.ndim, result.shape, base_dilation)
    return result


def _chooser_window_unrolled(ct, x, out, inst, kind: str):
    """Max/min pooling with window dilation (which select-and-scatter cannot express, and JAX
    does not differentiate): one strided slice of the padded operand per window position; the
    first position holding the result wins, as in select-and-scatter."""
    w = inst.attrs.window.dims
    identity = lax.constant(lax.reduction_identity(kind, x.aval.dtype), x.aval.dtype)
    padded = lax.pad(x, identity, [(d.padding_low, d.padding_high, d.lhs_dilation - 1)
                                   for d in w])
    zero = lax.constant(0, ct.aval.dtype)
    taken = lax.full(ct.shape, False, PRED)
    padded_ct = None
    for offsets in np.ndindex(*[d.size for d in w]):
        starts = [k * d.rhs_dilation for k, d in zip(offsets, w)]
        limits = [s + (n - 1) * d.stride + 1 for s, n, d in zip(starts, ct.shape, w)]
        candidate = lax.slice(padded, starts, limits, [d.stride for d in w])
        wins = xnp.logical_and(candidate == out, xnp.logical_not(taken))
        taken = xnp.logical_or(taken, wins)
        config = [(s, n - lim, d.stride - 1) for s, lim, n, d in
                  zip(starts, limits, padded.shape, w)]
        term = lax.pad(lax.select(wins, ct, lax.zeros_like(ct)), zero, config)
        padded_ct = term if padded_ct is None else lax.add(padded_ct, term)
    return lax.slice(padded_ct, [d.padding_low for d in w],
                     [n - d.padding_high for n, d in zip(padded.shape, w)],
                     [d.lhs_dilation for d in w])


_SELECTS: dict = {}


def _select_computation(dtype, direction: str):
    key = (dtype.name, direction)
    if key not in _SELECTS:
        b = Builder("select")
        lhs = b.parameter(ArrayShape(dtype, ()), "lhs")
        rhs = b.parameter(ArrayShape(dtype, ()), "rhs")
        root = b.compare(lhs, rhs, direction=ComparisonDirection(direction))
        _SELECTS[key] = b.build(root, fresh_name(f"region_select_{direction.lower()}"))
    return _SELECTS[key]


# ---------------------------------------------------------------------------------------------
# gather / scatter


@VJP.register("gather")
def _gather(ct, inst, ops, out):
    a = inst.attrs
    operand, indices = ops
    zeros = sharding_types.with_type(lax.full(operand.shape, 0, ct.aval.dtype), type_of(operand))
    result = bind("scatter", zeros, indices, ct,
                  update_window_dims=a.offset_dims, inserted_window_dims=a.collapsed_slice_dims,
                  scatter_dims_to_operand_dims=a.start_index_map,
                  input_batching_dims=a.operand_batching_dims,
                  scatter_indices_batching_dims=a.start_indices_batching_dims,
                  index_vector_dim=a.index_vector_dim,
                  indices_are_sorted=a.indices_are_sorted,
                  to_apply=reducer("add", ct.aval.dtype))
    return [result, None]


def _gather_updates(ct, inst, indices, updates):
    a = inst.attrs
    collapsed = set(a.inserted_window_dims) | set(a.input_batching_dims)
    window_sizes = iter(updates.shape[d] for d in a.update_window_dims)
    slice_sizes = tuple(1 if d in collapsed else next(window_sizes) for d in range(ct.ndim))
    return bind("gather", ct, indices, offset_dims=a.update_window_dims,
                collapsed_slice_dims=a.inserted_window_dims,
                start_index_map=a.scatter_dims_to_operand_dims,
                operand_batching_dims=a.input_batching_dims,
                start_indices_batching_dims=a.scatter_indices_batching_dims,
                index_vector_dim=a.index_vector_dim, slice_sizes=slice_sizes)


@VJP.register("scatter")
def _scatter(ct, inst, ops, out):
    if len(ops) != 3:
        raise NotImplementedError("VJP of a variadic scatter")
    operand, indices, updates = ops
    kind = reducer_kind(inst.attrs.to_apply)
    if kind == "add":
        return [ct, None, _gather_updates(ct, inst, indices, updates)]
    if kind == "set":
        attrs = {spec.name: getattr(inst.attrs, spec.name) for spec in inst.op.attrs}
        attrs["to_apply"] = reducer("set", ct.aval.dtype)
        operand_ct = bind("scatter", ct, indices, lax.zeros_like(updates), **attrs)
        return [operand_ct, None, _gather_updates(ct, inst, indices, updates)]
    if kind in ("max", "min"):
        return _scatter_extremal(ct, inst, operand, indices, updates, out)
    if kind == "mul":
        # Linear in the operand (times the product of its updates); the updates' cotangent
        # divides that product back out, as the reduce-product rule does.
        operand_ct = rebind(inst, [ct, indices, updates])
        return [operand_ct, None, _gather_updates(ct * out, inst, indices, updates) / updates]
    raise NotImplementedError(f"VJP of scatter with combiner {inst.attrs.to_apply.name}")


def _scatter_extremal(ct, inst, operand, indices, updates, out):
    """JAX's `_scatter_extremal_jvp`, transposed: the cotangent of each result element goes
    to the operand element and the updates that equal it, split evenly among them."""
    dtype = ct.aval.dtype
    won = xnp.astype(updates == _gather_updates(out, inst, indices, updates), dtype)
    kept = xnp.astype(operand == out, dtype)
    attrs = {spec.name: getattr(inst.attrs, spec.name) for spec in inst.op.attrs}
    attrs["to_apply"] = reducer("add", dtype)
    winners = bind("scatter", kept, indices, won, **attrs)
    share = ct / xnp.maximum(winners, 1.0)
    return [share * kept, None, _gather_updates(share, inst, indices, updates) * won]


# ---------------------------------------------------------------------------------------------
# sort and top-k


def _comparator_with_iota(computation):
    """The sort comparator with one more (ignored) s32 operand pair appended."""
    b = Builder(computation.name)
    arguments = [b.parameter(p.shape, p.name) for p in computation.parameters]
    b.parameter(ArrayShape(S32, ()), "lhs.iota")
    b.parameter(ArrayShape(S32, ()), "rhs.iota")
    return b.build(b.inline(computation, arguments), fresh_name("region_compare_iota"))


@VJP.register("sort")
def _sort(ct, inst, ops, out):
    (dim,) = inst.attrs.dimensions
    cts = ct if isinstance(ct, tuple) else (ct,)
    iota = lax.iota(S32, ops[0].shape, dim)
    sorted_all = bind("sort", *ops, iota, dimensions=(dim,), is_stable=inst.attrs.is_stable,
                      to_apply=_comparator_with_iota(inst.attrs.to_apply))
    permutation = lax.get_tuple_element(sorted_all, len(ops))
    inverse = numpy_shape.argsort(permutation, axis=dim)
    result = [None if c is None else numpy_index.take_along_axis(c, inverse, dim) for c in cts]
    return result


@VJP.register("topk")
def _topk(ct, inst, ops, out):
    values_ct = ct[0]
    if values_ct is None:
        return [None]
    x = ops[0]
    indices = lax.get_tuple_element(out, 1)
    n = x.shape[-1]
    one_hot = xnp.astype(numpy_shape.expand_dims(indices, -1) == lax.iota(S32, indices.shape + (n,),
                                                                   indices.ndim),
                         values_ct.dtype)
    return [numpy_reductions.sum(one_hot * numpy_shape.expand_dims(values_ct, -1), axis=-2)]


# ---------------------------------------------------------------------------------------------
# collectives


def _group_attrs(inst) -> dict:
    a = inst.attrs
    return {"replica_groups": a.replica_groups, "channel_id": a.channel_id,
            "use_global_device_ids": a.use_global_device_ids,
            "frontend_attributes": inst.frontend_attributes}


@VJP.register("all-reduce")
def _all_reduce(ct, inst, ops, out):
    """Sum-reduce the cotangent over the group (max/min: masked to the winners); a variadic
    all-reduce is one all-reduce per operand on the way back."""
    kind = reducer_kind(inst.attrs.to_apply)
    if kind not in ("add", "max", "min"):
        raise NotImplementedError(f"VJP of all-reduce with {inst.attrs.to_apply.name}")
    variadic = isinstance(inst.shape, TupleShape)
    cts = ct if variadic else (ct,)
    outs = [lax.get_tuple_element(out, k) for k in range(len(ops))] if variadic else [out]
    result = []
    for c, x, y in zip(cts, ops, outs):
        if c is None:
            result.append(None)
            continue
        result.append(_psum_transpose(c, inst, x, kind, y))
    return result


def _psum_transpose(c, inst, x, kind: str, y):
    """The transpose of a psum (or the sum part of pmax/pmin's): the identity in a typed
    shard_map body (JAX's check_vma: the operand varies); else a psum."""
    if vma_typed(current_trace()):
        summed = c
    else:
        summed = bind("all-reduce", c, to_apply=reducer("add", c.aval.dtype),
                      **_group_attrs(inst))
    return summed if kind == "add" else summed * xnp.astype(x == y, c.dtype)


@VJP.register("all-gather")
def _all_gather(ct, inst, ops, out):
    return [bind("reduce-scatter", ct, dimensions=inst.attrs.dimensions,
                 to_apply=reducer("add", ct.aval.dtype), **_group_attrs(inst))]


@VJP.register("reduce-scatter")
def _reduce_scatter(ct, inst, ops, out):
    if reducer_kind(inst.attrs.to_apply) != "add":
        raise NotImplementedError("VJP of a non-sum reduce-scatter")
    return [bind("all-gather", ct, dimensions=inst.attrs.dimensions, **_group_attrs(inst))]


self_adjoint = VJP.register("all-to-all")(lambda ct, inst, ops, out: [rebind(inst, [ct])])


@VJP.register("collective-permute")
def _collective_permute(ct, inst, ops, out):
    pairs = tuple((t, s) for s, t in inst.attrs.source_target_pairs)
    return [bind("collective-permute", ct, source_target_pairs=pairs,
                 channel_id=inst.attrs.channel_id)]


# ---------------------------------------------------------------------------------------------
# custom-calls: sharding constraints and manual-region boundaries


@VJP.register("custom-call")
def _custom_call(ct, inst, ops, out):
    target = inst.attrs.custom_call_target
    if target in (SHARDING, FUNC_RESULT_SHARDING, PROPAGATION_BARRIER):
        return [rebind(inst, [ct])]
    if target in MANUAL_BOUNDARIES:
        return transpose_boundary(ct, inst, ops)
    if target == PVARY:  # varying -> invariant: the cotangents summed over its axes
        return [psum(ct, tuple(inst.frontend_attribute(COLLECTIVE_AXES).split(",")))]
    raise NotImplementedError(f"VJP of custom-call {target!r}")
