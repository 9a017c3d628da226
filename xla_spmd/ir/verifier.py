"""The verifier: re-runs shape inference and checks the structure of a module.

Checks: unique names; operands defined before use and inside the same computation; operand
counts; declared shapes equal to inferred ones; parameters numbered 0..n-1; called
computations' signatures (through shape inference); the root belongs to its computation.

>>> from xla_spmd.ir import parse_hlo
>>> verify(parse_hlo('''HloModule m
... ENTRY %e (x: f32[2]) -> f32[2] {
...   %x = f32[2] parameter(0)
...   ROOT %n = f32[2] negate(%x)
... }'''))
"""

from __future__ import annotations

from xla_spmd.errors import VerifyError
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
