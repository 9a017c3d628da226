"""batch-norm-inference, -training and -grad on the reference evaluator and the CPU backend.

Oracles: the StableHLO spec's own examples (hand-computed values), and numpy's mean, var and
the textbook gradient of batch normalization written independently of our decomposition.
"""

import numpy as np
import pytest
from ref_helpers import run_op

from xla_spmd.backends import get_backend
from xla_spmd.ir import F32, ArrayShape, Builder, Module
from xla_spmd.ir.batch_norm import BATCH_NORM_OPS, inline_batch_norm

# The spec's examples (docs/spec.md, batch_norm_*): operand f64[2,2,2], feature_index=2.
OPERAND = np.array([[[1.0, 2.0], [3.0, 4.0]], [[3.0, 4.0], [1.0, 2.0]]])
ONES = np.ones(2)


def test_spec_example_inference():
    result = run_op("batch-norm-inference", OPERAND, ONES, ONES, np.array([2.0, 3.0]), ONES,
                    epsilon=0.0, feature_index=2)
    np.testing.assert_array_equal(result, [[[0.0, 0.0], [2.0, 2.0]], [[2.0, 2.0], [0.0, 0.0]]])


def test_spec_example_training():
    output, mean, variance = run_op("batch-norm-training", OPERAND, ONES, ONES, epsilon=0.0,
                                    feature_index=2)
    np.testing.assert_array_equal(output, [[[0.0, 0.0], [2.0, 2.0]], [[2.0, 2.0], [0.0, 0.0]]])
    np.testing.assert_array_equal(mean, [2.0, 3.0])
    np.testing.assert_array_equal(variance, [1.0, 1.0])


def test_spec_example_grad():
    grads = run_op("batch-norm-grad", OPERAND, ONES, np.array([2.0, 3.0]), ONES,
                   np.full((2, 2, 2), 0.1), epsilon=0.0, feature_index=2)
    np.testing.assert_allclose(grads[0], np.zeros((2, 2, 2)), atol=1e-15)
    np.testing.assert_allclose(grads[1], [0.0, 0.0], atol=1e-15)
    np.testing.assert_allclose(grads[2], [0.4, 0.4], rtol=1e-15)


def _moved(x, feature):
    """`x` with the feature dim last, flattened to (elements per feature, features)."""
    return np.moveaxis(x, feature, -1).reshape(-1, x.shape[feature])


def _numpy_batch_norm(x, scale, offset, epsilon, feature):
    """Textbook batch normalization (numpy's mean and var) and its gradient."""
    flat = _moved(x, feature)
    mean, var = flat.mean(0), flat.var(0)
    normalized = (flat - mean) / np.sqrt(var + epsilon)
    output = scale * normalized + offset
    shape = np.moveaxis(x, feature, -1).shape
    return np.moveaxis(output.reshape(shape), -1, feature), mean, var


def _numpy_grad(x, scale, mean, var, grad_output, epsilon, feature):
    flat, g = _moved(x, feature), _moved(grad_output, feature)
    n = flat.shape[0]
    inv = 1 / np.sqrt(var + epsilon)
    normalized = (flat - mean) * inv
    grad_scale = (g * normalized).sum(0)
    grad_offset = g.sum(0)
    grad_flat = scale * inv / n * (n * g - grad_offset - normalized * grad_scale)
    shape = np.moveaxis(x, feature, -1).shape
    return np.moveaxis(grad_flat.reshape(shape), -1, feature), grad_scale, grad_offset


@pytest.mark.parametrize("feature", [0, 1, 3])
def test_training_and_grad_equal_numpy(feature):
    rng = np.random.default_rng(feature)
    x = rng.standard_normal((3, 4, 2, 5)) * 3 + 1
    features = x.shape[feature]
    scale, offset = rng.standard_normal(features), rng.standard_normal(features)
    output, mean, var = run_op("batch-norm-training", x, scale, offset, epsilon=1e-3,
                               feature_index=feature)
    epsilon = float(np.float32(1e-3))  # the attribute is an f32
    want = _numpy_batch_norm(x, scale, offset, epsilon, feature)
    for got, expected in zip((output, mean, var), want):
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    inference = run_op("batch-norm-inference", x, scale, offset, mean, var, epsilon=1e-3,
                       feature_index=feature)
    np.testing.assert_array_equal(inference, output)  # the same ops on the same statistics
    grad_output = rng.standard_normal(x.shape)
    grads = run_op("batch-norm-grad", x, scale, mean, var, grad_output, epsilon=1e-3,
                   feature_index=feature)
    for got, expected in zip(grads, _numpy_grad(x, scale, mean, var, grad_output, epsilon,
                                                feature)):
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10)


