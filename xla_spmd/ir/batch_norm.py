"""Batch normalization as primitive ops: the StableHLO spec's decompositions, op for op.

`expand_batch_norm` returns a computation of reduce, broadcast, add, subtract, multiply,
divide and sqrt that computes a ``batch-norm-inference``, ``-training`` or ``-grad``
instruction exactly as the spec's Python decomposition writes it (the same ops in the same
order, so the same roundings): XLA's BatchNormExpander does the same. The reference evaluator
evaluates it, the CPU backend compiles it, and the partitioner partitions it, so all three agree
by construction.

Invariants: the computation's parameters are the instruction's operands in order; its root has
the instruction's shape (a tuple for training and grad); every value in it is operand-shaped,
one value per feature (``[dim(operand, feature_index)]``) or a scalar constant, which is all the
partitioner needs to give each a sharding.

Worked example, training over ``f32[2,3]`` with ``feature_index=1``: mean = sum over dim 0 / 2,
variance = sum over dim 0 of (x - mean)^2 / 2, output = scale * ((x - mean) / sqrt(variance +
epsilon)) + offset, each per feature.

>>> from xla_spmd.ir import F32, ArrayShape
>>> shapes = (ArrayShape(F32, (2, 3)), ArrayShape(F32, (3,)), ArrayShape(F32, (3,)))
>>> c = expand_batch_norm("batch-norm-training", shapes, 0.001, 1)
>>> sorted({i.opcode for i in c.instructions})[:6]
['add', 'broadcast', 'constant', 'divide', 'multiply', 'parameter']
>>> str(c.root.shape)
'(f32[2,3], f32[3], f32[3])'
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache, lru_cache

import numpy as np

from xla_spmd.errors import VerifyError
from xla_spmd.ir.builder import Builder, NameGenerator
from xla_spmd.ir.dtypes import DType
from xla_spmd.ir.module import (
    Computation,
    Instruction,
    Module,
    make_instruction,
    map_computations,
    rebind_called,
    rewrite,
)
from xla_spmd.ir.opdefs_compute import BATCH_NORM_OPERANDS
from xla_spmd.ir.reducers import scalar_reducer
from xla_spmd.ir.shapes import ArrayShape, Shape

BATCH_NORM_OPS = tuple(BATCH_NORM_OPERANDS)  # inference, training, grad


class _Expansion:
    """The spec's helper functions over one builder (operand shape, feature index)."""

    def __init__(self, b: Builder, operand: ArrayShape, feature_index: int, adder: Computation):
        self.b = b
        self.dtype = operand.dtype
        self.full = ArrayShape(operand.dtype, operand.dims)
        self.feature_index = feature_index
        self.vector = ArrayShape(operand.dtype, (operand.dims[feature_index],))
        self.reduced = tuple(d for d in range(operand.rank) if d != feature_index)
        features = operand.dims[feature_index]
        # size(operand) / dim(operand, feature_index), computed exactly before the constant
        # rounds it to the element type (a zero-sized feature dim divides nothing).
        self.count = int(np.prod(operand.dims, dtype=np.int64)) // features if features else 0
        self.adder = adder

    def scalar(self, value: float) -> Instruction:
        return self.b.constant(np.asarray(value, dtype=self.dtype.numpy), self.dtype)

    def splat(self, value: float, shape: ArrayShape) -> Instruction:
        return self.b.op("broadcast", self.scalar(value), shape=shape, dimensions=())

    def per_feature(self, vector: Instruction) -> Instruction:
        """broadcast_in_dim(vector, [feature_index], type(operand))."""
        return self.b.op("broadcast", vector, shape=self.full, dimensions=(self.feature_index,))

    def sum(self, value: Instruction) -> Instruction:
        """compute_sum: reduce over every dim but the feature dim, with add from 0."""
        return self.b.op("reduce", value, self.scalar(0), shape=self.vector,
                         dimensions=self.reduced, to_apply=self.adder)

    def mean(self, value: Instruction) -> Instruction:
        """compute_mean: compute_sum / (size(operand) / dim(operand, feature_index))."""
        return self.b.op("divide", self.sum(value), self.splat(self.count, self.vector))

    def normalize(self, operand, mean, variance, epsilon):
        """(centered_operand, stddev, normalized_operand, variance + epsilon) of the spec."""
        b = self.b
        centered = b.op("subtract", operand, self.per_feature(mean))
        shifted = b.op("add", self.per_feature(variance), self.splat(epsilon, self.full))
        stddev = b.op("sqrt", shifted)
        return centered, stddev, b.op("divide", centered, stddev), shifted

    def inference(self, operand, scale, offset, mean, variance, epsilon) -> Instruction:
        _, _, normalized, _ = self.normalize(operand, mean, variance, epsilon)
        scaled = self.b.op("multiply", self.per_feature(scale), normalized)
        return self.b.op("add", scaled, self.per_feature(offset))

    def training(self, operand, scale, offset, epsilon) -> Instruction:
        b = self.b
        mean = self.mean(operand)
        # compute_variance computes the same mean again in the spec; one is enough.
        centered = b.op("subtract", operand, self.per_feature(mean))
        variance = self.mean(b.op("multiply", centered, centered))
        output = self.inference(operand, scale, offset, mean, variance, epsilon)
        return b.op("tuple", output, mean, variance)

    def grad(self, operand, scale, mean, variance, grad_output, epsilon) -> Instruction:
        b = self.b
        centered, stddev, normalized, shifted = self.normalize(operand, mean, variance, epsilon)
        elements = self.splat(self.count, self.full)
        i1 = b.op("multiply", grad_output, elements)
        i2 = self.per_feature(self.sum(grad_output))
        i3 = self.per_feature(self.sum(b.op("multiply", grad_output, centered)))
        i4 = b.op("multiply", i3, centered)
        i5 = b.op("divide", i4, shifted)
        i6 = b.op("subtract", b.op("subtract", i1, i2), i5)
        factor = b.op("divide", b.op("divide", self.per_feature(scale), stddev), elements)
        grad_operand = b.op("multiply", factor, i6)
        grad_scale = self.sum(b.op("multiply", grad_output, normalized))
        grad_offset = self.sum(grad_output)
        return b.op("tuple", grad_operand, grad_scale, grad_offset)


