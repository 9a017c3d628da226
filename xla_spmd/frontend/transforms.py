"""Function transforms as JAX spells them: `vmap`, `jvp`, `linearize`, `jacfwd`, `jacrev`,
`hessian`, `checkpoint`/`remat`, `custom_vjp`, `custom_jvp`, `eval_shape`.

* `vmap` traces the function on one example and batches the trace (`batching`).
* Forward mode reuses reverse mode: the pullback ``ct -> vjp_fn(ct)`` is linear in `ct`, so
  the VJP of the pullback, applied to a tangent, is the Jacobian-vector product (the
  "transpose of the transpose"). `jvp` and `linearize` are built on that; `jacfwd` maps `jvp`
  over a basis with `vmap`, `jacrev` maps the pullback.
* `checkpoint`, `custom_vjp` and `custom_jvp` wrap the function in a ``call`` whose VJP rule
  recomputes the forward pass in the backward one (checkpoint) or runs the user's rule.

>>> import numpy as np
>>> import xla_spmd.numpy as xnp
>>> y, t = jvp(xnp.sin, (np.float32(0.0),), (np.float32(2.0),))
>>> float(y), float(t)
(0.0, 2.0)
"""

from __future__ import annotations

import contextlib
import functools
import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from xla_spmd.errors import XlaSpmdError
from xla_spmd.frontend import lax, sharding_types
from xla_spmd.frontend.ad import CUSTOM_RULE, CUSTOM_RULES
from xla_spmd.frontend.autodiff import _as_value, vjp
from xla_spmd.frontend.batching import batch_computation, moveaxis
from xla_spmd.frontend.control import typed_elements
from xla_spmd.frontend.pytree import (
    broadcast_prefix,
    tree_flatten,
    tree_map,
    tree_unflatten,
)
from xla_spmd.frontend.sharding_types import known, type_of
from xla_spmd.frontend.tracing import (
    AxisName,
    ShapeDtypeStruct,
    aval_of,
    bind,
    current_trace,
    finish,
    fresh_name,
    trace_computation,
)
from xla_spmd.ir import ArrayShape, DType

# ---------------------------------------------------------------------------------------------
# vmap


def vmap(fun: Callable, in_axes: Any = 0, out_axes: Any = 0, axis_name: AxisName | None = None,
         axis_size: int | None = None, spmd_axis_name: AxisName | None = None
         ) -> Callable[..., Any]:
    """Map `fun` over an axis of its arguments, as JAX's ``vmap``: `in_axes` (an int, None,
    or a pytree prefix of the positional arguments) says which axis of each argument is
    mapped (None: not mapped); `out_axes` where the mapped axis goes in each result.

    >>> import numpy as np
    >>> import xla_spmd.numpy as xnp
    >>> x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    >>> np.asarray(vmap(xnp.sum, in_axes=1)(x))
    array([3., 5., 7.], dtype=float32)
    """
    if axis_name is not None or spmd_axis_name is not None:
        raise XlaSpmdError("vmap: axis_name and spmd_axis_name (collectives over the mapped "
                           "axis) are not supported; use shard_map for named axes")

    @functools.wraps(fun)
    def mapped(*args, **kwargs):
        if isinstance(in_axes, list):
            axes_prefix = tuple(in_axes)
        else:
            axes_prefix = in_axes
        if not isinstance(axes_prefix, (int, tuple)) and axes_prefix is not None:
            raise XlaSpmdError(f"vmap in_axes must be an int, None or a tuple, got "
                               f"{type(in_axes).__name__}")
        if isinstance(axes_prefix, tuple) and len(axes_prefix) != len(args):
            raise XlaSpmdError(f"vmap in_axes has {len(axes_prefix)} entries for "
                               f"{len(args)} positional arguments")
        leaves, tree = tree_flatten((args, kwargs))
        axes = broadcast_prefix((axes_prefix, 0), (args, kwargs),
                                is_leaf=lambda a: a is None, what="vmap in_axes")
        values, batched, size = _batched_inputs(leaves, axes, axis_size)
        structure = {}

        def flat_fun(*tracers):
            a, k = tree_unflatten(tree, tracers)
            out_leaves, structure["out"] = tree_flatten(fun(*a, **k))
            return [_as_value(o) for o in out_leaves]

        in_avals = [_example_aval(v, b) for v, b in zip(values, batched)]
        # Sharding types (Explicit axes), as JAX's: the function sees per-example types
        # over the mesh without the axes the mapped dim is sharded over; each result gets
        # its per-example type with those axes at its out_axis.
        mesh, mapped_axes, example_types, known = sharding_types.vmap_types(values, batched)

        def typed_fun(*tracers):
            outs = flat_fun(*tracers)
            structure["types"] = [sharding_types.type_of(o) for o in outs]
            return outs

        with contextlib.ExitStack() as stack:
            if mesh is not None:
                stack.enter_context(sharding_types.axis_types(mesh, auto=mapped_axes))
            trace, outputs = trace_computation(typed_fun, in_avals, fresh_name("vmap"),
                                               shardings=example_types, known=known)
        computation = finish(trace, outputs, tuple_root=True)
        out, _ = batch_computation(computation, values + list(trace.captures),
                                   batched + [False] * len(trace.captures), size)
        n = len(outputs)
        results = [lax.get_tuple_element(out, i) for i in range(n)]
        out_axes_list = broadcast_prefix(out_axes, tree_unflatten(structure["out"], results),
                                         is_leaf=lambda a: a is None, what="vmap out_axes")
        placed = []
        for r, axis, typed in zip(results, out_axes_list, structure["types"]):
            r = _place(r, axis, size)
            if typed is not None:
                typed = typed if axis is None else sharding_types.unmapped_type(
                    typed, r.ndim, axis % r.ndim, mapped_axes)
                r = sharding_types.typed_as(r, typed)
            placed.append(r)
        return tree_unflatten(structure["out"], placed)
    return mapped


