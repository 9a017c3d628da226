"""Vectorising map (`vmap`): the `BATCH` rule registry and the pass that batches a computation.

`batch_computation(computation, args, batched, size)` re-emits `computation` in the current
trace on `args`, some of which carry an extra leading *batch* dimension of `size`. An
instruction none of whose operands is batched is re-emitted as it is; otherwise the rule
registered in `BATCH` for its opcode emits the batched op. One rule serves each op family.

Invariants: a batched value has its batch dimension at axis 0 (values enter with `moveaxis`);
a tuple value is batched as a whole (every element has the batch dimension). A rule returns
a batched value. `unrolled` is the rule of last resort, registered by name for the ops whose
batched form has no direct HLO spelling (a batched loop bound, a batched random state): it
runs the op once per batch element and stacks the results.

>>> import numpy as np
>>> import xla_spmd.numpy as xnp
>>> from xla_spmd.frontend.transforms import vmap
>>> np.asarray(vmap(lambda v: xnp.dot(v, v))(np.arange(6.0, dtype=np.float32).reshape(2, 3)))
array([ 5., 50.], dtype=float32)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from xla_spmd.errors import XlaSpmdError
from xla_spmd.frontend import lax
from xla_spmd.frontend.sharding_types import suspended as types_suspended
from xla_spmd.frontend.tracing import (
    Value,
    attrs_dict,
    aval_of,
    bind,
    finish,
    fresh_name,
    rebind,
    reducer,
    source_of,
    trace_computation,
)
from xla_spmd.ir import (
    OPS,
    PRED,
    S32,
    ArrayShape,
    Computation,
    Family,
    Instruction,
    Registry,
    Shape,
    TupleShape,
)
from xla_spmd.ir.attributes import PadDim, SliceDim, Window, WindowDim
from xla_spmd.ir.batch_norm import BATCH_NORM_OPS, expand_instruction
from xla_spmd.ir.custom_calls import SHARDING
from xla_spmd.ir.module import Sharding
from xla_spmd.sharding import DimSharding, TensorSharding

BATCH = Registry("batching")
"""opcode -> rule(inst, operands, batched, size) -> the result, batched at axis 0."""


# ---------------------------------------------------------------------------------------------
# The pass


def batch_computation(computation: Computation, args: Sequence[Any], batched: Sequence[bool],
                      size: int) -> tuple[Any, bool]:
    """Emit `computation` on `args` (``batched[i]``: whether ``args[i]`` has the leading batch
    dimension) in the current trace; returns ``(root value, whether it is batched)``."""
    env = {id(p): (a, b) for p, a, b in zip(computation.parameters, args, batched)}
    with types_suspended():  # batched values: no sharding types (propagation places them)
        for inst in computation.instructions:
            if inst.opcode == "parameter":
                continue
            values = [env[id(o)] for o in inst.operands]
            operands = [v for v, _ in values]
            flags = [b for _, b in values]
            if not any(flags):
                env[id(inst)] = (rebind(inst, operands), False)
                continue
            with source_of(inst):
                env[id(inst)] = (BATCH.lookup(inst.opcode)(inst, operands, flags, size), True)
    return env[id(computation.root)]


# ---------------------------------------------------------------------------------------------
# Helpers


def batched_aval(aval: Shape, size: int) -> Shape:
    if isinstance(aval, TupleShape):
        return TupleShape(tuple(batched_aval(e, size) for e in aval.elements))
    return ArrayShape(aval.dtype, (size,) + aval.dims)


def materialize(x: Value, batched: bool, size: int) -> Value:
    """`x` with the batch dimension (broadcast along it when `x` is not batched)."""
    if batched:
        return x
    aval = aval_of(x)
    if isinstance(aval, TupleShape):
        return lax.make_tuple(*[materialize(lax.get_tuple_element(x, i), False, size)
                                for i in range(len(aval.elements))])
    return lax.broadcast_in_dim(x, (size,) + aval.dims, range(1, aval.rank + 1))


def moveaxis(x: Value, source: int, destination: int) -> Value:
    order = [d for d in range(x.ndim) if d != source]
    order.insert(destination, source)
    return lax.transpose(x, order)


def _batched_sharding(sharding: Sharding | None) -> Any:
    """A sharding of the per-example value, for the batched one: the batch dimension is open
    (propagation picks its sharding)."""
    if sharding is None:
        return None
    if isinstance(sharding, tuple):
        return tuple(_batched_sharding(s) for s in sharding)
    if isinstance(sharding, TensorSharding):
        return dataclasses.replace(sharding,
                                   dims=(DimSharding((), is_closed=False),) + sharding.dims)
    return None


def bind_batched(inst: Instruction, operands: Sequence[Value], size: int, **overrides: Any
                 ) -> Value:
    """Bind `inst`'s op on batched `operands`, its attributes updated by `overrides`."""
    attrs = {**attrs_dict(inst), **overrides}
    shape = batched_aval(inst.shape, size) if inst.op.needs_declared_shape else None
    return bind(inst.opcode, *operands, shape=shape,
                frontend_attributes=inst.frontend_attributes, extras=inst.extras,
                sharding=_batched_sharding(inst.sharding), **attrs)