@cache
def _adder(dtype: DType) -> Computation:
    """The scalar ``add`` reducer of `dtype` the expansions sum with by default (one object
    per dtype)."""
    return scalar_reducer("add", dtype, f"batch_norm_add.{dtype.name}")


def expand_batch_norm(opcode: str, operand_shapes: Sequence[Shape], epsilon: float,
                      feature_index: int, name: str | None = None,
                      reducer: Computation | None = None) -> Computation:
    """The computation of primitive ops that computes `opcode` (a batch-norm op) on operands
    of `operand_shapes`; `name` names it, `reducer` is the add reducer its reduces use
    (default `_adder` of the element type)."""
    if opcode not in BATCH_NORM_OPS:
        raise VerifyError(f"expand_batch_norm: '{opcode}' is not a batch-norm op "
                          f"({', '.join(BATCH_NORM_OPS)})")
    b = Builder(name or f"{opcode}.expanded")
    params = [b.parameter(shape, label, number) for number, (shape, label) in enumerate(
        zip(operand_shapes, BATCH_NORM_OPERANDS[opcode], strict=True))]
    operand_shape = operand_shapes[0]
    assert isinstance(operand_shape, ArrayShape)
    expansion = _Expansion(b, operand_shape, feature_index,
                           reducer or _adder(operand_shape.dtype))
    if opcode == "batch-norm-inference":
        operand, scale, offset, mean, variance = params
        root = expansion.inference(operand, scale, offset, mean, variance, epsilon)
    elif opcode == "batch-norm-training":
        operand, scale, offset = params
        root = expansion.training(operand, scale, offset, epsilon)
    else:
        operand, scale, mean, variance, grad_output = params
        root = expansion.grad(operand, scale, mean, variance, grad_output, epsilon)
    return b.build(root)


def expand_instruction(inst: Instruction) -> Computation:
    """`expand_batch_norm` for the batch-norm instruction `inst` (built once per opcode,
    operand shapes and attributes: evaluators call it at every execution)."""
    return _cached(inst.opcode, tuple(o.shape for o in inst.operands), inst.attrs.epsilon,
                   inst.attrs.feature_index)


@lru_cache(maxsize=256)
def _cached(opcode, shapes, epsilon, feature_index) -> Computation:
    return expand_batch_norm(opcode, shapes, epsilon, feature_index)


def inline_batch_norm(module: Module) -> Module:
    """`module` with every batch-norm instruction replaced by its expansion's instructions
    (what a backend without batch-norm kernels compiles); the module itself when it has none.
    The replacement of an instruction keeps its name and sharding; the add reducers are new
    computations named apart from the module's."""
    if not any(i.opcode in BATCH_NORM_OPS for c in module.computations
               for i in c.instructions):
        return module
    computation_names = NameGenerator([c.name for c in module.computations])
    reducers: dict[str, Computation] = {}

    def reducer_for(dtype: DType) -> Computation:
        if dtype.name not in reducers:
            reducers[dtype.name] = scalar_reducer(
                "add", dtype, computation_names(f"batch_norm_add.{dtype.name}"))
        return reducers[dtype.name]

    def rebuild(computation: Computation, replaced: dict) -> Computation:
        names = NameGenerator([i.name for i in computation.instructions])

        def expand(old: Instruction, operands: tuple[Instruction, ...]) -> Instruction | None:
            old = rebind_called(old, replaced)
            if old.opcode not in BATCH_NORM_OPS:
                return old.replace(operands=operands) if operands != old.operands else old
            shape = operands[0].shape
            assert isinstance(shape, ArrayShape)  # the verifier made it an array
            body = expand_batch_norm(old.opcode, [o.shape for o in operands],
                                     old.attrs.epsilon, old.attrs.feature_index,
                                     reducer=reducer_for(shape.dtype))
            return _inline(body, operands, names, old)

        return rewrite(computation, expand)

    rebuilt = map_computations(module, rebuild)
    return Module(rebuilt.name, tuple(reducers.values()) + rebuilt.computations, rebuilt.entry,
                  rebuilt.header)


def _inline(body: Computation, operands, names: NameGenerator, original: Instruction):
    """`body`'s instructions on `operands`, freshly named; the root takes `original`'s name
    and sharding."""
    mapping = {id(p): o for p, o in zip(body.parameters, operands, strict=True)}
    for inst in body.instructions:
        if id(inst) in mapping:
            continue
        root = inst is body.root
        shape = inst.shape if inst.op.needs_declared_shape else None
        mapping[id(inst)] = make_instruction(
            original.name if root else names(inst.opcode), inst.op,
            [mapping[id(o)] for o in inst.operands], inst.attrs, shape,
            sharding=original.sharding if root else None)
    return mapping[id(body.root)]
