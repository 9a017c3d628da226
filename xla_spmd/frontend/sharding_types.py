"""Sharding in types: the Explicit axes of a mesh (``AxisType.Explicit``, JAX's explicit
sharding mode) are part of each traced value's type, computed op by op while tracing.

A traced value is *typed* when its instruction's sharding is over a mesh with Explicit axes
(an argument of such a sharding, a `reshard`, or a typed op's result). Each op bound on
typed operands gets its result's type from one rule per op family, as JAX's sharding rules
compute it, and ambiguous cases fail while tracing with a `ShardingTypeError` naming the
operands' specs:

* elementwise ops: the operands' specs dim by dim (an unsharded dim meets a sharded one:
  sharded); two different shardings of one dim fail;
* ``broadcast``, ``transpose``: the operand's spec moved with its dims; new dims replicated;
* ``reshape``: splitting or merging dims keeps the sharding of the major dim when the mesh
  axes divide the sizes; anything else fails (give ``out_sharding``);
* ``reduce``: the reduced dims' axes are gone (the result is replicated over them); a
  variadic reduce (argmax) gives each result the merged spec of its operands;
* ``reduce-window`` (cumulative sums, pooling): a dim with a window must be unsharded;
* ``sort``: the sorted dim must be unsharded, and the operands sharded alike;
* ``get-tuple-element``: the element's type;
* ``dot``: batch dims must be sharded alike; contracting dims sharded on both sides fail
  (give ``out_sharding``); the result is batch, lhs free, rhs free dims;
* ``slice``, ``dynamic-slice``, ``pad``: the operand's spec, where each changed dim's size
  still divides by its shards (else fail); all-ones results are replicated;
* ``concatenate``, ``dynamic-update-slice``: the operands must agree;
* ``gather``: JAX's rule (indexed dims whole or unsharded, indices unsharded but for
  batching dims); anything else fails (give ``x.at[idx].get(out_sharding=...)``);
* ``scatter``: JAX's rule, batching dims included (indices unsharded but for batching
  dims, whole-dim windows may be sharded, the dims written into unsharded, batching dims
  sharded one way); anything else fails (give ``x.at[idx].set(v, out_sharding=...)``);
* ``convolution``: a replicated kernel and an unsharded input feature dim give the
  input's spec (give ``out_sharding=`` to ``conv_general_dilated`` otherwise);
* ``reverse``: the operand's spec; ``topk``: the last dim must be unsharded;
* ``fft``: the operand's spec, every dim (JAX's fft keeps its operand's sharding);
* ``cholesky``: the matrix dims unsharded, the batch dims keep their sharding;
  ``triangular-solve``: JAX's rule (equal batch specs, the contracted dims of ``a`` and
  ``b`` unsharded, the result's dims from ``a``'s other dim and ``b``'s free dim);
* ``rng-bit-generator``: the new state has the key's type, the bits are replicated
  (``out_sharding=`` of ``lax.rng_bit_generator`` and of the `xla_spmd.random` samplers
  gives another type);
* loops and branches (`xla_spmd.frontend.control`): bodies see their carries and the
  values they close over with their types, a body must keep its carry's types and the
  branches of a `cond` must agree (JAX's errors), and the results have those types;
  `scan`'s stacked outputs have the per-step type with an unsharded leading dim;
* `shard_map` results: their out_specs; calls (`custom_vjp`, `remat`): their function's
  result types;
* ``vmap``: the function sees per-example types (the mapped dim's spec removed, its mesh
  axes made Auto inside), each result gets its type with those axes at its out_axis;
* the backward pass of ``grad``: the transpose rules run typed, as JAX's: ``dot``'s
  transpose gives its dot the primal's type permuted (JAX's ``out_sharding=``), a reduce's
  broadcasts its cotangent to the operand's type, a gather's scatters into zeros of the
  operand's type, and each cotangent a rule gives gets its primal's type; an op inside a
  rule whose type would be ambiguous is left untyped (`lenient`) rather than failing;
* other ops: replicated when every typed operand is; else untyped (propagation places
  them).

A type becomes the instruction's sharding, a hard constraint for propagation (closed dims on
an all-Explicit mesh, open ones where Auto axes may be added). Untyped operands that JAX
would see as values with no mesh (constants, plain inputs of the jit, what is computed from
them alone) count as replicated; a value whose type was lost (the result of an op with no
rule here) makes the ops on it untyped as well (see `known`). `auto_axes(axes=...)` and
`explicit_axes(axes=...)` change the types of the named axes only (`axis_types`).

>>> import numpy as np
>>> import xla_spmd as xs
>>> mesh = xs.make_mesh({"a": 2}, axis_types=xs.AxisType.Explicit)
>>> x = xs.device_put(np.ones((4, 2), np.float32), xs.NamedSharding(mesh, xs.P("a")))
>>> @xs.jit
... def f(x):
...     print("y:", xs.typeof(x * 2).sharding.spec, "s:", xs.typeof(x.sum(0)).sharding.spec)
...     return x
>>> _ = f(x)
y: P('a', None) s: P(None)
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from xla_spmd.errors import ShardingError
from xla_spmd.frontend import tracing
from xla_spmd.frontend.constraints import current_mesh, with_sharding_constraint
from xla_spmd.frontend.tracing import ArrayLike, Tracer, Value
from xla_spmd.ir import ArrayShape, Instruction, Registry, TupleShape
from xla_spmd.ir.custom_calls import SHARDING
from xla_spmd.ir.ops import Family
from xla_spmd.mesh import AxisRef, Mesh
from xla_spmd.sharding import DimSharding, NamedSharding, PartitionSpec, TensorSharding


class ShardingTypeError(ShardingError, TypeError):
    """An op whose result sharding the types of its operands leave ambiguous (JAX's
    ``ShardingTypeError``)."""


Spec = tuple  # one tuple of explicit axis names per dim


# ---------------------------------------------------------------------------------------------
# When types are computed

_SUSPENDED: list[bool] = []   # grad's backward pass, vmap: no types
_AXES: list[tuple[Mesh, frozenset]] = []  # auto_axes/explicit_axes: a mesh's Explicit axes
_LENIENT: list[bool] = []  # transpose rules: ambiguous ops untyped (see `lenient`)


@contextlib.contextmanager
def suspended() -> Iterator[None]:
    """No sharding types inside the block (its values are placed by propagation)."""
    _SUSPENDED.append(True)
    try:
        yield
    finally:
        _SUSPENDED.pop()


@contextlib.contextmanager
def axis_types(mesh: Mesh, *, auto: Sequence[str] = (), explicit: Sequence[str] = ()
               ) -> Iterator[None]:
    """Inside the block the axes `auto` of `mesh` count as Auto and `explicit` as Explicit
    (JAX's ``auto_axes(axes=...)`` and ``explicit_axes(axes=...)``: the other axes keep
    their types); with `explicit` given, types are computed even inside a `suspended`
    block."""
    unknown = [a for a in (*auto, *explicit) if a not in mesh.axis_names]
    if unknown:
        raise ShardingError(f"axes {unknown} are not axes of the mesh {mesh!r}")
    now = set(explicit_axes_of(mesh))
    _AXES.append((mesh, frozenset((now - set(auto)) | set(explicit))))
    _SUSPENDED.append(False if explicit else bool(_SUSPENDED and _SUSPENDED[-1]))
    try:
        yield
    finally:
        _SUSPENDED.pop()
        _AXES.pop()


@contextlib.contextmanager
def lenient() -> Iterator[None]:
    """Inside the block an op whose operands' types leave its result's type ambiguous gets
    no type (propagation places it) instead of failing: the transpose rules of the
    backward pass, where JAX's rules pass ``out_sharding=`` to such ops (the rules here
    do for ``dot``; each cotangent a rule gives gets its primal's type)."""
    _LENIENT.append(True)
    try:
        yield
    finally:
        _LENIENT.pop()


