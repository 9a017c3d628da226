"""Reference evaluation of batch-norm-inference, -training and -grad.

Each evaluates the StableHLO spec's decomposition into primitive ops (`expand_batch_norm`,
the same ops in the same order) with this evaluator's own rules, so the reference, the
compiled backends and the partitioned program (which all use that decomposition) agree bit for
bit on one device.

>>> import numpy as np
>>> from xla_spmd.ir import Builder, ArrayShape, F64, Module
>>> from xla_spmd.backends.reference import evaluate
>>> b = Builder("m")
>>> x = b.parameter(ArrayShape(F64, (2, 2)), "x")
>>> s = b.parameter(ArrayShape(F64, (2,)), "s")
>>> o = b.parameter(ArrayShape(F64, (2,)), "o")
>>> bn = b.op("batch-norm-training", x, s, o, epsilon=0.0, feature_index=1)
>>> out, mean, var = evaluate(Module.from_entry("m", b.build(bn)),
...                           [np.array([[1.0, 2.0], [3.0, 6.0]]), np.ones(2), np.zeros(2)])
>>> out.tolist(), mean.tolist(), var.tolist()
([[-1.0, -1.0], [1.0, 1.0]], [2.0, 4.0], [1.0, 4.0])
"""

from __future__ import annotations

from xla_spmd.backends.reference.evaluator import EVALUATE, Context
from xla_spmd.ir import Instruction
from xla_spmd.ir.batch_norm import BATCH_NORM_OPS, expand_instruction


@EVALUATE.register(*BATCH_NORM_OPS)
def batch_norm_rule(inst: Instruction, operands: list, ctx: Context):
    return ctx.call(expand_instruction(inst), operands)
