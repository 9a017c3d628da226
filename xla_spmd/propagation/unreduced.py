"""The collectives unreduced axes need, as Shardy's ``sdy-insert-explicit-reshards`` inserts
them at the end of its propagation pipeline (its default, not-full version: no other reshard
is made explicit).

`insert_unreduced_all_reduces(module)`:

- an operand whose sharding holds unreduced axes that its user's (first) result sharding
  does not hold gets an ``sdy.all_reduce`` over those axes, just before the user and for that
  use only, its ``out_sharding`` the operand's without them (Shardy's
  ``insertAllReduceOnOpIfUnreducedToReplicated``); a function's results likewise, against
  the result shardings (a result without one: every unreduced axis reduced);
- an op whose result holds unreduced axes and whose reduction factors (a dot's contracting
  dims, a reduce's reduced dims) are sharded on axes the result does not hold unreduced gets
  an ``sdy.all_reduce`` of those just after it, which its users then use
  (``insertAllReducesForReductionFactors``).

An ``sdy.all_reduce`` is the importer's form of it: a ``Sharding`` custom call carrying the
out sharding, frontend attributes ``xla.sdy.collective`` and ``xla.sdy.collective_params``.
Ops that are data-flow edges (while, conditional, call, manual computation boundaries,
tuples) are left alone; so is a reshard that adds unreduced axes (Shardy turns it into
``sdy.replicated_to_unreduced`` / ``sdy.sharded_to_unreduced``).

>>> from xla_spmd.ir import Builder, ArrayShape, F32, Module
>>> from xla_spmd.mesh import make_mesh
>>> from xla_spmd.sharding import TensorSharding
>>> mesh = make_mesh({"a": 2, "b": 2})
>>> b = Builder("main")
>>> x = b.parameter(ArrayShape(F32, (8, 8)), sharding=TensorSharding(mesh, [["a"], ["b"]]))
>>> y = b.parameter(ArrayShape(F32, (8, 8)), sharding=TensorSharding(mesh, [["b"], []]))
>>> d = b.dot(x, y, lhs_contracting_dims=(1,), rhs_contracting_dims=(0,),
...           sharding=TensorSharding(mesh, [["a"], []], unreduced=["b"]))
>>> out = b.op("copy", d, sharding=TensorSharding(mesh, [["a"], []]))
>>> m = insert_unreduced_all_reduces(Module.from_entry("m", b.build(out)))
>>> reduce = m.entry.root.operands[0]
>>> reduce.frontend_attribute("xla.sdy.collective_params"), str(reduce.sharding)
('{"b"}', '#sdy.sharding<@mesh, [{"a"}, {}]>')
"""

from __future__ import annotations

from xla_spmd.errors import XlaSpmdError
from xla_spmd.ir import (
    Computation,
    Instruction,
    Module,
    make_instruction,
    map_computations,
    op_named,
    rebind_called,
)
from xla_spmd.ir.builder import NameGenerator
from xla_spmd.ir.custom_calls import (
    DATA_FLOW_EDGE,
    FUNC_DATA_FLOW_EDGE,
    FUNC_RESULT_SHARDING,
    GLOBAL_TO_LOCAL,
    LOCAL_TO_GLOBAL,
    SHARDING,
    SHARDING_GROUP,
)
from xla_spmd.mesh import AxisRef, Mesh, axis_digits, merge_sub_axes
from xla_spmd.propagation.factors import FactorType
from xla_spmd.propagation.projection import AxisSizes, FactorSharding, project_dim
from xla_spmd.sharding import TensorSharding

# Ops that are data-flow edges or Shardy's structure, not ops with a sharding rule.
_SKIPPED_OPCODES = frozenset({"parameter", "tuple", "get-tuple-element", "while",
                              "conditional", "call", "optimization-barrier"})
_SKIPPED_TARGETS = frozenset({DATA_FLOW_EDGE, FUNC_DATA_FLOW_EDGE, GLOBAL_TO_LOCAL,
                              LOCAL_TO_GLOBAL, SHARDING_GROUP})


def insert_unreduced_all_reduces(module: Module) -> Module:
    """Every ``sdy.all_reduce`` unreduced axes need, inserted (module doc)."""
    from xla_spmd.propagation.calls import _functions
    names = NameGenerator(inst.name for computation in module.computations
                          for inst in computation.instructions)
    functions = {c.name for c in _functions(module)}

    def rebuild(computation: Computation, replaced: dict) -> Computation:
        return _rebuild(computation, replaced, names, computation.name in functions)
    return map_computations(module, rebuild)


def _rebuild(computation: Computation, replaced: dict, names: NameGenerator,
             is_function: bool) -> Computation:
    """`computation` with its all-reduces; its root is a function's return when
    `is_function` (a region's root is its data-flow op's business)."""
    final: dict[Instruction, Instruction] = {}
    instructions: list[Instruction] = []
    for inst in computation.instructions:
        operands = tuple(final.get(o, o) for o in inst.operands)
        is_return = is_function and inst is computation.root and inst.opcode == "tuple"
        takes_part = is_return or _takes_part(inst)
        if takes_part:
            target = None if is_return else _target_sharding(inst)
            new_operands = []
            for operand in operands:
                reduce = _reduce_to(operand, target, names)
                if reduce is not None:
                    instructions.append(reduce)
                    operand = reduce
                new_operands.append(operand)
            operands = tuple(new_operands)
        new = rebind_called(inst, replaced)
        if operands != new.operands:
            new = new.replace(operands=operands)
        instructions.append(new)
        final[inst] = new
        after = _reduction_factor_all_reduce(new, names) if takes_part else None
        if after is not None:
            instructions.append(after)
            final[inst] = after
    root = final[computation.root]
    if is_function and computation.root.opcode != "tuple" and \
            getattr(computation.root.attrs, "custom_call_target", None) != FUNC_RESULT_SHARDING:
        # a returned value with no result sharding: its unreduced axes reduced
        reduce = _reduce_to(root, None, names)
        if reduce is not None:
            instructions.append(reduce)
            root = reduce
    if len(instructions) == len(computation.instructions) and \
            all(a is b for a, b in zip(instructions, computation.instructions)):
        return computation
    return Computation(computation.name, tuple(instructions), root, computation.extras)


