"""BLAS threads for the CPU backend's batched contractions, and for one large product.

OpenBLAS threads each call on its own: every ``gemm`` wakes its worker threads and waits for
them. A batched dot (attention's ``(batch·heads, q, d) @ (batch·heads, d, k)``) is one
``gemm`` per matrix, so a step of the transformer block makes thousands of such hand-offs; on
a machine whose cores are busy with other work each waits for a descheduled worker, and
the 64 ``gemm`` calls of one attention dot took 5.3 s on 2 threads against 72 ms on one
(``scripts/bench_backend.py``'s transformer block on 1 device, measured under load 30 on 2
cores). ``batched_matmul`` instead splits the batch across a pool of threads, one chunk per
BLAS thread the caller may use, each chunk run with BLAS on one thread: one hand-off per dot.

Every matrix is still multiplied by the same ``gemm`` call on the same operands, on one BLAS
thread: the bits of the reference evaluator's ``numpy.matmul`` of the whole batch with BLAS
on one thread (the tests compare exactly that). Whether a matrix's bits depend on BLAS's
thread count is the BLAS kernel's business: OpenBLAS 0.3.31's SkylakeX ``sgemm`` gave the
same bits on 1, 2 and 3 threads for all 140 shapes tried (2..256 × 3..300 × 2..300), its
``dgemm`` did not for 15 of them, so only f32 products (f16/bf16 compute in f32) are split
and f64 ones keep the caller's threads, as the reference's call does. Not for every k
either: OpenBLAS's threaded driver (``level3_thread.c``) halves a last k block of between
GEMM_Q and 2·GEMM_Q as ``(k+1)/2`` where its one-thread driver (``level3.c``) rounds the half
up to GEMM_UNROLL_M, so with SkylakeX's Q=448, U=16 a 512×k @ k×512 ``sgemm`` on 2 threads
differs from 1 thread for k = 450, 500, 513, 600, 700, 769, 1000, 1500 (same for 200..400,
767, 800, 2048): there a split product has the bits of the reference on one BLAS thread
(what the tests compare), not on the caller's threads.

One large f32 product (the MLP's 512×2048 @ 2048×2048) is split by rows the same way
(``rows_matmul``), or by columns where it has more columns than rows (``columns_matmul``:
each part packs the smaller operand whole; at load 9-11 on 2 cores the MLP's forward product
took 28.5-28.7 ms of CPU time split by columns against 35.5-39.9 by rows, 41-43 on OpenBLAS's
two threads, the same bits all three), but only where that keeps the bits of the whole on the
caller's threads:
OpenBLAS on a core whose k blocking is known (``K_BLOCKING``) and a k its two drivers block
alike (``k_blocks``), each part above the small-matrix kernels' 100³. On 2 cores under load
15-20, one BLAS thread ran that product in 25-27 ms of CPU time against 36-43 ms on two
(OpenBLAS's threads spin and wait for each other at every k block), and the MLP training
step's CPU time fell from 500-535 ms (operands already read in place, ``kernels.py``) to
316-323 ms (JAX's: 322-342 ms); at load 8 the step took 610 ms against 842 ms unsplit. A
lone product in a tight loop at load 7 ran at 200-300 GFLOP/s split against numpy's 320-400
on OpenBLAS's 2 threads (each part packs all of the other operand), at 120-170 against
110-165 in another run: ``scripts/bench_backend.py``'s dot row varies as much.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from xla_spmd.cores import affinity, blas_controller

SPLIT_MIN_FLOPS = 1 << 24
"""The smallest batched product (2·batch·m·n·k) split over threads: below it the hand-off to
the pool costs more than the product (the README's small models stay on one thread)."""

_lock = threading.Lock()
_state: dict = {"pool": None, "inside": 0, "saved": ()}


def _controllers() -> list:
    controller = blas_controller()
    return [] if controller is None else controller.lib_controllers


def vendor() -> str:
    """The BLAS numpy calls, as threadpoolctl names it (``openblas``, ``mkl``, ``blis``...),
    or "" where it cannot be told or several are loaded.

    >>> vendor() in ("openblas", "mkl", "blis", "flexiblas", "")
    True
    """
    found = {c.internal_api for c in _controllers()}
    return found.pop() if len(found) == 1 else ""


def core() -> str:
    """The OpenBLAS core numpy's BLAS runs (threadpoolctl's ``architecture``, lower case:
    ``skylakex``, ``haswell``...), or "" for another BLAS, or several.

    >>> isinstance(core(), str)
    True
    """
    if vendor() != "openblas":
        return ""
    cores = {str(getattr(c, "architecture", "")).lower() for c in _controllers()}
    return cores.pop() if len(cores) == 1 else ""


def threads() -> int:
    """How many threads BLAS may use now (1 where it cannot be told)."""
    return max((c.num_threads for c in _controllers()), default=1)


def split_threads() -> int:
    """How many threads a split product (``batched_matmul``, ``rows_matmul``) may use: BLAS's
    threads where they are every core this process may run on, else 1. A split holds BLAS on
    one thread for the whole process while it runs (OpenBLAS has no per-thread setting), so it
    is only made where no other device of this process can be computing meanwhile: one device
    per process (1 in-process device, an MPI rank) or the lockstep run of all devices on one
    thread. Devices run on threads of their own share the cores (fewer BLAS threads each), and
    a split there would change another device's BLAS threads, and so the bits of its products,
    with the timing.

    >>> split_threads() in (1, threads())
    True
    """
    count = threads()
    return count if count >= process_cores() else 1


@functools.cache
def process_cores() -> int:
    """The cores this process may run on (its affinity when first asked: read once, as every
    dot asks)."""
    return len(affinity())


def split_bounds(count: int, parts: int) -> list[int]:
    """Where a split product cuts ``count`` rows (or matrices) into ``parts`` parts.

    >>> split_bounds(10, 3)
    [0, 3, 6, 10]
    """
    return [count * p // parts for p in range(parts + 1)]


def run_split(chunk, bounds: list[int]) -> None:
    """``chunk(i0, i1)`` for each pair of adjacent `bounds`, at once on the pool, BLAS held on
    one thread meanwhile (only where ``split_threads() > 1``: see there)."""
    _single_threaded(True)
    try:
        futures = [_pool().submit(chunk, i0, i1) for i0, i1 in zip(bounds[:-1], bounds[1:])]
        for future in futures:
            future.result()
    finally:
        _single_threaded(False)


def _pool() -> ThreadPoolExecutor:
    with _lock:
        pool = _state["pool"]
        if pool is None:
            pool = _state["pool"] = ThreadPoolExecutor(
                max_workers=os.cpu_count() or 1, thread_name_prefix="xla-spmd-blas")
        return pool


def _single_threaded(enter: bool) -> None:
    """Hold BLAS on one thread while any split product runs (nested callers counted)."""
    with _lock:
        if enter:
            if _state["inside"] == 0:
                _state["saved"] = tuple((c, c.num_threads) for c in _controllers())
                for controller, _ in _state["saved"]:
                    controller.set_num_threads(1)
            _state["inside"] += 1
        else:
            _state["inside"] -= 1
            if _state["inside"] == 0:
                for controller, count in _state["saved"]:
                    controller.set_num_threads(count)


K_BLOCKING = {"skylakex": (448, 16)}
"""OpenBLAS core (threadpoolctl's ``architecture``, lower case) -> its sgemm's
``(GEMM_Q, GEMM_UNROLL_M)``, as ``k_blocks`` needs them (SkylakeX: inferred from where its
1- and 2-thread bits differ, listed in this module's docstring, and ``param.h``)."""

ROWS_MIN_MNK = 100 ** 3
"""The smallest ``m·n·k`` of each part of a product split by rows: smaller ones would reach
OpenBLAS's small-matrix kernels, which the whole product does not."""


def k_blocks(k: int, q: int, unroll: int, threaded: bool) -> list[int]:
    """The k blocks OpenBLAS's gemm sums in turn: its threaded driver halves a last stretch
    between ``q`` and ``2q`` as ``(k+1)/2``, its one-thread driver rounds the half up to
    ``unroll``.

    >>> k_blocks(1000, 448, 16, True), k_blocks(1000, 448, 16, False)
    ([448, 276, 276], [448, 288, 264])
    >>> k_blocks(2048, 448, 16, True) == k_blocks(2048, 448, 16, False)
    True
    """
    blocks = []
    while k > 0:
        block = q if k >= 2 * q else k
        if q < k < 2 * q:
            block = (k + 1) // 2 if threaded else (k // 2 + unroll - 1) // unroll * unroll
        blocks.append(block)
        k -= block
    return blocks


def rows_splittable(m: int, n: int, k: int, dtype, parts: int) -> bool:
    """Whether one ``(m, k) @ (k, n)`` f32 product may be split by rows into ``parts``
    products on one BLAS thread each with the bits of the whole on several: OpenBLAS of a
    core in ``K_BLOCKING`` whose two drivers sum over the same k blocks, each part above
    ``ROWS_MIN_MNK``. Each element is then summed by the same kernel over the same blocks in
    the same order (only which rows a thread packs differs)."""
    if np.dtype(dtype) != np.float32 or parts < 2 or m < 2 * parts or n < 2:
        return False
    if (m // parts) * n * k < ROWS_MIN_MNK:
        return False
    blocking = K_BLOCKING.get(core())
    return blocking is not None and k_blocks(k, *blocking, True) == k_blocks(k, *blocking,
                                                                             False)


def rows_matmul(left: np.ndarray, right: np.ndarray, out: np.ndarray, parts: int,
                after: Callable[[int, int], None] | None = None) -> None:
    """``numpy.matmul(left, right, out=out)`` of one ``(m, k) @ (k, n)`` product (leading
    dims of size 1 allowed), its rows split into ``parts`` products run at once on the pool,
    BLAS on one thread meanwhile: one hand-off per dot, where OpenBLAS's own threads wait for
    each other at every k block (on a busy machine, a descheduled thread each time). Only
    where ``rows_splittable``. ``after(i0, i1)`` runs on each part's thread right after its
    product, rows ``i0 .. i1-1`` just written (a dot's epilogue: ``epilogue.py``).

    >>> a = np.arange(12, dtype=np.float32).reshape(6, 2)
    >>> out = np.empty((6, 3), np.float32)
    >>> rows_matmul(a, np.ones((2, 3), np.float32), out, 2)
    >>> out[:, 0].tolist()
    [1.0, 5.0, 9.0, 13.0, 17.0, 21.0]
    """
    bounds = split_bounds(out.shape[-2], parts)
    matmul = np.matmul

    def chunk(i0: int, i1: int) -> None:
        with np.errstate(all="ignore"):
            matmul(left[..., i0:i1, :], right, out=out[..., i0:i1, :])
        if after is not None:
            after(i0, i1)
    run_split(chunk, bounds)


COLUMNS_ALIGN = 64
"""A product split by columns (``columns_matmul``) is cut at multiples of this many columns:
each part's tiles are then tiles of the whole product (OpenBLAS's sgemm unrolls n by at most
16), so each element goes through the same kernel."""


def columns_splittable(m: int, n: int, k: int, dtype, parts: int) -> bool:
    """Whether one ``(m, k) @ (k, n)`` f32 product may be split by columns into ``parts``
    products on one BLAS thread each with the bits of the whole on several: as
    ``rows_splittable`` (the same k blocks, each part above ``ROWS_MIN_MNK``), with at least
    ``COLUMNS_ALIGN`` columns a part. (OpenBLAS 0.3.31 SkylakeX: 66 random splittable shapes,
    m 2..400, n 128..1200, k 2..1000, each with the four transpose flags, gave the bits of the
    whole product on 2 threads and on 1.)"""
    if np.dtype(dtype) != np.float32 or parts < 2 or m < 2 or n < COLUMNS_ALIGN * parts:
        return False
    return rows_splittable(n, m, k, dtype, parts)


def column_bounds(n: int, parts: int) -> list[int]:
    """Where ``columns_matmul`` cuts ``n`` columns: ``parts`` near-equal parts, each inner
    bound a multiple of ``COLUMNS_ALIGN``.

    >>> column_bounds(2048, 2), column_bounds(1000, 3)
    ([0, 1024, 2048], [0, 320, 640, 1000])
    """
    inner = [(n * p // parts + COLUMNS_ALIGN // 2) // COLUMNS_ALIGN * COLUMNS_ALIGN
             for p in range(1, parts)]
    return [0, *inner, n]


def columns_matmul(left: np.ndarray, right: np.ndarray, out: np.ndarray, parts: int,
                   after: Callable[[int, int], None] | None = None,
                   after_columns: Callable[[int, int], None] | None = None) -> None:
    """``rows_matmul`` with the product split by columns (``column_bounds``): each part
    packs all of ``left`` and its columns of ``right``, where a split by rows packs all of
    ``right`` per part, so it moves less where ``right`` is the larger operand (the MLP's
    ``(512, 2048) @ (2048, 2048)``). Only where ``columns_splittable``. ``after(i0, i1)``
    runs once every part is done, on the pool's threads over ``split_bounds`` of the rows;
    ``after_columns(j0, j1)`` on each part's thread right after its product, columns ``j0 ..
    j1-1`` just written.

    >>> a = np.arange(12, dtype=np.float32).reshape(6, 2)
    >>> out = np.empty((6, 128), np.float32)
    >>> columns_matmul(a, np.ones((2, 128), np.float32), out, 2)
    >>> out[:, 127].tolist()
    [1.0, 5.0, 9.0, 13.0, 17.0, 21.0]
    """
    matmul = np.matmul

    def chunk(j0: int, j1: int) -> None:
        with np.errstate(all="ignore"):
            matmul(left, right[..., j0:j1], out=out[..., j0:j1])
        if after_columns is not None:
            after_columns(j0, j1)
    run_split(chunk, column_bounds(out.shape[-1], parts))
    if after is not None:
        run_split(after, split_bounds(out.shape[-2], parts))


def splittable(batch: int, m: int, n: int, k: int, dtype) -> bool:
    """Whether a ``(batch, m, k) @ (batch, k, n)`` product goes to ``batched_matmul`` when
    BLAS may use several threads: a batch of f32 ``gemm`` calls, large enough."""
    if batch < 2 or m < 2 or n < 2 or np.dtype(dtype) != np.float32:
        return False
    return 2 * batch * m * n * k >= SPLIT_MIN_FLOPS


def _segments(lead: tuple[int, ...], i0: int, i1: int):
    """The matrices ``i0 .. i1-1`` of a batch of shape ``lead`` (flattened in C order) as
    ``(index, slice)`` pieces: ``x[index][slice]`` are consecutive matrices along the last
    batch axis, a view whatever the strides."""
    last = lead[-1]
    while i0 < i1:
        outer, inner = divmod(i0, last)
        end = min(i1, (outer + 1) * last)
        yield np.unravel_index(outer, lead[:-1]), slice(inner, inner + end - i0)
        i0 = end


def batched_matmul(left: np.ndarray, right: np.ndarray, out: np.ndarray, parts: int,
                   after: Callable[[int, int], None] | None = None) -> None:
    """``numpy.matmul(left, right, out=out)`` over ``(..., m, k)``, ``(..., k, n)`` and
    ``(..., m, n)`` arrays of one batch shape (strided views included), the flattened batch
    split into ``parts`` chunks run at once on the pool, BLAS on one thread meanwhile. Each
    matrix is a view with its own strides, so BLAS makes the call it makes in the whole
    batch's matmul. ``after(i0, i1)`` runs on each chunk's thread right after its products,
    matrices ``i0 .. i1-1`` of the flattened batch just written (``rows_matmul``'s).

    >>> a = np.arange(24, dtype=np.float32).reshape(4, 2, 3)
    >>> b = np.ones((4, 3, 2), np.float32)
    >>> out = np.empty((4, 2, 2), np.float32)
    >>> batched_matmul(a, b, out, 2)
    >>> bool((out == a @ b).all())
    True
    >>> b4 = np.ones((2, 3, 3, 2), np.float32).transpose(1, 0, 2, 3)  # (3, 2, 3, 2)
    >>> a4 = np.arange(36, dtype=np.float32).reshape(3, 2, 2, 3)
    >>> out4 = np.empty((3, 2, 2, 2), np.float32)
    >>> batched_matmul(a4, b4, out4, 4)
    >>> bool((out4 == a4 @ b4).all())
    True
    """
    lead = out.shape[:-2]
    bounds = split_bounds(int(np.prod(lead, dtype=np.int64)), parts)
    matmul = np.matmul

    def chunk(i0: int, i1: int) -> None:
        with np.errstate(all="ignore"):
            for index, part in _segments(lead, i0, i1):
                matmul(left[index][part], right[index][part], out=out[index][part])
        if after is not None:
            after(i0, i1)
    run_split(chunk, bounds)
