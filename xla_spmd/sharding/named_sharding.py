"""JAX-style sugar: ``NamedSharding``, a mesh plus a `PartitionSpec`, over a ``TensorSharding``
(as JAX's ``named_sharding.py``).

>>> from xla_spmd.mesh import make_mesh
>>> from xla_spmd.sharding import P
>>> mesh = make_mesh({"data": 2, "model": 4})
>>> NamedSharding(mesh, P(("data", "model"), None)).to_tensor_sharding(3)
TensorSharding(@mesh, [{"data", "model"}, {}, {}])
>>> NamedSharding(mesh, P(None, "model")).to_tensor_sharding(2).to_partition_spec()
P(None, 'model')
"""

from __future__ import annotations

from dataclasses import dataclass

from xla_spmd.errors import ShardingError
from xla_spmd.mesh import Mesh, as_axis_ref

from .partition_spec import UNCONSTRAINED, PartitionSpec
from .tensor_sharding import DimSharding, TensorSharding, placement_key, tensor_sharding_to_spec


@dataclass(frozen=True, slots=True, eq=False)
class NamedSharding:
    """A mesh plus a PartitionSpec, as ``jax.sharding.NamedSharding``.

    >>> from xla_spmd.mesh import make_mesh
    >>> from xla_spmd.sharding import P
    >>> NamedSharding(make_mesh({"x": 2}), P("x"))
    NamedSharding(Mesh('x': 2), P('x'))
    """

    mesh: Mesh
    spec: PartitionSpec = PartitionSpec()

    def __post_init__(self) -> None:
        if not isinstance(self.mesh, Mesh):
            raise ShardingError(f"NamedSharding needs a Mesh, got {type(self.mesh).__name__}")
        spec = self.spec if isinstance(self.spec, PartitionSpec) else PartitionSpec(
            *self.spec)  # pyright: ignore[reportGeneralTypeIssues]  (a tuple is accepted)
        object.__setattr__(self, "spec", spec)
        for name in spec.axis_names():
            if not self.mesh.has_axis(name):
                raise ShardingError(f"PartitionSpec {spec!r} names axis {name!r}, which is not "
                                    f"in mesh {self.mesh!r}")

    def to_tensor_sharding(self, rank: int, mesh_name: str | None = "mesh") -> TensorSharding:
        """The axis-based sharding of a rank-``rank`` tensor."""
        if len(self.spec) > rank:
            raise ShardingError(f"PartitionSpec {self.spec!r} has {len(self.spec)} entries but "
                                f"the tensor has rank {rank}")
        dims = []
        for entry in tuple(self.spec) + (None,) * (rank - len(self.spec)):
            if entry is UNCONSTRAINED:
                dims.append(DimSharding(is_closed=False))
            elif entry is None:
                dims.append(DimSharding())
            else:
                names = (entry,) if isinstance(entry, str) else entry
                dims.append(DimSharding(tuple(map(as_axis_ref, names))))
        return TensorSharding(self.mesh, tuple(dims), mesh_name=mesh_name)

    @classmethod
    def from_tensor_sharding(cls, sharding: TensorSharding) -> NamedSharding:
        return cls(sharding.mesh, tensor_sharding_to_spec(sharding))

    def shard_shape(self, global_shape) -> tuple[int, ...]:
        return self.to_tensor_sharding(len(global_shape)).shard_shape(global_shape)

    def _placement(self) -> tuple:
        """The spec without trailing replicated entries, one-axis tuples as names: what
        decides where the data lives (``P("d")`` and ``P("d", None)`` place it alike)."""
        entries = [e[0] if isinstance(e, tuple) and len(e) == 1 else e for e in self.spec]
        while entries and entries[-1] is None:
            entries.pop()
        return self.mesh, tuple(entries)

    def __eq__(self, other) -> bool:
        """Equal when they place data alike (as JAX's: trailing ``None`` entries do not
        count); a `TensorSharding` that places it alike (closed or not) is equal too."""
        if isinstance(other, TensorSharding):
            other = user_sharding(other)
            if isinstance(other, TensorSharding):  # sub-axes or unreduced: no spec says it
                return False
        if not isinstance(other, NamedSharding):
            return NotImplemented
        return self._placement() == other._placement()

    def __hash__(self) -> int:
        """As an equal `TensorSharding`'s (``placement_key``)."""
        return hash(placement_key(self.mesh, [
            () if entry is None or entry is UNCONSTRAINED else
            (entry,) if isinstance(entry, str) else tuple(entry) for entry in self.spec]))

    def to_partition_spec(self) -> PartitionSpec:
        """The spec (for code written against a `TensorSharding`'s method of this name)."""
        return self.spec

    @property
    def is_fully_replicated(self) -> bool:
        """Whether every device holds the whole array."""
        return not self.spec.axis_names() or all(
            self.mesh.axis_size(name) == 1 for name in self.spec.axis_names())

    @property
    def num_devices(self) -> int:
        return self.mesh.size

    def __repr__(self) -> str:
        return f"NamedSharding({self.mesh!r}, {self.spec!r})"


def user_sharding(sharding: TensorSharding) -> NamedSharding | TensorSharding:
    """What an array shows as its ``.sharding``: a `NamedSharding` (as JAX's arrays carry),
    or the `TensorSharding` itself where a PartitionSpec cannot say it (sub-axes, unreduced
    axes). Open dims are closed first: an array's sharding is settled.

    >>> from xla_spmd.mesh import make_mesh
    >>> mesh = make_mesh({"d": 2})
    >>> user_sharding(TensorSharding(mesh, (DimSharding(("d",), is_closed=False),)))
    NamedSharding(Mesh('d': 2), P('d'))
    """
    sharding = sharding.closed()
    if sharding.unreduced or any(a.is_sub_axis for d in sharding.dims for a in d.axes):
        return sharding
    return NamedSharding(sharding.mesh, tensor_sharding_to_spec(sharding))
