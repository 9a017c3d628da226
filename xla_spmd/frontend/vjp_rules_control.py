"""VJP rules of control flow: `while` with a known trip count, `conditional`, `call`.

Loops (fori_loop, scan): the rule emits a forward loop that stacks the loop *state* of every
iteration (not every intermediate: one checkpoint per iteration), then a reverse loop that,
for i = n-1 .. 0, re-runs the body on the saved state i and pulls the state cotangent back
through it. Memory is O(n * state); compute is two forward passes. Loops without a known
trip count (a plain while_loop) are not differentiable, as in JAX.

Conditionals: a `conditional` on the same index whose branch j is the VJP of branch j.
Calls (and shard_map bodies): a `call` to the VJP of the callee (forward recomputed inside),
so a manual region's backward pass is again a manual region.
"""

from __future__ import annotations

from xla_spmd.errors import XlaSpmdError
from xla_spmd.frontend import lax
from xla_spmd.frontend.ad import (
    CUSTOM_RULE,
    CUSTOM_RULES,
    VJP,
    backward,
    differentiable,
    flat_cotangent,
    linearize_computation,
    unflat_cotangent,
)
from xla_spmd.frontend.control import fori_loop, index_in_dim, known_trip_count, switch_flat
from xla_spmd.frontend.parallel import Manual
from xla_spmd.frontend.shard_map import is_typed, psum_replicated, spec_axes
from xla_spmd.frontend.tracing import (
    bind,
    declared_meshes,
    finish,
    fresh_name,
    trace_computation,
)
from xla_spmd.frontend.vma import declare, vma_of
from xla_spmd.ir import TupleShape
from xla_spmd.ir.batch_norm import BATCH_NORM_OPS, expand_instruction
from xla_spmd.ir.custom_calls import MANUAL_BODY
from xla_spmd.sharding.manual import manual_region


def _value_leaves(value, aval) -> list:
    """The array leaves of a (nested) tuple value."""
    if not isinstance(aval, TupleShape):
        return [value]
    return [leaf for k, element in enumerate(aval.elements)
            for leaf in _value_leaves(lax.get_tuple_element(value, k), element)]


def _pack(leaves, aval):
    """Inverse of `_value_leaves` (consumes an iterator)."""
    if not isinstance(aval, TupleShape):
        return next(leaves)
    return lax.make_tuple(*[_pack(leaves, element) for element in aval.elements])


def _ct_leaves(ct, aval) -> list:
    """The leaves of a cotangent structure, None (zero) kept."""
    if not isinstance(aval, TupleShape):
        return [ct]
    parts = ct if ct is not None else (None,) * len(aval.elements)
    return [leaf for c, e in zip(parts, aval.elements) for leaf in _ct_leaves(c, e)]


def _leaf_avals(aval) -> list:
    if not isinstance(aval, TupleShape):
        return [aval]
    return [leaf for element in aval.elements for leaf in _leaf_avals(element)]


@VJP.register("while")
def _while(ct, inst, ops, out):
    n = known_trip_count(inst)
    if n is None:
        raise XlaSpmdError(f"cannot differentiate {inst.name}: a while loop without a known "
                           "trip count (use fori_loop with static bounds, or scan)")
    body = inst.attrs.body
    shapes = _leaf_avals(inst.shape)  # nested tuple state is flattened to its leaves
    state0 = _value_leaves(ops[0], inst.shape)
    stacks0 = [lax.full((max(n, 1),) + s.dims, 0, s.dtype) for s in shapes]

    def record(i, carry):
        state, stacks = carry
        stacks = [lax.dynamic_update_slice_in_dim(st, lax.reshape(x, (1,) + x.shape), i, 0)
                  for st, x in zip(stacks, state)]
        new_state = linearize_computation(body, [_pack(iter(state), inst.shape)])[0]
        return _value_leaves(new_state, inst.shape), stacks

    _, stacks = fori_loop(0, n, record, (state0, stacks0))
    float_positions = [k for k, s in enumerate(shapes) if differentiable(s)]
    cts = _ct_leaves(ct, inst.shape)
    ct_leaves = [cts[k] if cts[k] is not None else lax.full(shapes[k].dims, 0, shapes[k].dtype)
                 for k in float_positions]

    def reverse(j, carry):
        i = lax.sub(lax.constant(n - 1, "int32"), j)
        state = [index_in_dim(st, i) for st in stacks]
        _, env = linearize_computation(body, [_pack(iter(state), inst.shape)])
        root_ct = [None] * len(shapes)
        for k, c in zip(float_positions, carry):
            root_ct[k] = c
        (state_ct,) = backward(body, env, unflat_cotangent(root_ct, inst.shape))
        state_ct = _ct_leaves(state_ct, inst.shape)
        return [state_ct[k] if state_ct[k] is not None else lax.zeros_like(c)
                for k, c in zip(float_positions, carry)]

    final = fori_loop(0, n, reverse, ct_leaves)
    result = [None] * len(shapes)
    for k, c in zip(float_positions, final):
        result[k] = c
    return [unflat_cotangent(result, inst.shape)]


