"""Why is a value sharded like this? Each propagated axis remembers where it came from.

When a node gives a value an axis, the driver records ``(value, axis) -> (source value,
node)``; a sharding group records the member it copied from. `explain` re-runs propagation
and follows those links back to a value the user annotated (a parameter, a result, a
sharding constraint), printing the chain of ops the axis flowed through.

>>> from xla_spmd.ir import Builder, ArrayShape, F32, Module
>>> from xla_spmd.mesh import make_mesh
>>> from xla_spmd.sharding import TensorSharding
>>> mesh = make_mesh({"data": 2})
>>> b = Builder("main")
>>> x = b.parameter(ArrayShape(F32, (8, 4)), "x", sharding=TensorSharding(mesh, [["data"], []]))
>>> y = b.exponential(b.negate(x, name="n"), name="e")
>>> explain(Module.from_entry("m", b.build(y)), "e")
e = f32[8,4] #sdy.sharding<@mesh, [{"data", ?}, {?}]>
  dim 0 "data": from x (user sharding) -> n (negate) -> e (exponential)
"""

from __future__ import annotations

import sys

from xla_spmd.errors import ShardingError
from xla_spmd.ir import Instruction, Module
from xla_spmd.propagation.propagate import Result, run


def explain(module: Module, value: Instruction | str, strategy: str | None = None,
            *, file=None, **options) -> None:
    """Print where each axis of `value`'s sharding came from (re-runs propagation)."""
    print(explanation(module, value, strategy, **options), file=file or sys.stdout)


def explanation(module: Module, value: Instruction | str, strategy: str | None = None,
                **options) -> str:
    """The text `explain` prints."""
    result = run(module, strategy, **options)
    name = value if isinstance(value, str) else value.name
    return explain_value(result, name)


def explain_value(result: Result, name: str) -> str:
    propagator = result.propagator
    out_inst = _find(result.module, name)
    if propagator is None:
        return f"{name}: no mesh and no sharding in the module"
    graph = propagator.graph
    values = [ids for (instance, inst), ids in graph.inst_values.items()
              if inst.name == name]
    if not values:
        return f"{name} = {out_inst.shape} (not propagated: inside a reducer computation)"
    value_ids = values[0]
    lines = [f"{name} = {out_inst.shape} {_text(out_inst.sharding)}"]
    for leaf, value in enumerate(value_ids):
        prefix = f"  [{leaf}]" if len(value_ids) > 1 else " "
        state = propagator.states[value]
        for d, axes in enumerate(state.axes):
            for axis in axes:
                lines.append(f"{prefix} dim {d} {axis}: {chain(result, value, axis.name)}")
    if len(lines) == 1:
        lines.append("  replicated: no sharded axis reached it")
    return "\n".join(lines)


def chain(result: Result, value: int, axis: str) -> str:
    """``from x (user sharding) -> a (op) -> b (op)`` for one axis of one value."""
    propagator = result.propagator
    if propagator is None:
        return "not propagated: no mesh"
    graph = propagator.graph
    steps = []
    seen = set()
    current = value
    while current not in seen:
        seen.add(current)
        if axis in result.initial.get(current, ()):
            steps.append(f"from {_label(graph, current)} (user sharding)")
            break
        origin = propagator.origins.get((current, axis))
        if origin is None:
            steps.append(f"from {_label(graph, current)} (origin unknown)")
            break
        steps.append(f"{_label(graph, current)} ({_via(graph, current, origin.node)})")
        current = origin.source
    steps.reverse()
    return " -> ".join(steps)


def annotate(result: Result) -> dict[str, str]:
    """Instruction name -> one explanation line per axis (for ``propagate --explain``)."""
    notes: dict[str, str] = {}
    propagator = result.propagator
    if propagator is None:
        return notes  # no mesh: nothing was propagated
    for (_instance, inst), ids in propagator.graph.inst_values.items():
        if inst.name in notes:
            continue
        parts = []
        for value in ids:
            for d, axes in enumerate(propagator.states[value].axes):
                for axis in axes:
                    if axis.name in result.initial.get(value, ()):
                        continue
                    parts.append(f"dim {d} {axis}: {chain(result, value, axis.name)}")
        if parts:
            notes[inst.name] = "; ".join(parts)
    return notes


def _label(graph, value) -> str:
    v = graph.values[value]
    return v.inst.name if len(v.inst.shape.leaves()) == 1 else f"{v.inst.name}[{v.leaf}]"


def _via(graph, value, node_index) -> str:
    """The op a value's axis arrived through: its own op, or a user it was inferred from."""
    if node_index is None:
        return "sharding group"
    node = graph.nodes[node_index]
    if node.inst is graph.values[value].inst:
        return node.inst.op.name
    if node.inst is None:
        return node.label
    return f"back through {node.inst.name} ({node.inst.op.name})"


def _find(module: Module, name: str) -> Instruction:
    for c in module.computations:
        for inst in c.instructions:
            if inst.name == name:
                return inst
    raise ShardingError(f"module {module.name} has no instruction named {name!r}")


def _text(sharding) -> str:
    if isinstance(sharding, tuple):
        return "(" + ", ".join(str(s) for s in sharding) + ")"
    return str(sharding)
