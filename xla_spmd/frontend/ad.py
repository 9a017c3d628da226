"""The core of reverse-mode autodiff: the `VJP` rule registry and the two passes over a
computation (re-emit it forward, walk it backward calling each opcode's rule).

The rule modules (vjp_rules, vjp_rules_structured, vjp_rules_control) register into `VJP`;
`autodiff` imports them and builds the user API (`vjp`, `grad`) on these passes.

Cotangents are values shaped like the primal; for tuple-shaped instructions they are Python
tuples of cotangents; None stands for a zero. Only floating-point values carry cotangents.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from xla_spmd.frontend import lax
from xla_spmd.frontend.sharding_types import lenient as types_lenient
from xla_spmd.frontend.sharding_types import suspended as types_suspended
from xla_spmd.frontend.sharding_types import type_of
from xla_spmd.frontend.tracing import bind, current_trace, rebind, source_of
from xla_spmd.frontend.vma import transpose_implicit_broadcasts
from xla_spmd.frontend.vma import typed as vma_typed
from xla_spmd.ir import Computation, Registry, Shape, TupleShape
from xla_spmd.ir.custom_calls import SHARDING

VJP = Registry("VJP")
"""opcode -> rule(ct, inst, operands, out) -> one cotangent (or None) per operand."""

UNTYPED_RULES = frozenset({"while", "conditional"})
"""Opcodes whose transpose rules run untyped under Explicit axes (the loops and branches
they emit would need typed zero carries; their cotangents get their primals' types)."""

CUSTOM_RULE = "xla_spmd.custom_vjp"
"""The frontend attribute of a ``call`` with a user-defined VJP (custom_vjp, custom_jvp): its
value is the key of the rule in `CUSTOM_RULES`."""
CUSTOM_RULES: dict[str, Callable[..., Any]] = {}
"""key -> rule(cotangent leaves of the call's results, operands) -> operand cotangents."""


def differentiable(aval: Shape) -> bool:
    if isinstance(aval, TupleShape):
        return True
    return aval.dtype.is_float or aval.dtype.is_complex


# ---------------------------------------------------------------------------------------------
# Cotangent structures


def add_cotangents(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    if isinstance(a, tuple):
        return tuple(add_cotangents(x, y) for x, y in zip(a, b))
    return lax.add(a, b)


def zeros_of(aval: Shape) -> Any:
    if isinstance(aval, TupleShape):
        return tuple(zeros_of(e) for e in aval.elements)
    return lax.full(aval.dims, 0, aval.dtype)


def flat_cotangent(ct: Any, aval: Shape) -> list:
    """The leaves of a cotangent for a value of `aval`, zeros materialized."""
    if isinstance(aval, TupleShape):
        parts = ct if ct is not None else (None,) * len(aval.elements)
        return [leaf for c, e in zip(parts, aval.elements) for leaf in flat_cotangent(c, e)]
    return [lax.full(aval.dims, 0, aval.dtype) if ct is None else ct]


def unflat_cotangent(leaves: Iterable[Any], aval: Shape) -> Any:
    """Inverse of `flat_cotangent` (consumes from an iterator or list)."""
    iterator = iter(leaves)

    def build(a):
        if isinstance(a, TupleShape):
            return tuple(build(e) for e in a.elements)
        return next(iterator)
    return build(aval)


def is_zero(ct: Any) -> bool:
    if ct is None:
        return True
    if isinstance(ct, tuple):
        return all(is_zero(c) for c in ct)
    return False


# ---------------------------------------------------------------------------------------------
# The two passes over a computation


def linearize_computation(computation: Computation, args: Sequence[Any]) -> tuple[object, dict]:
    """Emit `computation` on `args` in the current trace; returns (root value, environment of
    every instruction's value)."""
    env = {id(p): a for p, a in zip(computation.parameters, args)}
    with types_suspended():  # re-emitted: each keeps the sharding (type) it was traced with
        for inst in computation.instructions:
            if inst.opcode != "parameter":
                env[id(inst)] = rebind(inst, [env[id(o)] for o in inst.operands])
    return env[id(computation.root)], env


def apply_computation(computation: Computation, args: Sequence[Any]) -> Any:
    """The value of `computation` on `args`, its instructions inlined in the current trace."""
    return linearize_computation(computation, args)[0]


def backward(computation: Computation, env: dict, root_ct: Any) -> list:
    """Cotangents of the parameters of `computation` given the cotangent of its root."""
    root = env.get(id(computation.root))
    cts: dict[int, object] = {id(computation.root): _typed_like(root_ct, root)}
    typed = vma_typed(current_trace())
    # The transpose rules run typed, as JAX's (an op left ambiguous inside a rule is
    # untyped: sharding_types.lenient); each cotangent they give gets its primal's type.
    with types_lenient():
        _backward(computation, env, cts, typed)
    return [_typed_like(cts.get(id(p)), env.get(id(p))) for p in computation.parameters]


def _typed_like(ct, primal):
    """A cotangent with its primal's sharding type (Explicit axes), as JAX's."""
    sharding = type_of(primal)
    if sharding is None or ct is None or isinstance(ct, tuple) or \
            not hasattr(ct, "aval") or ct.aval != primal.aval or \
            getattr(getattr(ct, "inst", None), "sharding", None) == sharding:
        return ct
    return bind("custom-call", ct, shape=ct.aval, custom_call_target=SHARDING,
                sharding=sharding)


def _backward(computation: Computation, env: dict, cts: dict, typed: bool) -> None:
    for inst in reversed(computation.instructions):
        if inst.opcode == "parameter":
            continue
        ct = cts.pop(id(inst), None)
        if is_zero(ct) or not differentiable(inst.shape):
            continue
        rule = VJP.lookup(inst.opcode)
        operands = [env[id(o)] for o in inst.operands]
        with source_of(inst), (types_suspended() if inst.opcode in UNTYPED_RULES
                               else contextlib.nullcontext()):
            operand_cts = rule(ct, inst, operands, env[id(inst)])
            if typed:  # a shard_map body with check_vma: see xla_spmd.frontend.vma
                operand_cts = transpose_implicit_broadcasts(inst, operands, operand_cts)
        for operand, operand_ct in zip(inst.operands, operand_cts):
            if operand_ct is None or not differentiable(operand.shape):
                continue
            operand_ct = _typed_like(operand_ct, env[id(operand)])
            cts[id(operand)] = add_cotangents(cts.get(id(operand)), operand_ct)


def computation_vjp(computation: Computation, args: Sequence[Any], root_ct: Any) -> list:
    """Cotangents of `args` for `computation` (forward re-emitted, then the reverse pass)."""
    _, env = linearize_computation(computation, args)
    return backward(computation, env, root_ct)
