"""Where GPU values live and how kernels launch: the array module (``xp``), device selection,
the transfers to and from the host, and the launch of a compiled fusion.

Two runtimes share one interface, so the executable is written once:

* ``CupyRuntime``: ``xp`` is CuPy; buffers come from CuPy's memory pool; fusions run as
  kernels of a ``cupy.RawModule`` loaded from the PTX that ``compiler`` made. CuPy has no
  bfloat16 dtype, so bf16 values live on the GPU as their uint16 bits (``to_device`` and
  ``to_host`` reinterpret them; kernels that compute on them widen the bits to f32).
* ``HostStandIn``: ``xp`` is numpy and a fusion is evaluated member by member with the
  reference rules. It is a HOST-ONLY CHECK of the GPU executable's dispatch, schedule and
  buffer planning on machines without a GPU; it runs none of the generated CUDA code.

Device selection: in one process, device ``d`` of the program runs on visible GPU ``d``; under
``mpirun`` each process owns one device and uses GPU ``local_rank()`` (modulo the visible
GPUs), so ranks on one node take distinct GPUs.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import numpy as np

from xla_spmd.backends.reference.evaluator import EVALUATE
from xla_spmd.errors import XlaSpmdError
from xla_spmd.ir import ArrayShape
from xla_spmd.ir.dtypes import BF16

_LOCAL_RANK_VARIABLES = ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                         "MV2_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "LOCAL_RANK")
_THREADS = 256
_MAX_BLOCKS = 65535


def local_rank() -> int | None:
    """This process's rank on its node under a launcher (``OMPI_COMM_WORLD_LOCAL_RANK`` and
    the like), or None outside one."""
    for name in _LOCAL_RANK_VARIABLES:
        value = os.environ.get(name)
        if value is not None and value.isdigit():
            return int(value)
    return None


def cupy_module():
    """CuPy, when it is installed and sees a CUDA GPU; otherwise an ``XlaSpmdError`` that says
    what is missing (no traceback of CuPy's own)."""
    try:
        import cupy  # pyright: ignore[reportMissingImports]  (the gpu extra)
    except ImportError as error:
        raise XlaSpmdError(
            "the GPU backend needs CuPy and a CUDA GPU: pip install -e '.[gpu]' "
            f"(CuPy for CUDA 12, NVRTC, NCCL); CuPy is not installed ({error})") from None
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as error:  # noqa: BLE001 -- CUDA raises its own runtime errors
        raise XlaSpmdError(f"the GPU backend needs a CUDA GPU; CuPy sees none: {error}") from None
    if count < 1:
        raise XlaSpmdError("the GPU backend needs a CUDA GPU; none is visible")
    return cupy


def gpu_for_device(device: int, visible: int, mpi: bool) -> int:
    """The GPU index device ``device`` runs on (see the module docstring)."""
    if mpi:
        rank = local_rank()
        return (rank if rank is not None else device) % visible
    if device >= visible:
        raise XlaSpmdError(f"device {device} has no GPU: {visible} GPU(s) are visible; run "
                           f"with at most {visible} in-process devices, or one rank per GPU "
                           f"under mpirun")
    return device


def _grid(count: int) -> int:
    return max(1, min(_MAX_BLOCKS, (count + _THREADS - 1) // _THREADS))


class HostStandIn:
    """numpy standing in for CuPy (HOST-ONLY CHECK: no generated kernel runs)."""

    name = "host stand-in (numpy)"
    xp = np

    def select(self, device: int) -> None:
        """Nothing to select on the host."""

    def to_device(self, array, shape) -> np.ndarray:
        return np.asarray(array)

    def to_host(self, value, shape) -> np.ndarray:
        return np.asarray(value)

    def widen(self, x, dtype) -> np.ndarray:
        """``x`` (of IR dtype ``dtype``) as an array of its compute dtype."""
        return x

    def storage(self, dtype) -> np.dtype:
        """The array dtype values of IR dtype ``dtype`` are kept in."""
        return dtype.numpy

    def narrow(self, x, dtype) -> np.ndarray:
        """A compute-dtype array rounded to IR dtype ``dtype``'s storage."""
        return x.astype(dtype.numpy)

    def launch(self, fusion, inputs: list, accumulator=None):
        """Evaluate ``fusion`` with the reference rules on its inputs."""
        values = {id(i): v for i, v in zip(fusion.inputs, inputs)}
        for member in fusion.members:
            if id(member) in values and member is not fusion.root:
                continue
            operands = [values[id(o)] for o in member.operands]
            values[id(member)] = EVALUATE.lookup(member.op.name)(member, operands, None)
        return values[id(fusion.root)]


class CupyRuntime:
    """CuPy on the GPUs of this process: one compiled module, loaded per GPU on first use."""

    def __init__(self, ptx_path, mpi: bool):
        self.cupy = self.xp = cupy_module()
        self.visible = self.cupy.cuda.runtime.getDeviceCount()
        self.mpi = mpi
        self.ptx_path = ptx_path
        self._modules: dict[int, Any] = {}  # GPU -> its cupy.RawModule
        self._lock = threading.Lock()
        self.name = self.cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()

    @staticmethod
    def arch() -> str:
        """The virtual architecture of this process's GPUs (``compute_80``)."""
        import cupy  # pyright: ignore[reportMissingImports]  (the gpu extra)

        return f"compute_{cupy.cuda.Device(0).compute_capability}"

    def select(self, device: int) -> None:
        """Make device ``device``'s GPU current on the calling thread."""
        self.cupy.cuda.Device(gpu_for_device(device, self.visible, self.mpi)).use()

    def to_device(self, array, shape):
        array = np.asarray(array)
        if isinstance(shape, ArrayShape) and shape.dtype is BF16:
            array = array.view(np.uint16)
        return self.cupy.asarray(array)

    def to_host(self, value, shape):
        host = self.cupy.asnumpy(value) if isinstance(value, self.cupy.ndarray) else (
            np.asarray(value))
        if isinstance(shape, ArrayShape) and shape.dtype is BF16 and host.dtype == np.uint16:
            host = host.view(shape.dtype.array_dtype)
        return host

    def widen(self, x, dtype):
        if dtype is BF16:
            return (x.astype(np.uint32) << 16).view(np.float32)
        return x

    def storage(self, dtype) -> np.dtype:
        return _device_dtype(dtype)

    def narrow(self, x, dtype):
        if dtype is BF16:
            # Round to nearest even on the bits, NaN stays a quiet NaN (the renderer's rule).
            bits = self.cupy.asarray(x, np.float32).view(np.uint32)
            rounded = (bits + np.uint32(0x7FFF) + ((bits >> 16) & np.uint32(1))) >> 16
            quiet = (bits | np.uint32(0x400000)) >> 16
            return self.cupy.where(x != x, quiet, rounded).astype(np.uint16)
        return x.astype(dtype.numpy)

    def _function(self, name: str):
        gpu = self.cupy.cuda.Device().id
        with self._lock:
            module = self._modules.get(gpu)
            if module is None:
                module = self._modules[gpu] = self.cupy.RawModule(path=str(self.ptx_path))
        return module.get_function(name)

    def launch(self, fusion, inputs: list, accumulator=None):
        cupy, root = self.cupy, fusion.root
        inputs = [cupy.asarray(x, order="C") for x in inputs]
        if accumulator is None:
            out = cupy.empty(root.shape.dims, self.storage(root.shape.dtype))
        else:
            out = accumulator
        if out.size:
            self._function(fusion.name)((_grid(out.size),), (_THREADS,), (out, *inputs))
        return out


def _device_dtype(dtype) -> np.dtype:
    return np.dtype(np.uint16) if dtype is BF16 else dtype.numpy
