"""The cores this process may run on, and the BLAS thread pools numpy calls: a leaf module (it
imports nothing of xla_spmd), so the runtime (BLAS threads per device or rank) and the CPU
backend (products split over threads, ``backends/cpu/blas.py``) share one lookup.

>>> 1 <= len(affinity()) <= (os.cpu_count() or 1)
True
>>> controller = blas_controller()       # None without threadpoolctl or a BLAS it knows
>>> controller is None or all(c.user_api == "blas" for c in controller.lib_controllers)
True
"""

from __future__ import annotations

import functools
import os
from typing import Any


def affinity() -> set[int]:
    """The cores this process may run on (its affinity, as ``taskset`` or a launcher's
    binding sets it, read now), else all of the machine's."""
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # no affinity call on this platform
        return set(range(os.cpu_count() or 1))


@functools.cache
def blas_controller() -> Any:
    """threadpoolctl's ``ThreadpoolController`` of the BLAS libraries loaded in this process,
    or None without threadpoolctl or where it finds none of them. Looked up once (a fresh
    lookup costs half a millisecond, too much for every step or product); its
    ``num_threads`` are read from the libraries each time, so they are always current."""
    try:
        from threadpoolctl import ThreadpoolController
        return ThreadpoolController().select(user_api="blas")
    except (ImportError, OSError, ValueError):  # no threadpoolctl, or no BLAS found
        return None
