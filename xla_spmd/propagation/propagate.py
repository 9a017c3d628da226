"""`propagate(module, strategy)`: give every value of a module a sharding.

Steps: import shardings (sdy frontend attributes or GSPMD) -> build the value graph ->
initial states from user shardings, constraints, shard_map boundaries and sharding groups ->
user-priority rounds, each running the op-priority levels with the conflict policy -> write a
`TensorSharding` on every instruction (a tuple of them on tuple-shaped ones).

>>> from xla_spmd.ir import Builder, ArrayShape, F32, Module
>>> from xla_spmd.mesh import make_mesh
>>> from xla_spmd.sharding import TensorSharding
>>> mesh = make_mesh({"data": 2, "model": 4})
>>> b = Builder("main")
>>> x = b.parameter(ArrayShape(F32, (8, 16)), sharding=TensorSharding(mesh, [["data"], []]))
>>> w = b.parameter(ArrayShape(F32, (16, 32)), sharding=TensorSharding(mesh, [[], ["model"]]))
>>> y = b.dot(b.tanh(x), w, lhs_contracting_dims=(1,), rhs_contracting_dims=(0,))
>>> out = propagate(Module.from_entry("m", b.build(y)))
>>> print(out.entry.root.sharding)
#sdy.sharding<@mesh, [{"data", ?}, {"model", ?}]>
"""

from __future__ import annotations

import gc
from dataclasses import dataclass

from xla_spmd.errors import ShardingError, XlaSpmdError
from xla_spmd.ir import (
    Computation,
    Instruction,
    Module,
    make_instruction,
    map_computations,
    op_named,
    rebind_called,
)
from xla_spmd.ir.custom_calls import (
    DATA_FLOW_EDGE,
    FUNC_DATA_FLOW_EDGE,
    FUNC_RESULT_SHARDING,
    GLOBAL_TO_LOCAL,
    GROUPS,
    IN_SHARDINGS,
    LOCAL_TO_GLOBAL,
    OUT_SHARDINGS,
    SDY_CONSTANT,
    SHARDING_GROUP_ID,
)
from xla_spmd.mesh import AxisRef, Mesh
from xla_spmd.propagation.calls import (
    drop_unused_private,
    flatten_calls,
    is_function_call,
    unflatten_calls,
)
from xla_spmd.propagation.constraints import (
    apply_sharding_constraints,
    constraints_to_reshards,
    lift_inlined_meshes,
)
from xla_spmd.propagation.driver import (
    OP_PRIORITY_LEVELS,
    SINGLE_LEVEL,
    Propagator,
    get_policy,
    state_from_sharding,
    state_to_sharding,
)
from xla_spmd.propagation.graph import build_graph
from xla_spmd.propagation.groups import remove_sharding_groups, sync_sharding_groups
from xla_spmd.propagation.importing import has_foreign_shardings, import_shardings
from xla_spmd.propagation.rebuild import rewrite_in_place
from xla_spmd.propagation.registry import with_sharding_rules
from xla_spmd.propagation.splitting import split_constants
from xla_spmd.propagation.unreduced import insert_unreduced_all_reduces
from xla_spmd.sharding import (
    DimSharding,
    TensorSharding,
    declared_meshes,
    is_unconstrained,
    print_sharding_per_value,
    sharding_mesh,
)
from xla_spmd.sharding.manual import boundary_shardings, manual_axes

STRATEGIES = {
    # name: (policy, op-priority levels, user-priority rounds)
    "basic": ("basic", SINGLE_LEVEL, False),
    "aggressive": ("aggressive", SINGLE_LEVEL, False),
    "op-priority": ("aggressive", OP_PRIORITY_LEVELS, False),
    "user-priority": ("aggressive", OP_PRIORITY_LEVELS, True),
}
GROUP_TARGETS = GROUPS


@dataclass
class Result:
    """A propagation run: the output module and what explain() needs."""

    module: Module
    propagator: Propagator | None
    initial: dict[int, set[str]]
    inputs: Module


