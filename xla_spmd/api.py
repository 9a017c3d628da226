"""``xs.jit`` and ``xs.shard_map``: frontend tracing joined with `xla_spmd.pipeline` and the
runtime, at the top of the layers.

A jitted function is traced once per input signature (`xla_spmd.frontend.jit`). A program
that carries shardings (``in_shardings`` / ``out_shardings``, sharded arguments,
``with_sharding_constraint``, ``shard_map``) is compiled once by `pipeline.compile` for this
process's devices, and each call runs it there (`xla_spmd.runtime.jit_runtime.Runner`),
returning `ShardedArray`s. A program without a sharding is evaluated on one device.

>>> import numpy as np, xla_spmd as xs
>>> xs.set_num_devices(4)
>>> mesh = xs.make_mesh({"x": 4})
>>> f = xs.jit(lambda a: (a * 2).sum(0), in_shardings=xs.NamedSharding(mesh, xs.P("x")))
>>> np.asarray(f(np.arange(8.0).reshape(4, 2)))
array([24., 32.])
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import xla_spmd.pipeline as pipeline
from xla_spmd.frontend import jit as frontend_jit
from xla_spmd.frontend import shard_map as frontend_shard_map
from xla_spmd.frontend.pytree import tree_unflatten
from xla_spmd.frontend.tracing import current_trace
from xla_spmd.ir import Module
from xla_spmd.runtime.devices import local_devices, topology
from xla_spmd.runtime.jit_runtime import Runner


@dataclass(frozen=True)
class DeviceProgram:
    """A traced program compiled for the job's devices: the pipeline's `program` and the
    `runner` that calls it on sharded arguments."""

    program: pipeline.Program
    runner: Runner


def compile_for_devices(module: Module) -> DeviceProgram | None:
    """`module` through the pipeline, compiled for this process's devices; None when it
    has no sharding (one device is all it needs)."""
    mesh = pipeline.program_mesh(module)
    num_devices = topology().num_devices
    if mesh is None or mesh.size == 1 < num_devices:
        return None
    program = pipeline.compile(module, mesh=mesh, devices=[d.id for d in local_devices()])
    return DeviceProgram(program, Runner(program.module, program.executable))


class Jitted(frontend_jit.Jitted):
    """A jitted function whose sharded programs run on the devices (see the module
    docstring); each traced signature is compiled once."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._compiled: dict = {}  # trace cache key -> DeviceProgram or None

    def device_program(self, lowered: frontend_jit.Lowered) -> DeviceProgram | None:
        """`lowered` compiled for the devices, once (None when it has no sharding)."""
        key = lowered._key
        if key not in self._compiled:
            self._compiled[key] = compile_for_devices(lowered.module)
        return self._compiled[key]

    def run(self, lowered: frontend_jit.Lowered, leaves: list):
        compiled = self.device_program(lowered)
        if compiled is None:
            return super().run(lowered, leaves)
        return tree_unflatten(lowered.out_tree, compiled.runner(leaves))

    def spmd_module(self, lowered: frontend_jit.Lowered) -> Module | None:
        compiled = self.device_program(lowered)
        return None if compiled is None else compiled.program.spmd_module


def jit(fn: Callable | None = None, *, in_shardings=None, out_shardings=None,
        static_argnums=(), static_argnames=(), donate_argnums=()):
    """Trace `fn` once per input signature and run it, partitioned over the devices when it
    is sharded; ``jit(f)``, ``@jit`` or ``@jit(...)`` (arguments as
    `xla_spmd.frontend.jit.jit`)."""
    def wrap(f):
        return Jitted(f, in_shardings, out_shardings, static_argnums, donate_argnums,
                      static_argnames)
    return wrap if fn is None else wrap(fn)


def shard_map(fn: Callable, mesh, in_specs, out_specs, axis_names=None):
    """`xla_spmd.frontend.shard_map.shard_map`; called outside a trace, it runs through
    `jit` on the mesh's devices."""
    body = frontend_shard_map.shard_map(fn, mesh, in_specs, out_specs, axis_names)
    jitted = jit(body)

    @functools.wraps(fn)
    def wrapped(*args):
        return body(*args) if current_trace() is not None else jitted(*args)
    return wrapped