def _batched_inputs(leaves, axes, axis_size):
    values, batched, sizes = [], [], []
    for i, (leaf, axis) in enumerate(zip(leaves, axes)):
        value = _as_value(leaf)
        if axis is None:
            values.append(value)
            batched.append(False)
            continue
        if not isinstance(axis, int) or not -value.ndim <= axis < max(value.ndim, 1) \
                or value.ndim == 0:
            raise XlaSpmdError(f"vmap: in_axes {axis!r} for argument leaf {i} of shape "
                               f"{value.shape}: the axis must be an int within its rank")
        axis %= value.ndim
        sizes.append((value.shape[axis], i, axis))
        values.append(moveaxis(value, axis, 0))
        batched.append(True)
    found = {s for s, _, _ in sizes}
    if axis_size is not None:
        found.add(axis_size)
    if not found:
        raise XlaSpmdError("vmap needs at least one mapped argument (or axis_size)")
    if len(found) > 1:
        listed = ", ".join(f"leaf {i} has size {s} at axis {a}" for s, i, a in sizes)
        raise XlaSpmdError(f"vmap got inconsistent sizes for the mapped axis: {listed}"
                           + (f"; axis_size={axis_size}" if axis_size is not None else ""))
    return values, batched, found.pop()


def _example_aval(value, batched: bool):
    aval = value.aval
    return ArrayShape(aval.dtype, aval.dims[1:]) if batched else aval


def _place(result, axis, size: int):
    if axis is None:
        return lax.reshape(lax.slice_in_dim(result, 0, 1), result.shape[1:])
    if not isinstance(axis, int) or not -result.ndim <= axis < result.ndim:
        raise XlaSpmdError(f"vmap out_axes {axis!r} is out of range for a result of rank "
                           f"{result.ndim - 1}")
    return moveaxis(result, 0, axis % result.ndim)


# ---------------------------------------------------------------------------------------------
# Forward mode


def _pushforward(fun: Callable, primals, has_aux: bool) -> tuple[Any, ...]:
    """``(out, f_jvp[, aux])``: `f_jvp` maps tangents (a tuple like `primals`) to the tangent
    of the output, the VJP of the (linear) pullback."""
    result = vjp(fun, *primals, has_aux=has_aux)
    out, pullback = result[0], result[1]
    zero_ct = tree_map(lambda o: lax.zeros_like(_as_value(o)), out)
    _, transpose = vjp(pullback, zero_ct)

    def f_jvp(tangents):
        tangents = tuple(tangents)
        if len(tangents) != len(primals):
            raise XlaSpmdError(f"jvp: {len(tangents)} tangents for {len(primals)} primals")
        for p, t in zip(tree_flatten(primals)[0], tree_flatten(tangents)[0]):
            if aval_of(p).dims != aval_of(t).dims:
                raise XlaSpmdError(f"jvp: tangent of shape {aval_of(t).dims} for a primal of "
                                   f"shape {aval_of(p).dims}")
        typed = tuple(tree_map(lambda t, p: lax.convert(_as_value(t), aval_of(p).dtype)
                               if aval_of(p).dtype.is_float else _as_value(t),
                               tangents, tuple(primals)))
        return transpose(typed)[0]
    return (out, f_jvp) + ((result[2],) if has_aux else ())