def propagate(module: Module, strategy: str | None = None, *, mesh: Mesh | None = None,
              policy=None, groups=(), unsharded_scalars: bool = False,
              shared_functions: bool = False, callee_results: bool = True,
              keep_sharding_rules: bool = False) -> Module:
    """Give every value of `module` a sharding (see the module docstring).

    `strategy` is "basic", "aggressive", "op-priority" or "user-priority" (the default,
    Shardy's full pipeline). `policy` overrides the conflict policy with a function (see
    conflicts.py). `groups` lists sharding groups as lists of instruction names (entry).
    `unsharded_scalars` leaves a scalar nobody sharded without a sharding, as Shardy does
    (nothing propagates to a scalar); by default it gets a replicated one, so that every
    value has a sharding (what the partitioner and runtime read). `shared_functions` gives
    a function called from several places one sharding for all its calls (Shardy's
    dedup-functions-fully), where by default each call propagates on its own.
    `callee_results=False` gives result shardings to the entry function's results only, as
    Shardy's propagation passes do on their own (its pipeline gives every function's
    results theirs, as the default does). `keep_sharding_rules` leaves each op's factor
    rule written on it (``sdy.sharding_rule``; Shardy's ``keep-sharding-rules=true``).
    """
    result = run(module, strategy, mesh=mesh, policy=policy, groups=groups,
                 unsharded_scalars=unsharded_scalars, shared_functions=shared_functions,
                 callee_results=callee_results).module
    return with_sharding_rules(result) if keep_sharding_rules else result


def run(module: Module, strategy: str | None = None, *, mesh: Mesh | None = None,
        policy=None, groups=(), unsharded_scalars: bool = False,
        shared_functions: bool = False, callee_results: bool = True) -> Result:
    """Propagate and keep what explain() needs (see `propagate`)."""
    # Propagation allocates many small, acyclic objects that all stay alive until the end;
    # the cyclic collector would rescan them again and again (superlinear time on 10k-op
    # programs), and has nothing to free. Paused here, restored after.
    enabled = gc.isenabled()
    gc.disable()
    try:
        if has_foreign_shardings(module):
            module = import_shardings(module, mesh).module
        module = sync_sharding_groups(module)
        # Functions nothing calls (Shardy propagates every function of a module): in the
        # same graph, each instantiated on its own.
        reached = {c.name for c in Module.from_entry(module.name, module.entry).computations}
        called = {callee.name for c in module.computations for i in c.instructions
                  for callee in i.called_computations()}
        roots = tuple(c for c in module.computations
                      if c.name not in reached and c.name not in called)
        result = _run(module, strategy, mesh, policy, groups, unsharded_scalars,
                      shared_functions, None if callee_results else {module.entry.name},
                      roots)
        return result
    finally:
        if enabled:
            gc.enable()


