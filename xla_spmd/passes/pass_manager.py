"""A tiny pass manager and the rewriting helpers every pass shares.

A pass is a named function ``Module -> Module``. Passes never mutate: they build new
computations. A pass that changes nothing returns the very same `Module` object, so a fixed
point is detected by identity (`module is previous`), never by comparing whole programs.

Invariants: `transform_module` rebuilds computations callees first and re-points every
called computation at its rebuilt version, so a pass only writes the per-computation rewrite;
`ir.rewrite` returns its input unchanged (same object) when nothing changed.

>>> from xla_spmd.ir import parse_hlo
>>> m = parse_hlo('''HloModule m
... ENTRY %e (x: f32[2]) -> f32[2] {
...   %x = f32[2] parameter(0)
...   ROOT %c = f32[2] copy(%x)
... }''')
>>> from xla_spmd.passes import simplify_pass, dce_pass
>>> out = run_passes(m, [simplify_pass, dce_pass], verify_each=True)
>>> [i.opcode for i in out.entry.instructions]
['parameter']
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from xla_spmd.errors import XlaSpmdError
from xla_spmd.ir import (
    Computation,
    Instruction,
    Module,
    rebind_called,
    rewrite,
    topological_order,
    verify,
)


@dataclass(frozen=True, slots=True)
class Pass:
    """A named module transformation; call it like the function it wraps."""

    name: str
    fn: Callable[[Module], Module]

    def __call__(self, module: Module) -> Module:
        return self.fn(module)


class PassError(XlaSpmdError):
    """A pass failed or produced an invalid module; names the pass."""


def run_passes(module: Module, passes: Iterable[Pass], verify_each: bool = False) -> Module:
    """Run `passes` in order; with `verify_each`, verify the module after every pass."""
    for p in passes:
        try:
            result = p(module)
        except XlaSpmdError as error:
            raise PassError(f"pass {p.name} failed on module {module.name}: {error}") from error
        if verify_each and result is not module:
            try:
                verify(result)
            except XlaSpmdError as error:
                raise PassError(f"pass {p.name} produced an invalid module: {error}") from error
        module = result
    return module


def fixed_point(name: str, passes: Sequence[Pass], max_iterations: int = 8,
                verify_each: bool = False) -> Pass:
    """A pass running `passes` in order until a round changes nothing (or the cap is hit)."""

    def run(module: Module) -> Module:
        for _ in range(max_iterations):
            result = run_passes(module, passes, verify_each)
            if result is module:
                break
            module = result
        return module
    return Pass(name, run)


# ---------------------------------------------------------------------------------------------
# Rewriting helpers


def transform_module(module: Module, fn: Callable[[Computation], Computation]) -> Module:
    """Apply `fn` to every computation, callees first, keeping calls pointed at the rebuilt
    callees. Returns `module` itself when no computation changed."""
    replaced: dict[str, Computation] = {}
    changed = False
    for computation in module.computations:
        current = computation
        if any(replaced.get(c.name, c) is not c for c in computation.called_computations()):
            current = rewrite(computation, lambda inst, ops: rebind_called(
                inst.replace(operands=ops) if ops != inst.operands else inst, replaced))
        current = fn(current)
        changed = changed or current is not computation
        replaced[computation.name] = current
    if not changed:
        return module
    return Module(module.name, tuple(replaced[c.name] for c in module.computations),
                  replaced[module.entry.name], module.header)


def rebuild(computation: Computation, root: Instruction,
            keep: Iterable[Instruction] = ()) -> Computation:
    """A computation of everything `root` (and `keep`) reaches, parameters always kept;
    `computation` itself when that is all of its instructions with the same root."""
    params = [i for i in computation.instructions if i.opcode == "parameter"]
    order = topological_order(root, [*params, *keep])
    if root is computation.root and len(order) == len(computation.instructions):
        old = {id(i) for i in computation.instructions}
        if all(id(i) in old for i in order):
            return computation
    return Computation(computation.name, order, root, computation.extras)


def shardings_agree(inst: Instruction, replacement: Instruction) -> bool:
    """Whether forwarding `replacement` for `inst` loses no sharding annotation."""
    if inst.sharding is None:
        return True
    return (replacement.sharding is not None
            and str(replacement.sharding) == str(inst.sharding))
