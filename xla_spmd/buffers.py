"""Recycled buffers for large results: a leaf module (it imports nothing of xla_spmd), so the
collectives (MPI results) and the backends (the CPU backend's fusion outputs) share one
implementation.

A fresh large array costs a page fault on first touch of every page, the kernel zeroing each
one: for a 64 MB result that is several milliseconds, more than a memory-bound kernel writing
it. A ``Recycler`` hands out arrays that are views of buffers it owns, and hands a buffer out
again only once nothing at all refers to it any more.

**Why this is safe.** The recycler allocates every buffer itself (a flat ``uint8`` array)
and never adopts an array made elsewhere, so every array it hands out is C-contiguous, of the
asked shape and dtype, and every array derived from it by numpy (views, reshapes, slices,
``.view(dtype)``, memoryviews, ``np.frombuffer``) holds a reference to the owning buffer
(numpy keeps the owner as each view's ``base``; a buffer export keeps its exporter alive). An
MPI request keeps the buffers it reads or writes alive until it completes. So a buffer whose
CPython reference count is back to the recycler's own holds no live value, and only such a
buffer is handed out again; a result the caller keeps, or any view of it, is never
overwritten. Nothing in xla_spmd makes an array from a raw address of another array's data:
kernels get addresses only for the duration of a call, from arrays their caller holds.

The pool that the CPU backend had before (removed in 5349cc4) kept *any* array it was given
back, keyed by shape and dtype: a reference convolution's result, laid out with permuted
strides (``astype`` keeps the layout), came back as the output of a generated kernel, which
writes row-major through the data pointer, and the values read back through the permuted
strides were wrong (``sharded_conv_grad``). Owning the buffers rules that out.

At most ``max_count`` buffers and ``max_bytes`` bytes are kept; the least recently used idle
one goes first, and a buffer that does not fit is handed out but not kept. ``take`` is
thread-safe.

>>> recycler = Recycler(min_bytes=1 << 20)
>>> a = recycler.take((1 << 18,), np.dtype(np.float32))
>>> b = recycler.take((1 << 18,), np.dtype(np.float32))
>>> np.shares_memory(a, b)                  # a is still held
False
>>> view = a[10:]; del a                    # a view keeps the buffer in use
>>> np.shares_memory(view, recycler.take((1 << 18,), np.dtype(np.float32)))
False
>>> address = view.base.ctypes.data; del view
>>> c = recycler.take((1 << 18,), np.dtype(np.float32))
>>> c.ctypes.data == address, c.flags.c_contiguous   # reuses the dropped buffer
(True, True)
"""

from __future__ import annotations

import math
import sys
import threading

import numpy as np
from numpy.typing import DTypeLike

MIN_BYTES = 1 << 20
"""Results smaller than this are plain ``numpy.empty`` arrays (the allocator reuses small
blocks by itself)."""


class Recycler:
    """Buffers of at least ``min_bytes`` handed out again once nothing refers to them (see
    the module docstring); at most ``max_count`` of them and ``max_bytes`` in all."""

    def __init__(self, min_bytes: int = MIN_BYTES, max_count: int = 8,
                 max_bytes: int = 1 << 30) -> None:
        self.min_bytes, self.max_count, self.max_bytes = min_bytes, max_count, max_bytes
        self._buffers: list[np.ndarray] = []
        self._lock = threading.Lock()
        probe = [np.empty(1, np.uint8)]
        self._idle = sys.getrefcount(probe[0])  # the count of a buffer only we refer to

    def __len__(self) -> int:
        return len(self._buffers)

    def take(self, shape: tuple[int, ...], dtype: DTypeLike) -> np.ndarray:
        """An uninitialised C-contiguous array of ``shape`` and ``dtype`` that the caller
        owns (no live array shares its memory)."""
        dtype = np.dtype(dtype)
        nbytes = math.prod(shape) * dtype.itemsize
        if nbytes < self.min_bytes or nbytes == 0:
            return np.empty(shape, dtype)
        with self._lock:
            buffer = self._take(nbytes)
        return buffer.view(dtype).reshape(shape)

    def _take(self, nbytes: int) -> np.ndarray:
        buffers, idle = self._buffers, self._idle
        for i in range(len(buffers)):
            if buffers[i].nbytes == nbytes and sys.getrefcount(buffers[i]) == idle:
                buffer = buffers.pop(i)
                buffers.append(buffer)  # the most recently used last
                return buffer
        buffer = np.empty(nbytes, np.uint8)
        total = sum(b.nbytes for b in buffers) + nbytes
        i = 0
        while i < len(buffers) and (len(buffers) >= self.max_count
                                    or total > self.max_bytes):
            if sys.getrefcount(buffers[i]) == idle:
                total -= buffers.pop(i).nbytes
            else:
                i += 1
        if len(buffers) < self.max_count and total <= self.max_bytes:
            buffers.append(buffer)
        return buffer

    def sole_view(self, array: np.ndarray) -> bool:
        """Whether ``array`` is a view of a whole buffer of this recycler that nothing else
        refers to (no other view, no memoryview): then writing over ``array`` changes no
        other value, as writing over an array that owns its memory would not.

        >>> recycler = Recycler(min_bytes=1)
        >>> a = recycler.take((4,), np.dtype(np.float32))
        >>> recycler.sole_view(a)
        True
        >>> b = a[1:]
        >>> recycler.sole_view(a), recycler.sole_view(np.ones(4, np.float32))
        (False, False)
        """
        base = array.base
        if type(base) is not np.ndarray or base.nbytes != array.nbytes:
            return False
        with self._lock:
            if not any(buffer is base for buffer in self._buffers):
                return False
            # Ours: the recycler's list, array.base, this frame's name and the argument.
            return sys.getrefcount(base) == self._idle + 2

    def clear(self) -> None:
        """Forget every buffer (those in use stay valid: their users hold them)."""
        with self._lock:
            self._buffers.clear()
