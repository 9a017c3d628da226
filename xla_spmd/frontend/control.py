"""Structured control flow: `while_loop`, `fori_loop`, `scan`, `cond`, `switch`.

Each body or branch is traced into its own computation (a nested trace). Values it closes
over become explicit operands, since HLO computations cannot capture: a loop appends them to
its state tuple (passed through unchanged by the body), a branch to its operand tuple.
`fori_loop` with static bounds (and `scan`) mark the `while` with its trip count
(``backend_config={"known_trip_count":{"n":"N"}}``, as XLA does), which autodiff needs.

>>> import numpy as np
>>> float(fori_loop(0, 4, lambda i, x: x * 2.0, np.float32(1.0)))
16.0
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from xla_spmd.errors import XlaSpmdError
from xla_spmd.frontend import lax
from xla_spmd.frontend import sharding_types as types
from xla_spmd.frontend.dtypes import jax_result_type, result_type_of
from xla_spmd.frontend.numpy_core import asarray, astype, less
from xla_spmd.frontend.pytree import tree_flatten, tree_unflatten
from xla_spmd.frontend.tracing import (
    ArrayLike,
    Value,
    aval_of,
    bind,
    fresh_name,
    repack,
    trace_computation,
)
from xla_spmd.ir import S32, Instruction, TupleShape
from xla_spmd.ir.custom_calls import SHARDING
from xla_spmd.sharding import TensorSharding


def _match(value, aval, what: str):
    """`value` converted to the loop-state type `aval` (weak values adopt it when it holds
    them: a weak s32 in an f32 state, not a weak f32 in an s32 one)."""
    value = asarray(value)
    if value.aval.same_type(aval):
        return value
    if isinstance(aval, TupleShape) or value.shape != aval.dims or not value.weak_type or \
            result_type_of([(aval.dtype, False), (value.aval.dtype, True)])[0] is not aval.dtype:
        raise XlaSpmdError(f"{what}: expected {aval}, got {value.aval} (loop state and branch "
                           "results must keep their shapes and types)")
    return lax.convert(value, aval.dtype)


def _typed(tracers, weak_types) -> list:
    """Loop-state parameters with the weak types of the state they stand for."""
    for tracer, weak in zip(tracers, weak_types):
        tracer.weak_type = weak
    return list(tracers)


def _probe(fn: Callable, leaves: list) -> list:
    """What ``fn(*state)`` returns for state like `leaves` (traced, the trace discarded)."""
    weak_types = [leaf.weak_type for leaf in leaves]
    found = {}

    def probe(*state):
        found["outs"] = [asarray(o) for o in fn(*_typed(state, weak_types))]
        return []

    in_types, in_known = types.types_of(leaves)
    trace_computation(probe, [leaf.aval for leaf in leaves], fresh_name("probe"),
                      shardings=in_types, known=in_known)
    return found["outs"]


def promote_weak_state(fn: Callable, leaves: list) -> list:
    """Loop state with its weakly typed leaves promoted where `fn` (``fn(*state) -> new
    state``) changes their type, as JAX does: ``fori_loop(0, 3, lambda i, c: c + 0.5, 0)``
    carries an f32, not the s32 of the Python int 0. A promoted leaf becomes strongly typed
    with JAX's result type of the two (a weak result is its kind's default type)."""
    for _ in range(len(leaves) + 1):
        if not any(leaf.weak_type for leaf in leaves):
            return leaves
        changed = False
        for k, (leaf, out) in enumerate(zip(leaves, _probe(fn, leaves))):
            if leaf.weak_type and not isinstance(out.aval, TupleShape) and \
                    out.aval.dtype is not leaf.aval.dtype:
                dtype = jax_result_type([(leaf.aval.dtype, True),
                                         (out.aval.dtype, out.weak_type)])
                if dtype is not leaf.aval.dtype:
                    leaves[k] = lax.convert(leaf, dtype)
                    leaves[k].weak_type = False
                    changed = True
        if not changed:
            return leaves
    return leaves


def trip_count_extras(n: int) -> tuple:
    return (("backend_config", json.dumps({"known_trip_count": {"n": str(n)}},
                                          separators=(",", ":"))),)


def known_trip_count(inst: Instruction) -> int | None:
    """The trip count recorded on a `while` instruction, or None."""
    for key, value in inst.extras:
        if key == "backend_config":
            match = re.search(r'"known_trip_count"\s*:\s*\{\s*"n"\s*:\s*"(\d+)"', value)
            if match:
                return int(match.group(1))
    return None


def while_flat(cond_fn: Callable, body_fn: Callable, leaves: Sequence,
               trip_count: int | None = None, what: str = "while_loop body",
               first_carry: int = 0) -> list:
    """The `while` of flat state `leaves`: ``cond_fn(*state) -> pred``,
    ``body_fn(*state) -> list of new state``.

    Sharding types (Explicit mesh axes): the body and condition see the state with its
    types, the body must keep them (JAX's "carry input and carry output must have equal
    types"; `what` names the body, carry k is reported as path ``[k - first_carry]``), and
    the results have the state's types."""
    leaves = promote_weak_state(body_fn, [asarray(x) for x in leaves])
    avals = [x.aval for x in leaves]
    weak_types = [x.weak_type for x in leaves]
    in_types, in_known = types.types_of(leaves)
    n = len(avals)

    def body_checked(*state):
        outs = list(body_fn(*_typed(state, weak_types)))
        if len(outs) != n:
            raise XlaSpmdError(f"loop body returned {len(outs)} values, expected {n}")
        outs = [_match(o, a, f"loop body result {i}") for i, (o, a) in
                enumerate(zip(outs, avals))]
        types.check_carry(what, state, in_types, in_known, outs,
                          [f"[{k - first_carry}]" for k in range(n)])
        return outs

    cond_trace, cond_outs = trace_computation(lambda *s: [cond_fn(*_typed(s, weak_types))],
                                              avals, fresh_name("cond"), shardings=in_types,
                                              known=in_known)
    body_trace, body_outs = trace_computation(body_checked, avals, fresh_name("body"),
                                              shardings=in_types, known=in_known)
    cond_caps, body_caps = cond_trace.captures, body_trace.captures
    shapes = avals + [aval_of(c) for c in cond_caps] + [aval_of(c) for c in body_caps]
    first_body_cap = n + len(cond_caps)
    cond = repack(cond_trace, cond_outs, list(range(first_body_cap)), shapes,
                  tuple_root=False)
    body = repack(body_trace, body_outs,
                  list(range(n)) + list(range(first_body_cap, len(shapes))), shapes,
                  extra_outputs=range(n, len(shapes)))
    state = lax.make_tuple(*leaves, *cond_caps, *body_caps)
    extras = trip_count_extras(trip_count) if trip_count is not None else ()
    out = bind("while", state, condition=cond, body=body, extras=extras)
    return _typed(typed_elements(out, list(zip(in_types, in_known))), weak_types)


def typed_elements(out: Value, found: Iterable[tuple[TensorSharding | None, bool]]) -> list:
    """The elements of a loop's or branch's tuple result, with their types (`found`: one
    (type or None, known) per element)."""
    results = []
    for i, (typed, is_known) in enumerate(found):
        if typed is not None:
            results.append(bind("get-tuple-element", out, index=i, sharding=typed))
        else:
            results.append(lax.get_tuple_element(out, i))
            if is_known:
                types.mark_known(results[-1])
    return results


def while_loop(cond_fun: Callable, body_fun: Callable, init_val: Any) -> Any:
    """``while cond_fun(val): val = body_fun(val)`` over a pytree `init_val`."""
    leaves, tree = tree_flatten(init_val)

    def body(*state):
        out_leaves, out_tree = tree_flatten(body_fun(tree_unflatten(tree, state)))
        if out_tree != tree:
            raise XlaSpmdError(f"while_loop body returned structure {out_tree}, expected "
                               f"{tree}")
        return out_leaves

    outs = while_flat(lambda *s: cond_fun(tree_unflatten(tree, s)), body, leaves,
                      what="while_loop body")
    return tree_unflatten(tree, outs)


def fori_loop(lower: ArrayLike, upper: ArrayLike, body_fun: Callable, init_val: Any) -> Any:
    """``for i in range(lower, upper): val = body_fun(i, val)``; static bounds give a known
    trip count (differentiable)."""
    static = isinstance(lower, int) and isinstance(upper, int)
    leaves, tree = tree_flatten(init_val)
    counter = lax.convert(asarray(lower), S32) if isinstance(lower, Value) else \
        asarray(lax.constant(lower, S32))
    stop = upper

    def cond(i, *state):
        return less(i, stop if not isinstance(stop, int) else lax.constant(stop, S32))

    def body(i, *state):
        out_leaves, out_tree = tree_flatten(body_fun(i, tree_unflatten(tree, state)))
        if out_tree != tree:
            raise XlaSpmdError(f"fori_loop body returned structure {out_tree}, expected "
                               f"{tree}")
        return [lax.add(i, lax.constant(1, S32)), *out_leaves]

    outs = while_flat(cond, body, [counter, *leaves],
                      trip_count=max(upper - lower, 0)
                      if isinstance(lower, int) and isinstance(upper, int) else None,
                      what="scan body" if static else "while_loop body", first_carry=1)
    return tree_unflatten(tree, outs[1:])


def index_in_dim(x: ArrayLike, i: ArrayLike, axis: int = 0) -> Value:
    """``x[i]`` along `axis` for a traced index, dropping the dim."""
    sliced = lax.dynamic_slice_in_dim(x, i, 1, axis)
    return lax.reshape(sliced, [n for d, n in enumerate(x.shape) if d != axis])


def _scan_slice(xs, i):
    """Step `i` of `scan`'s input `xs`, typed as JAX's: the type of `xs` without its leading
    dim (which may be sharded)."""
    typed = types.type_of(xs)
    if typed is None:
        return index_in_dim(xs, i)
    with types.suspended():
        x = index_in_dim(xs, i)
    return types.typed_as(x, types.unstacked(typed, xs.ndim))


def scan(f: Callable, init: Any, xs: Any = None, length: int | None = None, reverse: bool = False
         ) -> tuple[Any, Any]:
    """``carry, y = f(carry, x)`` over the leading axis of `xs`; returns (carry, stacked ys).

    Lowered to a `fori_loop` that slices `xs` and writes `ys` with dynamic slices.
    """
    x_leaves, x_tree = tree_flatten(xs)
    x_leaves = [asarray(x) for x in x_leaves]
    if length is None:
        if not x_leaves:
            raise XlaSpmdError("scan needs xs or length")
        length = x_leaves[0].shape[0]
    carry_leaves, carry_tree = tree_flatten(init)

    def step(carry, i):
        x = tree_unflatten(x_tree, [_scan_slice(xl, i) for xl in x_leaves])
        return f(tree_unflatten(carry_tree, carry), x)

    def carry_step(i, *carry):
        return [i, *tree_flatten(step(list(carry), i)[0])[0]]

    index0 = asarray(lax.constant(0, S32))
    carry_leaves = promote_weak_state(carry_step, [index0, *map(asarray, carry_leaves)])[1:]

    # Trace once to learn the shapes of y (the trace is discarded).
    y_info = {}

    def probe(i, *carry):
        new_carry, y = step(list(carry), i)
        y_leaves, y_info["tree"] = tree_flatten(y)
        y_info["avals"] = [aval_of(asarray(v)) for v in y_leaves]
        y_info["types"] = [types.type_of(asarray(v)) for v in y_leaves]
        return []

    carry_types, carry_known = types.types_of(carry_leaves)
    trace_computation(probe, [aval_of(lax.constant(0, S32))] + [c.aval for c in carry_leaves],
                      fresh_name("probe"), shardings=[None, *carry_types],
                      known=[True, *carry_known])
    y_avals, y_tree = y_info["avals"], y_info["tree"]
    # The stacked outputs have the per-step outputs' types with an unsharded leading dim.
    ys0 = [_typed_buffer(lax.full((length,) + a.dims, 0, a.dtype), types.stacked(t, a.rank))
           for a, t in zip(y_avals, y_info["types"])]

    def body(j, state):
        carry, ys = state
        i = lax.sub(lax.constant(length - 1, S32), j) if reverse else j
        new_carry, y = step(carry, i)
        new_carry_leaves, new_tree = tree_flatten(new_carry)
        if new_tree != carry_tree:
            raise XlaSpmdError(f"scan carry changed structure: {carry_tree} -> {new_tree}")
        y_leaves = tree_flatten(y)[0]
        ys = [lax.dynamic_update_slice_in_dim(buf, lax.reshape(asarray(v), (1,) + a.dims),
                                              i, 0)
              for buf, v, a in zip(ys, y_leaves, y_avals)]
        return [_match(c, a.aval, "scan carry") for c, a in
                zip(new_carry_leaves, carry_leaves)], ys

    carry, ys = fori_loop(0, length, body, (carry_leaves, ys0))
    return tree_unflatten(carry_tree, carry), tree_unflatten(y_tree, ys)


def _typed_buffer(buffer, typed):
    if typed is None:
        return buffer
    return bind("custom-call", buffer, shape=buffer.aval, custom_call_target=SHARDING,
                sharding=typed)


def switch_flat(index: ArrayLike, branch_fns: Sequence[Callable], leaves: Sequence,
                what: str = "switch") -> list:
    """A `conditional` running ``branch_fns[index](*leaves)`` (each returns a flat list).
    Sharding types: the branches see the operands with their types, must give results of
    equal types (JAX's "branches must have equal output types"), and the results have
    them."""
    leaves = [asarray(x) for x in leaves]
    avals = [x.aval for x in leaves]
    in_types, in_known = types.types_of(leaves)
    branch_outs: list = []

    def run(fn):
        def traced(*a):
            outs = [asarray(o) for o in fn(*a)]
            branch_outs.append(outs)
            return outs
        return traced

    traced = [trace_computation(run(fn), avals, fresh_name("branch"), shardings=in_types,
                                known=in_known) for fn in branch_fns]
    out_avals = [o.shape for o in traced[0][1]]
    for j, (_, outs) in enumerate(traced):
        if [o.shape for o in outs] != out_avals:
            raise XlaSpmdError(f"branch {j} returns ({', '.join(str(o.shape) for o in outs)}), "
                               f"branch 0 returns ({', '.join(map(str, out_avals))})")
    found = types.check_branches(what, branch_outs)
    computations, operands = [], []
    for trace, outs in traced:
        shapes = avals + [aval_of(c) for c in trace.captures]
        computations.append(repack(trace, outs, list(range(len(shapes))), shapes))
        operands.append(lax.make_tuple(*leaves, *trace.captures))
    index = lax.convert(asarray(index), S32)
    out = bind("conditional", index, *operands, branch_computations=tuple(computations))
    return typed_elements(out, found)


def switch(index: ArrayLike, branches: Sequence[Callable], *operands: Any) -> Any:
    """``branches[index](*operands)`` (an index out of range runs the last branch)."""
    leaves, tree = tree_flatten(operands)
    out_tree = {}

    def flat(fn):
        def run(*xs):
            out_leaves, out_tree["tree"] = tree_flatten(fn(*tree_unflatten(tree, xs)))
            return out_leaves
        return run

    outs = switch_flat(index, [flat(b) for b in branches], leaves,
                       what="cond" if len(branches) == 2 else "switch")
    return tree_unflatten(out_tree["tree"], outs)


def cond(pred: ArrayLike, true_fun: Callable, false_fun: Callable, *operands: Any) -> Any:
    """``true_fun(*operands) if pred else false_fun(*operands)``, both traced."""
    return switch(astype(pred, S32.numpy), [false_fun, true_fun], *operands)
