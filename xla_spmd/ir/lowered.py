"""StableHLO ops that HLO writes as several ops, and the way back to the one op.

The StableHLO importer writes some ops as a short chain of HLO ops, as XLA does:
``broadcast_in_dim`` expanding a size-1 dim (or with unsorted dims) is a reshape and/or
transpose, then a ``broadcast``; ``all_to_all`` with ``split_dimension != concat_dimension``
is an array ``all-to-all`` then reshape, transpose, reshape; a variadic ``all_to_all`` is one
chain per operand. Each op of such a chain carries the frontend attribute `LOWERED_FROM`
(``"<stablehlo op> <group id>"``); the last op of chain ``k`` of ``n`` also carries
`LOWERED_RESULT` (``"k/n"``) and `LOWERED_DIMS` (the op's dims as written).

`lowered_groups(computation)` finds the groups whose chains are intact (each op used by the
next one only, every chain there, the one op's shapes valid) and gives for each the `virtual`
instruction of the one op: an HLO instruction over the chains' sources that HLO itself could
not run (a ``broadcast`` expanding a size-1 dim, an ``all-to-all`` whose concat dim differs
from its split dim, several operands split alike). The StableHLO exporter prints it in place
of the chains, and Shardy's op sharding rule is the virtual instruction's rule: so a program
prints back as it was written, and its rules are Shardy's.

>>> from xla_spmd.ir import Builder, ArrayShape, F32, Computation
>>> b = Builder("main")
>>> x = b.parameter(ArrayShape(F32, (2, 1, 13)))
>>> r = b.reshape(x, shape=ArrayShape(F32, (2, 13)))
>>> y = b.broadcast(r, shape=ArrayShape(F32, (2, 64, 13)), dimensions=(0, 2))
>>> r = r.replace(frontend_attributes=((LOWERED_FROM, "broadcast_in_dim g1"),))
>>> y = y.replace(operands=(r,), frontend_attributes=(
...     (LOWERED_FROM, "broadcast_in_dim g1"), (LOWERED_RESULT, "0/1"),
...     (LOWERED_DIMS, "0,1,2")))
>>> (group,) = lowered_groups(Computation("main", (x, r, y), y)).values()
>>> group.virtual.attrs.dimensions, group.virtual.operands == (x,), group.hidden == {r}
((0, 1, 2), True, True)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from xla_spmd.ir.module import Computation, Instruction
from xla_spmd.ir.shapes import TupleShape

LOWERED_FROM = "xla_spmd.lowered_from"      # "<stablehlo op> <group id>" on every op
LOWERED_RESULT = "xla_spmd.lowered_result"  # "k/n" on the last op of chain k of n
LOWERED_DIMS = "xla_spmd.lowered_dims"      # broadcast_in_dim's dims ("0,2,1"), all_to_all's
                                            # concat dim ("1"), as written
LOWERED_KEYS = (LOWERED_FROM, LOWERED_RESULT, LOWERED_DIMS)

# The ops of each chain, first to last (the last one is the chain's result).
_CHAINS = {
    "broadcast_in_dim": (("broadcast",), ("reshape", "broadcast"), ("transpose", "broadcast"),
                         ("reshape", "transpose", "broadcast")),
    "all_to_all": (("all-to-all",), ("all-to-all", "reshape", "transpose", "reshape")),
}


@dataclass(frozen=True)
class LoweredGroup:
    """One StableHLO op written as chains of HLO ops."""

    kind: str                             # the StableHLO op: broadcast_in_dim, all_to_all
    results: tuple[Instruction, ...]      # the last op of each chain, in result order
    hidden: frozenset[Instruction]        # every op of the chains but results[0]
    virtual: Instruction                  # the one op, over the chains' sources


def lowered_groups(computation: Computation) -> dict[Instruction, LoweredGroup]:
    """The intact groups of `computation`, by their first result (module doc)."""
    finals: dict[str, dict[int, tuple[Instruction, int]]] = {}
    for inst in computation.instructions:
        mark, result = inst.frontend_attribute(LOWERED_FROM), \
            inst.frontend_attribute(LOWERED_RESULT)
        if mark is None or result is None:
            continue
        try:
            k, n = (int(v) for v in result.split("/"))
        except ValueError:
            continue
        finals.setdefault(mark, {})[k] = (inst, n)
    groups: dict[Instruction, LoweredGroup] = {}
    if not finals:
        return groups   # the common case, on propagation's per-computation path: no use map
    users = computation.users()
    for mark, chains in finals.items():
        group = _group(mark, chains, users)
        if group is not None:
            groups[group.results[0]] = group
    return groups


def _group(mark: str, chains: dict[int, tuple[Instruction, int]], users
           ) -> LoweredGroup | None:
    kind = mark.split(" ", 1)[0]
    counts = {n for _, n in chains.values()}
    if kind not in _CHAINS or len(counts) != 1 or sorted(chains) != list(range(counts.pop())):
        return None
    results, sources, hidden = [], [], set()
    for k in range(len(chains)):
        final = chains[k][0]
        ops = [final]
        while ops[0].operands and ops[0].operands[0].frontend_attribute(LOWERED_FROM) == mark \
                and ops[0].operands[0].frontend_attribute(LOWERED_RESULT) is None:
            before = ops[0].operands[0]
            if len(users.get(before, ())) != 1:
                return None
            ops.insert(0, before)
        if tuple(op.opcode for op in ops) not in _CHAINS[kind] or len(ops[0].operands) != 1:
            return None
        results.append(final)
        sources.append(ops[0].operands[0])
        hidden.update(ops[:-1])
    hidden.update(results[1:])
    virtual = _VIRTUAL[kind](results, sources, chains)
    if virtual is None:
        return None
    return LoweredGroup(kind, tuple(results), frozenset(hidden), virtual)


def _broadcast_in_dim(results, sources, chains) -> Instruction | None:
    (final,), (source,) = results, sources
    text = final.frontend_attribute(LOWERED_DIMS)
    try:
        dims = tuple(int(d) for d in text.split(",")) if text else ()
    except ValueError:
        return None
    x, out = source.shape, final.shape
    if not hasattr(x, "dims") or len(dims) != len(x.dims) or any(
            not 0 <= d < len(out.dims) or x.dims[i] not in (1, out.dims[d])
            for i, d in enumerate(dims)):
        return None
    return final.replace(operands=(source,),
                         attrs=dataclasses.replace(final.attrs, dimensions=dims))


def _all_to_all(results, sources, chains) -> Instruction | None:
    exchanges = []
    for final in results:
        op = final
        while op.opcode != "all-to-all":
            op = op.operands[0]
        exchanges.append(op)
    first = exchanges[0]
    if any(e.attrs != first.attrs for e in exchanges) or first.attrs.dimensions is None:
        return None
    for source, result in zip(sources, results):
        x, out = source.shape, result.shape
        if not hasattr(x, "dims") or x.dtype != out.dtype or len(x.dims) != len(out.dims):
            return None
    shape = results[0].shape if len(results) == 1 else TupleShape(tuple(r.shape for r in results))
    shardings = [r.sharding for r in results]
    if len(results) == 1:
        sharding = shardings[0]
    elif all(s is None for s in shardings):
        sharding = None
    elif any(s is None or isinstance(s, tuple) for s in shardings):
        return None
    else:
        sharding = tuple(shardings)
    return first.replace(operands=tuple(sources), shape=shape, sharding=sharding,
                         frontend_attributes=results[0].frontend_attributes)


_VIRTUAL = {"broadcast_in_dim": _broadcast_in_dim, "all_to_all": _all_to_all}
