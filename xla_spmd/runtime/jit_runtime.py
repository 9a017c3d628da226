"""Running jitted functions on the job's devices.

`xs.jit` traces a function to a module with the user's shardings on its parameters and
results (xla_spmd.frontend.jit). Calling it runs the pipeline once per input signature:

    propagate -> partition -> optimize -> compile (reference backend) -> run on the devices

and then places the arguments (resharding those that arrive sharded differently), runs the
SPMD program on this process's devices, and returns `ShardedArray`s sharded as the results
are. A function whose module carries no sharding runs on one device, as before.

>>> import numpy as np, xla_spmd as xs
>>> xs.set_num_devices(4)
>>> mesh = xs.make_mesh({"x": 4})
>>> f = xs.jit(lambda a: (a * 2).sum(0), in_shardings=xs.NamedSharding(mesh, xs.P("x")))
>>> np.asarray(f(np.arange(8.0).reshape(4, 2)))
array([24., 32.])
"""

from __future__ import annotations

import re

import numpy as np

from xla_spmd.backends.reference import leaves as value_leaves
from xla_spmd.errors import XlaSpmdError
from xla_spmd.ir import Module, TupleShape
from xla_spmd.runtime.devices import local_devices, topology
from xla_spmd.runtime.executable import SpmdExecutable
from xla_spmd.runtime.sharded_array import ShardedArray, device_put
from xla_spmd.sharding import TensorSharding


def module_mesh(module: Module):
    """The mesh the module's shardings are over (None when it has none): a TensorSharding
    anywhere in its computations (parameters, results, ``Sharding`` custom-calls, ...), else
    a mesh its manual regions (shard_map) or ``xla.sdy.meshes`` attribute declare. A value
    placed on one device (``{maximal device=k}``) names the job's mesh only when nothing
    else does."""
    maximal = None
    for computation in module.computations:
        for inst in computation.instructions:
            shardings = inst.sharding if isinstance(inst.sharding, tuple) else (inst.sharding,)
            for sharding in shardings:
                if isinstance(sharding, TensorSharding):
                    if not sharding.mesh.is_maximal:
                        return sharding.mesh
                    maximal = maximal or sharding.mesh
    if maximal is not None:
        return maximal
    # A manual region's boundary custom-calls carry their shardings as sdy text naming the
    # mesh; the mesh itself is the one the frontend's shard_map recorded for the body.
    from xla_spmd.frontend.jit import manual_meshes
    from xla_spmd.propagation.importing import module_meshes

    meshes = [*manual_meshes(module), *module_meshes(module).values()]
    return meshes[0] if meshes else None


def _result_shardings(module: Module) -> list[TensorSharding]:
    root = module.entry.root
    if isinstance(root.shape, TupleShape):
        return list(root.sharding)
    return [root.sharding]


class CompiledStep:
    """A traced module compiled for the job's devices."""

    def __init__(self, module: Module):
        from xla_spmd.partition import partition
        from xla_spmd.propagation import propagate

        mesh = module_mesh(module)
        if mesh.size != topology().num_devices:
            raise XlaSpmdError(f"{module.name}: the shardings' mesh has {mesh.size} devices, "
                               f"this job has {topology().num_devices}; use "
                               f"xs.set_num_devices({mesh.size}) or mpirun -n {mesh.size}")
        self.module = propagate(module, mesh=mesh)
        self.spmd_module = partition(self.module, mesh, propagate=False)
        self.executable = SpmdExecutable(self.spmd_module)
        self.parameter_shardings = [p.sharding for p in self.module.entry.parameters]
        self.result_shardings = _result_shardings(self.module)
        root = self.module.entry.root.shape
        self.result_shapes = list(root.elements) if isinstance(root, TupleShape) else [root]
        self.aliases = donated_aliases(self.module)

    def _place(self, leaf, sharding: TensorSharding, number: int) -> ShardedArray:
        """The argument as a ShardedArray with the parameter's sharding; an argument sharded
        differently is gathered and placed again."""
        if isinstance(leaf, ShardedArray) and leaf.sharding == sharding:
            return leaf
        value = leaf.gather() if isinstance(leaf, ShardedArray) else np.asarray(leaf)
        if value.ndim != sharding.rank:
            raise XlaSpmdError(f"argument {number}: rank {value.ndim}, but the traced "
                               f"parameter has rank {sharding.rank}")
        return device_put(value, sharding)

    def __call__(self, leaves: list) -> list[ShardedArray]:
        placed = [self._place(leaf, sharding, i)
                  for i, (leaf, sharding) in enumerate(zip(leaves, self.parameter_shardings))]
        devices = [d.id for d in local_devices()]
        results = self.executable.execute(
            {d: [a.shard_data(d, padded=True) for a in placed] for d in devices})
        per_device = {d: value_leaves(r) for d, r in results.items()}
        outputs = [ShardedArray.from_padded_shards(shape.dims, shape.dtype.numpy, sharding,
                                                   {d: r[i] for d, r in per_device.items()})
                   for i, (shape, sharding) in enumerate(zip(self.result_shapes,
                                                             self.result_shardings))]
        for number, output in self.aliases.items():
            _hand_over(placed[number], outputs[output], leaves[number], self.module.name)
        return outputs


_ALIAS = re.compile(r"\{(\d*)\}\s*:\s*\((\d+),\s*\{\}")


def donated_aliases(module: Module) -> dict[int, int]:
    """Donated parameter number -> the result it aliases, from XLA's `input_output_alias`
    module attribute (``{ {1}: (0, {}, may-alias) }``: result 1 reuses parameter 0)."""
    text = module.header_value("input_output_alias") or ""
    return {int(number): int(output or 0) for output, number in _ALIAS.findall(text)}


def _hand_over(donated: ShardedArray, result: ShardedArray, argument, program: str) -> None:
    """Give the donated argument's buffers to the result it aliases: the result's values
    are written into them, and the argument the caller passed is deleted."""
    if donated.sharding != result.sharding or donated.dtype != result.dtype:
        return  # nothing to reuse: the layouts differ
    for device, buffer in donated._shards.items():
        values = result._shards[device]
        if buffer.shape == values.shape and buffer.flags.writeable and buffer.base is None:
            np.copyto(buffer, values)
            result._shards[device] = buffer
    if isinstance(argument, ShardedArray):
        argument.delete(by=program)


def compiled_step(lowered) -> CompiledStep | None:
    """The lowered function compiled for the devices, once (None when it has no sharding)."""
    compiled = getattr(lowered, "_compiled", None)
    if compiled is None:
        mesh = module_mesh(lowered.module)
        if mesh is None or mesh.size == 1 < topology().num_devices:
            return None  # one device is all it needs: the frontend evaluates it there
        compiled = lowered._compiled = CompiledStep(lowered.module)
    return compiled


def execute_lowered(lowered, leaves: list) -> list | None:
    """The frontend's executor hook: run a lowered, sharded function on the devices (None
    when the module has no sharding, so the frontend evaluates it on one device)."""
    compiled = compiled_step(lowered)
    return None if compiled is None else compiled(leaves)


def partitioned_module(lowered) -> Module | None:
    """The frontend's compiler hook (`Lowered.compile().as_text()`): the per-device SPMD
    module of a sharded function (None when it has no sharding)."""
    compiled = compiled_step(lowered)
    return None if compiled is None else compiled.spmd_module
