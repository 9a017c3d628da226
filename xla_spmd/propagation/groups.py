"""Shardy's sharding-group sync before propagating (``ShardingGroupMap::
syncGroupMemberShardings``, run by every propagation strategy).

Groups are first unified as Shardy's import does: two groups naming the same value are one.
Then each group's members' initial shardings are compared, skipping members without one and
members whose sharding is fully open and unsharded (``isFullyReplicatedAndOpen``):

- all the others agree: every member takes that sharding, exactly (closed dims stay closed);
- two disagree: each member gets an open sharding constraint (all dims open, nothing
  sharded) right after it, every other use of the member reads the constraint instead, and
  the constraint becomes the group's member. Propagation then settles the group on the
  constraints, leaving the members' own shardings (and so the conflict) where they were.

A member's initial sharding is its instruction's; for an argument of a manual computation's
body, the computation's in-sharding of it.

>>> from xla_spmd.ir import Builder, ArrayShape, F32, Computation, Module
>>> from xla_spmd.mesh import make_mesh
>>> from xla_spmd.sharding import TensorSharding
>>> mesh = make_mesh({"a": 2, "b": 2})
>>> b = Builder("main")
>>> x = b.parameter(ArrayShape(F32, (8, 8)), sharding=TensorSharding(mesh, [["a"], []]))
>>> y = b.parameter(ArrayShape(F32, (8, 8)), sharding=TensorSharding(mesh, [["b"], []]))
>>> groups = [b.op("custom-call", v, shape=ArrayShape(F32, (8, 8)),
...                custom_call_target="xla.sdy.ShardingGroup") for v in (x, y)]
>>> out = b.add(x, y)
>>> main = Computation("main", (x, y, *groups, out), out)
>>> synced = sync_sharding_groups(Module.from_entry("m", main)).entry
>>> [(i.opcode, i.operands[0].name, str(i.sharding)) for i in synced.instructions[2:4]]
[('custom-call', 'p1', '#sdy.sharding<@mesh, [{?}, {?}]>'), \
('custom-call', 'p0', '#sdy.sharding<@mesh, [{?}, {?}]>')]
>>> [o.opcode for o in synced.root.operands]
['custom-call', 'custom-call']
"""

from __future__ import annotations

from xla_spmd.errors import XlaSpmdError
from xla_spmd.ir import (
    Computation,
    Instruction,
    Module,
    make_instruction,
    op_named,
    rebind_called,
)
from xla_spmd.ir.custom_calls import (
    GLOBAL_TO_LOCAL,
    GROUPS,
    MANUAL_BODY,
    SHARDING,
    SHARDING_GROUP_ID,
)
from xla_spmd.sharding import DimSharding, TensorSharding, declared_meshes
from xla_spmd.sharding.manual import boundary_shardings


def sync_sharding_groups(module: Module) -> Module:
    """`module` with its sharding groups' members synced (module doc); `module` itself when
    it has no group or nothing changes."""
    found = _group_ops(module)
    if not found:
        return module
    groups = _unify(found)
    body = _body_argument_shardings(module)
    set_to: dict[Instruction, TensorSharding] = {}
    # (member, the group's sharding) to wrap, in group order
    constrain: list[tuple[Instruction, TensorSharding]] = []
    for members in groups:
        shardings = [body.get(m, m.sharding if isinstance(m.sharding, TensorSharding)
                              else None) for m in members]
        candidates = [s for s in shardings if s is not None and not _open_unsharded(s)]
        if not candidates:
            continue
        if all(s == candidates[0] for s in candidates):
            set_to.update((m, candidates[0]) for m, s in zip(members, shardings)
                          if s != candidates[0] and m not in body)
        else:
            constrain.extend((m, candidates[0]) for m in members)
    if not set_to and not constrain:
        return module
    replaced: dict[str, Computation] = {}
    computations = []
    for computation in module.computations:
        new = _rewrite(computation, replaced, set_to, constrain)
        replaced[computation.name] = new
        computations.append(new)
    return Module(module.name, tuple(computations), replaced[module.entry.name], module.header)


def _is_group(inst: Instruction) -> bool:
    return getattr(inst.attrs, "custom_call_target", None) in GROUPS


def _group_ops(module: Module) -> list[tuple[Instruction, str]]:
    """(member, group id) of every group op, in program order."""
    return [(inst.operands[0], inst.frontend_attribute(SHARDING_GROUP_ID) or
             inst.frontend_attribute("group_id") or "0")
            for computation in module.computations for inst in computation.instructions
            if _is_group(inst) and inst.operands and not inst.operands[0].shape.is_tuple]


def _unify(found) -> list[list[Instruction]]:
    """The members of each group, groups naming a common value merged (Shardy's import),
    each member once, groups ordered by their smallest id."""
    parent: dict[str, str] = {}

    def find(key: str) -> str:
        while parent.get(key, key) != key:
            key = parent[key]
        return key
    first_id: dict[Instruction, str] = {}
    for member, group in found:
        leader = find(first_id.setdefault(member, group))
        other = find(group)
        if leader != other:
            low, high = sorted((leader, other), key=_id_order)
            parent[high] = low
    groups: dict[str, list[Instruction]] = {}
    for member, group in found:
        values = groups.setdefault(find(group), [])
        if member not in values:
            values.append(member)
    return [groups[k] for k in sorted(groups, key=_id_order)]