def _run(module, strategy, mesh, policy, groups, unsharded_scalars=False,
         shared_functions=False, results_of=None, roots=()) -> Result:
    strategy = strategy or "user-priority"
    if strategy not in STRATEGIES:
        raise ShardingError(f"unknown propagation strategy {strategy!r}; expected one of "
                            f"{', '.join(STRATEGIES)}")
    policy_name, levels, user_rounds = STRATEGIES[strategy]
    if has_foreign_shardings(module):
        module = import_shardings(module, mesh).module
    found = sharding_mesh(module)
    mesh_name = "mesh" if found is None else found[0]
    mesh = mesh or (None if found is None else found[1])
    if mesh is None:
        return Result(module, None, {}, module)

    def manual_axes_of(call: Instruction):
        axes: list[str] = []
        for operand in call.operands:
            source = operand
            while source.op.name == "get-tuple-element":
                source = source.operands[0]
            if source.op.name == "custom-call" and \
                    source.attrs.custom_call_target == GLOBAL_TO_LOCAL:
                axes.extend(a for a in manual_axes(source) if a not in axes)
        return axes

    # A None name (an inline mesh) is never looked up by name.
    meshes: dict[str, Mesh] = declared_meshes(module) or {
        mesh_name: mesh}  # pyright: ignore[reportAssignmentType]
    boundaries: dict[Instruction, tuple] = {}

    def boundary_of(inst: Instruction):
        target = getattr(inst.attrs, "custom_call_target", None)
        if target not in (GLOBAL_TO_LOCAL, LOCAL_TO_GLOBAL):
            return None
        try:
            shardings = boundary_shardings(inst, meshes)
        except XlaSpmdError:
            return None     # no or unreadable boundary shardings: nothing crosses
        manual = set(manual_axes(inst))
        prefixes = []
        for sharding in shardings:
            dims = []
            for dim in sharding.dims:
                count = 0
                while count < len(dim.axes) and dim.axes[count].name in manual:
                    count += 1
                dims.append(tuple(dim.axes[:count]))
            prefixes.append(tuple(dims))
        boundaries[inst] = shardings
        return target == GLOBAL_TO_LOCAL, prefixes

    graph = build_graph(module.entry, manual_axes_of, boundary_of, shared_functions, roots)
    states = [state_from_sharding(None, v.shape.rank, mesh, v.manual_axes, mesh_name)
              for v in graph.values]
    for (_, inst), value_ids in graph.boundary_values.items():
        for value, sharding in zip(value_ids, boundaries[inst]):
            states[value] = state_from_sharding(sharding, graph.values[value].shape.rank, mesh,
                                                graph.values[value].manual_axes, mesh_name)
            # a manual axis enters a boundary sharding only as a dim's leading axis, as
            # written: propagation adds none (Shardy keeps them out of in/out shardings)
            present = {a.name for axes in states[value].axes for a in axes}
            states[value].excluded = tuple(states[value].excluded) + tuple(
                AxisRef(a) for a in manual_axes(inst) if a not in present)
    initial: dict[int, set[str]] = {}
    for (_, inst), value_ids in graph.inst_values.items():
        shardings = inst.sharding_leaves()
        if len(shardings) != len(value_ids):
            continue
        for value, sharding in zip(value_ids, shardings):
            if not isinstance(sharding, TensorSharding) or states[value].user:
                continue
            states[value] = state_from_sharding(sharding, graph.values[value].shape.rank, mesh,
                                                graph.values[value].manual_axes, mesh_name)
            initial[value] = {a.name for d in sharding.dims for a in d.axes}
    for (_, inst), value_ids in graph.inst_values.items():
        if getattr(inst.attrs, "custom_call_target", None) == GLOBAL_TO_LOCAL:
            extra = tuple(AxisRef(a) for a in manual_axes(inst))
            for value in value_ids:
                states[value].excluded = tuple(states[value].excluded) + extra
    entry_results = {i for i in module.entry.instructions
                     if getattr(i.attrs, "custom_call_target", None) == FUNC_RESULT_SHARDING}
    propagator = Propagator(graph, mesh, get_policy(policy or policy_name), states,
                            first=tuple(n for n, node in enumerate(graph.nodes)
                                        if node.inst in entry_results))
    _set_groups(propagator, graph, module, groups)
    for round_priority in _rounds(states, user_rounds):
        for level in levels:
            propagator.run_level(level)
        del round_priority
    if user_rounds:   # priorities are spent: Shardy's user-priority pass drops them
        for state in states:
            state.priority = [None] * len(state.priority)
    held = {key: _edge_held(key[1], boundaries[key[1]], module)
            for key in graph.boundary_values}
    if results_of is None:   # every function's results: the uncalled ones' too
        results_of = {module.entry.name, *(c.name for c in roots), *(
            i.attrs.to_apply.name for c in module.computations for i in c.instructions
            if i.op.name == "call" and is_function_call(i))}
    return Result(_write_back(module, graph, states, mesh, unsharded_scalars, held,
                              results_of),
                  propagator, initial, module)


def propagation_pipeline(module: Module, *, dedup_functions_fully: bool = False,
                         **options) -> Module:
    """Shardy's ``sdy-propagation-pipeline``: unused private functions dropped, inline
    meshes declared (`lift_inlined_meshes`), each call
    site given its own function (`flatten_calls`), constants split per use
    (`split_constants`), closed sharding constraints applied to their unsharded inputs
    (`apply_sharding_constraints`), user-priority propagation (`propagate`; `options` go to
    it; sharding groups synced first, `sync_sharding_groups`), copies of a function sharded
    alike merged back (`unflatten_calls`), sharding groups removed
    (`remove_sharding_groups`), every
    sharding closed (`close_shardings`), the constraints left made reshards
    (`constraints_to_reshards`), the all-reduces unreduced axes need inserted
    (`insert_unreduced_all_reduces`, Shardy's ``sdy-insert-explicit-reshards``). With
    `dedup_functions_fully` (Shardy's aggressive mode) calls are not flattened: each
    function is one, whatever its call sites."""
    if has_foreign_shardings(module):
        module = import_shardings(module, options.get("mesh")).module
    module = lift_inlined_meshes(drop_unused_private(module))
    if not dedup_functions_fully:
        module = flatten_calls(module)
    module = apply_sharding_constraints(split_constants(module))
    module = propagate(module, unsharded_scalars=True, shared_functions=dedup_functions_fully,
                       **options)
    if not dedup_functions_fully:
        module = unflatten_calls(module)
    module = constraints_to_reshards(close_shardings(remove_sharding_groups(module)))
    return insert_unreduced_all_reduces(module)


