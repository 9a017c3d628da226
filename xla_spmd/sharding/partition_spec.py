"""JAX-style sugar: ``PartitionSpec`` (``P``) and ``NamedSharding`` over a ``TensorSharding``.

A spec entry per tensor dim: ``None`` (replicated), an axis name, a tuple of axis names
(major to minor), or ``P.UNCONSTRAINED`` (an open, empty dim). Dims past the end of a short
spec are replicated and closed.

>>> from xla_spmd.mesh import make_mesh
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

from .tensor_sharding import DimSharding, TensorSharding, placement_key


class _Unconstrained:
    """The ``P.UNCONSTRAINED`` marker: the dim is left open for propagation."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "P.UNCONSTRAINED"

    def __reduce__(self):
        return (_Unconstrained, ())


UNCONSTRAINED = _Unconstrained()


class PartitionSpec(tuple):
    """A tuple of per-dim entries, as ``jax.sharding.PartitionSpec``.

    >>> P("data", None, ("x", "y"))
    P('data', None, ('x', 'y'))
    """

    UNCONSTRAINED = UNCONSTRAINED

    def __new__(cls, *entries):
        for position, entry in enumerate(entries):
            _check_entry(entry, position)
        normalized = tuple(tuple(e) if isinstance(e, list) else e for e in entries)
        return super().__new__(cls, normalized)

    def __repr__(self) -> str:
        return f"P({', '.join(repr(entry) for entry in self)})"

    def axis_names(self) -> tuple[str, ...]:
        """Every axis named in the spec, in order."""
        names: list[str] = []
        for entry in self:
            if isinstance(entry, str):
                names.append(entry)
            elif isinstance(entry, tuple):
                names.extend(entry)
        return tuple(names)


P = PartitionSpec


def _check_entry(entry, position: int) -> None:
    if entry is None or entry is UNCONSTRAINED or isinstance(entry, str):
        return
    if isinstance(entry, (tuple, list)) and all(isinstance(name, str) for name in entry):
        return
    raise ShardingError(f"PartitionSpec entry {position} must be None, an axis name, a tuple of "
                        f"axis names or P.UNCONSTRAINED, got {entry!r}")


@dataclass(frozen=True, slots=True, eq=False)
class NamedSharding:
    """A mesh plus a PartitionSpec, as ``jax.sharding.NamedSharding``.

    >>> from xla_spmd.mesh import make_mesh
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


def tensor_sharding_to_spec(sharding: TensorSharding) -> PartitionSpec:
    """The PartitionSpec of a sharding; sub-axes, open dims with axes and unreduced axes have
    no PartitionSpec form and raise ShardingError."""
    entries = []
    for index, dim in enumerate(sharding.dims):
        subs = [axis for axis in dim.axes if axis.is_sub_axis]
        if subs:
            raise ShardingError(f"dim {index} of {sharding} uses sub-axis {subs[0]}, which a "
                                f"PartitionSpec cannot express")
        if dim.is_open:
            if dim.axes:
                raise ShardingError(f"dim {index} of {sharding} is open with axes; a "
                                    f"PartitionSpec entry is either axes or UNCONSTRAINED")
            entries.append(UNCONSTRAINED)
        elif not dim.axes:
            entries.append(None)
        elif len(dim.axes) == 1:
            entries.append(dim.axes[0].name)
        else:
            entries.append(tuple(axis.name for axis in dim.axes))
    if sharding.unreduced:
        raise ShardingError(f"{sharding} has unreduced axes, which a PartitionSpec cannot "
                            f"express")
    return PartitionSpec(*entries)
