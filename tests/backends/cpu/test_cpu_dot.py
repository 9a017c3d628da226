"""Dots on the CPU backend read their operands in place (``kernels.dot_operand``): BLAS gets
the reference's transpose flags and leading dimensions on views of the operands, so the
results are the reference evaluator's bit for bit, for every transpose combination, batch
dims leading or not, strided and broadcast operands, narrow floats accumulated in f32, and
a matrix times its own transpose. Sizes on both sides of OpenBLAS's small-matrix kernels
(m·n·k up to 100³), whose sums depend on the transpose flags."""

import ml_dtypes
import numpy as np
import pytest
from cpu_bits import exact_bits
from threadpoolctl import threadpool_limits

from xla_spmd.backends.cpu import BACKEND, blas
from xla_spmd.backends.cpu.kernels import FOLD_CORES, dense, dot_operand
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


def _check(text: str, args: list, devices: int = 1) -> None:
    """The CPU backend's results equal the reference's bit for bit (one device, or every
    device of a stacked run of ``devices`` copies of ``args``)."""
    module = parse_hlo(text)
    want = [exact_bits(x) for x in leaves(evaluate(module, args))]
    executable = BACKEND.compile(module, tuple(range(devices)))
    if devices == 1:
        got = executable.run(0, args, None)
        assert [exact_bits(x) for x in got] == want
        assert executable.report()["fallbacks"] == {}
        return
    world = LocalWorld(devices)
    results = executable.run_together({d: args for d in range(devices)},
                                      {d: world.communicator(d) for d in range(devices)},
                                      stack=True)
    for device in range(devices):
        assert [exact_bits(x) for x in results[device]] == want


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


# ---------------------------------------------------------------------------------------------
# A dot's transpose computed as the swapped product (kernels.folded_transpose)


FOLDED = ["t"] if blas.core() in FOLD_CORES else []
"""What ``_folds`` finds of a foldable transpose named ``t``: nothing on a BLAS core where
the swapped product's bits were not checked (the results are compared either way)."""


def _folds(text: str) -> list[str]:
    """The names of the transposes the CPU plan computes as swapped products."""
    executable = BACKEND.compile(parse_hlo(text), (0,))
    return [step.inst.name for program in executable.programs.values()
            for step in program.steps if step.folded is not None]


def _transposed_dot(lhs: str, rhs: str, out: str, dims: str, permutation: str, result: str,
                    extra_user: bool = False) -> str:
    users = (f"\n  %n = {out} negate(%d)\n  ROOT %r = ({result}, {out}) tuple(%u, %n)"
             if extra_user else "")
    root = "ROOT " if not extra_user else ""
    returns = f"({result}, {out})" if extra_user else result
    return f"""HloModule m
ENTRY %e (a: {lhs}, b: {rhs}, w: {result}) -> {returns} {{
  %a = {lhs} parameter(0)
  %b = {rhs} parameter(1)
  %w = {result} parameter(2)
  %d = {out} dot(%a, %b), {dims}
  %t = {result} transpose(%d), dimensions={{{permutation}}}
  %c = f32[] constant(0.01)
  %s = {result} broadcast(%c), dimensions={{}}
  %g = {result} multiply(%s, %t)
  {root}%u = {result} subtract(%w, %g){users}
}}"""


@pytest.mark.parametrize("m, n, k", [(130, 120, 150), (257, 96, 384), (2, 700, 800)])
@pytest.mark.parametrize("flags", list(TRANSPOSES))
def test_a_dots_transpose_is_the_swapped_product(m, n, k, flags):
    """The weight update ``w - 0.01 * transpose(dot)``: the transpose is computed by the dot's
    kernel with its operands swapped (no pass over the dot's result), with the reference's
    bits, for every transpose combination."""
    (lc,), (rc,) = TRANSPOSES[flags]
    lhs = f"f32[{m},{k}]" if lc == 1 else f"f32[{k},{m}]"
    rhs = f"f32[{k},{n}]" if rc == 0 else f"f32[{n},{k}]"
    text = _transposed_dot(lhs, rhs, f"f32[{m},{n}]",
                           f"lhs_contracting_dims={{{lc}}}, rhs_contracting_dims={{{rc}}}",
                           "1,0", f"f32[{n},{m}]")
    assert _folds(text) == FOLDED
    rng = np.random.default_rng(m * n + k)
    args = [_array(rng, lhs), _array(rng, rhs), _array(rng, f"f32[{n},{m}]")]
    _check(text, args)
    _check(text.replace("HloModule m", "HloModule m, num_partitions=2"), args, devices=2)


def test_a_batched_dots_transpose_and_narrow_results_are_swapped_products():
    text = _transposed_dot("bf16[3,130,150]", "bf16[3,150,120]", "bf16[3,130,120]",
                           "lhs_batch_dims={0}, rhs_batch_dims={0}, "
                           "lhs_contracting_dims={2}, rhs_contracting_dims={1}",
                           "0,2,1", "bf16[3,120,130]").replace(
        "f32[] constant(0.01)", "bf16[] constant(0.01)")
    assert _folds(text) == FOLDED
    rng = np.random.default_rng(13)
    _check(text, [_array(rng, "bf16[3,130,150]"), _array(rng, "bf16[3,150,120]"),
                  _array(rng, "bf16[3,120,130]")])


