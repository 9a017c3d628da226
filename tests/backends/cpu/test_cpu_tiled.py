"""Loop fusions that read an operand through a transpose (maybe behind reshapes) run their
loop nest in blocks (``emitter.TILE``); each element is still computed once, the same way, so
the results are bit-identical to the reference evaluator's and to numpy's. Shapes are picked
to leave partial blocks at the edges (and blocks larger than a dim, and dims in between)."""

import ml_dtypes
import numpy as np
import pytest

import xla_spmd.backends.reference  # noqa: F401 (register the reference rules)
from xla_spmd.backends.cpu import CpuBackend
from xla_spmd.backends.cpu.emitter import TILE, render_module
from xla_spmd.backends.cpu.fusion import fuse
from xla_spmd.backends.reference import evaluate
from xla_spmd.ir import ArrayShape, Builder, DType, Module

BACKEND = CpuBackend()


def random_values(dtype: DType, shape: tuple, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype.name == "pred":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.is_integer:
        info = np.iinfo(dtype.numpy)
        return rng.integers(info.min, info.max, shape, dtype=dtype.numpy, endpoint=True)
    return (rng.standard_normal(shape) * 4).astype(dtype.numpy)


def transposed_update(dtype: DType, shape: tuple, permutation: tuple) -> Module:
    """``w - c * transpose(g)`` (``w xor transpose(g)`` for pred, ``w + transpose(g)`` for
    integers), ``g`` of the shape whose transpose by ``permutation`` is ``shape``."""
    b = Builder("main")
    source = tuple(shape[permutation.index(d)] for d in range(len(shape)))
    w = b.parameter(ArrayShape(dtype, shape), "w")
    g = b.parameter(ArrayShape(dtype, source), "g")
    t = b.transpose(g, dimensions=permutation)
    if dtype.name == "pred":
        root = b.op("xor", w, t)
    elif dtype.is_integer:
        root = b.op("add", w, t)
    else:
        scale = b.broadcast(b.constant(np.array(0.01, dtype.numpy)), dimensions=(),
                            shape=ArrayShape(dtype, shape))
        root = b.op("subtract", w, b.op("multiply", scale, t))
    return Module.from_entry("m", b.build(root))


def check(module: Module, args: list[np.ndarray], want_numpy: np.ndarray | None = None):
    want = np.asarray(evaluate(module, args))
    executable = BACKEND.compile(module, (0,))
    (result,) = executable.run(0, args, None)
    got = np.asarray(result)
    assert executable.report()["fallbacks"] == {}
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()
    if want_numpy is not None:
        assert got.tobytes() == want_numpy.astype(got.dtype).tobytes()


def tiled(module: Module) -> bool:
    fusions, _ = fuse(module.entry)
    return "%j" in render_module(fusions)


T = TILE
CASES = [((T + 5, 2 * T - 3), (1, 0)), ((T, 2 * T), (1, 0)), ((70, 3), (1, 0)), ((7, 9), (1, 0)),
         ((3, T + 1, T + 7), (0, 2, 1)), ((T + 3, 4, T - 1), (2, 0, 1)),
         ((T + 2, 3, 9), (1, 2, 0)), ((2, T + 1, 2, T + 3), (0, 3, 1, 2)),
         ((2, T + 3, 3, 5), (3, 2, 0, 1))]


@pytest.mark.parametrize("shape, permutation", CASES)
@pytest.mark.parametrize("dtype", ["f32", "bf16", "f16", "f64", "pred", "s8", "u32"])
def test_transposed_reads_match_the_reference(shape, permutation, dtype):
    dtype = DType.named(dtype)
    module = transposed_update(dtype, shape, permutation)
    assert tiled(module)
    w = random_values(dtype, shape, 1)
    g = random_values(dtype, module.entry.parameters[1].shape.dims, 2)
    want = None
    if dtype.name == "f32":  # numpy rounds each op to f32 as the backend does
        want = w - np.float32(0.01) * np.transpose(g, permutation)
    elif dtype.name == "pred":
        want = w ^ np.transpose(g, permutation)
    check(module, [w, g], want)


def test_a_transpose_behind_reshapes_is_tiled_and_exact():
    """``g`` (40, 35) transposed to (35, 40) and reshaped to (35, 8, 5); added to ``x``."""
    b = Builder("main")
    x = b.parameter(ArrayShape(DType.named("bf16"), (35, 8, 5)), "x")
    g = b.parameter(ArrayShape(DType.named("bf16"), (5, 8, 35)), "g")
    flat = b.reshape(g, shape=ArrayShape(DType.named("bf16"), (40, 35)))
    t = b.transpose(flat, dimensions=(1, 0))
    root = b.op("add", x, b.reshape(t, shape=ArrayShape(DType.named("bf16"), (35, 8, 5))))
    module = Module.from_entry("m", b.build(root))
    assert tiled(module)
    args = [random_values(DType.named("bf16"), (35, 8, 5), 3),
            random_values(DType.named("bf16"), (5, 8, 35), 4)]
    want = args[0] + np.transpose(args[1].reshape(40, 35)).reshape(35, 8, 5)
    check(module, args, want.astype(ml_dtypes.bfloat16))


def test_contiguous_and_broadcast_reads_keep_the_plain_loop_nest():
    b = Builder("main")
    dtype = DType.named("f32")
    x = b.parameter(ArrayShape(dtype, (40, 50)), "x")
    row = b.parameter(ArrayShape(dtype, (50,)), "row")
    wide = b.broadcast(row, dimensions=(1,), shape=ArrayShape(dtype, (40, 50)))
    root = b.op("add", b.reverse(x, dimensions=(1,)), wide)
    module = Module.from_entry("m", b.build(root))
    assert not tiled(module)
    args = [random_values(dtype, (40, 50), 5), random_values(dtype, (50,), 6)]
    check(module, args, args[0][:, ::-1] + args[1][None, :])
