"""What `xs.inspect` and `xla-spmd inspect` show: per value its global shape, sharding,
local shape, why it is sharded so, the collectives it caused, and the predicted schedule and
memory of one step.

`build_report(module)` takes a global module with a few shardings (what `xs.jit` traces, or
an HLO/StableHLO file), propagates, partitions, and prices the partitioned program with the
cost model; the `InspectReport` it returns renders as rich tables (`print`) and as one HTML
file (`write_html`).

>>> import numpy as np, xla_spmd as xs
>>> xs.set_num_devices(4)
>>> mesh = xs.make_mesh({"x": 4}, axis_types=xs.AxisType.Auto)   # the partitioner decides
>>> f = xs.jit(lambda a, b: a @ b, in_shardings=(xs.NamedSharding(mesh, xs.P(None, "x")),
...                                             xs.NamedSharding(mesh, xs.P("x", None))))
>>> report = xs.inspect(f, np.ones((4, 8), np.float32), np.ones((8, 4), np.float32))
>>> [(v.name, v.local_shape) for v in report.values][:2]
[('Arg_0', (4, 2)), ('Arg_1', (2, 4))]
>>> [c.opcode for c in report.collectives]
['all-reduce']
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xla_spmd.cli_files import parse_mesh_text
from xla_spmd.cost import CostReport, OpCost, estimate, load_profile
from xla_spmd.cost.model import source_of
from xla_spmd.errors import XlaSpmdError
from xla_spmd.ir import Module, TupleShape
from xla_spmd.sharding import TensorSharding


@dataclass
class ValueInfo:
    """One value of the entry computation."""

    name: str
    opcode: str
    dtype: str
    global_shape: tuple[int, ...]
    sharding: str
    local_shape: tuple[int, ...]
    provenance: str
    source: str
    collectives: list[OpCost] = field(default_factory=list)
    spec: tuple = ()          # per dim: the mesh axes sharding it
    blocks: list = field(default_factory=list)   # (shard index, devices holding it)


@dataclass
class InspectReport:
    """Shardings, provenance, collectives and the predicted step of one program."""

    name: str
    mesh_axes: dict[str, int]
    mesh_devices: list        # the device ids laid out as the mesh (nested lists)
    values: list[ValueInfo]
    cost: CostReport
    measured_step_time: float | None = None

    @property
    def collectives(self) -> list[OpCost]:
        return [op for op in self.cost.ops if op.kind == "collective"]

    def top_collectives(self, count: int = 5) -> list[OpCost]:
        return sorted(self.collectives, key=lambda op: -op.time)[:count]

    def print(self, console=None) -> None:
        from xla_spmd.inspection.terminal import print_report
        print_report(self, console)

    def to_html(self) -> str:
        from xla_spmd.inspection.html import render_html
        return render_html(self)

    def write_html(self, path) -> None:
        from pathlib import Path
        Path(path).write_text(self.to_html())

    def _repr_html_(self) -> str:      # notebooks
        return self.to_html()


def _blocks(sharding: TensorSharding, dims, device_ids, limit: int = 512) -> list:
    """Each shard's index (per dim) and the devices that hold it, at most `limit` shards."""
    held: dict[tuple, list[int]] = {}
    for device in device_ids:
        held.setdefault(sharding.shard_index(device), []).append(device)
    ordered = sorted(held.items())
    return [[list(index), devices] for index, devices in ordered[:limit]]


def _global_name(name: str, names: set[str]) -> str:
    """The global instruction a partitioned one was cloned from: the partitioner keeps the
    name, with a ``.N`` suffix where it was taken."""
    while name not in names and "." in name and name.rsplit(".", 1)[1].isdigit():
        name = name.rsplit(".", 1)[0]
    return name


def _provenance(notes: dict[str, str], inst, sharding) -> str:
    if inst.sharding is not None and inst.opcode == "parameter":
        return "user sharding (argument)"
    note = notes.get(inst.name)
    if note:
        return note
    if sharding is None or sharding.is_fully_replicated:
        return "replicated: no sharded axis reached it"
    return "user sharding"


