"""Dots on the CPU backend read their operands in place (``kernels.dot_operand``): BLAS gets
the reference's transpose flags and leading dimensions on views of the operands, so the
results are the reference evaluator's bit for bit, for every transpose combination, batch
dims leading or not, strided and broadcast operands, narrow floats accumulated in f32, and
a matrix times its own transpose. Sizes on both sides of OpenBLAS's small-matrix kernels
(m·n·k up to 100³), whose sums depend on the transpose flags."""

import ml_dtypes
import numpy as np
import pytest

from xla_spmd.backends.cpu import BACKEND
from xla_spmd.backends.cpu.kernels import dense, dot_operand
from xla_spmd.backends.reference import evaluate, leaves
from xla_spmd.collectives import LocalWorld
from xla_spmd.ir.hlo_parser import parse_hlo

DTYPES = {"f32": np.float32, "f64": np.float64, "bf16": ml_dtypes.bfloat16,
          "f16": np.float16, "s32": np.int32}


def _dims(text: str) -> tuple[int, ...]:
    return tuple(int(d) for d in text[text.index("[") + 1:-1].split(",") if d)


def _array(rng, text: str) -> np.ndarray:
    dtype = DTYPES[text[:text.index("[")]]
    if dtype is np.int32:
        return rng.integers(-2**31, 2**31, _dims(text), dtype=np.int32)
    return rng.standard_normal(_dims(text)).astype(dtype)


def _bits(x) -> bytes:
    x = np.ascontiguousarray(x)
    return x.dtype.str.encode() + str(x.shape).encode() + x.tobytes()


def _check(text: str, args: list, devices: int = 1) -> None:
    """The CPU backend's results equal the reference's bit for bit (one device, or every
    device of a stacked run of ``devices`` copies of ``args``)."""
    module = parse_hlo(text)
    want = [_bits(x) for x in leaves(evaluate(module, args))]
    executable = BACKEND.compile(module, tuple(range(devices)))
    if devices == 1:
        got = executable.run(0, args, None)
        assert [_bits(x) for x in got] == want
        assert executable.report()["fallbacks"] == {}
        return
    world = LocalWorld(devices)
    results = executable.run_together({d: args for d in range(devices)},
                                      {d: world.communicator(d) for d in range(devices)},
                                      stack=True)
    for device in range(devices):
        assert [_bits(x) for x in results[device]] == want


def _dot_module(lhs: str, rhs: str, out: str, dims: str, devices: int = 1) -> str:
    return f"""HloModule m, num_partitions={devices}
ENTRY %e (a: {lhs}, b: {rhs}) -> {out} {{
  %a = {lhs} parameter(0)
  %b = {rhs} parameter(1)
  ROOT %r = {out} dot(%a, %b), {dims}
}}"""


# (m, n, k): below 100³ (OpenBLAS's small kernels on SkylakeX) and above it
SIZES = [(24, 40, 70), (130, 120, 150), (257, 96, 384)]
TRANSPOSES = {"NN": ((1,), (0,)), "NT": ((1,), (1,)), "TN": ((0,), (0,)), "TT": ((0,), (1,))}


@pytest.mark.parametrize("m, n, k", SIZES)
@pytest.mark.parametrize("flags", list(TRANSPOSES))
@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_every_transpose_combination_equals_the_reference(m, n, k, flags, dtype):
    (lc,), (rc,) = TRANSPOSES[flags]
    lhs = f"{dtype}[{m},{k}]" if lc == 1 else f"{dtype}[{k},{m}]"
    rhs = f"{dtype}[{k},{n}]" if rc == 0 else f"{dtype}[{n},{k}]"
    rng = np.random.default_rng(m + n + k)
    _check(_dot_module(lhs, rhs, f"{dtype}[{m},{n}]",
                       f"lhs_contracting_dims={{{lc}}}, rhs_contracting_dims={{{rc}}}"),
           [_array(rng, lhs), _array(rng, rhs)])


BATCHED = [
    # batch leading, the rhs contracting its last dim (NT per matrix)
    ("f32[6,96,80]", "f32[6,112,80]", "f32[6,96,112]",
     "lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, "
     "rhs_contracting_dims={2}"),
    # batch dims not leading (attention's scores): the operands are copied as the reference's
    ("f32[2,64,4,48]", "f32[2,64,4,48]", "f32[2,4,64,64]",
     "lhs_batch_dims={0,2}, rhs_batch_dims={0,2}, lhs_contracting_dims={3}, "
     "rhs_contracting_dims={3}"),
    # batch dim last on both sides, the lhs contracting its first dim
    ("f32[130,120,3]", "f32[130,110,3]", "f32[3,120,110]",
     "lhs_batch_dims={2}, rhs_batch_dims={2}, lhs_contracting_dims={0}, "
     "rhs_contracting_dims={0}"),
    # two contracting dims and two free dims on each side
    ("f32[8,9,10,11]", "f32[10,12,11,13]", "f32[8,9,12,13]",
     "lhs_contracting_dims={2,3}, rhs_contracting_dims={0,2}"),
]


