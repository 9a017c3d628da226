"""VJP rules of elementwise, shape, tuple and reduction ops.

A rule is ``rule(ct, inst, operands, out) -> [cotangent or None per operand]``. Helpers make
most ops one line: `unary(opcode, d)` multiplies by a derivative ``d(x, out)``; `binary`
takes one partial derivative per operand; `self_transpose` applies the op itself to the
cotangent (linear ops that are their own adjoint).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from xla_spmd.frontend import lax, sharding_types
from xla_spmd.frontend import numpy_core as xnp
from xla_spmd.frontend.ad import VJP
from xla_spmd.frontend.sharding_types import type_of
from xla_spmd.frontend.tracing import Value, bind, fresh_name, rebind
from xla_spmd.ir import (
    S32,
    ArrayShape,
    Builder,
    ComparisonDirection,
    componentwise_kinds,
    reducer_kind,
)


def unary(opcode: str, derivative: Callable[[Value, Value], Value]) -> None:
    """d(operand) = ct * derivative(x, out)."""
    VJP.register(opcode)(lambda ct, inst, ops, out: [ct * derivative(ops[0], out)])


def binary(opcode: str, d_lhs: Callable[..., Value | None], d_rhs: Callable[..., Value | None]
           ) -> None:
    """Each partial maps (ct, x, y, out) to that operand's cotangent (or None)."""
    VJP.register(opcode)(lambda ct, inst, ops, out: [
        d_lhs(ct, ops[0], ops[1], out), d_rhs(ct, ops[0], ops[1], out)])


def zero_rule(*opcodes: str) -> None:
    """Ops with zero derivative (or no differentiable operands)."""
    for opcode in opcodes:
        VJP.register(opcode)(lambda ct, inst, ops, out: [None] * len(ops))


def self_transpose(*opcodes: str) -> None:
    """Linear ops that are their own adjoint: the cotangent goes through the same op."""
    for opcode in opcodes:
        VJP.register(opcode)(lambda ct, inst, ops, out: [rebind(inst, [ct])])


# ---------------------------------------------------------------------------------------------
# Elementwise

unary("exponential", lambda x, y: y)
unary("exponential-minus-one", lambda x, y: y + 1.0)
unary("log", lambda x, y: 1.0 / x)
unary("log-plus-one", lambda x, y: 1.0 / (x + 1.0))
unary("sqrt", lambda x, y: 0.5 / y)
unary("rsqrt", lambda x, y: -0.5 * y / x)
unary("cbrt", lambda x, y: y / (3.0 * x))
unary("tanh", lambda x, y: 1.0 - y * y)
unary("logistic", lambda x, y: y * (1.0 - y))
unary("sine", lambda x, y: xnp.cos(x))
unary("cosine", lambda x, y: -xnp.sin(x))
unary("tan", lambda x, y: 1.0 + y * y)
unary("erf", lambda x, y: (2.0 / math.sqrt(math.pi)) * xnp.exp(-x * x))
unary("abs", lambda x, y: xnp.sign(x))
self_transpose("negate", "reduce-precision")


@VJP.register("copy")
def _copy(ct, inst, ops, out):
    if inst.frontend_attribute(lax.STOP_GRADIENT) is not None:
        return [None]
    return [rebind(inst, [ct])]

zero_rule("sign", "floor", "ceil", "round-nearest-even", "round-nearest-afz", "is-finite",
          "compare", "iota", "constant", "rng", "rng-bit-generator", "partition-id",
          "replica-id", "after-all", "not", "and", "or", "xor", "popcnt",
          "count-leading-zeros", "shift-left", "shift-right-arithmetic",
          "shift-right-logical", "get-dimension-size")

binary("add", lambda ct, x, y, out: ct, lambda ct, x, y, out: ct)
binary("subtract", lambda ct, x, y, out: ct, lambda ct, x, y, out: -ct)
binary("multiply", lambda ct, x, y, out: ct * y, lambda ct, x, y, out: ct * x)
binary("divide", lambda ct, x, y, out: ct / y, lambda ct, x, y, out: -ct * out / y)
binary("power", lambda ct, x, y, out: ct * y * xnp.power(x, y - 1.0),
       lambda ct, x, y, out: ct * out * xnp.log(xnp.where(x > 0, x, 1.0)))
binary("atan2", lambda ct, x, y, out: ct * y / (x * x + y * y),
       lambda ct, x, y, out: -ct * x / (x * x + y * y))
binary("remainder", lambda ct, x, y, out: ct,
       lambda ct, x, y, out: -ct * xnp.round((x - out) / y))


