"""Factor-based sharding propagation, as in Shardy.

`propagate(module, strategy)` gives every value a sharding; `explain(module, value)` says
where a value's sharding came from; `sharding_rule(inst)` is an op's factor rule.

>>> from xla_spmd.ir import Builder, ArrayShape, F32
>>> b = Builder("m")
>>> x = b.parameter(ArrayShape(F32, (8, 4)))
>>> print(sharding_rule(b.reshape(x, shape=ArrayShape(F32, (2, 16)))))
#sdy.op_sharding_rule<([ij, k])->([i, jk]) {i=2, j=4, k=4}>
"""

# The rule modules fill the sharding-rule registry (registry.py) as they load.
from xla_spmd.propagation import rules_compute, rules_program, rules_shape  # noqa: F401
from xla_spmd.propagation.conflicts import POLICIES, aggressive, basic
from xla_spmd.propagation.factors import FactorType, OpShardingRule, RuleBuilder
from xla_spmd.propagation.importing import import_shardings
from xla_spmd.propagation.propagate import (
    STRATEGIES,
    close_shardings,
    propagate,
    propagation_pipeline,
)
from xla_spmd.propagation.provenance import explain, explanation
from xla_spmd.propagation.registry import (
    RULES,
    conservative_propagation,
    sharding_rule,
    with_sharding_rules,
)
from xla_spmd.propagation.splitting import split_constants

__all__ = [
    "POLICIES", "RULES", "STRATEGIES", "FactorType", "OpShardingRule", "RuleBuilder",
    "aggressive", "basic", "close_shardings", "conservative_propagation", "explain",
    "explanation", "import_shardings", "propagate", "propagation_pipeline", "sharding_rule",
    "split_constants", "with_sharding_rules",
]
