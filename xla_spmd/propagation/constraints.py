"""Shardy's pipeline steps around sharding constraints.

- `apply_sharding_constraints` (``sdy-apply-sharding-constraints``, before propagating): a
  value with no sharding of its own takes the sharding of a fully closed constraint on it,
  unless another constraint (or manual computation) on it wants a different one, or it is a
  target of a data-flow edge (a while/case result, a region argument). So the value is
  computed in the layout the constraint asks for, rather than resharded to it.
- `constraints_to_reshards` (``sdy-sharding-constraint-to-reshard``, after): the
  constraints left are reshards (``copy`` with a sharding, printed ``sdy.reshard``).

>>> from xla_spmd.ir import Builder, ArrayShape, F32, Module
>>> from xla_spmd.mesh import make_mesh
>>> from xla_spmd.sharding import TensorSharding
>>> b = Builder("main")
>>> x = b.parameter(ArrayShape(F32, (8, 8)))
>>> y = b.add(x, x)
>>> c = b.op("custom-call", y, shape=y.shape, custom_call_target="Sharding",
...          sharding=TensorSharding(make_mesh({"a": 2}), [["a"], []]))
>>> out = apply_sharding_constraints(Module.from_entry("m", b.build(c)))
>>> print(out.entry.instructions[1].sharding)
#sdy.sharding<@mesh, [{"a"}, {}]>
>>> print(constraints_to_reshards(out).entry.root.opcode)
copy
"""

from __future__ import annotations

from xla_spmd.ir import Computation, Instruction, Module, map_computations, op_named
from xla_spmd.ir.custom_calls import DATA_FLOW_EDGE, GLOBAL_TO_LOCAL, IN_SHARDINGS, SHARDING
from xla_spmd.propagation.rebuild import rebuild_in_order
from xla_spmd.sharding import TensorSharding


def is_constraint(inst: Instruction) -> bool:
    """Whether `inst` is a sharding constraint (not an explicit sdy collective, which
    imports as one too)."""
    return (inst.opcode == "custom-call" and inst.attrs.custom_call_target == SHARDING
            and inst.frontend_attribute("xla.sdy.collective") is None
            and isinstance(inst.sharding, TensorSharding))


def apply_sharding_constraints(module: Module) -> Module:
    """Each unsharded value constrained by a closed constraint takes its sharding (module
    doc)."""
    def rebuild(computation: Computation, replaced: dict) -> Computation:
        users = computation.users()
        new_sharding: dict[Instruction, TensorSharding] = {}
        for inst in computation.instructions:
            sharding = inst.sharding
            if not is_constraint(inst) or not isinstance(sharding, TensorSharding):
                continue  # (a constraint's sharding is a TensorSharding: is_constraint)
            value = inst.operands[0]
            if value in new_sharding or value.sharding is not None or value.shape.is_tuple \
                    or not all(d.is_closed for d in sharding.dims) or _is_edge_target(value):
                continue
            if any(_wants_other(user, value, sharding) for user in users.get(value, ())):
                continue
            new_sharding[value] = sharding
        return rebuild_in_order(computation, replaced,
                                {i: i.replace(sharding=s) for i, s in new_sharding.items()})
    return map_computations(module, rebuild)


def _is_edge_target(value: Instruction) -> bool:
    return value.opcode == "get-tuple-element" or (
        value.opcode == "custom-call" and value.attrs.custom_call_target == DATA_FLOW_EDGE)


def _wants_other(user: Instruction, value: Instruction, sharding: TensorSharding) -> bool:
    if is_constraint(user):
        return user.sharding != sharding
    if user.opcode == "custom-call" and user.attrs.custom_call_target == GLOBAL_TO_LOCAL:
        return user.frontend_attribute(IN_SHARDINGS) is not None   # conservative: skip
    return False


def constraints_to_reshards(module: Module) -> Module:
    """Every sharding constraint left a reshard (``copy`` with the sharding); one nothing
    uses is gone (it constrained nothing but its input, during propagation)."""
    copy = op_named("copy")

    def rebuild(computation: Computation, replaced: dict) -> Computation:
        users = computation.users()
        dead = {inst for inst in computation.instructions if is_constraint(inst)
                and not users.get(inst) and inst is not computation.root}
        rebuilt = rebuild_in_order(computation, replaced, {
            inst: inst.replace(op=copy, attrs=copy.make_attrs())
            for inst in computation.instructions if is_constraint(inst) and inst not in dead})
        if not dead:
            return rebuilt
        kept = tuple(new for old, new in zip(computation.instructions, rebuilt.instructions)
                     if old not in dead)
        return Computation(rebuilt.name, kept, rebuilt.root, rebuilt.extras)
    return map_computations(module, rebuild)


def lift_inlined_meshes(module: Module) -> Module:
    """Shardy's ``sdy-lift-inlined-meshes``: shardings whose mesh is written inline
    (``#sdy.sharding<mesh<["a"=2]>, ...>``) refer to a declared mesh instead, named
    ``mesh`` (a maximal one ``maximal_mesh_<device>``, the empty one ``empty_mesh``),
    numbered ``_0``, ``_1``... where the name is taken; one name per distinct mesh."""
    from xla_spmd.sharding import declared_meshes
    taken = set(declared_meshes(module))
    names: dict[tuple, str] = {}

    def name_of(mesh) -> str:
        key = (tuple(mesh.axis_names), tuple(mesh.axis_sizes), mesh.device_ids)
        if key not in names:
            if not mesh.axis_names and mesh.device_ids is not None:
                base = f"maximal_mesh_{mesh.device_ids[0]}"
            else:
                base = "mesh" if mesh.axis_names else "empty_mesh"
            name, counter = base, 0
            while name in taken:
                name, counter = f"{base}_{counter}", counter + 1
            taken.add(name)
            names[key] = name
        return names[key]

    def lift(sharding):
        if isinstance(sharding, TensorSharding) and sharding.mesh_name is None:
            return sharding.replace(mesh_name=name_of(sharding.mesh))
        return sharding

    def rebuild(computation: Computation, replaced: dict) -> Computation:
        changed = {}
        for inst in computation.instructions:
            sharding = inst.sharding
            if isinstance(sharding, tuple):
                new = tuple(lift(s) for s in sharding)
                lifted = new != sharding or any(a is not b for a, b in zip(new, sharding))
            else:
                new = lift(sharding)
                lifted = new != sharding
            if lifted:
                changed[inst] = inst.replace(sharding=new)
        return rebuild_in_order(computation, replaced, changed)
    return map_computations(module, rebuild)
