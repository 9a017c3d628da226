"""The sharding-rule registry: one entry per opcode, filled by the `rules_*` modules when the
package ``__init__`` imports them (this module imports none of them).

An entry is ``fn(instruction) -> OpShardingRule | None``. ``None`` means the op has no factor
rule because the driver handles it another way (parameters and constants are leaves; tuples
alias their elements; while, conditional and call are data-flow edges; an unknown custom call
is left alone, as Shardy does). A missing entry is an error naming the op.

>>> from xla_spmd.ir import Builder, ArrayShape, F32
>>> b = Builder("m")
>>> x = b.parameter(ArrayShape(F32, (8, 8)))
>>> y = b.parameter(ArrayShape(F32, (8, 16)))
>>> print(sharding_rule(b.dot(x, y, lhs_contracting_dims=(1,), rhs_contracting_dims=(0,))))
#sdy.op_sharding_rule<([i, k], [k, j])->([i, j]) {i=8, j=16, k=8} reduction={k}>
"""

from __future__ import annotations

import contextlib
import contextvars

from xla_spmd.errors import VerifyError
from xla_spmd.ir import ArrayShape, Instruction, Registry
from xla_spmd.ir.custom_calls import SHARDING_RULE
from xla_spmd.ir.lowered import lowered_groups
from xla_spmd.propagation.factors import OpShardingRule, RuleBuilder, parse_rule

RULES = Registry("sharding")
# Custom-call targets whose rule depends on the op's users (Shardy's X64Combine feeding a
# rng_bit_generator): target -> fn(inst, users) giving the rule, or None for the usual one.
USER_DEPENDENT_RULES: dict = {}
_CONSERVATIVE = contextvars.ContextVar("conservative_propagation", default=False)


@contextlib.contextmanager
def conservative_propagation(enabled: bool = True):
    """Shardy's ``conservative-propagation`` inside: rules give no factor for a
    concatenated dim or a convolution's spatial dims and block the permutation factors of
    pad, slice, reduce-window and select-and-scatter; the conflict policies never split an
    axis into sub-axes to extend a factor's sharding (conflicts.truncate_for).

    >>> from xla_spmd.ir import Builder, ArrayShape, F32, PadDim
    >>> b = Builder("m")
    >>> x = b.parameter(ArrayShape(F32, (4, 8)))
    >>> with conservative_propagation():
    ...     print(sharding_rule(b.concatenate(x, x, dimensions=(1,))))
    #sdy.op_sharding_rule<([i, j], [i, k])->([i, l]) {i=4, j=1, k=1, l=1}>
    """
    token = _CONSERVATIVE.set(enabled)
    try:
        yield
    finally:
        _CONSERVATIVE.reset(token)


def is_conservative() -> bool:
    """Whether rules are being built conservatively (see `conservative_propagation`)."""
    return _CONSERVATIVE.get()


def sharding_rule(inst: Instruction, users=()) -> OpShardingRule | None:
    """The factor rule of `inst`, or None when the driver handles the op without one. A
    rule written on the op (``sdy.sharding_rule``) wins over the built-in one. `users`
    (the instructions using `inst`) matter to a few custom calls (`USER_DEPENDENT_RULES`)."""
    written = inst.frontend_attribute(SHARDING_RULE)
    if written is not None:
        return parse_rule(written, inst.name)
    if users and inst.op.name == "custom-call":
        special = USER_DEPENDENT_RULES.get(inst.attrs.custom_call_target)
        rule = special(inst, users) if special is not None else None
        if rule is not None:
            return rule
    return RULES.lookup(inst.op.name)(inst)


def with_sharding_rules(module):
    """`module` with each op's built-in factor rule written on it (``sdy.sharding_rule``,
    frontend attribute `SHARDING_RULE`), as Shardy's ``-sdy-populate-op-sharding-rules``
    (and its propagation with ``keep-sharding-rules=true``) leaves them. An op's own rule
    stays; sdy's own ops (constraints, ``xla.sdy.*`` calls) get none. A StableHLO op the
    importer wrote as several HLO ops (`xla_spmd.ir.lowered`) gets the one op's rule.

    >>> from xla_spmd.ir import Builder, Module, ArrayShape, F32
    >>> b = Builder("f")
    >>> x = b.parameter(ArrayShape(F32, (4, 8)))
    >>> m = with_sharding_rules(Module.from_entry("m", b.build(b.negate(x))))
    >>> m.entry.root.frontend_attribute(SHARDING_RULE)
    '#sdy.op_sharding_rule<([i, j])->([i, j]) {i=4, j=8}>'
    """
    from xla_spmd.ir import map_computations, rewrite

    def attach(computation, replaced):
        uses = computation.users()
        # a StableHLO op the importer wrote as several HLO ops: the one op's rule, on the op
        # that prints it (xla_spmd.ir.lowered)
        groups = lowered_groups(computation)
        hidden = {inst for group in groups.values() for inst in group.hidden}

        def fn(inst, operands):
            if inst in hidden:
                return None
            group = groups.get(inst)
            rule = sharding_rule(group.virtual if group else inst, uses.get(inst, ()))
            target = getattr(inst.attrs, "custom_call_target", "")
            if rule is None or target == "Sharding" or target.startswith("xla.sdy.") or \
                    inst.frontend_attribute(SHARDING_RULE) is not None:
                return None     # sdy's own ops print as themselves, without a rule
            return inst.replace(operands=operands, frontend_attributes=tuple(
                inst.frontend_attributes) + ((SHARDING_RULE, str(rule)),))
        return rewrite(computation, fn)
    return map_computations(module, attach)


def array_operands(inst: Instruction) -> list[tuple[int, ...]] | None:
    """Operand dims, or None if some operand is a tuple (such ops get no rule)."""
    dims = []
    for operand in inst.operands:
        if not isinstance(operand.shape, ArrayShape):
            return None
        dims.append(operand.shape.dims)
    return dims


def result_dims(inst: Instruction) -> list[tuple[int, ...]]:
    """Dims of every result leaf (a tuple-shaped op has one result per leaf)."""
    return [leaf.dims for leaf in inst.shape.leaves()]


def builder_or_none(inst: Instruction) -> RuleBuilder | None:
    """A rule builder over `inst`'s operand and result dims, or None if an operand is a
    tuple (an op that then gets no rule)."""
    operands = array_operands(inst)
    if operands is None:
        return None
    return RuleBuilder(operands, result_dims(inst))


def builder_for(inst: Instruction) -> RuleBuilder:
    """A rule builder for an op whose operands are arrays; a tuple operand is an error
    naming the op (a rule of an op that may take tuples calls `builder_or_none`)."""
    builder = builder_or_none(inst)
    if builder is None:
        shapes = ", ".join(str(o.shape) for o in inst.operands)
        raise VerifyError(f"'{inst.op.name}' {inst.name}: its sharding rule needs array "
                          f"operands, got {shapes}")
    return builder


def no_rule(inst: Instruction) -> None:
    """Ops the driver handles without a factor rule (leaves, tuples, control flow)."""
    return None