def with_type(value: Value, typed: TensorSharding | None, order: Sequence[int] | None = None
              ) -> Value:
    """`value` constrained to the type `typed` (its dims taken in `order`: result dim i has
    the spec of `typed`'s dim ``order[i]``); `value` itself when `typed` is None or types
    are off. A transpose rule gives its results their primal's type with it."""
    if typed is None or (_SUSPENDED and _SUSPENDED[-1]) or not isinstance(value, Tracer):
        return value
    spec = _spec(typed, len(order) if order is not None else len(value.aval.dims))
    if order is not None:
        spec = tuple(spec[d] for d in order)
    return typed_as(value, _sharding(typed, spec))


def type_for(value: Value, typed: TensorSharding | None, order: Sequence[int]
             ) -> TensorSharding | None:
    """`typed` with its dims taken in `order` (see `with_type`), for ``out_sharding=``."""
    if typed is None or (_SUSPENDED and _SUSPENDED[-1]):
        return None
    spec = _spec(typed, len(order))
    return _sharding(typed, tuple(spec[d] for d in order))


def forced(mesh: Mesh) -> contextlib.AbstractContextManager[None]:
    """Every axis of `mesh` Explicit inside the block (see `axis_types`)."""
    return axis_types(mesh, explicit=mesh.axis_names)


def explicit_axes_of(mesh: Mesh) -> tuple[str, ...]:
    """The axes of `mesh` that are Explicit here (its axis types, as `axis_types` blocks
    change them)."""
    for other, axes in reversed(_AXES):
        if other == mesh:
            return tuple(a for a in mesh.axis_names if a in axes)
    return mesh.explicit_axes


def as_typed(sharding: TensorSharding) -> TensorSharding:
    """`sharding` as a type where `auto_axes`/`explicit_axes` changed its mesh's axis types:
    only the axes Explicit here (JAX reshards the arguments of ``auto_axes`` to the spec
    without the axes made Auto); unchanged elsewhere."""
    if not any(other == sharding.mesh for other, _ in _AXES):
        return sharding
    return _sharding(sharding, _spec(sharding, len(sharding.dims)))


def type_of(x: ArrayLike) -> TensorSharding | None:
    """The sharding type of a traced value: its sharding, when over Explicit axes."""
    if not isinstance(x, Tracer) or isinstance(x.aval, TupleShape):
        return None
    sharding = x.inst.sharding
    if not isinstance(sharding, TensorSharding) or not explicit_axes_of(sharding.mesh):
        return None
    return sharding


_LEAF_OPCODES = frozenset({"constant", "iota", "rng", "rng-bit-generator", "partition-id",
                           "replica-id", "after-all"})


def known(x: ArrayLike) -> bool:
    """Whether `x` has a type or counts as replicated, as a value with no mesh does in JAX:
    concrete values, constants and what is computed from them alone, the inputs of the
    outermost trace. A value whose type was lost (the results of a loop, of an op with no
    rule, of untyped code on typed values) is unknown: ops on it are left untyped too,
    rather than typed as if it were replicated."""
    if not isinstance(x, Tracer) or type_of(x) is not None:
        return True
    return _known_inst(x.trace, x.inst)


def _known_inst(trace, inst) -> bool:
    memo = trace.__dict__.setdefault("_known_types", {})
    stack = [inst]
    while stack:  # post-order without recursion (chains of ops may be long)
        top = stack[-1]
        if id(top) in memo:
            stack.pop()
            continue
        if top.opcode == "parameter":
            memo[id(top)] = (trace.parent is None or top.sharding is not None
                             or id(top) in trace.__dict__.get("_known_params", ()))
            stack.pop()
            continue
        if top.opcode in _LEAF_OPCODES or not top.operands or _explicit(top.sharding) \
                or top.sharding is not None:
            memo[id(top)] = True
            stack.pop()
            continue
        pending = [o for o in top.operands if id(o) not in memo]
        if pending:
            stack.extend(pending)
            continue
        memo[id(top)] = all(memo[id(o)] and not _explicit(o.sharding) for o in top.operands)
        stack.pop()
    return memo[id(inst)]


