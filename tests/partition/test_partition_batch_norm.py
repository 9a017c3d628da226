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


@pytest.mark.parametrize("opcode", ["batch-norm-training", "batch-norm-grad"])
@pytest.mark.parametrize("dims, sharding", [
    ((6, 4, 3), (["y"], [], [])),          # 6 rows over 4 devices: padded, masked
    ((5, 3, 2), (["x"], ["y"], [])),       # uneven batch and feature dims
    ((4, 6, 3), ([], ["x", "y"], [])),     # 6 features over 8 devices
])
def test_uneven_shards_are_masked(opcode, dims, sharding):
    sharding = S(*sharding)
    vector = TensorSharding(MESH, [list(sharding.dims[1].axes)])
    module = _module(opcode, dims, 1, sharding, dtype=F64,
                     out_sharding=(sharding, vector, vector))
    check(module, _args(module), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("opcode", ["batch-norm-inference", "batch-norm-training",
                                    "batch-norm-grad"])
def test_propagated_from_the_inputs_on_the_cpu_backend(opcode):
    """Shardings on the inputs only: propagation carries the batch sharding to the output
    and the feature sharding to the statistics; the CPU backend runs the partitioned
    program (random f32 values: equal within rounding of the reordered sums)."""
    sharding = S(["x"], ["y"], [])
    module = _module(opcode, (8, 8, 3), 1, sharding)
    rng = np.random.default_rng(7)
    args = [rng.standard_normal(p.shape.dims).astype(np.float32)
            for p in module.entry.parameters]
    for k, p in enumerate(module.entry.parameters):
        if p.name == "variance":
            args[k] = np.abs(args[k]) + 0.5
    spmd = check(module, args, propagate=True, backend="cpu", rtol=1e-4, atol=1e-4)
    root = spmd.entry.root
    output = root.operands[0] if root.opcode == "tuple" else root
    assert output.shape.dims == (4, 2, 3)  # the output is sharded as the operand
    kinds = {row["kind"] for row in collective_table(spmd)}
    assert "all-gather" not in kinds and "all-to-all" not in kinds


def test_single_device_partition_equals_reference_bits():
    sharding = TensorSharding(make_mesh({"x": 1}), [[], [], []])
    b = Builder("main")
    x = b.parameter(ArrayShape(F32, (5, 3, 2)), "x", sharding=sharding)
    s = b.parameter(ArrayShape(F32, (3,)), "s")
    root = b.op("batch-norm-training", x, s, s, epsilon=1e-3, feature_index=1)
    module = Module.from_entry("m", b.build(root))
    rng = np.random.default_rng(1)
    args = [rng.standard_normal(p.shape.dims).astype(np.float32)
            for p in module.entry.parameters]
    check(module, args, bits=True)