def _all_batched(operands, batched, size):
    return [materialize(x, b, size) for x, b in zip(operands, batched)]


def _shift(dims, by: int = 1) -> tuple:
    return tuple(d + by for d in dims)


def _lead(dims) -> tuple:
    """Dimensions attribute of an op mapping every dim (transpose, broadcast): the batch
    dimension maps to itself, at 0."""
    return (0,) + _shift(dims)


def index_batch(x: Value, b: int) -> Value:
    """Element `b` of batched `x` (tuples element by element)."""
    aval = aval_of(x)
    if isinstance(aval, TupleShape):
        return lax.make_tuple(*[index_batch(lax.get_tuple_element(x, i), b)
                                for i in range(len(aval.elements))])
    return lax.reshape(lax.slice_in_dim(x, b, b + 1, 1, 0), aval.dims[1:])


def stack(values: Sequence[Value]) -> Value:
    """Stack per-example values along a new leading dimension (tuples element-wise)."""
    aval = aval_of(values[0])
    if isinstance(aval, TupleShape):
        return lax.make_tuple(*[stack([lax.get_tuple_element(v, i) for v in values])
                                for i in range(len(aval.elements))])
    return lax.concatenate([lax.reshape(v, (1,) + aval.dims) for v in values], 0)


def register_family(family: Family, rule: Callable[..., Any]) -> None:
    for name, op in OPS.items():
        if op.family is family and name not in BATCH:
            BATCH.register(name)(rule)


# ---------------------------------------------------------------------------------------------
# The rule of last resort


def unrolled(inst: Instruction, operands: Sequence[Value], batched: Sequence[bool], size: int
             ) -> Value:
    """Run the op once per batch element and stack the results."""
    results = []
    for b in range(size):
        results.append(rebind(inst, [index_batch(x, b) if f else x
                                     for x, f in zip(operands, batched)]))
    return stack(results)


BATCH.register("rng-bit-generator", "rng", "map", "fusion")(unrolled)


# ---------------------------------------------------------------------------------------------
# Elementwise (unary, binary, select, clamp, convert, ...) and element-wise collectives


def _elementwise(inst, operands, batched, size):
    dims = inst.shape.dims
    out = []
    for x, b, o in zip(operands, batched, inst.operands):
        x = materialize(x, b, size)
        if len(inst.operands) > 1 and o.shape.rank == 0 and dims:  # select/clamp scalars
            x = lax.broadcast_in_dim(x, (size,) + dims, (0,))
        out.append(x)
    return bind_batched(inst, out, size)


for _family in (Family.UNARY, Family.BINARY, Family.ELEMENTWISE):
    register_family(_family, _elementwise)


@BATCH.register("all-reduce", "collective-permute", "collective-broadcast", "tuple",
                "opt-barrier", "get-tuple-element", "topk", "cholesky", "triangular-solve",
                "fft")
def _leading_batch(inst, operands, batched, size):
    """Ops that treat leading dimensions as independent: the same op, on batched operands."""
    return bind_batched(inst, _all_batched(operands, batched, size), size)


# ---------------------------------------------------------------------------------------------
# Shapes


@BATCH.register("broadcast", "transpose")
def _lead_dimensions(inst, operands, batched, size):
    return bind_batched(inst, operands, size, dimensions=_lead(inst.attrs.dimensions))


@BATCH.register("reshape", "bitcast")
def _reshape(inst, operands, batched, size):
    return bind_batched(inst, operands, size)


@BATCH.register("reverse", "concatenate", "get-dimension-size", "all-gather",
                "reduce-scatter", "all-to-all")
def _shifted_dimensions(inst, operands, batched, size):
    return bind_batched(inst, _all_batched(operands, batched, size), size,
                        dimensions=_shift(inst.attrs.dimensions))