def jvp(fun: Callable, primals: Any, tangents: Any, has_aux: bool = False) -> tuple[Any, ...]:
    """``(fun(*primals), J·tangents)`` (plus `aux` with has_aux), as JAX's ``jvp``.

    >>> import numpy as np
    >>> y, t = jvp(lambda x: x * x, (np.float32(3.0),), (np.float32(1.0),))
    >>> float(t)
    6.0
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise XlaSpmdError("jvp: primals and tangents must be tuples or lists")
    result = _pushforward(fun, tuple(primals), has_aux)
    return (result[0], result[1](tangents)) + tuple(result[2:])


def linearize(fun: Callable, *primals: Any, has_aux: bool = False) -> tuple[Any, ...]:
    """``(fun(*primals), f_jvp)`` where ``f_jvp(*tangents)`` is the Jacobian-vector product
    at `primals`, as JAX's ``linearize``."""
    result = _pushforward(fun, primals, has_aux)
    f_jvp = result[1]
    return (result[0], lambda *tangents: f_jvp(tangents)) + tuple(result[2:])


# ---------------------------------------------------------------------------------------------
# Jacobians


def _dynamic_args(fun, argnums, args):
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for n in nums:
        if not -len(args) <= n < len(args):
            raise XlaSpmdError(f"argnums {n} is out of range for {len(args)} arguments")

    def partial(*dynamic):
        full = list(args)
        for n, a in zip(nums, dynamic):
            full[n] = a
        return fun(*full)
    return partial, tuple(args[n] for n in nums)


def _basis(leaves):
    """The standard basis of the flattened `leaves`: per leaf, an array (N,)+leaf shape."""
    sizes = [int(np.prod(aval_of(x).dims)) for x in leaves]
    total = sum(sizes)
    dtype = next((aval_of(x).dtype for x in leaves if aval_of(x).dtype.is_float),
                 DType.from_numpy(np.dtype(np.float32)))
    eye = np.eye(total, dtype=dtype.numpy)
    parts, start = [], 0
    for x, n in zip(leaves, sizes):
        leaf_dtype = aval_of(x).dtype
        block = eye[:, start:start + n].astype(leaf_dtype.numpy if leaf_dtype.is_float
                                               else dtype.numpy)
        parts.append(block.reshape((total,) + aval_of(x).dims))
        start += n
    return parts, total


def _jacobian_tree(out_leaves_mapped, out_tree, in_leaves, in_tree, argnums, out_first: bool):
    """Assemble per-(output, input) blocks into JAX's nesting: the output's structure, each
    leaf holding the input's structure (a tuple of arguments when argnums is a tuple)."""
    def per_output(blocks):
        tree = tree_unflatten(in_tree, blocks)
        return tree[0] if isinstance(argnums, int) else tree
    return tree_unflatten(out_tree, [per_output(row) for row in out_leaves_mapped])


def jacfwd(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False
           ) -> Callable[..., Any]:
    """The Jacobian of `fun` by forward mode (``vmap`` of `jvp` over a basis), as JAX's
    ``jacfwd``: each output leaf holds, per input leaf, an array of shape
    ``out.shape + in.shape``."""
    def jacobian(*args):
        partial, dynamic = _dynamic_args(fun, argnums, args)
        in_leaves, in_tree = tree_flatten(dynamic)
        in_leaves = [_as_value(x) for x in in_leaves]
        basis, _ = _basis(in_leaves)
        result = _pushforward(partial, tree_unflatten(in_tree, in_leaves), has_aux)
        out, f_jvp = result[0], result[1]

        def push(*tangent_leaves):
            return f_jvp(tree_unflatten(in_tree, tangent_leaves))
        columns = vmap(push)(*basis)  # leaves (N,)+out shape
        out_leaves, out_tree = tree_flatten(out)
        col_leaves = tree_flatten(columns)[0]
        rows = []
        for o, c in zip(out_leaves, col_leaves):
            blocks, start = [], 0
            for x in in_leaves:
                n = int(np.prod(x.shape))
                block = lax.slice_in_dim(c, start, start + n, 1, 0)
                block = lax.reshape(block, x.shape + aval_of(o).dims)
                # (in dims..., out dims...) -> (out dims..., in dims...)
                k = len(x.shape)
                block = lax.transpose(block, list(range(k, block.ndim)) + list(range(k)))
                blocks.append(block)
                start += n
            rows.append(blocks)
        jac = _jacobian_tree(rows, out_tree, in_leaves, in_tree, argnums, True)
        return (jac, result[2]) if has_aux else jac
    return jacobian


