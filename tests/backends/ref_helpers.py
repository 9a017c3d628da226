"""Build one-instruction programs and evaluate them with the reference evaluator."""

import numpy as np

import xla_spmd.backends.reference  # noqa: F401 (register every rule)
from xla_spmd.backends.reference.evaluator import evaluate
from xla_spmd.ir import ArrayShape, Builder, DType, Module


def shape_of(array) -> ArrayShape:
    array = np.asarray(array)
    return ArrayShape(DType.from_numpy(array.dtype), array.shape)


def run_op(opcode, *arrays, shape=None, **attrs):
    """Evaluate `opcode` applied to parameters holding `arrays`."""
    builder = Builder("main")
    params = [builder.parameter(shape_of(a), f"p{i}") for i, a in enumerate(arrays)]
    root = builder.op(opcode, *params, shape=shape, **attrs)
    module = Module.from_entry("m", builder.build(root))
    return evaluate(module, [np.asarray(a) for a in arrays])
