"""The SPMD partitioner driver: a module whose values all have shardings -> one SPMD module.

Steps, each testable alone:

1. every instruction's handler (``handlers_*.py``, one registry keyed by opcode) decides the
   shardings its operands must have for a local computation ("insert explicit reshards");
2. each operand whose sharding differs is resharded: `reshard.plan_reshard` picks the
   steps, `emit.lower_plan` lowers them to collectives and local slices;
3. the handler emits the op on local (per-device) shapes; the result keeps its sharding.

Invariants of the output: every value has its local (ceiling-padded) shape, device-dependent
values come only from ``partition-id``, the header says ``num_partitions=N``, each partitioned
instruction keeps the sharding of the value it computes (for inspection), and the module passes
`xla_spmd.ir.verify`.

>>> from xla_spmd.ir import Builder, ArrayShape, F32, Module
>>> from xla_spmd.mesh import make_mesh
>>> from xla_spmd.sharding import TensorSharding
>>> mesh = make_mesh({"x": 4})
>>> b = Builder("main")
>>> x = b.parameter(ArrayShape(F32, (8, 4)), sharding=TensorSharding(mesh, [["x"], []]))
>>> y = b.negate(x, sharding=TensorSharding(mesh, [[], []]))
>>> m = partition(Module.from_entry("m", b.build(y)))
>>> [i.opcode for i in m.entry.instructions], str(m.entry.root.shape)
(['parameter', 'all-gather', 'negate'], 'f32[8,4]')
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from xla_spmd.errors import PartitionError, XlaSpmdError
from xla_spmd.ir import (
    ArrayShape,
    Computation,
    Instruction,
    Module,
    TupleShape,
    print_instruction,
    topological_order,
)
from xla_spmd.ir.module import has_side_effect
from xla_spmd.mesh import Mesh, axes_within, make_mesh
from xla_spmd.partition.emit import Emitter, ModuleState, local_dims, lower_plan
from xla_spmd.partition.registry import handler_for
from xla_spmd.partition.reshard import Plan, plan_reshard
from xla_spmd.partition.values import PTuple, PValue, leaves, shape_leaves, unflatten
from xla_spmd.sharding import TensorSharding, declared_meshes, program_mesh

if TYPE_CHECKING:
    from xla_spmd.ir import Shape
    from xla_spmd.ir.attr_types import Attrs
    from xla_spmd.mesh import AxisRef
    from xla_spmd.partition.values import PartValue


class Lowering:
    """Partitions instructions of one computation into an `Emitter`."""

    def __init__(self, state: ModuleState, partitioner: Partitioner):
        self.state = state
        self.partitioner = partitioner
        self.mesh: Mesh = state.mesh
        self.em = Emitter(state)
        # Local values that are cheaper to compute again in another sharding than to move
        # (constants, iotas, broadcasts): local instruction -> (recompute(target), its cost).
        # A reshard's result -> (redo the reshard to a target, bytes that would move)
        self.recompute: dict[Instruction, tuple[Callable, Callable]] = {}
        # The users of each instruction of the computation being lowered (for look-ahead).
        self.uses: dict[Instruction, list[Instruction]] = {}
        # The root of the computation being lowered: its value is used by the caller.
        self.root: Instruction | None = None

    # -- shardings -------------------------------------------------------------------------
    def sharding(self, dims_axes: Iterable[Iterable[AxisRef]],
                 unreduced: Iterable[AxisRef] = ()) -> TensorSharding:
        return TensorSharding(self.mesh, [list(a) for a in dims_axes], unreduced=list(unreduced))

    def replicated(self, rank: int) -> TensorSharding:
        return TensorSharding(self.mesh, [[] for _ in range(rank)])

    def normalize(self, sharding: object, rank: int) -> TensorSharding:
        """Closed dims and unreduced axes only; None means replicated."""
        if not isinstance(sharding, TensorSharding):
            return self.replicated(rank)
        if sharding.mesh.shape != self.mesh.shape and not axes_within(sharding.mesh,
                                                                       self.mesh):
            raise PartitionError(f"sharding {sharding} is over mesh {sharding.mesh!r}, but the "
                                 f"module is partitioned over {self.mesh!r}")
        if sharding.rank != rank:
            raise PartitionError(f"sharding {sharding} has rank {sharding.rank}, the value has "
                                 f"rank {rank}")
        if sharding.reduction != "sum":
            raise PartitionError(f"sharding {sharding}: unreduced axes combined by "
                                 f"{sharding.reduction} are not supported (only sums)")
        # A mesh of the same axes in another device order (Shardy's device_ids) keeps its
        # order: `reshard` moves shards between the orders with a collective-permute.
        reordered = sharding.mesh.shape == self.mesh.shape \
            and sharding.mesh.all_device_ids != self.mesh.all_device_ids
        mesh = sharding.mesh if reordered and (sharding.sharded_axes or sharding.unreduced) \
            else self.mesh
        return TensorSharding(mesh, [list(d.axes) for d in sharding.dims],
                              unreduced=list(sharding.unreduced))

    def targets(self, inst: Instruction) -> list[TensorSharding]:
        """The wanted sharding of each array leaf of `inst`'s result."""
        shapes = shape_leaves(inst.shape)
        given = inst.sharding_leaves()
        if len(given) != len(shapes):
            given = (None,) * len(shapes)
        targets = [self.normalize(s, getattr(shape, "rank", 0))
                   for s, shape in zip(given, shapes)]
        partial = self.partitioner and self.partitioner.partial_axes.get(inst)
        if partial and len(targets) == 1:  # read as partial sums by an sdy.all_reduce
            (target,) = targets
            extra = [a for a in partial if a not in target.unreduced]
            targets = [target.replace(unreduced=tuple(target.unreduced) + tuple(extra))]
        return targets

    def target(self, inst: Instruction) -> TensorSharding:
        return self.targets(inst)[0]

    # -- values ----------------------------------------------------------------------------
    def local_shape(self, global_shape: ArrayShape, sharding: TensorSharding) -> ArrayShape:
        return ArrayShape(global_shape.dtype, local_dims(sharding, global_shape.dims))

    def reshard(self, value: PValue, target: TensorSharding) -> PValue:
        if _same(value.sharding, target):
            return value
        if value.global_shape.is_token:
            return value
        source_mesh, target_mesh = value.sharding.mesh, target.mesh
        if source_mesh.all_device_ids != self.mesh.all_device_ids:
            value = self._reorder(value, self.mesh)
        if target_mesh.all_device_ids != self.mesh.all_device_ids:
            value = self.reshard(value, _on_mesh(target, self.mesh))
            return self._reorder(value, target_mesh)
        plan = plan_reshard(value.sharding, target, value.global_shape.dims,
                            value.global_shape.dtype.itemsize)
        recompute = self.recompute.get(value.inst)
        if recompute is not None and plan.bytes > 0 and recompute[1](target) < plan.bytes:
            return recompute[0](target)
        shape = value.global_shape
        slices = len(plan.steps)
        while slices and plan.steps[slices - 1].kind == "slice":
            slices -= 1
        if slices == len(plan.steps):
            return PValue(lower_plan(self.em, value.inst, value.sharding, plan, shape.dims),
                          target, shape)
        # The plan ends in local slices: keep the value before them at hand, so that a later
        # reshard to a less sharded layout starts from it (GSPMD's reshard cache).
        whole = value
        if slices:
            dims = [list(d.axes) for d in target.dims]
            for step in plan.steps[slices:]:
                dims[step.dim] = dims[step.dim][:len(dims[step.dim]) - len(step.axes)]
            middle = self.sharding(dims, target.unreduced)
            whole = PValue(lower_plan(self.em, value.inst, value.sharding,
                                      Plan(plan.steps[:slices]), shape.dims), middle, shape)
        inst = lower_plan(self.em, whole.inst, whole.sharding, Plan(plan.steps[slices:]),
                          shape.dims)
        self.recompute[inst] = (
            lambda t: self.reshard(whole, t),
            lambda t: plan_reshard(whole.sharding, t, shape.dims, shape.dtype.itemsize).bytes)
        return PValue(inst, target, shape)

    def _reorder(self, value: PValue, mesh: Mesh) -> PValue:
        """The same sharding over `mesh` (same axes, other device order): device d takes
        the shard of the device at d's mesh coordinates in the value's current order."""
        source = value.sharding.mesh
        pairs = tuple((source.device_at(mesh.device_coords(d)), d) for d in range(mesh.size))
        moved = self.em.op("collective-permute", value.inst, source_target_pairs=pairs,
                           channel_id=self.state.channel())
        return PValue(moved, _on_mesh(value.sharding, mesh), value.global_shape)

    def replicate(self, value: PValue) -> PValue:
        return self.reshard(value, self.replicated(value.global_shape.rank))

    def emit(self, original: Instruction, operands: Sequence[PValue | Instruction],
             sharding: TensorSharding, global_shape: Shape | None = None,
             attrs: Attrs | None = None) -> PValue:
        """`original`'s op on local operands; the result is `sharding` of `global_shape`."""
        global_shape = global_shape or original.shape
        assert isinstance(global_shape, ArrayShape), "emit makes one array"
        local = self.local_shape(global_shape, sharding)
        inst = self.em.clone(original, [o.inst if isinstance(o, PValue) else o
                                        for o in operands], local, sharding, attrs)
        return PValue(inst, sharding, global_shape)

    def explode(self, inst: Instruction, shardings: Sequence[TensorSharding], global_shape: Shape
                ) -> PTuple | PValue:
        """GTEs of a local tuple instruction, as a PTuple of PValues."""
        if not isinstance(global_shape, TupleShape):
            return PValue(inst, shardings[0], global_shape)
        flat = list(shardings)

        def build(local_inst, shape):
            items = []
            for index, element in enumerate(shape.elements):
                gte = self.em.op("get-tuple-element", local_inst, index=index)
                if isinstance(element, TupleShape):
                    items.append(build(gte, element))
                else:
                    items.append(PValue(gte, flat.pop(0), element))
            return PTuple(tuple(items))
        return build(inst, global_shape)

    def pack(self, value: PartValue) -> Instruction:
        """A local instruction for a PValue or (a tuple instruction of) a PTuple."""
        if isinstance(value, PValue):
            return value.inst
        return self.em.op("tuple", *[self.pack(item) for item in value.items])

    # -- computations ----------------------------------------------------------------------
    def lower_body(self, computation: Computation, env: dict) -> PValue | PTuple:
        """Partition `computation`'s instructions (parameters pre-bound in `env`)."""
        # Handlers look ahead at the users of the computation being lowered; a nested body
        # (a loop's, a branch's) has its own, and the outer ones come back after it.
        outer = self.uses, self.root
        self.uses, self.root = computation.users(), computation.root
        try:
            for inst in computation.instructions:
                if inst in env:
                    continue
                operands = [env[o] for o in inst.operands]
                try:
                    env[inst] = handler_for(inst)(self, inst, operands)
                except XlaSpmdError as error:
                    if getattr(error, "_spmd_context", False):
                        raise
                    wrapped = PartitionError(f"partitioning {computation.name}: {error}\n"
                                             f"  at: {print_instruction(inst)}")
                    wrapped._spmd_context = True  # pyright: ignore[reportAttributeAccessIssue]
                    raise wrapped from error
        finally:
            self.uses, self.root = outer
        return env[computation.root]

    def parameter(self, number: int, global_shape: Shape, shardings: Sequence[TensorSharding],
                  name: str) -> PartValue:
        """A parameter with the local shape of `global_shape` under `shardings` (leaves)."""
        local = self.local_tuple_shape(global_shape, list(shardings))
        inst = self.em.op("parameter", shape=local, name=name, parameter_number=number,
                          sharding=shardings[0] if len(shardings) == 1 and
                          not isinstance(global_shape, TupleShape) else None)
        return self.explode(inst, shardings, global_shape)

    def local_tuple_shape(self, global_shape: Shape, shardings: list[TensorSharding]) -> Shape:
        if isinstance(global_shape, TupleShape):
            return TupleShape(tuple(self.local_tuple_shape(e, shardings)
                                    for e in global_shape.elements))
        sharding = shardings.pop(0) if isinstance(shardings, list) else shardings
        if global_shape.is_token:
            return global_shape
        return self.local_shape(global_shape, sharding)

    def finish(self, root_value: PartValue, name: str, params: Sequence[Instruction]
               ) -> Computation:
        root = self.pack(root_value)
        # Side effects nothing uses (host callbacks) stay, in the order they were emitted.
        effects = [i for i in self.em.instructions if has_side_effect(i)]
        order = topological_order(root, [*params, *effects])
        return Computation(name, order, root)

    def partition_callee(self, computation: Computation, arg_values: list,
                         result_targets: Sequence[TensorSharding],
                         name: str | None = None) -> tuple[Computation, object]:
        """Partition a called computation whose parameters have the given values' shardings;
        its root is resharded to `result_targets` (leaves). Returns it and its result PTuple
        or PValue template (global shapes and shardings)."""
        sub = Lowering(self.state, self.partitioner)
        env = {}
        for param, value in zip(computation.parameters, arg_values):
            env[param] = sub.parameter(param.attrs.parameter_number, param.shape,
                                       [v.sharding for v in leaves(value)],
                                       self.state.fresh_name(param.name))
        root = sub.lower_body(computation, env)
        flat = [sub.reshard(v, t) for v, t in zip(leaves(root), result_targets)]
        result = unflatten(computation.root.shape, list(flat)) if isinstance(
            computation.root.shape, TupleShape) else flat[0]
        params = [p for p in sub.em.instructions if p.opcode == "parameter"]
        return sub.finish(result, self.state.fresh_name(name or computation.name), params), \
            result