def close_shardings(module: Module) -> Module:
    """Shardy's export after propagation (the end of ``sdy-propagation-pipeline``): every
    sharding closed and without priorities; values with no sharding to speak of keep
    none (an all-open, unsharded sharding stays as it is, meaning "none"). Constants are
    Shardy's ``sdy.constant`` (its import turns every constant into one)."""
    def close(leaf):   # Shardy's getClosedLike: replicated axes dropped too
        return leaf.closed().replace(replicated=()) if isinstance(leaf, TensorSharding) \
            else leaf

    def rebuild(computation, replaced):
        def fn(inst, operands):
            new = rebind_called(inst, replaced)
            leaves = inst.sharding_leaves()
            if any(isinstance(s, TensorSharding) and not is_unconstrained(s) for s in leaves):
                sharding = inst.sharding
                new = new.replace(sharding=tuple(close(s) for s in sharding)
                                  if isinstance(sharding, tuple) else close(sharding))
            if getattr(inst.attrs, "custom_call_target", None) in (GLOBAL_TO_LOCAL,
                                                                    LOCAL_TO_GLOBAL):
                new = _closed_boundary(new, meshes)
            if inst.opcode == "constant" and inst.frontend_attribute(SDY_CONSTANT) is None:
                new = new.replace(frontend_attributes=tuple(new.frontend_attributes)
                                  + ((SDY_CONSTANT, "true"),))
            if operands != inst.operands:
                new = new.replace(operands=operands)
            return new
        return rewrite_in_place(computation, fn)
    meshes = declared_meshes(module)
    return map_computations(module, rebuild)


def _closed_boundary(inst: Instruction, meshes) -> Instruction:
    """A manual computation's boundary with its in (or out) shardings closed as Shardy's
    close-shardings pass closes them (replicated axes dropped); as it is if unreadable."""
    try:
        shardings = boundary_shardings(inst, meshes)
    except XlaSpmdError:
        return inst
    return _boundary_shardings(inst, [s.closed().replace(replicated=()) for s in shardings])


def _set_groups(propagator, graph, module, groups) -> None:
    members: dict[str, list[int]] = {}
    for (instance, inst), _value_ids in graph.inst_values.items():
        if getattr(inst.attrs, "custom_call_target", None) in GROUP_TARGETS:
            key = (inst.frontend_attribute(SHARDING_GROUP_ID)
                   or inst.frontend_attribute("group_id") or "0")
            operand_values = graph.inst_values[instance, inst.operands[0]]
            members.setdefault(f"hlo:{key}", []).extend(operand_values)
    by_name = {inst.name: graph.inst_values[0, inst] for inst in module.entry.instructions
               if (0, inst) in graph.inst_values}
    for number, names in enumerate(groups):
        for name in names:
            if name not in by_name:
                raise ShardingError(f"sharding group {number} names {name!r}, which is not an "
                                    f"instruction of the entry computation")
            members.setdefault(f"api:{number}", []).extend(by_name[name])
    # Groups that share a value are one group (Shardy unifies them transitively).
    parent = {}

    def find(v):
        while parent.get(v, v) != v:
            v = parent[v]
        return v
    for values in members.values():
        for v in values[1:]:
            parent[find(v)] = find(values[0])
    classes: dict[int, list[int]] = {}
    for values in members.values():
        for v in values:
            classes.setdefault(find(v), [])
            if v not in classes[find(v)]:
                classes[find(v)].append(v)
    for values in classes.values():
        for v in values:
            propagator.groups[v] = values
        leader = next((v for v in values if not propagator.states[v].is_empty()), None)
        if leader is not None:
            propagator.apply_group(leader)