def _explicit(sharding) -> bool:
    if isinstance(sharding, tuple):
        return any(_explicit(s) for s in sharding)
    return isinstance(sharding, TensorSharding) and bool(explicit_axes_of(sharding.mesh))


def _spec(sharding: TensorSharding | None, rank: int) -> Spec:
    if sharding is None:
        return ((),) * rank
    explicit = set(explicit_axes_of(sharding.mesh))
    return tuple(tuple(a.name for a in sharding.dim_axes(d) if a.name in explicit)
                 for d in range(rank))


def _show(spec: Spec) -> str:
    parts = [None if not s else s[0] if len(s) == 1 else s for s in spec]
    return "P(" + ", ".join(repr(p) for p in parts) + ")"


def _sharding(like: TensorSharding, spec: Spec) -> TensorSharding:
    mesh = like.mesh
    closed = set(explicit_axes_of(mesh)) == set(mesh.axis_names)
    seen: set[str] = set()
    for axes in spec:
        for axis in axes:
            if axis in seen:
                raise ShardingTypeError(f"the result spec {_show(spec)} uses mesh axis "
                                        f"{axis!r} on two dims")
            seen.add(axis)
    dims = tuple(DimSharding(tuple(AxisRef(a) for a in axes), is_closed=closed)
                 for axes in spec)
    return TensorSharding(mesh, dims, mesh_name=like.mesh_name)


def takes_out_sharding(fn: Callable) -> Callable:
    """`fn` with JAX's ``out_sharding=`` argument (a sharding, or a PartitionSpec over the
    `use_mesh` mesh or the operands' mesh): the result gets that type, whatever the
    operands' types would give (the op is computed untyped, then constrained)."""
    @functools.wraps(fn)
    def wrapped(*args, out_sharding=None, **kwargs):
        return with_out_sharding(lambda: fn(*args, **kwargs), out_sharding, args, fn.__name__)
    return wrapped


def with_out_sharding(compute: Callable, out_sharding: Any, operands: Sequence[Any], what: str
                      ) -> Any:
    """``compute()``, typed `out_sharding` when given (see `takes_out_sharding`)."""
    if out_sharding is None:
        return compute()
    with suspended():
        out = compute()
    return _constrain(out, out_sharding, operands, what)


def _constrain(out, out_sharding, operands, what: str):
    if isinstance(out_sharding, PartitionSpec):
        typed = [t for t in map(type_of, operands) if t is not None]
        mesh = current_mesh() or (typed[0].mesh if typed else None)
        if mesh is None:
            raise ShardingError(f"{what}: out_sharding={out_sharding} needs a mesh; give a "
                                "NamedSharding, or call it inside `with xs.use_mesh(mesh):`")
        out_sharding = NamedSharding(mesh, out_sharding)
    return with_sharding_constraint(out, out_sharding)


# ---------------------------------------------------------------------------------------------
# Control flow: the types of loop carries, branch results and captured values


def _capture_type(trace, x):
    """A value captured by a nested trace (a loop body, a branch) keeps its type there."""
    if not isinstance(x, Tracer) or x.trace.manual != trace.manual:
        return None, False
    return type_of(x), known(x)


tracing.CAPTURE_TYPES.append(_capture_type)


def types_of(values: Sequence[ArrayLike]) -> tuple[list, list]:
    """The type (or None) of each value and whether it is known (see `known`): what a
    nested trace's parameters standing for `values` are given (`trace_computation`)."""
    return [type_of(v) for v in values], [known(v) for v in values]


def _type_str(value, spec: Spec | None) -> str:
    """JAX's short form of a type: ``float32[8@a,4]``."""
    aval = value.aval
    spec = spec or ((),) * len(aval.dims)
    dims = [f"{n}" if not s else f"{n}@{s[0]}" if len(s) == 1 else f"{n}@({','.join(s)})"
            for n, s in zip(aval.dims, spec)]
    return f"{aval.dtype.numpy.name}[{','.join(dims)}]"


def _spec_or_replicated(value, typed, is_known) -> Spec | None:
    """The spec of a value's type; a known untyped value is replicated; None: unknown."""
    if isinstance(getattr(value, "aval", None), TupleShape):
        return None
    rank = len(value.aval.dims)
    if typed is not None:
        return _spec(typed, rank)
    return ((),) * rank if is_known else None


def check_carry(what: str, ins: Sequence[Any], in_types: Sequence[TensorSharding | None],
                in_known: Sequence[bool], outs: Sequence[Any], paths: Sequence[str]) -> None:
    """JAX's check that a loop body keeps its carry's types: the sharding of each output
    carry must be the input carry's (unknown types are not checked)."""
    diffs = []
    for value, typed, is_known, out, path in zip(ins, in_types, in_known, outs, paths):
        if not isinstance(out, Tracer) and not isinstance(value, Tracer):
            continue
        want = _spec_or_replicated(value, typed, is_known)
        got = _spec_or_replicated(out, type_of(out), known(out))
        if want is not None and got is not None and want != got:
            diffs.append(f"the input carry at path {path} has type {_type_str(value, want)} "
                         f"but the corresponding output carry component has type "
                         f"{_type_str(out, got)}")
    if diffs:
        listed = (diffs[0][0].upper() + diffs[0][1:] + ".\n" if len(diffs) == 1 else
                  "\n".join(f"  * {d};" for d in diffs[:-1]) + f"\n  * {diffs[-1]}.\n")
        raise ShardingTypeError(
            f"{what} function carry input and carry output must have equal types, but they "
            f"differ:\n\n{listed}\nRevise the function so that all output types match the "
            "corresponding input types.")


