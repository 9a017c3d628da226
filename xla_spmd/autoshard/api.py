"""`xs.auto_shard(fn, mesh, *example_args, memory_limit=...)`: shardings for a function's
arguments that minimise the predicted step time under a per-device memory limit.

The function is traced once without shardings; its parameters and dots become the nodes of
the problem in graph.py, solved by solve.py. The answer is a `Plan`: PartitionSpecs shaped
like the arguments (paste them into ``xs.jit(in_shardings=...)``), the solver that ran, and
a line per argument saying what its choice costs against the best alternative.

>>> import numpy as np, xla_spmd as xs
>>> xs.set_num_devices(2)
>>> mesh = xs.make_mesh({"data": 2})
>>> plan = xs.auto_shard(lambda x, w: (x @ w).sum(), mesh,
...                      np.ones((2048, 128), np.float32), np.ones((128, 128), np.float32))
>>> plan.specs
(P('data'), P())
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from xla_spmd.errors import XlaSpmdError


@dataclass
class Plan:
    """What auto_shard chose."""

    specs: tuple                  # PartitionSpecs shaped like the example arguments
    in_shardings: tuple           # the same as NamedShardings on the mesh
    method: str                   # which solver ran, and the problem's size
    solve_seconds: float
    predicted_cost: float         # the objective: seconds of the modelled part of a step
    explanations: dict[str, str]  # argument path -> why

    def __str__(self) -> str:
        lines = [f"auto_shard: {self.method}, solved in {self.solve_seconds:.2f} s, "
                 f"modelled cost {self.predicted_cost * 1e3:.3f} ms"]
        lines += [f"  {name}: {text}" for name, text in self.explanations.items()]
        return "\n".join(lines)


def _spec(strategy, rank: int):
    from xla_spmd.sharding import PartitionSpec

    entries = [None if not axes else axes[0] if len(axes) == 1 else tuple(axes)
               for axes in strategy]
    while entries and entries[-1] is None and len(entries) > 0:
        entries.pop()
    return PartitionSpec(*entries) if any(e is not None for e in entries) else PartitionSpec()


def _paths(tree, prefix="") -> list[str]:
    if isinstance(tree, dict):
        return [p for k in sorted(tree) for p in _paths(tree[k], f"{prefix}[{k!r}]")]
    if isinstance(tree, (list, tuple)):
        return [p for i, v in enumerate(tree) for p in _paths(v, f"{prefix}[{i}]")]
    return [prefix]


def auto_shard(fn, mesh, *example_args, memory_limit: float | None = None,
               method: str = "auto", profile=None) -> Plan:
    """Choose shardings for `fn`'s arguments on `mesh` (see the module docstring).
    `memory_limit` bounds the arguments' bytes per device; `method` is "auto" (the integer
    program when HiGHS is installed and the problem is small enough, else greedy), "ilp" or
    "greedy"; `profile` prices the choices (default: `xla_spmd.cost.load_profile()`)."""
    import xla_spmd as xs
    from xla_spmd.autoshard.graph import build_problem
    from xla_spmd.autoshard.solve import solve
    from xla_spmd.cost import Profile, load_profile
    from xla_spmd.frontend.pytree import tree_flatten, tree_unflatten

    profile = profile if isinstance(profile, Profile) else load_profile(profile)
    if mesh.size == 1:
        specs = tree_unflatten(tree_flatten(example_args)[1],
                               [xs.P() for _ in tree_flatten(example_args)[0]])
        return Plan(tuple(specs), tuple(tree_unflatten(tree_flatten(example_args)[1], [
            xs.NamedSharding(mesh, xs.P()) for _ in tree_flatten(example_args)[0]])),
            "one device: nothing to choose", 0.0, 0.0, {})
    started = time.perf_counter()
    lowered = xs.jit(fn).lower(*example_args)
    entry = lowered.module.entry
    leaves, treedef = tree_flatten(example_args)
    if len(entry.parameters) != len(leaves):
        raise XlaSpmdError(f"auto_shard: the traced function takes {len(entry.parameters)} "
                           f"arrays, the example arguments hold {len(leaves)}")
    axes = dict(mesh.shape)
    problem = build_problem(entry, axes, profile)
    choice, how = solve(problem, memory_limit=memory_limit, method=method)
    seconds = time.perf_counter() - started
    by_param = {node.inst.name: (node, choice[n]) for n, node in enumerate(problem.nodes)
                if node.inst.opcode == "parameter"}
    index = {node.inst.name: n for n, node in enumerate(problem.nodes)
             if node.inst.opcode == "parameter"}
    specs, explanations = [], {}
    paths = _paths(list(example_args))
    from xla_spmd.autoshard.solve import _neighbours
    around = _neighbours(problem)
    for i, parameter in enumerate(entry.parameters):
        node, pick = by_param[parameter.name]
        specs.append(_spec(node.strategies[pick], parameter.shape.rank))
        explanations[paths[i] if i < len(paths) else parameter.name] = _explain(
            problem, around, index[parameter.name], choice, specs[-1])
    tree_specs = tree_unflatten(treedef, specs)
    shardings = tree_unflatten(treedef, [xs.NamedSharding(mesh, s) for s in specs])
    return Plan(tuple(tree_specs), tuple(shardings), how, seconds, problem.objective(choice),
                explanations)


def _explain(problem, around, n: int, choice: list[int], spec) -> str:
    """What the choice of node n costs beside its best alternative, the others fixed."""
    from xla_spmd.autoshard.graph import _size
    from xla_spmd.autoshard.solve import _local

    node = problem.nodes[n]
    local = _local(problem, around, choice, n)
    mine = choice[n]
    others = [s for s in range(len(node.strategies)) if s != mine]
    text = (f"{spec}: {node.memory[mine]:.0f} bytes per device, "
            f"{local[mine] * 1e3:.3f} ms of modelled time with its neighbours")
    if others:
        best = min(others, key=lambda s: local[s])
        alternative = _spec(node.strategies[best], node.inst.shape.rank)
        shards = _size([a for x in node.strategies[best] for a in x], problem.mesh_axes)
        text += (f"; next best {alternative} ({shards} shards) costs "
                 f"{(local[best] - local[mine]) * 1e3:+.3f} ms")
    return text