def _rounds(states, user_rounds: bool):
    """User-priority rounds: yields each priority after opening its dims (see driver.py)."""
    priorities = sorted({p or 0 for s in states if s.user for p in s.priority})
    if not user_rounds or len(priorities) <= 1:
        yield 0
        return
    held = []   # (state, dim, axes, closed, priority)
    for state in states:
        if not state.user:
            continue
        for d, p in enumerate(state.priority):
            if (p or 0) > priorities[0]:
                held.append((state, d, state.axes[d], state.closed[d], p))
                state.excluded = tuple(state.excluded) + tuple(state.axes[d])
                state.axes[d] = ()
                state.closed[d] = True
    for priority in priorities:
        for state, d, axes, closed, p in held:
            if (p or 0) == priority:
                state.excluded = tuple(a for a in state.excluded if a not in axes)
                state.axes[d] = axes
                state.closed[d] = closed
        yield priority


def _edge_held(boundary: Instruction, shardings, module: Module) -> tuple:
    """Per tensor of a manual computation's boundary: its sharding as written where an
    explicit ``sdy.data_flow_edge`` holds the propagated one instead (on the body argument
    it enters, or on the result it leaves as), else None (Shardy updates the edge op, not
    the computation's in/out shardings).

    >>> from xla_spmd.ir import Builder, ArrayShape, F32, Computation, Module
    >>> b = Builder("main")
    >>> x = b.parameter(ArrayShape(F32, (8,)))
    >>> out = b.op("custom-call", x, shape=x.shape, custom_call_target=LOCAL_TO_GLOBAL)
    >>> edge = b.op("custom-call", out, shape=x.shape, custom_call_target="xla.sdy.DataFlowEdge")
    >>> _edge_held(out, ("s",), Module.from_entry("m", Computation("main", (x, out, edge), edge)))
    ('s',)
    """
    def is_edge(inst):
        return getattr(inst.attrs, "custom_call_target", None) == DATA_FLOW_EDGE

    owner = next(c for c in module.computations if boundary in c.instructions)
    users = owner.users()

    def local(k):   # the k-th tensor of the boundary's results
        if not boundary.shape.is_tuple:
            return boundary
        return next((u for u in users[boundary]
                     if u.opcode == "get-tuple-element" and u.attrs.index == k), None)
    held = []
    for k, sharding in enumerate(shardings):
        value = local(k)
        edged = False
        if value is not None and boundary.attrs.custom_call_target == LOCAL_TO_GLOBAL:
            edged = any(is_edge(u) for u in users[value])
        elif value is not None:
            for call in users[value]:
                if call.opcode != "call":
                    continue
                body = call.attrs.to_apply
                params = {p.attrs.parameter_number: p for p in body.parameters}
                body_users = body.users()
                edged |= any(is_edge(u) for n, o in enumerate(call.operands) if o is value
                             and n in params for u in body_users[params[n]])
        held.append(sharding if edged else None)
    return tuple(held)


def _write_back(module: Module, graph, states, mesh, unsharded_scalars=False,
                held=None, results_of=None) -> Module:
    first_instance: dict[str, int] = {}
    for index, computation in enumerate(graph.instances):
        first_instance.setdefault(computation.name, index)
    functions = {inst.attrs.to_apply.name for c in module.computations for inst in c.instructions
                 if inst.op.name == "call" and is_function_call(inst)}

    def rebuild(computation, replaced):
        instance = first_instance.get(computation.name)
        # a value an explicit sdy.func_data_flow_edge follows: the edge holds its sharding
        # (Shardy leaves the owner's own, e.g. a callee argument's, as it was)
        edge_owned = {i.operands[0] for i in computation.instructions if i.operands and
                      getattr(i.attrs, "custom_call_target", None) == FUNC_DATA_FLOW_EDGE}

        def fn(inst, operands):
            new = rebind_called(inst, replaced)
            if instance is not None and inst not in edge_owned:
                values = graph.inst_values.get((instance, inst))
                if values and not inst.shape.is_token and not (
                        unsharded_scalars and _says_nothing(inst, values, states)):
                    shardings = _kept_open(inst, tuple(
                        state_to_sharding(states[v], mesh) for v in values))
                    sharding = shardings if inst.shape.is_tuple else shardings[0]
                    # the imported sdy text is now stale: the instruction holds the result
                    attributes = tuple((k, v) for k, v in new.frontend_attributes
                                       if k != "xla.sdy.sharding")
                    new = new.replace(sharding=sharding, frontend_attributes=attributes)
            if instance is not None and (instance, inst) in graph.boundary_values:
                kept = (held or {}).get((instance, inst)) or ()
                new = _boundary_shardings(new, [
                    kept[k] if k < len(kept) and kept[k] is not None
                    else state_to_sharding(states[v], mesh)
                    for k, v in enumerate(graph.boundary_values[instance, inst])])
            if operands != inst.operands:
                new = new.replace(operands=operands)
            return new
        rebuilt = rewrite_in_place(computation, fn)
        if (computation is module.entry or computation.name in functions) if \
                results_of is None else computation.name in results_of:
            rebuilt = _result_shardings(rebuilt, computation is module.entry)
        return rebuilt
    return map_computations(module, rebuild)