def build_report(module: Module, *, mesh=None, profile=None, name: str | None = None
                 ) -> InspectReport:
    """Propagate, partition and price `module` (see the module docstring)."""
    from xla_spmd.pipeline import lower, program_mesh
    from xla_spmd.propagation import import_shardings
    from xla_spmd.propagation.importing import has_foreign_shardings
    from xla_spmd.propagation.propagate import run
    from xla_spmd.propagation.provenance import annotate

    profile = profile if not isinstance(profile, (str, type(None))) else load_profile(profile)
    if has_foreign_shardings(module):  # GSPMD / Shardy text -> TensorShardings
        module = import_shardings(module, mesh).module
    mesh = mesh or program_mesh(module)
    if mesh is None:
        raise XlaSpmdError(f"{module.name}: no sharding and no mesh; give a mesh (--mesh "
                           "data=2,model=4) or shard an argument")
    result = run(module, mesh=mesh)     # propagation, keeping why each value is sharded
    propagated = result.module
    spmd = lower(propagated, mesh=mesh, propagate_shardings=False).spmd_module
    cost = estimate(spmd, profile)
    notes = annotate(result) if result.propagator is not None else {}
    names = {inst.name for inst in propagated.entry.instructions}
    caused: dict[str, list[OpCost]] = {}
    for op in cost.ops:
        if op.kind == "collective" and op.cause:
            caused.setdefault(_global_name(op.cause.split(" ")[0], names), []).append(op)
    devices = list(mesh.all_device_ids)
    values = []
    for inst in propagated.entry.instructions:
        if isinstance(inst.shape, TupleShape) or inst.shape.is_token:
            continue
        sharding = inst.sharding if isinstance(inst.sharding, TensorSharding) else None
        dims = tuple(inst.shape.dims)
        spec = tuple(tuple(a.name if hasattr(a, "name") else str(a)
                           for a in sharding.dim_axes(d)) for d in range(len(dims))) \
            if sharding is not None else tuple(() for _ in dims)
        values.append(ValueInfo(
            name=inst.name, opcode=inst.opcode, dtype=inst.shape.dtype.name,
            global_shape=dims, sharding=sharding.body_text() if sharding else "replicated",
            local_shape=tuple(sharding.shard_shape(dims)) if sharding else dims,
            provenance=_provenance(notes, inst, sharding), source=source_of(inst),
            collectives=caused.get(inst.name, []), spec=spec,
            blocks=_blocks(sharding, dims, devices) if sharding else [[[0] * len(dims),
                                                                       devices]]))
    return InspectReport(name or module.name, dict(mesh.shape), mesh.devices.tolist(),
                         values, cost)


def inspect(jitted, *args, profile=None, measure: int = 0, **kwargs) -> InspectReport:
    """The inspection report of `jitted` (an `xs.jit` function) on these arguments: per
    value its shardings, provenance and collectives, and the predicted step (see
    `InspectReport`). With ``measure=N`` the function also runs N times and the report holds
    the measured step time (the fastest run) beside the predicted one. Print it, or write
    its HTML with ``report.write_html(path)``."""
    lowered = jitted.lower(*args, **kwargs)
    name = getattr(getattr(jitted, "fun", None), "__name__", None) or lowered.module.name
    report = build_report(lowered.module, profile=profile, name=name)
    if measure:
        import time

        import numpy as np

        from xla_spmd.cost.calibrate import fastest
        from xla_spmd.frontend.pytree import tree_leaves

        samples = []
        for _ in range(measure + 1):
            start = time.perf_counter()
            for leaf in tree_leaves(jitted(*args, **kwargs)):
                np.asarray(leaf)
            samples.append(time.perf_counter() - start)
        report.measured_step_time = fastest(samples[1:])  # the first one compiles
    return report


def inspect_module(module: Module, *, mesh: str | None = None, profile=None
                   ) -> InspectReport:
    """The report of a program file's module; `mesh` (``data=2,model=4``) gives programs
    without shardings a mesh, every argument replicated over it."""
    from xla_spmd.ir import rewrite
    from xla_spmd.mesh import make_mesh
    from xla_spmd.pipeline import program_mesh

    found = program_mesh(module)
    if mesh is None:
        return build_report(module, profile=profile)
    axes = parse_mesh_text(mesh)
    the_mesh = make_mesh(axes)
    if found is not None and found.size != the_mesh.size:
        raise XlaSpmdError(f"--mesh {mesh} has {the_mesh.size} devices, but the program's "
                           f"shardings are over {found.size}")
    if found is None:
        entry = rewrite(module.entry, lambda inst, ops: inst.replace(
            sharding=TensorSharding.replicated_on(the_mesh, inst.shape.rank))
            if inst.opcode == "parameter" and not isinstance(inst.shape, TupleShape)
            else None)
        module = module.with_entry(entry)
    return build_report(module, mesh=the_mesh if found is None else None, profile=profile)
