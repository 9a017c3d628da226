"""CUDA C source -> PTX with NVRTC -> kernels loaded by CuPy, with a compilation cache.

NVRTC is called through ``ctypes`` on ``libnvrtc`` (from the ``nvidia-cuda-nvrtc-cu12`` wheel,
a CUDA toolkit, or CuPy's search path): compiling to PTX needs neither a GPU nor the CUDA
driver, so the renderer's output is compiled in CI on machines without a GPU
(``tests/backends/gpu``). Options: ``--fmad=false`` (no contraction into FMA: the basic float
ops stay correctly rounded, as the reference's) and IEEE division and square root.

The cache maps a key (the source, the renderer version, NVRTC's version and the target
architecture: ``cache_key``) to PTX, in memory and on disk under the CPU backend's cache
directory (``$XLA_SPMD_CACHE_DIR`` or ``~/.cache/xla-spmd``), as ``<key>.ptx``. ``STATS``
counts hits and compiles.

>>> ptx = compile_ptx('extern "C" __global__ void k(float *o) { o[0] = 1.0f; }',
...                   "compute_75")  # doctest: +SKIP
>>> ".entry k" in ptx  # doctest: +SKIP
True
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import hashlib
import tempfile
import threading
from collections import Counter
from pathlib import Path

from xla_spmd.backends.cpu.compiler import _write_atomically, cache_dir
from xla_spmd.errors import XlaSpmdError

OPTIONS = ("--fmad=false", "--prec-div=true", "--prec-sqrt=true", "--ftz=false",
           "--std=c++17")

STATS: Counter = Counter()
"""``memory_hits``, ``disk_hits`` and ``compiles`` since the process started."""

_lock = threading.Lock()
_memory: dict[str, Path] = {}


class NvrtcUnavailable(XlaSpmdError):
    """No ``libnvrtc`` could be loaded."""


def _candidates() -> list[str]:
    found = []
    try:
        import nvidia.cuda_nvrtc as wheel  # the nvidia-cuda-nvrtc-cu12 wheel

        for folder in wheel.__path__:
            found += sorted(str(p) for p in (Path(folder) / "lib").glob("libnvrtc.so*"))
    except ImportError:
        pass
    located = ctypes.util.find_library("nvrtc")
    if located:
        found.append(located)
    return found + ["libnvrtc.so.12", "libnvrtc.so"]


@functools.cache
def nvrtc() -> ctypes.CDLL:
    """The NVRTC library; ``NvrtcUnavailable`` says where it was looked for."""
    tried = _candidates()
    for name in tried:
        try:
            library = ctypes.CDLL(name)
        except OSError:
            continue
        library.nvrtcGetErrorString.restype = ctypes.c_char_p
        return library
    raise NvrtcUnavailable(
        "NVRTC (libnvrtc) is not installed: pip install nvidia-cuda-nvrtc-cu12 (or the 'gpu' "
        f"extra); looked for {', '.join(tried)}")


@functools.cache
def nvrtc_version() -> tuple[int, int]:
    """NVRTC's (major, minor) version."""
    major, minor = ctypes.c_int(), ctypes.c_int()
    _check(nvrtc().nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)), "nvrtcVersion")
    return major.value, minor.value


def _check(status: int, what: str, log: str = "") -> None:
    if status:
        message = nvrtc().nvrtcGetErrorString(status).decode()
        raise XlaSpmdError(f"NVRTC {what} failed: {message}" + (f"\n{log}" if log else ""))


def compile_ptx(source: str, arch: str, name: str = "xla_spmd.cu") -> str:
    """Compile CUDA C ``source`` for virtual architecture ``arch`` (``compute_80``) to PTX,
    uncached; a compile error raises ``XlaSpmdError`` with NVRTC's log."""
    library = nvrtc()
    program = ctypes.c_void_p()
    _check(library.nvrtcCreateProgram(ctypes.byref(program), source.encode(), name.encode(),
                                      0, None, None), "nvrtcCreateProgram")
    try:
        options = [f"--gpu-architecture={arch}".encode(), *(o.encode() for o in OPTIONS)]
        array = (ctypes.c_char_p * len(options))(*options)
        status = library.nvrtcCompileProgram(program, len(options), array)
        size = ctypes.c_size_t()
        library.nvrtcGetProgramLogSize(program, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        library.nvrtcGetProgramLog(program, log)
        _check(status, "compile of the generated CUDA C",
               log.value.decode(errors="replace"))
        library.nvrtcGetPTXSize(program, ctypes.byref(size))
        ptx = ctypes.create_string_buffer(size.value)
        _check(library.nvrtcGetPTX(program, ptx), "nvrtcGetPTX")
        return ptx.value.decode()
    finally:
        library.nvrtcDestroyProgram(ctypes.byref(program))


def cache_key(source: str, arch: str) -> str:
    """The cache key of a source compiled for ``arch`` with this NVRTC."""
    from xla_spmd.backends.gpu.renderer import RENDERER_VERSION

    parts = [source, RENDERER_VERSION, arch, str(nvrtc_version()), " ".join(OPTIONS)]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def cached_ptx(source: str, arch: str) -> Path:
    """The file of ``source``'s PTX for ``arch``, compiled on a miss of the memory and disk
    cache (a read-only cache directory falls back to a temporary one)."""
    key = cache_key(source, arch)
    with _lock:
        path = _memory.get(key)
        if path is not None and path.is_file():
            STATS["memory_hits"] += 1
            return path
        path = cache_dir() / "gpu" / f"{key}.ptx"
        if path.is_file():
            STATS["disk_hits"] += 1
        else:
            ptx = compile_ptx(source, arch).encode()
            STATS["compiles"] += 1
            _write_atomically(path, ptx)
            if not path.is_file():
                path = Path(tempfile.mkdtemp(prefix="xla-spmd-gpu-")) / f"{key}.ptx"
                path.write_bytes(ptx)
        _memory[key] = path
        return path
