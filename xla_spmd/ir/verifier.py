"""The verifier: re-runs shape inference and checks the structure of a module.

Checks: unique names; operands defined before use and inside the same computation; operand
counts; declared shapes equal to inferred ones; parameters numbered 0..n-1; called
computations' signatures (through shape inference); the root belongs to its computation;
called computations nest at most `MAX_NESTING` deep; the device ids of collectives are below
the device count the module declares (num_partitions x replica_count).

>>> from xla_spmd.ir import parse_hlo
>>> verify(parse_hlo('''HloModule m
... ENTRY %e (x: f32[2]) -> f32[2] {
...   %x = f32[2] parameter(0)
...   ROOT %n = f32[2] negate(%x)
... }'''))
"""

from __future__ import annotations

import math

from xla_spmd.errors import MAX_NESTING, VerifyError
from xla_spmd.ir.module import Computation, Module


def verify_computation(computation: Computation) -> None:
    defined: set[int] = set()
    names: set[str] = set()
    for inst in computation.instructions:
        where = f"{computation.name}/{inst.name}"
        if inst.name in names:
            raise VerifyError(f"{where}: instruction name used twice")
        names.add(inst.name)
        op = inst.op
        count = len(inst.operands)
        if count < op.min_operands or (op.max_operands is not None and count > op.max_operands):
            raise VerifyError(f"{where}: '{op.name}' got {count} operands")
        for operand in inst.operands:
            if id(operand) not in defined:
                raise VerifyError(f"{where}: operand {operand.name} is not defined before "
                                  f"its use in {computation.name}")
        try:
            inferred = op.infer(tuple(o.shape for o in inst.operands), inst.attrs, inst.shape)
        except VerifyError as error:
            raise VerifyError(f"{where}: {error}") from None
        if not inferred.same_type(inst.shape):
            raise VerifyError(f"{where}: shape {inst.shape} differs from the inferred "
                              f"{inferred}")
        defined.add(id(inst))
    if id(computation.root) not in defined:
        raise VerifyError(f"{computation.name}: root {computation.root.name} is not one of "
                          "its instructions")
    numbers = [p.attrs.parameter_number for p in computation.parameters]
    if numbers != list(range(len(numbers))):
        raise VerifyError(f"{computation.name}: parameters are numbered {numbers}, expected "
                          f"0..{len(numbers) - 1}")


def verify(module: Module) -> None:
    """Raise `VerifyError` naming the computation and instruction at fault."""
    names = [c.name for c in module.computations]
    if len(set(names)) != len(names):
        raise VerifyError(f"module {module.name}: computation names repeat: {names}")
    known = {id(c) for c in module.computations}
    if id(module.entry) not in known:
        raise VerifyError(f"module {module.name}: the entry is not among its computations")
    for computation in module.computations:
        for callee in computation.called_computations():
            if id(callee) not in known:
                raise VerifyError(f"{computation.name}: calls {callee.name}, which is not in "
                                  f"module {module.name}")
        verify_computation(computation)
    for key in ("num_partitions", "replica_count"):
        value = module.header_value(key)
        if value is not None and not (value.isdigit() and int(value) >= 1):
            raise VerifyError(f"module {module.name}: {key}={value}; expected a positive "
                              "integer")
    _check_nesting(module)
    _check_device_ids(module)


def _check_nesting(module: Module) -> None:
    """Called computations nest at most MAX_NESTING deep (found without recursion)."""
    depth: dict[int, int] = {}  # computation id -> longest chain of callees below it
    deepest_callee: dict[int, Computation] = {}
    for computation in module.computations:  # callees come before their callers
        below = 0
        for callee in computation.called_computations():
            if depth.get(id(callee), 0) + 1 > below:
                below = depth.get(id(callee), 0) + 1
                deepest_callee[id(computation)] = callee
        depth[id(computation)] = below
    if depth.get(id(module.entry), 0) <= MAX_NESTING:
        return
    chain, computation = [module.entry.name], module.entry
    while id(computation) in deepest_callee:
        computation = deepest_callee[id(computation)]
        chain.append(computation.name)
    shown = " -> ".join(chain[:4] + ["..."] + chain[-2:])
    raise VerifyError(f"module {module.name}: called computations nest {len(chain) - 1} deep "
                      f"({shown}); xla-spmd supports at most {MAX_NESTING} levels")


def _check_device_ids(module: Module) -> None:
    """Replica groups and permute pairs name devices the module declares it has. (A module
    traced from Python declares none: its collectives' devices come from the mesh.)"""
    if module.header_value("num_partitions") is None and \
            module.header_value("replica_count") is None:
        return
    count = module.num_partitions * module.num_replicas
    for computation in module.computations:
        for inst in computation.instructions:
            groups = getattr(inst.attrs, "replica_groups", None)
            pairs = getattr(inst.attrs, "source_target_pairs", None) or ()
            ids = [i for pair in pairs for i in pair]
            what = "source_target_pairs"
            if groups is not None and (groups.explicit or groups.is_iota):
                what = "replica_groups"
                ids += ([math.prod(groups.group_dims) - 1] if groups.is_iota else
                        [i for group in groups.explicit for i in group])
            if ids and max(ids) >= count:
                raise VerifyError(
                    f"{computation.name}/{inst.name}: {what} name device {max(ids)}, but the "
                    f"module runs on {count} devices (num_partitions={module.num_partitions}"
                    f", replica_count={module.num_replicas}), numbered 0..{count - 1}")
