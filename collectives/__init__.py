"""Collectives over replica groups of devices: the ``Communicator`` protocol and its
implementations -- ``LocalWorld`` (in-process threads), ``MpiCommunicator`` (mpi4py, in
``xla_spmd.collectives.mpi``) and ``NcclCommunicator`` (CuPy, in
``xla_spmd.collectives.nccl``).

This package imports nothing of xla-spmd except ``xla_spmd.errors`` and ``xla_spmd.config``;
the MPI and NCCL modules import mpi4py / CuPy only when used, so ``import
xla_spmd.collectives`` works without them.

>>> import numpy as np
>>> from xla_spmd.collectives import LocalWorld
>>> LocalWorld(2).run(lambda comm: comm.all_reduce(np.array([1, 2]), (0, 1), "max"))
[array([1, 2]), array([1, 2])]
"""

from .base import (
    DEFAULT_TIMEOUT,
    NAMED_REDUCERS,
    TIMEOUT_ENV,
    TIMEOUT_HINT,
    Communicator,
    CompletedHandle,
    Group,
    Handle,
    ReduceOp,
    collective_timeout,
    fold,
)
from .local import LocalCommunicator, LocalWorld

__all__ = [
    "DEFAULT_TIMEOUT",
    "NAMED_REDUCERS",
    "TIMEOUT_ENV",
    "TIMEOUT_HINT",
    "Communicator",
    "CompletedHandle",
    "Group",
    "Handle",
    "LocalCommunicator",
    "LocalWorld",
    "ReduceOp",
    "collective_timeout",
    "fold",
]