def _takes_part(inst: Instruction) -> bool:
    return inst.opcode not in _SKIPPED_OPCODES and \
        getattr(inst.attrs, "custom_call_target", None) not in _SKIPPED_TARGETS


def _target_sharding(inst: Instruction) -> TensorSharding | None:
    """The sharding `inst`'s operands are reduced toward: its first result's."""
    first = inst.sharding_leaves()[0]
    return first if isinstance(first, TensorSharding) else None


def _reduce_to(operand: Instruction, target: TensorSharding | None,
               names: NameGenerator) -> Instruction | None:
    """The all-reduce `operand` needs before a use whose sharding is `target`, or None."""
    source = operand.sharding
    if not isinstance(source, TensorSharding) or not source.unreduced:
        return None
    kept = target.unreduced if target is not None else ()
    axes = axis_set_diff(source.mesh, source.unreduced, kept)
    if not axes:
        return None
    out = source.replace(unreduced=axis_set_diff(source.mesh, source.unreduced, axes))
    return _all_reduce(operand, axes, out, source.reduction, names)


def _reduction_factor_all_reduce(inst: Instruction, names: NameGenerator) -> Instruction | None:
    """The all-reduce after `inst` its sharded reduction factors need when its result is
    unreduced on fewer axes, or None."""
    result = inst.sharding
    if not isinstance(result, TensorSharding) or not result.unreduced \
            or inst.shape.is_tuple:
        return None
    from xla_spmd.propagation.registry import sharding_rule
    try:
        rule = sharding_rule(inst)
    except XlaSpmdError:
        return None
    if rule is None or rule.is_custom or not rule.factors_of(FactorType.REDUCTION):
        return None
    sizes = AxisSizes(result.mesh)
    projected = []
    for operand, mapping in zip(inst.operands, rule.operands):
        sharding = operand.sharding
        factors: dict[int, FactorSharding] = {}
        for dim, dim_factors in enumerate(mapping):
            axes = sharding.dims[dim].axes if isinstance(sharding, TensorSharding) and \
                sharding.mesh == result.mesh and dim < sharding.rank else ()
            project_dim(axes, dim_factors, rule.factor_sizes, True, sizes, factors)
        projected.append(factors)
    reduction: list[AxisRef] = []
    for factor in rule.factors_of(FactorType.REDUCTION):
        shardings = {p[factor].axes for p in projected if factor in p}
        if len(shardings) != 1:
            return None     # operands disagree: Shardy stops here (it never happens there)
        reduction.extend(shardings.pop())
    axes = axis_set_diff(result.mesh, reduction, result.unreduced)
    if not axes:
        return None
    return _all_reduce(inst, merge_sub_axes(result.mesh, _in_mesh_order(result.mesh, axes)),
                       result, result.reduction, names)


def _all_reduce(operand: Instruction, axes, out: TensorSharding, reduction: str,
                names: NameGenerator) -> Instruction:
    custom_call = op_named("custom-call")
    kind = "" if reduction == "sum" else f"{reduction} "   # sdy.all_reduce max {"x"} ...
    params = kind + "{" + ", ".join(map(str, axes)) + "}"
    return make_instruction(
        names(f"{operand.name}.all_reduce"), custom_call, (operand,),
        custom_call.make_attrs(custom_call_target=SHARDING), operand.shape, sharding=out,
        frontend_attributes=(("xla.sdy.collective", "all_reduce"),
                             ("xla.sdy.collective_params", params)))


def axis_set_diff(mesh: Mesh, axes, removed) -> tuple[AxisRef, ...]:
    """The parts of `axes` that `removed` does not cover, in `axes`' order, adjacent
    sub-axes merged (Shardy's ``getAxisSetDiff``).

    >>> from xla_spmd.mesh import make_mesh
    >>> mesh = make_mesh({"a": 4, "b": 2})
    >>> axis_set_diff(mesh, [AxisRef("a"), AxisRef("b")], [AxisRef("a", (2, 2))])
    (AxisRef('a':(1)2), AxisRef('b'))
    """
    axes, removed = list(axes), list(removed)
    digits = axis_digits(mesh, axes + removed)

    def covers(ref: AxisRef, digit: AxisRef) -> bool:
        size = mesh.shape[ref.name]
        return digit.name == ref.name and ref.pre_size <= digit.pre_size and \
            digit.next_pre_size(size) <= ref.next_pre_size(size)

    left = [digit for ref in axes for digit in digits
            if covers(ref, digit) and not any(covers(r, digit) for r in removed)]
    return merge_sub_axes(mesh, left)


def _in_mesh_order(mesh: Mesh, axes) -> list[AxisRef]:
    order = list(mesh.axis_names)
    return sorted(axes, key=lambda a: (order.index(a.name), a.pre_size))