def check_branches(what: str, outs_per_branch: Sequence[Sequence[Any]]) -> list:
    """JAX's check that the branches of a `cond`/`switch` give equal types; returns each
    result's (type or None, known)."""
    first = outs_per_branch[0]
    found = [(type_of(o), known(o)) for o in first]
    for j, outs in enumerate(outs_per_branch[1:], start=1):
        diffs = []
        for k, (a, b) in enumerate(zip(first, outs)):
            sa = _spec_or_replicated(a, type_of(a), known(a))
            sb = _spec_or_replicated(b, type_of(b), known(b))
            if sa is not None and sb is not None and sa != sb:
                diffs.append(f"the output of branch 0 at path [{k}] has type "
                             f"{_type_str(a, sa)} but the corresponding output of branch {j} "
                             f"has type {_type_str(b, sb)}")
            if sb is None:
                found[k] = (None, False)
            elif found[k][0] is None and type_of(b) is not None:
                found[k] = (type_of(b), True)
        if diffs:
            listed = (diffs[0][0].upper() + diffs[0][1:] + ".\n" if len(diffs) == 1 else
                      "\n".join(f"  * {d};" for d in diffs[:-1]) + f"\n  * {diffs[-1]}.\n")
            raise ShardingTypeError(
                f"{what} branches must have equal output types but they differ.\n\n"
                f"{listed}\nRevise branch 0 and/or branch {j} so that all output types "
                "match.")
    return found


def mark_known(value: Value) -> None:
    """`value` (an untyped result of a loop or branch whose inputs were known) counts as
    replicated, as JAX's type of it would be."""
    if isinstance(value, Tracer):
        value.trace.__dict__.setdefault("_known_types", {})[id(value.inst)] = True


def typed_as(value: Value, sharding: TensorSharding) -> Value:
    """`value` with the sharding type `sharding` gives on the Explicit axes of its mesh (a
    ``Sharding`` constraint; `value` itself where no axis is Explicit or types are off):
    the results of a `shard_map` are typed by their out_specs, as in JAX."""
    if (_SUSPENDED and _SUSPENDED[-1]) or not explicit_axes_of(sharding.mesh) or \
            not isinstance(value, Tracer):
        return value
    typed = _sharding(sharding, _spec(sharding, len(value.aval.dims)))
    return tracing.bind("custom-call", value, shape=value.aval, custom_call_target=SHARDING,
                        sharding=typed)


def retyped(value: Any, mesh: Mesh) -> Any:
    """`value` resharded to its type over the axes of `mesh` that are Explicit here, as
    JAX's ``auto_axes``/``explicit_axes`` reshard their arguments and results to
    ``modify_spec_for_auto_manual`` of their specs: the axes that are Auto here leave the
    spec, and with any Auto axis every dim is open to them (propagation may add them).
    Anything but a traced value with a sharding on `mesh` is returned as it is."""
    if not isinstance(value, Tracer) or isinstance(value.aval, TupleShape):
        return value
    sharding = value.inst.sharding
    if not isinstance(sharding, TensorSharding) or sharding.mesh != mesh:
        return value
    from xla_spmd.ir.custom_calls import SHARDING
    typed = _sharding(sharding, _spec(sharding, len(value.aval.dims)))
    if typed == sharding:
        return value
    return tracing.bind("custom-call", value, shape=value.aval, custom_call_target=SHARDING,
                        sharding=typed)


def explicit_spec(spec: Sequence[Any], mesh: Mesh) -> tuple:
    """A PartitionSpec's entries with only the axes of `mesh` Explicit here (JAX's
    ``modify_spec_for_auto_manual``)."""
    explicit = set(explicit_axes_of(mesh))
    entries = []
    for entry in spec:
        names = () if entry is None else (entry,) if isinstance(entry, str) else tuple(entry)
        kept = tuple(a for a in names if a in explicit)
        entries.append(None if not kept else kept[0] if len(kept) == 1 else kept)
    return tuple(entries)


def vmap_types(values: Sequence[ArrayLike], batched: Sequence[bool]) -> tuple:
    """JAX's vmap typing of the (batch-at-axis-0) inputs: the mesh axes the mapped dim is
    sharded over (``explicit_mesh_axis``: every mapped input must agree, and no unmapped
    input may use them), each input's per-example type (its spec without the mapped dim,
    over the mesh with those axes made Auto), and whether it is known. Returns
    ``(mesh or None, axes, per-example types, known flags)``."""
    types, knowns = types_of(values)
    mapped = [(_spec(t, len(v.aval.dims))[0], t.mesh) for v, t, b in zip(values, types, batched)
              if b and t is not None]
    def raw(spec):
        return None if not spec else spec[0] if len(spec) == 1 else spec

    for spec, _ in mapped[1:]:
        if spec != mapped[0][0]:
            raise ValueError("Mapped away dimension of inputs passed to vmap should be "
                             f"sharded the same. Got inconsistent axis specs: "
                             f"{raw(mapped[0][0])} vs {raw(spec)}")
    axes = mapped[0][0] if mapped else ()
    mesh = mapped[0][1] if mapped else next((t.mesh for t in types if t is not None), None)
    for v, t, b in zip(values, types, batched):
        used = {a for dim in _spec(t, len(v.aval.dims)) for a in dim} if t is not None else ()
        if not b and any(a in used for a in axes):
            raise ValueError(
                "Unmapped values passed to vmap cannot be sharded along the mesh axis you are "
                f"vmapping over. Got type: {_type_str(v, _spec(t, len(v.aval.dims)))}, "
                f"in_axes: None and vmapped mesh axis: {axes}")
    if mesh is None:
        return None, (), [None] * len(values), knowns
    example = []
    with axis_types(mesh, auto=axes):
        for v, t, b in zip(values, types, batched):
            if t is None:
                example.append(None)
            else:
                spec = _spec(t, len(v.aval.dims))
                example.append(_sharding(t, spec[1:] if b else spec))
    return mesh, axes, example, knowns


