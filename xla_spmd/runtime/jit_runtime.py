"""Running a compiled program on sharded arguments, as jitted functions and the command line
do: place the arguments (resharding those that arrive sharded differently), run the
executable on this process's devices (`executable.execute`), and return `ShardedArray`s
sharded as the program's results are. Donated arguments hand their buffers to the results
they alias.

>>> import numpy as np, xla_spmd as xs
>>> from xla_spmd import pipeline
>>> xs.set_num_devices(4)
>>> mesh = xs.make_mesh({"x": 4})
>>> lowered = xs.jit(lambda a: (a * 2).sum(0),
...                  in_shardings=xs.NamedSharding(mesh, xs.P("x"))).lower(np.ones((4, 2)))
>>> program = pipeline.compile(lowered.module)
>>> [np.asarray(r) for r in Runner(program.module, program.executable)([np.ones((4, 2))])]
[array([8., 8.], dtype=float32)]
"""

from __future__ import annotations

import numpy as np

from xla_spmd.backends import Executable
from xla_spmd.errors import XlaSpmdError
from xla_spmd.ir import Module, TupleShape
from xla_spmd.mesh import Mesh
from xla_spmd.runtime.devices import topology
from xla_spmd.runtime.executable import execute
from xla_spmd.runtime.sharded_array import ShardedArray, device_put, mesh_local_devices
from xla_spmd.sharding import TensorSharding, axis_shardings


def _result_shardings(module: Module) -> list[TensorSharding]:
    return list(axis_shardings(module.entry.root))


class Runner:
    """An executable, with the global shapes and shardings of its program's parameters and
    results (`module`: the propagated program it was compiled from)."""

    def __init__(self, module: Module, executable: Executable):
        partitions, num_devices = executable.module.num_partitions, topology().num_devices
        if partitions > num_devices:
            raise XlaSpmdError(f"{module.name}: the shardings' mesh has {partitions} devices, "
                               f"this job has {num_devices}; use "
                               f"xs.set_num_devices({partitions}) or mpirun -n {partitions}")
        self.module = module
        self.executable = executable
        self.parameter_shardings = [axis_shardings(p)[0] for p in module.entry.parameters]
        self.result_shardings = _result_shardings(module)
        root = module.entry.root.shape
        self.result_shapes = list(root.elements) if isinstance(root, TupleShape) else [root]
        self.aliases = donated_aliases(module)

    def _place(self, leaf, sharding: TensorSharding, number: int) -> ShardedArray:
        """The argument as a ShardedArray with the parameter's sharding; an argument sharded
        differently is gathered and placed again. A replicated value on fewer devices than
        the program runs on (``device_put(x)`` puts it on the first device, as JAX's does)
        is copied to every device of the program."""
        partitions = self.executable.module.num_partitions
        if sharding.mesh.size < partitions and sharding.is_fully_replicated:
            sharding = TensorSharding.replicated_on(Mesh.from_shape({"devices": partitions}),
                                                    sharding.rank)
        if isinstance(leaf, ShardedArray) and leaf.tensor_sharding == sharding.closed():
            return leaf
        value = leaf.gather() if isinstance(leaf, ShardedArray) else np.asarray(leaf)
        if value.ndim != sharding.rank:
            raise XlaSpmdError(f"argument {number}: rank {value.ndim}, but the traced "
                               f"parameter has rank {sharding.rank}")
        placed = device_put(value, sharding)
        assert isinstance(placed, ShardedArray)  # one array in, one out
        return placed

    def __call__(self, leaves: list) -> list[ShardedArray]:
        placed = [self._place(leaf, sharding, i)
                  for i, (leaf, sharding) in enumerate(zip(leaves, self.parameter_shardings))]
        devices = [d.id for d in mesh_local_devices(self.executable.module.num_partitions)]
        arguments = {d: [a.shard_data(d, padded=True) for a in placed] for d in devices}
        # A placed argument is the caller's ShardedArray or a fresh copy (device_put copies
        # each shard): either way the caller's own arrays are not among the buffers.
        handed = list(self.aliases)
        per_device = execute(self.executable, arguments,
                             _exclusive(arguments, handed) if handed else None)
        del arguments
        outputs = [ShardedArray.from_padded_shards(shape.dims, shape.dtype.numpy, sharding,
                                                   {d: r[i] for d, r in per_device.items()})
                   for i, (shape, sharding) in enumerate(zip(self.result_shapes,
                                                             self.result_shardings))]
        for number, output in self.aliases.items():
            _hand_over(placed[number], outputs[output], leaves[number], self.module.name)
        return outputs


def donated_aliases(module: Module) -> dict[int, int]:
    """Donated parameter number -> the result it aliases, from XLA's `input_output_alias`
    module attribute (``{ {1}: (0, {}, may-alias) }``: result 1 reuses parameter 0)."""
    return module.input_output_aliases


def _exclusive(arguments: dict[int, list], numbers: list[int]) -> dict[int, frozenset[int]]:
    """Device -> the donated argument ``numbers`` whose buffer the executable may write over:
    an array that no other argument of any device is, shares a base with, or is a view of (a
    replicated array placed as one buffer on every device is none of them); the executable
    checks the rest (``CpuExecutable.run``)."""
    seen: dict[int, int] = {}
    for values in arguments.values():
        for value in values:
            seen[id(value)] = seen.get(id(value), 0) + 1
            base = getattr(value, "base", None)
            while base is not None:
                seen[id(base)] = seen.get(id(base), 0) + 1
                base = getattr(base, "base", None)
    def alone(value) -> bool:
        base = getattr(value, "base", None)
        return seen[id(value)] == 1 and (base is None or seen[id(base)] == 1)
    return {device: frozenset(n for n in numbers if alone(values[n]))
            for device, values in arguments.items()}


def _hand_over(donated: ShardedArray, result: ShardedArray, argument, program: str) -> None:
    """Give the donated argument's buffers to the result it aliases: the result's values
    are written into them (already there where the executable computed the result in the
    donated buffer: no copy), and the argument the caller passed is deleted."""
    if donated.tensor_sharding != result.tensor_sharding or donated.dtype != result.dtype:
        return  # nothing to reuse: the layouts differ
    for device, buffer in donated._shards.items():
        values = result._shards[device]
        if buffer.shape == values.shape and buffer.flags.writeable and buffer.base is None:
            if not (values.ctypes.data == buffer.ctypes.data
                    and values.strides == buffer.strides):
                np.copyto(buffer, values)
            result._shards[device] = buffer
    if isinstance(argument, ShardedArray):
        argument.delete(by=program)