def _args(opcode, x, rng):
    features = x.shape[1]
    vectors = {"batch-norm-inference": 4, "batch-norm-training": 2, "batch-norm-grad": 3}
    args = [x] + [rng.standard_normal(features).astype(x.dtype)
                  for _ in range(vectors[opcode])]
    if opcode != "batch-norm-training":  # the variance is the last vector: positive
        args[-1] = np.abs(args[-1]) + np.asarray(0.5, x.dtype)
    if opcode == "batch-norm-grad":
        args.append(rng.standard_normal(x.shape).astype(x.dtype))
    return args


@pytest.mark.parametrize("opcode", BATCH_NORM_OPS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cpu_backend_equals_reference_bit_for_bit(opcode, dtype):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 3, 5)).astype(dtype)
    args = _args(opcode, x, rng)
    want = run_op(opcode, *args, epsilon=1e-5, feature_index=1)
    got = run_op(opcode, *args, epsilon=1e-5, feature_index=1, backend="cpu")
    for g, w in zip(got if isinstance(got, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,)):
        np.testing.assert_array_equal(np.asarray(g).view(f"u{g.dtype.itemsize}"),
                                      np.asarray(w).view(f"u{w.dtype.itemsize}"))


def test_cpu_backend_compiles_the_expansion_without_fallback():
    b = Builder("main")
    x = b.parameter(ArrayShape(F32, (8, 4)), "x")
    s = b.parameter(ArrayShape(F32, (4,)), "s")
    o = b.parameter(ArrayShape(F32, (4,)), "o")
    module = Module.from_entry("m", b.build(b.op("batch-norm-training", x, s, o, epsilon=0.5,
                                                 feature_index=1)))
    executable = get_backend("cpu").compile(module, (0,))
    report = executable.report()
    assert report["fallbacks"] == {}
    assert not any(i.opcode in BATCH_NORM_OPS for i in executable.module.entry.instructions)


def test_inline_batch_norm_keeps_names_and_adds_one_reducer_per_type():
    b = Builder("main")
    x = b.parameter(ArrayShape(F32, (8, 4)), "x")
    s = b.parameter(ArrayShape(F32, (4,)), "s")
    o = b.parameter(ArrayShape(F32, (4,)), "o")
    first = b.op("batch-norm-training", x, s, o, epsilon=0.5, feature_index=1, name="bn")
    out = b.op("get-tuple-element", first, index=0)
    second = b.op("batch-norm-inference", out, s, o, s, s, epsilon=0.5, feature_index=1,
                  name="bn2")
    module = Module.from_entry("m", b.build(second))
    inlined = inline_batch_norm(module)
    names = [i.name for i in inlined.entry.instructions]
    assert "bn" in names and "bn2" in names and len(names) == len(set(names))
    assert [c.name for c in inlined.computations] == ["batch_norm_add.f32", "main"]
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(p.shape.dims).astype(np.float32)
            for p in module.entry.parameters]
    args[1] = np.abs(args[1]) + 1
    from xla_spmd.backends.reference import evaluate
    np.testing.assert_array_equal(evaluate(inlined, args), evaluate(module, args))
    assert inline_batch_norm(inlined) is inlined


def test_gpu_backend_runs_the_expansion_host_only_and_its_source_compiles():
    """HOST-ONLY CHECK of the GPU executable (numpy stands in for CuPy): batch norm compiles
    as its expansion, and the CUDA C of its fusions compiles to PTX where NVRTC is present."""
    from xla_spmd.backends.gpu import GpuBackend, compiler
    from xla_spmd.errors import XlaSpmdError

    rng = np.random.default_rng(4)
    x = rng.standard_normal((6, 3, 5)).astype(np.float32)
    for opcode in BATCH_NORM_OPS:
        args = _args(opcode, x, rng)
        b = Builder("main")
        params = [b.parameter(ArrayShape(F32, a.shape), f"p{k}") for k, a in enumerate(args)]
        root = b.op(opcode, *params, epsilon=1e-5, feature_index=1)
        module = Module.from_entry("m", b.build(root))
        executable = GpuBackend(host_stand_in=True).compile(module, (0,))
        got = executable.run(0, args, None)
        want = run_op(opcode, *args, epsilon=1e-5, feature_index=1)
        for g, w in zip(got, want if isinstance(want, tuple) else (want,)):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
        try:
            compiler.nvrtc()
        except XlaSpmdError:
            continue
        source = executable.cuda_source
        ptx = compiler.compile_ptx(source, "compute_75")
        assert ptx.count(".entry ") == source.count('extern "C" __global__') > 0
