"""The GPU backend: the CPU backend's fusions, schedule and buffer lifetimes (``cpu.program``),
each fusion rendered as a CUDA C kernel (``emitter``), compiled to PTX by NVRTC through the
cache (``compiler``) and launched by CuPy (``runtime``); dot through ``xp.matmul`` (cuBLAS),
and the reference rule on the host for anything else (each such fallback counted and shown by
``report()`` and ``as_text()``). Control flow is driven from the host.

``GpuBackend()`` needs CuPy and a GPU, and says so plainly when either is missing.
``GpuBackend(host_stand_in=True)`` runs the same executable with numpy standing in for CuPy
and the reference rules standing in for the generated kernels: a HOST-ONLY CHECK of
dispatch, schedule and buffers (no GPU code runs), which is how CI tests this backend.

>>> import numpy as np
>>> from xla_spmd.ir.hlo_parser import parse_hlo
>>> module = parse_hlo('''HloModule m
... ENTRY %e (x: f32[3]) -> f32[3] {
...   %x = f32[3] parameter(0)
...   %y = f32[3] multiply(%x, %x)
...   ROOT %z = f32[3] add(%y, %x)
... }''')
>>> executable = GpuBackend(host_stand_in=True).compile(module, devices=(0,))
>>> executable.run(0, [np.arange(3, dtype=np.float32)], communicator=None)
[array([0., 2., 6.], dtype=float32)]
>>> "extern \\"C\\" __global__ void c0_fusion_0_z" in executable.cuda_source
True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import xla_spmd.config as config
from xla_spmd.backends.cpu import kernels as cpu_kernels
from xla_spmd.backends.cpu.executable import CpuExecutable, _control_computations, _CpuContext
from xla_spmd.backends.cpu.program import Program, plan
from xla_spmd.backends.gpu import compiler, kernels
from xla_spmd.backends.gpu.emitter import render_source
from xla_spmd.backends.gpu.renderer import accumulator_type
from xla_spmd.backends.gpu.runtime import (
    CupyRuntime,
    HostStandIn,
    cupy_module,
    gpu_for_device,
    local_rank,
)
from xla_spmd.backends.reference.evaluator import EVALUATE, leaves
from xla_spmd.backends.reference.executable import device_arguments
from xla_spmd.errors import XlaSpmdError
from xla_spmd.ir import ArrayShape, Module
from xla_spmd.ir.batch_norm import inline_batch_norm
from xla_spmd.ir.dtypes import BF16


class _Done:
    """The handle of a collective that ran at once (one device: no communicator)."""

    def __init__(self, value):
        self.value = value

    def wait(self):
        return self.value


class _Uploaded:
    """A host communicator's handle whose result is copied to the device at ``wait()``."""

    def __init__(self, handle, upload):
        self.handle, self.upload = handle, upload

    def wait(self):
        return self.upload(self.handle.wait())


