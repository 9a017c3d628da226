"""Reference evaluation rules: control flow, tuples, async wrappers, custom calls, linalg.

Invariants (op_semantics §14, §16): `while` runs ``state = body(state)`` while
``cond(state)``, failing after `Context.max_loop_iterations` (the process option
``max_loop_iterations``) and stopping when `Context.stop` is set; `conditional` runs exactly
one branch (an index outside ``[0, N)`` runs the last one); `call` and `fusion` evaluate their
computation; `opt-barrier`, `copy-start`/`copy-done` and the sharding markers are identities;
`async-start` evaluates its wrapped computation and `async-done` returns that result.
Custom calls go through `CUSTOM_CALLS`, a registry keyed by target name; an unknown target
fails naming it.

>>> from xla_spmd.ir import Builder, ArrayShape, F32, Module
>>> from xla_spmd.backends.reference import evaluate
>>> b = Builder("m")
>>> x = b.parameter(ArrayShape(F32, (2,)), "x")
>>> m = Module.from_entry("m", b.build(b.custom_call(x, custom_call_target="Sharding",
...                                                 shape=x.shape)))
>>> evaluate(m, [np.ones(2, np.float32)])
array([1., 1.], dtype=float32)
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

import xla_spmd.config as config
from xla_spmd.backends.reference.evaluator import (
    EVALUATE,
    TOKEN_VALUE,
    Context,
    coerce_argument,
    stopped_error,
    zeros_of,
)
from xla_spmd.backends.reference.reduction import top_k
from xla_spmd.errors import CommunicationError, EvaluationError
from xla_spmd.ir import Instruction, Registry, TupleShape
from xla_spmd.ir.custom_calls import (
    CALLBACK_KEY,
    CALLBACK_MODE,
    DEBUG_CALLBACK,
    GROUPS,
    GSPMD_BOUNDARIES,
    MANUAL_BOUNDARIES,
    MARKERS,
    is_target,
)

# ---------------------------------------------------------------------------------------------
# Control flow


@EVALUATE.register("while")
def while_rule(inst: Instruction, operands: list, ctx: Context):
    (state,) = operands
    condition, body = inst.attrs.condition, inst.attrs.body
    stop = ctx.stop
    timeout = ctx.loop_timeout
    deadline = None if timeout is None else time.monotonic() + timeout
    for iteration in range(ctx.max_loop_iterations):
        if stop is not None and stop.is_set():
            raise stopped_error(f"while {inst.name} (iteration {iteration})")
        if deadline is not None and time.monotonic() > deadline:
            assert timeout is not None
            raise CommunicationError(
                f"the collective after while {inst.name} timed out after {timeout:g} s: "
                f"device {ctx.device_id} did not arrive (it is still in the loop, iteration "
                f"{iteration}). If it is only slow, raise the timeout: "
                + config.how_to_set("collective_timeout", "SECONDS") + " ('inf' waits forever)")
        if not bool(ctx.call(condition, [state])):
            return state
        state = ctx.call(body, [state])
    cap = ctx.max_loop_iterations
    where = f" on device {ctx.device_id}" if ctx.num_partitions * ctx.num_replicas > 1 else ""
    raise EvaluationError(
        f"while {inst.name}{where}: condition {condition.name} still true after {cap} "
        "iterations, "
        "the cap on loop iterations; if the loop is meant to run longer, raise the cap: pass "
        "--max-loop-iterations N to xla-spmd, or " + config.how_to_set("max_loop_iterations", "N"))


@EVALUATE.register("conditional")
def conditional_rule(inst: Instruction, operands: list, ctx: Context):
    selector, *arguments = operands
    attrs = inst.attrs
    if attrs.branch_computations:
        branches = attrs.branch_computations
        index = int(selector)
        if not 0 <= index < len(branches):
            index = len(branches) - 1
    else:
        branches = (attrs.true_computation, attrs.false_computation)
        index = 0 if bool(selector) else 1
    branch = branches[index]
    assert branch is not None  # the verifier checks a conditional's computations
    return ctx.call(branch, [arguments[index]])


@EVALUATE.register("call")
def call_rule(inst: Instruction, operands: list, ctx: Context):
    return ctx.call(inst.attrs.to_apply, operands)


@EVALUATE.register("fusion")
def fusion_rule(inst: Instruction, operands: list, ctx: Context):
    return ctx.call(inst.attrs.calls, operands)


# ---------------------------------------------------------------------------------------------
# Tuples and async wrappers


@EVALUATE.register("tuple")
def tuple_rule(inst: Instruction, operands: list, ctx: Context):
    return tuple(operands)


@EVALUATE.register("get-tuple-element")
def get_tuple_element_rule(inst: Instruction, operands: list, ctx: Context):
    return operands[0][inst.attrs.index]


@EVALUATE.register("opt-barrier")
def identity_rule(inst: Instruction, operands: list, ctx: Context):
    return operands[0]


@EVALUATE.register("copy-start")
def copy_start_rule(inst: Instruction, operands: list, ctx: Context):
    # XLA's copy-start returns (destination, source, context); done takes the destination.
    (value,) = operands
    if isinstance(inst.shape, TupleShape) and len(inst.shape.elements) >= 2:
        return (value, value) + tuple(zeros_of(s) for s in inst.shape.elements[2:])
    return value


@EVALUATE.register("copy-done")
def copy_done_rule(inst: Instruction, operands: list, ctx: Context):
    (value,) = operands
    return value[0] if isinstance(value, tuple) and not _matches(value, inst.shape) else value


def _matches(value, shape) -> bool:
    if isinstance(shape, TupleShape):
        return isinstance(value, tuple) and len(value) == len(shape.elements) and all(
            _matches(v, s) for v, s in zip(value, shape.elements))
    return isinstance(value, np.ndarray) and value.shape == shape.dims


@EVALUATE.register("async-start")
def async_start_rule(inst: Instruction, operands: list, ctx: Context):
    """Run the wrapped computation now; the value is XLA's async context
    ``((operands...), result, extra state...)``."""
    result = ctx.call(inst.attrs.calls, operands)
    extra = inst.shape.elements[2:] if isinstance(inst.shape, TupleShape) else ()
    return (tuple(operands), result) + tuple(zeros_of(s) for s in extra)


@EVALUATE.register("async-done")
def async_done_rule(inst: Instruction, operands: list, ctx: Context):
    return operands[0][1]


# ---------------------------------------------------------------------------------------------
# Host transfers: the device's queues (`Context.feeds`)


@EVALUATE.register("infeed")
def infeed_rule(inst: Instruction, operands: list, ctx: Context):
    """The oldest value of the device's infeed queue, checked against the data's shape."""
    if ctx.feeds is None or not ctx.feeds.infeed:
        raise EvaluationError(f"infeed {inst.name}: the infeed queue of device "
                              f"{ctx.device_id} is empty (give the run its feeds: a "
                              "Feeds per device holding one value per infeed)")
    assert isinstance(inst.shape, TupleShape)  # (data, token[]), as the op table infers
    data = coerce_argument(ctx.feeds.infeed.popleft(), inst.shape.elements[0],
                           f"infeed {inst.name}'s value")
    return (data, TOKEN_VALUE)


@EVALUATE.register("outfeed")
def outfeed_rule(inst: Instruction, operands: list, ctx: Context):
    """Appends ``(name, data)`` to the device's outfeed list (nowhere without feeds)."""
    if ctx.feeds is not None:
        data = operands[0]
        copied = tuple(np.array(v, copy=True) for v in data) if isinstance(data, tuple) \
            else np.array(data, copy=True)
        ctx.feeds.outfeed.append((inst.name, copied))
    return TOKEN_VALUE