def jacrev(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False
           ) -> Callable[..., Any]:
    """The Jacobian of `fun` by reverse mode (``vmap`` of the pullback over a basis of the
    output), as JAX's ``jacrev``; same layout as `jacfwd`."""
    def jacobian(*args):
        partial, dynamic = _dynamic_args(fun, argnums, args)
        in_leaves, in_tree = tree_flatten(dynamic)
        in_leaves = [_as_value(x) for x in in_leaves]
        result = vjp(partial, *tree_unflatten(in_tree, in_leaves), has_aux=has_aux)
        out, pullback = result[0], result[1]
        out_leaves, out_tree = tree_flatten(out)
        out_leaves = [_as_value(o) for o in out_leaves]
        basis, _ = _basis(out_leaves)

        def pull(*ct_leaves):
            return tree_flatten(pullback(tree_unflatten(out_tree, ct_leaves)))[0]
        rows_mapped = vmap(pull)(*basis)  # per input leaf: (M,)+in shape
        rows, start = [], 0
        for o in out_leaves:
            m = int(np.prod(o.shape))
            blocks = []
            for x, r in zip(in_leaves, rows_mapped):
                block = lax.slice_in_dim(r, start, start + m, 1, 0)
                blocks.append(lax.reshape(block, o.shape + x.shape))
            rows.append(blocks)
            start += m
        jac = _jacobian_tree(rows, out_tree, in_leaves, in_tree, argnums, False)
        return (jac, result[2]) if has_aux else jac
    return jacobian


def hessian(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False
            ) -> Callable[..., Any]:
    """The Hessian of a scalar `fun`: ``jacfwd(jacrev(fun))``, as JAX's ``hessian``."""
    return jacfwd(jacrev(fun, argnums, has_aux), argnums, has_aux)


# ---------------------------------------------------------------------------------------------
# Calls with their own VJP: checkpoint, custom_vjp, custom_jvp


_RULE_IDS = itertools.count(1)


def _wrapped_call(fun: Callable, args, rule=None, attributes=()):
    """Trace ``fun(*args)`` into a ``call`` (its VJP runs `rule(cts, operands)` when given).
    Returns the outputs with `fun`'s result structure."""
    leaves, in_tree = tree_flatten(args)
    leaves = [_as_value(x) for x in leaves]
    structure = {}

    def flat(*tracers):
        out_leaves, structure["out"] = tree_flatten(fun(*tree_unflatten(in_tree, tracers)))
        outs = [_as_value(o) for o in out_leaves]
        structure["types"] = [(type_of(o), known(o)) for o in outs]
        return outs

    trace, outputs = trace_computation(flat, [x.aval for x in leaves], fresh_name("call"),
                                       shardings=[type_of(x) for x in leaves],
                                       known=[known(x) for x in leaves])
    computation = finish(trace, outputs, tuple_root=True)
    if rule is not None:
        key = str(next(_RULE_IDS))
        CUSTOM_RULES[key] = functools.partial(rule, in_tree=in_tree, out_tree=structure["out"],
                                              num_args=len(leaves))
        attributes = (*attributes, (CUSTOM_RULE, key))
    result = bind("call", *leaves, *trace.captures, to_apply=computation,
                  frontend_attributes=tuple(attributes))
    outs = typed_elements(result, structure["types"])  # the results have fun's types
    return tree_unflatten(structure["out"], outs)