@BATCH.register("slice")
def _slice(inst, operands, batched, size):
    return bind_batched(inst, operands, size, slice=(SliceDim(0, size, 1),) + inst.attrs.slice)


@BATCH.register("pad")
def _pad(inst, operands, batched, size):
    x, value = operands
    padding = (PadDim(0, 0, 0),) + inst.attrs.padding
    x = materialize(x, batched[0], size)
    if not batched[1]:
        return bind_batched(inst, [x, value], size, padding=padding)
    # A batched padding value: pad with zero, then select the value where the mask is off.
    zero = lax.constant(0, value.aval.dtype)
    padded = bind_batched(inst, [x, zero], size, padding=padding)
    inside = lax.full(x.shape, True, PRED)
    mask = bind_batched(inst, [inside, lax.constant(False, PRED)], size, padding=padding)
    fill = lax.broadcast_in_dim(value, padded.shape, (0,))
    return lax.select(mask, padded, fill)


# ---------------------------------------------------------------------------------------------
# Reductions, windows, sorts


@BATCH.register("reduce")
def _reduce(inst, operands, batched, size):
    n = len(operands) // 2
    if any(batched[n:]):
        return unrolled(inst, operands, batched, size)
    xs = _all_batched(operands[:n], batched[:n], size)
    return bind_batched(inst, xs + list(operands[n:]), size,
                        dimensions=_shift(inst.attrs.dimensions))


def _window_with_batch(window: Window) -> Window:
    return Window((WindowDim(1),) + window.dims)


@BATCH.register("reduce-window", "select-and-scatter")
def _windowed(inst, operands, batched, size):
    n = len(operands) // 2 if inst.opcode == "reduce-window" else 2
    if any(batched[n:]):
        return unrolled(inst, operands, batched, size)
    xs = _all_batched(operands[:n], batched[:n], size)
    return bind_batched(inst, xs + list(operands[n:]), size,
                        window=_window_with_batch(inst.attrs.window))


@BATCH.register("sort")
def _sort(inst, operands, batched, size):
    return bind_batched(inst, _all_batched(operands, batched, size), size,
                        dimensions=_shift(inst.attrs.dimensions))


# ---------------------------------------------------------------------------------------------
# Contractions


@BATCH.register("dot")
def _dot(inst, operands, batched, size):
    a = inst.attrs
    lhs, rhs = operands
    if batched[0] and batched[1]:
        return bind_batched(inst, [lhs, rhs], size,
                            lhs_batch_dims=_lead(a.lhs_batch_dims),
                            lhs_contracting_dims=_shift(a.lhs_contracting_dims),
                            rhs_batch_dims=_lead(a.rhs_batch_dims),
                            rhs_contracting_dims=_shift(a.rhs_contracting_dims))
    # One side batched: its batch dimension is a free dimension of that side, the first one
    # (dim 0); the result lists batch dims, then lhs free dims, then rhs free dims.
    n_batch = len(a.lhs_batch_dims)
    if batched[0]:
        out = bind("dot", lhs, rhs, lhs_batch_dims=_shift(a.lhs_batch_dims),
                   lhs_contracting_dims=_shift(a.lhs_contracting_dims),
                   rhs_batch_dims=a.rhs_batch_dims, rhs_contracting_dims=a.rhs_contracting_dims,
                   operand_precision=a.operand_precision, algorithm=a.algorithm,
                   frontend_attributes=inst.frontend_attributes, extras=inst.extras)
        return moveaxis(out, n_batch, 0)
    lhs_free = inst.operands[0].shape.rank - n_batch - len(a.lhs_contracting_dims)
    out = bind("dot", lhs, rhs, lhs_batch_dims=a.lhs_batch_dims,
               lhs_contracting_dims=a.lhs_contracting_dims,
               rhs_batch_dims=_shift(a.rhs_batch_dims),
               rhs_contracting_dims=_shift(a.rhs_contracting_dims),
               operand_precision=a.operand_precision, algorithm=a.algorithm,
               frontend_attributes=inst.frontend_attributes, extras=inst.extras)
    return moveaxis(out, n_batch + lhs_free, 0)