# ---------------------------------------------------------------------------------------------
# Custom calls

CUSTOM_CALLS = Registry("custom-call evaluation", known=is_target,
                        what="custom-call target of ir/custom_calls.py")
"""Evaluation rules of custom-call targets: ``rule(inst, operands, ctx) -> value``."""


@EVALUATE.register("custom-call")
def custom_call_rule(inst: Instruction, operands: list, ctx: Context):
    target = inst.attrs.custom_call_target
    if target not in CUSTOM_CALLS:
        raise EvaluationError(f"custom-call {inst.name}: no reference rule for target "
                              f"{target!r}; known targets: {', '.join(sorted(CUSTOM_CALLS))}")
    return CUSTOM_CALLS[target](inst, operands, ctx)


@CUSTOM_CALLS.register(*sorted(MARKERS | GROUPS))
def marker_rule(inst: Instruction, operands: list, ctx: Context):
    """Value-preserving markers: the operand, or the operands' tuple, or nothing."""
    if isinstance(inst.shape, TupleShape) and not inst.shape.elements:
        return ()  # e.g. xla.sdy.ShardingGroup with no result
    if len(operands) == 1 and not (isinstance(inst.shape, TupleShape)
                                   and not isinstance(operands[0], tuple)):
        return operands[0]
    if isinstance(inst.shape, TupleShape) and len(inst.shape.elements) == len(operands):
        return tuple(operands)
    raise EvaluationError(f"custom-call {inst.name} ({inst.attrs.custom_call_target}): "
                          f"expected one operand of the result shape {inst.shape}, got "
                          f"{len(operands)} operands")