def _param_of(value):
    first = leaves(value)[0].inst
    while first.opcode == "get-tuple-element":
        first = first.operands[0]
    return first


def _on_mesh(sharding: TensorSharding, mesh: Mesh) -> TensorSharding:
    return TensorSharding(mesh, [list(d.axes) for d in sharding.dims],
                          unreduced=list(sharding.unreduced))


def _same(a: TensorSharding, b: TensorSharding) -> bool:
    return (a.mesh.all_device_ids == b.mesh.all_device_ids
            and tuple(d.axes for d in a.dims) == tuple(d.axes for d in b.dims)
            and tuple(a.unreduced) == tuple(b.unreduced))


class Partitioner:
    """Holds the module-wide state of one `partition` call."""

    def __init__(self, module: Module, mesh: Mesh):
        names = {i.name for c in module.computations for i in c.instructions}
        names |= {c.name for c in module.computations}
        channels = [getattr(i.attrs, "channel_id", None) or 0
                    for c in module.computations for i in c.instructions]
        self.module = module
        self.state = ModuleState(mesh, names, max(channels, default=0) + 1)
        self.stripped: dict[str, Computation] = {}
        from xla_spmd.partition.handlers_control import sdy_partial_axes
        self.partial_axes = sdy_partial_axes(module.computations)
        # The named meshes that sharding text in the module (manual regions) refers to.
        self.meshes = {"mesh": mesh, **declared_meshes(module)}

    def run(self) -> Module:
        entry = self.module.entry
        low = Lowering(self.state, self)
        env = {}
        params = []
        for param in entry.parameters:
            targets = low.targets(param)
            value = low.parameter(param.attrs.parameter_number, param.shape, targets,
                                  param.name)
            params.append(_param_of(value) if isinstance(value, PTuple) else value.inst)
            env[param] = value
        root = low.lower_body(entry, env)
        flat = [low.reshard(v, t) for v, t in zip(leaves(root), low.targets(entry.root))]
        root = unflatten(entry.root.shape, flat) if isinstance(entry.root.shape, TupleShape) \
            else flat[0]
        computation = low.finish(root, entry.name, params)
        header = tuple((k, v) for k, v in self.module.header
                       if k not in ("num_partitions", "entry_computation_layout"))
        header = header + (("num_partitions", str(self.state.mesh.size)),)
        return Module.from_entry(self.module.name, computation, header)


def partition(module: Module, mesh: Mesh | None = None) -> Module:
    """Partition `module`, whose values all have shardings (a value without one is
    replicated), into one SPMD module over `mesh` (default: the mesh of its shardings).

    This is the partitioning stage alone: `xla_spmd.pipeline` propagates before it and
    optimizes and verifies after it.
    """
    mesh = mesh or program_mesh(module) or make_mesh({"x": 1})
    return Partitioner(module, mesh).run()
