"""Build one-instruction programs and evaluate them with the reference evaluator."""

import numpy as np

import xla_spmd.backends.reference  # noqa: F401 (register every rule)
from xla_spmd.backends import get_backend
from xla_spmd.backends.reference.evaluator import evaluate
from xla_spmd.ir import ArrayShape, Builder, DType, Module, TupleShape


def shape_of(array) -> ArrayShape:
    array = np.asarray(array)
    return ArrayShape(DType.from_numpy(array.dtype), array.shape)


def evaluate_on(backend: str, module: Module, arrays: list):
    """The value of `module`'s root on one device of `backend` (``reference`` or ``cpu``);
    a tuple root gives a tuple."""
    if backend == "reference":
        return evaluate(module, arrays)
    results = get_backend(backend).compile(module, (0,)).run(0, arrays, None)
    return tuple(results) if isinstance(module.entry.root.shape, TupleShape) else results[0]


def run_op(opcode, *arrays, shape=None, backend="reference", **attrs):
    """Evaluate `opcode` applied to parameters holding `arrays` (on `backend`)."""
    builder = Builder("main")
    params = [builder.parameter(shape_of(a), f"p{i}") for i, a in enumerate(arrays)]
    root = builder.op(opcode, *params, shape=shape, **attrs)
    module = Module.from_entry("m", builder.build(root))
    return evaluate_on(backend, module, [np.asarray(a) for a in arrays])
