"""Batch norm partitioned on N devices equals the unpartitioned op (the central property).

Feature dims sharded stay local; batch and spatial dims sharded (evenly or padded) compute
their statistics as local sums and one all-reduce per statistic. The inputs are small
integers and the counts powers of two where the comparison is bit for bit, so every sum is
exact in any order; the other cases compare within rounding.
"""

import numpy as np
import pytest
from spmd_oracle import check

from xla_spmd.ir import F32, F64, ArrayShape, Builder, Module
from xla_spmd.mesh import make_mesh
from xla_spmd.partition import collective_table
from xla_spmd.sharding import TensorSharding

MESH = make_mesh({"x": 2, "y": 4})


def S(*dims):
    return TensorSharding(MESH, [list(d) for d in dims])


def _ints(rng, dims, dtype):
    return rng.integers(-4, 5, dims).astype(dtype.numpy)


VECTORS = {"batch-norm-inference": ("scale", "offset", "mean", "variance"),
           "batch-norm-training": ("scale", "offset"),
           "batch-norm-grad": ("scale", "mean", "variance")}


def _module(opcode, dims, feature, sharding, dtype=F32, epsilon=0.25, out_sharding=None):
    """`opcode` over an operand of `dims` sharded as `sharding` (the per-feature operands
    carry the feature dim's axes), every result returned."""
    b = Builder("main")
    x = b.parameter(ArrayShape(dtype, dims), "x", sharding=sharding)
    vector = ArrayShape(dtype, (dims[feature],))
    feature_sharding = TensorSharding(MESH, [list(sharding.dims[feature].axes)])
    vectors = [b.parameter(vector, label, sharding=feature_sharding)
               for label in VECTORS[opcode]]
    extra = [b.parameter(ArrayShape(dtype, dims), "grad_output", sharding=sharding)] \
        if opcode == "batch-norm-grad" else []
    root = b.op(opcode, x, *vectors, *extra, epsilon=epsilon, feature_index=feature,
                sharding=out_sharding)
    return Module.from_entry("m", b.build(root))


def _args(module, seed=0):
    """Small integers (a variance v with v + 0.25 a power of 4): sums, means over 16 elements
    and the normalized values are exact, so they are the same in every order."""
    rng = np.random.default_rng(seed)
    args = []
    for p in module.entry.parameters:
        value = _ints(rng, p.shape.dims, p.shape.dtype)
        if p.name == "variance":  # variance + epsilon in {1, 4, 16}: exact square roots
            value = rng.choice([0.75, 3.75, 15.75], p.shape.dims).astype(value.dtype)
        args.append(value)
    return args


SHARDINGS = {  # operand f32[8,4,2] with feature_index=1
    "feature": ([], ["y"], []),
    "batch": (["x"], [], []),
    "batch_and_feature": (["x"], ["y"], []),
    "batch_two_axes": (["x", "y"], [], []),
    "spatial": ([], [], ["x"]),
}


@pytest.mark.parametrize("opcode", ["batch-norm-inference", "batch-norm-training",
                                    "batch-norm-grad"])
@pytest.mark.parametrize("name", sorted(SHARDINGS))
def test_partitioned_equals_unpartitioned_bit_for_bit(opcode, name):
    sharding = S(*SHARDINGS[name])
    vector = TensorSharding(MESH, [list(sharding.dims[1].axes)])
    out = sharding if opcode == "batch-norm-inference" else (sharding, vector, vector)
    module = _module(opcode, (8, 4, 2), 1, sharding, dtype=F64, out_sharding=out)
    spmd = check(module, _args(module), bits=True)
    kinds = {row["kind"] for row in collective_table(spmd)}
    batch_sharded = any(sharding.dims[d].axes for d in (0, 2))
    # statistics over sharded batch dims are all-reduced (nothing is gathered); a sharded
    # feature dim moves nothing
    statistics = batch_sharded and opcode != "batch-norm-inference"
    assert kinds == ({"all-reduce"} if statistics else set())
