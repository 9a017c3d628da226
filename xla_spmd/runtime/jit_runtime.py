"""Running a compiled program on sharded arguments, as jitted functions and the command line
do: place the arguments (resharding those that arrive sharded differently), run the
executable on this process's devices (`executable.execute`), and return `ShardedArray`s
sharded as the program's results are. Donated arguments hand their buffers to the results
they alias. Every result has buffers of its own (``_own_buffers``: no argument returned as it
is, no value returned twice shares one), so donating a result later writes over nothing else.

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
        self.aliases = module.input_output_aliases

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
        exclusive = _exclusive(arguments, handed) if handed else None
        per_device = execute(self.executable, arguments, exclusive)
        _own_buffers(per_device, arguments, exclusive or {})
        del arguments
        outputs = [ShardedArray.from_padded_shards(shape.dims, shape.dtype.numpy, sharding,
                                                   {d: r[i] for d, r in per_device.items()})
                   for i, (shape, sharding) in enumerate(zip(self.result_shapes,
                                                             self.result_shardings))]
        # device -> the owner of each result's buffer (one result each: _own_buffers) -> it
        holders = {d: {_root(r): outputs[k] for k, r in enumerate(results)}
                   for d, results in per_device.items()} if self.aliases else {}
        for number, output in self.aliases.items():
            if placed[number].is_deleted():
                continue  # the same array donated twice: handed over once already
            _hand_over(placed[number], outputs[output], leaves[number], self.module.name,
                       holders)
        return outputs


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


def _root(array) -> int:
    """The id of the object that owns ``array``'s memory (the end of its ``base`` chain)."""
    while isinstance(array, np.ndarray) and array.base is not None:
        array = array.base
    return id(array)


def _own_buffers(per_device: dict[int, list], arguments: dict[int, list],
                 handed: dict[int, frozenset[int]]) -> None:
    """Copy each result that shares a buffer with an argument not handed over (the program
    returned its parameter, or a view of it) or with another result of its device (a value
    returned twice): every result gets buffers of its own, as XLA's do, so donating one
    result later never writes over another result or the caller's argument. Buffers are told
    apart by their owners (``_root``): results that are views of one buffer are copied even
    where they do not overlap."""
    for device, results in per_device.items():
        given = handed.get(device, frozenset())
        taken = {_root(a) for n, a in enumerate(arguments.get(device, ())) if n not in given}
        for i, result in enumerate(results):
            root = _root(result)
            if root in taken and hasattr(result, "copy"):  # an array (not a token)
                results[i] = result = result.copy()  # (a device array too)
                root = id(result)
            taken.add(root)


def _hand_over(donated: ShardedArray, result: ShardedArray, argument, program: str,
               holders: dict[int, dict[int, ShardedArray]] | None = None) -> None:
    """Give the donated argument's buffers to the result it aliases where the executable
    computed the result in them (in place: no copy), and delete the argument the caller
    passed. Where the result has a buffer of its own, it keeps it and the donated one is
    released with the argument: copying the values over would cost a pass over memory and
    save none (both buffers are live at the copy), so nothing is ever copied here.

    ``holders[device]`` maps the owner of each result's buffer on that device (``_root``) to
    that result: a donated buffer that holds another result (the program returned the
    argument itself, or computed another result in it in place) is left to that result, as
    writing into it would change that result's values. Updated as buffers change hands."""
    if donated.tensor_sharding != result.tensor_sharding or donated.dtype != result.dtype:
        return  # nothing to reuse: the layouts differ
    holders = {} if holders is None else holders
    for device, buffer in donated._shards.items():
        values = result._shards[device]
        held = holders.setdefault(device, {})
        if held.get(_root(buffer), result) is not result:
            continue
        if (buffer.shape == values.shape and values.ctypes.data == buffer.ctypes.data
                and values.strides == buffer.strides):
            result._shards[device] = buffer
            held[id(buffer)] = result
    if isinstance(argument, ShardedArray):
        argument.delete(by=program)