class GpuExecutable(CpuExecutable):
    """A module compiled for the GPU (see ``xla_spmd.backends.base.Executable``); runs the
    CPU backend's plans with the GPU's kernels."""

    def __init__(self, module: Module, devices: Sequence[int], host_stand_in: bool = False):
        import threading
        from collections import Counter

        module = inline_batch_norm(module)  # batch norm as its primitive expansion
        self.module = module
        self.devices = tuple(devices)
        computations = _control_computations(module)
        called = {id(c) for c in computations}
        # Transcendentals are fused too: CUDA's math library is the GPU's only one.
        self.programs: dict[int, Program] = {
            id(c): plan(c, called, f"c{k}_", libm=True) for k, c in enumerate(computations)}
        used = [s.fusion for p in self.programs.values() for s in p.steps if s.fusion]
        self.cuda_source = render_source(used)
        mpi = local_rank() is not None
        # Under mpirun the runtime hands run() an NCCL communicator on gpu_of(device); in one
        # process the devices' collectives go through the host (in-process communicator).
        self.collectives = None if host_stand_in or not mpi else "nccl"
        if host_stand_in:
            self.runtime = HostStandIn()
        else:
            cupy_module()  # a clear error before compiling when there is no GPU
            ptx = compiler.cached_ptx(self.cuda_source, CupyRuntime.arch()) if used else None
            self.runtime = CupyRuntime(ptx, mpi)
        for program in self.programs.values():
            for step in program.steps:
                if step.kind in ("kernel", "ufunc", "fallback"):
                    kernel = kernels.kernel_for(step.inst)
                    step.kind = "kernel" if kernel is not None else "fallback"
                    step.function = kernel
        self.fallback_runs: Counter = Counter()
        self._lock = threading.Lock()
        # The CPU executable's ``execute`` runs these: each step through ``_step`` (one
        # device per thread or rank; never ``run_together``).
        self.launches = {key: [(self._bound(step), step.slot, step.frees)
                               for step in program.steps]
                         for key, program in self.programs.items()}
        self.lockstep = False

    # -- running --------------------------------------------------------------------------

    def gpu_of(self, device: int) -> int:
        """The GPU index device ``device`` runs on in this process."""
        runtime = self.runtime
        if not isinstance(runtime, CupyRuntime):
            raise XlaSpmdError("the GPU backend's host stand-in runs on no GPU")
        return gpu_for_device(device, runtime.visible, local_rank() is not None)

    def run(self, device: int, arguments: Sequence, communicator: Any) -> list[np.ndarray]:
        rt = self.runtime
        rt.select(device)
        params = self.module.entry.parameters
        on_device = [rt.to_device(a, p.shape) if isinstance(p.shape, ArrayShape) else a
                     for a, p in zip(device_arguments(self.module, device, arguments), params)]
        results = self.run_on_device(device, on_device, communicator)
        shapes = self.module.entry.root.shape.leaves()
        return [rt.to_host(leaf, shape) for leaf, shape in zip(results, shapes)]

    def run_on_device(self, device: int, arguments: Sequence, communicator: Any) -> list:
        """``run`` on arguments already on the device's GPU (``runtime.xp`` arrays of the
        parameters' shapes; bf16 as uint16 bits on CuPy), returning device arrays: no host
        copies (what a benchmark of the kernels, or a caller keeping values on the GPU,
        wants)."""
        self.runtime.select(device)
        context = _CpuContext(self, partition_id=device,
                              num_partitions=self.module.num_partitions,
                              communicator=communicator,
                              max_loop_iterations=config.max_loop_iterations)
        return leaves(self.execute(self.programs[id(self.module.entry)], list(arguments),
                                   context))

    def _bound(self, step):
        return lambda values, ctx: self._step(step, values, ctx)

    def _step(self, step, values: list, ctx: _CpuContext) -> object:
        rt, kind = self.runtime, step.kind
        if kind == "fusion":
            return self._fusion(step, values)
        if kind == "constant":
            # Copied to each GPU once (the plan is shared by the devices of this process).
            key = ("constant", ctx.partition_id)
            if key not in step.cache:
                step.cache[key] = _to_device(rt, step.value, step.inst.shape)
            return step.cache[key]
        if kind == "wait":
            return values[step.slot].wait()
        operands = [values[slot] for slot in step.reads]
        if kind == "kernel":
            result = step.function(rt, step.inst, operands, ctx)
            if result is not NotImplemented:
                return result
        if kind == "start":
            return self._start(step, operands, ctx)
        if kind == "control":
            return self._control(step.inst, operands, ctx)
        with self._lock:
            self.fallback_runs[step.inst.op.name] += 1
        host = [_to_host(rt, v, o.shape) for v, o in zip(operands, step.inst.operands)]
        rule = EVALUATE.lookup(step.inst.op.name)
        return _to_device(rt, rule(step.inst, host, ctx), step.inst.shape)

    def _fusion(self, step, values: list):
        rt, fusion, inst = self.runtime, step.fusion, step.inst
        inputs = [values[slot] for slot in step.reads]
        if fusion.kind == "loop" or isinstance(rt, HostStandIn):
            return rt.launch(fusion, inputs)
        init = inputs[fusion.inputs.index(inst.operands[1])]
        accumulator = accumulator_type(inst.shape.dtype)
        widened = rt.widen(init, inst.operands[1].shape.dtype).astype(accumulator.numpy)
        filled = rt.xp.array(rt.xp.broadcast_to(widened, inst.shape.dims))
        out = rt.launch(fusion, inputs, filled)
        return out if accumulator is inst.shape.dtype else rt.narrow(out, inst.shape.dtype)

    def _start(self, step, operands: list, ctx: _CpuContext):
        rt, inst = self.runtime, step.inst
        communicator = ctx.communicator
        # Host communicators (and one device, where the reference rule runs) take host
        # arrays: the operands go down and the result comes back up at the wait.
        on_host = isinstance(rt, HostStandIn) or not getattr(
            communicator, "accepts_device_arrays", False)
        if on_host:
            operands = [_to_host(rt, x, o.shape) for x, o in zip(operands, inst.operands)]
            if communicator is None:
                handle = _Done(EVALUATE.lookup(inst.op.name)(inst, operands, ctx))
            else:
                handle = cpu_kernels.start(inst, operands, ctx, step.cache)
            return _Uploaded(handle, lambda value: _to_device(rt, value, inst.shape))
        operands = [rt.xp.asarray(x, order="C") for x in operands]
        if inst.op.name in _REDUCING and inst.operands[0].shape.dtype is BF16:
            # bf16 lives on the GPU as bits: reduce in f32 (as the host communicators fold
            # it) and round once.
            widened = [rt.widen(x, BF16) for x in operands]
            handle = cpu_kernels.start(inst, widened, ctx, step.cache)
            return _Uploaded(handle, lambda value: _narrowed(rt, value))
        return cpu_kernels.start(inst, operands, ctx, step.cache)

    # -- inspection -----------------------------------------------------------------------

    def report(self) -> dict:
        """What ran how: as ``CpuExecutable.report``, the GPU (or the host stand-in) in place
        of the host CPU."""
        kinds: dict = {}
        fallbacks: dict = {}
        fused = 0
        for program in self.programs.values():
            for step in program.steps:
                kinds[step.kind] = kinds.get(step.kind, 0) + 1
                if step.kind == "fusion":
                    fused += len(step.fused.members)
                if step.kind == "fallback":
                    fallbacks[step.inst.op.name] = fallbacks.get(step.inst.op.name, 0) + 1
        with self._lock:
            runs = dict(self.fallback_runs)
        entry = self.programs[id(self.module.entry)]
        return {"steps": kinds, "fused_instructions": fused, "fallbacks": fallbacks,
                "fallback_runs": runs, "peak_bytes": entry.peak_bytes,
                "device": self.runtime.name}

    def _target_line(self, report: dict) -> str:
        return f"device: {report['device']}"


