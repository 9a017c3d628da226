"""Convolution on the CPU backend: bit for bit the reference evaluator's values (the same
GEMM per kernel tap, accumulated in tap order: ``backends/cpu/convolution.py``) over random
shapes, dimension orders, windows (strides, padding both signs, base and window dilation,
reversal), feature and batch groups and dtypes; run alone, in lockstep and stacked; and no
fallback left for it."""

import ml_dtypes
import numpy as np
from cpu_bits import exact_bits
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xla_spmd.backends.cpu import BACKEND
from xla_spmd.backends.reference import evaluate
from xla_spmd.collectives import LocalWorld
from xla_spmd.ir import ArrayShape, Builder, ConvDimensionNumbers, DType, Module, Window

DTYPES = {"f32": np.float32, "f64": np.float64, "bf16": ml_dtypes.bfloat16,
          "f16": np.float16, "s32": np.int32}


def _labels(draw, rank: int) -> str:
    spatial = "".join(str(d) for d in range(rank))
    lhs = "".join(draw(st.permutations("bf" + spatial)))
    rhs = "".join(draw(st.permutations("io" + spatial)))
    out = "".join(draw(st.permutations("bf" + spatial)))
    return f"{lhs}_{rhs}->{out}"


@st.composite
def convolutions(draw):
    """(module, lhs, rhs) of a random convolution."""
    rank = draw(st.integers(1, 3))
    labels = _labels(draw, rank)
    mode = draw(st.sampled_from(["plain", "feature", "batch"]))
    groups = draw(st.integers(2, 3)) if mode == "feature" else 1
    batch_groups = draw(st.integers(2, 3)) if mode == "batch" else 1
    # Long contractions (channels per group) and wide outputs too: BLAS and numpy's own loop
    # (a matrix-vector product with a strided operand) sum those in different orders.
    cg = draw(st.one_of(st.integers(1, 4), st.sampled_from([9, 33])))
    og = draw(st.one_of(st.integers(1, 4), st.sampled_from([17])))
    n = batch_groups * draw(st.integers(1, 3))
    spatial, kernel, dims = [], [], []
    for _ in range(rank):
        size = draw(st.integers(1, 7 if rank < 3 else 4))
        k = draw(st.integers(1, 3))
        low, high = draw(st.integers(-1, 2)), draw(st.integers(-1, 2))
        dim = (k, draw(st.integers(1, 3)), (low, high), draw(st.integers(1, 2)),
               draw(st.integers(1, 2)), draw(st.booleans()))
        spatial.append(size)
        kernel.append(k)
        dims.append(dim)
    window = Window.make(*zip(*dims))
    dn = ConvDimensionNumbers.from_labels(labels)
    lhs_sizes = {"b": n, "f": cg * groups, **{str(d): s for d, s in enumerate(spatial)}}
    rhs_sizes = {"i": cg, "o": og * groups * batch_groups,
                 **{str(d): k for d, k in enumerate(kernel)}}
    lhs_labels, rest = labels.split("_")
    rhs_labels = rest.split("->")[0]
    dtype = draw(st.sampled_from(sorted(DTYPES)))
    numpy_dtype = DTYPES[dtype]
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))

    def array(labels_):
        shape = tuple((lhs_sizes if "b" in labels_ else rhs_sizes)[c] for c in labels_)
        if dtype == "s32":
            return rng.integers(-2**31, 2**31, shape, dtype=np.int32)
        return (rng.standard_normal(shape) * 2).astype(numpy_dtype)
    lhs, rhs = array(lhs_labels), array(rhs_labels)
    b = Builder("main")
    x = b.parameter(ArrayShape(DType.from_numpy(lhs.dtype), lhs.shape), "x")
    y = b.parameter(ArrayShape(DType.from_numpy(rhs.dtype), rhs.shape), "y")
    root = b.convolution(x, y, window=window, dim_labels=dn, feature_group_count=groups,
                         batch_group_count=batch_groups)
    return Module.from_entry("m", b.build(root)), lhs, rhs


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(case=convolutions())
def test_convolutions_equal_the_reference_bit_for_bit(case):
    module, lhs, rhs = case
    executable = BACKEND.compile(module, (0,))
    (got,) = executable.run(0, [lhs, rhs], None)
    want = np.asarray(evaluate(module, [lhs, rhs]))
    assert exact_bits(got) == exact_bits(want)
    assert executable.report()["fallbacks"] == {}


def _grads_module() -> str:
    # A conv, its two gradient convs (a reversed window, a batch-group count) and an
    # elementwise user, on 4 devices.
    return """HloModule m, num_partitions=4
ENTRY %e (x: f32[2,6,6,3], k: f32[3,3,3,4]) -> (f32[2,6,6,4], f32[3,3,3,4], f32[2,6,6,3]) {
  %x = f32[2,6,6,3] parameter(0)
  %k = f32[3,3,3,4] parameter(1)
  %y = f32[2,6,6,4] convolution(%x, %k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  %t = f32[2,6,6,4] tanh(%y)
  %dk = f32[3,3,3,4] convolution(%x, %t), window={size=6x6 pad=1_1x1_1}, dim_labels=f01b_i01o->01bf
  %dx = f32[2,6,6,3] convolution(%t, %k), window={size=3x3 pad=1_1x1_1 rhs_reversal=1x1},
    dim_labels=b01f_01oi->b01f
  ROOT %r = (f32[2,6,6,4], f32[3,3,3,4], f32[2,6,6,3]) tuple(%t, %dk, %dx)
}"""


def test_convolutions_run_stacked_and_in_lockstep_as_alone():
    from xla_spmd.ir.hlo_parser import parse_hlo
    module = parse_hlo(_grads_module())
    rng = np.random.default_rng(4)
    per_device = [[rng.standard_normal((2, 6, 6, 3)).astype(np.float32),
                   rng.standard_normal((3, 3, 3, 4)).astype(np.float32)] for _ in range(4)]
    executable = BACKEND.compile(module, tuple(range(4)))
    assert executable.report()["fallbacks"] == {}
    world = LocalWorld(4)
    communicators = {d: world.communicator(d) for d in range(4)}
    arguments = dict(enumerate(per_device))
    runs = [executable.run_together(arguments, communicators, stack=stack)
            for stack in (True, False)]
    for device in range(4):
        alone = executable.run(device, per_device[device], None)
        want = [np.asarray(v) for v in evaluate(module, per_device[device])]
        for run in runs:
            assert [exact_bits(v) for v in run[device]] == [exact_bits(v) for v in alone]
        assert [exact_bits(v) for v in alone] == [exact_bits(v) for v in want]
