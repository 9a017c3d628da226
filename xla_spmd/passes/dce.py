"""Dead code elimination: drop instructions the root does not reach, and computations nothing
calls.

Invariants: parameters are always kept (they are the signature); instructions with side
effects (`custom-call` with ``custom_call_has_side_effect=true``, `rng`) are kept even when
unused, as XLA does. Dead collectives are removed: every device runs the same program, so all
of them drop the same collective. One linear walk per computation.

Example: in ``%a = add(%x, %x); %n = negate(%x); ROOT %r = copy(%n)`` the `add` is dropped.

>>> from xla_spmd.ir import parse_hlo
>>> m = parse_hlo('''HloModule m
... ENTRY %e (x: f32[2]) -> f32[2] {
...   %x = f32[2] parameter(0)
...   %a = f32[2] add(%x, %x)
...   ROOT %n = f32[2] negate(%x)
... }''')
>>> [i.name for i in dce(m).entry.instructions]
['x', 'n']
"""

from __future__ import annotations

from xla_spmd.ir import Computation, Module
from xla_spmd.ir.module import has_side_effect
from xla_spmd.passes.pass_manager import Pass, rebuild, transform_module


def dce_computation(computation: Computation) -> Computation:
    keep = [i for i in computation.instructions if has_side_effect(i)]
    return rebuild(computation, computation.root, keep)


def dce(module: Module) -> Module:
    """Remove dead instructions in every computation, then computations nothing reaches."""
    result = transform_module(module, dce_computation)
    reachable = Module.from_entry(result.name, result.entry, result.header)
    if len(reachable.computations) == len(result.computations):
        return result
    return reachable


dce_pass = Pass("dce", dce)
