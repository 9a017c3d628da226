"""Pytrees: nested containers of leaves, flattened to a list and a structure (`TreeDef`).

Containers are tuples, lists, dicts (flattened in sorted key order, as JAX), None (no
leaves), namedtuples and classes registered with `register_pytree_node`. Everything else is
a leaf.

>>> leaves, tree = tree_flatten({"b": (1, 2), "a": [3, None]})
>>> leaves
[3, 1, 2]
>>> tree_unflatten(tree, [x * 10 for x in leaves])
{'a': [30, None], 'b': (10, 20)}
>>> tree_map(lambda x: x + 1, (1, [2]))
(2, [3])
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from xla_spmd.errors import XlaSpmdError

# type -> (flatten(node) -> (children, aux), unflatten(aux, children) -> node)
_REGISTRY: dict[type, tuple[Callable, Callable]] = {}


def register_pytree_node(node_type: type, flatten: Callable, unflatten: Callable) -> None:
    """Make `node_type` a container: `flatten(node) -> (children, aux)` and
    `unflatten(aux, children) -> node` (as ``jax.tree_util.register_pytree_node``).

    >>> class Pair:
    ...     def __init__(self, a, b): self.a, self.b = a, b
    >>> register_pytree_node(Pair, lambda p: ((p.a, p.b), None), lambda _, c: Pair(*c))
    >>> tree_leaves(Pair(1, (2, 3)))
    [1, 2, 3]
    """
    if node_type in _REGISTRY:
        raise ValueError(f"pytree node type {node_type.__name__} is registered twice")
    _REGISTRY[node_type] = (flatten, unflatten)


register_pytree_node(tuple, lambda t: (t, None), lambda _, c: tuple(c))
register_pytree_node(list, lambda t: (t, None), lambda _, c: list(c))
register_pytree_node(dict, lambda d: ([d[k] for k in sorted(d)], tuple(sorted(d))),
                     lambda keys, c: dict(zip(keys, c)))
register_pytree_node(type(None), lambda _: ((), None), lambda _, c: None)


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


@dataclass(frozen=True)
class TreeDef:
    """The structure of a pytree: a node type, its aux data and child structures; a leaf is
    ``TreeDef(None, None, ())``."""

    node_type: type | None
    aux: object
    children: tuple[TreeDef, ...]

    @property
    def num_leaves(self) -> int:
        if self.node_type is None:
            return 1
        return sum(c.num_leaves for c in self.children)

    def __repr__(self) -> str:
        if self.node_type is None:
            return "*"
        inner = ", ".join(map(repr, self.children))
        return f"{self.node_type.__name__}({inner})"


LEAF = TreeDef(None, None, ())


def _node(x) -> tuple[type, tuple[Sequence, Any]] | tuple[None, None]:
    """(node type, (children, aux data)) of a registered node or namedtuple; (None, None)
    for a leaf."""
    node_type = type(x)
    if node_type in _REGISTRY:
        return node_type, _REGISTRY[node_type][0](x)
    if _is_namedtuple(x):
        return node_type, (tuple(x), None)
    return None, None


def tree_flatten(tree: Any, is_leaf: Callable | None = None) -> tuple[list, TreeDef]:
    """The leaves of `tree` in order, and its structure."""
    leaves: list = []

    def visit(x) -> TreeDef:
        if is_leaf is not None and is_leaf(x):
            leaves.append(x)
            return LEAF
        node_type, flat = _node(x)
        if node_type is None or flat is None:
            leaves.append(x)
            return LEAF
        children, aux = flat
        return TreeDef(node_type, aux, tuple(visit(c) for c in children))

    return leaves, visit(tree)


def tree_unflatten(treedef: TreeDef, leaves: Iterable[Any]) -> Any:
    """Rebuild a pytree of structure `treedef` from `leaves`."""
    leaves = list(leaves)
    if len(leaves) != treedef.num_leaves:
        raise XlaSpmdError(f"tree structure {treedef} has {treedef.num_leaves} leaves, got "
                           f"{len(leaves)}")
    iterator = iter(leaves)

    def build(t: TreeDef):
        if t.node_type is None:
            return next(iterator)
        children = [build(c) for c in t.children]
        if t.node_type in _REGISTRY:
            return _REGISTRY[t.node_type][1](t.aux, children)
        return t.node_type(*children)  # namedtuple

    return build(treedef)


def broadcast_prefix(prefix: Any, tree: Any, is_leaf: Callable | None = None, what: str = "prefix"
                     ) -> list:
    """One entry of `prefix` per leaf of `tree`: `prefix` is a pytree whose leaves (as
    `is_leaf` says) each stand for the whole subtree at their place in `tree`, at any level
    (as JAX matches ``in_shardings`` to arguments).

    >>> broadcast_prefix(("a", {"x": "b", "y": "c"}), ([1, 2], {"x": (3, 4), "y": 5}))
    ['a', 'a', 'b', 'b', 'c']
    """
    result: list = []

    def visit(p, t, path: str) -> None:
        if (is_leaf is not None and is_leaf(p)) or _node(p)[0] is None:
            result.extend([p] * len(tree_flatten(t)[0]))
            return
        p_type, p_flat = _node(p)
        assert p_type is not None and p_flat is not None  # checked just above
        p_children, p_aux = p_flat
        t_type, t_flat = _node(t)
        if t_type is None or t_flat is None or t_type is not p_type or t_flat[1] != p_aux \
                or len(t_flat[0]) != len(p_children):
            found = tree_structure(t)
            raise XlaSpmdError(f"{what}{path}: the {p_type.__name__} of {len(p_children)} "
                               f"entries {_keys(p_aux)}is not a prefix of the value's "
                               f"structure {found}")
        keys = p_aux if p_type is dict else range(len(p_children))
        for key, pc, tc in zip(keys, p_children, t_flat[0]):
            visit(pc, tc, f"{path}[{key!r}]")

    visit(prefix, tree, "")
    return result


def _keys(aux) -> str:
    return f"(keys {list(aux)}) " if isinstance(aux, tuple) and aux else ""


def register_dataclass(node_type: type, data_fields: Sequence[str] | None = None,
                       meta_fields: Sequence[str] | None = None) -> type:
    """Make a dataclass a container: `data_fields` are its children (by default every field
    not named in `meta_fields`), `meta_fields` static data of its structure (as
    ``jax.tree_util.register_dataclass``; usable as a decorator).

    >>> import dataclasses
    >>> @register_dataclass
    ... @dataclasses.dataclass
    ... class Params:
    ...     w: object
    ...     b: object
    >>> tree_leaves(Params(1, (2, 3)))
    [1, 2, 3]
    """
    import dataclasses

    meta = tuple(meta_fields or ())
    if data_fields is None:
        data_fields = [f.name for f in dataclasses.fields(node_type) if f.name not in meta]
    data = tuple(data_fields)

    def flatten(node):
        return [getattr(node, n) for n in data], tuple(getattr(node, n) for n in meta)

    def unflatten(aux, children):
        return node_type(**dict(zip(data, children)), **dict(zip(meta, aux)))
    register_pytree_node(node_type, flatten, unflatten)
    return node_type


def register_pytree_node_class(node_type: type) -> type:
    """Register a class with ``tree_flatten(self)`` and ``tree_unflatten(cls, aux,
    children)`` methods (a decorator, as JAX's)."""
    register_pytree_node(node_type, lambda n: n.tree_flatten(),
                         lambda aux, children: node_type.tree_unflatten(aux, children))
    return node_type


def tree_leaves(tree: Any, is_leaf: Callable | None = None) -> list:
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree: Any, is_leaf: Callable | None = None) -> TreeDef:
    return tree_flatten(tree, is_leaf)[1]


def tree_map(fn: Callable, tree: Any, *rest: Any, is_leaf: Callable | None = None) -> Any:
    """Apply `fn` leafwise over `tree` and trees of the same structure `rest`."""
    leaves, treedef = tree_flatten(tree, is_leaf)
    others = []
    for other in rest:
        other_leaves, other_def = tree_flatten(other, is_leaf)
        if other_def != treedef:
            raise XlaSpmdError(f"tree_map: structures differ: {treedef} vs {other_def}")
        others.append(other_leaves)
    return tree_unflatten(treedef, [fn(*xs) for xs in zip(leaves, *others)])


tree_util = sys.modules[__name__]  # ``xs.tree_util.tree_map`` as in JAX
