"""LLVM IR text -> machine code for the host CPU -> ctypes callables, with a compilation cache.

The only module that imports ``llvmlite.binding``. Code is optimised at -O2 with the loop and
SLP vectorizers for the host CPU (its name and features, see ``host()``), and never with
fast-math: the renderer's IEEE semantics survive. (-O3 made kernels no faster on
``scripts/bench_backend.py``'s programs, which are memory-bound loops, and took twice as long
to compile: its larger unrolled code doubled the object size.)

The cache maps a key (a fingerprint of the per-device program, the renderer version, the
llvmlite/LLVM versions and the CPU features: ``cache_key``) to an object file; it lives in
memory and on disk under ``$XLA_SPMD_CACHE_DIR`` or ``~/.cache/xla-spmd``, so a second
process loads the machine code instead of compiling it. ``STATS`` counts hits and misses.

>>> library = compile_library('''define void @twice(ptr noalias %out, ptr noalias %in0) {
... entry:
...   %x = load double, ptr %in0
...   %y = fadd double %x, %x
...   store double %y, ptr %out
...   ret void
... }''', ["twice"])
>>> import ctypes, numpy as np
>>> x, out = np.array(1.5), np.empty(())
>>> library.function("twice", 2)(out.ctypes.data, x.ctypes.data)
>>> float(out)
3.0
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import hashlib
import os
import tempfile
import threading
from collections import Counter
from pathlib import Path

import llvmlite
import llvmlite.binding as llvm

from xla_spmd.errors import XlaSpmdError

STATS: Counter = Counter()
"""``memory_hits``, ``disk_hits`` and ``compiles`` since the process started."""

_lock = threading.Lock()
_memory: dict[str, CompiledLibrary] = {}
# Every library ever loaded: disposing an MCJIT engine that holds an added object file
# crashes LLVM, so machine code stays loaded for the life of the process.
_loaded: list[CompiledLibrary] = []


@functools.cache
def _target_machine():
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    llvm.initialize_native_asmparser()
    _register_libm()
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(cpu=llvm.get_host_cpu_name(),
                                        features=llvm.get_host_cpu_features().flatten(),
                                        opt=3, reloc="default", codemodel="jitdefault")


# The C math functions generated code calls (the renderer's libm calls, and fmod for frem):
# MCJIT resolves them through these addresses.
LIBM_FUNCTIONS = ("expf", "exp", "expm1f", "expm1", "logf", "log", "log1pf", "log1p", "sinf",
                  "sin", "cosf", "cos", "tanf", "tan", "tanhf", "tanh", "powf", "pow",
                  "atan2f", "atan2", "cbrt", "erf", "fmodf", "fmod")


def _register_libm() -> None:
    libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
    for name in LIBM_FUNCTIONS:
        llvm.add_symbol(name, ctypes.cast(getattr(libm, name), ctypes.c_void_p).value)


@functools.cache
def host() -> dict[str, str]:
    """The CPU code is generated for: its name, the vector features in use, LLVM's version."""
    _target_machine()
    features = llvm.get_host_cpu_features()
    vector = [name for name in ("sse4.2", "avx", "avx2", "fma", "f16c", "avx512f",
                                "avx512bw", "avx512vl", "avx512bf16") if features.get(name)]
    return {"cpu": llvm.get_host_cpu_name(), "features": " ".join(vector),
            "llvm": ".".join(map(str, llvm.llvm_version_info)),
            "llvmlite": llvmlite.__version__}


@functools.cache
def array_data_offset() -> int | None:
    """The byte offset of the data pointer in a numpy array object (``PyArrayObject.data``,
    16 on 64-bit CPython), found by probing arrays; None if it cannot be found (then kernels
    are called with data pointers taken in Python)."""
    import numpy as np
    probes = [np.arange(k + 3, dtype=np.int8)[k:] for k in range(3)]
    pointer_size = ctypes.sizeof(ctypes.c_void_p)
    for offset in range(0, 8 * pointer_size, pointer_size):
        if all(ctypes.c_void_p.from_address(id(a) + offset).value == a.ctypes.data
               for a in probes):
            return offset
    return None


def cache_key(program_text: str) -> str:
    """The cache key of a program: its text with the compiler and CPU it is compiled for."""
    from xla_spmd.backends.cpu.renderer import RENDERER_VERSION
    _target_machine()
    parts = [program_text, RENDERER_VERSION, f"O{OPT_LEVEL}", llvmlite.__version__,
             str(llvm.llvm_version_info), llvm.get_process_triple(), llvm.get_host_cpu_name(),
             llvm.get_host_cpu_features().flatten()]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def cache_dir() -> Path:
    """Where object files are kept: ``$XLA_SPMD_CACHE_DIR`` or ``~/.cache/xla-spmd``."""
    configured = os.environ.get("XLA_SPMD_CACHE_DIR")
    return Path(configured) if configured else Path.home() / ".cache" / "xla-spmd"


class CompiledLibrary:
    """Machine code loaded into this process; ``function(name, n)`` is a ctypes callable of
    ``n`` pointer arguments (calling it releases the GIL)."""

    def __init__(self, engine, names: list[str]):
        self._engine = engine
        self._functions: dict[tuple[str, int], object] = {}
        self.names = list(names)

    def function(self, name: str, arity: int):
        key = (name, arity)
        found = self._functions.get(key)
        if found is None:
            address = self._engine.get_function_address(name)
            if not address:
                raise XlaSpmdError(f"compiled library has no function {name!r}")
            prototype = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * arity))
            found = self._functions[key] = prototype(address)
        return found


OPT_LEVEL = 2
"""The optimisation level of generated code (-O2; see the module's docstring)."""


def _optimize(module) -> None:
    machine = _target_machine()
    options = llvm.create_pipeline_tuning_options(speed_level=OPT_LEVEL)
    options.loop_vectorization = True
    options.slp_vectorization = True
    builder = llvm.create_pass_builder(machine, options)
    builder.getModulePassManager().run(module, builder)


def _object_code(text: str) -> bytes:
    try:
        module = llvm.parse_assembly(text)
        module.verify()
    except RuntimeError as error:
        raise XlaSpmdError(f"the CPU backend rendered invalid LLVM IR: {error}") from error
    _optimize(module)
    return _target_machine().emit_object(module)


def _load(code: bytes, names: list[str]) -> CompiledLibrary:
    machine = _target_machine()
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), machine)
    engine.add_object_file(llvm.ObjectFileRef.from_data(code))
    engine.finalize_object()
    library = CompiledLibrary(engine, names)
    _loaded.append(library)
    return library


def compile_library(text: str, names: list[str], key: str | None = None) -> CompiledLibrary:
    """Compile LLVM IR ``text`` defining functions ``names``, through the cache when ``key``
    is given (see ``cache_key``)."""
    with _lock:
        if key is not None and key in _memory:
            STATS["memory_hits"] += 1
            return _memory[key]
        path = cache_dir() / f"{key}.o" if key is not None else None
        code = None
        if path is not None and path.is_file():
            code = path.read_bytes()
            STATS["disk_hits"] += 1
        if code is None:
            code = _object_code(text)
            STATS["compiles"] += 1
            if path is not None:
                _write_atomically(path, code)
        library = _load(code, names)
        if key is not None:
            _memory[key] = library
        return library


def _write_atomically(path: Path, data: bytes) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as handle:
            handle.write(data)
        os.replace(handle.name, path)
    except OSError:
        pass  # a read-only or full cache directory only costs a recompile next time


def clear_memory_cache() -> None:
    """Forget the in-memory cache (the disk cache stays; loaded code stays loaded)."""
    with _lock:
        _memory.clear()