def _chooser(ct, x, y, out):
    """max/min: the chosen operand gets the cotangent, ties split it evenly (as JAX)."""
    share = xnp.where(x == out, xnp.where(y == out, 0.5, 1.0), 0.0)
    return ct * xnp.astype(share, ct.dtype)


binary("maximum", _chooser, lambda ct, x, y, out: _chooser(ct, y, x, out))
binary("minimum", _chooser, lambda ct, x, y, out: _chooser(ct, y, x, out))


@VJP.register("select")
def _select(ct, inst, ops, out):
    zeros = lax.zeros_like(ct)
    return [None, lax.select(ops[0], ct, zeros), lax.select(ops[0], zeros, ct)]


@VJP.register("clamp")
def _clamp(ct, inst, ops, out):
    low, x, high = ops
    zeros = lax.zeros_like(ct)

    def fit(c, operand):
        return lax.reduce_sum(c, range(c.ndim)) if operand.ndim != c.ndim else c
    inside = xnp.logical_and(x >= low, x <= high)
    return [fit(xnp.where(x < low, ct, zeros), low), xnp.where(inside, ct, zeros),
            fit(xnp.where(x > high, ct, zeros), high)]


@VJP.register("convert")
def _convert(ct, inst, ops, out):
    operand = ops[0].aval.dtype
    return [lax.convert(ct, operand) if operand.is_float else None]


# ---------------------------------------------------------------------------------------------
# Shapes


@VJP.register("broadcast")
def _broadcast(ct, inst, ops, out):
    dims = inst.attrs.dimensions
    summed = [d for d in range(ct.ndim) if d not in dims]
    reduced = lax.reduce_sum(ct, summed) if summed else ct
    order = sorted(dims)
    return [lax.transpose(reduced, [order.index(d) for d in dims])]


@VJP.register("reshape", "bitcast")
def _reshape(ct, inst, ops, out):
    return [lax.reshape(ct, ops[0].shape)]


@VJP.register("transpose")
def _transpose(ct, inst, ops, out):
    return [lax.transpose(ct, np.argsort(inst.attrs.dimensions).tolist())]


@VJP.register("reverse")
def _reverse(ct, inst, ops, out):
    return [lax.rev(ct, inst.attrs.dimensions)]


@VJP.register("slice")
def _slice(ct, inst, ops, out):
    config = []
    for s, size, n_out in zip(inst.attrs.slice, ops[0].shape, ct.shape):
        high = size - s.start - n_out - max(n_out - 1, 0) * (s.stride - 1)
        config.append((s.start, high, s.stride - 1) if n_out else (0, size, 0))
    zero = lax.constant(0, ct.aval.dtype)
    if any(n == 0 for n in ct.shape):
        return [lax.zeros_like(ops[0])]
    return [lax.pad(ct, zero, config)]


@VJP.register("pad")
def _pad(ct, inst, ops, out):
    operand = ops[0]
    widen = [(max(-p.low, 0), max(-p.high, 0), 0) for p in inst.attrs.padding]
    if any(lo or hi for lo, hi, _ in widen):
        ct = lax.pad(ct, lax.constant(0, ct.aval.dtype), widen)
    starts = [max(p.low, 0) for p in inst.attrs.padding]
    limits = [n - max(p.high, 0) for n, p in zip(ct.shape, inst.attrs.padding)]
    strides = [p.interior + 1 for p in inst.attrs.padding]
    operand_ct = lax.slice(ct, starts, limits, strides)
    value_ct = lax.sub(lax.reduce_sum(out_ct_total(ct), [0]),
                       lax.reduce_sum(lax.reshape(operand_ct, (operand.size,)), [0]))
    return [operand_ct, value_ct]


def out_ct_total(ct: Value) -> Value:
    return lax.reshape(ct, (ct.size,))


@VJP.register("concatenate")
def _concatenate(ct, inst, ops, out):
    (dim,) = inst.attrs.dimensions
    cts, start = [], 0
    for operand in ops:
        size = operand.shape[dim]
        cts.append(lax.slice_in_dim(ct, start, start + size, 1, dim))
        start += size
    return cts


@VJP.register("dynamic-slice")
def _dynamic_slice(ct, inst, ops, out):
    operand, indices = ops[0], ops[1:]
    return [lax.dynamic_update_slice(lax.zeros_like(operand), ct, indices)] + \
        [None] * len(indices)


@VJP.register("dynamic-update-slice")
def _dynamic_update_slice(ct, inst, ops, out):
    update, indices = ops[1], ops[2:]
    return ([lax.dynamic_update_slice(ct, lax.zeros_like(update), indices),
             lax.dynamic_slice(ct, indices, update.shape)] + [None] * len(indices))