def unmapped_type(example: TensorSharding, rank: int, axis: int, axes: Sequence[str]
                  ) -> TensorSharding:
    """A vmap result's type: its per-example type with the mapped axes (`vmap_types`) at
    `axis` (JAX's ``unmapped_aval`` with ``explicit_mesh_axis``)."""
    spec = list(_spec(example, rank - 1))
    spec.insert(axis, tuple(axes))
    return _sharding(example, tuple(spec))


def unstacked(typed: TensorSharding, rank: int) -> TensorSharding:
    """The type of one step of `scan`'s input: its type without the leading dim."""
    return _sharding(typed, _spec(typed, rank)[1:])


def stacked(typed: TensorSharding | None, rank: int) -> TensorSharding | None:
    """The type of `scan`'s stacked outputs: the per-step type with an unsharded leading
    dim."""
    if typed is None:
        return None
    return _sharding(typed, ((),) + _spec(typed, rank))


# ---------------------------------------------------------------------------------------------
# The rules: rule(inst, operand specs, mesh) -> result spec (or None: untyped)

RULES = Registry("sharding type rule")
"""opcode -> ``rule(inst, specs, mesh) -> Spec | None``; `specs` has one entry per operand
(None for a non-array operand)."""

TUPLE_RULES = Registry("sharding type rule of a tuple result")
"""opcode -> ``rule(inst, specs, mesh) -> [Spec per element] | None``."""


def infer(inst: Instruction, operands: Sequence[Any]
          ) -> TensorSharding | tuple[TensorSharding | None, ...] | None:
    """The sharding type of `inst`'s result from its operands' types (None: untyped; a tuple
    of shardings for the tuple results of a variadic ``reduce`` or ``sort``)."""
    if _SUSPENDED and _SUSPENDED[-1]:
        return None
    if inst.opcode == "get-tuple-element":
        return _element_type(operands[0], inst.attrs.index)
    types = [type_of(o) for o in operands]
    typed = [t for t in types if t is not None]
    if not typed or not all(known(o) for o in operands):
        return None
    like = typed[0]
    for other in typed[1:]:
        if other.mesh != like.mesh:
            raise ShardingTypeError(f"{inst.opcode}: the operands' meshes differ: "
                                    f"{like.mesh!r} and {other.mesh!r}")
    specs = [None if not isinstance(getattr(o, "aval", None), ArrayShape)
             else _spec(t, len(o.aval.dims)) for o, t in zip(operands, types)]
    if isinstance(inst.shape, TupleShape):
        rule = TUPLE_RULES.get(inst.opcode)
        try:
            found = None if rule is None else rule(inst, specs, like.mesh)
            return None if found is None else tuple(_sharding(like, spec) for spec in found)
        except ShardingTypeError:
            if _LENIENT:
                return None
            raise
    if not isinstance(inst.shape, ArrayShape):
        return None
    rule = _rule_for(inst) or _replicated_rule
    try:
        spec = rule(inst, specs, like.mesh)
        return None if spec is None else _sharding(like, spec)
    except ShardingTypeError:
        if _LENIENT:
            return None
        raise


def _element_type(tuple_value, index: int) -> TensorSharding | None:
    sharding = getattr(getattr(tuple_value, "inst", None), "sharding", None)
    if not isinstance(sharding, tuple) or index >= len(sharding):
        return None
    element = sharding[index]
    if isinstance(element, TensorSharding) and explicit_axes_of(element.mesh):
        return element
    return None


def _rule_for(inst: Instruction) -> Callable | None:
    if inst.opcode in RULES:
        return RULES[inst.opcode]
    if inst.op.family in (Family.UNARY, Family.BINARY):
        return _elementwise
    return None


def _replicated_rule(inst, specs, mesh):
    """An op with no rule: replicated if every typed operand is, else untyped."""
    if all(s is None or not any(s) for s in specs):
        return ((),) * inst.shape.rank
    return None


@RULES.register("select", "clamp", "convert", "bitcast-convert", "reduce-precision", "map")
def _elementwise(inst, specs, mesh):
    """JAX's broadcasting rule: per dim, the operands' shardings (unsharded meets sharded:
    sharded; two different shardings fail). Rank-0 operands (clamp bounds) take no part."""
    rank = inst.shape.rank
    if inst.opcode == "bitcast-convert" and any(s is not None and len(s) != rank
                                                for s in specs):
        return _replicated_rule(inst, specs, mesh)
    return _merge(inst, specs, rank)


def _merge(inst, specs, rank: int) -> Spec:
    ranked = [s for s in specs if s is not None and len(s) == rank and rank]
    result = []
    for d in range(rank):
        found = {s[d] for s in ranked if s[d]}
        if len(found) > 1:
            raise ShardingTypeError(
                f"{inst.opcode} got incompatible shardings for broadcasting: "
                f"{', '.join(_show(s) for s in ranked)}")
        result.append(found.pop() if found else ())
    return tuple(result)


@RULES.register("broadcast")
def _broadcast(inst, specs, mesh):
    result = [()] * inst.shape.rank
    for operand_dim, result_dim in enumerate(inst.attrs.dimensions):
        result[result_dim] = specs[0][operand_dim]
    return tuple(result)


@RULES.register("transpose")
def _transpose(inst, specs, mesh):
    return tuple(specs[0][d] for d in inst.attrs.dimensions)