@VJP.register("conditional")
def _conditional(ct, inst, ops, out):
    a = inst.attrs
    index, operands = ops[0], list(ops[1:])
    if a.branch_computations is not None:
        branches, operand_of = a.branch_computations, list(range(len(operands)))
    else:  # pred selector: branch 0 is false (its operand is the second), 1 is true
        branches, operand_of = (a.false_computation, a.true_computation), [1, 0]
        index = lax.convert(index, "int32")
    ct_leaves = flat_cotangent(ct, inst.shape)
    m = len(operands)

    def branch_vjp(j):
        def fn(*args):
            primal, cts = args[:m], args[m:]
            _, env = linearize_computation(branches[j], [primal[operand_of[j]]])
            (operand_ct,) = backward(branches[j], env, unflat_cotangent(cts, inst.shape))
            leaves = []
            for k in range(m):
                leaves += flat_cotangent(operand_ct if k == operand_of[j] else None,
                                         operands[k].aval)
            return leaves
        return fn

    leaves = switch_flat(index, [branch_vjp(j) for j in range(len(branches))],
                         operands + ct_leaves)
    iterator = iter(leaves)
    return [None] + [unflat_cotangent(iterator, o.aval) for o in operands]


@VJP.register("call")
def _call(ct, inst, ops, out):
    callee = inst.attrs.to_apply
    ct_leaves = flat_cotangent(ct, inst.shape)
    custom = inst.frontend_attribute(CUSTOM_RULE)
    if custom is not None:  # custom_vjp / custom_jvp: the user's rule, on this trace's values
        return CUSTOM_RULES[custom](ct_leaves, list(ops))
    m = len(ops)
    # A shard_map body call: the VJP sums each operand's cotangent over the manual axes
    # that operand is replicated over (typed: where the body broadcast it, see vma.py).
    region = manual_region(inst, declared_meshes())
    typed = region is not None and is_typed(inst)

    def pullback(*args):
        primal, cts = args[:m], args[m:]
        every = frozenset(region.axes) if region is not None and typed else frozenset()
        if region is not None and typed:  # operands vary as their shardings say
            declare(args[0].trace, {id(a.inst): every if s is None else spec_axes(s) & every
                                    for a, s in zip(primal, region.in_shardings)})
        root, env = linearize_computation(callee, list(primal))
        if typed:
            outputs = callee.root.operands if callee.root.opcode == "tuple" else [callee.root]
            declare(args[0].trace, {id(c.inst): vma_of(env[id(o)], every)
                                    for c, o in zip(cts, outputs)})
        operand_cts = backward(callee, env, unflat_cotangent(cts, inst.shape))
        leaves = []
        for c, o in zip(operand_cts, ops):
            leaves += flat_cotangent(c, o.aval)
        if region is None:
            return leaves
        # typed: the implicit broadcasts of invariant operands were transposed on the way
        return leaves if typed else psum_replicated(leaves, region)

    name = MANUAL_BODY if callee.name.startswith(MANUAL_BODY) else "vjp_call"
    manual = None if region is None else Manual(region.mesh, region.axes, check_vma=typed)
    trace, outputs = trace_computation(pullback, [o.aval for o in ops] +
                                       [c.aval for c in ct_leaves], fresh_name(name),
                                       manual=manual)
    if trace.captures:
        raise NotImplementedError("VJP of a call whose pullback captures outer values")
    # A manual body's backward body is a manual region too: its operands (the primal
    # operands, then the result cotangents) come through boundaries, as the forward ones.
    computation = finish(trace, outputs, tuple_root=True)
    result = bind("call", *ops, *ct_leaves, to_apply=computation,
                  frontend_attributes=inst.frontend_attributes)
    leaves = [lax.get_tuple_element(result, i) for i in range(len(outputs))]
    iterator = iter(leaves)
    return [unflat_cotangent(iterator, o.aval) for o in ops]


@VJP.register(*BATCH_NORM_OPS)
def _batch_norm(ct, inst, ops, out):
    """Batch norm's VJP: the VJP of its primitive expansion (the spec's decomposition),
    recomputed on the operands, so every result's cotangent (batch statistics too) counts."""
    expanded = expand_instruction(inst)
    _, env = linearize_computation(expanded, list(ops))
    return backward(expanded, env, ct)
