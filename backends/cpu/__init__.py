"""The CPU backend (``get_backend("cpu")``): XLA-style fusion of each per-device program,
code generation of every fusion with llvmlite for the host CPU, BLAS for dot, a schedule that
starts collectives early and waits late, and a compilation cache in memory and on disk.

Layout: ``fusion`` (which instructions one kernel computes), ``renderer`` and ``emitter`` (a
fusion -> LLVM IR text), ``compiler`` (text -> machine code; the only importer of
``llvmlite.binding``), ``random`` (rng-bit-generator as generated code), ``kernels``
(numpy/BLAS kernels, sort, collective starts), ``program`` (the
schedule, liveness and peak bytes of one computation), ``launch`` and ``indexing`` (steps
bound into closures), ``stacked`` (the in-process devices of a small program run as one, each
value stacked over the devices) and ``executable`` (running plans).
"""

from xla_spmd.backends.cpu.executable import BACKEND, CpuBackend, CpuExecutable

__all__ = ["BACKEND", "CpuBackend", "CpuExecutable"]