@RULES.register("reduce")
def _reduce(inst, specs, mesh):
    reduced = set(inst.attrs.dimensions)
    return tuple(s for d, s in enumerate(specs[0]) if d not in reduced)


@TUPLE_RULES.register("reduce")
def _variadic_reduce(inst, specs, mesh):
    """A variadic reduce (argmax: the values and their indices): the operands (then as many
    init values) have one shape, so their specs merge as an elementwise op's; every result
    is that spec without the reduced dims."""
    reduced = set(inst.attrs.dimensions)
    inputs = specs[:len(specs) // 2]
    merged = _merge(inst, inputs, len(inputs[0]))
    return [tuple(s for d, s in enumerate(merged) if d not in reduced)] * len(inputs)


@RULES.register("reduce-window")
def _reduce_window(inst, specs, mesh):
    """Windows may not cross shards: a dim with a window, stride or padding must be
    unsharded (JAX's rule for cumulative reductions: cumsum over a sharded dim fails)."""
    spec = specs[0]
    for d, window in enumerate(inst.attrs.window.dims):
        moves = (window.size, window.stride, window.padding_low, window.padding_high,
                 window.lhs_dilation, window.rhs_dilation) != (1, 1, 0, 0, 1, 1)
        if moves and spec[d]:
            raise ShardingTypeError(
                f"Input should be unsharded over the axis being reduced. Got input spec "
                f"{_show(spec)} and axis={d}")
    return spec


def _sorted(inst, specs, mesh):
    dim = inst.attrs.dimensions[0]
    ranked = [s for s in specs if s is not None and any(s)]
    for spec in ranked:
        if spec[dim]:
            raise ShardingTypeError(
                "Arguments to sort must be unsharded over the sorting dimension. Got arg "
                f"spec={_show(spec)} and sorting dimension={dim}")
        if spec != ranked[0]:
            raise ShardingTypeError("Arguments to sort must have equal shardings, got: "
                                    + " ".join(_show(s) for s in ranked))
    return ranked[0] if ranked else specs[0]


RULES.register("sort")(_sorted)
TUPLE_RULES.register("sort")(lambda inst, specs, mesh: [_sorted(inst, specs, mesh)] *
                             len(inst.shape.elements))

@RULES.register("dot")
def _dot(inst, specs, mesh):
    lhs, rhs = specs
    a = inst.attrs
    lhs_batch = tuple(lhs[d] for d in a.lhs_batch_dims)
    rhs_batch = tuple(rhs[d] for d in a.rhs_batch_dims)
    if lhs_batch != rhs_batch:
        raise ShardingTypeError(
            "dot_general requires lhs batch dimensions and rhs batch dimensions to have the "
            f"same sharding, got {_show(lhs_batch)} and {_show(rhs_batch)}")
    lhs_contracting = tuple(lhs[d] for d in a.lhs_contracting_dims)
    rhs_contracting = tuple(rhs[d] for d in a.rhs_contracting_dims)
    if any(x and y for x, y in zip(lhs_contracting, rhs_contracting)):
        raise ShardingTypeError(
            "Contracting dimensions are sharded and it is ambiguous how the output should be "
            "sharded. Please specify the output sharding via the `out_sharding` parameter. "
            f"Got lhs_contracting_spec={_show(lhs_contracting)} and "
            f"rhs_contracting_spec={_show(rhs_contracting)}")
    lhs_free = [s for d, s in enumerate(lhs)
                if d not in a.lhs_batch_dims and d not in a.lhs_contracting_dims]
    rhs_free = [s for d, s in enumerate(rhs)
                if d not in a.rhs_batch_dims and d not in a.rhs_contracting_dims]
    return (*lhs_batch, *lhs_free, *rhs_free)


def _varying(inst, spec: Spec, in_dims, what: str, mesh: Mesh) -> Spec:
    """JAX's rule for ops whose result dims may be smaller than the operand's."""
    out_dims = inst.shape.dims
    if not out_dims or all(d == 1 for d in out_dims):
        return ((),) * len(out_dims)
    for in_size, out_size, axes in zip(in_dims, out_dims, spec):
        shards = math.prod(mesh.axis_size(a) for a in axes)
        if in_size != out_size and axes and out_size % shards:
            raise ShardingTypeError(
                f"{what} on sharded dims where out dim ({out_size}) is not divisible by mesh "
                f"axes ({shards}) with spec ({_show((axes,))[2:-1]}) is not implemented. Got "
                f"input spec {_show(spec)} and output shape {list(out_dims)}")
    return spec


@RULES.register("slice")
def _slice(inst, specs, mesh):
    return _varying(inst, specs[0], inst.operands[0].shape.dims, "slicing", mesh)


@RULES.register("dynamic-slice")
def _dynamic_slice(inst, specs, mesh):
    return _varying(inst, specs[0], inst.operands[0].shape.dims, "dynamic_slice", mesh)


@RULES.register("pad")
def _pad(inst, specs, mesh):
    return _varying(inst, specs[0], inst.operands[0].shape.dims, "padding", mesh)


@RULES.register("concatenate", "dynamic-update-slice")
def _same_as_operands(inst, specs, mesh):
    rank = inst.shape.rank
    ranked = [s for s in specs if s is not None and len(s) == rank]
    typed = [s for s, o in zip(specs, inst.operands) if s is not None and len(s) == rank
             and any(s)] or ranked[:1]
    if any(s != typed[0] for s in typed[1:]):
        raise ShardingTypeError(f"{inst.opcode}: all operands should have the same sharding. "
                                f"Got {', '.join(_show(s) for s in ranked)}")
    return typed[0]


@RULES.register("gather")
def _gather(inst, specs, mesh):
    """JAX's gather rule: the dims indexed into must be sliced whole or unsharded, batching
    dims must agree with the indices', and the indices' other dims (and index vector) must
    be unsharded; then offset dims take the operand's spec, the others the indices'."""
    a = inst.attrs
    operand_dims = inst.operands[0].shape.dims
    op_spec, idx_spec = specs[0], list(specs[1])
    if not any(op_spec) and not any(idx_spec):
        return ((),) * inst.shape.rank
    whole_or_unsharded = all(a.slice_sizes[d] == operand_dims[d] or not op_spec[d]
                             for d in a.start_index_map)
    batching_agree = all(idx_spec[i] == op_spec[o] or not op_spec[o] or not idx_spec[i]
                         for o, i in zip(a.operand_batching_dims,
                                         a.start_indices_batching_dims))
    others_unsharded = all(not s for i, s in enumerate(idx_spec)
                           if i not in a.start_indices_batching_dims)
    if not (whole_or_unsharded and batching_agree and others_unsharded):
        raise ShardingTypeError(
            "Use `.at[...].get(out_sharding=)` to provide output PartitionSpec for the gather "
            "indexing as out sharding could not be resolved unambiguously (or would require "
            f"collectives on inputs). Got operand spec {_show(op_spec)} and indices spec "
            f"{_show(tuple(idx_spec))}")
    for o, i in zip(a.operand_batching_dims, a.start_indices_batching_dims):
        idx_spec[i] = idx_spec[i] or op_spec[o]
    window = iter(d for d in range(len(operand_dims))
                  if d not in a.collapsed_slice_dims and d not in a.operand_batching_dims)
    batch = iter(s for i, s in enumerate(idx_spec) if i != a.index_vector_dim)
    return tuple(op_spec[next(window)] if d in a.offset_dims else next(batch)
                 for d in range(inst.shape.rank))


@RULES.register("scatter")
def _scatter(inst, specs, mesh):
    """JAX's scatter rule (``_scatter_spec_computation``, one operand): batching dims must
    resolve to one sharding across operand, indices and updates; a window dim that updates
    the operand's whole dim may be sharded (the operand's and the updates' specs must agree,
    or one be unsharded: JAX broadcasts the updates with the operand's slice sharding); the
    other window dims, the dims written into, the updates' and indices' other query dims
    and the index vector must be unsharded. The result has the operand's spec, completed
    by the batching dims' and window dims' shardings."""
    a = inst.attrs
    if len(inst.operands) != 3:
        return None
    op_spec, idx_spec, upd_spec = specs
    if not any(op_spec) and not any(idx_spec) and not any(upd_spec):
        return op_spec
    op_dims, upd_dims = inst.operands[0].shape.dims, inst.operands[2].shape.dims
    scatter_dims = [d for d in range(len(upd_dims)) if d not in a.update_window_dims]
    index_dims = [d for d in range(len(idx_spec)) if d != a.index_vector_dim]
    # the updates' scatter dims follow the indices' dims (but the index vector), in order
    upd_of_idx = dict(zip(index_dims, scatter_dims))
    batching = [(o, i, upd_of_idx[i]) for o, i in zip(a.input_batching_dims,
                                                     a.scatter_indices_batching_dims)]
    windows = [d for d in range(len(op_dims))
               if d not in a.inserted_window_dims and d not in a.input_batching_dims]
    result = list(op_spec)
    ok = all(len({s for s in (op_spec[o], idx_spec[i], upd_spec[u]) if s}) <= 1
             for o, i, u in batching)
    for od, ud in zip(windows, a.update_window_dims):
        if upd_dims[ud] == op_dims[od]:
            if op_spec[od] and upd_spec[ud] and op_spec[od] != upd_spec[ud]:
                ok = False
            result[od] = op_spec[od] or upd_spec[ud]
        elif op_spec[od] or upd_spec[ud]:
            ok = False
    batch_upd = {u for _, _, u in batching}
    batch_idx = {i for _, i, _ in batching}
    ok = ok and not any(op_spec[d] for d in a.inserted_window_dims)
    ok = ok and not any(upd_spec[d] for d in scatter_dims if d not in batch_upd)
    ok = ok and not any(idx_spec[d] for d in range(len(idx_spec)) if d not in batch_idx)
    if not ok:
        raise ShardingTypeError(
            "Use `.at[...].set/add/mul/...(out_sharding=)` to provide output PartitionSpec "
            "for the scatter update as out sharding could not be resolved unambiguously (or "
            f"would require collectives on inputs). Got operand spec {_show(op_spec)}, "
            f"indices spec {_show(idx_spec)} and updates spec {_show(upd_spec)}")
    for o, i, u in batching:
        result[o] = op_spec[o] or idx_spec[i] or upd_spec[u]
    return tuple(result)


@RULES.register("reverse")
def _reverse(inst, specs, mesh):
    """JAX's rev rule: the operand's spec (reversing a sharded dim moves data)."""
    return specs[0]


@TUPLE_RULES.register("topk")
def _top_k(inst, specs, mesh):
    """JAX's top_k rule: the dim searched (the last, in HLO) must be unsharded; the values
    and indices have the operand's spec."""
    spec = specs[0]
    if spec and spec[-1]:
        raise ShardingTypeError(
            "The input should be unsharded over the axis along which to compute the top_k "
            f"values. Got input spec {_show(spec)} and axis={len(spec) - 1}")
    return [spec, spec]


@RULES.register("convolution")
def _convolution(inst, specs, mesh):
    """JAX's ``conv_general_dilated`` rule: the kernel must be replicated and the input's
    feature dim unsharded; then the result has the input's spec, dim by dim position (each
    changed size must still divide by its shards), as JAX's
    ``_get_sharding_for_varying_out_shape`` gives it."""
    lhs, rhs = specs
    if any(rhs) or lhs[inst.attrs.dim_labels.input_feature]:
        raise ShardingTypeError("Please specify the output sharding via `out_sharding` "
                                "parameter of `conv_general_dilated`. Got lhs spec "
                                f"{_show(lhs)} and rhs spec {_show(rhs)}")
    return _varying(inst, lhs, inst.operands[0].shape.dims, "conv_general_dilated", mesh)


@RULES.register("reshape")
def _reshape(inst, specs, mesh):
    spec, old = specs[0], inst.operands[0].shape.dims
    new = inst.shape.dims
    if not any(spec):
        return ((),) * len(new)

    def fail():
        raise ShardingTypeError(
            "This reshape is not supported. Please specify the sharding of the output via "
            f"the `out_sharding` argument of reshape. Got operand spec {_show(spec)}, shape "
            f"{list(old)}, new sizes {list(new)}")

    result: list = [()] * len(new)
    i = j = 0
    while i < len(old) or j < len(new):
        # One group: the fewest dims on each side whose sizes have equal products.
        gi, gj = [i] if i < len(old) else [], [j] if j < len(new) else []
        pi = old[i] if i < len(old) else 1
        pj = new[j] if j < len(new) else 1
        i, j = i + bool(gi), j + bool(gj)
        while pi != pj:
            if pi < pj and i < len(old):
                gi.append(i)
                pi *= old[i]
                i += 1
            elif j < len(new):
                gj.append(j)
                pj *= new[j]
                j += 1
            else:
                fail()
        in_dims = [d for d in gi if old[d] != 1]
        out_dims = [d for d in gj if new[d] != 1]
        axes = [a for d in gi for a in spec[d]]
        if not axes:
            continue
        if len(in_dims) == 1:       # a split (or an unchanged dim): major-first
            remaining = list(spec[in_dims[0]])
            for d in out_dims:
                size, taken = new[d], []
                while remaining and size > 1:
                    axis_size = mesh.axis_size(remaining[0])
                    if size % axis_size:
                        fail()
                    size //= axis_size
                    taken.append(remaining.pop(0))
                result[d] = tuple(taken)
            if remaining:
                fail()
        elif len(out_dims) == 1:    # a merge: only a major prefix of the dims may be sharded
            sharded = [bool(spec[d]) for d in in_dims]
            while sharded and not sharded[-1]:
                sharded.pop()
            if not all(sharded):
                fail()
            if new[out_dims[0]] % math.prod(mesh.axis_size(a) for a in axes):
                fail()
            result[out_dims[0]] = tuple(axes)
        else:
            fail()
    return tuple(result)


@RULES.register("fft")
def _fft(inst, specs, mesh):
    """JAX's ``fft`` (its abstract eval updates only the operand's shape and dtype): the
    result has the operand's spec, the transformed dims included (an rfft/irfft's resized
    last dim keeps its sharding too)."""
    return specs[0]


def _linalg_batch(name: str, specs, ranks) -> Spec:
    """JAX's ``linalg_sharding_rule``: each operand unsharded on its last `rank` dims, and
    the operands' batch specs equal; returns that batch spec."""
    batches = []
    for i, (spec, rank) in enumerate(zip(specs, ranks)):
        if any(spec[len(spec) - rank:]):
            raise ShardingTypeError(f"Input {i} to {name} must be unsharded on non-batch "
                                    f"dimensions, but got {_show(spec)}.")
        batches.append(spec[:len(spec) - rank])
    if any(b != batches[0] for b in batches[1:]):
        raise ShardingTypeError(f"All inputs to {name} must have the same batch sharding, "
                                f"but got {[_show(b) for b in batches]}.")
    return batches[0]


@RULES.register("cholesky")
def _cholesky(inst, specs, mesh):
    """JAX's cholesky rule (``linalg_sharding_rule``): the matrix dims (the last two) must
    be unsharded; the batch dims keep their sharding."""
    return (*_linalg_batch("cholesky", specs, (2,)), (), ())


@RULES.register("triangular-solve")
def _triangular_solve(inst, specs, mesh):
    """JAX's ``_tri_solve_sharding``: a and b have equal batch specs; a's contracting dim
    and b's contracting dim must be unsharded; the result's matrix dims are (a's other dim,
    b's columns) for ``op(a) x = b`` and (b's rows, a's other dim) for ``x op(a) = b``."""
    a, b = specs
    batch, a_spec = a[:-2], a[-2:]
    batch_b, b_spec = b[:-2], b[-2:]
    left = bool(inst.attrs.left_side)
    transpose_a = str(inst.attrs.transpose_a or "NO_TRANSPOSE").upper() != "NO_TRANSPOSE"
    shown = f"left_side={left} and transpose_a={transpose_a}"
    if batch != batch_b:
        raise ShardingTypeError("All inputs to triangular_solve must have the same batch "
                                f"sharding, but got {_show(batch)} and {_show(batch_b)}.")
    if a_spec[left ^ transpose_a]:
        raise ShardingTypeError("triangular solve input `a` must be unsharded on the "
                                f"contracting axis, but got {_show(a)} with {shown}.")
    if b_spec[not left]:
        raise ShardingTypeError("triangular solve input `b` must be unsharded on the "
                                f"contracting axis, but got {_show(b)} with {shown}.")
    out = (a_spec[transpose_a], b_spec[1]) if left else (b_spec[0], a_spec[not transpose_a])
    return (*batch, *out)


@TUPLE_RULES.register("rng-bit-generator")
def _rng_bit_generator(inst, specs, mesh):
    """JAX's ``rng_bit_generator`` rule: the new state has the key's spec, the bits are
    replicated (give ``out_sharding=`` for another type)."""
    return [specs[0], ((),) * inst.shape.elements[1].rank]


# Installed into tracing's bind: every op bound in a trace asks `infer` for its type.
tracing.TYPE_RULES.append(infer)
