"""``xla_spmd.tree``: pytree functions under JAX's ``jax.tree`` names.

>>> import xla_spmd as xs
>>> xs.tree.map(lambda x: x * 2, {"a": 1, "b": (2, 3)})
{'a': 2, 'b': (4, 6)}
>>> leaves, treedef = xs.tree.flatten([1, (2, 3)])
>>> xs.tree.unflatten(treedef, [x + 1 for x in leaves])
[2, (3, 4)]
"""

from xla_spmd.frontend.pytree import (  # noqa: F401
    register_dataclass,
    register_pytree_node,
    register_pytree_node_class,
)
from xla_spmd.frontend.pytree import tree_flatten as flatten  # noqa: F401
from xla_spmd.frontend.pytree import tree_leaves as leaves  # noqa: F401
from xla_spmd.frontend.pytree import tree_map as map  # noqa: F401,A004
from xla_spmd.frontend.pytree import tree_structure as structure  # noqa: F401
from xla_spmd.frontend.pytree import tree_unflatten as unflatten  # noqa: F401