# ---------------------------------------------------------------------------------------------
# Tuples


@VJP.register("get-tuple-element")
def _get_tuple_element(ct, inst, ops, out):
    count = len(ops[0].aval.elements)
    return [tuple(ct if i == inst.attrs.index else None for i in range(count))]


@VJP.register("tuple")
def _tuple(ct, inst, ops, out):
    return list(ct)


@VJP.register("opt-barrier")
def _opt_barrier(ct, inst, ops, out):
    return [ct]


# ---------------------------------------------------------------------------------------------
# Reductions


@VJP.register("reduce")
def _reduce(ct, inst, ops, out):
    n = len(ops) // 2
    dims = inst.attrs.dimensions
    if n == 1:
        return [_reduce_one(ct, ops[0], dims, reducer_kind(inst.attrs.to_apply), out,
                            inst.attrs.to_apply.name), None]
    cts = ct if ct is not None else (None,) * n
    outs = [lax.get_tuple_element(out, k) for k in range(n)]
    kinds = componentwise_kinds(inst.attrs.to_apply)
    if kinds is not None:  # independent reductions that happen to share one instruction
        return [None if c is None else _reduce_one(c, x, dims, kind, y, kind)
                for c, x, kind, y in zip(cts, ops[:n], kinds, outs)] + [None] * n
    if reducer_kind(inst.attrs.to_apply) != "argmax-like":
        raise NotImplementedError(f"VJP of a variadic reduce with {inst.attrs.to_apply.name}: "
                                  "only component-wise and selecting (argmax-style) reducers")
    return _reduce_selection(cts, inst, ops[:n], ops[n:]) + [None] * n


def _reduce_one(ct, x, dims, kind, out, name):
    kept = [d for d in range(x.ndim) if d not in dims]

    def expand(v):  # JAX's: broadcast to the operand's type
        return sharding_types.with_type(lax.broadcast_in_dim(v, x.shape, kept), type_of(x))
    if kind == "add":
        return expand(ct)
    if kind in ("max", "min"):
        location = xnp.astype(x == expand(out), ct.dtype)
        counts = lax.reduce_sum(location, dims)
        return location * expand(ct / counts)
    if kind == "mul":
        return expand(ct * out) / x
    raise NotImplementedError(f"VJP of reduce with reducer {name}")


def _reduce_selection(cts, inst, xs, inits):
    """An argmax-style reduce picks one element per output: reduce once more with a position
    operand carried along (it follows the element whose values the reducer kept), then route
    each value output's cotangent to the winning position."""
    dims = inst.attrs.dimensions
    x = xs[0]
    kept = [d for d in range(x.ndim) if d not in dims]
    position, stride = None, 1
    for d in reversed(dims):
        term = lax.mul(lax.iota(S32, x.shape, d), lax.full(x.shape, stride, S32))
        position = term if position is None else lax.add(position, term)
        stride *= x.shape[d]
    result = bind("reduce", *xs, position, *inits, lax.constant(-1, S32), dimensions=dims,
                  to_apply=_selection_with_position(inst.attrs.to_apply, len(xs)))
    winner = lax.broadcast_in_dim(lax.get_tuple_element(result, len(xs)), x.shape, kept)
    hit = position == winner
    return [None if c is None or not c.aval.dtype.is_float else
            lax.select(hit, lax.broadcast_in_dim(c, x.shape, kept), lax.zeros_like(operand))
            for c, operand in zip(cts, xs)]


def _selection_with_position(computation, n: int):
    """The reducer with an s32 position pair added (after the lhs and the rhs operands): the
    result's position is the lhs one when every output equals the lhs operand."""
    b = Builder(computation.name)
    params = computation.parameters
    lhs = [b.parameter(p.shape, p.name) for p in params[:n]]
    lhs_position = b.parameter(ArrayShape(S32, ()), "lhs.position")
    rhs = [b.parameter(p.shape, p.name) for p in params[n:]]
    rhs_position = b.parameter(ArrayShape(S32, ()), "rhs.position")
    outputs = list(b.inline(computation, lhs + rhs).operands)
    is_lhs = None
    for k, output in enumerate(outputs):
        equal = b.compare(output, lhs[k], direction=ComparisonDirection.EQ)
        is_lhs = equal if is_lhs is None else b.op("and", is_lhs, equal)
    root = b.tuple(*outputs, b.select(is_lhs, lhs_position, rhs_position))
    return b.build(root, fresh_name("region_select_position"))
