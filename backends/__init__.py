"""Backends compile per-device SPMD programs and run them (the protocol is in ``base``):
``reference`` (numpy interpreter, the semantic oracle), ``cpu`` (llvmlite) and ``gpu``
(CuPy)."""

from xla_spmd.backends.base import BACKENDS, Backend, Executable, get_backend, register_backend

__all__ = ["BACKENDS", "Backend", "Executable", "get_backend", "register_backend"]
