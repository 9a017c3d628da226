"""The GPU backend (``get_backend("gpu")``): the CPU backend's fusions, schedule and buffer
lifetimes, each fusion rendered as CUDA C, compiled to PTX by NVRTC and launched through
CuPy; dot through cuBLAS (``cupy.matmul``); collectives through the communicator the runtime
passes (NCCL under ``mpirun``).

Layout: ``renderer`` (elementwise ops -> CUDA C expressions), ``emitter`` (a fusion -> a
kernel), ``compiler`` (CUDA C -> PTX through NVRTC, cached), ``runtime`` (CuPy or the numpy
host stand-in: buffers, transfers, launches, GPU selection), ``kernels`` (ops outside
fusions, over ``xp``) and ``executable``. Importing it needs neither CuPy nor a GPU; compiling
for a GPU without one raises an ``XlaSpmdError`` that says what is missing.
"""

from xla_spmd.backends.gpu.executable import BACKEND, GpuBackend, GpuExecutable

__all__ = ["BACKEND", "GpuBackend", "GpuExecutable"]