_REDUCING = ("all-reduce", "reduce-scatter")


def _narrowed(rt, value):
    if isinstance(value, tuple):
        return tuple(_narrowed(rt, v) for v in value)
    return rt.narrow(value, BF16)


def _to_host(rt, value, shape):
    if isinstance(value, tuple):
        return tuple(_to_host(rt, v, s) for v, s in zip(value, shape.elements))
    if not isinstance(shape, ArrayShape) or shape.is_token:
        return value
    return rt.to_host(value, shape)


def _to_device(rt, value, shape):
    if isinstance(value, tuple):
        return tuple(_to_device(rt, v, s) for v, s in zip(value, shape.elements))
    if not isinstance(shape, ArrayShape) or shape.is_token:
        return value
    return rt.to_device(value, shape)


class GpuBackend:
    """The CPU backend's fusions as CUDA C through NVRTC and CuPy, cuBLAS for dot, host-driven
    control flow. ``host_stand_in=True``: numpy and the reference rules stand in for CuPy and
    the kernels (a host-only check of the executable; no GPU code runs)."""

    name = "gpu"

    def __init__(self, host_stand_in: bool = False):
        self.host_stand_in = host_stand_in

    def compile(self, module: Module, devices: Sequence[int]) -> GpuExecutable:
        return GpuExecutable(module, devices, self.host_stand_in)


BACKEND = GpuBackend()
