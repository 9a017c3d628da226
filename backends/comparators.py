"""Recognise sort comparators that are a lexicographic LT/GT over (transformed) keys.

Every backend sorts faster with a key sort than by calling the comparator region: this module
reads the comparator's structure once, and each backend evaluates the key expressions its own
way (the reference evaluator with numpy, a compiled backend in generated code).

A comparator is recognised when its root is built from

* ``compare(K(lhs_i), K(rhs_i)), direction=LT|GT`` -- key i, ascending (LT) or descending (GT);
  the operands swapped flip the direction;
* ``or(LT_i, and(EQ_i, REST))`` (either operand order of ``or``/``and``) or
  ``select(EQ_i, REST, LT_i)`` -- lexicographic: key i first, ties broken by REST, where
  ``EQ_i`` is ``compare(K(lhs_i), K(rhs_i)), direction=EQ`` over the same key expression, or,
  for integer keys (or TOTALORDER), ``compare(GT_i, GT_i'), direction=EQ`` with ``GT_i'`` the
  same comparison with the sides swapped (neither before the other, as XLA's top-k writes);

where ``lhs_i``/``rhs_i`` are the comparator's parameters ``2i``/``2i+1`` and ``K`` is the same
scalar elementwise expression of one parameter on both sides (the identity, or the
bitcast/select dance JAX and XLA write to order floats with NaNs as TOTALORDER does). Elements
tied on every key keep their input order (a stable sort), as XLA's sort does.

Example: the top-k comparator ``or(compare(p0, p1, GT), and(compare(p0, p1, EQ),
compare(p2, p3, LT)))`` is ``(SortKey(operand=0, descending=True, ...),
SortKey(operand=1, descending=False, ...))``: values descending, ties by the iota payload.
"""

from __future__ import annotations

from dataclasses import dataclass

from xla_spmd.ir import Computation, Instruction

# Scalar ops a key expression may use: each maps one element to one element.
_KEY_OPS = frozenset({
    "parameter", "constant", "bitcast-convert", "convert", "select", "compare", "subtract",
    "add", "negate", "not", "and", "or", "xor", "abs", "multiply", "maximum", "minimum",
    "shift-right-logical", "shift-right-arithmetic", "shift-left",
})


@dataclass(frozen=True)
class SortKey:
    """One key of a lexicographic comparator: sort operand `operand`, transformed by the
    scalar expression `expression` of the comparator parameter `parameter` (the lhs one),
    compared as `comparison` (a ComparisonType, or None for the dtype's default)."""

    operand: int
    descending: bool
    expression: Instruction
    parameter: Instruction
    comparison: object


def recognize_comparator(computation: Computation) -> tuple[SortKey, ...] | None:
    """The keys of a lexicographic LT/GT comparator, major first; None when `computation`
    is not one (the caller then calls the comparator itself)."""
    params = computation.parameters
    if len(params) < 2 or len(params) % 2 or any(p.shape.rank for p in params):
        return None
    keys: list[SortKey] = []
    node = computation.root
    while True:
        key = _key_compare(node, params, ("LT", "GT"))
        if key is not None:
            keys.append(key)
            break
        split = _lexicographic(node, params)
        if split is None:
            return None
        key, node = split
        keys.append(key)
    if len({k.operand for k in keys}) != len(keys):
        return None
    return tuple(keys)


def _lexicographic(node: Instruction, params) -> tuple[SortKey, Instruction] | None:
    """(major key, the comparator of ties) of ``or(LT, and(EQ, rest))`` or
    ``select(EQ, rest, LT)``."""
    name = node.op.name
    if name == "select":
        equal, rest, less = node.operands
        return _with_tie(less, equal, rest, params)
    if name != "or" or node.shape.dtype.name != "pred":
        return None
    for less, other in (node.operands, node.operands[::-1]):
        if other.op.name != "and":
            continue
        for equal, rest in (other.operands, other.operands[::-1]):
            found = _with_tie(less, equal, rest, params)
            if found is not None:
                return found
    return None


def _with_tie(less, equal, rest, params):
    key = _key_compare(less, params, ("LT", "GT"))
    if key is None:
        return None
    if _neither_before(equal, key, params):
        return key, rest
    tie = _key_compare(equal, params, ("EQ",))
    if tie is None or tie.operand != key.operand \
            or not _same_expression(key.expression, tie.expression, {}) \
            or key.comparison != tie.comparison:
        return None
    return key, rest


def _neither_before(equal: Instruction, key: SortKey, params) -> bool:
    """Whether `equal` is ``compare(GT(K(l), K(r)), GT(K(r), K(l))), direction=EQ`` (or with
    LT): "neither key before the other", as XLA's top-k comparators write a tie. It is the
    keys' equality only where their order is total: integer keys (the float-ordering dance
    ends in one), or floats compared as TOTALORDER; a float NaN is before nothing."""
    if equal.op.name != "compare" or equal.attrs.direction.value != "EQ":
        return False
    sides = [_key_compare(side, params, ("LT", "GT")) for side in equal.operands]
    if any(side is None for side in sides):
        return False
    first, second = sides
    assert first is not None and second is not None
    total = key.expression.shape.dtype.array_dtype.kind in "biu" \
        or getattr(key.comparison, "value", None) == "TOTALORDER"
    return total and first.operand == second.operand == key.operand \
        and first.descending != second.descending \
        and equal.operands[0].attrs.direction == equal.operands[1].attrs.direction \
        and all(_same_expression(side.expression, key.expression, {}) for side in (first, second)) \
        and first.comparison == second.comparison == key.comparison


def _key_compare(node: Instruction, params, directions) -> SortKey | None:
    if node.op.name != "compare" or node.attrs.direction.value not in directions:
        return None
    lhs, rhs = node.operands
    lhs_param, rhs_param = _only_parameter(lhs), _only_parameter(rhs)
    if lhs_param is None or rhs_param is None:
        return None
    i, j = lhs_param.attrs.parameter_number, rhs_param.attrs.parameter_number
    if i // 2 != j // 2 or i == j:
        return None
    # The same expression on both sides, with lhs_i <-> rhs_i.
    if not _same_expression(lhs, rhs, {lhs_param: rhs_param}):
        return None
    descending = node.attrs.direction.value == "GT"
    if i % 2:  # compare(K(rhs), K(lhs)): the other direction
        descending = not descending
        lhs, lhs_param = rhs, rhs_param
    return SortKey(i // 2, descending, lhs, lhs_param, node.attrs.type)


def _only_parameter(node: Instruction) -> Instruction | None:
    """The one parameter a scalar key expression reads, or None."""
    found: set = set()
    stack, seen = [node], set()
    while stack:
        inst = stack.pop()
        if id(inst) in seen:
            continue
        seen.add(id(inst))
        if inst.op.name not in _KEY_OPS or inst.shape.rank:
            return None
        if inst.op.name == "parameter":
            found.add(inst)
        stack.extend(inst.operands)
    return next(iter(found)) if len(found) == 1 else None


def _same_expression(a: Instruction, b: Instruction, pairs: dict) -> bool:
    """Whether `a` and `b` compute the same function, parameters matched by `pairs`."""
    if a is b:
        return True
    if a.op.name == "parameter" or b.op.name == "parameter":
        return pairs.get(a) is b or (a is b)
    if a.op is not b.op or a.shape != b.shape or a.attrs != b.attrs \
            or len(a.operands) != len(b.operands):
        return False
    return all(_same_expression(x, y, pairs) for x, y in zip(a.operands, b.operands))


__all__ = ["SortKey", "recognize_comparator"]