@CUSTOM_CALLS.register(*sorted(MANUAL_BOUNDARIES | GSPMD_BOUNDARIES))
def manual_boundary_rule(inst: Instruction, operands: list, ctx: Context):
    """Entry/exit of a manual region: on one device global and local shapes agree."""
    results = inst.shape.elements if isinstance(inst.shape, TupleShape) else (inst.shape,)
    if len(results) != len(operands) or any(
            np.shape(v) != s.dims for v, s in zip(operands, results)):
        raise EvaluationError(
            f"custom-call {inst.name} ({inst.attrs.custom_call_target}) changes the shape "
            f"{[list(np.shape(v)) for v in operands]} -> {inst.shape}: a manual (shard_map) "
            "region only means something once partitioned; run the SPMD partitioner first "
            "and evaluate the per-device program")
    return tuple(operands) if isinstance(inst.shape, TupleShape) else operands[0]


HOST_CALLBACKS: dict[str, Callable[..., object]] = {}
"""The process's host callbacks (``xs.debug.callback``): ``CALLBACK_KEY`` attribute -> function
of the operands' numpy values. The frontend fills it while tracing."""


@CUSTOM_CALLS.register(DEBUG_CALLBACK)
def debug_callback_rule(inst: Instruction, operands: list, ctx: Context):
    """Call the host function the instruction names with its operands' values: on every
    device (mode ``each``) or on device 0 alone (``once``, the operands being global)."""
    key = inst.frontend_attribute(CALLBACK_KEY)
    function = None if key is None else HOST_CALLBACKS.get(key)
    if function is None:
        raise EvaluationError(f"custom-call {inst.name} ({DEBUG_CALLBACK}): no host callback "
                              f"{key!r} in this process (callbacks live in the process that "
                              "traced the program; a program read from a file has none)")
    if inst.frontend_attribute(CALLBACK_MODE) == "each" or ctx.device_id == 0:
        function(*[np.array(value) for value in operands])
    return ()


@CUSTOM_CALLS.register("mhlo.topk", "TopK")
def topk_target_rule(inst: Instruction, operands: list, ctx: Context):
    """JAX's `mhlo.topk` and XLA CPU's `TopK` (its comparator is greater-than): the k largest
    along the last dim, ties by lower index."""
    values, indices = top_k(operands[0], inst.shape.elements[0].dims[-1])
    return values, indices.astype(inst.shape.elements[1].dtype.numpy)


# ---------------------------------------------------------------------------------------------
# Linear algebra (§12.3)


def _working(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float32) if x.dtype.kind == "V" or x.dtype == np.float16 else x


@EVALUATE.register("cholesky")
def cholesky_rule(inst: Instruction, operands: list, ctx: Context):
    (a,) = operands
    a = _working(a)
    lower = inst.attrs.lower
    matrix = a if lower else np.conj(np.swapaxes(a, -1, -2))
    # Read only the indicated triangle (mirror it); a non-PD input gives NaN like XLA.
    tri = np.tril(matrix)
    hermitian = tri + np.conj(np.swapaxes(np.tril(matrix, -1), -1, -2))
    result = np.full(a.shape, np.nan, dtype=a.dtype)
    for index in np.ndindex(a.shape[:-2]):
        try:
            result[index] = np.linalg.cholesky(hermitian[index])
        except np.linalg.LinAlgError:
            continue
    if not lower:
        result = np.conj(np.swapaxes(result, -1, -2))
    return result.astype(inst.shape.dtype.numpy)


@EVALUATE.register("triangular-solve")
def triangular_solve_rule(inst: Instruction, operands: list, ctx: Context):
    a, b = (_working(v) for v in operands)
    attrs = inst.attrs
    a = np.tril(a) if attrs.lower else np.triu(a)
    if attrs.unit_diagonal:
        eye = np.eye(a.shape[-1], dtype=bool)
        a = np.where(eye, np.ones((), a.dtype), a)
    transpose = str(attrs.transpose_a or "NO_TRANSPOSE").upper()
    if transpose == "TRANSPOSE":
        a = np.swapaxes(a, -1, -2)
    elif transpose == "ADJOINT":
        a = np.conj(np.swapaxes(a, -1, -2))
    if attrs.left_side:
        x = np.linalg.solve(a, b)
    else:  # x·a = b  <=>  aᵀ·xᵀ = bᵀ
        x = np.swapaxes(np.linalg.solve(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)
    return x.astype(inst.shape.dtype.numpy)


@EVALUATE.register("fft")
def fft_rule(inst: Instruction, operands: list, ctx: Context):
    (x,) = operands
    lengths = tuple(inst.attrs.fft_length)
    axes = tuple(range(x.ndim - len(lengths), x.ndim))
    kind = inst.attrs.fft_type.value
    if kind == "FFT":
        result = np.fft.fftn(x, s=lengths, axes=axes)
    elif kind == "IFFT":
        result = np.fft.ifftn(x, s=lengths, axes=axes)
    elif kind == "RFFT":
        result = np.fft.rfftn(x, s=lengths, axes=axes)
    else:
        result = np.fft.irfftn(x, s=lengths, axes=axes)
    return result.astype(inst.shape.dtype.numpy)
