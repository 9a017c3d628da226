"""JAX-style sugar: ``PartitionSpec`` (``P``), plain per-dim entries (as JAX's
``partition_spec.py``); `named_sharding` puts one over a mesh.

A spec entry per tensor dim: ``None`` (replicated), an axis name, a tuple of axis names
(major to minor), or ``P.UNCONSTRAINED`` (an open, empty dim). Dims past the end of a short
spec are replicated and closed. This module knows no mesh and no sharding: `TensorSharding`
(``to_partition_spec``) and `NamedSharding` build on it.

>>> P(("data", "model"), None, P.UNCONSTRAINED)
P(('data', 'model'), None, P.UNCONSTRAINED)
>>> P("data", ["x", "y"]).axis_names()
('data', 'x', 'y')
"""

from __future__ import annotations

from xla_spmd.errors import ShardingError


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