@pytest.mark.parametrize("case", ["small", "batch moved", "another user"])
def test_other_transposes_of_dots_are_not_folded(case):
    if case == "small":  # below FOLD_MIN_MNK: OpenBLAS's small kernels
        text = _transposed_dot("f32[24,70]", "f32[70,40]", "f32[24,40]",
                               "lhs_contracting_dims={1}, rhs_contracting_dims={0}", "1,0",
                               "f32[40,24]")
        shapes = ["f32[24,70]", "f32[70,40]", "f32[40,24]"]
    elif case == "batch moved":  # not the swapped dot's order
        text = _transposed_dot("f32[3,130,150]", "f32[3,150,120]", "f32[3,130,120]",
                               "lhs_batch_dims={0}, rhs_batch_dims={0}, "
                               "lhs_contracting_dims={2}, rhs_contracting_dims={1}",
                               "2,1,0", "f32[120,130,3]")
        shapes = ["f32[3,130,150]", "f32[3,150,120]", "f32[120,130,3]"]
    else:  # the dot is needed itself
        text = _transposed_dot("f32[130,150]", "f32[150,120]", "f32[130,120]",
                               "lhs_contracting_dims={1}, rhs_contracting_dims={0}", "1,0",
                               "f32[120,130]", extra_user=True)
        shapes = ["f32[130,150]", "f32[150,120]", "f32[120,130]"]
    assert _folds(text) == []
    rng = np.random.default_rng(14)
    _check(text, [_array(rng, s) for s in shapes])


def test_plans_of_the_gpu_backend_keep_the_transpose():
    """``plan`` folds transposes only for the CPU's BLAS kernels: the GPU backend, which
    plans with it too, still transposes the dot (here on its host stand-in)."""
    from xla_spmd.backends.gpu import GpuBackend
    text = _transposed_dot("f32[130,150]", "f32[150,120]", "f32[130,120]",
                           "lhs_contracting_dims={1}, rhs_contracting_dims={0}", "1,0",
                           "f32[120,130]")
    module = parse_hlo(text)
    executable = GpuBackend(host_stand_in=True).compile(module, (0,))
    assert not [s for p in executable.programs.values() for s in p.steps if s.folded]
    rng = np.random.default_rng(15)
    args = [_array(rng, s) for s in ("f32[130,150]", "f32[150,120]", "f32[120,130]")]
    (got,) = executable.run(0, args, None)
    np.testing.assert_allclose(got, np.asarray(evaluate(module, args)), rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------------------------
# One large product split by rows over the BLAS pool (blas.rows_matmul)


@pytest.mark.parametrize("m, n, k", [(257, 300, 2048), (512, 512, 767), (512, 512, 800),
                                     (300, 200, 448), (129, 1000, 500), (512, 512, 1000),
                                     (64, 2048, 2048), (200, 1000, 448), (130, 1030, 256),
                                     (16, 4100, 300)])
@pytest.mark.parametrize("transposed", [False, True])
def test_products_split_by_rows_have_the_bits_of_the_whole(m, n, k, transposed, monkeypatch,
                                                           split_parts):
    """On 2 BLAS threads a product is split by columns (more columns than rows) or by rows
    only where OpenBLAS's one-thread driver sums over the same k blocks as its threaded one
    (not k = 500, 1000 on SkylakeX): either way the bits of the reference on 2 threads, and
    on 1."""
    lhs, rhs = (f"f32[{k},{m}]", f"f32[{n},{k}]") if transposed else (f"f32[{m},{k}]",
                                                                        f"f32[{k},{n}]")
    dims = ("lhs_contracting_dims={0}, rhs_contracting_dims={1}" if transposed else
            "lhs_contracting_dims={1}, rhs_contracting_dims={0}")
    module = parse_hlo(_dot_module(lhs, rhs, f"f32[{m},{n}]", dims))
    rng = np.random.default_rng(k)
    args = [_array(rng, lhs), _array(rng, rhs)]
    executable = BACKEND.compile(module, (0,))
    rows, columns = split_parts("rows_matmul"), split_parts("columns_matmul")
    monkeypatch.setattr(blas, "process_cores", lambda: 2)  # one device on all 2 cores
    with threadpool_limits(limits=2, user_api="blas"):
        (got,) = executable.run(0, args, None)
        want = np.asarray(evaluate(module, args))
        by_columns = n > m and blas.columns_splittable(m, n, k, np.float32, 2)
        by_rows = not by_columns and blas.rows_splittable(m, n, k, np.float32, 2)
    assert (rows, columns) == ([2] if by_rows else [], [2] if by_columns else [])
    expected_split = by_rows or by_columns
    assert exact_bits(got) == exact_bits(want)
    if expected_split:
        with threadpool_limits(limits=1, user_api="blas"):
            assert exact_bits(np.asarray(evaluate(module, args))) == exact_bits(want)


def test_k_blocks_decide_the_row_split():
    q, unroll = 448, 16
    same = [k for k in (400, 450, 500, 767, 769, 800, 1000, 2048)
            if blas.k_blocks(k, q, unroll, True) == blas.k_blocks(k, q, unroll, False)]
    assert same == [400, 767, 800, 2048]
    assert sum(blas.k_blocks(1500, q, unroll, False)) == 1500
