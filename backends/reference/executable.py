"""The reference evaluator as a backend: "compiling" binds the module; running interprets
it op by op with numpy on the device's thread. Slow, exact, and the oracle the compiled
backends are tested against.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from xla_spmd.backends.reference.evaluator import (
    Context,
    coerce_argument,
    evaluate_computation,
    leaves,
)
from xla_spmd.errors import XlaSpmdError
from xla_spmd.ir import Module


def device_arguments(module: Module, device: int, arguments: Sequence) -> list:
    """Device ``device``'s ``arguments`` checked against ``module``'s entry parameters and
    coerced to their types: how every backend's executable binds its inputs."""
    params = module.entry.parameters
    if len(arguments) != len(params):
        raise XlaSpmdError(f"device {device}: {module.name} takes {len(params)} arguments, "
                           f"got {len(arguments)}")
    return [coerce_argument(a, p.shape, f"device {device} argument {i} ({p.name})")
            for i, (a, p) in enumerate(zip(arguments, params))]


class ReferenceExecutable:
    """A module bound to the reference evaluator (see ``xla_spmd.backends.base``)."""

    def __init__(self, module: Module, devices: Sequence[int]):
        self.module = module
        self.devices = tuple(devices)

    def run(self, device: int, arguments: Sequence[np.ndarray], communicator: Any
            ) -> list[np.ndarray]:
        coerced = device_arguments(self.module, device, arguments)
        context = Context(partition_id=device, num_partitions=self.module.num_partitions,
                          communicator=communicator)
        return leaves(evaluate_computation(self.module.entry, coerced, context))


class ReferenceBackend:
    """The numpy interpreter of every op (``xla_spmd.backends.reference``)."""

    name = "reference"

    def compile(self, module: Module, devices: Sequence[int]) -> ReferenceExecutable:
        return ReferenceExecutable(module, devices)


BACKEND = ReferenceBackend()
