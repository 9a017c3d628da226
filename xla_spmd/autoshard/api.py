"""`xs.auto_shard(fn, mesh, *example_args, memory_limit=...)`: shardings for a function's
arguments that minimise the predicted step time under a per-device memory limit.

The function is traced once without shardings; its parameters and dots become the nodes of
the problem in graph.py, solved by solve.py. The problem prices each choice by its own
terms (a dot's share of FLOPs, the collectives it and its neighbours need), not by the whole
partitioned program: what the partitioner adds around a choice (reshapes, extra collectives,
the backend's launches) is not in it. So the answer is then *checked*: the solver's layout
and the usual ones (`LAYOUTS`: the first argument, the parameters, replicated or fully
sharded, the other arguments split on their leading dim over every device) are partitioned
and priced by the cost model (`xla_spmd.cost.estimate`), and the fastest predicted step is
kept (above `CHECK_MAX_INSTRUCTIONS` traced instructions the check is skipped, and the plan
says so). The answer is a `Plan`: PartitionSpecs shaped like the arguments (paste them into
``xs.jit(in_shardings=...)``), the solver that ran, the predicted step time of each
candidate, and a line per argument saying what its choice costs against the best
alternative.

>>> import numpy as np, xla_spmd as xs
>>> xs.set_num_devices(2)
>>> mesh = xs.make_mesh({"data": 2})
>>> plan = xs.auto_shard(lambda x, w: (x @ w).sum(), mesh,
...                      np.ones((2048, 128), np.float32), np.ones((128, 128), np.float32))
>>> plan.specs
(P('data'), P('data'))
>>> plan.chosen, list(plan.rejected)
('sharded parameters', ['integer program'])

The solver's own pick there splits both operands of ``x @ w`` on their contracting dims,
which the mesh's Explicit axes (`make_mesh`'s default, as in JAX) leave ambiguous: tracing
it raises ``ShardingTypeError``, as JAX does, so it is rejected (`Plan.rejected` says why)
and the best layout that traces is kept. On a mesh with Auto axes every layout traces.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from xla_spmd.errors import XlaSpmdError
from xla_spmd.frontend.sharding_types import ShardingTypeError


@dataclass
class Plan:
    """What auto_shard chose."""

    specs: tuple                  # PartitionSpecs shaped like the example arguments
    in_shardings: tuple           # the same as NamedShardings on the mesh
    method: str                   # which solver ran, and the problem's size
    solve_seconds: float
    predicted_cost: float         # the objective: seconds of the modelled part of a step
    explanations: dict[str, str]  # argument path -> why
    # candidate layout -> the cost model's step time of it, partitioned (empty: unchecked)
    candidates: dict[str, float] = field(default_factory=dict)
    chosen: str = "integer program"   # which candidate the specs are
    # candidate layout -> why it cannot be used: the first line of the ShardingTypeError its
    # tracing raised (an op the mesh's Explicit axes leave ambiguous, as JAX refuses it)
    rejected: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        lines = [f"auto_shard: {self.method}, solved in {self.solve_seconds:.2f} s, "
                 f"modelled cost {self.predicted_cost * 1e3:.3f} ms"]
        if self.candidates:
            lines.append("  checked, predicted step: " + ", ".join(
                f"{name} {seconds * 1e3:.3f} ms" for name, seconds in self.candidates.items())
                + f"; kept {self.chosen}")
        if self.rejected:
            lines.append(f"  rejected: {_rejections(self.rejected)}")
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
    candidates: dict[str, float] = {}
    rejected: dict[str, str] = {}
    chosen = solver = "integer program" if how.startswith("integer") else "greedy search"
    if len(entry.instructions) <= CHECK_MAX_INSTRUCTIONS:
        layouts = {solver: specs, **_layouts(example_args, mesh)}
        for name, flat in layouts.items():
            if memory_limit is not None and _argument_bytes(leaves, flat, mesh) > memory_limit:
                continue
            if name != solver and flat == specs:
                continue
            try:
                candidates[name] = _predicted_step(fn, mesh, example_args, treedef, flat,
                                                   profile)
            except ShardingTypeError as error:
                rejected[name] = str(error).splitlines()[0]
        if not candidates:
            raise XlaSpmdError(
                f"auto_shard: no layout traces on this mesh: {_rejections(rejected)}. "
                "Give the mesh Auto axes (make_mesh(..., axis_types=AxisType.Auto)) to let "
                "the partitioner resolve such ops")
        chosen = min(candidates, key=candidates.__getitem__)
        if chosen != solver:
            specs = layouts[chosen]
            why = (f"the {solver}'s {candidates[solver] * 1e3:.3f} ms" if solver in candidates
                   else f"the {solver}'s layout does not trace on the mesh's Explicit axes "
                        "(see rejected)")
            for path in explanations:
                explanations[path] = (f"layout {chosen}: its partitioned step is predicted "
                                      f"{candidates[chosen] * 1e3:.3f} ms, {why}")
        how += (f"; checked against {len(candidates) + len(rejected) - 1} layouts in "
                f"{time.perf_counter() - started - seconds:.2f} s")
    else:
        try:  # not priced, but the answer must at least trace (Explicit axes may refuse it)
            _lowered(fn, mesh, example_args, treedef, specs)
        except ShardingTypeError as error:
            raise XlaSpmdError(
                f"auto_shard: the {solver}'s layout does not trace on this mesh: "
                f"{str(error).splitlines()[0]}. Give the mesh Auto axes "
                "(make_mesh(..., axis_types=AxisType.Auto)) to let the partitioner resolve "
                "such ops") from None
        how += (f"; not checked against the usual layouts ({len(entry.instructions)} "
                f"instructions, above {CHECK_MAX_INSTRUCTIONS})")
    tree_specs = tree_unflatten(treedef, specs)
    shardings = tree_unflatten(treedef, [xs.NamedSharding(mesh, s) for s in specs])
    return Plan(tuple(tree_specs), tuple(shardings), how, seconds, problem.objective(choice),
                explanations, candidates, chosen, rejected)


CHECK_MAX_INSTRUCTIONS = 3000
"""Above this many traced instructions auto_shard does not partition the candidate layouts
to check its answer (each check runs the whole pipeline but the backend)."""


def _leading_split(shape, mesh):
    """A PartitionSpec splitting dim 0 over as many mesh axes (in order) as divide it."""
    from xla_spmd.sharding import PartitionSpec

    if not shape:
        return PartitionSpec()
    axes, size = [], 1
    for name, n in mesh.shape.items():
        if n > 1 and shape[0] % (size * n) == 0:
            axes.append(name)
            size *= n
    if not axes:
        return PartitionSpec()
    return PartitionSpec(axes[0] if len(axes) == 1 else tuple(axes))


def _layouts(example_args, mesh) -> dict[str, list]:
    """The usual layouts as flat spec lists: "replicated parameters" (data parallel: the
    first argument replicated, the others split on their leading dim) and "sharded
    parameters" (FSDP: every array split on its leading dim)."""
    import numpy as np

    from xla_spmd.frontend.pytree import tree_flatten
    from xla_spmd.sharding import PartitionSpec

    first = len(tree_flatten(example_args[0])[0]) if example_args else 0
    leaves = tree_flatten(example_args)[0]
    split = [_leading_split(np.shape(leaf), mesh) for leaf in leaves]
    return {"replicated parameters": [PartitionSpec()] * first + split[first:],
            "sharded parameters": split}


