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
from collections.abc import Callable
from dataclasses import dataclass

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


def _node(x):
    node_type = type(x)
    if node_type in _REGISTRY:
        return node_type, _REGISTRY[node_type][0](x)
    if _is_namedtuple(x):
        return node_type, (tuple(x), None)
    return None, None


def tree_flatten(tree, is_leaf: Callable | None = None) -> tuple[list, TreeDef]:
    """The leaves of `tree` in order, and its structure."""
    leaves: list = []

    def visit(x) -> TreeDef:
        if is_leaf is not None and is_leaf(x):
            leaves.append(x)
            return LEAF
        node_type, flat = _node(x)
        if node_type is None:
            leaves.append(x)
            return LEAF
        children, aux = flat
        return TreeDef(node_type, aux, tuple(visit(c) for c in children))

    return leaves, visit(tree)


def tree_unflatten(treedef: TreeDef, leaves) -> object:
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


def tree_leaves(tree, is_leaf: Callable | None = None) -> list:
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf: Callable | None = None) -> TreeDef:
    return tree_flatten(tree, is_leaf)[1]


def tree_map(fn: Callable, tree, *rest, is_leaf: Callable | None = None):
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