@pytest.mark.parametrize("lhs, rhs, out, dims", BATCHED)
def test_batch_and_grouped_dims_equal_the_reference(lhs, rhs, out, dims):
    rng = np.random.default_rng(7)
    _check(_dot_module(lhs, rhs, out, dims), [_array(rng, lhs), _array(rng, rhs)])


@pytest.mark.parametrize("lhs, rhs, out, dims", BATCHED[:1] + BATCHED[2:3])
def test_stacked_devices_equal_the_reference(lhs, rhs, out, dims):
    rng = np.random.default_rng(8)
    _check(_dot_module(lhs, rhs, out, dims, devices=2), [_array(rng, lhs), _array(rng, rhs)],
           devices=2)


@pytest.mark.parametrize("operand, shape, producer", [
    # a transposed view of the parameter
    ("f32[150,130]", "f32[130,150]", "transpose(%a), dimensions={1,0}"),
    # a strided slice (gaps: copied as the reference copies it)
    ("f32[130,300]", "f32[130,150]", "slice(%a), slice={[0:130], [0:300:2]}"),
    # a contiguous slice of rows
    ("f32[200,150]", "f32[130,150]", "slice(%a), slice={[10:140], [0:150]}"),
    # a broadcast (zero strides: copied)
    ("f32[150]", "f32[130,150]", "broadcast(%a), dimensions={1}"),
])
def test_view_operands_equal_the_reference(operand, shape, producer):
    text = f"""HloModule m
ENTRY %e (a: {operand}, b: f32[150,120]) -> f32[130,120] {{
  %a = {operand} parameter(0)
  %b = f32[150,120] parameter(1)
  %v = {shape} {producer}
  ROOT %r = f32[130,120] dot(%v, %b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
}}"""
    rng = np.random.default_rng(9)
    _check(text, [_array(rng, operand), _array(rng, "f32[150,120]")])


@pytest.mark.parametrize("narrow", ["bf16", "f16"])
@pytest.mark.parametrize("result", ["narrow", "f32"])
def test_narrow_floats_accumulate_in_f32(narrow, result):
    out = narrow if result == "narrow" else "f32"
    lhs, rhs = f"{narrow}[4,130,120]", f"{narrow}[4,110,120]"
    rng = np.random.default_rng(10)
    _check(_dot_module(lhs, rhs, f"{out}[4,130,110]",
                       "lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, "
                       "rhs_contracting_dims={2}"), [_array(rng, lhs), _array(rng, rhs)])


def test_integer_dots_wrap_as_the_reference():
    rng = np.random.default_rng(11)
    _check(_dot_module("s32[40,30]", "s32[20,30]", "s32[40,20]",
                       "lhs_contracting_dims={1}, rhs_contracting_dims={1}"),
           [_array(rng, "s32[40,30]"), _array(rng, "s32[20,30]")])


@pytest.mark.parametrize("k, n", [(300, 128), (40, 30)])
def test_a_matrix_times_its_own_transpose_is_a_gemm(k, n):
    """dot(x, x) over dim 0 reads one buffer twice: numpy's matmul would take that to syrk,
    the reference (two copies) never does; the kernel copies one side."""
    text = f"""HloModule m
ENTRY %e (a: f32[{k},{n}]) -> f32[{n},{n}] {{
  %a = f32[{k},{n}] parameter(0)
  ROOT %r = f32[{n},{n}] dot(%a, %a), lhs_contracting_dims={{0}}, rhs_contracting_dims={{0}}
}}"""
    _check(text, [_array(np.random.default_rng(12), f"f32[{k},{n}]")])


def test_dense_operands_are_read_in_place():
    x = np.zeros((6, 5, 4), np.float32)
    work = np.dtype(np.float32)
    # moved dims that merge: a view of x (no copy), with the strides of the reference's copy
    moved = dot_operand(x, (2, 0, 1), (1, 4, 30), work)
    assert np.shares_memory(moved, x)
    reference = np.transpose(x, (2, 0, 1)).astype(work).reshape(1, 4, 30)
    assert moved.strides[1:] == reference.strides[1:] == (4, 16)
    transposed = dot_operand(x.reshape(30, 4), (1, 0), (1, 4, 30), work)
    assert np.shares_memory(transposed, x)
    # a conversion, a reshape that must copy, gaps: the reference's own copy
    assert not np.shares_memory(dot_operand(x, (0, 1, 2), (1, 30, 4), np.dtype(np.float64)), x)
    copied = dot_operand(x, (1, 0, 2), (1, 5, 24), work)
    assert not np.shares_memory(copied, x) and copied.flags.c_contiguous
    strided = x[:, ::2]
    assert not dense(strided)
    assert not np.shares_memory(dot_operand(strided, (0, 1, 2), (1, 18, 4), work), x)