class _CheckpointPolicies:
    """JAX's ``checkpoint_policies``: which intermediates the backward pass may keep. Here a
    policy saves everything (no recomputation) or nothing (the whole function is recomputed
    in the backward pass); the ones saving a subset recompute everything."""

    @staticmethod
    def everything_saveable(*_, **__):
        return True

    @staticmethod
    def nothing_saveable(*_, **__):
        return False

    dots_saveable = checkpoint_dots = nothing_saveable
    dots_with_no_batch_dims_saveable = checkpoint_dots_with_no_batch_dims = nothing_saveable

    @staticmethod
    def save_only_these_names(*names):
        return _CheckpointPolicies.nothing_saveable

    @staticmethod
    def save_anything_except_these_names(*names):
        return _CheckpointPolicies.nothing_saveable

    save_any_names_but_these = save_anything_except_these_names


checkpoint_policies = _CheckpointPolicies()
REMAT = "xla_spmd.remat"


def checkpoint(fun: Callable, *, prevent_cse: bool = True,
               policy: Callable[..., bool] | None = None, static_argnums: int | Sequence[int] = ()
               ) -> Callable[..., Any]:
    """`fun`, whose intermediates the backward pass recomputes instead of keeping (JAX's
    ``checkpoint``/``remat``): values are those of `fun`; a policy of
    ``checkpoint_policies.everything_saveable`` keeps them all.

    >>> import numpy as np
    >>> import xla_spmd.numpy as xnp
    >>> from xla_spmd.frontend.autodiff import grad
    >>> float(grad(checkpoint(lambda x: xnp.sin(x) * 2.0))(np.float32(0.0)))
    2.0
    """
    static = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    if policy is _CheckpointPolicies.everything_saveable:
        return fun

    @functools.wraps(fun)
    def wrapped(*args):
        if current_trace() is None:
            return fun(*args)
        dynamic = [a for i, a in enumerate(args) if i not in static]

        def call(*dyn):
            it = iter(dyn)
            return fun(*[a if i in static else next(it) for i, a in enumerate(args)])
        return _wrapped_call(call, tuple(dynamic), attributes=((REMAT, "true"),))
    return wrapped


remat = checkpoint