def _kept_open(inst: Instruction, shardings: tuple) -> tuple:
    """`shardings` (one per value of `inst`), where propagation left a value all-open that
    already had an all-open sharding, that one as it was (its own mesh): as Shardy, a
    sharding nothing was propagated to is not rewritten."""
    old = inst.sharding
    olds = old if isinstance(old, tuple) else (old,)
    if len(olds) != len(shardings):
        return shardings
    return tuple(o if isinstance(o, TensorSharding) and is_unconstrained(o)
                 and is_unconstrained(s) and o.rank == s.rank else s
                 for o, s in zip(olds, shardings))


def _says_nothing(inst: Instruction, values, states) -> bool:
    """Whether propagation has nothing to say about `inst`'s one result: a scalar nobody
    gave a sharding (a scalar has no factors, so nothing reaches it). Shardy leaves it
    without a sharding; the partitioner reads none as replicated.

    >>> from xla_spmd.propagation.driver import ValueState
    >>> from xla_spmd.ir import Builder, ArrayShape, F32
    >>> b = Builder("f")
    >>> x = b.parameter(ArrayShape(F32, ()))
    >>> _says_nothing(x, [0], [ValueState([], [], [])])
    True
    """
    if inst.shape.is_tuple or len(values) != 1:
        return False
    state = states[values[0]]
    return not state.axes and not state.user and not state.replicated and not state.unreduced


def _boundary_shardings(inst: Instruction, shardings) -> Instruction:
    """A manual computation's boundary with its in (or out) shardings as propagated."""
    key = IN_SHARDINGS if inst.attrs.custom_call_target == GLOBAL_TO_LOCAL else OUT_SHARDINGS
    text = print_sharding_per_value(shardings)
    return inst.replace(frontend_attributes=tuple(
        (k, text if k == key else v) for k, v in inst.frontend_attributes))


def _result_shardings(computation: Computation, is_entry: bool = True) -> Computation:
    """A function with each returned value that has a propagated sharding and no
    result sharding of its own wrapped in an ``xla.sdy.FuncResultSharding`` carrying it: as
    Shardy, the function's results get the shardings inferred for the values they return.
    The entry's results get them through an identity rule, so without the values'
    unreduced axes (Shardy's propagateFuncResults); another function's results copy them
    (its PropagateToFuncResultsPass)."""
    made: dict[Instruction, Instruction] = {}

    def wrap(value: Instruction) -> Instruction:
        if value not in made:
            made[value] = _wrapped(value)
        return made[value]

    def _wrapped(value: Instruction) -> Instruction:
        if getattr(value.attrs, "custom_call_target", None) == FUNC_RESULT_SHARDING or \
                not isinstance(value.sharding, TensorSharding) or is_unconstrained(value.sharding):
            return value
        # the result was an open, empty sharding that propagation filled: open still
        # (replicated axes are a statement about the value, not propagated to the result)
        sharding = value.sharding.replace(
            dims=[DimSharding(d.axes, is_closed=False) for d in value.sharding.dims],
            replicated=(), unreduced=() if is_entry else None)
        return make_instruction(f"{value.name}.result", op_named("custom-call"), (value,),
                                op_named("custom-call").make_attrs(
                                    custom_call_target=FUNC_RESULT_SHARDING,
                                    custom_call_has_side_effect=True),
                                value.shape, sharding=sharding)
    root = computation.root
    if root.opcode != "tuple":
        new_root = wrap(root)
        added = (new_root,) if new_root is not root else ()
    else:
        operands = tuple(wrap(o) for o in root.operands)
        added = tuple(dict.fromkeys(n for n, o in zip(operands, root.operands) if n is not o))
        new_root = root if not added else root.replace(operands=operands)
        added += (new_root,) if added else ()
    if not added:
        return computation
    kept = tuple(i for i in computation.instructions if i is not root or new_root is root)
    if root.opcode != "tuple":
        kept = computation.instructions
    return Computation(computation.name, kept + added, new_root, computation.extras)
