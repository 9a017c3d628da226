"""The hand-written sharding strategies of a training step, by parameter role.

A strategy maps each parameter to a PartitionSpec over the mesh axes "data" and "model":

    dp    parameters replicated, the batch split over every device
    tp    Megatron: column-parallel then row-parallel weights on "model", batch on "data"
    fsdp  every parameter's first dim and the batch split over every device
    2d    Megatron on "model" and FSDP on "data" together, batch on "data"

A parameter's role says how Megatron splits it: "column" (d_in, d_out) weights split their
output dim, "row" weights their input dim, and a "vector" stays whole.

>>> spec_for("2d", "column", 2)
P('data', 'model')
>>> batch_spec("fsdp", 2)
P(('data', 'model'), None)
"""

from __future__ import annotations

from xla_spmd.errors import XlaSpmdError
from xla_spmd.sharding import NamedSharding, PartitionSpec

HAND_STRATEGIES = ("dp", "tp", "fsdp", "2d")
ROLES = ("column", "row", "vector")


def spec_for(strategy: str, role: str, rank: int) -> PartitionSpec:
    """The PartitionSpec of a parameter of `rank` with `role` under `strategy`."""
    if strategy not in HAND_STRATEGIES:
        raise XlaSpmdError(f"unknown strategy {strategy!r}; expected one of "
                           f"{', '.join(HAND_STRATEGIES)} (or auto)")
    if role not in ROLES:
        raise XlaSpmdError(f"unknown parameter role {role!r}; expected one of "
                           f"{', '.join(ROLES)}")
    every = ("data", "model")
    if strategy == "dp" or (strategy != "fsdp" and role == "vector") or rank == 0:
        return PartitionSpec()
    if strategy == "fsdp":
        return PartitionSpec(every, *([None] * (rank - 1)))
    fsdp = "data" if strategy == "2d" else None
    if role == "column":
        return PartitionSpec(fsdp, "model")
    if role == "row":
        return PartitionSpec("model", fsdp)
    return PartitionSpec()


def batch_spec(strategy: str, rank: int) -> PartitionSpec:
    """The batch is split over every device (dp, fsdp) or over "data" (tp, 2d)."""
    split = ("data", "model") if strategy in ("dp", "fsdp") else "data"
    return PartitionSpec(split, *([None] * (rank - 1)))


def default_role(shape) -> str:
    """Without a role given: matrices are column-parallel, everything else a vector."""
    return "column" if len(shape) == 2 else "vector"


def param_shardings(mesh, strategy: str, params: dict, roles: dict | None = None) -> dict:
    """NamedShardings of every parameter under a hand-written strategy."""
    roles = roles or {}
    return {name: NamedSharding(mesh, spec_for(
        strategy, roles.get(name) or default_role(value.shape), value.ndim))
        for name, value in params.items()}
