"""Reverse-mode autodiff, source to source on the traced IR.

`vjp(f, *primals)` traces `f` into a computation (a nested trace), re-emits its
instructions into the current trace on the actual primals (so every intermediate is a value
there, available as a residual), and returns a function that walks the computation in
reverse, calling the rule registered in `VJP` for each instruction's opcode to turn the
cotangent of its result into cotangents of its operands, which are summed per value.

Cotangents are values shaped like the primal; for tuple-shaped instructions they are Python
tuples of cotangents; None stands for a zero. Only floating-point values carry cotangents.

>>> import numpy as np
>>> import xla_spmd.numpy as xnp
>>> float(grad(lambda x: xnp.sum(xnp.sin(x)))(np.float64(0.0)))
1.0
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# The rule modules fill the VJP registry (ad.py) as they load.
import xla_spmd.frontend.vjp_rules  # noqa: F401
import xla_spmd.frontend.vjp_rules_control  # noqa: F401
import xla_spmd.frontend.vjp_rules_structured  # noqa: F401
from xla_spmd.errors import XlaSpmdError
from xla_spmd.frontend import lax
from xla_spmd.frontend.ad import (  # noqa: F401 (the core, re-exported)
    VJP,
    add_cotangents,
    apply_computation,
    backward,
    computation_vjp,
    differentiable,
    flat_cotangent,
    is_zero,
    linearize_computation,
    unflat_cotangent,
    zeros_of,
)
from xla_spmd.frontend.numpy_core import asarray
from xla_spmd.frontend.pytree import tree_flatten, tree_unflatten
from xla_spmd.frontend.sharding_types import known, type_of
from xla_spmd.frontend.tracing import (
    Array,
    aval_of,
    finish,
    fresh_name,
    is_weak,
    mesh_scope,
    python_scalar_array,
    trace_computation,
)
from xla_spmd.ir import ArrayShape

# ---------------------------------------------------------------------------------------------
# User API


def _as_value(x):
    if is_weak(x) and not hasattr(x, "aval"):
        return Array(python_scalar_array(x), weak_type=True)
    return asarray(x)


def vjp(fn: Callable, *primals: Any, has_aux: bool = False) -> tuple[Any, ...]:
    """``(fn(*primals), vjp_fn)`` (plus `aux` with has_aux), where ``vjp_fn(ct)`` returns a
    tuple with the cotangent of each primal (pytrees of the primals' structure).

    >>> import numpy as np
    >>> out, pullback = vjp(lambda x: x * 3.0, np.float32(2.0))
    >>> float(pullback(np.float32(1.0))[0])
    3.0
    """
    leaves, in_tree = tree_flatten(primals)
    leaves = [_as_value(x) for x in leaves]
    structure = {}

    def flat_fn(*tracers):
        out = fn(*tree_unflatten(in_tree, tracers))
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise XlaSpmdError("a function with has_aux=True must return (output, aux)")
            out, aux = out
            aux_leaves, structure["aux"] = tree_flatten(aux)
        else:
            aux_leaves = []
        out_leaves, structure["out"] = tree_flatten(out)
        structure["num_out"] = len(out_leaves)
        return [_as_value(o) for o in out_leaves] + [_as_value(a) for a in aux_leaves]

    trace, outputs = trace_computation(flat_fn, [x.aval for x in leaves], fresh_name("vjp"),
                                       shardings=[type_of(x) for x in leaves],
                                       known=[known(x) for x in leaves])
    computation = finish(trace, outputs, tuple_root=True)
    with mesh_scope(trace.meshes):  # the meshes its shard_maps name, while differentiating
        _, env = linearize_computation(computation, leaves + list(trace.captures))
    values = [env[id(o)] for o in computation.root.operands]
    num_out = structure["num_out"]
    out = tree_unflatten(structure["out"], values[:num_out])
    out_avals = [v.aval for v in values[:num_out]]

    def vjp_fn(cotangent):
        ct_leaves, ct_tree = tree_flatten(cotangent)
        if ct_tree != structure["out"]:
            raise XlaSpmdError(f"vjp: cotangent structure {ct_tree} differs from the output "
                               f"structure {structure['out']}")
        cts = []
        for ct, aval in zip(ct_leaves, out_avals):
            ct = _as_value(ct)
            if ct.shape != aval.dims:
                raise XlaSpmdError(f"vjp: cotangent {ct.aval} for an output {aval}")
            cts.append(lax.convert(ct, aval.dtype) if differentiable(aval) else None)
        root_ct = tuple(cts) + (None,) * (len(values) - num_out)
        with mesh_scope(trace.meshes):
            param_cts = backward(computation, env, root_ct)[:len(leaves)]
        grads = [lax.zeros_like(x) if c is None else c for c, x in zip(param_cts, leaves)]
        return tuple(tree_unflatten(in_tree, grads))

    if has_aux:
        return out, vjp_fn, tree_unflatten(structure["aux"], values[num_out:])
    return out, vjp_fn


def value_and_grad(fn: Callable, argnums: int | tuple = 0, has_aux: bool = False
                   ) -> Callable[..., Any]:
    """A function returning ``(fn(*args), gradient)`` of a scalar `fn` with respect to the
    arguments at `argnums` (``((value, aux), gradient)`` with has_aux), as in JAX."""
    def wrapped(*args, **kwargs):
        nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
        for n in nums:
            if n >= len(args):
                raise XlaSpmdError(f"argnums {n} is out of range for {len(args)} arguments")

        def partial(*diff_args):
            full = list(args)
            for n, a in zip(nums, diff_args):
                full[n] = a
            return fn(*full, **kwargs)

        result = vjp(partial, *(args[n] for n in nums), has_aux=has_aux)
        out, pullback = result[0], result[1]
        out_aval = aval_of(out)
        if not (isinstance(out_aval, ArrayShape) and out_aval.rank == 0
                and out_aval.dtype.is_float):
            raise XlaSpmdError(f"grad needs a function returning a float scalar, got "
                               f"{out_aval}")
        grads = pullback(lax.full((), 1, out_aval.dtype))
        gradient = grads[0] if isinstance(argnums, int) else grads
        return ((out, result[2]) if has_aux else out), gradient
    return wrapped


def grad(fn: Callable, argnums: int | tuple = 0, has_aux: bool = False) -> Callable[..., Any]:
    """The gradient of a scalar `fn` with respect to the arguments at `argnums`.

    >>> import numpy as np
    >>> float(grad(lambda x, y: x * y, argnums=1)(np.float32(2.0), np.float32(5.0)))
    2.0
    """
    value_and_grad_fn = value_and_grad(fn, argnums, has_aux)

    def wrapped(*args, **kwargs):
        value, gradient = value_and_grad_fn(*args, **kwargs)
        return (gradient, value[1]) if has_aux else gradient
    return wrapped