class custom_vjp:
    """A function with a user-defined VJP, as JAX's ``custom_vjp``: ``f.defvjp(fwd, bwd)``,
    ``fwd(*args) -> (out, residuals)``, ``bwd(residuals, ct) -> tuple of cotangents`` (one
    per argument not in `nondiff_argnums`; those come first in `bwd`'s arguments).

    >>> import numpy as np
    >>> from xla_spmd.frontend.autodiff import grad
    >>> f = custom_vjp(lambda x: x * x)
    >>> f.defvjp(lambda x: (x * x, x), lambda x, g: (10.0 * g,))
    >>> float(grad(f)(np.float32(3.0)))
    10.0
    """

    def __init__(self, fun: Callable, nondiff_argnums=()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.fwd: Callable[..., Any] | None = None
        self.bwd: Callable[..., Any] | None = None

    def defvjp(self, fwd: Callable, bwd: Callable, symbolic_zeros: bool = False) -> None:
        self.fwd, self.bwd = fwd, bwd

    def __call__(self, *args):
        fwd, bwd = self.fwd, self.bwd
        if fwd is None or bwd is None:
            raise XlaSpmdError(f"custom_vjp function {self.fun.__name__} has no VJP: call "
                               ".defvjp(fwd, bwd) first")
        if current_trace() is None:
            return self.fun(*args)
        nondiff, diff_positions, full = _split_nondiff(args, self.nondiff_argnums)

        def rule(cts, operands, in_tree, out_tree, num_args):
            dynamic = tree_unflatten(in_tree, operands[:num_args])
            _, residuals = fwd(*full(dynamic))
            out_cts = bwd(*nondiff, residuals, tree_unflatten(out_tree, cts))
            if not isinstance(out_cts, (tuple, list)) or len(out_cts) != len(dynamic):
                raise XlaSpmdError(f"custom_vjp bwd of {self.fun.__name__} must return a "
                                   f"tuple of {len(dynamic)} cotangents")
            leaves = tree_flatten(tuple(_zero_none(c, d) for c, d in zip(out_cts, dynamic)))[0]
            return leaves + [None] * (len(operands) - num_args)

        return _wrapped_call(lambda *dyn: self.fun(*full(dyn)),
                             tuple(args[i] for i in diff_positions), rule=rule)


def _split_nondiff(args: tuple, nondiff_argnums: tuple[int, ...]):
    """The arguments a custom rule sees undifferentiated, the positions of the others, and
    ``full(dynamic)``: ``args`` with those positions replaced by ``dynamic``."""
    nondiff = [args[i] for i in nondiff_argnums]
    diff_positions = [i for i in range(len(args)) if i not in nondiff_argnums]

    def full(dynamic) -> list:
        merged = list(args)
        for i, a in zip(diff_positions, dynamic):
            merged[i] = a
        return merged

    return nondiff, diff_positions, full


def _zero_none(ct, primal):
    if ct is None:
        return tree_map(lambda p: lax.zeros_like(_as_value(p)), primal)
    return ct


class custom_jvp:
    """A function with a user-defined JVP, as JAX's ``custom_jvp``: ``f.defjvp(rule)`` with
    ``rule(primals, tangents) -> (out, tangent_out)`` (usable as a decorator), or
    ``f.defjvps(*per_argument)``. Reverse mode transposes the rule's tangent map.

    >>> import numpy as np
    >>> from xla_spmd.frontend.autodiff import grad
    >>> f = custom_jvp(lambda x: x * x)
    >>> _ = f.defjvp(lambda p, t: (p[0] * p[0], 5.0 * t[0]))
    >>> float(grad(f)(np.float32(3.0)))
    5.0
    """

    def __init__(self, fun: Callable, nondiff_argnums=()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.jvp: Callable[..., Any] | None = None

    def defjvp(self, jvp_rule: Callable, symbolic_zeros: bool = False) -> Callable:
        self.jvp = jvp_rule
        return jvp_rule

    def defjvps(self, *per_argument: Callable[..., Any] | None) -> None:
        def rule(primals, tangents):
            out = self.fun(*primals)
            total = None
            for fn, t in zip(per_argument, tangents):
                if fn is None:
                    continue
                term = fn(t, out, *primals)
                total = term if total is None else tree_map(lax.add, total, term)
            return out, total
        self.jvp = rule

    def __call__(self, *args):
        jvp_rule = self.jvp
        if jvp_rule is None:
            raise XlaSpmdError(f"custom_jvp function {self.fun.__name__} has no JVP: call "
                               ".defjvp(rule) first")
        if current_trace() is None:
            return self.fun(*args)
        nondiff, diff_positions, full = _split_nondiff(args, self.nondiff_argnums)

        def rule(cts, operands, in_tree, out_tree, num_args):
            dynamic = tree_unflatten(in_tree, operands[:num_args])

            def tangent_map(*tangents):
                _, t_out = jvp_rule(*nondiff, tuple(dynamic), tuple(tangents))
                return t_out
            zeros = tuple(tree_map(lambda p: lax.zeros_like(p), d) for d in dynamic)
            _, pullback = vjp(tangent_map, *zeros)
            leaves = tree_flatten(pullback(tree_unflatten(out_tree, cts)))[0]
            return leaves + [None] * (len(operands) - num_args)

        return _wrapped_call(lambda *dyn: self.fun(*full(dyn)),
                             tuple(args[i] for i in diff_positions), rule=rule)


# ---------------------------------------------------------------------------------------------
# eval_shape


def eval_shape(fun: Callable, *args: Any, **kwargs: Any) -> Any:
    """The shapes and dtypes of ``fun(*args, **kwargs)`` as `ShapeDtypeStruct`s, computed by
    tracing (no arithmetic runs); arguments may be arrays or `ShapeDtypeStruct`s.

    >>> import xla_spmd.numpy as xnp
    >>> eval_shape(lambda x: xnp.sum(x, axis=0), ShapeDtypeStruct((3, 4), np.float32))
    ShapeDtypeStruct(shape=(4,), dtype=dtype('float32'), sharding=None, weak_type=False)
    """
    leaves, tree = tree_flatten((args, kwargs))
    avals = [aval_of(x) for x in leaves]
    structure = {}

    def flat(*tracers):
        a, k = tree_unflatten(tree, tracers)
        out, structure["out"] = tree_flatten(fun(*a, **k))
        return [_as_value(o) for o in out]

    _, outputs = trace_computation(flat, avals, fresh_name("eval_shape"))
    return tree_unflatten(structure["out"], [
        ShapeDtypeStruct(o.shape.dims, o.shape.dtype.array_dtype) for o in outputs])


__all__ = ["ShapeDtypeStruct", "checkpoint", "checkpoint_policies", "custom_jvp",
           "custom_vjp", "eval_shape", "hessian", "jacfwd", "jacrev", "jvp", "linearize",
           "remat", "vmap"]
