"""The reference backend: a numpy evaluator of every op with XLA's exact semantics, on one
device (`evaluate`) or on N devices in lockstep (`evaluate_spmd`), the partitioner's oracle.

Importing this package fills the `EVALUATE` registry from one module per op family.
"""

from xla_spmd.backends.reference import (  # noqa: F401 (register the rules)
    collectives,
    contraction,
    control,
    elementwise,
    indexing,
    normalization,
    random,
    reduction,
    shape_ops,
)
from xla_spmd.backends.reference.evaluator import (
    EVALUATE,
    TOKEN_VALUE,
    Context,
    Feeds,
    evaluate,
    evaluate_computation,
    leaves,
)
from xla_spmd.backends.reference.spmd import evaluate_mpmd, evaluate_spmd

__all__ = ["EVALUATE", "TOKEN_VALUE", "Context", "Feeds", "evaluate", "evaluate_computation",
           "evaluate_mpmd", "evaluate_spmd", "leaves"]