def _id_order(group: str):
    return (0, int(group), "") if group.lstrip("-").isdigit() else (1, 0, group)


def _open_unsharded(sharding: TensorSharding) -> bool:
    return all(d.is_open and not d.axes for d in sharding.dims)


def _body_argument_shardings(module: Module) -> dict:
    """Each parameter of a manual computation's body: its in-sharding."""
    meshes = declared_meshes(module)
    by_body: dict[str, tuple] = {}
    for computation in module.computations:
        for inst in computation.instructions:
            if inst.opcode != "call" or not inst.attrs.to_apply.name.startswith(MANUAL_BODY):
                continue
            shardings = []
            for operand in inst.operands:
                index, source = 0, operand
                if source.opcode == "get-tuple-element":
                    index, source = source.attrs.index, source.operands[0]
                if getattr(source.attrs, "custom_call_target", None) != GLOBAL_TO_LOCAL:
                    shardings.append(None)
                    continue
                try:
                    shardings.append(boundary_shardings(source, meshes)[index])
                except (XlaSpmdError, IndexError):
                    shardings.append(None)
            by_body[inst.attrs.to_apply.name] = tuple(shardings)
    body: dict[Instruction, TensorSharding] = {}
    for computation in module.computations:
        shardings = by_body.get(computation.name)
        if shardings is None:
            continue
        for inst in computation.instructions:
            number = inst.attrs.parameter_number if inst.opcode == "parameter" else None
            if number is not None and number < len(shardings) and shardings[number]:
                body[inst] = shardings[number]
    return body


def _rewrite(computation: Computation, replaced: dict, set_to: dict,
             constrain: list) -> Computation:
    mine = set(computation.instructions)
    wraps = [(m, s) for m, s in constrain if m in mine]
    # Shardy inserts each constraint right after its value (a block argument's at the
    # block's start), so of two inserted at one place the later comes first.
    at_start: list[Instruction] = []
    after: dict[Instruction, list[Instruction]] = {}
    wrapper: dict[Instruction, Instruction] = {}
    for number, (member, sharding) in enumerate(wraps):
        open_like = sharding.replace(dims=[DimSharding(is_closed=False)] * len(sharding.dims),
                                     replicated=(), unreduced=())
        custom_call = op_named("custom-call")
        wrapper[member] = make_instruction(
            f"{member.name}.group_constraint.{number}", custom_call, (member,),
            custom_call.make_attrs(custom_call_target=SHARDING), member.shape,
            sharding=open_like)
        if member.opcode == "parameter":
            at_start.insert(0, wrapper[member])
        else:
            after.setdefault(member, []).insert(0, wrapper[member])
    final: dict[Instruction, Instruction] = {}
    instructions: list[Instruction] = []

    def emit_wrappers(insts):
        for w in insts:
            new = w.replace(operands=(final[w.operands[0]],))
            final[w] = new
            instructions.append(new)
    started = False
    for inst in computation.instructions:
        if not started and inst.opcode != "parameter":
            started = True
            emit_wrappers(at_start)
        operands = tuple(final.get(wrapper.get(o, o), wrapper.get(o, o)) for o in inst.operands)
        new = rebind_called(inst, replaced)
        if inst in set_to:
            new = new.replace(sharding=set_to[inst])
        if operands != inst.operands:
            new = new.replace(operands=operands)
        final[inst] = new
        instructions.append(new)
        emit_wrappers(after.get(inst, ()))
    if not started:
        emit_wrappers(at_start)
    root = computation.root
    root = final[wrapper[root]] if root in wrapper else final[root]
    if all(final[i] is i for i in computation.instructions) and not wrapper:
        return computation
    return Computation(computation.name, tuple(instructions), root, computation.extras)


def remove_sharding_groups(module: Module) -> Module:
    """`module` without its sharding-group ops (Shardy's export,
    ``sdy-remove-sharding-groups``): once propagated they say nothing more.

    >>> from xla_spmd.ir import Builder, ArrayShape, F32, Computation, Module
    >>> b = Builder("main")
    >>> x = b.parameter(ArrayShape(F32, (8,)))
    >>> group = b.op("custom-call", x, shape=ArrayShape(F32, (8,)),
    ...              custom_call_target="xla.sdy.ShardingGroup")
    >>> out = b.negate(x)
    >>> main = Computation("main", (x, group, out), out)
    >>> [i.opcode for i in remove_sharding_groups(Module.from_entry("m", main)).entry.instructions]
    ['parameter', 'negate']
    """
    if not any(_is_group(i) for c in module.computations for i in c.instructions):
        return module
    replaced: dict[str, Computation] = {}
    computations = []
    for computation in module.computations:
        final: dict[Instruction, Instruction] = {}
        for inst in computation.instructions:
            if _is_group(inst) and inst is not computation.root:
                continue
            new = rebind_called(inst, replaced)
            operands = tuple(final[o] for o in inst.operands)
            final[inst] = new if operands == inst.operands else new.replace(operands=operands)
        new = Computation(computation.name, tuple(final.values()), final[computation.root],
                          computation.extras)
        replaced[computation.name] = new
        computations.append(new)
    return Module(module.name, tuple(computations), replaced[module.entry.name], module.header)