@BATCH.register("convolution")
def _convolution(inst, operands, batched, size):
    lhs, rhs = operands
    if batched[1] or inst.attrs.batch_group_count != 1:
        return unrolled(inst, operands, batched, size)
    # Only the input is batched: fold the vmap dimension into the convolution's batch.
    labels = inst.attrs.dim_labels
    n = labels.input_batch + 1
    lhs = moveaxis(lhs, 0, n - 1)       # (..., B, N, ...) with B just before N
    shape = list(lhs.shape)
    lhs = lax.reshape(lhs, shape[:n - 1] + [shape[n - 1] * shape[n]] + shape[n + 1:])
    out = rebind(inst, [lhs, rhs])
    dims = list(out.shape)
    k = labels.output_batch
    out = lax.reshape(out, dims[:k] + [size, dims[k] // size] + dims[k + 1:])
    return moveaxis(out, k, 0)


# ---------------------------------------------------------------------------------------------
# Indexing: batched indices become gathers/scatters with batching dimensions


def _gather_attrs(a, **extra) -> dict:
    return dict(offset_dims=_shift(a.offset_dims),
                collapsed_slice_dims=_shift(a.collapsed_slice_dims),
                start_index_map=_shift(a.start_index_map),
                operand_batching_dims=_lead(a.operand_batching_dims),
                start_indices_batching_dims=_lead(a.start_indices_batching_dims),
                index_vector_dim=a.index_vector_dim + 1, **extra)


@BATCH.register("gather")
def _gather(inst, operands, batched, size):
    a = inst.attrs
    return bind_batched(inst, _all_batched(operands, batched, size), size,
                        **_gather_attrs(a, slice_sizes=(1,) + a.slice_sizes))


@BATCH.register("scatter")
def _scatter(inst, operands, batched, size):
    a = inst.attrs
    return bind_batched(inst, _all_batched(operands, batched, size), size,
                        update_window_dims=_shift(a.update_window_dims),
                        inserted_window_dims=_shift(a.inserted_window_dims),
                        scatter_dims_to_operand_dims=_shift(a.scatter_dims_to_operand_dims),
                        input_batching_dims=_lead(a.input_batching_dims),
                        scatter_indices_batching_dims=_lead(a.scatter_indices_batching_dims),
                        index_vector_dim=a.index_vector_dim + 1)


def _stacked_starts(starts, batched, size):
    """Per-example scalar start indices as one (size, k) s32 index array."""
    columns = [lax.convert(materialize(s, b, size), S32) for s, b in zip(starts, batched)]
    return lax.concatenate([lax.reshape(c, (size, 1)) for c in columns], 1)


@BATCH.register("dynamic-slice")
def _dynamic_slice(inst, operands, batched, size):
    x, starts = operands[0], operands[1:]
    sizes = inst.attrs.dynamic_slice_sizes
    x = materialize(x, batched[0], size)
    if not any(batched[1:]):
        return bind_batched(inst, [x, lax.constant(0, S32), *starts], size,
                            dynamic_slice_sizes=(size,) + sizes)
    rank = len(sizes)
    return bind("gather", x, _stacked_starts(starts, batched[1:], size),
                offset_dims=tuple(range(1, rank + 1)), collapsed_slice_dims=(),
                start_index_map=tuple(range(1, rank + 1)), operand_batching_dims=(0,),
                start_indices_batching_dims=(0,), index_vector_dim=1,
                slice_sizes=(1,) + tuple(sizes))


@BATCH.register("dynamic-update-slice")
def _dynamic_update_slice(inst, operands, batched, size):
    x, update, starts = operands[0], operands[1], operands[2:]
    x = materialize(x, batched[0], size)
    update = materialize(update, batched[1], size)
    if not any(batched[2:]):
        return bind_batched(inst, [x, update, lax.constant(0, S32), *starts], size)
    # Scatter does not clamp start indices as dynamic-update-slice does: clamp them first.
    dims, update_dims = inst.shape.dims, inst.operands[1].shape.dims
    clamped = [lax.clamp(lax.constant(0, S32), lax.convert(s, S32),
                         lax.constant(d - u, S32))
               for s, d, u in zip(starts, dims, update_dims)]
    rank = len(dims)
    return bind("scatter", x, _stacked_starts(clamped, batched[2:], size), update,
                update_window_dims=tuple(range(1, rank + 1)), inserted_window_dims=(),
                scatter_dims_to_operand_dims=tuple(range(1, rank + 1)),
                input_batching_dims=(0,), scatter_indices_batching_dims=(0,),
                index_vector_dim=1, indices_are_sorted=True, unique_indices=True,
                to_apply=reducer("set", x.aval.dtype))


# ---------------------------------------------------------------------------------------------
# Control flow: batched callees


def batched_callee(computation: Computation, size: int, post: Callable[..., Any] | None = None
                   ) -> Computation:
    """`computation` of one (tuple or array) parameter, batched: it takes and returns
    batched values (`post(result, batched, argument)` may rewrite the result)."""
    (param,) = computation.parameters

    def run(arg):
        out, out_batched = batch_computation(computation, [arg], [True], size)
        if post is not None:
            return [post(out, out_batched, arg)]
        return [materialize(out, out_batched, size)]

    trace, outputs = trace_computation(run, [batched_aval(param.shape, size)],
                                       fresh_name(computation.name))
    if trace.captures:
        raise XlaSpmdError(f"vmap of {computation.name}: the batched body captures values")
    return finish(trace, outputs, tuple_root=False)


def _any(pred):
    return lax.reduce(pred, "or", range(pred.ndim)) if pred.ndim else pred


def _select_leaves(pred, on_true, on_false):
    """Per-example select of batched (tuple) values by a (size,) predicate."""
    aval = aval_of(on_true)
    if isinstance(aval, TupleShape):
        return lax.make_tuple(*[_select_leaves(pred, lax.get_tuple_element(on_true, i),
                                               lax.get_tuple_element(on_false, i))
                                for i in range(len(aval.elements))])
    return lax.select(lax.broadcast_in_dim(pred, aval.dims, (0,)), on_true, on_false)


@BATCH.register("while")
def _while(inst, operands, batched, size):
    (state,) = operands
    condition, body = inst.attrs.condition, inst.attrs.body
    state = materialize(state, batched[0], size)
    # Every example runs while any still needs to; the finished ones keep their state.
    probe_trace, probe = trace_computation(
        lambda s: [batch_computation(condition, [s], [True], size)[0]],
        [state.aval], fresh_name("probe"))
    pred_batched = probe[0].shape.rank > 0
    if not pred_batched:
        new_condition = batched_callee(condition, size)
        new_body = batched_callee(body, size)
    else:
        new_condition = batched_callee(condition, size, post=lambda p, b, s: _any(p))

        def step(out, out_batched, arg):
            pred, _ = batch_computation(condition, [arg], [True], size)
            return _select_leaves(pred, materialize(out, out_batched, size), arg)
        new_body = batched_callee(body, size, post=step)
    return bind("while", state, condition=new_condition, body=new_body, extras=inst.extras)


def _branches(inst) -> tuple:
    a = inst.attrs
    return a.branch_computations or (a.true_computation, a.false_computation)


@BATCH.register("conditional")
def _conditional(inst, operands, batched, size):
    index, branch_operands = operands[0], operands[1:]
    branches = _branches(inst)
    if not batched[0]:
        args = _all_batched(branch_operands, batched[1:], size)
        computations = tuple(batched_callee(c, size) for c in branches)
        if inst.attrs.branch_computations:
            return bind("conditional", index, *args, branch_computations=computations)
        return bind("conditional", index, *args, true_computation=computations[0],
                    false_computation=computations[1])
    # A batched predicate: every branch runs, each example selects its own result.
    results = [materialize(*batch_computation(c, [x], [b], size), size)
               for c, x, b in zip(branches, branch_operands, batched[1:])]
    if inst.attrs.branch_computations:
        last = len(branches) - 1
        chosen = lax.clamp(lax.constant(0, S32), index, lax.constant(last, S32))
        out = results[last]
        for k in reversed(range(last)):
            out = _select_leaves(lax.compare(chosen, lax.full((size,), k, S32), "EQ"),
                                 results[k], out)
        return out
    return _select_leaves(index, results[0], results[1])


@BATCH.register("call")
def _call(inst, operands, batched, size):
    out, out_batched = batch_computation(inst.attrs.to_apply, operands, batched, size)
    return materialize(out, out_batched, size)


@BATCH.register("custom-call")
def _custom_call(inst, operands, batched, size):
    if inst.attrs.custom_call_target == SHARDING:
        return bind_batched(inst, operands, size)
    if inst.attrs.custom_call_target.startswith("xla.sdy."):
        raise XlaSpmdError(f"vmap of a shard_map or sharding annotation "
                           f"({inst.attrs.custom_call_target}) is not supported: apply vmap "
                           "inside the shard_map body instead")
    return unrolled(inst, operands, batched, size)


@BATCH.register(*BATCH_NORM_OPS)
def _batch_norm(inst, operands, batched, size):
    # The batch dim must not join the normalized dims: vmap the primitive expansion.
    out, out_batched = batch_computation(expand_instruction(inst), operands, batched, size)
    return materialize(out, out_batched, size)