def _argument_bytes(leaves, specs, mesh) -> float:
    """The largest bytes per device the arguments take under `specs`."""
    import numpy as np

    total = 0.0
    for leaf, spec in zip(leaves, specs):
        shards = 1
        for entry in spec:
            for axis in (entry if isinstance(entry, tuple) else (entry,)):
                shards *= mesh.shape[axis] if axis else 1
        total += np.asarray(leaf).nbytes / shards
    return total


def _lowered(fn, mesh, example_args, treedef, specs):
    """`fn` traced with its arguments sharded by `specs` (``ShardingTypeError`` where the
    mesh's Explicit axes leave an op's result sharding ambiguous)."""
    import xla_spmd as xs
    from xla_spmd.frontend.pytree import tree_unflatten

    shardings = tree_unflatten(treedef, [xs.NamedSharding(mesh, s) for s in specs])
    return xs.jit(fn, in_shardings=tuple(shardings)).lower(*example_args)


def _predicted_step(fn, mesh, example_args, treedef, specs, profile) -> float:
    """The cost model's step time of `fn` with its arguments sharded by `specs`."""
    from xla_spmd import pipeline
    from xla_spmd.cost import estimate

    lowered = _lowered(fn, mesh, example_args, treedef, specs)
    return estimate(pipeline.lower(lowered.module, mesh=mesh).spmd_module, profile).step_time


def _rejections(rejected: dict[str, str]) -> str:
    return "; ".join(f"{name}: {reason}" for name, reason in rejected.items())


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
